//! How values print: for people, and as JSON.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

pub use crate::mongo::Shown;
use skewdb::{
    ArraySpec, CacheStats, CollectionSpec, Document, Inspection, Item, Layout, MeasureSummary,
    SpaceStats, Stats, Summary, TierSpace, TierStats,
};

/// Bytes as a JSON value: a string when valid UTF-8, else `{"base64": "..."}`.
pub fn bytes_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_string()),
        Err(_) => json!({"base64": STANDARD.encode(bytes)}),
    }
}

/// Bytes from standard base64, as `bytes_json` and `display` print them.
pub fn base64_decode(encoded: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(encoded)
        .map_err(|e| format!("bad base64 {encoded:?}: {e}"))
}

/// Bytes for people: the text when valid UTF-8, else `base64:...`.
pub fn display(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => format!("base64:{}", STANDARD.encode(bytes)),
    }
}

/// A double as JSON: a number when finite; an infinity (a sum that overflowed, or a value
/// stored before the tool refused them) as Extended JSON's `{"$numberDouble": "Infinity"}`,
/// never `null`, which means no value.
pub fn double_json(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else if value.is_nan() {
        json!({"$numberDouble": "NaN"})
    } else if value > 0.0 {
        json!({"$numberDouble": "Infinity"})
    } else {
        json!({"$numberDouble": "-Infinity"})
    }
}

fn optional_double_json(value: Option<f64>) -> Value {
    value.map_or(Value::Null, double_json)
}

/// The date (RFC 3339) an item key of `array` stands for, when the array is a time series
/// ([`crate::item_key::keyed_by_time`]) and the key is within the dates it can print.
pub fn key_date(key: i64, array: &ArraySpec) -> Option<String> {
    crate::item_key::keyed_by_time(&array.layout)
        .then(|| {
            bson::DateTime::from_millis(key)
                .try_to_rfc3339_string()
                .ok()
        })
        .flatten()
}

/// A layout for people: as the engine describes it, a time series' span as a duration
/// (`bucket:60:1h`, as `create` takes it).
pub fn layout_text(layout: &Layout) -> String {
    match *layout {
        Layout::Bucket {
            max_items,
            span: Some(span),
        } if crate::item_key::keyed_by_time(layout) => {
            let span = std::time::Duration::from_millis(span.unsigned_abs());
            let span = humantime::format_duration(span)
                .to_string()
                .replace(' ', "");
            format!("bucket:{max_items}:{span}")
        }
        _ => layout.describe(),
    }
}

/// An item key (or a window's start) for people: its date in a time series, else the
/// integer.
pub fn key_text(key: i64, array: &ArraySpec) -> String {
    key_date(key, array).unwrap_or_else(|| key.to_string())
}

/// `value` with the date beside each key field named in `keys` (`"key"` gets `"date"`,
/// `"min_key"` gets `"min_date"`, `"window"` gets `"window_date"`), when the array is a
/// time series: JSON keeps the integers.
pub fn with_dates(mut value: Value, array: &ArraySpec, keys: &[&str]) -> Value {
    for &field in keys {
        let Some(key) = value.get(field).and_then(Value::as_i64) else {
            continue;
        };
        if let Some(date) = key_date(key, array) {
            let name = match field.strip_suffix("key") {
                Some(prefix) => format!("{prefix}date"),
                None => format!("{field}_date"),
            };
            value[name] = Value::String(date);
        }
    }
    value
}

/// An item; with its `"measures"` by name when its array names its own (else its one
/// measure is its `value`), and its key's date in a time series.
pub fn item_json(item: &Item, array: &ArraySpec, shown: Shown) -> Value {
    let measures = &array.measures;
    let mut value = json!({
        "key": item.key,
        "value": optional_double_json(item.value),
        "payload": shown.payload(&item.payload),
    });
    if array.names_its_measures() {
        let by_name: serde_json::Map<String, Value> = measures
            .iter()
            .enumerate()
            .map(|(at, name)| (name.clone(), optional_double_json(item.measure(at))))
            .collect();
        value["measures"] = Value::Object(by_name);
    }
    with_dates(value, array, &["key"])
}

