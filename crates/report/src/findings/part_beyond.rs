//! Findings of the PART experiments beyond the reference design (spec part.md, last section):
//! `part-early-err` and `part-kernel-err`. Each states the headline numbers read from the
//! table and the mechanism behind them.

use super::num;
use crate::Table;

/// Rows of `t` as (key column text, size, value) for the columns named.
fn rows(t: &Table, key: &str, y: &str) -> Option<Vec<(String, f64, f64)>> {
    let (k, s, y) = (t.col(key)?, t.col("size_bytes")?, t.col(y)?);
    t.rows
        .iter()
        .map(|r| Some((r[k].to_text(), num(&r[s])?, num(&r[y])?)))
        .collect()
}

/// The value for (`key`, `size`).
fn at(rows: &[(String, f64, f64)], key: &str, size: f64) -> Option<f64> {
    rows.iter()
        .find(|(k, s, _)| k == key && *s == size)
        .map(|r| r.2)
}

/// A size in bytes as `4 KiB` / `4 MiB`.
fn size_name(bytes: f64) -> String {
    let b = bytes as u64;
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// `part-early-err`: early ERR's speedup over NTO against the timeout's, at the smallest and
/// largest size.
pub fn early_err(t: &Table) -> Option<Vec<String>> {
    let lat = rows(t, "scheme", "latency_us")?;
    let to = lat
        .iter()
        .map(|r| r.0.as_str())
        .find(|k| k.starts_with("to-"))?
        .to_string();
    let mut sizes: Vec<f64> = lat.iter().map(|r| r.1).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let (lo, hi) = (*sizes.first()?, *sizes.last()?);
    let point = |size: f64| -> Option<String> {
        let (e, n, o) = (
            at(&lat, "early-err", size)?,
            at(&lat, "nto", size)?,
            at(&lat, &to, size)?,
        );
        Some(format!(
            "at {}: {:.1} us with early ERR, {:.1} us with NTO ({:.2}x), {:.1} us with {to} \
             ({:.2}x)",
            size_name(size),
            e,
            n,
            n / e,
            o,
            n / o
        ))
    };
    let beats_to = sizes
        .iter()
        .filter(|&&s| at(&lat, "early-err", s) < at(&lat, &to, s))
        .count();
    Some(vec![
        format!(
            "All pages missing, PIA, no block timeout: {}; {}. Early ERR is faster than {to} at \
             {beats_to} of {} sizes.",
            point(lo)?,
            point(hi)?,
            sizes.len()
        ),
        "Mechanism: the page-in task sends the ERR once the faulted block's pages are in and \
         the resent stream (at link speed, skipping the window's other faulted block) can no \
         longer reach a page before it is in; the source resends while the rest of the transfer \
         is paged in. NTO waits for the whole page-in; a timeout gets the same overlap only \
         once it expires, and never when the page-in is shorter than the timeout. For a \
         one-block transfer the only gain is the task's bookkeeping, done after the ERR \
         instead of before it."
            .to_string(),
    ])
}

/// `part-kernel-err`: what sending the ERR from kernel context saves, at the smallest and
/// largest size, with the reference ERR point and with early ERR.
pub fn kernel_err(t: &Table) -> Option<Vec<String>> {
    let saved = rows(t, "err_point", "saved_us")?;
    let pct = rows(t, "err_point", "saved_pct")?;
    let mut sizes: Vec<f64> = saved.iter().map(|r| r.1).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let (lo, hi) = (*sizes.first()?, *sizes.last()?);
    let point = |p: &str, size: f64| -> Option<String> {
        Some(format!(
            "{:.1} us ({:.1}%) at {}",
            at(&saved, p, size)?,
            at(&pct, p, size)?,
            size_name(size)
        ))
    };
    Some(vec![
        format!(
            "ERR from kernel context saves {} and {} with the ERR after the page-in; with early \
             ERR {} and {}.",
            point("end", lo)?,
            point("end", hi)?,
            point("early", lo)?,
            point("early", hi)?
        ),
        "Mechanism: each ERR point of the page-in task costs one kernel-to-user notification \
         (netlink) before the daemon sends the ERR; from kernel context that hop is gone. It \
         is a fixed cost per ERR point, so it matters for small transfers and vanishes beside \
         the page-in of large ones. Early ERR has one point per faulted block (two with a \
         window of two), so it saves about one notification per block (its points also move \
         a little: the slack it keeps for the window's other block no longer includes a \
         notification)."
            .to_string(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;

    fn table(cols: &[&str], rows: &[(&str, u64, &[f64])]) -> Table {
        let mut t = Table::new(cols);
        for (k, s, v) in rows {
            let mut r: Vec<Cell> = vec![(*k).into(), (*s).into()];
            r.extend(v.iter().map(|&x| Cell::from(x)));
            t.push(r);
        }
        t
    }

    #[test]
    fn early_err_reads_its_numbers_from_the_table() {
        let t = table(
            &["scheme", "size_bytes", "latency_us"],
            &[
                ("early-err", 4096, &[30.0]),
                ("early-err", 4194304, &[4000.0]),
                ("to-100us", 4096, &[33.0]),
                ("to-100us", 4194304, &[4100.0]),
                ("nto", 4096, &[33.0]),
                ("nto", 4194304, &[7000.0]),
            ],
        );
        let f = early_err(&t).unwrap();
        assert!(
            f[0].contains("at 4 MiB: 4000.0 us with early ERR, 7000.0 us with NTO (1.75x)"),
            "{}",
            f[0]
        );
        assert!(f[0].contains("at 2 of 2 sizes"), "{}", f[0]);
        assert!(early_err(&Table::new(&["scheme"])).is_none());
    }

    #[test]
    fn kernel_err_reads_its_numbers_from_the_table() {
        let t = table(
            &["err_point", "size_bytes", "saved_us", "saved_pct"],
            &[
                ("end", 4096, &[7.0, 21.0]),
                ("end", 4194304, &[7.0, 0.1]),
                ("early", 4096, &[7.0, 24.0]),
                ("early", 4194304, &[14.0, 0.3]),
            ],
        );
        let f = kernel_err(&t).unwrap();
        assert!(
            f[0].contains("saves 7.0 us (21.0%) at 4 KiB and 7.0 us (0.1%) at 4 MiB"),
            "{}",
            f[0]
        );
        assert!(f[0].contains("14.0 us (0.3%) at 4 MiB"), "{}", f[0]);
    }
}
