//! The one trend chart renderer: a series of one metric of one case in one
//! lane ([`Chart`]) as an inline `<svg>` that scales with its `viewBox` (no
//! script, no external font or style). Its colours and font are
//! presentation attributes, so a chart saved as a file reads on its own; a
//! page's style sheet overrides them (the status page's dark scheme). The App's `/status` page and
//! `benchops-publish history --svg` both draw with it, so the same series
//! gives the same bytes. Values are drawn
//! as polylines broken at gaps (a missing value is a gap, never a zero),
//! each value also as a dot (`class="pt"`); the baseline, when known, is a
//! dashed line; the y axis is labelled with the chart's range and the x axis
//! with the first and last slots.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::markup::escape;

/// One point of a series: a record's slot and its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    /// The record's slot.
    pub slot: String,
    /// Its median of the metric (`null`: not measured, a gap).
    pub value: Option<f64>,
}

/// The value a trend plots for one record: its summary median of `metric`
/// of `case`, or `None` when it did not measure it (a gap, never a zero).
pub fn median(record: &crate::record::ResultRecord, case: &str, metric: &str) -> Option<f64> {
    record
        .cases
        .iter()
        .find(|c| c.id.as_str() == case)?
        .metrics
        .iter()
        .find(|m| m.name == metric)?
        .summary
        .as_ref()
        .map(|s| s.median.get())
}

/// What one chart draws.
#[derive(Debug, Clone, Copy)]
pub struct Chart<'a> {
    /// The lane.
    pub lane: &'a str,
    /// The case.
    pub case: &'a str,
    /// The metric.
    pub metric: &'a str,
    /// Its unit (may be empty).
    pub unit: &'a str,
    /// The baseline's value, when known (a dashed line).
    pub baseline: Option<f64>,
    /// The points, oldest first.
    pub points: &'a [TrendPoint],
}

/// The drawing's width in user units.
const WIDTH: f64 = 480.0;
/// The drawing's height in user units.
const HEIGHT: f64 = 180.0;
/// Room on the left (the y labels sit inside the plot, so a long one is
/// never cut off).
const LEFT: f64 = 8.0;
/// Room on the right.
const RIGHT: f64 = 8.0;
/// Room at the top.
const TOP: f64 = 8.0;
/// Room at the bottom for the x labels.
const BOTTOM: f64 = 24.0;
/// Room inside the plot above the range's top and below its bottom, where
/// the range labels sit.
const INSET: f64 = 18.0;

/// The value range a chart maps onto its height: never empty, and always
/// holding every value and the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// The value at the bottom edge.
    pub lo: f64,
    /// The value at the top edge.
    pub hi: f64,
}

impl Scale {
    /// The range of `values` and `baseline`; `None` when there is no value
    /// at all. A single value (or all equal) gets a range around it, so it
    /// is drawn at mid-height.
    pub fn of(values: &[Option<f64>], baseline: Option<f64>) -> Option<Scale> {
        let mut it = values
            .iter()
            .flatten()
            .chain(baseline.as_ref())
            .copied()
            .filter(|v| v.is_finite());
        let first = it.next()?;
        let (lo, hi) = it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if hi > lo {
            return Some(Scale { lo, hi });
        }
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        Some(Scale {
            lo: lo - pad,
            hi: hi + pad,
        })
    }

    /// The y coordinate of `v`: `lo` and `hi` sit `INSET` inside the
    /// plot's bottom and top edges.
    pub fn y(&self, v: f64) -> f64 {
        let plot = HEIGHT - TOP - BOTTOM - 2.0 * INSET;
        HEIGHT - BOTTOM - INSET - (v - self.lo) / (self.hi - self.lo) * plot
    }
}

/// The x coordinate of point `i` of `n`: spread over the width, a single
/// point in the middle.
pub fn x_at(i: usize, n: usize) -> f64 {
    let plot = WIDTH - LEFT - RIGHT;
    if n <= 1 {
        return LEFT + plot / 2.0;
    }
    LEFT + plot * i as f64 / (n - 1) as f64
}

/// A value for people: at most four significant digits, exponent notation
/// for very large or small magnitudes.
pub fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".to_owned()
        } else {
            v.to_string()
        };
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s.as_str()
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// A value with its unit.
pub fn with_unit(v: f64, unit: &str) -> String {
    if unit.is_empty() {
        number(v)
    } else {
        format!("{} {unit}", number(v))
    }
}

