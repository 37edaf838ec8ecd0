//! Findings of `part-major-faults` and `part-huge-pages` (issue 17, section 4): the headline
//! of each, in words, computed from the rows (never typed in).

use crate::findings::num;
use crate::{format_float, Table};

/// A row's cells by column name, as text and as numbers.
struct Rows<'a> {
    t: &'a Table,
}

impl<'a> Rows<'a> {
    /// Rows whose columns equal the given texts.
    fn matching(&self, want: &[(&str, &str)]) -> Option<Vec<&'a Vec<crate::Cell>>> {
        let cols: Vec<(usize, &str)> = want
            .iter()
            .map(|(c, v)| Some((self.t.col(c)?, *v)))
            .collect::<Option<_>>()?;
        Some(
            self.t
                .rows
                .iter()
                .filter(|r| cols.iter().all(|&(i, v)| r[i].to_text() == v))
                .collect(),
        )
    }

    /// The number in column `c` of the only row matching `want`.
    fn one(&self, want: &[(&str, &str)], c: &str) -> Option<f64> {
        let rows = self.matching(want)?;
        let i = self.t.col(c)?;
        match rows.as_slice() {
            [r] => num(&r[i]),
            _ => None,
        }
    }

    /// Distinct numeric values of column `c` among rows matching `want`, ascending.
    fn values(&self, want: &[(&str, &str)], c: &str) -> Option<Vec<f64>> {
        let i = self.t.col(c)?;
        let mut v: Vec<f64> = self
            .matching(want)?
            .iter()
            .filter_map(|r| num(&r[i]))
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        Some(v)
    }

    /// Distinct texts of column `c` among rows matching `want`, in row order.
    fn texts(&self, want: &[(&str, &str)], c: &str) -> Option<Vec<String>> {
        let i = self.t.col(c)?;
        let mut v: Vec<String> = Vec::new();
        for r in self.matching(want)? {
            let s = r[i].to_text();
            if !v.contains(&s) {
                v.push(s);
            }
        }
        Some(v)
    }
}

fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{} ms", format_float((v / 100.0).round() / 10.0))
    } else {
        format!("{} us", format_float((v * 10.0).round() / 10.0))
    }
}

fn x(v: f64) -> String {
    format!("{}x", format_float((v * 100.0).round() / 100.0))
}

fn size(b: f64) -> String {
    if b >= (1 << 20) as f64 {
        format!("{} MiB", format_float(b / (1 << 20) as f64))
    } else {
        format!("{} KiB", format_float(b / 1024.0))
    }
}

fn text(v: f64) -> String {
    format_float(v)
}

/// The headline of `part-major-faults`: reads per policy at the largest size and device
/// time, and the second write's fate during a major fault.
pub fn major_faults(t: &Table) -> Option<Vec<String>> {
    let r = Rows { t };
    let tr = [("case", "transfer"), ("source", "major")];
    let s = text(*r.values(&tr, "size_bytes")?.last()?);
    let d = text(*r.values(&tr, "major_us")?.last()?);
    let ras = r.values(&tr, "readahead_pages")?;
    let policies = r.texts(&tr, "policy")?;
    let mut out = Vec::new();
    for ra in &ras {
        let ra = text(*ra);
        let mut parts = Vec::new();
        for p in &policies {
            let w = [
                ("case", "transfer"),
                ("source", "major"),
                ("policy", p.as_str()),
                ("size_bytes", s.as_str()),
                ("major_us", d.as_str()),
                ("readahead_pages", ra.as_str()),
            ];
            parts.push(format!(
                "{} {} ({} reads, {} its minor-fault latency)",
                p.to_uppercase(),
                us(r.one(&w, "latency_us")?),
                text(r.one(&w, "io_requests")?),
                x(r.one(&w, "slowdown")?)
            ));
        }
        out.push(format!(
            "Major faults, {} with every page missing, {} us per device read, {} page(s) per \
             read: {}. The page-in task waits for each read in turn, so the latency is the \
             number of reads times the device time: the policy matters only through how many \
             reads it needs (a read fills the page cache with its window, so later pages of \
             the window fault minor, for PIO too).",
            size(s.parse().ok()?),
            d,
            ra,
            parts.join(", ")
        ));
    }
    let ra = text(ras[0]);
    let hit = |case: &str, major: &str| {
        let w = [
            ("case", case),
            ("policy", "pia"),
            ("major_us", major),
            (
                "readahead_pages",
                if major == "0" { "0" } else { ra.as_str() },
            ),
        ];
        r.one(&w, "latency_us")
    };
    let resident = r.values(&[("case", "hit-resident"), ("policy", "pia")], "latency_us")?;
    out.push(format!(
        "A second 4 KiB write to resident pages of the same target, posted while a 16 KiB write \
         waits for its major page-in, completes in {} at every device time (alone: {}): the NI \
         serves other transfers under the fault. One that needs a minor page-in waits behind \
         the device reads, since the target has one page-in task: {} at {} us per read (PIA, {} \
         page(s) per read) against {} alone.",
        resident
            .iter()
            .map(|&v| us(v))
            .collect::<Vec<_>>()
            .join(" to "),
        us(hit("hit-resident", "0")?),
        us(hit("hit-minor", &d)?),
        d,
        ra,
        us(hit("hit-minor", "0")?)
    ));
    Some(out)
}

