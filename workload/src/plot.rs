//! One SVG per workload: hit ratio against budget, a line per layout and its optimum.

use std::path::Path;

use plotters::prelude::*;
use skewdb::{CachePolicy, Result};

use crate::Workload;
use crate::working_set::{BUDGETS, Report};

fn plot_error(reason: impl ToString) -> skewdb::Error {
    crate::working_set::io(std::io::Error::other(reason.to_string()))
}

pub fn hit_ratio_plot(report: &Report, workload: Workload, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (720, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let x_max = BUDGETS.iter().cloned().fold(0.0, f64::max) * 100.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: hit ratio by cache budget", workload.name()),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max + 1.0, 0.0..1.0)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("budget, % of the Embed layout's data size")
        .y_desc("hit ratio")
        .draw()
        .map_err(plot_error)?;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN];
    for (i, layout) in workload.layouts().into_iter().enumerate() {
        let color = colors[i % colors.len()];
        let runs: Vec<_> = report
            .runs
            .iter()
            .filter(|r| {
                r.workload == workload && r.layout == layout && r.policy == CachePolicy::default()
            })
            .collect();
        let live: Vec<(f64, f64)> = runs
            .iter()
            .map(|r| (r.budget_fraction * 100.0, r.hit_ratio()))
            .collect();
        let optimum: Vec<(f64, f64)> = runs
            .iter()
            .map(|r| (r.budget_fraction * 100.0, r.optimum_ratio()))
            .collect();
        chart
            .draw_series(LineSeries::new(live.clone(), color.stroke_width(2)))
            .map_err(plot_error)?
            .label(layout.describe())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(live.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(plot_error)?;
        chart
            .draw_series(DashedLineSeries::new(optimum, 6, 4, color.stroke_width(1)))
            .map_err(plot_error)?
            .label(format!("{} optimum", layout.describe()))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(plot_error)?;
    root.present().map_err(plot_error)?;
    Ok(())
}
