//! The trajectory chart of a vow page: an inline SVG of the coupling series over time (the
//! four quantities in adjusted bits, told apart by colour, dash pattern and marker shape, so
//! not by colour alone) with missed report-in windows shaded. Deterministic text: the same
//! points, windows and instant give the same bytes. Every text it carries is escaped.

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

/// The chart of `points` (oldest first) with the window state `w`, up to `as_of`. `label` names
/// the chart for assistive technology (it is escaped here).
pub fn trajectory_svg(points: &[&Point], w: &Windows, as_of: u64, label: &str) -> String {
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
    let missed = w.missed();
    let desc = match points.last() {
        None => "No report-ins yet.".to_owned(),
        Some(p) => format!(
            "{} report-ins shown, from {} to {}. Latest adjusted bits: {}. {} missed window(s) \
             shaded.",
            points.len(),
            day(points[0].at),
            day(p.at),
            SERIES
                .iter()
                .zip(p.bits)
                .map(|((name, ..), b)| format!("{name} {}", fmt_bits(b)))
                .collect::<Vec<_>>()
                .join(", "),
            missed
        ),
    };
    let _ = write!(svg, "<desc id=\"chart-desc\">{}</desc>", xml_escape(&desc));
    // From the vow's start when every entry is drawn, else from the first one drawn.
    let x0 = match points.first() {
        Some(p) if p.seq > 1 => p.at,
        _ => w.start,
    };
    let x1 = as_of.max(points.last().map_or(0, |l| l.at)).max(x0 + 1);
    let values = points.iter().flat_map(|p| p.bits.iter().flatten().copied());
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let hi = nice_ceiling(hi.max(0.1));
    let lo = if lo < 0.0 { -nice_ceiling(-lo) } else { 0.0 };
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |t: u64| LEFT + pw * (t.saturating_sub(x0) as f64) / ((x1 - x0) as f64);
    let y = |v: f64| TOP + ph * (hi - v) / (hi - lo);
    // Missed windows (only those listed, inside the drawn span).
    for [a, b] in &w.missed_runs {
        let from = w.start + a * w.cadence;
        let to = w.start + (b + 1) * w.cadence;
        if to <= x0 || from >= x1 {
            continue;
        }
        let (fx, tx) = (x(from.max(x0)), x(to.min(x1)));
        let _ = write!(
            svg,
            "<rect class=\"missed\" x=\"{fx:.1}\" y=\"{TOP:.1}\" width=\"{:.1}\" \
             height=\"{ph:.1}\" fill=\"#f1a208\" fill-opacity=\"0.22\"><title>missed: {} to \
             {}</title></rect>",
            (tx - fx).max(1.0),
            rfc3339(from),
            rfc3339(to)
        );
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
    let _ = write!(
        svg,
        "<text x=\"{LEFT}\" y=\"{:.1}\" font-size=\"11\" fill=\"#4a4a4a\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" \
         fill=\"#4a4a4a\">{}</text>\
         <text x=\"14\" y=\"{:.1}\" font-size=\"11\" fill=\"#4a4a4a\" \
         transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">adjusted bits</text>",
        TOP + ph + 16.0,
        day(x0),
        W - RIGHT,
        TOP + ph + 16.0,
        day(x1),
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    // The four series.
    for (k, (name, colour, dash)) in SERIES.iter().enumerate() {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| p.bits[k].map(|v| (x(p.at), y(v))))
            .collect();
        if pts.len() > 1 {
            let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
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
        for (a, b) in &pts {
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
        }
    }

    #[test]
    fn a_chart_is_deterministic_labelled_and_escaped() {
        let pts = [point(1, 1_000_100, 0.4), point(2, 1_010_000, 0.9)];
        let refs: Vec<&Point> = pts.iter().collect();
        let w = windows(1_000_000, 3600, &[1_000_100, 1_010_000], 1_020_000);
        let a = trajectory_svg(&refs, &w, 1_020_000, "vow <script>");
        let b = trajectory_svg(&refs, &w, 1_020_000, "vow <script>");
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
    fn an_empty_chart_says_so() {
        let w = windows(1_000_000, 3600, &[], 1_000_010);
        let s = trajectory_svg(&[], &w, 1_000_010, "v");
        assert!(s.contains("No report-ins yet"));
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.07), 0.1);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(nice_ceiling(1.2), 2.0);
    }
}
