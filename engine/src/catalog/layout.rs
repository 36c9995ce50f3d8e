//! An array field's layout: how it keeps its items, as the command line names it and as
//! catalogs store it (`format-spec/checkpoint.md`).

use bytes::{Buf, BufMut, Bytes};

/// The largest `keep`, `inline_cap` and `max_items`: bounds the items one parent holds inline.
pub const MAX_INLINE_ITEMS: u32 = 1_000_000;

/// How an array field keeps its items: which stay inline in the parent record and which go
/// to cold chunks. Every layout keeps, in the parent, the array's total, an overflow flag
/// and a summary of all its items; reads merge inline and cold items in key order. The
/// rules, byte for byte, are in `format-spec/arrays.md`:
///
/// - `Embed`: every item inline; a push that would take the record past 16 MiB is refused.
/// - `Reference`: no item inline.
/// - `Subset { keep }`: the `keep` items with the greatest keys inline, sorted; an item
///   pushed out of the window moves to the history in the same write; a removal refills
///   the window from history.
/// - `Outlier { inline_cap }`: the first `inline_cap` pushed stay inline; every later one
///   overflows, and the parent is listed by `Collection::outliers`.
/// - `Bucket { max_items, span }`: items go to the open bucket (inline); it is sealed into
///   one chunk with its summary when it holds `max_items` or an item falls past its window.
///   With a span, windows are aligned: a bucket opened by key `k` covers
///   `[floor(k / span) * span, ... + span)`; a bucket sealed for being full hands over at
///   the next item's key. An item older than the open bucket is kept as a late item.
///
/// ```
/// use skewdb::Layout;
///
/// let hourly = Layout::Bucket { max_items: 60, span: Some(3600) };
/// assert_eq!(Layout::parse("bucket:60:3600")?, hourly);
/// assert_eq!(Layout::Subset { keep: 5 }.describe(), "subset:5");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every item inline; a push that would take the record over 16 MiB is refused.
    Embed,
    /// No item inline; every item in cold chunks.
    Reference,
    /// The `keep` items with the greatest keys inline, sorted; the rest in cold history.
    Subset {
        /// How many items stay inline.
        keep: u32,
    },
    /// The first `inline_cap` pushed items inline; every later one in overflow chunks.
    Outlier {
        /// How many items stay inline before the array overflows.
        inline_cap: u32,
    },
    /// Items grouped into buckets of at most `max_items` items covering at most `span` of
    /// key (when given); the open bucket is inline, sealed ones are cold chunks.
    Bucket {
        /// The most items a bucket holds.
        max_items: u32,
        /// The key range a bucket covers, aligned to multiples of it; `None` for buckets
        /// sealed by count alone.
        span: Option<i64>,
    },
}

const LAYOUT_EMBED: u8 = 1;
const LAYOUT_REFERENCE: u8 = 2;
const LAYOUT_SUBSET: u8 = 3;
const LAYOUT_OUTLIER: u8 = 4;
const LAYOUT_BUCKET: u8 = 5;

impl Layout {
    /// The name used by the command line and in JSON: `embed`, `subset:5`, `bucket:60:3600`.
    pub fn describe(&self) -> String {
        match self {
            Layout::Embed => "embed".to_string(),
            Layout::Reference => "reference".to_string(),
            Layout::Subset { keep } => format!("subset:{keep}"),
            Layout::Outlier { inline_cap } => format!("outlier:{inline_cap}"),
            Layout::Bucket {
                max_items,
                span: None,
            } => format!("bucket:{max_items}"),
            Layout::Bucket {
                max_items,
                span: Some(span),
            } => format!("bucket:{max_items}:{span}"),
        }
    }

