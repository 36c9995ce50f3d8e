//! Schema changes from the command line and `exec`: `alter` and `drop`.

use skewdb::{Alteration, ArraySpec, CollectionSpec, DocumentFormat, DocumentMap, Layout};

use crate::failure::Failure;
use crate::item_key::SpanArg;

/// The spec `skewdb create` (or an `exec` create op) asks for: arrays as FIELD=LAYOUT,
/// measures as FIELD=NAME,NAME.. (at most once a field), rollups as FIELD=SPAN (an integer
/// in key units, or a duration on a time series). `names` are what the input calls the
/// arrays, measures and rollups, for messages.
pub fn collection_spec(
    name: &str,
    arrays: &[String],
    measures: &[String],
    rollups: &[String],
    names: [&str; 3],
) -> Result<CollectionSpec, Failure> {
    let [array_flag, measures_flag, rollup_flag] = names;
    let mut named: Vec<(&str, Vec<&str>)> = Vec::new();
    for given in measures {
        let (field, names) = given.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{measures_flag} {given:?} is not FIELD=NAMES"))
        })?;
        if named.iter().any(|(seen, _)| *seen == field) {
            let message = format!("{measures_flag} names field {field:?} twice");
            return Err(Failure::invalid_input(message));
        }
        named.push((field, names.split(',').collect()));
    }
    let mut spec = CollectionSpec::new(name);
    for array in arrays {
        let (field, layout) = array.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{array_flag} {array:?} is not FIELD=LAYOUT"))
        })?;
        let layout = crate::item_key::layout(layout)
            .map_err(|e| Failure::invalid_input(format!("{array_flag} {array:?}: {e}")))?;
        spec = match named.iter().position(|(f, _)| *f == field) {
            Some(at) => spec.array_with_measures(field, layout, named.remove(at).1),
            None => spec.array(field, layout),
        };
    }
    if let Some((field, _)) = named.first() {
        let message = format!("{measures_flag} names {field:?}, which no {array_flag} declares");
        return Err(Failure::invalid_input(message));
    }
    for given in rollups {
        let (field, span) = given.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{rollup_flag} {given:?} is not FIELD=SPAN"))
        })?;
        let array = spec.arrays().iter().find(|a| a.field == field);
        let array = array.ok_or_else(|| {
            let message = format!("{rollup_flag} names {field:?}, which no {array_flag} declares");
            Failure::invalid_input(message)
        })?;
        let span = span
            .parse::<SpanArg>()
            .and_then(|span| span.resolve(array))
            .map_err(|e| Failure::invalid_input(format!("{rollup_flag} {given:?}: {e}")))?;
        spec = spec.rollup(field, span);
    }
    Ok(spec)
}

/// `spec` as a collection of documents: stored as BSON, its parents keyed by body field
/// `key_field`, each array's items by the element field `item_keys` names for it (`F` for
/// every array, `ARRAY=F` for one), and the measures of the arrays in `declared` (those given
/// names) read from their elements' fields of those names.
pub fn of_documents(
    spec: CollectionSpec,
    key_field: &str,
    item_keys: &[String],
    declared: &[&str],
) -> Result<CollectionSpec, Failure> {
    let fields: Vec<&str> = spec.arrays().iter().map(|a| a.field.as_str()).collect();
    let mut keyed: Vec<Option<&str>> = vec![None; fields.len()];
    for given in item_keys {
        match given.split_once('=') {
            Some((array, name)) => match fields.iter().position(|f| *f == array) {
                Some(at) => keyed[at] = Some(name),
                None => {
                    let message =
                        format!("--item-key {given:?} names {array:?}, which no --array declares");
                    return Err(Failure::invalid_input(message));
                }
            },
            None => keyed.iter_mut().for_each(|key| *key = Some(given)),
        }
    }
    if key_field.is_empty() || keyed.iter().flatten().any(|name| name.is_empty()) {
        return Err(Failure::invalid_input("a document field's name is empty"));
    }
    let mut map = DocumentMap::new(key_field);
    for (field, item_key) in fields.iter().zip(&keyed) {
        map = map.array(*field, *item_key, declared.contains(field));
    }
    Ok(spec.stored_as(DocumentFormat::Bson).mapped(map))
}

