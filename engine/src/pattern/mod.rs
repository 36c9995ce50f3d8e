//! The layouts' rules, each decision one exhaustive `match` on `Layout`: where a pushed item
//! goes (`push`), what refills the parent after a removal (`refill`), which items a full
//! tail seals (the same for every layout), which chunks an expiry drops and which chunks
//! compaction may merge (`chunks`), and which operations a layout supports (`supports`).
//! Pure decisions on an array's state; no files: `store/` stages and commits what these
//! decide. See `format-spec/arrays.md`.
//!
//! A new layout adds a variant to `Layout`; the compiler then names every decision here
//! that must say what the variant does.

mod chunks;
mod push;
mod refill;
mod supports;

pub(crate) use chunks::{expires, merges, rolls_up_late, seal_tail};
pub(crate) use push::push;
pub(crate) use refill::{Refill, refill};
pub(crate) use supports::{Operation, check_supports};