/// The headline of `part-huge-pages`: PIO and PIA on huge pages at 4 MiB and above, the cost
/// below 2 MiB, and the IOMMU walks on present memory.
pub fn huge_pages(t: &Table) -> Option<Vec<String>> {
    let r = Rows { t };
    let miss = [("dst", "missing")];
    let sizes = r.values(&miss, "size_bytes")?;
    let shares = r.values(&[("dst", "missing"), ("pages", "2m")], "zero_share")?;
    let mut out = Vec::new();
    let big: Vec<f64> = sizes.iter().copied().filter(|&s| s >= 4194304.0).collect();
    let at = |pages: &str, policy: &str, s: &str, share: &str, c: &str| {
        r.one(
            &[
                ("dst", "missing"),
                ("pages", pages),
                ("policy", policy),
                ("size_bytes", s),
                ("zero_share", share),
            ],
            c,
        )
    };
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    };
    for s in &big {
        let s = text(*s);
        let mut pio = Vec::new();
        let mut pia = Vec::new();
        let mut gap = Vec::new();
        for sh in &shares {
            let sh = text(*sh);
            pio.push(at("2m", "pio", &s, &sh, "slowdown_vs_4k")?);
            pia.push(at("2m", "pia", &s, &sh, "slowdown_vs_4k")?);
            let (a, b) = (
                at("2m", "pio", &s, &sh, "latency_us")?,
                at("2m", "pia", &s, &sh, "latency_us")?,
            );
            gap.push(a / b);
        }
        let (pio_lo, pio_hi) = range(&pio);
        let (pia_lo, pia_hi) = range(&pia);
        let (gap_lo, gap_hi) = range(&gap);
        let sh0 = text(shares[0]);
        out.push(format!(
            "Huge pages, {} with every destination page missing: a fault brings a whole 2 MiB \
             page in, so PIO needs {} ERRs and {} fault interrupts instead of {} and {} on 4 KiB \
             pages, and takes {} to {} PIA's time (PIO waits for each huge page's own fault, \
             PIA brings the rest in while the block timeout resends); against 4 KiB pages PIO \
             takes {} to {} of its time, PIA {} to {} (a huge page-in is one step, so it no \
             longer overlaps transmission page by page; clearing shares {} to {}).",
            size(s.parse().ok()?),
            text(at("2m", "pio", &s, &sh0, "errs")?),
            text(at("2m", "pio", &s, &sh0, "fault_interrupts")?),
            text(at("4k", "pio", &s, "0", "errs")?),
            text(at("4k", "pio", &s, "0", "fault_interrupts")?),
            x(gap_lo),
            x(gap_hi),
            x(pio_lo),
            x(pio_hi),
            x(pia_lo),
            x(pia_hi),
            text(shares[0]),
            text(*shares.last()?)
        ));
    }
    let small = text(*sizes.first()?);
    let v: Vec<f64> = shares
        .iter()
        .map(|sh| at("2m", "pia", &small, &text(*sh), "slowdown_vs_4k"))
        .collect::<Option<_>>()?;
    let (lo, hi) = range(&v);
    out.push(format!(
        "Below 2 MiB huge pages cost: a {} write into a missing huge page pays the whole 2 MiB \
         page-in, {} to {} the latency of PIA on 4 KiB pages.",
        size(small.parse().ok()?),
        x(lo),
        x(hi)
    ));
    let s = text(*r.values(&[("dst", "present")], "size_bytes")?.last()?);
    let p = |pages: &str, c: &str| {
        r.one(
            &[
                ("dst", "present"),
                ("pages", pages),
                ("size_bytes", s.as_str()),
            ],
            c,
        )
    };
    out.push(format!(
        "Present memory, {}: the IOMMU walks {} times instead of {} (one 2 MiB entry per huge \
         page), and the write takes {} instead of {}.",
        size(s.parse().ok()?),
        text(p("2m", "iommu_walks")?),
        text(p("4k", "iommu_walks")?),
        us(p("2m", "latency_us")?),
        us(p("4k", "latency_us")?)
    ));
    Some(out)
}
