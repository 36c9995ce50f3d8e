//! `skewdb advise`: for each array field of a collection (a `mongoexport` file, or one that
//! `import` made), the distribution of its lengths, a layout with its reason, and the page
//! cache hit ratio that layout predicts against Embed, replayed through the engine's own
//! cache simulator.

use std::collections::HashMap;
use std::path::Path;

use bson::{Bson, Document};
use rand::SeedableRng;
use rand_distr::{Distribution, Zipf};
use skewdb::{CachePolicy, Db, Layout, MAX_RECORD_BYTES, Options, bson_key};
use skewdb_cachesim::Simulator;

use crate::failure::Failure;
use crate::import::{self, ArrayField, Import, Source};
use crate::mongo;

/// An embedded document this large is near the record limit: one more burst of children
/// and it is refused.
const NEAR_LIMIT_BYTES: u64 = MAX_RECORD_BYTES as u64 / 16;
/// The largest array this many times its 99th percentile is an outlier, not the tail of a
/// spread-out distribution.
const OUTLIER_FACTOR: u64 = 10;
/// The most bytes of items an Outlier keeps inline: four default pages.
const INLINE_BYTES: f64 = 64.0 * 1024.0;
/// The bytes of items a bucket aims at.
const BUCKET_BYTES: f64 = 16.0 * 1024.0;
/// Bucket sizes are kept between these.
const BUCKET_ITEMS: (u64, u64) = (32, 1000);
/// A time-keyed array this long at its largest is a stream worth bucketing.
const STREAM_ITEMS: u64 = 64;
/// A share of documents at exactly the largest length that says an application caps it,
/// when it is also this many times the share just below (a spread that happens to end
/// there has about as many one short of it).
const CAPPED_SHARE: f64 = 0.1;
/// The fewest documents that must stop at one length for it to be taken as a hand-made
/// window's cap: one document in a handful stopping there is chance.
const MIN_AT_CAP: usize = 3;
/// The fewest documents with an array field whose 99th percentile may call a tail far out.
/// A document near the record limit needs no sample: it must not be embedded.
const MIN_TAIL_SAMPLE: usize = 30;
const CAPPED_PILE_UP: f64 = 3.0;
/// Spans a bucket may cover, in milliseconds (item keys of dates are milliseconds).
const SPANS: [(i64, &str); 9] = [
    (60_000, "a minute"),
    (300_000, "5 minutes"),
    (900_000, "15 minutes"),
    (3_600_000, "an hour"),
    (21_600_000, "6 hours"),
    (86_400_000, "a day"),
    (604_800_000, "a week"),
    (2_592_000_000, "30 days"),
    (31_536_000_000, "365 days"),
];
/// Reads replayed for a prediction, and how many of them first warm the cache.
pub const READS: usize = 120_000;
pub const WARMUP_READS: usize = 20_000;
/// The Zipf exponent of the read stream.
const ZIPF_EXPONENT: f64 = 0.99;

/// What to advise on and how.
#[derive(Clone, Debug)]
pub struct Request {
    pub key_field: String,
    pub budget_bytes: u64,
    /// Arrays of which the application shows only the newest N items.
    pub reads_newest: Vec<(String, u32)>,
    /// The parent keys as the application reads them, in order; `None`: Zipf(0.99), the
    /// parents with the longest arrays read most.
    pub reads: Option<Vec<Vec<u8>>>,
}

/// The advice on one array field.
#[derive(Clone, Debug)]
pub struct FieldAdvice {
    pub field: String,
    /// Documents holding the field as an array.
    pub documents: u64,
    /// Lengths at the 50th, 90th, 99th and 99.9th percentile, and the largest.
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    /// Mean bytes of one element as an item's payload.
    pub element_bytes: f64,
    /// The share of these documents over 16 MiB as BSON, arrays embedded.
    pub over_limit: f64,
    /// The largest such document, in bytes.
    pub largest_document_bytes: u64,
    /// The Pareto exponent of the lengths' tail (Hill's estimator), when there is a tail.
    pub tail_exponent: Option<f64>,
    /// The element field that is a date in every element, when there is one.
    pub time_key: Option<String>,
    pub layout: Layout,
    pub reason: String,
}

