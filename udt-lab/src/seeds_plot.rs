//! Plots of the seed papers' comparisons (SVG, `plotters`' SVG backend only): goodput against
//! the varied value with a line per protocol; RBUDP's measured B/B_send against He et al.'s
//! model; and each protocol's goodput beside what a TCP flow kept.

use std::path::Path;

use plotters::prelude::*;

use crate::seeds::ModelRow;
use udt_sim::transfer::TransferResult;

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

/// RBUDP's B/B_send against x = RTT x B_send / S_total: the model's curve 1 / (1 + x) and the
/// measured loss-free transfers as points.
pub fn rbudp_model(rows: &[ModelRow], path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.run.loss == 0.0 && r.model_ratio > 0.0)
        .map(|r| ((1.0 / r.model_ratio - 1.0).max(1e-4).log10(), r.measured_ratio))
        .collect();
    if points.is_empty() {
        return Err("no loss-free rows to plot".into());
    }
    let (lo, hi) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("RBUDP: measured B/B_send against He et al.'s model (simulated)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo - 0.2)..(hi + 0.2), 0.0..1.05)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("log10(RTT x B_send / S_total)")
        .y_desc("B / B_send")
        .draw()
        .map_err(|e| err(&e))?;
    let curve = (0..=200).map(|i| {
        let lx = lo - 0.2 + (hi - lo + 0.4) * f64::from(i) / 200.0;
        (lx, 1.0 / (1.0 + 10f64.powf(lx)))
    });
    chart
        .draw_series(LineSeries::new(curve, BLUE.stroke_width(2)))
        .map_err(|e| err(&e))?
        .label("model 1 / (1 + RTT x B_send / S_total)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(points.into_iter().map(|p| Circle::new(p, 4, RED.filled())))
        .map_err(|e| err(&e))?
        .label("simulated transfers")
        .legend(|(x, y)| Circle::new((x + 8, y), 4, RED.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// Beside a TCP flow: per protocol, its goodput and what the TCP flow beside it kept, as pairs
/// of bars; the TCP flow alone as a dashed line.
pub fn beside(results: &[TransferResult], tcp_alone_mbps: f64, path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let rows: Vec<&TransferResult> = results.iter().filter(|r| r.competitor_mbps.is_some()).collect();
    if rows.is_empty() {
        return Err("no runs beside a TCP flow".into());
    }
    let y_max = rows.iter().map(|r| r.goodput_mbps).fold(tcp_alone_mbps, f64::max) * 1.15;
    let n = rows.len() as f64;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Each protocol beside a TCP CUBIC flow (simulated)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..y_max)
        .map_err(|e| err(&e))?;
    let labels: Vec<String> = rows.iter().map(|r| r.protocol.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(rows.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.26 {
                labels.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("Mb/s")
        .draw()
        .map_err(|e| err(&e))?;
    let own = Palette99::pick(0).to_rgba();
    let tcp = Palette99::pick(1).to_rgba();
    for (i, r) in rows.iter().enumerate() {
        let x = i as f64;
        chart
            .draw_series([Rectangle::new([(x + 0.1, 0.0), (x + 0.48, r.goodput_mbps)], own.filled())])
            .map_err(|e| err(&e))?;
        let kept = r.competitor_mbps.unwrap_or(0.0);
        chart
            .draw_series([Rectangle::new([(x + 0.52, 0.0), (x + 0.9, kept)], tcp.filled())])
            .map_err(|e| err(&e))?;
    }
    chart
        .draw_series(DashedLineSeries::new([(0.0, tcp_alone_mbps), (n, tcp_alone_mbps)], 6, 4, BLACK.into()))
        .map_err(|e| err(&e))?
        .label("TCP CUBIC alone")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    chart
        .draw_series([Rectangle::new([(0.0, 0.0), (0.0, 0.0)], own.filled())])
        .map_err(|e| err(&e))?
        .label("the protocol")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], own.filled()));
    chart
        .draw_series([Rectangle::new([(0.0, 0.0), (0.0, 0.0)], tcp.filled())])
        .map_err(|e| err(&e))?
        .label("TCP CUBIC beside it")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], tcp.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
