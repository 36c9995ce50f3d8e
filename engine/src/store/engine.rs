//! The engine as the API holds it: the state every handle shares and the maintenance
//! thread that serves it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::options::Options;
use crate::storage::Storage;
use crate::store::jobs::background::Background;
use crate::store::open::read_only;
use crate::store::open::recovery::{self, Access};
use crate::store::shared::Shared;

/// The engine as the API holds it: its state and, when it runs one, the maintenance thread,
/// which is stopped before the state is dropped (fields drop in order). Cheap to clone;
/// every handle the API gives out (a `Db`, a collection, a snapshot, a transaction) holds
/// one, so the engine stays open, and maintained, while any of them is alive.
#[derive(Clone)]
pub(crate) struct Engine {
    _background: Option<Arc<Background>>,
    shared: Arc<Shared>,
}

impl Engine {
    /// Opens (creating if need be) the database over `storage`, and starts the maintenance
    /// thread if `options` ask for one.
    pub fn open(storage: Arc<dyn Storage>, options: Options) -> Result<Engine> {
        let run_background = options.background;
        let shared = Arc::new(recovery::open(storage, options, Access::ReadWrite)?);
        let background = match run_background {
            true => Some(Arc::new(Background::start(&shared).map_err(|source| {
                Error::io("spawn", "maintenance thread", source)
            })?)),
            false => None,
        };
        Ok(Engine {
            _background: background,
            shared,
        })
    }

    /// Opens the database `directory()` gives storage over read-only (see
    /// `Db::open_read_only`): no maintenance thread, no memory maps (a writer beside it
    /// may cut a file it would map), a log that refuses every write.
    pub fn open_read_only(
        directory: &dyn Fn() -> Result<Arc<dyn Storage>>,
        options: Options,
    ) -> Result<Engine> {
        let options = options.background(false).memory_map(false);
        Ok(Engine {
            _background: None,
            shared: Arc::new(read_only::open(directory, &options)?),
        })
    }

    /// The engine's state, for a handle that must not keep the engine open (a batch).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl std::ops::Deref for Engine {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}
