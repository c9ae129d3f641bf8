//! `--plot DIR`: one throughput-over-time SVG per run (receiver-side Mb/s per interval), and
//! one per shared run with a line per flow. Drawn with `plotters`' SVG backend: a titled chart
//! with a grid, "time (s)" and "goodput (Mb/s)" axes, a dashed line at the link rate, a line
//! per flow and a legend naming the flows.
//!
//! Invariants: a run without intervals (UDT4, files, failures) gets no file; points that are
//! not finite numbers are left out of a line (a series of them draws nothing); nothing here
//! fails the benchmark except an unwritable directory.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;

use super::flow::Point;
use super::report::Report;

/// Width and height of a chart, pixels.
const SIZE: (u32, u32) = (720, 360);
/// Font sizes of the title and of the other text, in `plotters`' units (an SVG font size of
/// about 14 and 12 pixels).
const TITLE_FONT: u32 = 17;
const FONT: u32 = 15;
/// One color per flow, reused from the first past the fourth.
const COLORS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
];
/// The dashed link-rate line.
const RATE_COLOR: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// One line of a chart: the flow's name (its legend entry) and its points.
pub type Series<'a> = (&'a str, &'a [Point]);

/// Writes every plot of `report` into `dir` (created if missing); returns the files written.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    let mut save = |name: String, svg: String| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    for p in &report.paths {
        let rate = p.path.rate_bps as f64 / 1e6;
        for r in &p.rows {
            let Some(f) = r.flow.as_ref().filter(|f| !f.intervals.is_empty()) else { continue };
            let title = format!("{}: {}", r.system, p.path.label());
            let svg = svg(&title, rate, &[(r.system.as_str(), f.intervals.as_slice())])?;
            save(format!("{}-{}.svg", p.path.slug(), file_part(&r.system)), svg)?;
        }
    }
    for (i, s) in report.shared.iter().enumerate() {
        let series: Vec<Series> =
            s.flows.iter().map(|f| (f.system.as_str(), f.flow.intervals.as_slice())).collect();
        if series.iter().all(|(_, pts)| pts.is_empty()) {
            continue;
        }
        let svg = svg(&format!("{}: {}", s.name, s.path), s.rate_bps as f64 / 1e6, &series)?;
        save(format!("shared-{}-{}.svg", i + 1, file_part(&s.name)), svg)?;
    }
    Ok(written)
}

fn file_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// The points of `pts` a chart can place: both coordinates finite.
fn finite(pts: &[Point]) -> impl Iterator<Item = (f64, f64)> + Clone + '_ {
    pts.iter().filter(|p| p.t.is_finite() && p.mbps.is_finite()).map(|p| (p.t, p.mbps))
}

/// One chart as SVG text: `series` as lines (name, points), the link rate `rate_mbps` dashed
/// when it is positive. Axes start at 0 and reach at least 1 s and 1 Mb/s, and 10% above the
/// highest of the rate and the points.
pub fn svg(title: &str, rate_mbps: f64, series: &[Series]) -> Result<String> {
    let rate = Some(rate_mbps).filter(|r| r.is_finite() && *r > 0.0);
    let t_max = series.iter().flat_map(|(_, p)| finite(p)).map(|(t, _)| t).fold(1.0, f64::max);
    let y_max =
        series.iter().flat_map(|(_, p)| finite(p)).map(|(_, v)| v).fold(rate.unwrap_or(0.0), f64::max) * 1.1;
    let y_max = y_max.max(1.0);
    let mut out = String::new();
    draw(&mut out, title, rate, (t_max, y_max), series).map_err(|e| anyhow!("plot {title:?}: {e}"))?;
    Ok(out)
}

