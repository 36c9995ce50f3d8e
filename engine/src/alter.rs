//! Schema changes: what an [`Alteration`] does to a collection's spec, array slots and layout
//! states. The
//! catalog's bytes for them: `format-spec/checkpoint.md` and the set-collection and retire
//! ops of `format-spec/hot-log.md`.

use crate::catalog::{ArraySpec, CollectionInfo, DEFAULT_MEASURE, Layout, LayoutState, MAX_SLOTS};
use crate::error::{Error, Result};

/// A change to a collection's schema, committed at once and whole by
/// [`crate::Db::alter_collection`] (or a batch's `alter_collection`): every reader sees the
/// collection before it or after it. Applied in this order: arrays dropped, arrays added,
/// measures added, layouts set, rollups set, then the rename.
///
/// - A dropped array is gone for every reader at once (its inline items, tails, chunks,
///   summaries and outlier markers); the maintenance thread reclaims its space after.
/// - An added array reads as empty in every parent already stored (total 0, an empty
///   summary). Dropping an array and adding one of the same name in one alteration empties
///   it.
/// - An added measure has no value in any item already stored.
/// - A rollup set on a Bucket array rolls up what later expiries drop; a rollup's span may
///   be widened to a multiple of itself (hours to days), never narrowed or removed: the
///   rollups already stored keep their windows, and are the only trace of what they hold.
/// - A rename keeps every record; handles opened under the old name answer
///   `Error::UnknownCollection`.
///
/// ```
/// use skewdb::{Alteration, CollectionSpec, Db, Layout, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::new())?;
/// db.create_collection(CollectionSpec::new("products").array("reviews", Layout::Embed))?;
/// let products = db.alter_collection(
///     "products",
///     Alteration::new()
///         .add_array("questions", Layout::Subset { keep: 3 })
///         .add_measure("reviews", "stars")
///         .rename("catalog"),
/// )?;
/// assert_eq!(products.spec().describe_arrays(), "reviews=embed [value stars], questions=subset:3");
/// assert!(db.collection("products").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Alteration {
    rename: Option<String>,
    drop_arrays: Vec<String>,
    add_arrays: Vec<ArraySpec>,
    add_measures: Vec<(String, String)>,
    set_layouts: Vec<(String, Layout)>,
    set_rollups: Vec<(String, i64)>,
}

impl Alteration {
    /// An alteration that changes nothing yet.
    pub fn new() -> Self {
        Alteration::default()
    }

    /// Renames the collection to `to` (a name no other collection has).
    pub fn rename(mut self, to: impl Into<String>) -> Self {
        self.rename = Some(to.into());
        self
    }

    /// Adds array field `field` with `layout` and the one measure [`DEFAULT_MEASURE`].
    pub fn add_array(self, field: impl Into<String>, layout: Layout) -> Self {
        self.add_array_with_measures(field, layout, [DEFAULT_MEASURE])
    }

    /// Adds array field `field` with `layout` and named measures.
    pub fn add_array_with_measures<M: Into<String>>(
        mut self,
        field: impl Into<String>,
        layout: Layout,
        measures: impl IntoIterator<Item = M>,
    ) -> Self {
        self.add_arrays.push(ArraySpec {
            field: field.into(),
            layout,
            measures: measures.into_iter().map(Into::into).collect(),
            rollup: None,
        });
        self
    }

    /// Drops array field `field` with everything it holds.
    pub fn drop_array(mut self, field: impl Into<String>) -> Self {
        self.drop_arrays.push(field.into());
        self
    }

    /// Adds measure `measure` to array field `field`, after its others.
    pub fn add_measure(mut self, field: impl Into<String>, measure: impl Into<String>) -> Self {
        self.add_measures.push((field.into(), measure.into()));
        self
    }

    /// Moves array field `field` to `layout` (any layout, any parameters), on the live
    /// database: the change commits at once and every parent is migrated after it, by the
    /// maintenance thread in batches, or first by any write to its array. Every read answers
    /// what it answered before throughout (only where items live, and what `get` carries
    /// inline, changes). Setting the layout a migration is moving the array from cancels it:
    /// the parents already moved move back. Setting a third layout while one runs is
    /// `Error::InvalidSchema`. See `format-spec/arrays.md`, layout changes.
    pub fn set_layout(mut self, field: impl Into<String>, layout: Layout) -> Self {
        self.set_layouts.push((field.into(), layout));
        self
    }