/// A prediction: page cache hit ratios of the recommended layouts and of Embed.
#[derive(Clone, Debug)]
pub struct Prediction {
    pub budget_bytes: u64,
    pub reads: u64,
    /// The parent keys read, in order, the first `warmup` of them a warm-up.
    pub stream: Vec<Vec<u8>>,
    pub warmup: usize,
    pub recommended: Replay,
    pub embed: Replay,
}

/// One layout's replay.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Hits over requests; `None` when the reads made no request (a collection small
    /// enough to sit in the tree's root page, which stays in memory).
    pub hit_ratio: Option<f64>,
    /// Requests the measured reads made of the page cache.
    pub requests: u64,
    pub misses: u64,
    /// Bytes of the objects the reads touched, once each: the working set's size.
    pub touched_bytes: u64,
    /// Documents the import under this layout refused, by reason: each reason's first
    /// message (numbers and all) and how many documents were refused alike.
    pub refused: Vec<(String, u64)>,
}

impl Replay {
    /// Documents refused, for every reason.
    pub fn refused_documents(&self) -> u64 {
        self.refused.iter().map(|(_, n)| n).sum()
    }
}

/// Refusals grouped by their reason: reasons that differ only in their numbers (a size, a
/// line) are one, shown by its first message; most frequent first.
fn refusal_reasons(refused: &[import::Refusal]) -> Vec<(String, u64)> {
    let mut reasons: Vec<(String, String, u64)> = Vec::new();
    for refusal in refused {
        let class: String = refusal
            .reason
            .chars()
            .filter(|c| !c.is_ascii_digit() && *c != ',')
            .collect();
        match reasons.iter_mut().find(|(seen, _, _)| *seen == class) {
            Some((_, _, documents)) => *documents += 1,
            None => reasons.push((class, refusal.reason.clone(), 1)),
        }
    }
    reasons.sort_by_key(|reason| std::cmp::Reverse(reason.2));
    reasons
        .into_iter()
        .map(|(_, example, documents)| (example, documents))
        .collect()
}

/// The whole advice.
#[derive(Clone, Debug)]
pub struct Advice {
    pub documents: u64,
    /// Documents left out: not JSON, not a document, or without the key field.
    pub skipped: u64,
    pub fields: Vec<FieldAdvice>,
    pub prediction: Option<Prediction>,
}

/// One array field's figures, gathered in one pass.
#[derive(Default)]
struct FieldStats {
    lengths: Vec<u64>,
    elements: u64,
    element_bytes: u64,
    over_limit: u64,
    largest_document_bytes: u64,
    /// Per element field name: how many elements hold a date there.
    dates: HashMap<String, u64>,
    /// Elements that are readings: documents of dates and numbers only, at least one of each.
    readings: u64,
    /// Per document of two or more dated elements: the mean gap between keys, per candidate.
    gaps: HashMap<String, Vec<i64>>,
}

/// What the first pass learns: every array field's figures and each parent's key with
/// its items.
#[derive(Default)]
struct Survey {
    documents: u64,
    fields: Vec<(String, FieldStats)>,
    /// Each distinct parent key, with the items it holds over all its arrays.
    parents: HashMap<Vec<u8>, u64>,
    /// The flags a hand-made Outlier keeps: a top-level `true` whose name says overflow.
    overflow_flags: u64,
}

impl Survey {
    fn field(&mut self, name: &str) -> &mut FieldStats {
        let at = match self.fields.iter().position(|(f, _)| f == name) {
            Some(at) => at,
            None => {
                self.fields.push((name.to_string(), FieldStats::default()));
                self.fields.len() - 1
            }
        };
        &mut self.fields[at].1
    }

    fn add(&mut self, key_field: &str, document: &Document) -> Result<(), String> {
        let key = document
            .get(key_field)
            .ok_or_else(|| format!("no key field {key_field:?}"))?;
        let key = bson_key::encode(key)?;
        // As the import refuses it: such a document is in no layout's collection.
        if key.len() > skewdb::MAX_KEY_BYTES {
            return Err(format!(
                "key of {} bytes, over the {}",
                key.len(),
                skewdb::MAX_KEY_BYTES
            ));
        }
        let bytes = document.to_vec().map_err(|e| e.to_string())?.len() as u64;
        self.documents += 1;
        let mut items = 0;
        for (name, value) in document {
            match value {
                Bson::Array(elements) => {
                    items += elements.len() as u64;
                    self.field(name).add(elements, bytes)?;
                }
                Bson::Boolean(true) if name.to_ascii_lowercase().contains("overflow") => {
                    self.overflow_flags += 1;
                }
                _ => {}
            }
        }
        *self.parents.entry(key).or_default() += items;
        Ok(())
    }
}

