//! Item keys as the command line takes them: integers, or, for a Bucket array with a span
//! (a time series), dates.

use std::str::FromStr;

use skewdb::{ArraySpec, Cursor, Layout};

/// An item key argument: an integer, or an RFC 3339 date-time (`2024-01-03T12:00:00Z`) or a
/// bare date (`2024-01-03`, midnight UTC), which keys only a Bucket array with a span (a
/// time series), as milliseconds since 1970: what `import` makes of a `$date`. Text that is
/// neither does not parse (a usage error); a date for another array is refused once the
/// array is known ([`ItemKeyArg::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemKeyArg {
    /// An integer.
    Integer(i64),
    /// A date, as milliseconds since 1970, with the text given.
    Date { millis: i64, text: String },
}

impl FromStr for ItemKeyArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Ok(key) = text.parse::<i64>() {
            return Ok(ItemKeyArg::Integer(key));
        }
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{text} is outside the item keys' range, {} to {}",
                i64::MIN,
                i64::MAX
            ));
        }
        let date_time = match text.len() {
            10 => format!("{text}T00:00:00Z"),
            _ => text.to_string(),
        };
        match bson::DateTime::parse_rfc3339_str(&date_time) {
            Ok(at) => Ok(ItemKeyArg::Date {
                millis: at.timestamp_millis(),
                text: text.to_string(),
            }),
            Err(_) => Err(format!(
                "{text:?} is neither an integer nor an RFC 3339 date (2024-01-03 or \
                 2024-01-03T12:00:00Z)"
            )),
        }
    }
}

impl ItemKeyArg {
    /// The key this argument names in `array`: a date only in a Bucket array with a span.
    pub fn resolve(&self, array: &ArraySpec) -> Result<i64, String> {
        match self {
            ItemKeyArg::Integer(key) => Ok(*key),
            ItemKeyArg::Date { millis, text } => on_time_series(array, *millis, || {
                format!("item key {text:?} is a date, and dates key")
            }),
        }
    }
}

/// A window's span as `summary --every` takes it: an integer in the array's key units, or,
/// for a Bucket array with a span (keyed by milliseconds, as dates are), a duration (`1h`,
/// `15min`, `1day`) read by `humantime`, as milliseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpanArg {
    /// An integer.
    Integer(i64),
    /// A duration, as milliseconds, with the text given.
    Duration { millis: i64, text: String },
}

impl FromStr for SpanArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Ok(span) = text.parse::<i64>() {
            return Ok(SpanArg::Integer(span));
        }
        let duration = humantime::parse_duration(text).map_err(|e| {
            format!("{text:?} is neither an integer nor a duration such as 1h or 15min: {e}")
        })?;
        let millis = i64::try_from(duration.as_millis())
            .map_err(|_| format!("{text:?} is too long a span"))?;
        Ok(SpanArg::Duration {
            millis,
            text: text.to_string(),
        })
    }
}

impl SpanArg {
    /// The span in `array`'s key units: a duration only in a Bucket array with a span.
    pub fn resolve(&self, array: &ArraySpec) -> Result<i64, String> {
        match self {
            SpanArg::Integer(span) => Ok(*span),
            SpanArg::Duration { millis, text } => on_time_series(array, *millis, || {
                format!("span {text:?} is a duration, and durations measure")
            }),
        }
    }
}

/// Whether an array with `layout` is a time series as the tool prints and builds its items:
/// a Bucket array whose span is whole seconds (a duration, as `bucket:60:1h` declares it),
/// keyed by milliseconds since 1970 as the tool's dates are. A span in other units
/// (`bucket:10:3600`) keeps integers. (Dates are taken as input by any Bucket with a span.)
pub fn keyed_by_time(layout: &Layout) -> bool {
    matches!(layout, Layout::Bucket { span: Some(span), .. } if *span >= 1000 && span % 1000 == 0)
}

/// The token `items` prints to continue a read: the cursor's own token (as the library
/// prints it) for a read in key order; for a read newest first, the same with its check
/// digits turned by [`DESCENDING`], so that each order refuses the other's token.
pub fn cursor_token(cursor: Cursor, descending: bool) -> String {
    let token = cursor.to_string();
    match descending {
        false => token,
        true => turned(&token).expect("a cursor's own token"),
    }
}

/// The cursor of a token `items` printed, for a read in the order `descending` says; a
/// token of the other order, or a damaged one, is refused (`invalid_cursor`).
pub fn parse_cursor(token: &str, descending: bool) -> Result<Cursor, skewdb::Error> {
    let refused = |reason: &str| skewdb::Error::InvalidCursor {
        token: token.chars().take(40).collect(),
        reason: reason.to_string(),
    };
    let as_given = token.parse::<Cursor>();
    let turned = turned(token).and_then(|turned| turned.parse::<Cursor>().ok());
    match (descending, as_given, turned) {
        (false, Ok(cursor), _) | (true, _, Some(cursor)) => Ok(cursor),
        (false, Err(_), Some(_)) => Err(refused("it continues a read with --desc")),
        (true, Ok(_), None) => Err(refused("it continues a read without --desc")),
        (_, Err(error), _) => Err(error),
    }
}

