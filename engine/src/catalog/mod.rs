//! Collections and their schemas, as stored in checkpoints and in the redo of
//! `create_collection`.
//!
//! The catalog's bytes: `format-spec/checkpoint.md`, and the create-collection redo op in
//! `format-spec/hot-log.md`.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};

use crate::error::{Error, Result};
use crate::limits::widths::{u8_len, u16_len, u32_len};
use crate::record::Shape;

mod document;
mod layout;

use document::put_name;
pub use document::{DocumentFormat, DocumentMap, MAX_COLLECTION_NAME_BYTES};
pub use layout::{Layout, LayoutState, MAX_INLINE_ITEMS};

/// The most array slots a collection gives out in its life: a tree key's slot stays below
/// the byte that ends a parent's array records (`keys::parent_arrays_end`).
pub const MAX_SLOTS: u16 = 0xff00;

/// The most collections one database holds.
pub const MAX_COLLECTIONS: usize = 65_536;

/// A collection's identity inside the database; the prefix of its keys in the tree.
pub type CollectionId = u32;

/// The most array fields one collection declares.
pub const MAX_ARRAYS: usize = 64;
/// The measure an array field has when its spec names none.
pub const DEFAULT_MEASURE: &str = "value";

/// One array field of a collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    /// The array field's name.
    pub field: String,
    /// How the field keeps its items.
    pub layout: Layout,
    /// The names of its measures, 1 to [`crate::MAX_MEASURES`], in order: each item may
    /// carry a value of each, and every summary (the parent's, each chunk's and bucket's)
    /// keeps count, sum, min and max per measure. The first is `Item::value` and
    /// `Summary::count`/`sum`/`min`/`max`; an array declared without names has one,
    /// [`DEFAULT_MEASURE`].
    pub measures: Vec<String>,
    /// The span of the windows a bucket expiry keeps summaries of (a `Bucket` array only):
    /// what `expire_buckets` drops it first adds to one rollup per window `[k * span,
    /// (k + 1) * span)`, so summaries over expired keys stay exact
    /// ([`crate::Summary::rolled_up`]). `None`: expiry keeps nothing of what it drops.
    pub rollup: Option<i64>,
}

impl ArraySpec {
    /// The index of measure `name` (for `Item::measure` and `Summary::measure`).
    pub fn measure_index(&self, name: &str) -> Option<usize> {
        self.measures.iter().position(|m| m == name)
    }

    /// Whether the array names its own measures, rather than having just the one
    /// [`DEFAULT_MEASURE`] of an array declared without names.
    pub fn names_its_measures(&self) -> bool {
        self.measures != [DEFAULT_MEASURE]
    }
}

/// Which form of a collection spec a checkpoint or a create-collection op holds, oldest
/// first: each adds a part after the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SpecForm {
    /// Arrays without their measures (checkpoint version 3, op 1): each has the one
    /// [`DEFAULT_MEASURE`].
    Unmeasured,
    /// Arrays with their measures (checkpoint version 4, op 8).
    Measured,
    /// Measures, then the collection's document format (checkpoint versions 5 and 6, op 9).
    Formatted,
    /// Measures, the document format, then the document map (checkpoint version 7, op 10).
    Mapped,
    /// The mapped form; in a catalog, each collection's array slots follow its spec, and the
    /// retired collections and arrays follow the collections (checkpoint version 8, op 11,
    /// backup version 4).
    Slotted,
    /// The slotted form, each array's slot followed by its layout state (checkpoint
    /// version 9, op 15, backup version 5).
    Migrating,
    /// The migrating form, each spec ending with its arrays' rollup spans (checkpoint
    /// version 10, ops 16 and 17, backup version 7).
    RolledUp,
}

impl SpecForm {
    /// The form of the spec itself in a catalog or op of this form: the slotted and
    /// migrating forms add to what follows the spec, not to the spec.
    pub(crate) fn of_spec(self) -> SpecForm {
        match self {
            SpecForm::RolledUp => SpecForm::RolledUp,
            older => older.min(SpecForm::Mapped),
        }
    }
}

/// A collection's name and schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionSpec {
    name: String,
    arrays: Vec<ArraySpec>,
    format: DocumentFormat,
    map: Option<DocumentMap>,
    /// Fields [`CollectionSpec::rollup`] named that no array had (refused by `validate`).
    rollups_of_unknown: Vec<String>,
}