    /// Makes Bucket array field `field` keep rollups of `span` (its items' key units) of what
    /// expiries drop from now on, as [`crate::CollectionSpec::rollup`] declares at creation.
    /// On an array that keeps rollups already, `span` must be a multiple of the current
    /// span (else `Error::InvalidSchema`): the rollups stored keep their span and answer
    /// reads as before, and a new window that starts where a stored rollup does takes it in.
    /// A rollup is never removed (drop the array for that). See `format-spec/arrays.md`,
    /// rollups.
    pub fn set_rollup(mut self, field: impl Into<String>, span: i64) -> Self {
        self.set_rollups.push((field.into(), span));
        self
    }

    /// The name the alteration renames the collection to, if it does.
    pub fn new_name(&self) -> Option<&str> {
        self.rename.as_deref()
    }

    /// Whether the alteration changes nothing.
    pub fn is_empty(&self) -> bool {
        self.rename.is_none()
            && self.drop_arrays.is_empty()
            && self.add_arrays.is_empty()
            && self.add_measures.is_empty()
            && self.set_layouts.is_empty()
            && self.set_rollups.is_empty()
    }
}

impl CollectionInfo {
    /// The collection after `alteration`, and the slots of the arrays it drops. Checks
    /// everything but the new name's uniqueness, which the catalog knows:
    /// `Error::UnknownField` for an array to drop, measure, move or roll up that the
    /// collection lacks, `Error::InvalidSchema` for a schema that would not be valid (an
    /// array added twice, a measure twice or a ninth, a rollup of a non-bucket array or of
    /// a span not positive or not a multiple of the current one), `Error::InvalidName` for
    /// a bad name.
    pub(crate) fn altered(&self, alteration: &Alteration) -> Result<(CollectionInfo, Vec<u16>)> {
        let name = self.spec.name().to_string();
        let unknown = |field: &str| Error::UnknownField {
            collection: name.clone(),
            field: field.to_string(),
        };
        let mut altered = self.clone();
        let mut dropped = Vec::new();
        for field in &alteration.drop_arrays {
            let index = altered
                .spec
                .field_index(field)
                .ok_or_else(|| unknown(field))?;
            altered.spec.remove_array(index);
            altered.layouts.remove(index);
            dropped.push(altered.slots.remove(index));
        }
        for array in &alteration.add_arrays {
            if altered.next_slot >= MAX_SLOTS {
                return Err(Error::InvalidSchema {
                    collection: name,
                    reason: format!("every array slot has been given out ({MAX_SLOTS})"),
                });
            }
            altered.spec.push_array(array.clone());
            altered.slots.push(altered.next_slot);
            altered.layouts.push(crate::catalog::LayoutState::default());
            altered.next_slot += 1;
        }
        for (field, measure) in &alteration.add_measures {
            let index = altered
                .spec
                .field_index(field)
                .ok_or_else(|| unknown(field))?;
            altered.spec.push_measure(index, measure.clone());
        }
        for (field, layout) in &alteration.set_layouts {
            let index = altered
                .spec
                .field_index(field)
                .ok_or_else(|| unknown(field))?;
            let current = altered.spec.arrays()[index].layout;
            let state = &mut altered.layouts[index];
            if *layout == current {
                continue;
            }
            if let Some(previous) = state.previous
                && previous != *layout
            {
                return Err(Error::InvalidSchema {
                    collection: name,
                    reason: format!(
                        "array field {field:?} is moving from {} to {}: set it back to {} to \
                         cancel, or wait for the move to finish",
                        previous.describe(),
                        current.describe(),
                        previous.describe()
                    ),
                });
            }
            // The states under the current layout keep their parity; those of the other
            // (none yet, or those a cancelled move had moved) are under `current` now.
            *state = LayoutState {
                parity: !state.parity,
                previous: Some(current),
            };
            altered.spec.set_layout(index, *layout);
        }
        for (field, span) in &alteration.set_rollups {
            let index = altered
                .spec
                .field_index(field)
                .ok_or_else(|| unknown(field))?;
            // A narrower or unaligned span would leave stored windows that reads, which seek
            // rollups by the declared span's windows, could not find.
            if let Some(current) = altered.spec.arrays()[index].rollup
                && *span > 0
                && span % current != 0
            {
                return Err(Error::InvalidSchema {
                    collection: name,
                    reason: format!(
                        "array field {field:?} keeps rollups of span {current}: a new span must \
                         be a multiple of it, not {span}"
                    ),
                });
            }
            altered.spec.set_rollup(index, *span);
        }
        if let Some(to) = &alteration.rename {
            altered.spec.rename(to.clone());
        }
        altered.spec.validate()?;
        Ok((altered, dropped))
    }
}