pub fn item_text(item: &Item, array: &ArraySpec, shown: Shown) -> String {
    let measures = &array.measures;
    let show = |v: Option<f64>| v.map_or("-".to_string(), number_text);
    let values = if array.names_its_measures() {
        let values: Vec<String> = measures
            .iter()
            .enumerate()
            .map(|(at, name)| format!("{name}={}", show(item.measure(at))))
            .collect();
        values.join(" ")
    } else {
        show(item.value)
    };
    format!(
        "{}\t{}\t{}",
        key_text(item.key, array),
        values,
        shown.payload_text(&item.payload)
    )
}

fn measure_json(measure: &MeasureSummary) -> Value {
    json!({
        "count": measure.count,
        "sum": double_json(measure.sum),
        "min": optional_double_json(measure.min),
        "max": optional_double_json(measure.max),
    })
}

/// A summary: item count, key bounds and the first measure's count, sum, min and max; with
/// every measure's by name under `"measures"` when the array names its own.
pub fn summary_json(summary: &Summary, array: &ArraySpec) -> Value {
    let measures = &array.measures;
    let mut value = measure_summary_json(summary, array, 0);
    if array.names_its_measures() {
        let by_name: serde_json::Map<String, Value> = measures
            .iter()
            .enumerate()
            .map(|(at, name)| (name.clone(), measure_json(&summary.measure(at))))
            .collect();
        value["measures"] = Value::Object(by_name);
    }
    value
}

/// A summary with measure `index`'s count, sum, min and max, and its key bounds' dates in
/// a time series.
pub fn measure_summary_json(summary: &Summary, array: &ArraySpec, index: usize) -> Value {
    let mut value = measure_json(&summary.measure(index));
    value["min_key"] = json!(summary.min_key);
    value["max_key"] = json!(summary.max_key);
    value["items"] = json!(summary.items);
    value["rolled_up"] = json!(summary.rolled_up);
    with_dates(value, array, &["min_key", "max_key"])
}

