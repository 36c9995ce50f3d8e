//! Schema changes from the command line and `exec`: `alter` and `drop`.

use skewdb::{Alteration, Layout};

use crate::failure::Failure;

/// The alteration the flags (or an `exec` op's fields) ask for: `renamed` the new name,
/// `added` arrays as FIELD=LAYOUT, `dropped` array fields, `measured` measures as
/// FIELD=NAME. `names` are what the input calls the added arrays and measures, for messages.
pub fn alteration(
    renamed: Option<String>,
    dropped: &[String],
    added: &[String],
    measured: &[String],
    names: [&str; 2],
) -> Result<Alteration, Failure> {
    let [add_flag, measure_flag] = names;
    let mut alteration = Alteration::new();
    for field in dropped {
        alteration = alteration.drop_array(field);
    }
    for added in added {
        let (field, layout) = added.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{add_flag} {added:?} is not FIELD=LAYOUT"))
        })?;
        let layout = Layout::parse(layout)
            .map_err(|e| Failure::invalid_input(format!("{add_flag} {added:?}: {e}")))?;
        alteration = alteration.add_array(field, layout);
    }
    for measured in measured {
        let (field, name) = measured.split_once('=').ok_or_else(|| {
            Failure::invalid_input(format!("{measure_flag} {measured:?} is not FIELD=NAME"))
        })?;
        alteration = alteration.add_measure(field, name);
    }
    if let Some(to) = renamed {
        alteration = alteration.rename(to);
    }
    Ok(alteration)
}
