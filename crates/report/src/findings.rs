//! Findings the report derives from an experiment's data when it writes the page: a rule
//! stated in words, computed from the rows (never typed in), shown under the experiment.
//!
//! Today: `odp-fix-period` (issue 17, section 3), the software-timer fix's period against the
//! fault-resolution time; `part-adaptive` and `part-fault-patterns` (section 4, in `part`).

use std::collections::BTreeMap;

use crate::{format_float, Cell, Table};

mod part;
mod part_beyond;

/// The findings for experiment `name` from its table (empty when there is none, or when the
/// table lacks the columns a finding needs).
pub fn for_experiment(name: &str, table: &Table) -> Vec<String> {
    match name {
        "part-major-faults" => crate::findings_pages::major_faults(table).unwrap_or_default(),
        "part-huge-pages" => crate::findings_pages::huge_pages(table).unwrap_or_default(),
        "odp-fix-period" => fix_period_rule(table)
            .map(|r| r.sentences())
            .unwrap_or_default(),
        "part-early-err" => part_beyond::early_err(table).unwrap_or_default(),
        "part-kernel-err" => part_beyond::kernel_err(table).unwrap_or_default(),
        "part-adaptive" => part::adaptive(table).unwrap_or_default(),
        "part-fault-patterns" => part::patterns(table).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A cell as a number (integers, floats, or text that parses).
pub(crate) fn num(c: &Cell) -> Option<f64> {
    c.as_f64().or_else(|| c.to_text().parse().ok())
}

/// What `odp-fix-period` shows for one (placement, RNR delay, fault time).
#[derive(Clone, Debug, PartialEq)]
pub struct FixGroup {
    /// ODP placement (`remote`, `local`, `both`).
    pub odp: String,
    /// Minimal RNR NAK delay, ms (as in the CSV).
    pub rnr_delay_ms: String,
    /// Nominal fault-resolution time the ratios refer to, us.
    pub fault_us: f64,
    /// Its longest value (fault plus jitter), us.
    pub fault_max_us: f64,
    /// Runs with the fix on / of which stalled.
    pub fix_runs: u64,
    /// Stalled runs with the fix on.
    pub fix_stalled: u64,
    /// Stall probability with the fix off.
    pub off_stall: f64,
    /// Largest period ratio with a stalled run (None: none stalled).
    pub last_unsafe: Option<f64>,
    /// Smallest ratio from which no larger ratio stalled (None: the largest one stalled).
    pub first_safe: Option<f64>,
    /// Largest stall probability over ratios, and where.
    pub worst: (f64, f64),
    /// READ counts that stalled with the fix on.
    pub stalled_reads: Vec<i64>,
    /// Mean execution time per ratio (fix on), us, in ratio order.
    pub exec_by_ratio: Vec<(f64, f64)>,
    /// Mean execution time with the fix off, us.
    pub off_exec_us: f64,
    /// Runs whose timer fired only after the last application completion.
    pub late_runs: u64,
}

/// The rule `odp-fix-period`'s data shows, per group.
#[derive(Clone, Debug, PartialEq)]
pub struct FixRule {
    /// One entry per (placement, RNR delay, fault time), in first-appearance order.
    pub groups: Vec<FixGroup>,
}

#[derive(Default)]
struct Acc {
    runs: u64,
    stalled: u64,
    exec_sum: f64,
}

/// Derive the rule from an `odp-fix-period` table (None if a needed column is missing).
pub fn fix_period_rule(t: &Table) -> Option<FixRule> {
    let c = |n: &str| t.col(n);
    let (odp, rnr, fault, fmax, ratio, ops, exec, stalled, late) = (
        c("odp")?,
        c("rnr_delay_ms")?,
        c("fault_us")?,
        c("fault_max_us")?,
        c("period_ratio")?,
        c("num_ops")?,
        c("exec_time_us")?,
        c("stalled")?,
        c("late_timeouts")?,
    );
    type Key = (String, String, String);
    let mut order: Vec<Key> = Vec::new();
    let mut info: BTreeMap<Key, (f64, f64, u64, Vec<i64>)> = BTreeMap::new();
    // Per group, per ratio (as text, ordered numerically below).
    let mut acc: BTreeMap<Key, BTreeMap<String, Acc>> = BTreeMap::new();
    for row in &t.rows {
        let key = (row[odp].to_text(), row[rnr].to_text(), row[fault].to_text());
        if !info.contains_key(&key) {
            order.push(key.clone());
        }
        let e =
            info.entry(key.clone())
                .or_insert((num(&row[fault])?, num(&row[fmax])?, 0, Vec::new()));
        let r = num(&row[ratio])?;
        let s = num(&row[stalled])? > 0.0;
        if num(&row[late])? > 0.0 && !s {
            e.2 += 1;
        }
        if s && r > 0.0 {
            let n = num(&row[ops])? as i64;
            if !e.3.contains(&n) {
                e.3.push(n);
            }
        }
        let a = acc
            .entry(key)
            .or_default()
            .entry(row[ratio].to_text())
            .or_default();
        a.runs += 1;
        a.stalled += u64::from(s);
        a.exec_sum += num(&row[exec])?;
    }
    let mut groups = Vec::new();
    for key in order {
        let (fault_us, fault_max_us, late_runs, mut stalled_reads) = info.remove(&key)?;
        stalled_reads.sort_unstable();
        let mut by_ratio: Vec<(f64, &Acc)> = acc[&key]
            .iter()
            .map(|(k, a)| (k.parse::<f64>().unwrap_or(f64::NAN), a))
            .collect();
        by_ratio.sort_by(|a, b| a.0.total_cmp(&b.0));
        let off = by_ratio.iter().find(|(r, _)| *r == 0.0);
        let on: Vec<&(f64, &Acc)> = by_ratio.iter().filter(|(r, _)| *r > 0.0).collect();
        if on.is_empty() {
            continue;
        }
        let p = |a: &Acc| a.stalled as f64 / a.runs.max(1) as f64;
        let last_unsafe = on.iter().rev().find(|(_, a)| a.stalled > 0).map(|x| x.0);
        let first_safe = match last_unsafe {
            None => Some(on[0].0),
            Some(u) => on.iter().find(|(r, _)| *r > u).map(|x| x.0),
        };
        let worst = on
            .iter()
            .map(|(r, a)| (p(a), *r))
            .fold((0.0, on[0].0), |b, x| if x.0 > b.0 { x } else { b });
        groups.push(FixGroup {
            odp: key.0,
            rnr_delay_ms: key.1,
            fault_us,
            fault_max_us,
            fix_runs: on.iter().map(|(_, a)| a.runs).sum(),
            fix_stalled: on.iter().map(|(_, a)| a.stalled).sum(),
            off_stall: off.map_or(f64::NAN, |(_, a)| p(a)),
            last_unsafe,
            first_safe,
            worst,
            stalled_reads,
            exec_by_ratio: on
                .iter()
                .map(|(r, a)| (*r, a.exec_sum / a.runs.max(1) as f64))
                .collect(),
            off_exec_us: off.map_or(f64::NAN, |(_, a)| a.exec_sum / a.runs.max(1) as f64),
            late_runs,
        });
    }
    Some(FixRule { groups })
}

fn pct(p: f64) -> String {
    format!("{}%", format_float((p * 1000.0).round() / 10.0))
}

fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{} ms", format_float((v / 100.0).round() / 10.0))
    } else {
        format!("{} us", format_float(v.round()))
    }
}

