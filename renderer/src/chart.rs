//! The trajectory chart of a vow page: an inline SVG of the coupling series in chain order
//! (the four quantities in adjusted bits, told apart by colour, dash pattern and marker shape,
//! so not by colour alone). The x axis is the report-ins' sequence, one even step each, not a
//! time scale: report-ins sent within one second stay apart. Each run of missed report-in
//! windows is a shaded band of one step, placed between the report-ins it fell between.
//! Where the meter changes between two report-ins a dashed rule names the new meter, and no
//! line joins numbers of different meters.
//! Deterministic text: the same points and windows give the same bytes. Every text it carries
//! is escaped.

use std::fmt::Write;

use conduct_core::time::rfc3339;
use conduct_core::vow::trajectory::Point;
use conduct_core::vow::windows::Windows;

/// The quantities drawn, in the order of [`Point::bits`]: label, colour, dash pattern.
pub const SERIES: [(&str, &str, &str); 4] = [
    ("I(C;D)", "#0b57a4", ""),
    ("I(C;M)", "#b3261e", "6 3"),
    ("I(C;M|D clean)", "#6a4c93", "2 3"),
    ("I(C;D,M)", "#1f7a3a", "10 3 2 3"),
];

const W: f64 = 720.0;
const H: f64 = 270.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 62.0;

/// Escape text for XML (element content and attribute values alike). Characters XML 1.0
/// cannot carry (controls other than tab, newline and carriage return; U+FFFE, U+FFFF) are
/// dropped, so no caller text can make a feed or an SVG ill-formed.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn day(t: u64) -> String {
    rfc3339(t).chars().take(10).collect()
}

/// One step of the chart's x axis: a report-in, or a run of missed windows `[from, to)`.
enum Step<'a> {
    Point(&'a Point),
    Missed(u64, u64),
}

/// The chart's steps in time order: each point, and each run of missed windows of `w` that
/// ends after `x0` (the vow's start when every entry is drawn, else the first one drawn),
/// placed before the first point at or after its start.
fn steps<'a>(points: &[&'a Point], w: &Windows) -> Vec<Step<'a>> {
    let x0 = match points.first() {
        Some(p) if p.seq > 1 => p.at,
        _ => w.start,
    };
    let mut runs = w
        .missed_runs
        .iter()
        .map(|[a, b]| (w.start + a * w.cadence, w.start + (b + 1) * w.cadence))
        .filter(|&(_, to)| to > x0)
        .peekable();
    let mut out = Vec::with_capacity(points.len() + w.missed_runs.len());
    for p in points {
        while let Some((from, to)) = runs.next_if(|&(from, _)| from <= p.at) {
            out.push(Step::Missed(from, to));
        }
        out.push(Step::Point(p));
    }
    out.extend(runs.map(|(from, to)| Step::Missed(from, to)));
    out
}