/// A number for people: as written where that is short (`20.5`, `1000000`), in scientific
/// notation where the decimal form would run to more than 16 digits (`1e308`, `2.5e-9`);
/// the shortest form that reads back the same either way.
pub fn number_text(value: f64) -> String {
    let magnitude = value.abs();
    if value.is_finite() && magnitude != 0.0 && !(1e-6..1e16).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

fn measure_text(measure: &MeasureSummary) -> String {
    let show = |v: Option<f64>| v.map_or("-".to_string(), number_text);
    format!(
        "count {}  sum {}  min {}  max {}  mean {}",
        measure.count,
        number_text(measure.sum),
        show(measure.min),
        show(measure.max),
        show(measure.mean()),
    )
}

/// A summary for people: items, measure `index`'s values (every measure's, one per line
/// after the first, when `index` is `None` and the array names its own), key bounds.
pub fn summary_text(summary: &Summary, array: &ArraySpec, index: Option<usize>) -> String {
    let items = match summary.rolled_up {
        0 => summary.items.to_string(),
        rolled_up => format!("{} ({rolled_up} from rollups)", summary.items),
    };
    format!("items {items}  {}", summary_rest(summary, array, index))
}

/// What a summary says beside its count: its measures (measure `index` alone, if given) and
/// the bounds of its keys.
fn summary_rest(summary: &Summary, array: &ArraySpec, index: Option<usize>) -> String {
    let measures = &array.measures;
    let key = |k: Option<i64>| k.map_or("-".to_string(), |k| key_text(k, array));
    let keys = format!("keys {}..{}", key(summary.min_key), key(summary.max_key));
    match index {
        Some(index) => format!(
            "{}: {}  {keys}",
            measures[index],
            measure_text(&summary.measure(index))
        ),
        None if array.names_its_measures() => {
            let mut out = keys;
            for (at, name) in measures.iter().enumerate() {
                out += &format!("\n  {name}: {}", measure_text(&summary.measure(at)));
            }
            out
        }
        None => format!("{}  {keys}", measure_text(&summary.measure(0))),
    }
}

pub fn document_json(document: &Document, spec: &CollectionSpec, shown: Shown) -> Value {
    let arrays: serde_json::Map<String, Value> = document
        .arrays()
        .iter()
        .zip(spec.arrays())
        .map(|(array, array_spec)| {
            let value = json!({
                "layout": array.layout.describe(),
                "total": array.total,
                "has_overflow": array.has_overflow,
                "summary": summary_json(&array.summary, array_spec),
                "inline": array.inline.iter().map(|i| item_json(i, array_spec, shown)).collect::<Vec<_>>(),
            });
            (array.field.clone(), value)
        })
        .collect();
    json!({"key": shown.key(document.key()), "body": shown.body(document.body()), "arrays": arrays})
}

pub fn document_text(document: &Document, spec: &CollectionSpec, shown: Shown) -> String {
    let mut out = format!(
        "key:  {}\nbody: {}\n",
        shown.key_text(document.key()),
        shown.body_text(document.body())
    );
    for (array, array_spec) in document.arrays().iter().zip(spec.arrays()) {
        let plural = if array.total == 1 { "" } else { "s" };
        let overflowed = if array.has_overflow {
            ", overflowed"
        } else {
            ""
        };
        // The summary's count is said once, unless it counts other items than the array
        // holds (rollups of expired ones).
        let summary = &array.summary;
        let rest = match summary.items == array.total && summary.rolled_up == 0 {
            true => summary_rest(summary, array_spec, None),
            false => summary_text(summary, array_spec, None),
        };
        out += &format!(
            "array {} ({}): {} item{plural}{overflowed}  {rest}\n",
            array.field,
            layout_text(&array.layout),
            array.total,
        );
        for item in &array.inline {
            out += &format!("  {}\n", item_text(item, array_spec, shown));
        }
    }
    out
}

fn tier_json(tier: &TierStats) -> Value {
    json!({
        "requests": tier.requests,
        "hits": tier.hits,
        "misses": tier.misses,
        "hit_ratio": tier.hit_ratio(),
        "bytes_read": tier.bytes_read,
        "evictions": tier.evictions,
        "resident_bytes": tier.resident_bytes,
    })
}

fn cache_json(cache: &CacheStats) -> Value {
    json!({
        "policy": cache.policy.name(),
        "budget_bytes": cache.budget_bytes,
        "record_budget_bytes": cache.record_budget_bytes,
        "hot": tier_json(&cache.hot),
        "cold": tier_json(&cache.cold),
        "records": tier_json(&cache.records),
        "record_invalidations": cache.record_invalidations,
        "collections": cache.collections.iter().map(|c| json!({
            "collection": c.collection, "hot": tier_json(&c.hot), "cold": tier_json(&c.cold),
            "records": tier_json(&c.records),
        })).collect::<Vec<_>>(),
        "sample_rate": cache.sample_rate,
        "what_if": cache.what_if.iter().map(|w| json!({
            "factor": w.factor, "budget_bytes": w.budget_bytes,
            "sampled_requests": w.sampled_requests, "hit_ratio": w.hit_ratio,
            "record_hit_ratio": w.record_hit_ratio, "page_hit_ratio": w.page_hit_ratio,
            "sampled_hit_ratio": w.sampled_hit_ratio,
        })).collect::<Vec<_>>(),
        "trace_error": cache.trace_error,
    })
}

fn space_tier_json(tier: &TierSpace) -> Value {
    json!({
        "file_bytes": tier.file_bytes,
        "live_bytes": tier.live_bytes,
        "amplification": finite(tier.amplification()),
        "segments": tier.segments.iter().map(|s| json!({
            "file": s.file, "file_bytes": s.file_bytes, "live_bytes": s.live_bytes,
        })).collect::<Vec<_>>(),
    })
}

/// JSON has no infinity: a tier of files with nothing live prints null.
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// A collection as `collections --json` prints it: its parents, format, arrays (layout,
/// measures, and where an import took each item's key and measures from) and key field.
pub fn collection_json(spec: &CollectionSpec, parents: u64) -> Value {
    let mut value = schema_json(spec);
    value["parents"] = json!(parents);
    value
}

/// A collection's schema as `alter --json` prints it: `collections --json` without the count.
pub fn schema_json(spec: &CollectionSpec) -> Value {
    let map = spec.document_map();
    let arrays: Vec<Value> = spec
        .arrays()
        .iter()
        .map(|array| {
            json!({
                "field": array.field,
                "layout": array.layout.describe(),
                "measures": array.measures,
                "rollup": array.rollup,
                "item_key": map.and_then(|m| m.item_key_field(&array.field)),
                "measures_from_fields": map.is_some_and(|m| m.measures_from_fields(&array.field)),
            })
        })
        .collect();
    json!({
        "name": spec.name(),
        "format": spec.document_format().name(),
        "key_field": map.map(|m| m.key_field()),
        "arrays": arrays,
    })
}

/// A collection as `collections` prints it: one line, its name, parents and schema.
pub fn collection_text(spec: &CollectionSpec, parents: u64) -> String {
    let plural = if parents == 1 { "" } else { "s" };
    format!(
        "{}\t{parents} parent{plural}\t{}",
        spec.name(),
        spec.describe()
    )
}

pub fn space_json(space: &SpaceStats) -> Value {
    json!({
        "hot": space_tier_json(&space.hot),
        "cold": space_tier_json(&space.cold),
        "amplification": finite(space.amplification()),
    })
}

pub fn space_text(space: &SpaceStats) -> String {
    let tier = |name: &str, t: &TierSpace| {
        format!(
            "  {name:<5} files {:>12} B  live {:>12} B  amplification {:.2}\n",
            t.file_bytes,
            t.live_bytes,
            t.amplification()
        )
    };
    format!(
        "space:\n{}{}",
        tier("hot", &space.hot),
        tier("cold", &space.cold)
    )
}

pub fn stats_json(stats: &Stats, space: &SpaceStats) -> Value {
    json!({
        "space": space_json(space),
        "cache": cache_json(&stats.cache),
        "commits": stats.commits,
        "commit_groups": stats.commit_groups,
        "log_syncs": stats.log_syncs,
        "checkpoints": stats.checkpoints,
        "replayed_bytes": stats.replayed_bytes,
        "dirty_pages": stats.dirty_pages,
        "held_bytes": stats.held_bytes,
        "next_lsn": stats.next_lsn,
        "durable_lsn": stats.durable_lsn,
        "log_segments": stats.log_segments,
        "log_bytes": stats.log_bytes,
        "retired": stats.retired,
        "migrations": stats.migrations.iter().map(migration_json).collect::<Vec<_>>(),
    })
}

/// One layout change running, as `stats --json` prints it (`refused`: how many parents
/// cannot move).
pub fn migration_json(m: &skewdb::MigrationProgress) -> Value {
    json!({
        "collection": m.collection,
        "field": m.field,
        "from": m.from.describe(),
        "to": m.to.describe(),
        "parents_walked": m.parents_walked,
        "parents_moved": m.parents_moved,
        "parents_total": m.parents_total,
        "refused": m.refused.len(),
    })
}

fn tier_text(name: &str, t: &TierStats) -> String {
    format!(
        "  {name:<18} requests {:>10}  hits {:>10}  misses {:>10}  hit ratio {:.3}  read {:>12} B  evictions {:>8}  resident {:>10} B\n",
        t.requests,
        t.hits,
        t.misses,
        t.hit_ratio(),
        t.bytes_read,
        t.evictions,
        t.resident_bytes
    )
}

pub fn cache_text(cache: &CacheStats) -> String {
    let mut out = format!(
        "cache: {} budget {} B (records {} B)\n{}{}{}",
        cache.policy.name(),
        cache.budget_bytes,
        cache.record_budget_bytes,
        tier_text("hot pages", &cache.hot),
        tier_text("cold chunks", &cache.cold),
        tier_text("records", &cache.records)
    );
    for row in &cache.collections {
        let name = row.collection.as_deref().unwrap_or("(no collection)");
        out += &tier_text(&format!("{name} hot"), &row.hot);
        out += &tier_text(&format!("{name} cold"), &row.cold);
        out += &tier_text(&format!("{name} records"), &row.records);
    }
    if !cache.what_if.is_empty() {
        out += &format!(
            "  what-if, the whole budget scaled (sample rate {:.4}): budget, all requests' hit ratio (records, pages)\n",
            cache.sample_rate
        );
        for w in &cache.what_if {
            out += &format!(
                "    {}x {} B {:.3} ({:.3}, {:.3})\n",
                w.factor, w.budget_bytes, w.hit_ratio, w.record_hit_ratio, w.page_hit_ratio
            );
        }
    }
    if let Some(error) = &cache.trace_error {
        out += &format!("  trace stopped: {error}\n");
    }
    out
}

/// What `stats` prints for people: the database's state (space, log, moves, what awaits
/// reclaiming, what the open replayed). The cache's and the commits' counters are a
/// process's own: a command that opens the database to print them has made none, so they
/// print only when the process has (`--json` has them all, as `Db::stats` does).
pub fn stats_text(stats: &Stats, space: &SpaceStats) -> String {
    let mut migrations = String::new();
    for m in &stats.migrations {
        migrations += &format!(
            "moving {}.{} from {} to {}: {} of {} parents walked, {} moved, {} refused\n",
            m.collection,
            m.field,
            m.from.describe(),
            m.to.describe(),
            m.parents_walked,
            m.parents_total,
            m.parents_moved,
            m.refused.len()
        );
    }
    let process = match stats.commits + stats.checkpoints + stats.log_syncs {
        0 => String::new(),
        _ => format!(
            "{}commits {} in {} groups, {} syncs, checkpoints {}, dirty pages {}, held records {} B (this process)\n",
            cache_text(&stats.cache),
            stats.commits,
            stats.commit_groups,
            stats.log_syncs,
            stats.checkpoints,
            stats.dirty_pages,
            stats.held_bytes,
        ),
    };
    migrations
        + &format!(
            "{}log: {} files (segments and page files), {} bytes, next lsn {}, durable lsn {}; {} B replayed at open\n{process}dropped collections and arrays not yet reclaimed: {}\n",
            space_text(space),
            stats.log_segments,
            stats.log_bytes,
            stats.next_lsn,
            stats.durable_lsn,
            stats.replayed_bytes,
            stats.retired
        )
}

pub fn inspection_json(inspection: &Inspection) -> Value {
    json!({
        "files": inspection.files.iter().map(|(name, bytes)| json!({"name": name, "bytes": bytes})).collect::<Vec<_>>(),
        "segments": inspection.segments.iter().map(|s| json!({
            "segment_id": s.segment_id, "file": s.file, "bytes": s.bytes, "first_lsn": s.first_lsn,
            "batch_frames": s.batch_frames, "page_frames": s.page_frames,
        })).collect::<Vec<_>>(),
        "page_bytes": inspection.page_bytes,
        "tree_depth": inspection.tree_depth,
        "leaf_pages": inspection.leaf_pages,
        "internal_pages": inspection.internal_pages,
        "dirty_pages": inspection.dirty_pages,
        "records": inspection.records,
        "large_records": inspection.large_records,
        "record_bytes": inspection.record_bytes,
        "largest_record_bytes": inspection.largest_record_bytes,
        "chunks": inspection.chunks,
        "rollups": inspection.rollups,
        "rollup_bytes": inspection.rollup_bytes,
        "cold_segments": inspection.cold_segments.iter().map(|(name, bytes)| json!({"file": name, "bytes": bytes})).collect::<Vec<_>>(),
        "collections": inspection.collections.iter().map(|(name, records)| json!({"name": name, "records": records})).collect::<Vec<_>>(),
    })
}

pub fn inspection_text(inspection: &Inspection) -> String {
    let mut out = String::from("files:\n");
    for (name, bytes) in &inspection.files {
        out += &format!("  {name:<24} {bytes:>12} bytes\n");
    }
    out += "hot log segments:\n";
    for s in &inspection.segments {
        out += &format!(
            "  {:<24} {:>12} bytes  first lsn {:>8}  {:>6} batch frames  {:>6} page frames\n",
            s.file, s.bytes, s.first_lsn, s.batch_frames, s.page_frames
        );
    }
    out += &format!(
        "pages: {} bytes each, tree depth {}, {} leaves, {} internal, {} changed since the last checkpoint\n",
        inspection.page_bytes,
        inspection.tree_depth,
        inspection.leaf_pages,
        inspection.internal_pages,
        inspection.dirty_pages
    );
    out += &format!(
        "records: {} ({} large), {} bytes, largest {} bytes\n",
        inspection.records,
        inspection.large_records,
        inspection.record_bytes,
        inspection.largest_record_bytes
    );
    out += "cold segments:\n";
    for (name, bytes) in &inspection.cold_segments {
        out += &format!("  {name:<24} {bytes:>12} bytes\n");
    }
    out += &format!(
        "chunks: {} referenced by the chunk index\n",
        inspection.chunks
    );
    if inspection.rollups > 0 {
        out += &format!(
            "rollups: {} windows of expired items, {} bytes\n",
            inspection.rollups, inspection.rollup_bytes
        );
    }
    out += "collections:\n";
    for (name, records) in &inspection.collections {
        out += &format!("  {name:<24} {records:>12} parents\n");
    }
    out
}
