//! Which operations each layout supports.

use crate::catalog::Layout;
use crate::error::{Error, Result};

/// An operation on one array field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Push,
    Remove,
    ExpireBuckets,
}

/// The layout an operation needs, when `layout` does not support it.
fn needs(layout: Layout, operation: Operation) -> Option<&'static str> {
    let bucket_only = match operation {
        Operation::Push | Operation::Remove => false,
        Operation::ExpireBuckets => true,
    };
    match layout {
        Layout::Bucket { .. } => None,
        Layout::Embed | Layout::Reference | Layout::Subset { .. } | Layout::Outlier { .. } => {
            bucket_only.then_some("bucket")
        }
    }
}

/// `Ok` when `layout` supports `operation`, else `Error::WrongLayout` naming the array.
pub(crate) fn check_supports(
    layout: Layout,
    operation: Operation,
    collection: &str,
    field: &str,
) -> Result<()> {
    match needs(layout, operation) {
        None => Ok(()),
        Some(expected) => Err(Error::WrongLayout {
            collection: collection.to_string(),
            field: field.to_string(),
            expected,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_pushes_and_removes_and_only_buckets_expire() {
        let bucket = Layout::Bucket {
            max_items: 4,
            span: Some(60),
        };
        for layout in [
            Layout::Embed,
            Layout::Reference,
            Layout::Subset { keep: 2 },
            Layout::Outlier { inline_cap: 2 },
            bucket,
        ] {
            for operation in [Operation::Push, Operation::Remove] {
                assert!(check_supports(layout, operation, "c", "f").is_ok());
            }
            let expiry = check_supports(layout, Operation::ExpireBuckets, "c", "f");
            assert_eq!(expiry.is_ok(), layout == bucket, "{layout:?}");
        }
        let refused = check_supports(Layout::Embed, Operation::ExpireBuckets, "c", "f");
        assert!(matches!(
            refused,
            Err(Error::WrongLayout { expected: "bucket", ref field, .. }) if field == "f"
        ));
    }
}
