//! The table (ratios to skewdb beside each figure) and the bar chart.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::engines::Model;
use crate::{Measured, Percentiles};

pub type Row = (&'static str, Model, Measured);

fn ratio(value: f64, base: f64) -> String {
    if base == 0.0 {
        return "-".to_string();
    }
    format!("{:.2}x", value / base)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// One figure of a row, with its ratio to the first row's beside it: a rate, or latencies.
enum Figure {
    Rate(&'static str, f64),
    /// Columns "NAME p50 us" and "NAME p99 us", each with its ratio.
    Latency(&'static str, Percentiles),
    /// Those two and "NAME p999 us".
    Tail(&'static str, Percentiles),
}

/// A last column: its name and how a row's cell reads.
type LastColumn<'a, M> = (&'a str, &'a dyn Fn(&M) -> String);

/// A markdown table of `rows` (engine, model, measurements), skewdb's first: the `figures`
/// of each, its disk MiB with the ratio to the first row's, and a `last` cell if given.
fn markdown<M>(
    rows: &[(&str, String, &M)],
    figures: impl Fn(&M) -> Vec<Figure>,
    disk_bytes: impl Fn(&M) -> u64,
    last: Option<LastColumn<'_, M>>,
) -> String {
    let Some((_, _, base)) = rows.first() else {
        return String::new();
    };
    let base_figures = figures(base);
    let mut header: Vec<String> = vec!["engine".into(), "model".into()];
    for figure in &base_figures {
        match figure {
            Figure::Rate(name, _) => header.extend([name.to_string(), "vs skewdb".into()]),
            Figure::Latency(name, _) => header.extend([
                format!("{name} p50 us"),
                "vs skewdb".into(),
                format!("{name} p99 us"),
                "vs skewdb".into(),
            ]),
            Figure::Tail(name, _) => header.extend([
                format!("{name} p50 us"),
                "vs skewdb".into(),
                format!("{name} p99 us"),
                "vs skewdb".into(),
                format!("{name} p999 us"),
                "vs skewdb".into(),
            ]),
        }
    }
    header.extend(["disk MiB".into(), "vs skewdb".into()]);
    header.extend(last.map(|(name, _)| name.to_string()));
    let mut out = format!("| {} |\n", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for (engine, model, m) in rows {
        let mut cells = vec![engine.to_string(), model.clone()];
        for (figure, base) in figures(m).iter().zip(&base_figures) {
            match (figure, base) {
                (Figure::Rate(_, value), Figure::Rate(_, base)) => {
                    cells.extend([format!("{value:.0}"), ratio(*value, *base)])
                }
                (Figure::Latency(_, p), Figure::Latency(_, base)) => cells.extend([
                    format!("{:.1}", p.p50_us),
                    ratio(p.p50_us, base.p50_us),
                    format!("{:.1}", p.p99_us),
                    ratio(p.p99_us, base.p99_us),
                ]),
                (Figure::Tail(_, p), Figure::Tail(_, base)) => cells.extend([
                    format!("{:.1}", p.p50_us),
                    ratio(p.p50_us, base.p50_us),
                    format!("{:.1}", p.p99_us),
                    ratio(p.p99_us, base.p99_us),
                    format!("{:.1}", p.p999_us),
                    ratio(p.p999_us, base.p999_us),
                ]),
                _ => unreachable!("every row has the same figures"),
            }
        }
        let disk = mib(disk_bytes(m));
        cells.extend([format!("{disk:.1}"), ratio(disk, mib(disk_bytes(base)))]);
        cells.extend(last.map(|(_, cell)| cell(m)));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// The rows with their model as text, for [`markdown`].
fn named<'a, Model: ToString, M>(
    rows: &'a [(&'static str, Model, M)],
) -> Vec<(&'static str, String, &'a M)> {
    rows.iter()
        .map(|(engine, model, m)| (*engine, model.to_string(), m))
        .collect()
}

/// A cache hit ratio cell: three decimals, or "-" where the engine does not expose it.
fn hits(ratio: Option<f64>) -> String {
    ratio.map_or("-".to_string(), |h| format!("{h:.3}"))
}

/// The product pages' two tables: with the cache smaller than the data (and the appends),
/// and with everything cached.
pub fn table(rows: &[Row]) -> String {
    // One budget's views and pages, then `more` figures.
    let figures = |viewed: &crate::Viewed, more: Vec<Figure>| {
        let mut figures = vec![
            Figure::Rate("views/s", viewed.views_per_second),
            Figure::Tail("view", viewed.view_latency),
            Figure::Rate("pages/s", viewed.pages_per_second),
            Figure::Tail("page", viewed.page_latency),
        ];
        figures.extend(more);
        figures
    };
    let small = markdown(
        &named(rows),
        |m| {
            let appends = vec![
                Figure::Rate("appends/s", m.appends_per_second),
                Figure::Latency("append", m.append_latency),
            ];
            figures(&m.small, appends)
        },
        |m| m.disk_bytes,
        Some(("cache hit ratio", &|m| hits(m.small.hit_ratio))),
    );
    let fits = markdown(
        &named(rows),
        |m| figures(&m.fits, Vec::new()),
        |m| m.disk_bytes,
        Some(("cache hit ratio", &|m| hits(m.fits.hit_ratio))),
    );
    format!(
        "Cache {} MiB, smaller than the data:\n\n{small}\nCache {} MiB, everything cached:\n\n{fits}",
        crate::CACHE_BYTES >> 20,
        crate::LARGE_CACHE_BYTES >> 20
    )
}

pub type SensorRow = (&'static str, &'static str, crate::sensors::Measured);

pub fn sensor_table(rows: &[SensorRow]) -> String {
    markdown(
        &named(rows),
        |m| {
            vec![
                Figure::Rate("mixed ops/s", m.ops_per_second),
                Figure::Rate("aggregates/s", m.aggregates_per_second),
                Figure::Latency("aggregate", m.aggregate_latency),
                Figure::Rate("last-hour ranges/s", m.ranges_per_second),
                Figure::Latency("range", m.range_latency),
                Figure::Rate("appends/s", m.appends_per_second),
                Figure::Latency("append", m.append_latency),
            ]
        },
        |m| m.disk_bytes,
        Some(("cache hit ratio", &|m| hits(m.hit_ratio))),
    )
}

pub type FollowerRow = (&'static str, &'static str, crate::followers::Measured);

pub fn follower_table(rows: &[FollowerRow]) -> String {
    markdown(
        &named(rows),
        |m| {
            vec![
                Figure::Rate("mixed ops/s", m.ops_per_second),
                Figure::Rate("profile reads/s", m.profiles_per_second),
                Figure::Latency("profile read", m.profile_latency),
                Figure::Rate("follows/s", m.follows_per_second),
                Figure::Latency("follow", m.follow_latency),
            ]
        },
        |m| m.disk_bytes,
        Some(("cache hit ratio", &|m| hits(m.hit_ratio))),
    )
}

/// One operation of the headline table: skewdb's latencies and each hand-coded peer's.
struct Headline {
    workload: &'static str,
    operation: String,
    skewdb: Percentiles,
    peers: Vec<(&'static str, Percentiles)>,
}

/// The cells of a headline figure: the best peer's figure with its engine, and how skewdb
/// stands to it (a loss written as one).
fn versus(skewdb: f64, peers: &[(&'static str, f64)]) -> [String; 2] {
    let Some(&(engine, best)) = peers.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return ["-".into(), "-".into()];
    };
    let verdict = if skewdb <= best {
        format!("{:.2}x faster", best / skewdb.max(f64::MIN_POSITIVE))
    } else {
        format!("**{:.2}x slower**", skewdb / best.max(f64::MIN_POSITIVE))
    };
    [format!("{best:.1} ({engine})"), verdict]
}

/// A headline figure: the operation's name and how a row's latencies are read.
type HeadlineFigure<'a, M> = (String, &'a dyn Fn(&M) -> Percentiles);

/// Headline lines of one workload: for each named figure, skewdb's and the peers'.
fn headlines<M>(
    workload: &'static str,
    skewdb: &M,
    peers: &[(&'static str, &M)],
    figures: &[HeadlineFigure<'_, M>],
) -> Vec<Headline> {
    figures
        .iter()
        .map(|(operation, figure)| Headline {
            workload,
            operation: operation.clone(),
            skewdb: figure(skewdb),
            peers: peers.iter().map(|(e, m)| (*e, figure(m))).collect(),
        })
        .collect()
}

/// The README's headline: per seed workload and operation, skewdb's p50 and p99 against the
/// best hand-coded peer's at each (the peers' embedded models left out), with the date of
/// the run.
pub fn headline(
    rows: &[Row],
    sensor_rows: &[SensorRow],
    follower_rows: &[FollowerRow],
    date: &str,
) -> String {
    let native = |engine: &str| engine == "skewdb";
    let hand = |model: &str| model.starts_with("hand-coded");
    let mut lines = Vec::new();
    if let Some((_, _, skew)) = rows
        .iter()
        .find(|(e, m, _)| native(e) && *m == Model::Native)
    {
        let peers: Vec<(&'static str, &Measured)> = rows
            .iter()
            .filter(|(e, m, _)| !native(e) && *m == Model::HandSubset)
            .map(|(e, _, m)| (*e, m))
            .collect();
        let small = crate::CACHE_BYTES >> 20;
        let cached = crate::LARGE_CACHE_BYTES >> 20;
        let figures: [HeadlineFigure<'_, Measured>; 5] = [
            (format!("view, cache {small} MiB"), &|m| {
                m.small.view_latency
            }),
            (format!("view, cache {cached} MiB"), &|m| {
                m.fits.view_latency
            }),
            (format!("page of 20, cache {small} MiB"), &|m| {
                m.small.page_latency
            }),
            (format!("page of 20, cache {cached} MiB"), &|m| {
                m.fits.page_latency
            }),
            ("append, durable".to_string(), &|m| m.append_latency),
        ];
        lines.extend(headlines("product pages", skew, &peers, &figures));
    }
    if let Some((_, _, skew)) = sensor_rows.iter().find(|(e, _, _)| native(e)) {
        let peers: Vec<(&'static str, &crate::sensors::Measured)> = sensor_rows
            .iter()
            .filter(|(e, m, _)| !native(e) && hand(m))
            .map(|(e, _, m)| (*e, m))
            .collect();
        let figures: [HeadlineFigure<'_, crate::sensors::Measured>; 3] = [
            ("last-hour range".to_string(), &|m| m.range_latency),
            ("aggregate".to_string(), &|m| m.aggregate_latency),
            ("append, durable".to_string(), &|m| m.append_latency),
        ];
        lines.extend(headlines("sensors", skew, &peers, &figures));
    }
    if let Some((_, _, skew)) = follower_rows.iter().find(|(e, _, _)| native(e)) {
        let peers: Vec<(&'static str, &crate::followers::Measured)> = follower_rows
            .iter()
            .filter(|(e, m, _)| !native(e) && hand(m))
            .map(|(e, _, m)| (*e, m))
            .collect();
        let figures: [HeadlineFigure<'_, crate::followers::Measured>; 2] = [
            ("profile read".to_string(), &|m| m.profile_latency),
            ("follow, durable".to_string(), &|m| m.follow_latency),
        ];
        lines.extend(headlines("followers", skew, &peers, &figures));
    }
    let mut out = format!(
        "skewdb against the best peer that codes the same pattern by hand (redb, fjall, \
         SQLite, each used as its docs recommend, values read in place), per operation; run \
         of {date} on 2 cores, printed by `cargo run --release -p skewdb-peers` \
         ([BENCHMARKS.md](BENCHMARKS.md#side-by-side-with-the-peers) has every figure).\n\n\
         | workload | operation | skewdb p50 us | best peer p50 us | at p50 | skewdb p99 us | \
         best peer p99 us | at p99 |\n|---|---|---|---|---|---|---|---|\n"
    );
    for line in &lines {
        let at = |pick: fn(&Percentiles) -> f64| {
            let peers: Vec<(&'static str, f64)> =
                line.peers.iter().map(|(e, p)| (*e, pick(p))).collect();
            versus(pick(&line.skewdb), &peers)
        };
        let [p50_peer, p50_verdict] = at(|p| p.p50_us);
        let [p99_peer, p99_verdict] = at(|p| p.p99_us);
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {p50_peer} | {p50_verdict} | {:.1} | {p99_peer} | {p99_verdict} |",
            line.workload, line.operation, line.skewdb.p50_us, line.skewdb.p99_us
        );
    }
    out
}

/// Where the headline goes in `README.md`: everything between these two lines.
const HEADLINE_BEGIN: &str = "<!-- headline: written by `cargo run --release -p skewdb-peers` -->";
const HEADLINE_END: &str = "<!-- end of headline -->";

/// Writes the headline into `README.md` (between its markers).
pub fn write_headline(text: &str) -> Result<(), String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let document = std::fs::read_to_string(&readme).map_err(|e| format!("README.md: {e}"))?;
    let updated = replace_between(&document, HEADLINE_BEGIN, HEADLINE_END, text)
        .ok_or_else(|| format!("README.md lacks the lines {HEADLINE_BEGIN} and {HEADLINE_END}"))?;
    std::fs::write(&readme, updated).map_err(|e| format!("README.md: {e}"))
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date(i64::try_from(secs / 86_400).unwrap_or(0))
}

/// The date `days` days after 1970-01-01 (H. Hinnant's days-to-civil algorithm).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The chart of product views, from the repository's root.
const CHART: &str = "bench-results/peers.svg";
/// Where the tables go in `BENCHMARKS.md`: everything between these two lines.
const BEGIN: &str = "<!-- peers tables: written by `cargo run --release -p skewdb-peers` -->";
const END: &str = "<!-- end of peers tables -->";

/// `document` with the text between the lines `BEGIN` and `END` replaced by `text`; `None`
/// when the markers are missing or out of order.
pub(crate) fn replace_tables(document: &str, text: &str) -> Option<String> {
    replace_between(document, BEGIN, END, text)
}

/// `document` with the text between the lines `first` and `last` replaced by `text`.
fn replace_between(document: &str, first: &str, last: &str, text: &str) -> Option<String> {
    let begin = document.find(first)? + first.len();
    let end = begin + document[begin..].find(last)?;
    Some(format!(
        "{}\n\n{}\n\n{}",
        &document[..begin],
        text.trim(),
        &document[end..]
    ))
}

/// Writes the tables to `bench-results/peers.md` and the chart to `bench-results/peers.svg`,
/// and both into `BENCHMARKS.md` (between its markers).
pub fn write(text: &str, rows: &[Row]) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("bench-results");
    let failed = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    std::fs::create_dir_all(&dir).map_err(|e| failed("results directory", &e))?;
    std::fs::write(dir.join("peers.md"), text).map_err(|e| failed("peers.md", &e))?;
    chart(&root.join(CHART), rows).map_err(|e| failed(CHART, &e))?;
    let benchmarks = root.join("BENCHMARKS.md");
    let document = std::fs::read_to_string(&benchmarks).map_err(|e| failed("BENCHMARKS.md", &e))?;
    let text = format!("{text}\n![Product page views per second]({CHART})\n");
    let updated = replace_tables(&document, &text)
        .ok_or_else(|| format!("BENCHMARKS.md lacks the lines {BEGIN} and {END}"))?;
    std::fs::write(&benchmarks, updated).map_err(|e| failed("BENCHMARKS.md", &e))
}

/// Product views per second, two bars per engine and model: the cache smaller than the
/// data (dark) and everything cached (light).
fn chart(path: &Path, rows: &[Row]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (960, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rows
        .iter()
        .map(|r| r.2.fits.views_per_second.max(r.2.small.views_per_second))
        .fold(1.0, f64::max)
        * 3.0;
    let caption = format!(
        "Product views per second (log scale): cache {} MiB (dark), everything cached (light)",
        crate::CACHE_BYTES >> 20
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 17))
        .margin(10)
        .x_label_area_size(90)
        .y_label_area_size(70)
        .build_cartesian_2d(0..rows.len() * 3, (1.0..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(rows.len() * 3)
        .x_label_formatter(&|i| match i % 3 {
            1 => rows
                .get(i / 3)
                .map(|(engine, model, _)| format!("{engine} {model}"))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc("views/s")
        .draw()?;
    for (offset, shade, rate) in [
        (
            0,
            0.8,
            &(|m: &Measured| m.small.views_per_second) as &dyn Fn(&Measured) -> f64,
        ),
        (1, 0.35, &|m: &Measured| m.fits.views_per_second),
    ] {
        chart.draw_series(rows.iter().enumerate().map(|(i, (engine, _, m))| {
            let color = if *engine == "skewdb" { RED } else { BLUE };
            let x = i * 3 + offset;
            Rectangle::new(
                [(x, 1.0), (x + 1, rate(m).max(1.0))],
                color.mix(shade).filled(),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}

/// Writes a RAM-limited run's report to `bench-results/ram-PRODUCTS-products-LIMIT-mib.md`.
pub fn write_ram(text: &str, products: u64, limit_mib: u64) -> Result<(), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&dir).map_err(|e| format!("results directory: {e}"))?;
    let name = format!("ram-{products}-products-{limit_mib}-mib.md");
    std::fs::write(dir.join(&name), text).map_err(|e| format!("{name}: {e}"))
}

/// One limit of a sweep: the limit in MiB and each engine's views per second (`None` when
/// it did not finish).
pub type SweepPoint = (u64, Vec<(&'static str, Option<f64>)>);

/// Writes a sweep of RAM-limited runs (each limit's views/s per engine) to
/// `bench-results/ram-sweep-PRODUCTS-products.md` and its chart to the `.svg` beside it.
pub fn write_ram_sweep(products: u64, points: &[SweepPoint]) -> Result<(), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&dir).map_err(|e| format!("results directory: {e}"))?;
    let stem = format!("ram-sweep-{products}-products");
    let engines: Vec<&str> = points
        .first()
        .map(|(_, rates)| rates.iter().map(|(engine, _)| *engine).collect())
        .unwrap_or_default();
    let mut text = format!(
        "Product views per second against the memory limit, {products} products, every engine's cache {} MiB (`cargo run --release -p skewdb-peers -- --ram-sweep {} --products {products}`); a blank: the engine did not finish inside the limit.\n\n| cgroup limit MiB | {} |\n|---|{}\n",
        crate::CACHE_BYTES >> 20,
        points
            .iter()
            .map(|(limit, _)| limit.to_string())
            .collect::<Vec<_>>()
            .join(","),
        engines.join(" | "),
        "---|".repeat(engines.len()),
    );
    for (limit, rates) in points {
        let cells: Vec<String> = rates
            .iter()
            .map(|(_, rate)| rate.map_or(String::new(), |r| format!("{r:.0}")))
            .collect();
        text.push_str(&format!("| {limit} | {} |\n", cells.join(" | ")));
    }
    std::fs::write(dir.join(format!("{stem}.md")), &text).map_err(|e| format!("{stem}.md: {e}"))?;
    let svg = dir.join(format!("{stem}.svg"));
    sweep_chart(&svg, products, points, &engines).map_err(|e| format!("{stem}.svg: {e}"))
}

/// Views per second (log scale) against the memory limit (log scale), a line per engine.
fn sweep_chart(
    path: &Path,
    products: u64,
    points: &[SweepPoint],
    engines: &[&str],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (820, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let limits: Vec<f64> = points.iter().map(|(limit, _)| *limit as f64).collect();
    let (low, high) = (
        limits.iter().cloned().fold(f64::MAX, f64::min) * 0.8,
        limits.iter().cloned().fold(0.0, f64::max) * 1.25,
    );
    let top = points
        .iter()
        .flat_map(|(_, rates)| rates.iter().filter_map(|(_, r)| *r))
        .fold(1.0, f64::max)
        * 2.0;
    let bottom = points
        .iter()
        .flat_map(|(_, rates)| rates.iter().filter_map(|(_, r)| *r))
        .fold(top, f64::min)
        / 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Product views per second against the memory limit ({products} products, caches {} MiB)",
                crate::CACHE_BYTES >> 20
            ),
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((low..high).log_scale(), (bottom.max(1.0)..top).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("memory cgroup limit, MiB (page cache included)")
        .y_desc("views/s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (at, engine) in engines.iter().enumerate() {
        let color = colors[at % colors.len()];
        let line: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|(limit, rates)| {
                rates
                    .iter()
                    .find(|(e, _)| e == engine)
                    .and_then(|(_, rate)| rate.map(|r| (*limit as f64, r)))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(*engine)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart.draw_series(
            line.iter()
                .map(|&point| Circle::new(point, 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Viewed;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(59), "1970-03-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_794), "2026-12-07");
    }

    #[test]
    fn the_headline_names_the_best_peer_and_writes_losses_as_losses() {
        assert_eq!(
            versus(2.0, &[("redb", 4.0), ("fjall", 3.0)]),
            ["3.0 (fjall)".to_string(), "1.50x faster".to_string()]
        );
        assert_eq!(
            versus(5.0, &[("redb", 2.5)]),
            ["2.5 (redb)".to_string(), "**2.00x slower**".to_string()]
        );
        assert_eq!(versus(1.0, &[]), ["-".to_string(), "-".to_string()]);
    }

    #[test]
    fn the_tables_replace_only_what_lies_between_the_markers() {
        let document = format!("# Title\n\nprose\n\n{BEGIN}\n\nold table\n\n{END}\n\nmore prose\n");
        assert_eq!(
            replace_tables(&document, "new table\n").unwrap(),
            format!("# Title\n\nprose\n\n{BEGIN}\n\nnew table\n\n{END}\n\nmore prose\n")
        );
        let again = replace_tables(&document, "new table\n").unwrap();
        assert_eq!(replace_tables(&again, "new table").unwrap(), again);
        assert_eq!(replace_tables("no markers", "table"), None);
        assert_eq!(replace_tables(&format!("{END}\n{BEGIN}"), "table"), None);
    }

    #[test]
    fn tables_put_each_ratio_beside_its_figure() {
        let tail = |p50_us, p99_us, p999_us| Percentiles {
            p50_us,
            p99_us,
            p999_us,
        };
        let skew = Measured {
            small: Viewed {
                views_per_second: 4000.0,
                view_latency: tail(2.25, 30.0, 90.0),
                pages_per_second: 100.0,
                page_latency: tail(10.0, 20.0, 40.0),
                hit_ratio: Some(0.8666),
                misses_per_view: Some(0.1),
                passes: 3,
            },
            fits: Viewed {
                views_per_second: 8000.0,
                view_latency: tail(1.0, 2.0, 4.0),
                pages_per_second: 200.0,
                page_latency: tail(5.0, 10.0, 20.0),
                hit_ratio: Some(1.0),
                misses_per_view: Some(0.0),
                passes: 3,
            },
            appends_per_second: 500.0,
            append_latency: tail(180.0, 412.34, 0.0),
            disk_bytes: 2 << 20,
        };
        let mut peer = skew.clone();
        peer.small.views_per_second = 2000.0;
        peer.small.view_latency = tail(4.5, 15.0, 45.0);
        peer.small.hit_ratio = None;
        peer.fits.pages_per_second = 300.0;
        peer.appends_per_second = 1000.0;
        peer.disk_bytes = 1 << 20;
        let rows = vec![
            ("skewdb", Model::Native, skew),
            ("fjall", Model::HandSubset, peer),
        ];
        assert_eq!(
            table(&rows),
            "Cache 64 MiB, smaller than the data:\n\n\
             | engine | model | views/s | vs skewdb | view p50 us | vs skewdb | view p99 us | vs skewdb | view p999 us | vs skewdb | pages/s | vs skewdb | page p50 us | vs skewdb | page p99 us | vs skewdb | page p999 us | vs skewdb | appends/s | vs skewdb | append p50 us | vs skewdb | append p99 us | vs skewdb | disk MiB | vs skewdb | cache hit ratio |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n\
             | skewdb | native Subset | 4000 | 1.00x | 2.2 | 1.00x | 30.0 | 1.00x | 90.0 | 1.00x | 100 | 1.00x | 10.0 | 1.00x | 20.0 | 1.00x | 40.0 | 1.00x | 500 | 1.00x | 180.0 | 1.00x | 412.3 | 1.00x | 2.0 | 1.00x | 0.867 |\n\
             | fjall | hand-coded Subset | 2000 | 0.50x | 4.5 | 2.00x | 15.0 | 0.50x | 45.0 | 0.50x | 100 | 1.00x | 10.0 | 1.00x | 20.0 | 1.00x | 40.0 | 1.00x | 1000 | 2.00x | 180.0 | 1.00x | 412.3 | 1.00x | 1.0 | 0.50x | - |\n\
             \nCache 2048 MiB, everything cached:\n\n\
             | engine | model | views/s | vs skewdb | view p50 us | vs skewdb | view p99 us | vs skewdb | view p999 us | vs skewdb | pages/s | vs skewdb | page p50 us | vs skewdb | page p99 us | vs skewdb | page p999 us | vs skewdb | disk MiB | vs skewdb | cache hit ratio |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n\
             | skewdb | native Subset | 8000 | 1.00x | 1.0 | 1.00x | 2.0 | 1.00x | 4.0 | 1.00x | 200 | 1.00x | 5.0 | 1.00x | 10.0 | 1.00x | 20.0 | 1.00x | 2.0 | 1.00x | 1.000 |\n\
             | fjall | hand-coded Subset | 8000 | 1.00x | 1.0 | 1.00x | 2.0 | 1.00x | 4.0 | 1.00x | 300 | 1.50x | 5.0 | 1.00x | 10.0 | 1.00x | 20.0 | 1.00x | 1.0 | 0.50x | 1.000 |\n"
        );
        let followers = vec![(
            "skewdb",
            "native Outlier",
            crate::followers::Measured {
                ops_per_second: 10.0,
                profiles_per_second: 20.0,
                profile_latency: Percentiles {
                    p50_us: 1.04,
                    p99_us: 7.0,
                    p999_us: 9.0,
                },
                hit_ratio: Some(1.0),
                ..Default::default()
            },
        )];
        assert_eq!(
            follower_table(&followers),
            "| engine | model | mixed ops/s | vs skewdb | profile reads/s | vs skewdb | profile read p50 us | vs skewdb | profile read p99 us | vs skewdb | follows/s | vs skewdb | follow p50 us | vs skewdb | follow p99 us | vs skewdb | disk MiB | vs skewdb | cache hit ratio |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n\
             | skewdb | native Outlier | 10 | 1.00x | 20 | 1.00x | 1.0 | 1.00x | 7.0 | 1.00x | 0 | - | 0.0 | - | 0.0 | - | 0.0 | - | 1.000 |\n"
        );
        assert_eq!(sensor_table(&[]), "");
    }
}
