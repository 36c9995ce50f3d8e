//! What moves back into the parent record after a removal took items out of it.

use crate::catalog::Layout;

/// Items to bring back into the parent after a removal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refill {
    /// Nothing moves: the parent keeps what the removal left.
    Nothing,
    /// The `n` greatest items (by key, then push order) of the array's tail and chunks move
    /// into the parent.
    Greatest(usize),
}

/// The refill of an array under `layout` whose parent holds `inline_len` items after a
/// removal.
pub(crate) fn refill(layout: Layout, inline_len: usize) -> Refill {
    match layout {
        // The window holds the `keep` newest items: history's newest fill what was removed.
        Layout::Subset { keep } => match (keep as usize).saturating_sub(inline_len) {
            0 => Refill::Nothing,
            need => Refill::Greatest(need),
        },
        // Everything is inline already, or nothing ever is.
        Layout::Embed | Layout::Reference => Refill::Nothing,
        // The inline items are the first pushed; an item pushed later never becomes one of
        // them, so the overflow stays where it is.
        Layout::Outlier { .. } => Refill::Nothing,
        // The open bucket is the newest; sealed buckets and late items stay sealed.
        Layout::Bucket { .. } => Refill::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_refills_its_window_and_no_other_layout_refills() {
        let subset = Layout::Subset { keep: 3 };
        assert_eq!(refill(subset, 0), Refill::Greatest(3));
        assert_eq!(refill(subset, 2), Refill::Greatest(1));
        assert_eq!(refill(subset, 3), Refill::Nothing);
        // A window over its size (never stored, but the rule must not underflow).
        assert_eq!(refill(subset, 7), Refill::Nothing);
        for layout in [
            Layout::Embed,
            Layout::Reference,
            Layout::Outlier { inline_cap: 3 },
            Layout::Bucket {
                max_items: 3,
                span: None,
            },
        ] {
            assert_eq!(refill(layout, 0), Refill::Nothing, "{layout:?}");
        }
    }
}
