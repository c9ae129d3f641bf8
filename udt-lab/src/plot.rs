//! Throughput-over-time plots: one SVG with a panel per run and a line per flow.
//!
//! Uses `plotters` with only its SVG backend. Lines are the sampled throughputs (Mb/s of IP
//! packets, see [`udt_sim::run`]); the horizontal axis is virtual time in seconds.

use std::path::Path;

use plotters::prelude::*;

use crate::report::Report;

/// Most panels drawn (a grid scenario with more runs draws its first ones).
pub const MAX_PANELS: usize = 24;

/// Draw `report`'s runs to an SVG file at `path`.
pub fn svg(report: &Report, path: &Path) -> Result<(), String> {
    let runs: Vec<_> = report.runs.iter().filter(|r| r.trace.is_some()).take(MAX_PANELS).collect();
    if runs.is_empty() {
        return Err("nothing to plot".into());
    }
    let cols = if runs.len() == 1 { 1 } else { 2 };
    let rows = runs.len().div_ceil(cols);
    let size = (if cols == 1 { 900 } else { 1400 }, (rows as u32) * 320);
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let panels = root.split_evenly((rows, cols));
    for (panel, run) in panels.iter().zip(&runs) {
        let Some(trace) = &run.trace else { continue };
        let dt = trace.interval.as_secs_f64();
        let t_max = trace.duration.as_secs_f64().max(dt);
        let y_max = trace.flows.iter().flat_map(|f| f.mbps.iter().copied()).fold(1.0f64, f64::max) * 1.05;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{} - {}", report.scenario, run.label), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(|e| err(&e))?;
        chart.configure_mesh().x_desc("time (s)").y_desc("throughput (Mb/s)").draw().map_err(|e| err(&e))?;
        for (i, f) in trace.flows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points = f.mbps.iter().enumerate().map(|(k, &y)| ((k as f64 + 1.0) * dt, y));
            let series =
                chart.draw_series(LineSeries::new(points, color.stroke_width(1))).map_err(|e| err(&e))?;
            if trace.flows.len() <= 12 {
                series
                    .label(format!("{} ({})", f.label, f.cc))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color));
            }
        }
        if trace.flows.len() <= 12 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .draw()
                .map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