/// Draws the chart [`svg`] describes into `out` with axis ranges `0..t_max` and `0..y_max`.
fn draw(
    out: &mut String,
    title: &str,
    rate: Option<f64>,
    (t_max, y_max): (f64, f64),
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", TITLE_FONT))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..t_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_labels(6)
        .y_labels(6)
        .x_desc("time (s)")
        .y_desc("goodput (Mb/s)")
        .label_style(("sans-serif", FONT))
        .axis_desc_style(("sans-serif", FONT))
        .max_light_lines(0)
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .draw()?;
    if let Some(rate) = rate {
        chart.draw_series(DashedLineSeries::new(
            [(0.0, rate), (t_max, rate)],
            6,
            4,
            RATE_COLOR.stroke_width(1),
        ))?;
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // A lone point is no line: a dot shows it.
        let dot = if finite(pts).nth(1).is_none() { 3 } else { 0 };
        chart
            .draw_series(LineSeries::new(finite(pts), color.stroke_width(2)).point_size(dot))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", FONT))
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    /// The contents of the `<text>` elements of `svg`, trimmed.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    #[test]
    fn svg_has_a_line_per_series_a_legend_and_the_axes() {
        let a = [Point { t: 1.0, mbps: 40.0 }, Point { t: 2.0, mbps: 45.0 }];
        let b = [Point { t: 1.0, mbps: 5.0 }, Point { t: 2.0, mbps: 7.0 }];
        let s = svg("x < y", 50.0, &[("udt", &a), ("tcp-cubic", &b)]).unwrap();
        assert!(s.starts_with("<svg"), "{s}");
        assert!(s.trim_end().ends_with("</svg>"));
        let texts = texts(&s);
        for t in ["x &lt; y", "udt", "tcp-cubic", "time (s)", "goodput (Mb/s)"] {
            assert!(texts.contains(&t), "{t} in {texts:?}");
        }
        for c in &COLORS[..2] {
            // The flow's line and its legend sample.
            assert!(s.matches(&format!("stroke=\"{}\"", hex(*c))).count() >= 2, "{}", hex(*c));
        }
        assert!(!s.contains(&format!("stroke=\"{}\"", hex(COLORS[2]))));
        assert!(s.contains(&format!("stroke=\"{}\"", hex(RATE_COLOR))), "the link rate is drawn");
    }

    #[test]
    fn degenerate_series_draw_without_panicking() {
        let one = [Point { t: 0.5, mbps: 3.0 }];
        let zeros = [Point { t: 0.0, mbps: 0.0 }, Point { t: 0.0, mbps: 0.0 }];
        let nan = [Point { t: f64::NAN, mbps: 1.0 }, Point { t: 1.0, mbps: f64::INFINITY }];
        let cases: [(f64, &[Series]); 5] = [
            (0.0, &[]),
            (0.0, &[("empty", &[])]),
            (f64::NAN, &[("one", &one)]),
            (0.0, &[("zeros", &zeros)]),
            (f64::INFINITY, &[("nan", &nan), ("one", &one)]),
        ];
        for (rate, series) in cases {
            let s = svg("t", rate, series).unwrap();
            assert!(s.trim_end().ends_with("</svg>"));
            let texts = texts(&s);
            for (name, _) in series {
                assert!(texts.contains(name), "{name} in the legend: {texts:?}");
            }
            assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
            assert!(
                !s.contains(&format!("stroke=\"{}\"", hex(RATE_COLOR))),
                "no positive finite rate, no line"
            );
        }
        let s = svg("t", 0.0, &[("one", &one)]).unwrap();
        assert!(s.contains("<circle"), "a lone point is drawn as a dot");
    }

    #[test]
    fn write_all_writes_a_file_per_run_with_intervals_and_per_shared_run() {
        use super::super::flow::{Flow, Raw};
        use super::super::path::PathSpec;
        use super::super::report::{PathReport, Row};
        use super::super::shared::{SharedFlow, SharedRun};

        let flow = |intervals: Vec<Point>| {
            let raw = Raw { bytes: 1_000_000, seconds: 1.0, intervals, ..Raw::default() };
            Flow::new(raw, 100_000_000, None, None)
        };
        let pts = vec![Point { t: 1.0, mbps: 80.0 }, Point { t: 2.0, mbps: 90.0 }];
        let path = PathSpec::new(100_000_000, 10.0, 0.0, 0.0);
        let rows = vec![
            Row::from_result("udt".into(), Ok(flow(pts.clone()))),
            Row::from_result("udt4".into(), Ok(flow(Vec::new()))),
            Row::from_result("tcp-cubic".into(), Err(anyhow!("no iperf3"))),
        ];
        let shared = |name: &str, flows: Vec<SharedFlow>| SharedRun {
            name: name.into(),
            path: path.label(),
            rate_bps: path.rate_bps,
            flows,
            goodput_share: None,
            utilization: None,
            jain: None,
            error: None,
        };
        let both = ["udt", "tcp-cubic"].map(|system| SharedFlow {
            system: system.into(),
            share: 0.5,
            flow: flow(pts.clone()),
        });
        let report = Report {
            command: "udt bench".into(),
            time_s: 2.0,
            paths: vec![PathReport { path: path.clone(), rows, emulator: None }],
            shared: vec![shared("udt + tcp-cubic", both.to_vec()), shared("udt + udt", Vec::new())],
        };
        let dir = tempfile::tempdir().unwrap();
        let written = write_all(&report, &dir.path().join("plots")).unwrap();
        let names: Vec<_> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, [format!("{}-udt.svg", path.slug()), "shared-1-udt___tcp-cubic.svg".to_string()]);
        let single = std::fs::read_to_string(&written[0]).unwrap();
        assert!(texts(&single).contains(&format!("udt: {}", path.label()).as_str()));
        let shared = std::fs::read_to_string(&written[1]).unwrap();
        let texts = texts(&shared);
        assert!(texts.contains(&"udt") && texts.contains(&"tcp-cubic"), "{texts:?}");
    }
}
