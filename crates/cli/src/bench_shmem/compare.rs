//! The benchmark's lines, their medians over rounds, and the side-by-side comparisons with
//! their targets. Pure: no processes, no files.

use std::collections::BTreeMap;

/// One line of the benchmark's CSV (bench/shmem/osu_shmem.c).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// `put_lat`, `get_bw`, `put_rate`, `fadd_lat`, `barrier_lat`, ...
    pub test: String,
    /// Message size (0 for the barrier).
    pub size_bytes: u64,
    /// Measured operations (after the warm-up).
    pub iterations: u64,
    /// Mean time of one operation.
    pub time_per_op_us: f64,
}

/// The header line the benchmark prints first.
pub const HEADER: &str = "test,size_bytes,iterations,time_per_op_us";

/// Parse the benchmark's stdout: the header, then one line per measurement.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match lines.next() {
        Some(HEADER) => {}
        other => {
            return Err(format!(
                "the benchmark's output does not start with {HEADER:?} (got {other:?})"
            ))
        }
    }
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let bad = || format!("cannot parse the benchmark line {l:?} (expected {HEADER})");
            if f.len() != 4 {
                return Err(bad());
            }
            let time_per_op_us: f64 = f[3].parse().map_err(|_| bad())?;
            if !(time_per_op_us.is_finite() && time_per_op_us >= 0.0) {
                return Err(bad());
            }
            Ok(Line {
                test: f[0].to_string(),
                size_bytes: f[1].parse().map_err(|_| bad())?,
                iterations: f[2].parse().map_err(|_| bad())?,
                time_per_op_us,
            })
        })
        .collect()
}

/// What a test's line reports besides time: latency, bandwidth or message rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One operation at a time: the time is the latency.
    Latency,
    /// Windows of non-blocking transfers: size / time.
    Bandwidth,
    /// Windows of small puts: 1 / time.
    Rate,
}

/// The kind of a test, from its name's suffix.
pub fn kind(test: &str) -> Kind {
    if test.ends_with("_bw") {
        Kind::Bandwidth
    } else if test.ends_with("_rate") {
        Kind::Rate
    } else {
        Kind::Latency
    }
}

/// A line's value in its usual unit: us, GB/s or million messages per second.
pub fn display_value(test: &str, size_bytes: u64, time_per_op_us: f64) -> (f64, &'static str) {
    match kind(test) {
        Kind::Latency => (time_per_op_us, "us"),
        Kind::Bandwidth => (size_bytes as f64 / time_per_op_us / 1e3, "GB/s"),
        Kind::Rate => (1.0 / time_per_op_us, "M/s"),
    }
}

/// Median of non-empty `v` (mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// (test, size) in the benchmark's order of appearance.
pub type Key = (String, u64);

/// Every round's time per operation of one configuration, by (test, size), in the order the
/// benchmark printed them.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    order: Vec<Key>,
    times_us: BTreeMap<Key, Vec<f64>>,
}

impl Samples {
    /// Add one run's lines.
    pub fn add(&mut self, lines: &[Line]) {
        for l in lines {
            let key = (l.test.clone(), l.size_bytes);
            let v = self.times_us.entry(key.clone()).or_default();
            if v.is_empty() {
                self.order.push(key);
            }
            v.push(l.time_per_op_us);
        }
    }
    /// Median time per operation of (test, size), if measured.
    pub fn median_us(&self, key: &Key) -> Option<f64> {
        self.times_us
            .get(key)
            .filter(|v| !v.is_empty())
            .map(|v| median(v))
    }
    /// Rounds measured for (test, size).
    pub fn rounds(&self, key: &Key) -> usize {
        self.times_us.get(key).map_or(0, Vec::len)
    }
    /// The keys in the benchmark's order.
    pub fn keys(&self) -> &[Key] {
        &self.order
    }
}

/// What a comparison asks of the time ratio unpinned / peer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// ratio <= this (e.g. within 1.5x).
    AtMost(f64),
    /// ratio < 1: unpinned ahead.
    Ahead,
}

impl Target {
    /// Whether `ratio` (unpinned time / peer time) meets the target.
    pub fn met(self, ratio: f64) -> bool {
        match self {
            Target::AtMost(r) => ratio <= r,
            Target::Ahead => ratio < 1.0,
        }
    }
    /// The bound of the ratio, for the CSV (`Ahead` is a strict `< 1`).
    pub fn bound(self) -> f64 {
        match self {
            Target::AtMost(r) => r,
            Target::Ahead => 1.0,
        }
    }
    /// In words, for the tables' headings.
    pub fn describe(self) -> String {
        match self {
            Target::AtMost(r) => format!("unpinned within {r}x of the peer (ratio <= {r})"),
            Target::Ahead => "unpinned ahead of the peer (ratio < 1)".into(),
        }
    }
}

