//! A cluster's writes as `skewdb exec` spells them: JSON lines, the ops between two
//! `{"op":"commit"}` lines one atomic batch, each batch one [`Request`] (one log entry).
//! Besides `exec`'s `put`, `del`, `push`, `remove`, `expire`, `alter` (spans of
//! `set_rollup` in the keys' units) and `drop`, a cluster takes `create`
//! (`{"op":"create","coll":..,"arrays":[{"field":..,"layout":..}]}`), since its
//! collections are made through the log too. A cluster's collections hold the
//! application's bytes: keys, bodies and payloads are strings or `{"base64": ".."}`, a
//! create may say `"bytes": true` (as the local `exec` must for such a collection) and
//! one that asks for documents is refused.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::api::JsonBytes;
use crate::{ArrayDecl, Op, Request};

/// Why a create of a collection of documents is refused.
const DOCUMENTS_REFUSED: &str = "a cluster's collections hold the application's bytes \
     (\"bytes\": true, the default): it does not map documents, so \"bytes\": false, \
     \"key_field\" and \"item_key\" are refused";

/// An array of a create line: an [`ArrayDecl`], every field checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrayLine {
    field: String,
    layout: String,
    #[serde(default)]
    measures: Vec<String>,
    #[serde(default)]
    rollup: Option<i64>,
    /// Named only to be refused with a reason, as `key_field`.
    #[serde(default)]
    item_key: Option<String>,
}

impl ArrayLine {
    fn into_decl(self) -> ArrayDecl {
        ArrayDecl {
            field: self.field,
            layout: self.layout,
            measures: self.measures,
            rollup: self.rollup,
        }
    }
}

/// One input line.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Put {
        coll: String,
        key: JsonBytes,
        body: JsonBytes,
    },
    Del {
        coll: String,
        key: JsonBytes,
    },
    Push {
        coll: String,
        key: JsonBytes,
        field: String,
        #[serde(default)]
        item_key: Option<i64>,
        #[serde(default)]
        value: Option<f64>,
        #[serde(default)]
        measures: BTreeMap<String, f64>,
        #[serde(default)]
        payload: JsonBytes,
    },
    Remove {
        coll: String,
        key: JsonBytes,
        field: String,
        item_key: i64,
    },
    Expire {
        coll: String,
        key: JsonBytes,
        field: String,
        before: i64,
    },
    Create {
        coll: String,
        #[serde(default)]
        arrays: Vec<ArrayLine>,
        /// A cluster's collections hold bytes: `true` may be said, `false` is refused.
        #[serde(default)]
        bytes: Option<bool>,
        /// Named only to be refused with a reason: a cluster does not map documents.
        #[serde(default)]
        key_field: Option<String>,
    },
    Alter {
        coll: String,
        #[serde(default)]
        rename: Option<String>,
        #[serde(default)]
        drop_array: Vec<String>,
        #[serde(default)]
        add_array: Vec<String>,
        #[serde(default)]
        add_measure: Vec<String>,
        #[serde(default)]
        set_layout: Vec<String>,
        #[serde(default)]
        set_rollup: Vec<String>,
    },
    Drop {
        coll: String,
    },
    Commit,
}

impl Line {
    /// The op of this line (`None` for a commit), or why the line is refused.
    fn into_op(self) -> Result<Option<Op>, String> {
        Ok(Some(match self {
            Line::Put { coll, key, body } => Op::Put {
                collection: coll,
                key: key.0,
                body: body.0,
            },
            Line::Del { coll, key } => Op::Delete {
                collection: coll,
                key: key.0,
            },
            Line::Push {
                coll,
                key,
                field,
                item_key,
                value,
                measures,
                payload,
            } => Op::Push {
                collection: coll,
                key: key.0,
                field,
                item_key,
                value,
                measures: measures.into_iter().collect(),
                payload: payload.0,
            },
            Line::Remove {
                coll,
                key,
                field,
                item_key,
            } => Op::Remove {
                collection: coll,
                key: key.0,
                field,
                item_key,
            },
            Line::Expire {
                coll,
                key,
                field,
                before,
            } => Op::Expire {
                collection: coll,
                key: key.0,
                field,
                before,
            },
            Line::Create {
                coll,
                arrays,
                bytes,
                key_field,
            } => {
                let item_keyed = arrays.iter().any(|a| a.item_key.is_some());
                if bytes == Some(false) || key_field.is_some() || item_keyed {
                    return Err(DOCUMENTS_REFUSED.to_string());
                }
                Op::Create {
                    collection: coll,
                    arrays: arrays.into_iter().map(ArrayLine::into_decl).collect(),
                }
            }
            Line::Alter {
                coll,
                rename,
                drop_array,
                add_array,
                add_measure,
                set_layout,
                set_rollup,
            } => {
                if rename.is_none()
                    && [
                        &drop_array,
                        &add_array,
                        &add_measure,
                        &set_layout,
                        &set_rollup,
                    ]
                    .iter()
                    .all(|changes| changes.is_empty())
                {
                    return Err("an \"alter\" op needs rename, add_array, drop_array, \
                                add_measure, set_layout or set_rollup"
                        .to_string());
                }
                Op::Alter {
                    collection: coll,
                    rename,
                    drop_arrays: drop_array,
                    add_arrays: add_array
                        .iter()
                        .map(|given| {
                            let (field, layout) = pair(given, "add_array", "FIELD=LAYOUT")?;
                            Ok(ArrayDecl {
                                field,
                                layout,
                                measures: Vec::new(),
                                rollup: None,
                            })
                        })
                        .collect::<Result<_, String>>()?,
                    add_measures: pairs(&add_measure, "add_measure", "FIELD=NAME")?,
                    set_layouts: pairs(&set_layout, "set_layout", "FIELD=LAYOUT")?,
                    set_rollups: pairs(&set_rollup, "set_rollup", "FIELD=SPAN")?
                        .into_iter()
                        .map(|(field, span)| match span.parse::<i64>() {
                            Ok(span) => Ok((field, span)),
                            Err(_) => Err(format!(
                                "set_rollup {field}={span}: a span in the keys' units, an integer"
                            )),
                        })
                        .collect::<Result<_, String>>()?,
                }
            }
            Line::Drop { coll } => Op::Drop { collection: coll },
            Line::Commit => return Ok(None),
        }))
    }
}

