//! The access trace: one CSV line per cache request, `seq,object_id,object_bytes,tier`,
//! after a header line naming the columns. See `format-spec/trace.md`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

pub const TRACE_HEADER: &str = "seq,object_id,object_bytes,tier";

/// The last column of a line that is not a request: the cache dropped the object because
/// no reader of the current version can ask for it (`PageCache::drop_superseded`).
pub const DROP_CLASS: &str = "drop";

pub struct TraceWriter {
    out: BufWriter<File>,
    seq: u64,
    /// The first write error; the trace stops there and the statistics say why.
    error: Option<String>,
}

impl TraceWriter {
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path)
            .map_err(|source| Error::io("create", path.display().to_string(), source))?;
        let mut writer = TraceWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            seq: 0,
            error: None,
        };
        writer.write(format_args!("{TRACE_HEADER}\n"));
        Ok(writer)
    }

    /// One request; `class` is the tier's name, or `inner` for a B+tree inner page.
    pub fn record(&mut self, object_id: u64, bytes: u64, class: &str) {
        let seq = self.seq;
        self.seq += 1;
        self.write(format_args!("{seq},{object_id},{bytes},{class}\n"));
    }

    fn write(&mut self, line: std::fmt::Arguments) {
        if self.error.is_none()
            && let Err(error) = self.out.write_fmt(line)
        {
            self.error = Some(error.to_string());
        }
    }

    pub fn flush(&mut self) {
        if self.error.is_none()
            && let Err(error) = self.out.flush()
        {
            self.error = Some(error.to_string());
        }
    }

    pub fn error(&self) -> Option<String> {
        self.error.clone()
    }
}