/// The date part of a slot (`2026-11-30`), or the slot.
fn short_slot(slot: &str) -> &str {
    slot.get(..10).unwrap_or(slot)
}

/// Runs of consecutive values: the polylines of a series with gaps.
pub fn segments(values: &[Option<f64>]) -> Vec<Vec<(usize, f64)>> {
    let mut out: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut cur = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) if v.is_finite() => cur.push((i, *v)),
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The chart of one series, as an `<svg>` element.
pub fn trend_svg(t: &Chart<'_>) -> String {
    let values: Vec<Option<f64>> = t.points.iter().map(|p| p.value).collect();
    let n = values.len();
    let title = escape(&format!("{} · {} · {}", t.lane, t.case, t.metric));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="trend" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" font-family="system-ui,sans-serif" font-size="13"><title>{title}</title>"#
    );
    let (x0, x1, yb) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM);
    let _ = write!(
        s,
        r##"<rect class="plot" fill="#f6f8fa" stroke="#d1d9e0" x="{x0}" y="{TOP}" width="{}" height="{}"/>"##,
        x1 - x0,
        yb - TOP
    );
    let Some(scale) = Scale::of(&values, t.baseline) else {
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">no values</text></svg>"#,
            WIDTH / 2.0,
            HEIGHT / 2.0
        );
        return s;
    };
    // Axis labels: the range just above its top and below its bottom, on
    // the left; the first and last slots under the plot.
    let _ = write!(
        s,
        r##"<text class="axis" fill="#59636e" x="{}" y="{:.1}">{}</text>"##,
        x0 + 4.0,
        scale.y(scale.hi) - 4.0,
        escape(&with_unit(scale.hi, t.unit))
    );
    let _ = write!(
        s,
        r##"<text class="axis" fill="#59636e" x="{}" y="{:.1}">{}</text>"##,
        x0 + 4.0,
        scale.y(scale.lo) + 14.0,
        escape(&with_unit(scale.lo, t.unit))
    );
    if let (Some(first), Some(last)) = (t.points.first(), t.points.last()) {
        let _ = write!(
            s,
            r##"<text class="axis" fill="#59636e" x="{x0}" y="{}" text-anchor="start">{}</text>"##,
            HEIGHT - 6.0,
            escape(short_slot(&first.slot))
        );
        if n > 1 {
            let _ = write!(
                s,
                r##"<text class="axis" fill="#59636e" x="{x1}" y="{}" text-anchor="end">{}</text>"##,
                HEIGHT - 6.0,
                escape(short_slot(&last.slot))
            );
        }
    }
    if let Some(b) = t.baseline {
        let y = scale.y(b);
        let _ = write!(
            s,
            r##"<line class="baseline" stroke="#59636e" stroke-width="1.5" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke-dasharray="6 4"/><text class="axis" fill="#59636e" x="{}" y="{:.1}" text-anchor="end">baseline {}</text>"##,
            x1 - 2.0,
            y - 3.0,
            escape(&with_unit(b, t.unit))
        );
    }
    for seg in segments(&values) {
        if seg.len() > 1 {
            s.push_str(r##"<polyline class="series" fill="none" stroke="#0969da" stroke-width="2" points=""##);
            for (k, (i, v)) in seg.iter().enumerate() {
                if k > 0 {
                    s.push(' ');
                }
                let _ = write!(s, "{:.1},{:.1}", x_at(*i, n), scale.y(*v));
            }
            s.push_str(r#""/>"#);
        }
    }
    for (i, p) in t.points.iter().enumerate() {
        if let Some(v) = p.value.filter(|v| v.is_finite()) {
            let _ = write!(
                s,
                r##"<circle class="pt" fill="#0969da" cx="{:.1}" cy="{:.1}" r="3"><title>{}: {}</title></circle>"##,
                x_at(i, n),
                scale.y(v),
                escape(&p.slot),
                escape(&with_unit(v, t.unit))
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(values: &[Option<f64>]) -> Vec<TrendPoint> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| TrendPoint {
                slot: format!("2026-11-{:02}T01:00:00Z", i + 1),
                value: *v,
            })
            .collect()
    }

    fn trend<'a>(points: &'a [TrendPoint], baseline: Option<f64>) -> Chart<'a> {
        Chart {
            lane: "nightly",
            case: "parse/large",
            metric: "wall_s",
            unit: "s",
            baseline,
            points,
        }
    }

    fn count(hay: &str, needle: &str) -> usize {
        hay.matches(needle).count()
    }

    #[test]
    fn a_single_point_sits_in_the_middle() {
        let s = Scale::of(&[Some(2.0)], None).expect("a scale");
        assert!(s.hi > s.lo);
        let mid = TOP + (HEIGHT - TOP - BOTTOM) / 2.0;
        assert!((s.y(2.0) - mid).abs() < 1e-9);
        assert!((x_at(0, 1) - (LEFT + (WIDTH - LEFT - RIGHT) / 2.0)).abs() < 1e-9);
        let svg = trend_svg(&trend(&points(&[Some(2.0)]), None));
        assert_eq!(count(&svg, r#"class="pt""#), 1);
        assert_eq!(count(&svg, "<polyline"), 0, "one point is no line");
    }

    #[test]
    fn equal_values_get_a_range_and_a_flat_line() {
        let s = Scale::of(&[Some(0.25), Some(0.25), Some(0.25)], None).expect("a scale");
        assert!(s.lo < 0.25 && 0.25 < s.hi);
        let zero = Scale::of(&[Some(0.0), Some(0.0)], None).expect("a scale");
        assert_eq!((zero.lo, zero.hi), (-1.0, 1.0));
        let svg = trend_svg(&trend(&points(&[Some(0.25), Some(0.25), Some(0.25)]), None));
        assert_eq!(count(&svg, "<polyline"), 1);
        let mid = TOP + (HEIGHT - TOP - BOTTOM) / 2.0;
        assert!(svg.contains(&format!("{:.1},{mid:.1}", LEFT)));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn extremes_map_to_the_edges_and_the_baseline_widens_the_range() {
        let s = Scale::of(&[Some(1.0), None, Some(3.0)], Some(5.0)).expect("a scale");
        assert_eq!((s.lo, s.hi), (1.0, 5.0));
        assert!((s.y(1.0) - (HEIGHT - BOTTOM - INSET)).abs() < 1e-9);
        assert!((s.y(5.0) - (TOP + INSET)).abs() < 1e-9);
        assert!((x_at(0, 3) - LEFT).abs() < 1e-9);
        assert!((x_at(2, 3) - (WIDTH - RIGHT)).abs() < 1e-9);
    }

    #[test]
    fn missing_values_are_gaps_not_zeros() {
        let values = [
            Some(1.0),
            Some(2.0),
            None,
            Some(3.0),
            None,
            Some(4.0),
            Some(5.0),
        ];
        let segs = segments(&values);
        assert_eq!(segs.len(), 3);
        assert_eq!(segs[1], vec![(3, 3.0)]);
        let svg = trend_svg(&trend(&points(&values), Some(2.5)));
        assert_eq!(count(&svg, r#"class="pt""#), 5);
        assert_eq!(count(&svg, "<polyline"), 2, "the lone 3.0 is a dot only");
        // The range is 1..5: a zero would have widened it.
        assert!(svg.contains(">1 s</text>") && svg.contains(">5 s</text>"));
        assert!(svg.contains(r#"class="baseline""#) && svg.contains("stroke-dasharray"));
    }

    #[test]
    fn a_series_of_gaps_says_so() {
        let svg = trend_svg(&trend(&points(&[None, None]), None));
        assert!(svg.contains("no values"));
        assert_eq!(count(&svg, r#"class="pt""#), 0);
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.3105), "0.3105");
        assert_eq!(number(0.31051), "0.3105");
        assert_eq!(number(10485760.0), "1.049e7");
        assert_eq!(number(1234.6), "1235");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(-0.25), "-0.25");
        assert_eq!(number(0.0000042), "4.200e-6");
    }

    #[test]
    fn text_in_a_chart_is_escaped() {
        let p = points(&[Some(1.0)]);
        let mut t = trend(&p, None);
        t.metric = "<script>\"&'";
        t.unit = "<u>";
        let svg = trend_svg(&t);
        assert!(!svg.contains("<script>") && !svg.contains("<u>"));
        assert!(svg.contains("&lt;script&gt;&quot;&amp;&#39;"));
    }
}
