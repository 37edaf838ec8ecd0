//! Findings of the PART experiments beyond the reference design (issue 17, section 4):
//! `part-adaptive` (the adaptive page-in policy against the better of PIO and PIA) and
//! `part-fault-patterns` (the three policies under each fault pattern). Numbers come from the
//! rows; the mechanism sentences say why they come out so.

use super::num;
use crate::{format_float, Table};

/// Within this ratio of the better fixed policy counts as "as good".
const CLOSE: f64 = 1.03;

fn size_text(bytes: f64) -> String {
    let b = bytes as u64;
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b % (1 << 10) == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// `part-adaptive`: how close the adaptive policy comes to the better fixed one, and where not.
pub fn adaptive(t: &Table) -> Option<Vec<String>> {
    let (pol, size, f, vs, best) = (
        t.col("policy")?,
        t.col("size_bytes")?,
        t.col("fault_pct")?,
        t.col("vs_best_fixed")?,
        t.col("best_fixed")?,
    );
    let lat = t.col("latency_us")?;
    let rows: Vec<_> = t
        .rows
        .iter()
        .filter(|r| r[pol].to_text() == "adaptive")
        .collect();
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let close = rows
        .iter()
        .filter(|r| num(&r[vs]).is_some_and(|v| v <= CLOSE))
        .count();
    let better = rows
        .iter()
        .filter(|r| num(&r[vs]).is_some_and(|v| v < 0.995))
        .count();
    let worst = rows
        .iter()
        .max_by(|a, b| {
            let (x, y) = (num(&a[vs]).unwrap_or(0.0), num(&b[vs]).unwrap_or(0.0));
            x.total_cmp(&y)
        })
        .expect("rows not empty");
    let pio_best = rows.iter().filter(|r| r[best].to_text() == "pio").count();
    let plural = |k: usize| if k == 1 { "point" } else { "points" };
    let mut first = format!(
        "The adaptive policy is within {:.0}% of the better of PIO and PIA at {close} of {n} \
         (size, f) points",
        (CLOSE - 1.0) * 100.0
    );
    if better > 0 {
        first.push_str(&format!(" and faster than both at {better}"));
    }
    first.push_str(&format!(
        "; its worst point is {} at f = {}% ({:.3}x the better fixed policy, {}). PIO is the \
         better fixed policy at {pio_best} {}, PIA at {} {}.",
        size_text(num(&worst[size]).unwrap_or(0.0)),
        worst[f].to_text(),
        num(&worst[vs]).unwrap_or(0.0),
        worst[best].to_text(),
        plural(pio_best),
        n - pio_best,
        plural(n - pio_best),
    ));
    let mut out = vec![first];
    // Where the two fixed policies differ most: the mechanism's two regimes.
    let pia_gain = t
        .rows
        .iter()
        .filter(|r| r[pol].to_text() == "pio")
        .filter_map(|r| {
            let pia = t.rows.iter().find(|q| {
                q[pol].to_text() == "pia"
                    && q[size].to_text() == r[size].to_text()
                    && q[f].to_text() == r[f].to_text()
            })?;
            Some((num(&r[lat])? / num(&pia[lat])?, r))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((g, r)) = pia_gain {
        out.push(format!(
            "PIO costs up to {:.2}x PIA ({}, f = {}%).",
            g,
            size_text(num(&r[size]).unwrap_or(0.0)),
            r[f].to_text()
        ));
    }
    out.push(
        "Why: a missing page left to fault costs a whole fault round while the transfer waits \
         (interrupt, page-in task, ERR, the block's retransmission: tens of us), a page brought \
         in ahead only its get_user_pages share (a few us, plus a call per run of missing \
         pages). The break-even density is under 1%, so after a fault the rule pages in the \
         rest of the transfer, except when the faults seen so far are sparser than that (a \
         first fault after hundreds of present pages), where it pages in the faulting page \
         only; where PIO and PIA cost the same (one page, or almost no page missing), so does \
         the adaptive policy."
            .to_string(),
    );
    if pio_best > 0 {
        out.push(
            "Where PIO is better (a transfer with one or two missing pages), the second fault \
             is usually that of the other outstanding block, already sent when the first is \
             planned: the pages brought in ahead for it delay the first ERR without saving the \
             second round. The rule does not separate that case: its evidence (one fault seen) \
             is the same as for a dense transfer."
                .to_string(),
        );
    }
    Some(out)
}

/// `part-fault-patterns`: per pattern, the three policies at the largest size and level.
pub fn patterns(t: &Table) -> Option<Vec<String>> {
    let (pat, level, size, pol, lat, vs, refaults, pages_in) = (
        t.col("pattern")?,
        t.col("level")?,
        t.col("size_bytes")?,
        t.col("policy")?,
        t.col("latency_us")?,
        t.col("vs_best_fixed")?,
        t.col("refaults")?,
        t.col("pages_in")?,
    );
    let mut names: Vec<String> = Vec::new();
    for r in &t.rows {
        let n = r[pat].to_text();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let of: Vec<_> = t.rows.iter().filter(|r| r[pat].to_text() == name).collect();
        let top = |c: usize| {
            of.iter()
                .filter_map(|r| num(&r[c]))
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let (lv, sz) = (top(level), top(size));
        let at = |p: &str| {
            of.iter().find(|r| {
                r[pol].to_text() == p && num(&r[level]) == Some(lv) && num(&r[size]) == Some(sz)
            })
        };
        let (Some(pio), Some(pia), Some(ad)) = (at("pio"), at("pia"), at("adaptive")) else {
            continue;
        };
        let us = |r: &&&Vec<crate::Cell>| format!("{:.0}", num(&r[lat]).unwrap_or(0.0));
        let unit = match name.as_str() {
            "independent" | "clustered" => "% missing",
            "first-use" => "% missing on first use",
            _ => " pages/ms reclaimed",
        };
        let mut s = format!(
            "{name} ({}{unit}, {}): PIO {} us, PIA {} us, adaptive {} us ({:.2}x the better \
             fixed policy)",
            format_float(lv),
            size_text(sz),
            us(&pio),
            us(&pia),
            us(&ad),
            num(&ad[vs]).unwrap_or(0.0)
        );
        if let Some(rf) = num(&ad[refaults]).filter(|&v| v > 0.0) {
            s.push_str(&format!(", {rf:.0} refaults seen by the adaptive policy"));
        }
        if let (Some(pin), "reclaim" | "reclaim-fresh") = (num(&pia[pages_in]), name.as_str()) {
            s.push_str(&format!(
                "; PIA brought in {pin:.0} pages for a buffer of {:.0}",
                (sz / 4096.0).ceil()
            ));
        }
        s.push('.');
        out.push(s);
    }
    if out.is_empty() {
        return None;
    }
    out.push(
        "Why: without reclaim the patterns only move where the missing pages are, and every \
         missing page PIO leaves costs a fault round (in a run of missing pages the other \
         outstanding block faults too, so nothing hides the round), while PIA brings a run in \
         with one call; the adaptive policy sees dense faults and does what PIA does. Under \
         reclaim, pages brought in ahead of the data can be evicted before it gets there and \
         fault again (PIA pays their page-in twice, and each refault stalls the transfer once \
         more); the adaptive policy recognizes those refaults and looks ahead only half as far \
         as the evicted page had been brought in, so fewer of its pages wait long enough to be \
         taken; where eviction is rare, each cut costs it a few more fault rounds than PIA."
            .to_string(),
    );
    Some(out)
}