impl FieldStats {
    fn add(&mut self, elements: &[Bson], document_bytes: u64) -> Result<(), String> {
        self.lengths.push(elements.len() as u64);
        if document_bytes > MAX_RECORD_BYTES as u64 {
            self.over_limit += 1;
        }
        self.largest_document_bytes = self.largest_document_bytes.max(document_bytes);
        let mut keys: HashMap<&str, (i64, i64, u64)> = HashMap::new();
        for element in elements {
            self.elements += 1;
            self.element_bytes += mongo::element_payload(element)?.len() as u64;
            let Bson::Document(fields) = element else {
                continue;
            };
            let is = |f: fn(&Bson) -> bool| fields.values().any(f);
            let number = |v: &Bson| {
                matches!(
                    v,
                    Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
                )
            };
            let date = |v: &Bson| matches!(v, Bson::DateTime(_));
            if is(number) && is(date) && fields.values().all(|v| number(v) || date(v)) {
                self.readings += 1;
            }
            for (name, value) in fields {
                if let Bson::DateTime(at) = value {
                    let at = at.timestamp_millis();
                    match self.dates.get_mut(name) {
                        Some(count) => *count += 1,
                        None => {
                            self.dates.insert(name.clone(), 1);
                        }
                    }
                    let span = keys.entry(name).or_insert((at, at, 0));
                    *span = (span.0.min(at), span.1.max(at), span.2 + 1);
                }
            }
        }
        for (name, (low, high, count)) in keys {
            if count >= 2 {
                let gap = (high - low) / (count as i64 - 1);
                self.gaps.entry(name.to_string()).or_default().push(gap);
            }
        }
        Ok(())
    }

    /// The element field that is a date in every element.
    fn time_key(&self) -> Option<String> {
        let mut names: Vec<&String> = self
            .dates
            .iter()
            .filter(|(_, count)| **count == self.elements && self.elements > 0)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names.first().map(|name| name.to_string())
    }
}

/// Array lengths as a histogram (3 significant figures: exact below 2,048), whose
/// quantiles take the nearest rank.
fn histogram(lengths: &[u64]) -> hdrhistogram::Histogram<u64> {
    // Lengths up to 2^40, past any array a 16 MiB record or its history holds.
    let mut histogram = hdrhistogram::Histogram::new_with_max(1 << 40, 3)
        .expect("a range and precision hdrhistogram takes");
    for &length in lengths {
        histogram.saturating_record(length);
    }
    histogram
}

/// The value at quantile `q` of `values` (nearest rank; 0 for none).
fn quantile(values: &[u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    histogram(values).value_at_quantile(q)
}

/// Hill's estimator of the Pareto exponent of the largest of `sorted` (ascending) lengths:
/// `k / sum(ln(x_i / x_(k+1)))` over the `k` largest, `k` the square root of their number
/// (at least 10). `None` without enough distinct positive lengths to speak of a tail.
pub fn tail_exponent(sorted: &[u64]) -> Option<f64> {
    let positive: Vec<u64> = sorted.iter().copied().filter(|&n| n > 0).collect();
    let k = ((positive.len() as f64).sqrt() as usize).max(10);
    if positive.len() <= k {
        return None;
    }
    let threshold = positive[positive.len() - k - 1] as f64;
    let sum: f64 = positive[positive.len() - k..]
        .iter()
        .map(|&x| (x as f64 / threshold).ln())
        .sum();
    (sum > 0.0).then(|| k as f64 / sum)
}

/// `value` rounded up to 1, 2 or 5 times a power of ten.
fn round_up_nicely(value: f64) -> u64 {
    let value = value.max(1.0);
    let mut power = 1u64;
    loop {
        for step in [1, 2, 5] {
            if (step * power) as f64 >= value {
                return step * power;
            }
        }
        power *= 10;
    }
}

/// `value` rounded down to 1, 2 or 5 times a power of ten (at least 1).
fn round_down_nicely(value: u64) -> u64 {
    let mut best = 1;
    let mut power = 1u64;
    while power <= value {
        for step in [1, 2, 5] {
            if step * power <= value {
                best = step * power;
            }
        }
        power = power.saturating_mul(10);
    }
    best
}

/// Thousands separated, for people.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn size(bytes: f64) -> String {
    match bytes {
        b if b >= 1024.0 * 1024.0 => format!("{:.1} MiB", b / (1024.0 * 1024.0)),
        b if b >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        b => format!("{b:.0} bytes"),
    }
}