/// `given` split at its first `=`, or why it is not `shape` (in field `name`).
fn pair(given: &str, name: &str, shape: &str) -> Result<(String, String), String> {
    given
        .split_once('=')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .ok_or_else(|| format!("{name} {given:?} is not {shape}"))
}

/// Every one of `given` split as [`pair`] splits one.
fn pairs(given: &[String], name: &str, shape: &str) -> Result<Vec<(String, String)>, String> {
    given.iter().map(|one| pair(one, name, shape)).collect()
}

/// A bad input line: its number (from 1) and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

/// One batch of the input: the line of its commit, and its request, or the first bad line
/// in it (which drops the whole batch, as `exec` drops it).
#[derive(Clone, Debug, PartialEq)]
pub struct ExecBatch {
    pub commit_line: usize,
    pub request: Result<Request, LineError>,
}

/// The batches of `input`, in order; and, when the input ends inside a batch (ops after the
/// last commit, which apply nothing), the error saying so.
pub fn parse(input: &str) -> (Vec<ExecBatch>, Option<LineError>) {
    let mut batches = Vec::new();
    let mut ops = Vec::new();
    let mut bad: Option<LineError> = None;
    let mut pending = 0usize;
    let mut number = 0;
    for (at, line) in input.lines().enumerate() {
        number = at + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<Line>(line).map_err(|e| LineError {
            line: number,
            message: e.to_string(),
        });
        match parsed {
            Ok(Line::Commit) => {
                let request = match bad.take() {
                    Some(error) => Err(error),
                    None => Ok(Request {
                        ops: std::mem::take(&mut ops),
                    }),
                };
                ops.clear();
                pending = 0;
                batches.push(ExecBatch {
                    commit_line: number,
                    request,
                });
            }
            Ok(line) => {
                match line.into_op() {
                    Ok(op) => ops.extend(op),
                    Err(message) => {
                        bad.get_or_insert(LineError {
                            line: number,
                            message,
                        });
                    }
                }
                pending += 1;
            }
            Err(error) => {
                bad.get_or_insert(error);
                pending += 1;
            }
        }
    }
    let unfinished = (pending > 0).then(|| LineError {
        line: number,
        message: format!(
            "input ended inside a batch ({pending} lines after the last commit): \
             nothing of it was applied"
        ),
    });
    (batches, unfinished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_split_at_commits_and_a_bad_line_drops_only_its_own() {
        let input = r#"{"op":"create","coll":"s","arrays":[{"field":"r","layout":"bucket:4"}]}
{"op":"commit"}
{"op":"put","coll":"s","key":"a","body":{"base64":"AAE="}}
{"op":"push","coll":"s","key":"a","field":"r","item_key":5,"value":1.5,"payload":"p"}
{"op":"commit"}

{"op":"put","coll":"s","key":"b","body":"x","extra":1}
{"op":"del","coll":"s","key":"b"}
{"op":"commit"}
{"op":"remove","coll":"s","key":"a","field":"r","item_key":5}
{"op":"expire","coll":"s","key":"a","field":"r","before":9}
{"op":"commit"}
{"op":"del","coll":"s","key":"a"}
"#;
        let (batches, unfinished) = parse(input);
        assert_eq!(batches.len(), 4);
        assert_eq!(batches[0].commit_line, 2);
        let second = batches[1].request.as_ref().unwrap();
        assert_eq!(
            second.ops[0],
            Op::Put {
                collection: "s".into(),
                key: b"a".to_vec(),
                body: vec![0, 1],
            }
        );
        assert!(matches!(
            &second.ops[1],
            Op::Push { item_key: Some(5), value: Some(v), payload, .. } if *v == 1.5 && payload == b"p"
        ));
        let error = batches[2].request.as_ref().unwrap_err();
        assert_eq!(error.line, 7);
        assert!(error.message.contains("extra"), "{}", error.message);
        assert_eq!(batches[3].request.as_ref().unwrap().ops.len(), 2);
        assert_eq!(unfinished.unwrap().line, 13);
    }

    #[test]
    fn bad_lines_name_what_is_wrong() {
        for (line, wanted) in [
            ("not json", "expected"),
            (r#"{"op":"fly","coll":"s"}"#, "unknown variant"),
            (
                r#"{"op":"put","coll":"s","key":"a"}"#,
                "missing field `body`",
            ),
            (
                r#"{"op":"put","coll":"s","key":{"base64":"!!"},"body":""}"#,
                "base64",
            ),
            (
                r#"{"op":"remove","coll":"s","key":"a","field":"r","item_key":1.5}"#,
                "i64",
            ),
            (r#"{"op":"alter","coll":"s"}"#, "needs rename"),
            (
                r#"{"op":"alter","coll":"s","set_layout":["r"]}"#,
                "is not FIELD=LAYOUT",
            ),
            (
                r#"{"op":"alter","coll":"s","set_rollup":["r=1h"]}"#,
                "an integer",
            ),
            (
                r#"{"op":"alter","coll":"s","set_layouts":["r=embed"]}"#,
                "unknown field",
            ),
            (
                r#"{"op":"create","coll":"s","bytes":false}"#,
                "does not map documents",
            ),
            (
                r#"{"op":"create","coll":"s","key_field":"sku"}"#,
                "does not map documents",
            ),
            (
                r#"{"op":"create","coll":"s","arrays":[{"field":"r","layout":"embed","item_key":"at"}]}"#,
                "does not map documents",
            ),
            (
                r#"{"op":"create","coll":"s","arrays":[{"field":"r","layout":"embed","keep":3}]}"#,
                "unknown field `keep`",
            ),
        ] {
            let (batches, _) = parse(&format!("{line}\n{{\"op\":\"commit\"}}\n"));
            let error = batches[0].request.as_ref().unwrap_err();
            assert!(error.message.contains(wanted), "{line}: {}", error.message);
        }
        let (batches, unfinished) = parse("");
        assert!(batches.is_empty() && unfinished.is_none());
    }

    #[test]
    fn a_create_of_bytes_may_say_so() {
        let said = r#"{"op":"create","coll":"s","bytes":true,"arrays":[{"field":"r","layout":"bucket:4","measures":["t"],"rollup":60}]}"#;
        let unsaid = r#"{"op":"create","coll":"s","arrays":[{"field":"r","layout":"bucket:4","measures":["t"],"rollup":60}]}"#;
        let op = |line: &str| {
            let (batches, _) = parse(&format!("{line}\n{{\"op\":\"commit\"}}\n"));
            batches[0].request.as_ref().unwrap().ops.clone()
        };
        let wanted = [Op::Create {
            collection: "s".to_string(),
            arrays: vec![ArrayDecl {
                field: "r".to_string(),
                layout: "bucket:4".to_string(),
                measures: vec!["t".to_string()],
                rollup: Some(60),
            }],
        }];
        assert_eq!(op(said), wanted);
        assert_eq!(op(unsaid), wanted);
    }

    #[test]
    fn alter_and_drop_lines_are_their_ops() {
        let line = r#"{"op":"alter","coll":"s","rename":"t","drop_array":["old"],"add_array":["b=bucket:4:60"],"add_measure":["r=weight"],"set_layout":["r=subset:3"],"set_rollup":["b=120"]}"#;
        let (batches, _) = parse(&format!("{line}\n{{\"op\":\"commit\"}}\n"));
        let request = batches[0].request.as_ref().unwrap();
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            request.ops,
            [Op::Alter {
                collection: "s".to_string(),
                rename: Some("t".to_string()),
                drop_arrays: vec!["old".to_string()],
                add_arrays: vec![ArrayDecl {
                    field: "b".to_string(),
                    layout: "bucket:4:60".to_string(),
                    measures: Vec::new(),
                    rollup: None,
                }],
                add_measures: vec![pair("r", "weight")],
                set_layouts: vec![pair("r", "subset:3")],
                set_rollups: vec![("b".to_string(), 120)],
            }]
        );
        let (batches, _) = parse("{\"op\":\"drop\",\"coll\":\"s\"}\n{\"op\":\"commit\"}\n");
        let request = batches[0].request.as_ref().unwrap();
        assert_eq!(
            request.ops,
            [Op::Drop {
                collection: "s".to_string()
            }]
        );
    }
}
