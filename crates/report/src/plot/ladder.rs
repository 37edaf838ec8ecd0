//! Ladder (sequence) diagrams of packet traces: one vertical lane per endpoint, one arrow per
//! packet from its sender's lane to its receiver's, in trace order, labelled with the time,
//! the packet type and the remaining columns. Time runs downwards by row, not to scale: long
//! gaps (a hardware timeout among microsecond exchanges) get a break marker with their length,
//! so both scales stay readable.

use super::{n, Svg, PALETTE, TICK_FONT, TITLE_FONT, W};
use crate::{Cell, Table};

/// Draw rows of `table` (already filtered) as a ladder. `dir` holds "a->b", `time` the send
/// time in us, `kind` the packet type (arrow colour); the other columns go into the label.
pub(super) fn draw(
    title: &str,
    table: &Table,
    rows: &[&Vec<Cell>],
    dir: usize,
    time: usize,
    kind: Option<usize>,
    skip: &[usize],
) -> String {
    // Lanes in order of first appearance.
    let mut lanes: Vec<String> = Vec::new();
    let mut arrows = Vec::new();
    for r in rows {
        let d = r[dir].to_text();
        let Some((a, b)) = d.split_once("->") else {
            continue;
        };
        for l in [a.trim(), b.trim()] {
            if !lanes.iter().any(|x| x == l) {
                lanes.push(l.to_string());
            }
        }
        let t = r[time].as_f64().unwrap_or(f64::NAN);
        let k = kind.map(|i| r[i].to_text()).unwrap_or_default();
        let extra: Vec<String> = (0..table.columns.len())
            .filter(|i| *i != dir && *i != time && Some(*i) != kind && !skip.contains(i))
            .map(|i| format!("{} {}", table.columns[i], r[i].to_text()))
            .collect();
        arrows.push((
            a.trim().to_string(),
            b.trim().to_string(),
            t,
            k,
            extra.join(", "),
        ));
    }
    let kinds: Vec<String> = arrows.iter().fold(Vec::new(), |mut v, a| {
        if !v.contains(&a.3) {
            v.push(a.3.clone());
        }
        v
    });
    let row_h = 30.0;
    let gap_h = 26.0;
    // A gap is "long" when it exceeds 100 us and 20x the median step: drawn as a break.
    let mut steps: Vec<f64> = arrows
        .windows(2)
        .map(|w| (w[1].2 - w[0].2).max(0.0))
        .collect();
    steps.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let median = steps.get(steps.len() / 2).copied().unwrap_or(0.0);
    let long = |dt: f64| dt > 100.0 && dt > 20.0 * median.max(1.0);
    let breaks = arrows.windows(2).filter(|w| long(w[1].2 - w[0].2)).count();
    let top = 80.0;
    let height = top + arrows.len() as f64 * row_h + breaks as f64 * gap_h + 40.0;
    let mut s = Svg::new(W, height);
    s.text(
        W / 2.0,
        28.0,
        TITLE_FONT,
        "middle",
        r#" font-weight="bold""#,
        title,
    );
    let lane_x = |l: &str| {
        let i = lanes.iter().position(|x| x == l).unwrap_or(0) as f64;
        let nl = lanes.len().max(2) as f64;
        140.0 + i * (W - 360.0) / (nl - 1.0)
    };
    for l in &lanes {
        let x = lane_x(l);
        s.text(
            x,
            top - 22.0,
            TICK_FONT + 1.0,
            "middle",
            r#" font-weight="bold""#,
            l,
        );
        s.line(x, top - 12.0, x, height - 30.0, "#555555", 1.5);
    }
    // Legend of packet types.
    for (i, k) in kinds.iter().enumerate() {
        let y = top + i as f64 * 16.0;
        s.line(W - 150.0, y, W - 130.0, y, PALETTE[i % PALETTE.len()], 2.0);
        s.text(W - 125.0, y + 4.0, TICK_FONT, "start", "", k);
    }
    let mut y = top;
    let mut prev_t: Option<f64> = None;
    for (a, b, t, k, extra) in &arrows {
        if let Some(p) = prev_t {
            if long(t - p) {
                let gap = t - p;
                let label = if gap >= 1000.0 {
                    format!("... {} ms later ...", n(gap / 1000.0))
                } else {
                    format!("... {} us later ...", n(gap))
                };
                s.text(
                    W / 2.0 - 110.0,
                    y + 10.0,
                    TICK_FONT,
                    "middle",
                    r##" fill="#aa3333" font-style="italic""##,
                    &label,
                );
                y += gap_h;
            }
        }
        prev_t = Some(*t);
        let (x0, x1) = (lane_x(a), lane_x(b));
        let color = PALETTE[kinds.iter().position(|x| x == k).unwrap_or(0) % PALETTE.len()];
        let y1 = y + row_h * 0.6;
        s.line(x0, y, x1, y1, color, 2.0);
        // Arrow head at the receiver.
        let dir = if x1 > x0 { -1.0 } else { 1.0 };
        s.raw(&format!(
            r#"<polygon points="{},{} {},{} {},{}" fill="{color}"/>"#,
            n(x1),
            n(y1),
            n(x1 + dir * 9.0),
            n(y1 - 6.0),
            n(x1 + dir * 9.0),
            n(y1 + 2.0)
        ));
        s.text(
            lane_x(&lanes[0]) - 10.0,
            y + 4.0,
            TICK_FONT,
            "end",
            "",
            &format!("{} us", n(*t)),
        );
        let label = if extra.is_empty() {
            k.clone()
        } else {
            format!("{k}  ({extra})")
        };
        s.text(
            (x0 + x1) / 2.0,
            y + row_h * 0.3 - 4.0,
            TICK_FONT - 1.0,
            "middle",
            "",
            &label,
        );
        y += row_h;
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use crate::{render_svg, Cell, PlotSpec, Table};

    #[test]
    fn ladder_draws_lanes_arrows_and_gap_markers() {
        let mut t = Table::new(&["scenario", "time_us", "direction", "packet", "psn"]);
        for (time, dir, p) in [
            (0.0, "client->server", "READ_REQ"),
            (1.3, "server->client", "RNR_NAK"),
            (3842.6, "client->server", "READ_REQ"),
            (316540.1, "client->server", "READ_REQ"),
        ] {
            t.push(vec![
                Cell::from("s"),
                Cell::from(time),
                Cell::from(dir),
                Cell::from(p),
                Cell::from(0u64),
            ]);
        }
        t.push(vec![
            Cell::from("other"),
            Cell::from(1.0),
            Cell::from("a->b"),
            Cell::from("X"),
            Cell::from(0u64),
        ]);
        let svg = render_svg(
            &t,
            &PlotSpec::line("trace", "direction", "time_us", Some("packet"))
                .ladder()
                .only("scenario", "s"),
        )
        .unwrap();
        assert!(svg.contains(">client<") && svg.contains(">server<"));
        assert_eq!(
            svg.matches("<polygon").count(),
            4,
            "one arrow per packet of the scenario"
        );
        assert!(svg.contains("ms later"), "the long gap is marked");
        assert!(!svg.contains(">a<"), "other scenarios are filtered out");
    }
}
