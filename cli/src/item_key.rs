//! Item keys as the command line takes them: integers, or, for a Bucket array with a span
//! (a time series), dates.

use std::str::FromStr;

use skewdb::{ArraySpec, Layout};

/// An item key argument, read once the array it keys is known: an integer, or, for a
/// Bucket array with a span, an RFC 3339 date-time (`2024-01-03T12:00:00Z`) or a bare date
/// (`2024-01-03`, midnight UTC), as milliseconds since 1970: what `import` makes of a
/// `$date`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemKeyArg(String);

impl FromStr for ItemKeyArg {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(ItemKeyArg(text.to_string()))
    }
}

impl ItemKeyArg {
    /// The key this argument names in `array`.
    pub fn resolve(&self, array: &ArraySpec) -> Result<i64, String> {
        let text = self.0.trim();
        if let Ok(key) = text.parse::<i64>() {
            return Ok(key);
        }
        let dated = matches!(array.layout, Layout::Bucket { span: Some(_), .. });
        if !dated {
            return Err(format!(
                "item key {text:?} is not an integer (dates key only Bucket arrays with a \
                 span; {:?} is {})",
                array.field,
                array.layout.describe()
            ));
        }
        let date_time = match text.len() {
            10 => format!("{text}T00:00:00Z"),
            _ => text.to_string(),
        };
        bson::DateTime::parse_rfc3339_str(&date_time)
            .map(|at| at.timestamp_millis())
            .map_err(|_| {
                format!(
                    "item key {text:?} is neither an integer nor an RFC 3339 date \
                     (2024-01-03 or 2024-01-03T12:00:00Z)"
                )
            })
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
        }
    }

    #[test]
    fn dates_key_time_series_only() {
        let hourly = array(Layout::Bucket {
            max_items: 60,
            span: Some(3_600_000),
        });
        let key = |text: &str| ItemKeyArg(text.to_string()).resolve(&hourly);
        assert_eq!(key("-5"), Ok(-5));
        assert_eq!(key("2024-01-03"), Ok(1_704_240_000_000));
        assert_eq!(key("2024-01-03T00:00:01Z"), Ok(1_704_240_001_000));
        assert_eq!(key("2024-01-03T01:00:00+01:00"), Ok(1_704_240_000_000));
        assert_eq!(key("1969-12-31T23:59:59.999Z"), Ok(-1));
        for bad in ["2024-13-01", "yesterday", "2024-01-03T25:00:00Z", ""] {
            assert!(key(bad).unwrap_err().contains("RFC 3339"), "{bad}");
        }
        let plain = array(Layout::Bucket {
            max_items: 60,
            span: None,
        });
        let error = ItemKeyArg("2024-01-03".to_string())
            .resolve(&plain)
            .unwrap_err();
        assert!(error.contains("Bucket arrays with a span"), "{error}");
        assert_eq!(ItemKeyArg("7".to_string()).resolve(&plain), Ok(7));
        let subset = array(Layout::Subset { keep: 3 });
        assert!(ItemKeyArg("2024-01-03".into()).resolve(&subset).is_err());
    }
}
