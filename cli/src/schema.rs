//! Schema changes from the command line and `exec`: `alter` and `drop`.

use skewdb::{Alteration, Layout};

use crate::failure::Failure;

/// What an alteration asks for, as the flags (or an `exec` op's fields) give it: the new
/// name, arrays to drop, arrays to add as FIELD=LAYOUT, measures to add as FIELD=NAME, and
/// layouts to set as FIELD=LAYOUT.
#[derive(Default)]
pub struct Changes {
    pub rename: Option<String>,
    pub drop_arrays: Vec<String>,
    pub add_arrays: Vec<String>,
    pub add_measures: Vec<String>,
    pub set_layouts: Vec<String>,
}

/// The alteration `changes` ask for. `names` are what the input calls the added arrays,
/// measures and set layouts, for messages.
pub fn alteration(changes: Changes, names: [&str; 3]) -> Result<Alteration, Failure> {
    let [add_flag, measure_flag, layout_flag] = names;
    let field_layout = |given: &str, flag: &str| -> Result<(String, Layout), Failure> {
        let (field, layout) = given.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{flag} {given:?} is not FIELD=LAYOUT"))
        })?;
        let layout = Layout::parse(layout)
            .map_err(|e| Failure::invalid_input(format!("{flag} {given:?}: {e}")))?;
        Ok((field.to_string(), layout))
    };
    let mut alteration = Alteration::new();
    for field in &changes.drop_arrays {
        alteration = alteration.drop_array(field);
    }
    for added in &changes.add_arrays {
        let (field, layout) = field_layout(added, add_flag)?;
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
        alteration = alteration.set_layout(field, layout);
    }
    if let Some(to) = changes.rename {
        alteration = alteration.rename(to);
    }
    Ok(alteration)
}