/// The layout and reason for one field's figures.
fn recommend(
    stats: &FieldStats,
    sorted: &[u64],
    reads_newest: Option<u32>,
    overflow_flags: u64,
) -> (Layout, String) {
    let (p99, max) = (quantile(sorted, 0.99), sorted.last().copied().unwrap_or(0));
    let element_bytes = stats.element_bytes as f64 / stats.elements.max(1) as f64;
    if let Some(keep) = reads_newest {
        return (
            Layout::Subset { keep },
            format!(
                "the application shows the newest {keep} of up to {}: Subset keeps them in the parent and the rest in history",
                count(max)
            ),
        );
    }
    // A stream is readings: each element a date with numbers. Elements that also carry
    // text (an id, a name, a review) are things that happen to be dated, not a stream.
    if let Some(time_key) = stats.time_key()
        && stats.readings == stats.elements
        && max >= STREAM_ITEMS
    {
        let items = (BUCKET_BYTES / element_bytes.max(1.0)) as u64;
        let max_items = round_down_nicely(items).clamp(BUCKET_ITEMS.0, BUCKET_ITEMS.1);
        let gaps = stats.gaps.get(&time_key).cloned().unwrap_or_default();
        let span = median(gaps).and_then(|gap| {
            SPANS
                .iter()
                .find(|(span, _)| *span >= gap.max(1).saturating_mul(max_items as i64))
        });
        let (span_text, span) = match span {
            Some((span, text)) => (format!(", each within {text}"), Some(*span)),
            None => (String::new(), None),
        };
        return (
            Layout::Bucket {
                max_items: max_items as u32,
                span,
            },
            format!(
                "a stream of readings (every element a date, {time_key:?}, with numbers), up to {} per document: buckets of {max_items} (about {}){span_text}, whose summaries answer aggregates without reading items",
                count(max),
                size(max_items as f64 * element_bytes)
            ),
        );
    }
    let at_max = sorted.iter().rev().take_while(|&&n| n == max).count() as f64;
    let below_max = sorted.iter().filter(|&&n| n + 1 == max).count() as f64;
    // Every document at one length is fixed-size data as likely as a cap: not a window.
    let spread = sorted.len() as f64 - at_max >= CAPPED_SHARE / 2.0 * sorted.len() as f64;
    let capped = max >= 2
        && spread
        && at_max / sorted.len() as f64 >= CAPPED_SHARE
        && at_max >= CAPPED_PILE_UP * below_max;
    let few_at_cap = at_max < MIN_AT_CAP as f64;
    if capped && !few_at_cap {
        let cap = max as u32;
        return match overflow_flags > 0 {
            true => (
                Layout::Outlier { inline_cap: cap },
                format!(
                    "a hand-made Outlier: {:.0}% of documents stop at exactly {cap} and an overflow flag is set; Outlier keeps the first {cap} and flags the rest for every reader",
                    100.0 * at_max / sorted.len() as f64
                ),
            ),
            false => (
                Layout::Subset { keep: cap },
                format!(
                    "a hand-made window: {:.0}% of documents stop at exactly {cap}; Subset keeps the newest {cap} inline and the history cold",
                    100.0 * at_max / sorted.len() as f64
                ),
            ),
        };
    }
    let tail_sampled = sorted.len() >= MIN_TAIL_SAMPLE;
    let far_out = tail_sampled && max > OUTLIER_FACTOR * p99.max(1);
    let near_limit = stats.largest_document_bytes >= NEAR_LIMIT_BYTES;
    if far_out || near_limit {
        let cap = round_up_nicely(p99 as f64)
            .min((INLINE_BYTES / element_bytes.max(1.0)).max(1.0) as u64)
            .max(1) as u32;
        let over = sorted.iter().filter(|&&n| n > cap as u64).count();
        let why = match (stats.over_limit, far_out) {
            (0, true) => format!(
                "a few documents are far out (largest {}, {}x the 99th percentile {})",
                count(max),
                max / p99.max(1),
                count(p99)
            ),
            (0, false) => format!(
                "the largest document is {} embedded, near the 16 MiB limit",
                size(stats.largest_document_bytes as f64)
            ),
            (past_limit, _) => format!(
                "{} of {} documents pass 16 MiB embedded (largest {} items)",
                count(past_limit),
                count(sorted.len() as u64),
                count(max)
            ),
        };
        return (
            Layout::Outlier { inline_cap: cap },
            format!(
                "{why}: keep the first {cap} inline ({} documents overflow, {:.2}%) and the rest in overflow chunks",
                count(over as u64),
                100.0 * over as f64 / sorted.len() as f64
            ),
        );
    }
    let too_few = match (capped, tail_sampled) {
        (true, _) => Some(format!(
            "only {} of {} documents stop at {max}, too few to take for a cap (at least \
             {MIN_AT_CAP})",
            at_max as u64,
            count(sorted.len() as u64)
        )),
        (false, false) if max > OUTLIER_FACTOR * p99.max(1) => Some(format!(
            "only {} documents hold the field, too few to tell a far-out tail from chance \
             (at least {MIN_TAIL_SAMPLE})",
            count(sorted.len() as u64)
        )),
        _ => None,
    };
    if let Some(too_few) = too_few {
        return (
            Layout::Embed,
            format!(
                "{too_few}; no document comes near the limit (largest {} embedded): embed",
                size(stats.largest_document_bytes as f64)
            ),
        );
    }
    (
        Layout::Embed,
        format!(
            "no document comes near the limit (largest {} embedded) and the tail is light (largest {}, 99th percentile {}): embed; an Outlier scheme here would only add a flag to check",
            size(stats.largest_document_bytes as f64),
            count(max),
            count(p99)
        ),
    )
}