impl CollectionSpec {
    /// A collection named `name`, with no array fields yet.
    pub fn new(name: impl Into<String>) -> Self {
        CollectionSpec {
            name: name.into(),
            arrays: Vec::new(),
            format: DocumentFormat::Bytes,
            map: None,
            rollups_of_unknown: Vec::new(),
        }
    }

    /// Records how the collection's keys, bodies and payloads are encoded (default
    /// [`DocumentFormat::Bytes`]).
    pub fn stored_as(mut self, format: DocumentFormat) -> Self {
        self.format = format;
        self
    }

    /// How the collection's keys, bodies and payloads are encoded.
    pub fn document_format(&self) -> DocumentFormat {
        self.format
    }

    /// Records how the collection's documents carry its keys, item keys and measures (a
    /// collection stored as [`DocumentFormat::Bson`] only; checked when it is created).
    pub fn mapped(mut self, map: DocumentMap) -> Self {
        self.map = Some(map);
        self
    }

    /// How the collection's documents carry its keys, item keys and measures, when that
    /// was recorded (by `skewdb import`, or [`CollectionSpec::mapped`]).
    pub fn document_map(&self) -> Option<&DocumentMap> {
        self.map.as_ref()
    }

    /// Adds an array field with its layout and one measure, [`DEFAULT_MEASURE`].
    pub fn array(self, field: impl Into<String>, layout: Layout) -> Self {
        self.array_with_measures(field, layout, [DEFAULT_MEASURE])
    }