    /// Parses [`Layout::describe`]'s form.
    pub fn parse(text: &str) -> Result<Layout, String> {
        let mut parts = text.split(':');
        let kind = parts.next().unwrap_or_default();
        let number = |part: Option<&str>, what: &str| -> Result<u64, String> {
            let part = part.ok_or_else(|| format!("{kind} needs {what}"))?;
            match part.parse::<i128>() {
                Ok(n) if n < 0 => Err(format!("{what} of {kind} cannot be negative, not {n}")),
                Ok(n) => u64::try_from(n).map_err(|_| format!("{what} of {kind} is too large")),
                Err(_) => Err(format!(
                    "{what} of {kind} must be a whole number, not {part:?}"
                )),
            }
        };
        let count = |part: Option<&str>, what: &str| -> Result<u32, String> {
            u32::try_from(number(part, what)?).map_err(|_| format!("{what} of {kind} is too large"))
        };
        let layout = match kind {
            "embed" => Layout::Embed,
            "reference" => Layout::Reference,
            "subset" => Layout::Subset {
                keep: count(parts.next(), "N")?,
            },
            "outlier" => Layout::Outlier {
                inline_cap: count(parts.next(), "N")?,
            },
            "bucket" => {
                let max_items = count(parts.next(), "N")?;
                let span = match parts.next() {
                    Some(span) => Some(
                        i64::try_from(number(Some(span), "SPAN")?)
                            .map_err(|_| "SPAN is too large".to_string())?,
                    ),
                    None => None,
                };
                Layout::Bucket { max_items, span }
            }
            other => {
                return Err(format!(
                    "unknown layout {other:?} (embed, reference, subset:N, outlier:N, bucket:N[:SPAN])"
                ));
            }
        };
        if parts.next().is_some() {
            return Err(format!("too many parts in layout {text:?}"));
        }
        layout.validate()?;
        Ok(layout)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let bounded = |n: u32, what: &str, min: u32| {
            if n < min || n > MAX_INLINE_ITEMS {
                Err(format!(
                    "{what} must be from {min} to {MAX_INLINE_ITEMS}, not {n}"
                ))
            } else {
                Ok(())
            }
        };
        match *self {
            Layout::Embed | Layout::Reference => Ok(()),
            Layout::Subset { keep } => bounded(keep, "subset keep", 1),
            Layout::Outlier { inline_cap } => bounded(inline_cap, "outlier inline_cap", 0),
            Layout::Bucket { max_items, span } => {
                bounded(max_items, "bucket max_items", 1)?;
                match span {
                    Some(span) if span <= 0 => {
                        Err(format!("bucket span must be positive, not {span}"))
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Layout::Embed => out.put_u8(LAYOUT_EMBED),
            Layout::Reference => out.put_u8(LAYOUT_REFERENCE),
            Layout::Subset { keep } => {
                out.put_u8(LAYOUT_SUBSET);
                out.put_u32_le(keep);
            }
            Layout::Outlier { inline_cap } => {
                out.put_u8(LAYOUT_OUTLIER);
                out.put_u32_le(inline_cap);
            }
            Layout::Bucket { max_items, span } => {
                out.put_u8(LAYOUT_BUCKET);
                out.put_u32_le(max_items);
                // 0 stands for no span (a span is always positive).
                out.put_i64_le(span.unwrap_or(0));
            }
        }
    }

    pub(super) fn decode(bytes: &mut Bytes) -> Result<Layout, String> {
        let truncated = || "layout truncated".to_string();
        if !bytes.has_remaining() {
            return Err(truncated());
        }
        let layout = match bytes.get_u8() {
            LAYOUT_EMBED => Layout::Embed,
            LAYOUT_REFERENCE => Layout::Reference,
            tag @ (LAYOUT_SUBSET | LAYOUT_OUTLIER) => {
                if bytes.remaining() < 4 {
                    return Err(truncated());
                }
                let n = bytes.get_u32_le();
                if tag == LAYOUT_SUBSET {
                    Layout::Subset { keep: n }
                } else {
                    Layout::Outlier { inline_cap: n }
                }
            }
            LAYOUT_BUCKET => {
                if bytes.remaining() < 12 {
                    return Err(truncated());
                }
                let max_items = bytes.get_u32_le();
                let span = bytes.get_i64_le();
                Layout::Bucket {
                    max_items,
                    span: (span != 0).then_some(span),
                }
            }
            tag => return Err(format!("unknown layout tag {tag}")),
        };
        layout.validate()?;
        Ok(layout)
    }
}

/// Where an array field's layout stands: the parity bit of the array states under its
/// current layout (`ArraySpec::layout`), and, while a migration to it runs, the layout the
/// states of the other parity are still under. See `format-spec/arrays.md`, layout changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutState {
    /// The parity of the states under the current layout.
    pub parity: bool,
    /// The layout a migration is moving the array from: states of the other parity are
    /// under it. `None` when no migration runs (every state is under the current layout).
    pub previous: Option<Layout>,
}

const STATE_PARITY: u8 = 1;
const STATE_MIGRATING: u8 = 2;

impl LayoutState {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        if self.parity {
            flags |= STATE_PARITY;
        }
        if self.previous.is_some() {
            flags |= STATE_MIGRATING;
        }
        out.put_u8(flags);
        if let Some(previous) = self.previous {
            previous.encode(out);
        }
    }

    pub(super) fn decode(bytes: &mut Bytes) -> Result<LayoutState, String> {
        if !bytes.has_remaining() {
            return Err("layout state truncated".to_string());
        }
        let flags = bytes.get_u8();
        if flags & !(STATE_PARITY | STATE_MIGRATING) != 0 {
            return Err(format!("layout state flags {flags:#x} unknown"));
        }
        let previous = match flags & STATE_MIGRATING {
            0 => None,
            _ => Some(Layout::decode(bytes)?),
        };
        Ok(LayoutState {
            parity: flags & STATE_PARITY != 0,
            previous,
        })
    }
}
