//! The table (ratios to skewdb beside each figure) and the bar chart.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::Measured;
use crate::engines::Model;

pub type Row = (&'static str, Model, Measured);

fn ratio(value: f64, base: f64) -> String {
    if base == 0.0 {
        return "-".to_string();
    }
    format!("{:.2}x", value / base)
}

/// Table cells: each figure (rounded) and, where a base is given, its ratio to it.
fn cells(figures: &[(f64, Option<f64>)]) -> String {
    figures
        .iter()
        .map(|(value, base)| match base {
            Some(base) => format!(" {value:.0} | {} |", ratio(*value, *base)),
            None => format!(" {value:.1} |"),
        })
        .collect()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

pub fn table(rows: &[Row]) -> String {
    let Some(base) = rows.first().map(|r| &r.2) else {
        return String::new();
    };
    let mut out = String::new();
    out.push_str("| engine | model | mixed ops/s | vs skewdb | views/s | vs skewdb | view p50 us | view p99 us | appends/s | vs skewdb | disk MiB | vs skewdb | cache hit ratio |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (engine, model, m) in rows {
        let figures = cells(&[
            (m.ops_per_second, Some(base.ops_per_second)),
            (m.views_per_second, Some(base.views_per_second)),
            (m.view_p50_us, None),
            (m.view_p99_us, None),
            (m.appends_per_second, Some(base.appends_per_second)),
        ]);
        let disk = format!(
            "{:.1} | {}",
            mib(m.disk_bytes),
            ratio(mib(m.disk_bytes), mib(base.disk_bytes))
        );
        let hits = m.hit_ratio.map_or("-".to_string(), |h| format!("{h:.3}"));
        let _ = writeln!(out, "| {engine} | {model} |{figures} {disk} | {hits} |");
    }
    out
}

pub type SensorRow = (&'static str, &'static str, crate::sensors::Measured);

pub fn sensor_table(rows: &[SensorRow]) -> String {
    let Some(base) = rows.first().map(|r| &r.2) else {
        return String::new();
    };
    let mut out = String::new();
    out.push_str("| engine | model | mixed ops/s | vs skewdb | aggregates/s | vs skewdb | last-hour ranges/s | vs skewdb | appends/s | vs skewdb | disk MiB | vs skewdb |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (engine, model, m) in rows {
        let figures = cells(&[
            (m.ops_per_second, Some(base.ops_per_second)),
            (m.aggregates_per_second, Some(base.aggregates_per_second)),
            (m.ranges_per_second, Some(base.ranges_per_second)),
            (m.appends_per_second, Some(base.appends_per_second)),
        ]);
        let disk = format!(
            "{:.1} | {}",
            mib(m.disk_bytes),
            ratio(mib(m.disk_bytes), mib(base.disk_bytes))
        );
        let _ = writeln!(out, "| {engine} | {model} |{figures} {disk} |");
    }
    out
}

pub type FollowerRow = (&'static str, &'static str, crate::followers::Measured);

pub fn follower_table(rows: &[FollowerRow]) -> String {
    let Some(base) = rows.first().map(|r| &r.2) else {
        return String::new();
    };
    let mut out = String::new();
    out.push_str("| engine | model | mixed ops/s | vs skewdb | profile reads/s | vs skewdb | follows/s | vs skewdb | disk MiB | vs skewdb |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for (engine, model, m) in rows {
        let figures = cells(&[
            (m.ops_per_second, Some(base.ops_per_second)),
            (m.profiles_per_second, Some(base.profiles_per_second)),
            (m.follows_per_second, Some(base.follows_per_second)),
        ]);
        let disk = format!(
            "{:.1} | {}",
            mib(m.disk_bytes),
            ratio(mib(m.disk_bytes), mib(base.disk_bytes))
        );
        let _ = writeln!(out, "| {engine} | {model} |{figures} {disk} |");
    }
    out
}

/// Writes the tables to `bench-results/peers.md` and the chart to `bench-results/peers.svg`.
pub fn write(text: &str, rows: &[Row]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&dir).expect("results directory");
    std::fs::write(dir.join("peers.md"), text).expect("write table");
    chart(&dir.join("peers.svg"), rows).expect("chart");
}

fn chart(path: &Path, rows: &[Row]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rows
        .iter()
        .map(|r| r.2.views_per_second)
        .fold(1.0, f64::max)
        * 3.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Product page views per second (log scale)",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(90)
        .y_label_area_size(70)
        .build_cartesian_2d(0..rows.len(), (1.0..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(rows.len())
        .x_label_formatter(&|i| {
            rows.get(*i)
                .map(|(engine, model, _)| format!("{engine} {model}"))
                .unwrap_or_default()
        })
        .y_desc("views/s")
        .draw()?;
    chart.draw_series(rows.iter().enumerate().map(|(i, (engine, _, m))| {
        let color = if *engine == "skewdb" { RED } else { BLUE };
        Rectangle::new(
            [(i, 1.0), (i + 1, m.views_per_second.max(1.0))],
            color.mix(0.6).filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}
