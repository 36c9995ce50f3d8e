//! A cluster's writes as `skewdb exec` spells them: JSON lines, the ops between two
//! `{"op":"commit"}` lines one atomic batch, each batch one [`Request`] (one log entry).
//! Besides `exec`'s `put`, `del`, `push`, `remove` and `expire`, a cluster takes `create`
//! (`{"op":"create","coll":..,"arrays":[{"field":..,"layout":..}]}`), since its
//! collections are made through the log too. Keys, bodies and payloads are strings or
//! `{"base64": ".."}`; collections stored as BSON documents are not mapped here.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::api::JsonBytes;
use crate::{ArrayDecl, Op, Request};

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
        arrays: Vec<ArrayDecl>,
    },
    Commit,
}

impl Line {
    fn into_op(self) -> Option<Op> {
        Some(match self {
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
            Line::Create { coll, arrays } => Op::Create {
                collection: coll,
                arrays,
            },
            Line::Commit => return None,
        })
    }
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
                ops.extend(line.into_op());
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
        ] {
            let (batches, _) = parse(&format!("{line}\n{{\"op\":\"commit\"}}\n"));
            let error = batches[0].request.as_ref().unwrap_err();
            assert!(error.message.contains(wanted), "{line}: {}", error.message);
        }
        let (batches, unfinished) = parse("");
        assert!(batches.is_empty() && unfinished.is_none());
    }
}