/// What a descending read's token's check digits are turned by (XOR): "desc".
const DESCENDING: u32 = 0x6465_7363;

/// `token` (a cursor token's 40 hex digits) with its check digits turned by [`DESCENDING`];
/// `None` for what is not of that shape.
fn turned(token: &str) -> Option<String> {
    let check = u32::from_str_radix(token.get(32..)?, 16).ok()?;
    (token.len() == 40).then(|| format!("{}{:08x}", &token[..32], check ^ DESCENDING))
}

/// A layout as the tool takes it: [`Layout::parse`]'s form, where a Bucket's SPAN may also
/// be a duration (`bucket:60:1h`), which makes the array a time series keyed by
/// milliseconds, as every duration of the tool measures.
pub fn layout(text: &str) -> Result<Layout, String> {
    let mut parts = text.splitn(3, ':');
    if let (Some("bucket"), Some(max_items), Some(span)) =
        (parts.next(), parts.next(), parts.next())
        && span.trim().parse::<i128>().is_err()
        && let Ok(SpanArg::Duration { millis, .. }) = span.parse::<SpanArg>()
    {
        return Layout::parse(&format!("bucket:{max_items}:{millis}"));
    }
    Layout::parse(text)
}

/// `millis` when `array` is a time series (a Bucket array with a span, keyed by
/// milliseconds); else why not, `what` saying what the argument was.
fn on_time_series(
    array: &ArraySpec,
    millis: i64,
    what: impl FnOnce() -> String,
) -> Result<i64, String> {
    match array.layout {
        Layout::Bucket { span: Some(_), .. } => Ok(millis),
        _ => Err(format!(
            "{} only Bucket arrays with a span; {:?} is {}",
            what(),
            array.field,
            array.layout.describe()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(layout: Layout) -> ArraySpec {
        ArraySpec {
            field: "readings".to_string(),
            layout,
            measures: vec!["value".to_string()],
            rollup: None,
        }
    }

    #[test]
    fn dates_key_time_series_only() {
        let hourly = array(Layout::Bucket {
            max_items: 60,
            span: Some(3_600_000),
        });
        let key = |text: &str| text.parse::<ItemKeyArg>()?.resolve(&hourly);
        assert_eq!(key("-5"), Ok(-5));
        assert_eq!(key("2024-01-03"), Ok(1_704_240_000_000));
        assert_eq!(key("2024-01-03T00:00:01Z"), Ok(1_704_240_001_000));
        assert_eq!(key("2024-01-03T01:00:00+01:00"), Ok(1_704_240_000_000));
        assert_eq!(key("1969-12-31T23:59:59.999Z"), Ok(-1));
        for bad in [
            "2024-13-01",
            "yesterday",
            "2024-01-03T25:00:00Z",
            "",
            "five",
        ] {
            assert!(key(bad).unwrap_err().contains("RFC 3339"), "{bad}");
        }
        let plain = array(Layout::Bucket {
            max_items: 60,
            span: None,
        });
        let date: ItemKeyArg = "2024-01-03".parse().unwrap();
        let error = date.resolve(&plain).unwrap_err();
        assert!(error.contains("Bucket arrays with a span"), "{error}");
        assert_eq!("7".parse::<ItemKeyArg>().unwrap().resolve(&plain), Ok(7));
        assert!(date.resolve(&array(Layout::Subset { keep: 3 })).is_err());
    }

    #[test]
    fn a_buckets_span_is_a_whole_number_or_a_duration() {
        let bucket = |span| Layout::Bucket {
            max_items: 60,
            span: Some(span),
        };
        assert_eq!(layout("bucket:60:3600").unwrap(), bucket(3600));
        assert_eq!(layout("bucket:60:1h").unwrap(), bucket(3_600_000));
        assert_eq!(layout("bucket:60:15min").unwrap(), bucket(900_000));
        assert_eq!(layout("subset:5").unwrap(), Layout::Subset { keep: 5 });
        // Not a number nor a duration, a negative span, a duration elsewhere: refused.
        assert!(
            layout("bucket:60:soon")
                .unwrap_err()
                .contains("whole number")
        );
        assert!(layout("bucket:60:-5").is_err());
        assert!(layout("subset:1h").is_err());
        assert!(layout("bucket:60:1h:2").is_err());
    }

    #[test]
    fn durations_measure_time_series_only() {
        let hourly = array(Layout::Bucket {
            max_items: 60,
            span: Some(3_600_000),
        });
        let span = |text: &str| text.parse::<SpanArg>()?.resolve(&hourly);
        assert_eq!(span("1h"), Ok(3_600_000));
        assert_eq!(span("15min"), Ok(900_000));
        assert_eq!(span("1day"), Ok(86_400_000));
        assert_eq!(span("250"), Ok(250));
        assert!(span("soon").unwrap_err().contains("duration"));
        let error = "1h"
            .parse::<SpanArg>()
            .unwrap()
            .resolve(&array(Layout::Embed))
            .unwrap_err();
        assert!(error.contains("Bucket arrays with a span"), "{error}");
    }
}
