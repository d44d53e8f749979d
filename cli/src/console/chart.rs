//! Line charts as inline SVG, drawn on the server from the sampled
//! history: no script, no external asset.
//!
//! Invariant: every text in a chart (titles, labels, values) goes through
//! maud, so it is escaped like the rest of the page.

use maud::{html, Markup};

/// One line of a chart.
pub(crate) struct Series<'a> {
    pub(crate) label: &'a str,
    /// A CSS color name or `#rrggbb`, written as an SVG attribute.
    pub(crate) color: &'a str,
    /// (time ms, value) points, in time order.
    pub(crate) points: Vec<(u64, f64)>,
}

const W: f64 = 640.0;
const H: f64 = 180.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;

/// A chart of `series`, its y axis labelled by `fmt` and reaching at least
/// `floor`; `id` names it for tests.
pub(crate) fn line_chart(
    id: &str,
    title: &str,
    series: &[Series<'_>],
    floor: f64,
    fmt: fn(f64) -> String,
) -> Markup {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut t0, mut t1, mut ymax) = (u64::MAX, 0u64, 0f64);
    for &(t, y) in all {
        t0 = t0.min(t);
        t1 = t1.max(t);
        ymax = ymax.max(y);
    }
    let empty = t0 > t1;
    let ymax = ymax.max(floor) * 1.1;
    let span = (t1.saturating_sub(t0)).max(1) as f64;
    let x = |t: u64| LEFT + (t.saturating_sub(t0)) as f64 / span * (W - LEFT - 8.0);
    let y = |v: f64| TOP + (1.0 - v / ymax) * (H - TOP - BOTTOM);
    html! {
        figure.chart id=(id) {
            figcaption {
                (title)
                @for s in series {
                    " " span.key { svg.swatch width="12" height="4" { rect width="12" height="4" fill=(s.color) {} } " " (s.label) }
                }
            }
            svg.plot viewBox={ "0 0 " (W) " " (H) } role="img" aria-label=(title) {
                line x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(H - BOTTOM) stroke="#999" {}
                line x1=(LEFT) y1=(H - BOTTOM) x2=(W - 8.0) y2=(H - BOTTOM) stroke="#999" {}
                @for frac in [0.0, 0.5, 1.0] {
                    @let v = ymax / 1.1 * frac;
                    text x=(LEFT - 4.0) y=(y(v) + 4.0) text-anchor="end" font-size="11" fill="#555" { (fmt(v)) }
                }
                @if empty {
                    text x=(W / 2.0) y=(H / 2.0) text-anchor="middle" font-size="13" fill="#777" { "no samples yet" }
                } @else {
                    text x=(LEFT) y=(H - 6.0) font-size="11" fill="#555" { (crate::time::utc(t0)) }
                    text x=(W - 8.0) y=(H - 6.0) text-anchor="end" font-size="11" fill="#555" { (crate::time::utc(t1)) }
                    @for s in series {
                        @let pts = s.points.iter().map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v))).collect::<Vec<_>>().join(" ");
                        polyline points=(pts) fill="none" stroke=(s.color) stroke-width="2" {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_points_drawn() {
        let s = Series {
            label: "<b>",
            color: "red",
            points: vec![(0, 1.0), (10, 3.0)],
        };
        let svg = line_chart("c", "t<", &[s], 1.0, |v| format!("{v:.0}")).into_string();
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
        assert!(svg.contains("t&lt;"));
        assert!(svg.contains("<polyline"));
    }
}