    /// Adds an array field with its layout and named measures (1 to
    /// [`crate::MAX_MEASURES`], distinct; checked when the collection is created).
    ///
    /// ```
    /// use skewdb::{CollectionSpec, Db, Layout, NewItem, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::new())?;
    /// let hourly = Layout::Bucket { max_items: 360, span: Some(3600) };
    /// let spec = CollectionSpec::new("sensors")
    ///     .array_with_measures("readings", hourly, ["temperature", "humidity"]);
    /// let sensors = db.create_collection(spec)?;
    /// let readings = sensors.array("readings")?;
    /// let mut batch = db.batch();
    /// for (at, (t, h)) in [(21.5, 0.40), (22.5, 0.42), (23.0, 0.47)].into_iter().enumerate() {
    ///     let reading = NewItem::new("").key(at as i64 * 10);
    ///     batch.push_to(&readings, "s1", reading.measure("temperature", t).measure("humidity", h));
    /// }
    /// batch.commit()?;
    /// let summary = sensors.summary("s1", "readings", ..)?.expect("committed");
    /// let humidity = readings.measure_index("humidity")?;
    /// assert_eq!(summary.measure(humidity).max, Some(0.47));
    /// assert_eq!(summary.mean(), Some(22.333333333333332)); // the first measure's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn array_with_measures<M: Into<String>>(
        mut self,
        field: impl Into<String>,
        layout: Layout,
        measures: impl IntoIterator<Item = M>,
    ) -> Self {
        self.arrays.push(ArraySpec {
            field: field.into(),
            layout,
            measures: measures.into_iter().map(Into::into).collect(),
            rollup: None,
        });
        self
    }

    /// Declares that a bucket expiry of array `field` (a `Bucket` array declared before)
    /// keeps, per window of `span` keys aligned to multiples of it, the count, sum, min and
    /// max of every measure of what it drops: summaries over expired keys stay exact, and
    /// say so ([`crate::Summary::rolled_up`]). Late items below the expiry's bound are
    /// rolled up with the buckets. Checked when the collection is created: `field` must be a
    /// `Bucket` array, `span` positive.
    ///
    /// ```
    /// use skewdb::{CollectionSpec, Db, Layout, NewItem, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::new())?;
    /// let spec = CollectionSpec::new("sensors")
    ///     .array("t", Layout::Bucket { max_items: 60, span: Some(3600) })
    ///     .rollup("t", 3600);
    /// let sensors = db.create_collection(spec)?;
    /// let mut batch = db.batch();
    /// for minute in 0..48 * 60 {
    ///     batch.push("sensors", "s1", "t", NewItem::new("").key(minute * 60).value(1.0));
    /// }
    /// batch.commit()?;
    /// sensors.expire_buckets("t", 24 * 3600)?; // the first day's readings go
    /// let day = sensors.summary("s1", "t", 0..24 * 3600)?.unwrap();
    /// assert_eq!((day.items, day.sum, day.rolled_up), (1440, 1440.0, 1440));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rollup(mut self, field: &str, span: i64) -> Self {
        if let Some(array) = self.arrays.iter_mut().rev().find(|a| a.field == field) {
            array.rollup = Some(span);
        } else {
            // Kept so that `validate` names it: an array that is not declared.
            self.rollups_of_unknown.push(field.to_string());
        }
        self
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `other` declares the same collection: the same name, document format and
    /// map, and the same array fields with the same layouts and measures, in any order (a
    /// schema change that drops an array and adds it again moves it last).
    pub(crate) fn same_schema(&self, other: &CollectionSpec) -> bool {
        fn sorted(spec: &CollectionSpec) -> Vec<&ArraySpec> {
            let mut arrays: Vec<&ArraySpec> = spec.arrays.iter().collect();
            arrays.sort_by(|a, b| a.field.cmp(&b.field));
            arrays
        }
        let map = |spec: &CollectionSpec| {
            spec.map.clone().map(|mut map| {
                map.arrays.sort_by(|a, b| a.array.cmp(&b.array));
                map
            })
        };
        self.name == other.name
            && self.format == other.format
            && map(self) == map(other)
            && sorted(self) == sorted(other)
    }

    /// Takes array field `index` out, with its entry in the document map (a schema change).
    pub(crate) fn remove_array(&mut self, index: usize) {
        let array = self.arrays.remove(index);
        if let Some(map) = &mut self.map {
            map.arrays.retain(|a| a.array != array.field);
        }
    }

    /// Adds an array field after the others (a schema change; checked by `validate`).
    pub(crate) fn push_array(&mut self, array: ArraySpec) {
        self.arrays.push(array);
    }

    /// Adds a measure after the others of array field `index` (checked by `validate`).
    pub(crate) fn push_measure(&mut self, index: usize, measure: String) {
        self.arrays[index].measures.push(measure);
    }

    /// Sets array field `index`'s layout (a schema change; checked by `validate`).
    pub(crate) fn set_layout(&mut self, index: usize, layout: Layout) {
        self.arrays[index].layout = layout;
    }

    /// Sets array field `index`'s rollup span (a schema change; checked by `validate`).
    pub(crate) fn set_rollup(&mut self, index: usize, span: i64) {
        self.arrays[index].rollup = Some(span);
    }

    /// Renames the collection (checked by `validate`).
    pub(crate) fn rename(&mut self, name: String) {
        self.name = name;
    }

    /// The array fields, in declaration order (the order of arrays in parent records).
    pub fn arrays(&self) -> &[ArraySpec] {
        &self.arrays
    }

    /// The bytes a parent record of this collection adds to its body while its arrays hold
    /// no inline item: a body may be at most `MAX_RECORD_BYTES` minus this.
    pub fn record_overhead_bytes(&self) -> usize {
        crate::record::RECORD_OVERHEAD_BYTES + self.arrays.len() * crate::record::ARRAY_HEADER_BYTES
    }

    /// The index of array field `field`.
    pub fn field_index(&self, field: &str) -> Option<usize> {
        self.arrays.iter().position(|a| a.field == field)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |reason: &str| {
            Err(Error::InvalidName {
                name: self.name.clone(),
                reason: reason.to_string(),
            })
        };
        if self.name.is_empty() {
            return invalid("empty");
        }
        if self.name.len() > MAX_COLLECTION_NAME_BYTES {
            return invalid("longer than 255 bytes");
        }
        if self.name.chars().any(char::is_control) {
            return invalid("contains control characters");
        }
        let schema = |reason: String| {
            Err(Error::InvalidSchema {
                collection: self.name.clone(),
                reason,
            })
        };
        if let Some(field) = self.rollups_of_unknown.first() {
            return schema(format!(
                "a rollup of {field:?}, which is not an array field"
            ));
        }
        if self.arrays.len() > MAX_ARRAYS {
            return schema(format!(
                "{} array fields, more than the {MAX_ARRAYS} allowed",
                self.arrays.len()
            ));
        }
        for (index, array) in self.arrays.iter().enumerate() {
            if array.field.is_empty() || array.field.len() > MAX_COLLECTION_NAME_BYTES {
                return schema(format!(
                    "array field name {:?} is empty or longer than 255 bytes",
                    array.field
                ));
            }
            if self.arrays[..index].iter().any(|a| a.field == array.field) {
                return schema(format!("array field {:?} declared twice", array.field));
            }
            if let Err(reason) = array.layout.validate() {
                return schema(format!("array field {:?}: {reason}", array.field));
            }
            if array.measures.is_empty() || array.measures.len() > crate::item::MAX_MEASURES {
                return schema(format!(
                    "array field {:?} declares {} measures, not 1 to {}",
                    array.field,
                    array.measures.len(),
                    crate::item::MAX_MEASURES
                ));
            }
            match (array.rollup, array.layout) {
                (None, _) => {}
                (Some(span), _) if span <= 0 => {
                    return schema(format!(
                        "array field {:?}: a rollup's span must be positive, not {span}",
                        array.field
                    ));
                }
                (Some(_), Layout::Bucket { .. }) => {}
                (Some(_), layout) => {
                    return schema(format!(
                        "array field {:?} keeps rollups, which only a bucket array can, not {}",
                        array.field,
                        layout.describe()
                    ));
                }
            }
            for (at, measure) in array.measures.iter().enumerate() {
                if measure.is_empty()
                    || measure.len() > MAX_COLLECTION_NAME_BYTES
                    || measure.chars().any(char::is_control)
                {
                    return schema(format!(
                        "measure {measure:?} of array field {:?} is empty, longer than 255 \
                         bytes or holds control characters",
                        array.field
                    ));
                }
                if array.measures[..at].contains(measure) {
                    return schema(format!(
                        "measure {measure:?} of array field {:?} declared twice",
                        array.field
                    ));
                }
            }
        }
        if let Some(map) = &self.map {
            if self.format != DocumentFormat::Bson {
                return schema("a document map needs documents stored as bson".to_string());
            }
            map.validate(|field| self.arrays.iter().any(|a| a.field == field))
                .or_else(schema)?;
        }
        Ok(())
    }

    /// The array fields as the command line declares them: `reviews=subset:5, tags=embed`
    /// (`no array fields` for none), each with its measures when it names its own:
    /// `readings=bucket:360:3600 [temperature humidity]`.
    pub fn describe_arrays(&self) -> String {
        if self.arrays.is_empty() {
            return "no array fields".to_string();
        }
        let fields: Vec<String> = self
            .arrays
            .iter()
            .map(|a| {
                let mut field = format!("{}={}", a.field, a.layout.describe());
                if a.names_its_measures() {
                    field += &format!(" [{}]", a.measures.join(" "));
                }
                if let Some(span) = a.rollup {
                    field += &format!(" rollup {span}");
                }
                field
            })
            .collect();
        fields.join(", ")
    }

    /// The whole schema in words, for a conflict's message: the arrays as
    /// [`describe_arrays`](Self::describe_arrays) gives them, then the document format and
    /// the map when there are any (`readings=bucket:2 [temp], stored as bson, keyed by _id,
    /// readings keyed by t with measures from fields`).
    pub fn describe(&self) -> String {
        let mut described = self.describe_arrays();
        if self.format != DocumentFormat::Bytes {
            described += &format!(", stored as {}", self.format.name());
        }
        if let Some(map) = &self.map {
            described += &format!(", keyed by {}", map.key_field);
            for array in &map.arrays {
                let from_fields = match array.measures {
                    true => " with measures from fields",
                    false => "",
                };
                match &array.item_key {
                    Some(item_key) => {
                        described += &format!(", {} keyed by {item_key}{from_fields}", array.array)
                    }
                    None if array.measures => {
                        described += &format!(", {}{from_fields}", array.array)
                    }
                    None => {}
                }
            }
        }
        described
    }

    /// Writes the spec in its newest form, [`SpecForm::RolledUp`] (a catalog's adds its
    /// slots and layout states after it).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_name(out, &self.name);
        out.put_u16_le(u16_len(self.arrays.len()));
        for array in &self.arrays {
            put_name(out, &array.field);
            array.layout.encode(out);
            out.put_u8(u8_len(array.measures.len()));
            for measure in &array.measures {
                put_name(out, measure);
            }
        }
        out.put_u8(self.format.tag());
        match &self.map {
            None => out.put_u8(0),
            Some(map) => {
                out.put_u8(1);
                map.encode(out);
            }
        }
        for array in &self.arrays {
            // 0 stands for none (a span is always positive).
            out.put_i64_le(array.rollup.unwrap_or(0));
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let mut out = Vec::new();
        self.encode(&mut out);
        out.len()
    }

    /// Reads a spec written in `form`.
    pub(crate) fn decode(bytes: &mut Bytes, form: SpecForm) -> Result<Self, String> {
        if bytes.remaining() < 1 {
            return Err("collection spec truncated".to_string());
        }
        let len = bytes.get_u8() as usize;
        if bytes.remaining() < len + 2 {
            return Err("collection spec truncated".to_string());
        }
        let name = String::from_utf8(bytes.split_to(len).to_vec())
            .map_err(|_| "collection name is not UTF-8".to_string())?;
        let count = bytes.get_u16_le() as usize;
        if count > MAX_ARRAYS {
            return Err(format!("collection {name:?} declares {count} array fields"));
        }
        let mut arrays = Vec::with_capacity(count);
        for _ in 0..count {
            if !bytes.has_remaining() {
                return Err("array spec truncated".to_string());
            }
            let len = bytes.get_u8() as usize;
            if bytes.remaining() < len {
                return Err("array spec truncated".to_string());
            }
            let field = String::from_utf8(bytes.split_to(len).to_vec())
                .map_err(|_| "array field name is not UTF-8".to_string())?;
            let layout = Layout::decode(bytes)?;
            let measures = if form >= SpecForm::Measured {
                decode_measures(bytes)?
            } else {
                vec![DEFAULT_MEASURE.to_string()]
            };
            arrays.push(ArraySpec {
                field,
                layout,
                measures,
                rollup: None,
            });
        }
        let format = if form >= SpecForm::Formatted {
            if !bytes.has_remaining() {
                return Err("collection spec truncated".to_string());
            }
            DocumentFormat::from_tag(bytes.get_u8())?
        } else {
            DocumentFormat::Bytes
        };
        let map = if form >= SpecForm::Mapped {
            if !bytes.has_remaining() {
                return Err("collection spec truncated".to_string());
            }
            match bytes.get_u8() {
                0 => None,
                1 => Some(DocumentMap::decode(bytes)?),
                tag => return Err(format!("document map tag {tag} unknown")),
            }
        } else {
            None
        };
        if form >= SpecForm::RolledUp {
            if bytes.remaining() < 8 * arrays.len() {
                return Err("array rollups truncated".to_string());
            }
            for array in &mut arrays {
                let span = bytes.get_i64_le();
                array.rollup = (span != 0).then_some(span);
            }
        }
        let spec = CollectionSpec {
            name,
            arrays,
            format,
            map,
            rollups_of_unknown: Vec::new(),
        };
        spec.validate().map_err(|e| e.to_string())?;
        Ok(spec)
    }
}