impl FixRule {
    /// For each placement whose runs stalled with the fix on: whether every group's boundary
    /// lies at the longest fault resolution (`fault_max_us`): the largest stalling period is
    /// below it and the smallest safe one at or above it. None when no group stalled.
    pub fn boundary_is_fault_max(&self, odp: &str) -> Option<bool> {
        let stalling: Vec<&FixGroup> = self
            .groups
            .iter()
            .filter(|g| g.odp == odp && g.last_unsafe.is_some())
            .collect();
        if stalling.is_empty() {
            return None;
        }
        Some(stalling.iter().all(|g| {
            let below = g.last_unsafe.unwrap() * g.fault_us < g.fault_max_us;
            let above = g
                .first_safe
                .is_some_and(|s| s * g.fault_us >= g.fault_max_us * 0.999);
            below && above
        }))
    }

    /// The smallest safe period of placement `odp` in units of `fault_max_us`, the largest
    /// over its groups (None if some group stalled at every period tested).
    pub fn safe_in_fault_max(&self, odp: &str) -> Option<f64> {
        let mut worst: Option<f64> = None;
        for g in self.groups.iter().filter(|g| g.odp == odp) {
            let s = g.first_safe? * g.fault_us / g.fault_max_us;
            worst = Some(worst.map_or(s, |w: f64| w.max(s)));
        }
        worst
    }

