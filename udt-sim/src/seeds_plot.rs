//! Plots of the seed papers' comparisons: goodput against the varied value, a line per
//! protocol (SVG, `plotters`' SVG backend only).

use std::path::Path;

use plotters::prelude::*;

use crate::transfer::TransferResult;

/// One line per protocol through (x, goodput Mb/s); `x_of` reads a result's x value,
/// drawn to `path` with the axis label `x_label` and the `title`.
pub fn lines(
    results: &[TransferResult],
    x_of: fn(&TransferResult) -> f64,
    x_label: &str,
    title: &str,
    path: &Path,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut protocols: Vec<String> = Vec::new();
    for r in results {
        if !protocols.contains(&r.protocol) {
            protocols.push(r.protocol.clone());
        }
    }
    let xs: Vec<f64> = results.iter().map(x_of).collect();
    let (x_min, x_max) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let y_max = results.iter().map(|r| r.goodput_mbps).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let span = if x_max > x_min { x_max - x_min } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min - span * 0.02)..(x_max + span * 0.02), 0.0..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("goodput, Mb/s (file size / time to its last byte)")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, protocol) in protocols.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> =
            results.iter().filter(|r| &r.protocol == protocol).map(|r| (x_of(r), r.goodput_mbps)).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(protocol.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