/// An array spec's measure names: a count, then each name's length and bytes (checked by
/// `validate` after).
fn decode_measures(bytes: &mut Bytes) -> Result<Vec<String>, String> {
    let truncated = || "array measures truncated".to_string();
    if !bytes.has_remaining() {
        return Err(truncated());
    }
    let count = bytes.get_u8() as usize;
    if count > crate::item::MAX_MEASURES {
        return Err(format!("an array declares {count} measures"));
    }
    let mut measures = Vec::with_capacity(count);
    for _ in 0..count {
        if !bytes.has_remaining() {
            return Err(truncated());
        }
        let len = bytes.get_u8() as usize;
        if bytes.remaining() < len {
            return Err(truncated());
        }
        let name = String::from_utf8(bytes.split_to(len).to_vec())
            .map_err(|_| "measure name is not UTF-8".to_string())?;
        measures.push(name);
    }
    Ok(measures)
}

/// A collection as the database knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionInfo {
    pub id: CollectionId,
    pub spec: CollectionSpec,
    /// Each array field's slot, in field order, increasing: the number its records' states
    /// and its tree keys carry for it (`record::Shape`). A collection created with `n` arrays
    /// has slots 0 to `n - 1`; an array added later gets `next_slot`; a dropped array's slot
    /// is never given out again.
    pub slots: Vec<u16>,
    /// The slot the next array added gets.
    pub next_slot: u16,
    /// Each array field's layout state, in field order: the parity its states under the
    /// current layout carry, and the previous layout while a migration runs.
    pub layouts: Vec<LayoutState>,
}