/// The chart of `points` (oldest first) with the window state `w`, in chain order: one even
/// step per report-in and per run of missed windows (see the module's doc). `label` names the
/// chart for assistive technology (it is escaped here).
pub fn trajectory_svg(points: &[&Point], w: &Windows, label: &str) -> String {
    let mut svg = String::with_capacity(4096 + points.len() * 160);
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-labelledby=\"chart-title chart-desc\" class=\"chart\">"
    );
    let _ = write!(
        svg,
        "<title id=\"chart-title\">{}</title>",
        xml_escape(label)
    );
    let steps = steps(points, w);
    // Bands drawn, and the windows they cover.
    let (bands, missed) = steps.iter().fold((0, 0), |(n, m), s| match s {
        Step::Missed(from, to) => (n + 1, m + (to - from) / w.cadence.max(1)),
        Step::Point(_) => (n, m),
    });
    let desc = match (points.first(), points.last()) {
        (Some(f), Some(l)) => format!(
            "{} report-ins shown in chain order, one even step each (not a time scale), from \
             #{} ({}) to #{} ({}). Latest adjusted bits: {}. {} missed window(s) shaded in {} \
             band(s), each between the report-ins it fell between.",
            points.len(),
            f.seq,
            day(f.at),
            l.seq,
            day(l.at),
            SERIES
                .iter()
                .zip(l.bits)
                .map(|((name, ..), b)| format!("{name} {}", fmt_bits(b)))
                .collect::<Vec<_>>()
                .join(", "),
            missed,
            bands
        ),
        _ => format!("No report-ins yet. {missed} missed window(s) shaded in {bands} band(s)."),
    };
    let changes: Vec<(&Point, &Point)> = points
        .windows(2)
        .filter(|w| w[0].meter != w[1].meter)
        .map(|w| (w[0], w[1]))
        .collect();
    let desc = if changes.is_empty() {
        desc
    } else {
        let said: Vec<String> = changes
            .iter()
            .map(|(a, b)| format!("from {} to {} at #{}", a.meter, b.meter, b.seq))
            .collect();
        format!(
            "{desc} The meter changes {} (dashed rules); numbers of different meters are not \
             joined.",
            said.join(", ")
        )
    };
    let _ = write!(svg, "<desc id=\"chart-desc\">{}</desc>", xml_escape(&desc));
    let values = points.iter().flat_map(|p| p.bits.iter().flatten().copied());
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let hi = nice_ceiling(hi.max(0.1));
    let lo = if lo < 0.0 { -nice_ceiling(-lo) } else { 0.0 };
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    // Step k spans [LEFT + k*u, LEFT + (k+1)*u); a report-in is drawn at its middle.
    let u = pw / (steps.len().max(1) as f64);
    let y = |v: f64| TOP + ph * (hi - v) / (hi - lo);
    // Missed windows: a band over their step.
    for (k, step) in steps.iter().enumerate() {
        if let Step::Missed(from, to) = step {
            let _ = write!(
                svg,
                "<rect class=\"missed\" x=\"{:.1}\" y=\"{TOP:.1}\" width=\"{:.1}\" \
                 height=\"{ph:.1}\" fill=\"#f1a208\" fill-opacity=\"0.22\"><title>missed: {} \
                 to {}</title></rect>",
                LEFT + u * k as f64,
                u.max(1.0),
                rfc3339(*from),
                rfc3339(*to)
            );
        }
    }
    let at: Vec<(f64, &Point)> = steps
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Step::Point(p) => Some((LEFT + u * (k as f64 + 0.5), *p)),
            Step::Missed(..) => None,
        })
        .collect();
    // Meter changes: a dashed rule between the two report-ins, naming the new meter.
    for w in at.windows(2) {
        let ((xa, a), (xb, b)) = (w[0], w[1]);
        if a.meter != b.meter {
            let x = (xa + xb) / 2.0;
            let _ = write!(
                svg,
                "<g class=\"meter-change\"><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP:.1}\" \
                 y2=\"{:.1}\" stroke=\"#4a4a4a\" stroke-dasharray=\"3 3\"/><text x=\"{:.1}\" \
                 y=\"{:.1}\" font-size=\"10\" fill=\"#4a4a4a\">{}</text><title>meter changed: {} \
                 to {}</title></g>",
                TOP + ph,
                x + 3.0,
                TOP + 10.0,
                xml_escape(&b.meter),
                xml_escape(&a.meter),
                xml_escape(&b.meter)
            );
        }
    }
    // Axes and grid.
    for v in [lo, (lo + hi) / 2.0, hi] {
        let yy = y(v);
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#d8d8d4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" \
             fill=\"#4a4a4a\">{v:.2}</text>",
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    if lo < 0.0 {
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#9a9a96\"/>",
            W - RIGHT,
            y(0.0),
            y(0.0)
        );
    }
    // The x axis: the first and last report-in drawn, and what a step is.
    let end_label =
        |p: Option<&&Point>| p.map_or_else(String::new, |p| format!("#{} ({})", p.seq, day(p.at)));
    let _ = write!(
        svg,
        "<text x=\"{LEFT}\" y=\"{:.1}\" font-size=\"11\" fill=\"#4a4a4a\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" \
         fill=\"#4a4a4a\">report-ins in chain order, one step each (not a time scale)</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" \
         fill=\"#4a4a4a\">{}</text>\
         <text x=\"14\" y=\"{:.1}\" font-size=\"11\" fill=\"#4a4a4a\" \
         transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">adjusted bits</text>",
        TOP + ph + 16.0,
        end_label(points.first()),
        LEFT + pw / 2.0,
        TOP + ph + 16.0,
        W - RIGHT,
        TOP + ph + 16.0,
        end_label(points.last()),
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    // The four series.
    for (k, (name, colour, dash)) in SERIES.iter().enumerate() {
        let pts: Vec<(f64, f64, &str)> = at
            .iter()
            .filter_map(|(x, p)| p.bits[k].map(|v| (*x, y(v), p.meter.as_str())))
            .collect();
        // One line per run of one meter.
        for run in pts.chunk_by(|a, b| a.2 == b.2).filter(|r| r.len() > 1) {
            let path: Vec<String> = run
                .iter()
                .map(|(a, b, _)| format!("{a:.1},{b:.1}"))
                .collect();
            let _ = write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.8\"{} \
                 points=\"{}\"/>",
                if dash.is_empty() {
                    String::new()
                } else {
                    format!(" stroke-dasharray=\"{dash}\"")
                },
                path.join(" ")
            );
        }
        for (a, b, _) in &pts {
            let _ = write!(svg, "{}", marker(k, *a, *b, colour));
        }
        // Legend.
        let lx = LEFT + (k as f64) * (pw / 4.0);
        let ly = H - 14.0;
        let _ = write!(
            svg,
            "<line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" \
             stroke=\"{colour}\" stroke-width=\"2\"{}/>{}<text x=\"{:.1}\" y=\"{:.1}\" \
             font-size=\"11\" fill=\"#1b1b1b\">{}</text>",
            lx + 22.0,
            if dash.is_empty() {
                String::new()
            } else {
                format!(" stroke-dasharray=\"{dash}\"")
            },
            marker(k, lx + 11.0, ly, colour),
            lx + 28.0,
            ly + 4.0,
            xml_escape(name)
        );
    }
    if points.is_empty() {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" text-anchor=\"middle\" \
             fill=\"#4a4a4a\">No report-ins yet</text>",
            LEFT + pw / 2.0,
            TOP + ph / 2.0
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A marker of series `k` at (x, y): circle, square, triangle, diamond.
fn marker(k: usize, x: f64, y: f64, colour: &str) -> String {
    match k {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.6\" fill=\"{colour}\"/>"),
        1 => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"5\" height=\"5\" fill=\"{colour}\"/>",
            x - 2.5,
            y - 2.5
        ),
        2 => format!(
            "<path d=\"M{x:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z\" fill=\"{colour}\"/>",
            y - 3.2,
            x + 3.0,
            y + 2.4,
            x - 3.0,
            y + 2.4
        ),
        _ => format!(
            "<path d=\"M{x:.1},{:.1}L{:.1},{y:.1}L{x:.1},{:.1}L{:.1},{y:.1}Z\" \
             fill=\"{colour}\"/>",
            y - 3.4,
            x + 3.4,
            y + 3.4,
            x - 3.4
        ),
    }
}