/// What an alteration asks for, as the flags (or an `exec` op's fields) give it: the new
/// name, arrays to drop, arrays to add as FIELD=LAYOUT, measures to add as FIELD=NAME,
/// layouts to set as FIELD=LAYOUT, and rollups to set as FIELD=SPAN.
#[derive(Default)]
pub struct Changes {
    pub rename: Option<String>,
    pub drop_arrays: Vec<String>,
    pub add_arrays: Vec<String>,
    pub add_measures: Vec<String>,
    pub set_layouts: Vec<String>,
    pub set_rollups: Vec<String>,
}

/// The alteration `changes` ask for of a collection whose spec is `current` (if it
/// exists). `names` are what the input calls the added arrays, measures, set layouts and
/// set rollups, for messages. A rollup's span is an integer in the array's key units, or a
/// duration (`1d`) on a time series: the array as the alteration leaves it (added, or moved
/// to another layout) says which.
pub fn alteration(
    changes: Changes,
    names: [&str; 4],
    current: Option<&CollectionSpec>,
) -> Result<Alteration, Failure> {
    let [add_flag, measure_flag, layout_flag, rollup_flag] = names;
    let field_layout = |given: &str, flag: &str| -> Result<(String, Layout), Failure> {
        let (field, layout) = given.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{flag} {given:?} is not FIELD=LAYOUT"))
        })?;
        let layout = crate::item_key::layout(layout)
            .map_err(|e| Failure::invalid_input(format!("{flag} {given:?}: {e}")))?;
        Ok((field.to_string(), layout))
    };
    let mut alteration = Alteration::new();
    // The array each field names once the alteration's drops, additions and moves apply.
    let mut arrays: Vec<ArraySpec> = current.map_or_else(Vec::new, |spec| spec.arrays().to_vec());
    arrays.retain(|array| !changes.drop_arrays.contains(&array.field));
    for field in &changes.drop_arrays {
        alteration = alteration.drop_array(field);
    }
    for added in &changes.add_arrays {
        let (field, layout) = field_layout(added, add_flag)?;
        arrays.push(ArraySpec {
            field: field.clone(),
            layout,
            measures: Vec::new(),
            rollup: None,
        });
        alteration = alteration.add_array(field, layout);
    }
    for measured in &changes.add_measures {
        let (field, name) = measured.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{measure_flag} {measured:?} is not FIELD=NAME"))
        })?;
        alteration = alteration.add_measure(field, name);
    }
    for set in &changes.set_layouts {
        let (field, layout) = field_layout(set, layout_flag)?;
        if let Some(array) = arrays.iter_mut().find(|array| array.field == field) {
            array.layout = layout;
        }
        alteration = alteration.set_layout(field, layout);
    }
    for given in &changes.set_rollups {
        let (field, span) = given.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{rollup_flag} {given:?} is not FIELD=SPAN"))
        })?;
        let span = match span.parse::<SpanArg>() {
            Ok(SpanArg::Integer(span)) => span,
            Ok(duration) => {
                // Only a duration needs the array; an unknown field is the engine's to say.
                let array = arrays.iter().find(|array| array.field == field);
                let array = array.ok_or_else(|| {
                    let message = format!("{rollup_flag} {given:?}: no array field {field:?}");
                    Failure::invalid_input(message)
                })?;
                duration
                    .resolve(array)
                    .map_err(|e| Failure::invalid_input(format!("{rollup_flag} {given:?}: {e}")))?
            }
            Err(e) => {
                return Err(Failure::invalid_input(format!(
                    "{rollup_flag} {given:?}: {e}"
                )));
            }
        };
        alteration = alteration.set_rollup(field, span);
    }
    if let Some(to) = changes.rename {
        alteration = alteration.rename(to);
    }
    Ok(alteration)
}
