//! `--plot DIR`: one throughput-over-time SVG per run (receiver-side Mb/s per interval), and
//! one per shared run with a line per flow. Plain SVG written by hand: axes, a grid, a
//! dashed line at the link rate, one polyline per flow, a legend.
//!
//! Invariant: a run without intervals (UDT4, files, failures) gets no file; nothing here
//! fails the benchmark except an unwritable directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::flow::Point;
use super::report::Report;

const W: f64 = 720.0;
const H: f64 = 360.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 44.0;
const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

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
            let svg = svg(&title, rate, &[(r.system.as_str(), f.intervals.as_slice())]);
            save(format!("{}-{}.svg", p.path.slug(), file_part(&r.system)), svg)?;
        }
    }
    for (i, s) in report.shared.iter().enumerate() {
        let series: Vec<(&str, &[Point])> =
            s.flows.iter().map(|f| (f.system.as_str(), f.flow.intervals.as_slice())).collect();
        if series.iter().all(|(_, pts)| pts.is_empty()) {
            continue;
        }
        let svg = svg(&format!("{}: {}", s.name, s.path), s.rate_bps as f64 / 1e6, &series);
        save(format!("shared-{}-{}.svg", i + 1, file_part(&s.name)), svg)?;
    }
    Ok(written)
}

fn file_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A "nice" axis step for a range of `span` with about five ticks.
fn step(span: f64) -> f64 {
    let raw = (span / 5.0).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

/// One chart: `series` as lines, the link rate `rate_mbps` dashed.
pub fn svg(title: &str, rate_mbps: f64, series: &[(&str, &[Point])]) -> String {
    let t_max = series.iter().flat_map(|(_, p)| p.iter().map(|p| p.t)).fold(1.0, f64::max);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|p| p.mbps)).fold(rate_mbps, f64::max) * 1.1;
    let y_max = y_max.max(1.0);
    let x = |t: f64| LEFT + t / t_max * (W - LEFT - RIGHT);
    let y = |v: f64| H - BOTTOM - v / y_max * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    let ys = step(y_max);
    let mut v = 0.0;
    while v <= y_max {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{yv:.1}" y2="{yv:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{v}</text>"##,
            x2 = W - RIGHT,
            yv = y(v),
            tx = LEFT - 6.0,
            ty = y(v) + 4.0
        );
        v += ys;
    }
    let xs = step(t_max);
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let _ =
            writeln!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{t}</text>"#, x(t), H - BOTTOM + 16.0);
        t += xs;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time (s)</text><text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">goodput (Mb/s)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 8.0,
        H / 2.0,
        H / 2.0
    );
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    if rate_mbps > 0.0 {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{yr:.1}" y2="{yr:.1}" stroke="#888" stroke-dasharray="6 4"/>"##,
            x2 = W - RIGHT,
            yr = y(rate_mbps)
        );
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<String> = pts.iter().map(|p| format!("{:.1},{:.1}", x(p.t), y(p.mbps))).collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        let ly = TOP + 16.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{0}" x2="{1}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"/><text x="{2}" y="{3}">{4}</text>"#,
            W - RIGHT - 150.0,
            W - RIGHT - 130.0,
            W - RIGHT - 124.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_a_line_per_series() {
        let a = [Point { t: 1.0, mbps: 40.0 }, Point { t: 2.0, mbps: 45.0 }];
        let b = [Point { t: 1.0, mbps: 5.0 }];
        let s = svg("x < y", 50.0, &[("udt", &a), ("tcp-cubic", &b)]);
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("x &lt; y"));
        assert!(s.ends_with("</svg>\n"));
        assert_eq!(step(50.0), 10.0);
        assert_eq!(step(3.0), 1.0);
    }
}