fn median(mut values: Vec<i64>) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[values.len() / 2])
}

/// Advises on the documents `source` gives (called once for the survey and, for the
/// prediction, twice more); documents that do not parse are skipped.
pub fn run(
    request: &Request,
    source: &dyn Fn() -> Result<Source, Failure>,
    mut progress: impl FnMut(&str),
) -> Result<Advice, Failure> {
    let mut survey = Survey::default();
    let mut skipped = 0;
    for (_, document) in source()?.documents() {
        // A document import would refuse is left out, and counted.
        let added = document.and_then(|d| survey.add(&request.key_field, &d));
        skipped += u64::from(added.is_err());
    }
    progress(&format!(
        "surveyed {} documents, {} array fields",
        count(survey.documents),
        survey.fields.len()
    ));
    let mut fields = Vec::new();
    for (field, stats) in &mut survey.fields {
        stats.lengths.sort_unstable();
        let sorted = &stats.lengths;
        let newest = request
            .reads_newest
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, n)| *n);
        let (layout, reason) = recommend(stats, sorted, newest, survey.overflow_flags);
        let lengths = histogram(sorted);
        fields.push(FieldAdvice {
            field: field.clone(),
            documents: sorted.len() as u64,
            p50: lengths.value_at_quantile(0.5),
            p90: lengths.value_at_quantile(0.9),
            p99: lengths.value_at_quantile(0.99),
            p999: lengths.value_at_quantile(0.999),
            max: sorted.last().copied().unwrap_or(0),
            element_bytes: stats.element_bytes as f64 / stats.elements.max(1) as f64,
            over_limit: stats.over_limit as f64 / sorted.len().max(1) as f64,
            largest_document_bytes: stats.largest_document_bytes,
            tail_exponent: tail_exponent(sorted),
            time_key: stats.time_key(),
            layout,
            reason,
        });
    }
    let prediction = if fields.is_empty() || survey.parents.is_empty() {
        None
    } else {
        Some(predict(request, source, &survey, &fields, &mut progress)?)
    };
    Ok(Advice {
        documents: survey.documents,
        skipped,
        fields,
        prediction,
    })
}