/// One line of a comparison: medians of both sides and their ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Test name.
    pub test: String,
    /// Message size.
    pub size_bytes: u64,
    /// unpinned's median time per operation.
    pub ours_us: f64,
    /// The peer's, if it ran.
    pub peer_us: Option<f64>,
    /// ours / peer time (for bandwidth and rate: the peer's throughput / ours).
    pub ratio: Option<f64>,
    /// Whether the ratio meets the target (None without a peer).
    pub met: Option<bool>,
    /// Rounds behind unpinned's and the peer's medians.
    pub rounds: (usize, usize),
}

/// The comparison of `ours` with `peer` (empty when the peer did not run), line by line in
/// the order of `ours` (lines only the peer has are left out).
pub fn compare(ours: &Samples, peer: &Samples, target: Target) -> Vec<Row> {
    ours.keys()
        .iter()
        .filter_map(|key| {
            let ours_us = ours.median_us(key)?;
            let peer_us = peer.median_us(key);
            let ratio = peer_us.filter(|p| *p > 0.0).map(|p| ours_us / p);
            Some(Row {
                test: key.0.clone(),
                size_bytes: key.1,
                ours_us,
                peer_us,
                ratio,
                met: ratio.map(|r| target.met(r)),
                rounds: (ours.rounds(key), peer.rounds(key)),
            })
        })
        .collect()
}

/// `8 B`, `4 KiB`, `4 MiB`; `-` for 0 (the barrier).
pub fn size_label(bytes: u64) -> String {
    match bytes {
        0 => "-".into(),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "test,size_bytes,iterations,time_per_op_us\nput_lat,8,100,0.5\nput_bw,4096,640,2.048\nbarrier_lat,0,50,1.0\n";

    #[test]
    fn parses_the_benchmark_output() {
        let l = parse(OUT).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(
            l[1],
            Line {
                test: "put_bw".into(),
                size_bytes: 4096,
                iterations: 640,
                time_per_op_us: 2.048
            }
        );
        assert!(parse("put_lat,8,1,1\n")
            .unwrap_err()
            .contains("does not start"));
        assert!(parse(&format!("{HEADER}\nput_lat,8,x,1\n"))
            .unwrap_err()
            .contains("put_lat,8,x,1"));
        assert!(parse(&format!("{HEADER}\nput_lat,8,1,nan\n")).is_err());
    }

    #[test]
    fn values_in_their_units() {
        assert_eq!(display_value("put_lat", 8, 0.5), (0.5, "us"));
        // 4096 B in 2.048 us = 2 GB/s.
        let (v, u) = display_value("put_bw", 4096, 2.048);
        assert!((v - 2.0).abs() < 1e-12 && u == "GB/s");
        assert_eq!(display_value("put_rate", 8, 0.25), (4.0, "M/s"));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn compares_medians_against_the_targets() {
        let mut ours = Samples::default();
        let mut peer = Samples::default();
        let line = |t: &str, s: u64, us: f64| Line {
            test: t.into(),
            size_bytes: s,
            iterations: 1,
            time_per_op_us: us,
        };
        for us in [1.0, 9.0, 1.2] {
            ours.add(&[line("put_lat", 8, us), line("put_bw", 64, 2.0)]);
        }
        for us in [1.0, 0.5, 0.1] {
            peer.add(&[line("put_lat", 8, us), line("get_lat", 8, 1.0)]);
        }
        let rows = compare(&ours, &peer, Target::AtMost(1.5));
        assert_eq!(rows.len(), 2, "in ours' order, peer-only lines left out");
        assert_eq!(rows[0].test, "put_lat");
        assert_eq!(rows[0].ours_us, 1.2);
        assert_eq!(rows[0].peer_us, Some(0.5));
        assert!((rows[0].ratio.unwrap() - 2.4).abs() < 1e-12);
        assert_eq!(rows[0].met, Some(false));
        assert_eq!(rows[0].rounds, (3, 3));
        assert_eq!(rows[1].peer_us, None);
        assert_eq!(rows[1].met, None);
        assert!(Target::AtMost(1.5).met(1.5));
        assert!(!Target::Ahead.met(1.0));
        assert!(Target::Ahead.met(0.99));
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(0), "-");
        assert_eq!(size_label(8), "8 B");
        assert_eq!(size_label(4096), "4 KiB");
        assert_eq!(size_label(4 << 20), "4 MiB");
        assert_eq!(size_label(1536), "1536 B");
    }
}