impl CollectionInfo {
    /// Collection `id` as created with `spec`: its arrays in slots 0, 1, 2, ...
    pub fn new(id: CollectionId, spec: CollectionSpec) -> Self {
        let arrays = spec.arrays.len();
        CollectionInfo {
            id,
            spec,
            slots: (0..u16_len(arrays)).collect(),
            next_slot: u16_len(arrays),
            layouts: vec![LayoutState::default(); arrays],
        }
    }

    /// Where its records' array states go.
    pub(crate) fn shape(&self) -> Shape<'_> {
        Shape {
            slots: &self.slots,
            next_slot: self.next_slot,
        }
    }

    /// The slot of array field `field` (its index): what its tree keys carry.
    pub fn slot(&self, field: usize) -> usize {
        usize::from(self.slots[field])
    }

    /// The array field whose slot is `slot`, if it is a live one.
    pub fn field_of_slot(&self, slot: usize) -> Option<usize> {
        self.slots.iter().position(|&s| usize::from(s) == slot)
    }

    /// Writes the slots and layout states (the [`SpecForm::Migrating`] form).
    pub(crate) fn encode_slots(&self, out: &mut Vec<u8>) {
        out.put_u16_le(self.next_slot);
        for (slot, state) in self.slots.iter().zip(&self.layouts) {
            out.put_u16_le(*slot);
            state.encode(out);
        }
    }

    /// Reads the slots (and, in [`SpecForm::Migrating`], the layout states)
    /// [`CollectionInfo::encode_slots`] wrote after `spec`.
    pub(crate) fn decode_slots(
        id: CollectionId,
        spec: CollectionSpec,
        bytes: &mut Bytes,
        form: SpecForm,
    ) -> Result<Self, String> {
        let arrays = spec.arrays.len();
        let truncated = || "collection slots truncated".to_string();
        if bytes.remaining() < 2 {
            return Err(truncated());
        }
        let next_slot = bytes.get_u16_le();
        let mut slots = Vec::with_capacity(arrays);
        let mut layouts = Vec::with_capacity(arrays);
        for _ in 0..arrays {
            if bytes.remaining() < 2 {
                return Err(truncated());
            }
            slots.push(bytes.get_u16_le());
            layouts.push(match form {
                SpecForm::Migrating | SpecForm::RolledUp => LayoutState::decode(bytes)?,
                _ => LayoutState::default(),
            });
        }
        if slots.windows(2).any(|w| w[0] >= w[1])
            || slots.last().is_some_and(|&s| s >= next_slot)
            || next_slot > MAX_SLOTS
        {
            return Err(format!(
                "collection {:?}: array slots {slots:?} out of order or past {next_slot}",
                spec.name
            ));
        }
        Ok(CollectionInfo {
            id,
            spec,
            slots,
            next_slot,
            layouts,
        })
    }
}