/// The parent keys read, in order: the request's, or Zipf(0.99) over the parents ranked
/// by the items they hold (the longest arrays read most, as with products and accounts).
fn read_stream(request: &Request, survey: &Survey) -> Vec<Vec<u8>> {
    if let Some(reads) = &request.reads {
        return reads.clone();
    }
    let mut ranked: Vec<(&Vec<u8>, &u64)> = survey.parents.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let zipf = Zipf::new(ranked.len() as f64, ZIPF_EXPONENT).expect("valid Zipf parameters");
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    (0..READS)
        .map(|_| {
            let rank = (zipf.sample(&mut rng) as usize).clamp(1, ranked.len());
            ranked[rank - 1].0.clone()
        })
        .collect()
}

fn predict(
    request: &Request,
    source: &dyn Fn() -> Result<Source, Failure>,
    survey: &Survey,
    fields: &[FieldAdvice],
    progress: &mut impl FnMut(&str),
) -> Result<Prediction, Failure> {
    let reads = read_stream(request, survey);
    let warmup = match request.reads {
        Some(_) => reads.len() / 6,
        None => WARMUP_READS,
    };
    let arrays = |embed: bool| -> Vec<ArrayField> {
        fields
            .iter()
            .map(|f| ArrayField {
                field: f.field.clone(),
                layout: if embed { Layout::Embed } else { f.layout },
                item_key: f.time_key.clone(),
                measures: Vec::new(),
            })
            .collect()
    };
    let scratch = tempfile::tempdir()?;
    let mut replay = |embed: bool| -> Result<Replay, Failure> {
        let dir = scratch.path().join(if embed { "embed" } else { "advised" });
        let import = Import {
            collection: "advised".to_string(),
            key_field: request.key_field.clone(),
            arrays: arrays(embed),
            drop: Vec::new(),
            stop_on_error: false,
            batch_documents: 1000,
            children: None,
        };
        let refused = {
            let db = Db::open(&dir, import::bulk_options())?;
            let done = import::run(&db, &import, source()?, None, |_| {})?;
            db.compact()?;
            db.close()?;
            refusal_reasons(&done.refused)
        };
        let trace = scratch.path().join("trace.csv");
        let (warmup_requests, requests) = {
            let options = Options::new()
                .cache_bytes(request.budget_bytes as usize)
                .record_cache_percent(0)
                .cache_what_if(false)
                .cache_trace(&trace);
            let db = Db::open(&dir, options)?;
            let collection = db.collection(&import.collection)?;
            let (first, rest) = reads.split_at(warmup.min(reads.len()));
            for key in first {
                collection.get_projected(key, &[])?;
            }
            let warmup_requests = db.cache_stats().total().requests as usize;
            for key in rest {
                collection.get_projected(key, &[])?;
            }
            let requests = db.cache_stats().total().requests as usize;
            drop(collection);
            // Closing checkpoints, which makes requests no reader made: the trace is cut
            // where the reads end.
            db.close()?;
            (warmup_requests, requests)
        };
        let mut trace = skewdb_cachesim::read_classed_trace(&trace).map_err(Failure::from)?;
        trace.truncate(requests);
        let mut simulator = Simulator::new(CachePolicy::default(), request.budget_bytes);
        let hits = trace.replay(&mut simulator, warmup_requests);
        let measured_requests = trace.requests.get(warmup_requests..).unwrap_or_default();
        let measured = measured_requests.len() as u64;
        let touched: HashMap<u64, u64> = measured_requests.iter().copied().collect();
        progress(&format!(
            "replayed {} reads under {}",
            count(reads.len() as u64),
            if embed { "embed" } else { "the advice" }
        ));
        Ok(Replay {
            hit_ratio: (measured > 0).then(|| hits as f64 / measured as f64),
            requests: measured,
            misses: measured - hits,
            touched_bytes: touched.values().sum(),
            refused,
        })
    };
    let recommended = replay(false)?;
    let embed = replay(true)?;
    Ok(Prediction {
        budget_bytes: request.budget_bytes,
        reads: (reads.len() - warmup.min(reads.len())) as u64,
        warmup: warmup.min(reads.len()),
        stream: reads,
        recommended,
        embed,
    })
}

