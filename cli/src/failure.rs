//! What the tool reports when a command fails: a message in the user's terms and a stable
//! kind (`skewdb::Error::kind` for the engine's errors, and the tool's own below), with the
//! exit status each kind takes.

/// The kinds the tool adds to the engine's: a command line clap refused or a combination
/// of arguments that cannot go together (exit status 2), a parent that does not exist, an
/// argument or input line the tool refuses, a directory without a database, and `exec`
/// input that ended inside a batch.
pub const USAGE: &str = "usage";
pub const NOT_FOUND: &str = "not_found";
pub const INVALID_INPUT: &str = "invalid_input";
pub const NO_DATABASE: &str = "no_database";
pub const INCOMPLETE_INPUT: &str = "incomplete_input";
/// The reader of the tool's output closed it (`skewdb scan ... | head`): the command stops
/// there, and is not reported (exit status 0), as with any Unix filter.
pub const CLOSED_OUTPUT: &str = "closed_output";

/// A failure to report: one line on stderr (one JSON object with `--json`).
#[derive(Debug)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Failure::new(INVALID_INPUT, message)
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Failure::new(USAGE, message)
    }

    /// Usage errors exit 2 (clap's convention, the one scripts expect), the rest 1.
    pub fn exit_status(&self) -> u8 {
        if self.kind == USAGE { 2 } else { 1 }
    }

    /// The JSON object `--json` prints on stderr.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"error": self.message, "kind": self.kind})
    }
}

impl From<skewdb::Error> for Failure {
    fn from(error: skewdb::Error) -> Self {
        Failure::new(error.kind(), error.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        match error.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::new(CLOSED_OUTPUT, error.to_string()),
            _ => Failure::new("io", error.to_string()),
        }
    }
}

/// `value` when finite; infinities and NaN are refused at input (a number too large for a
/// double parses as an infinity).
pub fn finite(value: f64, what: &str) -> Result<f64, Failure> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Failure::invalid_input(format!(
            "{what} must be a finite number, not {value}"
        )))
    }
}