/// What a schema change left to be reclaimed: every record of a dropped collection, or the
/// states, tails, chunks and markers of a dropped array's slot. Readers never see it; the
/// maintenance thread deletes it in steps, then takes it off the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Retired {
    pub collection: CollectionId,
    /// The dropped array's slot; `None` for the whole collection.
    pub slot: Option<u16>,
}

/// The slot a retired whole collection is written with.
const WHOLE_COLLECTION: u16 = u16::MAX;

/// All collections, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    pub by_name: BTreeMap<String, Arc<CollectionInfo>>,
    pub next_id: CollectionId,
    /// What dropped collections and arrays left to reclaim, in order.
    pub retired: Vec<Retired>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Result<&Arc<CollectionInfo>> {
        self.by_name
            .get(name)
            .ok_or_else(|| Error::UnknownCollection {
                name: name.to_string(),
            })
    }

    pub fn by_id(&self, id: CollectionId) -> Option<&Arc<CollectionInfo>> {
        self.by_name.values().find(|info| info.id == id)
    }

    pub fn insert(&mut self, info: CollectionInfo) {
        self.next_id = self.next_id.max(info.id + 1);
        self.by_name.insert(info.spec.name.clone(), Arc::new(info));
    }

    /// Sets the schema of collection `info.id`, under its (perhaps new) name; adds it when
    /// the catalog lacks it. Fails when another collection has that name.
    pub fn set(&mut self, info: CollectionInfo) -> Result<(), String> {
        if let Some(other) = self.by_name.get(&info.spec.name)
            && other.id != info.id
        {
            return Err(format!(
                "collection {} set under the name of collection {}",
                info.id, other.id
            ));
        }
        self.by_name.retain(|_, known| known.id != info.id);
        self.insert(info);
        Ok(())
    }

    /// Drops collection `id`: gone from the catalog, its records retired. Fails when the
    /// catalog lacks it.
    pub fn drop_collection(&mut self, id: CollectionId) -> Result<(), String> {
        let before = self.by_name.len();
        self.by_name.retain(|_, known| known.id != id);
        if self.by_name.len() == before {
            return Err(format!("collection {id} dropped but not there"));
        }
        // The whole collection's reclaim takes its dropped arrays' too.
        self.retired.retain(|r| r.collection != id);
        self.retired.push(Retired {
            collection: id,
            slot: None,
        });
        Ok(())
    }

    /// Lists `retired` to be reclaimed (once).
    pub fn retire(&mut self, retired: Retired) {
        if !self.retired.contains(&retired) {
            self.retired.push(retired);
        }
    }

    /// Takes `retired` off the list: what it names is gone.
    pub fn reclaimed(&mut self, retired: Retired) {
        self.retired.retain(|r| *r != retired);
    }

    /// Whether tree records of collection `id` (of its array `slot` when given) are what a
    /// drop left to reclaim.
    pub fn is_retired(&self, id: CollectionId, slot: Option<usize>) -> bool {
        self.retired.iter().any(|r| {
            r.collection == id
                && match (r.slot, slot) {
                    (None, _) => true,
                    (Some(retired), Some(slot)) => usize::from(retired) == slot,
                    (Some(_), None) => false,
                }
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.next_id);
        out.put_u32_le(u32_len(self.by_name.len()));
        for info in self.by_name.values() {
            out.put_u32_le(info.id);
            info.spec.encode(out);
            info.encode_slots(out);
        }
        out.put_u32_le(u32_len(self.retired.len()));
        for retired in &self.retired {
            out.put_u32_le(retired.collection);
            out.put_u16_le(retired.slot.unwrap_or(WHOLE_COLLECTION));
        }
    }

    /// Reads a catalog whose specs are in `form` (slots and retired records only in
    /// [`SpecForm::Slotted`]).
    pub(crate) fn decode(bytes: &mut Bytes, form: SpecForm) -> Result<Self, String> {
        if bytes.remaining() < 8 {
            return Err("catalog truncated".to_string());
        }
        let next_id = bytes.get_u32_le();
        let count = bytes.get_u32_le() as usize;
        if count > MAX_COLLECTIONS {
            return Err(format!("catalog claims {count} collections"));
        }
        let mut catalog = Catalog {
            by_name: BTreeMap::new(),
            next_id,
            retired: Vec::new(),
        };
        for _ in 0..count {
            if bytes.remaining() < 4 {
                return Err("catalog truncated".to_string());
            }
            let id = bytes.get_u32_le();
            let spec = CollectionSpec::decode(bytes, form.of_spec())?;
            if id >= next_id
                || catalog.by_id(id).is_some()
                || catalog.by_name.contains_key(&spec.name)
            {
                return Err(format!(
                    "collection {:?} has a duplicate or out-of-range id {id}",
                    spec.name
                ));
            }
            let info = match form {
                SpecForm::Slotted | SpecForm::Migrating | SpecForm::RolledUp => {
                    CollectionInfo::decode_slots(id, spec, bytes, form)?
                }
                _ => CollectionInfo::new(id, spec),
            };
            catalog
                .by_name
                .insert(info.spec.name.clone(), Arc::new(info));
        }
        if form >= SpecForm::Slotted {
            if bytes.remaining() < 4 {
                return Err("catalog truncated".to_string());
            }
            let count = bytes.get_u32_le() as usize;
            if count > bytes.remaining() / 6 {
                return Err(format!("catalog claims {count} retired records"));
            }
            for _ in 0..count {
                let collection = bytes.get_u32_le();
                let slot = bytes.get_u16_le();
                let retired = Retired {
                    collection,
                    slot: (slot != WHOLE_COLLECTION).then_some(slot),
                };
                if collection >= next_id || catalog.retired.contains(&retired) {
                    return Err(format!(
                        "retired record {retired:?} duplicate or out of range"
                    ));
                }
                catalog.retired.push(retired);
            }
        }
        Ok(catalog)
    }
}

#[cfg(test)]
mod tests;