/// The page cache hit ratio of the prediction's reads on collection `name` of the database
/// at `dir` as it is, measured by the engine's own cache at the prediction's budget (the
/// record tier off, as in the prediction): hits over requests after the warm-up.
pub fn measure(dir: &Path, name: &str, prediction: &Prediction) -> Result<Option<f64>, Failure> {
    let options = Options::new()
        .cache_bytes(prediction.budget_bytes as usize)
        .record_cache_percent(0)
        .cache_what_if(false);
    let db = Db::open_read_only(dir, options)?;
    let collection = db.collection(name)?;
    let (first, rest) = prediction.stream.split_at(prediction.warmup);
    for key in first {
        collection.get_projected(key, &[])?;
    }
    let before = db.cache_stats().total();
    for key in rest {
        collection.get_projected(key, &[])?;
    }
    let after = db.cache_stats().total();
    let requests = after.requests - before.requests;
    Ok((requests > 0).then(|| (after.hits - before.hits) as f64 / requests as f64))
}

/// One field's advice as `--json` prints it.
pub fn field_json(field: &FieldAdvice) -> serde_json::Value {
    serde_json::json!({
        "field": field.field,
        "documents": field.documents,
        "p50": field.p50, "p90": field.p90, "p99": field.p99, "p999": field.p999,
        "max": field.max,
        "element_bytes": field.element_bytes,
        "over_limit_share": field.over_limit,
        "largest_document_bytes": field.largest_document_bytes,
        "tail_exponent": field.tail_exponent,
        "time_key": field.time_key,
        "layout": field.layout.describe(),
        "reason": field.reason,
    })
}

fn replay_json(replay: &Replay) -> serde_json::Value {
    serde_json::json!({
        "hit_ratio": replay.hit_ratio,
        "requests": replay.requests,
        "misses": replay.misses,
        "touched_bytes": replay.touched_bytes,
        "refused_documents": replay.refused_documents(),
        "refusals": replay
            .refused
            .iter()
            .map(|(reason, documents)| serde_json::json!({"reason": reason, "documents": documents}))
            .collect::<Vec<_>>(),
    })
}

/// The prediction as `--json` prints it.
pub fn prediction_json(prediction: &Prediction) -> serde_json::Value {
    serde_json::json!({
        "prediction": {
            "budget_bytes": prediction.budget_bytes,
            "reads": prediction.reads,
            "policy": CachePolicy::default().name(),
            "advised": replay_json(&prediction.recommended),
            "embed": replay_json(&prediction.embed),
        }
    })
}

/// The advice for people.
pub fn text(advice: &Advice) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if advice.skipped > 0 {
        let _ = writeln!(
            out,
            "{} documents left out (not JSON, not a document, or without the key field)",
            count(advice.skipped)
        );
    }
    if advice.fields.is_empty() {
        let _ = writeln!(
            out,
            "{} documents, no array field: nothing to advise",
            count(advice.documents)
        );
        return out;
    }
    for field in &advice.fields {
        let tail = match field.tail_exponent {
            Some(alpha) => format!("tail exponent {alpha:.2}"),
            None => "no tail".to_string(),
        };
        let _ = writeln!(
            out,
            "{}: {} documents; items p50 {}, p90 {}, p99 {}, p99.9 {}, max {}; {} per item; \
             {:.3}% over 16 MiB embedded (largest {}); {tail}",
            field.field,
            count(field.documents),
            count(field.p50),
            count(field.p90),
            count(field.p99),
            count(field.p999),
            count(field.max),
            size(field.element_bytes),
            100.0 * field.over_limit,
            size(field.largest_document_bytes as f64),
        );
        let _ = writeln!(
            out,
            "  advice: --array {}={}\n  because {}",
            field.field,
            field.layout.describe(),
            field.reason
        );
    }
    if let Some(prediction) = &advice.prediction {
        let _ = writeln!(
            out,
            "predicted page cache at {} ({}), over {} reads after a warm-up:",
            size(prediction.budget_bytes as f64),
            CachePolicy::default().name(),
            count(prediction.reads)
        );
        for (name, replay) in [
            ("advised", &prediction.recommended),
            ("embed", &prediction.embed),
        ] {
            let refused = match replay.refused_documents() {
                0 => String::new(),
                n => {
                    let reasons: Vec<String> = replay
                        .refused
                        .iter()
                        .map(|(reason, documents)| format!("{reason} ({})", count(*documents)))
                        .collect();
                    format!("; {} documents refused: {}", count(n), reasons.join("; "))
                }
            };
            let _ = match replay.hit_ratio {
                Some(hit_ratio) => writeln!(
                    out,
                    "  {name:<8} hit ratio {hit_ratio:.3}, {} misses; the reads touch {}{refused}",
                    count(replay.misses),
                    size(replay.touched_bytes as f64)
                ),
                None => writeln!(
                    out,
                    "  {name:<8} no page cache request: the collection fits in the tree's root page, kept in memory{refused}"
                ),
            };
        }
    }
    out
}