    /// The rule in words: per placement, where the fix stalls and where not, whether the
    /// boundary is the longest fault resolution, and what the period costs in execution time.
    pub fn sentences(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut placements: Vec<&str> = Vec::new();
        for g in &self.groups {
            if !placements.contains(&g.odp.as_str()) {
                placements.push(&g.odp);
            }
        }
        for odp in placements {
            let gs: Vec<&FixGroup> = self.groups.iter().filter(|g| g.odp == odp).collect();
            let runs: u64 = gs.iter().map(|g| g.fix_runs).sum();
            let stalled: u64 = gs.iter().map(|g| g.fix_stalled).sum();
            let off: Vec<String> = gs
                .iter()
                .map(|g| {
                    format!(
                        "{} (fault {}, RNR {} ms)",
                        pct(g.off_stall),
                        us(g.fault_us),
                        g.rnr_delay_ms
                    )
                })
                .collect();
            if stalled == 0 {
                let lo = gs
                    .iter()
                    .map(|g| g.exec_by_ratio[0].0)
                    .fold(f64::MAX, f64::min);
                let hi = gs
                    .iter()
                    .map(|g| g.exec_by_ratio.last().unwrap().0)
                    .fold(0.0, f64::max);
                out.push(format!(
                    "{odp} ODP: no run stalled with the fix at any period from {}x to {}x the \
                     fault time ({runs} runs); without the fix, stalled runs: {}.",
                    format_float(lo),
                    format_float(hi),
                    off.join(", ")
                ));
            } else {
                let per: Vec<String> = gs
                    .iter()
                    .map(|g| match (g.last_unsafe, g.first_safe) {
                        (Some(u), Some(s)) => format!(
                            "fault {} (longest {}): stalls up to period {}, none from {}",
                            us(g.fault_us),
                            us(g.fault_max_us),
                            us(u * g.fault_us),
                            us(s * g.fault_us)
                        ),
                        (Some(u), None) => format!(
                            "fault {}: stalls up to the largest period tested ({})",
                            us(g.fault_us),
                            us(u * g.fault_us)
                        ),
                        (None, _) => format!("fault {}: no stall", us(g.fault_us)),
                    })
                    .collect();
                let reads: Vec<i64> = {
                    let mut v: Vec<i64> = gs
                        .iter()
                        .flat_map(|g| g.stalled_reads.iter().copied())
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                };
                let worst = gs.iter().map(|g| g.worst.0).fold(0.0, f64::max);
                let rule = match self.boundary_is_fault_max(odp) {
                    Some(true) => "every period shorter than the longest fault resolution \
                                   (fault time + jitter) can stall, every period at least that \
                                   long never did"
                        .to_string(),
                    _ => "the boundary is not the longest fault resolution in every group"
                        .to_string(),
                };
                out.push(format!(
                    "{odp} ODP: {rule}. {}. Up to {} of runs at one period stalled (with {} \
                     READs); {stalled} of {runs} runs with the fix on stalled; without the fix, stalled runs: {}.",
                    per.join("; "),
                    pct(worst),
                    reads
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    off.join(", ")
                ));
            }
            // The cost of a long period: mean execution time at the smallest safe period
            // against the largest period, per group.
            let costs: Vec<String> = gs
                .iter()
                .filter_map(|g| {
                    let s = g.first_safe?;
                    let at = |r: f64| g.exec_by_ratio.iter().find(|x| x.0 == r).map(|x| x.1);
                    let (fast, slow) = (at(s)?, g.exec_by_ratio.last()?);
                    let best = g
                        .exec_by_ratio
                        .iter()
                        .filter(|x| x.0 >= s)
                        .fold((f64::NAN, f64::MAX), |b, x| if x.1 < b.1 { *x } else { b });
                    Some(format!(
                        "fault {}, RNR {} ms: {} at {}x, {} at {}x (fastest safe: {}x; fix off {})",
                        us(g.fault_us),
                        g.rnr_delay_ms,
                        us(fast),
                        format_float(s),
                        us(slow.1),
                        format_float(slow.0),
                        format_float(best.0),
                        us(g.off_exec_us)
                    ))
                })
                .collect();
            if !costs.is_empty() {
                out.push(format!(
                    "{odp} ODP, mean execution time from the smallest safe period to the largest: {}.",
                    costs.join("; ")
                ));
            }
            let late: u64 = gs.iter().map(|g| g.late_runs).sum();
            if late > 0 {
                out.push(format!(
                    "{odp} ODP: in {late} runs the hardware timer fired only after the last READ \
                     completed (on a leftover dummy): not counted as stalls (column late_timeouts)."
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[(&str, f64, f64, u64, f64, u64)]) -> Table {
        let mut t = Table::new(&[
            "odp",
            "rnr_delay_ms",
            "fault_us",
            "fault_max_us",
            "period_ratio",
            "num_ops",
            "exec_time_us",
            "stalled",
            "late_timeouts",
        ]);
        for &(odp, fault, ratio, ops, exec, stalled) in rows {
            t.push(vec![
                odp.into(),
                1.28.into(),
                fault.into(),
                (fault + 50.0).into(),
                ratio.into(),
                ops.into(),
                exec.into(),
                stalled.into(),
                0u64.into(),
            ]);
        }
        t
    }

    #[test]
    fn finds_the_boundary_at_the_longest_fault_resolution() {
        let t = table(&[
            ("local", 500.0, 0.0, 3, 300_000.0, 1),
            ("local", 500.0, 0.5, 3, 90_000.0, 1),
            ("local", 500.0, 1.0, 3, 80_000.0, 1),
            ("local", 500.0, 1.2, 3, 2_000.0, 0),
            ("local", 500.0, 2.0, 3, 3_000.0, 0),
            ("remote", 500.0, 0.0, 2, 400_000.0, 1),
            ("remote", 500.0, 0.5, 2, 1_000.0, 0),
            ("remote", 500.0, 2.0, 2, 2_000.0, 0),
        ]);
        let r = fix_period_rule(&t).unwrap();
        assert_eq!(r.groups.len(), 2);
        let l = &r.groups[0];
        assert_eq!((l.last_unsafe, l.first_safe), (Some(1.0), Some(1.2)));
        assert_eq!(l.stalled_reads, vec![3]);
        assert_eq!(r.boundary_is_fault_max("local"), Some(true));
        assert_eq!(r.boundary_is_fault_max("remote"), None);
        assert!((r.safe_in_fault_max("local").unwrap() - 600.0 / 550.0).abs() < 1e-9);
        let s = r.sentences().join(" ");
        assert!(s.contains("never did"), "{s}");
        assert!(s.contains("remote ODP: no run stalled"), "{s}");
        // A boundary elsewhere is reported as such, not as the rule.
        let t = table(&[
            ("local", 500.0, 1.2, 3, 80_000.0, 1),
            ("local", 500.0, 2.0, 3, 3_000.0, 0),
        ]);
        let r = fix_period_rule(&t).unwrap();
        assert_eq!(r.boundary_is_fault_max("local"), Some(false));
        assert!(r.sentences()[0].contains("not the longest"));
    }

    #[test]
    fn other_experiments_and_missing_columns_have_no_findings() {
        let t = Table::new(&["odp", "stalled"]);
        assert!(for_experiment("odp-fix-period", &t).is_empty());
        assert!(for_experiment("part-latency", &t).is_empty());
    }
}