/// Bits as printed on pages: three decimals, or "n/a" when not measurable.
pub fn fmt_bits(b: Option<f64>) -> String {
    b.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"))
}

/// The smallest of 0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, ... at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let mut scale = 0.1;
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            if m * scale >= v {
                return m * scale;
            }
        }
        scale *= 10.0;
        if scale > 1e6 {
            return v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escape_drops_what_xml_cannot_carry() {
        assert_eq!(xml_escape("a\u{FFFF}b\u{FFFE}c\u{1}d\te<"), "abcd\te&lt;");
    }
    use conduct_core::vow::windows::windows;

    fn point(seq: u64, at: u64, v: f64) -> Point {
        Point {
            seq,
            at,
            log_index: seq,
            attested: false,
            bits: [Some(v), Some(v / 2.0), None, Some(-0.01)],
            y: Some(0.5),
            note: Some("<b>x</b>".into()),
            record_sha256: "00".into(),
            meter: "meter/2".into(),
        }
    }

    #[test]
    fn a_chart_is_deterministic_labelled_and_escaped() {
        let pts = [point(1, 1_000_100, 0.4), point(2, 1_010_000, 0.9)];
        let refs: Vec<&Point> = pts.iter().collect();
        let w = windows(1_000_000, 3600, &[1_000_100, 1_010_000], 1_020_000);
        let a = trajectory_svg(&refs, &w, "vow <script>");
        let b = trajectory_svg(&refs, &w, "vow <script>");
        assert_eq!(a, b);
        assert!(
            a.contains("role=\"img\"")
                && a.contains("<title id=\"chart-title\">vow &lt;script&gt;</title>")
        );
        assert!(!a.contains("<script"));
        assert!(a.contains("class=\"missed\""), "missed windows are shaded");
        assert_eq!(
            a.matches("<polyline").count(),
            3,
            "a series without numbers is not drawn"
        );
    }

    #[test]
    fn a_meter_change_is_marked_and_its_numbers_are_not_joined() {
        let mut pts = [
            point(1, 1_000_100, 0.4),
            point(2, 1_003_700, 0.5),
            point(3, 1_007_300, 0.9),
        ];
        pts[0].meter = "meter/1".into();
        let refs: Vec<&Point> = pts.iter().collect();
        let w = windows(
            1_000_000,
            3600,
            &[1_000_100, 1_003_700, 1_007_300],
            1_008_000,
        );
        let svg = trajectory_svg(&refs, &w, "v");
        assert_eq!(svg.matches("class=\"meter-change\"").count(), 1);
        assert!(svg.contains("<title>meter changed: meter/1 to meter/2</title>"));
        assert!(svg.contains("The meter changes from meter/1 to meter/2 at #2"));
        // Three drawn series, each joined only over #2 and #3.
        assert_eq!(svg.matches("<polyline").count(), 3);
        let same = trajectory_svg(&refs[1..], &w, "v");
        assert!(!same.contains("meter-change"));
    }

    #[test]
    fn an_empty_chart_says_so() {
        let w = windows(1_000_000, 3600, &[], 1_000_010);
        let s = trajectory_svg(&[], &w, "v");
        assert!(s.contains("No report-ins yet"));
    }

    /// The x of every marker of series 0 (circles) above the legend, in document order.
    fn circle_xs(svg: &str) -> Vec<f64> {
        svg.split("<circle cx=\"")
            .skip(1)
            .filter_map(|rest| {
                let (x, rest) = rest.split_once('"')?;
                let y: f64 = rest
                    .split_once("cy=\"")?
                    .1
                    .split_once('"')?
                    .0
                    .parse()
                    .ok()?;
                (y < H - BOTTOM).then(|| x.parse().ok())?
            })
            .collect()
    }

    #[test]
    fn report_ins_in_one_second_stay_apart_in_chain_order() {
        // Five report-ins sent within one second: five distinct steps, left to right.
        let pts: Vec<Point> = (1..=5)
            .map(|k| point(k, 1_000_100, 0.1 * k as f64))
            .collect();
        let refs: Vec<&Point> = pts.iter().collect();
        let w = windows(1_000_000, 3600, &[1_000_100], 1_000_200);
        let s = trajectory_svg(&refs, &w, "v");
        let xs = circle_xs(&s);
        assert_eq!(xs.len(), 5, "{s}");
        assert!(xs.windows(2).all(|p| p[1] - p[0] > 50.0), "{xs:?}");
        assert!(xs[4] - xs[0] > (W - LEFT - RIGHT) / 2.0, "{xs:?}");
        assert!(s.contains("not a time scale") && s.contains("#1 (") && s.contains("#5 ("));
    }

    #[test]
    fn missed_windows_sit_between_the_report_ins_they_fell_between() {
        // Report-ins in windows 0 and 3; windows 1 and 2 missed, then 4 and 5 (overdue).
        let (start, h) = (1_000_000, 3600);
        let pts = [point(1, start + 10, 0.4), point(2, start + 3 * h + 10, 0.9)];
        let refs: Vec<&Point> = pts.iter().collect();
        let w = windows(
            start,
            h,
            &[start + 10, start + 3 * h + 10],
            start + 6 * h + 1,
        );
        assert_eq!(w.missed_runs, vec![[1, 2], [4, 5]]);
        let s = trajectory_svg(&refs, &w, "v");
        let xs = circle_xs(&s);
        let bands: Vec<f64> = s
            .split("<rect class=\"missed\" x=\"")
            .skip(1)
            .filter_map(|r| r.split_once('"').and_then(|(x, _)| x.parse().ok()))
            .collect();
        assert_eq!((xs.len(), bands.len()), (2, 2), "{s}");
        assert!(
            xs[0] < bands[0] && bands[0] < xs[1] && xs[1] < bands[1],
            "{xs:?} {bands:?}"
        );
        // Only the runs after the first drawn entry when the chain is cut.
        let cut = [point(7, start + 3 * h + 10, 0.9)];
        let s = trajectory_svg(&[&cut[0]], &w, "v");
        assert_eq!(s.matches("class=\"missed\"").count(), 1, "{s}");
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.07), 0.1);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(nice_ceiling(1.2), 2.0);
    }
}
