//! Access traces written by the engine's `Options::cache_trace`, read back for replay.

use std::path::Path;

use skewdb::Result;
use skewdb::policy::DROP_CLASS;

use crate::Simulator;

fn io(source: std::io::Error) -> skewdb::Error {
    skewdb::Error::Io {
        op: "read trace",
        file: String::new(),
        source,
    }
}

/// Reads the requests of a trace file written by `Options::cache_trace` back as `(object,
/// bytes)`.
pub fn read_trace(path: &Path) -> Result<Vec<(u64, u64)>> {
    Ok(read_classed_trace(path)?.requests)
}

/// A trace read back.
#[derive(Debug, Default, PartialEq)]
pub struct ClassedTrace {
    /// Its requests, `(object, bytes)`.
    pub requests: Vec<(u64, u64)>,
    /// For each request, whether its object is a B+tree inner page (class `inner`), which
    /// the policies keep apart.
    pub inner: Vec<bool>,
    /// The objects the cache dropped (lines of class `drop`: no reader of the current
    /// version could ask for them), each after the number of requests made before it.
    pub drops: Vec<(usize, u64)>,
}

impl ClassedTrace {
    /// Keeps the first `requests` requests and the drops among them.
    pub fn truncate(&mut self, requests: usize) {
        self.requests.truncate(requests);
        self.inner.truncate(requests);
        self.drops.retain(|&(at, _)| at < requests);
    }

    /// Replays the trace through `sim`, its drops in their places; returns the hits from
    /// request `from` on.
    pub fn replay(&self, sim: &mut Simulator<u64>, from: usize) -> u64 {
        let mut drops = self.drops.iter().peekable();
        let mut hits = 0;
        for (at, (&(id, bytes), &inner)) in self.requests.iter().zip(&self.inner).enumerate() {
            while let Some(&(_, dropped)) = drops.next_if(|(before, _)| *before == at) {
                sim.remove(&dropped);
            }
            if sim.access_as(id, bytes, inner) && at >= from {
                hits += 1;
            }
        }
        hits
    }
}

/// [`read_trace`], with each request's class and the drops between them.
pub fn read_classed_trace(path: &Path) -> Result<ClassedTrace> {
    let text = std::fs::read_to_string(path).map_err(io)?;
    let mut trace = ClassedTrace::default();
    for line in text.lines().skip(1) {
        let mut fields = line.split(',');
        let (_, id, bytes, class) = (fields.next(), fields.next(), fields.next(), fields.next());
        let parse = |f: Option<&str>| f.and_then(|f| f.parse::<u64>().ok());
        match (parse(id), parse(bytes), class) {
            (Some(id), Some(_), Some(DROP_CLASS)) => {
                trace.drops.push((trace.requests.len(), id));
            }
            (Some(id), Some(bytes), Some("hot" | "cold" | "inner")) => {
                trace.requests.push((id, bytes));
                trace.inner.push(class == Some("inner"));
            }
            _ => {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("bad trace line {line:?}"),
                )));
            }
        }
    }
    Ok(trace)
}