/// A byte count as `--budget` takes it: `67108864`, `64MiB`, `1.5 GiB`, `64MB` (SI units
/// are powers of 1000, binary ones of 1024), read by `parse-size`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_size::parse_size(text.trim())
        .map_err(|e| format!("{text:?} is not a byte count such as 67108864, 64MiB or 1.5GB: {e}"))
}

/// A file of parent keys as read, one per line, each as `advise` reads a key: Extended
/// JSON, or the text as a string.
pub fn read_keys(path: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::invalid_input(format!("cannot read {}: {e}", path.display())))?;
    let mut keys = Vec::new();
    for (at, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let key = mongo::key_arg(line.trim()).map_err(|e| {
            Failure::invalid_input(format!("{} line {}: {e}", path.display(), at + 1))
        })?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(Failure::invalid_input(format!(
            "{} holds no keys",
            path.display()
        )));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let sorted: Vec<u64> = (1..=1000).collect();
        assert_eq!(quantile(&sorted, 0.5), 500);
        assert_eq!(quantile(&sorted, 0.99), 990);
        assert_eq!(quantile(&sorted, 0.999), 999);
        assert_eq!(quantile(&sorted, 1.0), 1000);
        assert_eq!(quantile(&[7], 0.5), 7);
        assert_eq!(quantile(&[], 0.5), 0);
        // Past 2,048, within a thousandth of the nearest rank.
        let long: Vec<u64> = (1..=100_000).collect();
        let p99 = quantile(&long, 0.99) as f64;
        assert!((p99 - 99_000.0).abs() <= 99.0, "{p99}");
    }

    #[test]
    fn the_tail_exponent_of_a_pareto_sample_is_found() {
        // Inverse-CDF Pareto samples with exponent 1.5, on an even grid of probabilities.
        let mut sorted: Vec<u64> = (1..20_000)
            .map(|i| {
                let u = i as f64 / 20_000.0;
                (10.0 * (1.0 - u).powf(-1.0 / 1.5)) as u64
            })
            .collect();
        sorted.sort_unstable();
        let alpha = tail_exponent(&sorted).unwrap();
        assert!((alpha - 1.5).abs() < 0.15, "{alpha}");
        // Equal lengths have no tail; too few lengths say nothing.
        assert_eq!(tail_exponent(&[5; 1000]), None);
        assert_eq!(tail_exponent(&[1, 2, 3]), None);
    }

    #[test]
    fn byte_counts_take_units() {
        assert_eq!(parse_bytes("65536"), Ok(65536));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("16KiB"), Ok(16 << 10));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("64MB"), Ok(64_000_000));
        assert_eq!(parse_bytes("16K"), Ok(16_000));
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("5 parsecs").is_err());
        assert!(parse_bytes("99999999999999999999G").is_err());
    }

    #[test]
    fn numbers_round_up_to_one_two_or_five() {
        let rounded: Vec<u64> = [0.3, 1.0, 1.5, 3.0, 7.0, 10.0, 11.0, 240.0, 501.0]
            .map(round_up_nicely)
            .to_vec();
        assert_eq!(rounded, [1, 1, 2, 5, 10, 10, 20, 500, 1000]);
        let rounded: Vec<u64> = [0, 1, 3, 7, 10, 19, 585, 999]
            .map(round_down_nicely)
            .to_vec();
        assert_eq!(rounded, [1, 1, 2, 5, 10, 10, 500, 500]);
    }
}
