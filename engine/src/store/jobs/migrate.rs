//! The background half of a layout change (`Alteration::set_layout`): the maintenance
//! thread walks the parents of a collection whose array is moving, in key order, and moves
//! those whose state is not yet under the array's current layout, a batch of them at a
//! time, as ordinary commits (which group with the users' and wait for nothing else). A
//! write to a parent moves it first itself (`ParentWork::migrate`). Once a walk has passed
//! the last parent with none left to move, a commit ends the migration: the array's previous
//! layout goes from the catalog. See `format-spec/arrays.md`, layout changes.

use std::ops::Bound;

use bytes::Bytes;

use crate::catalog::CollectionInfo;
use crate::error::{Error, Result};
use crate::page::keys;
use crate::store::jobs::mailbox::JobRun;
use crate::store::jobs::progress::{MigrationCursor, MigrationProgress};
use crate::store::read::decode::decode_record_fields;
use crate::store::shared::Shared;
use crate::store::write::ops::BatchOp;
use crate::store::write::work::is_empty;

/// Parents moved per batch at most.
const STEP_PARENTS: usize = 64;

/// Items moved per batch: a batch stops taking parents once it holds this many (a parent
/// with more goes alone), so that the commits it groups with wait little for it.
const STEP_ITEMS: u64 = 8_192;

/// Parents a step walks past at most (those already moved cost a read each).
const STEP_WALKED: usize = 4_096;

impl Shared {
    /// The migrations running, with the progress of those walked.
    pub(in crate::store) fn migrations(&self) -> Vec<MigrationProgress> {
        let version = self.current();
        let cursors = self.jobs.migrations.cursors();
        let mut all = Vec::new();
        for info in version.catalog.by_name.values() {
            for (index, state) in info.layouts.iter().enumerate() {
                let Some(from) = state.previous else {
                    continue;
                };
                let walked = cursors.iter().find(|c| c.walks(info, index));
                all.push(match walked {
                    Some(cursor) => cursor.progress.clone(),
                    None => MigrationProgress {
                        collection: info.spec.name().to_string(),
                        field: info.spec.arrays()[index].field.clone(),
                        from,
                        to: info.spec.arrays()[index].layout,
                        parents_walked: 0,
                        parents_moved: 0,
                        parents_total: 0,
                        refused: Vec::new(),
                    },
                });
            }
        }
        all
    }

    /// One step of the first migration running whose walk has parents left; returns
    /// whether one still has. A migration whose walk passed its last parent with some
    /// refused stays open, and the walks go on to the next.
    pub(in crate::store) fn migration_step(&self) -> Result<bool> {
        let _turn = self.jobs.migrations.turn();
        let _job = JobRun::begin();
        let version = self.current();
        let running: Vec<(&std::sync::Arc<CollectionInfo>, usize)> = version
            .catalog
            .by_name
            .values()
            .flat_map(|info| {
                let moving =
                    (0..info.layouts.len()).filter(|&i| info.layouts[i].previous.is_some());
                moving.map(move |index| (info, index))
            })
            .collect();
        let mut cursors = self.jobs.migrations.cursors();
        // Walks of migrations ended, cancelled or changed since are forgotten.
        cursors.retain(|c| running.iter().any(|(info, index)| c.walks(info, *index)));
        // The walk stepped stays listed while its step runs (steps take turns), so that
        // `Db::stats` shows its progress throughout, never a walk that has not begun.
        let mut chosen = None;
        for &(info, index) in &running {
            match cursors.iter().position(|c| c.walks(info, index)) {
                Some(at) if cursors[at].next.is_none() => continue,
                Some(at) => chosen = Some((info.clone(), index, cursors[at].clone())),
                None => {
                    let cursor = self.begin_walk(info, index)?;
                    cursors.push(cursor.clone());
                    chosen = Some((info.clone(), index, cursor));
                }
            }
            break;
        }
        self.jobs.migrations.set_cursors(cursors);
        let Some((info, index, mut cursor)) = chosen else {
            return Ok(false);
        };
        let state = info.layouts[index];
        let from = cursor.next.clone().unwrap_or_default();
        let (found, walked, next) = self.unmoved_parents(&info, index, &from)?;
        cursor.progress.parents_walked += walked;
        let migrate = |key: &Bytes| BatchOp::Migrate {
            collection: info.id,
            key: key.clone(),
            slot: info.slot(index),
        };
        let durability = self.options.durability;
        let moved = match found.is_empty() {
            true => Ok(()),
            false => self.commit(found.iter().map(migrate).collect(), durability),
        };
        match moved {
            Ok(()) => cursor.progress.parents_moved += found.len() as u64,
            // One parent that cannot move refuses the batch: move them one by one.
            Err(Error::RecordTooLarge { .. } | Error::BatchTooLarge { .. }) => {
                for key in &found {
                    match self.commit(vec![migrate(key)], durability) {
                        Ok(()) => cursor.progress.parents_moved += 1,
                        Err(Error::RecordTooLarge { .. } | Error::BatchTooLarge { .. }) => {
                            cursor.progress.refused.push(key.clone());
                        }
                        Err(error) => return Err(error),
                    }
                }
            }
            Err(error) => return Err(error),
        }
        cursor.next = next;
        // Parents added since the walk began count too: the total is never below the walk.
        let progress = &mut cursor.progress;
        progress.parents_total = progress.parents_total.max(progress.parents_walked);
        let done = cursor.next.is_none() && cursor.progress.refused.is_empty();
        // The walk's progress replaces what was listed; a finished walk's stays (at its
        // total) until the migration ends, when the walks of migrations no longer running
        // are forgotten.
        self.jobs
            .migrations
            .update(cursor, |listed| listed.walks(&info, index));
        if done {
            self.commit(
                vec![BatchOp::FinishMigration {
                    collection: info.id,
                    slot: info.slot(index),
                    state,
                }],
                self.options.durability,
            )?;
        }
        Ok(true)
    }

    /// Runs the steps of every migration running until each has walked all its parents
    /// (the maintenance thread's steps take turns with these); returns the migrations that
    /// stay open because some of their parents cannot move (`MigrationProgress::refused`).
    pub(in crate::store) fn wait_for_migrations(&self) -> Result<Vec<MigrationProgress>> {
        while self.migration_step()? {}
        Ok(self.migrations())
    }

    /// The walk of `info`'s array `index` from its first parent, with the parents counted.
    fn begin_walk(&self, info: &CollectionInfo, index: usize) -> Result<MigrationCursor> {
        let version = self.current();
        let pages = self.pages.maintaining();
        let start = keys::parent(info.id, &[]);
        let end = keys::parents_end(info.id);
        let mut walk = version
            .tree
            .cursor(&pages, Bound::Included(start.as_ref()))?;
        let mut total = 0;
        while let Some((key, _)) = walk.next(&version.tree, &pages)? {
            if key >= end {
                break;
            }
            total += 1;
        }
        let spec = &info.spec.arrays()[index];
        let state = info.layouts[index];
        Ok(MigrationCursor {
            collection: info.id,
            slot: info.slot(index),
            state,
            next: Some(Bytes::new()),
            progress: MigrationProgress {
                collection: info.spec.name().to_string(),
                field: spec.field.clone(),
                from: state.previous.unwrap_or(spec.layout),
                to: spec.layout,
                parents_walked: 0,
                parents_moved: 0,
                parents_total: total,
                refused: Vec::new(),
            },
        })
    }

    /// From parent key `from` on: up to [`STEP_PARENTS`] parents (and [`STEP_ITEMS`] items)
    /// whose array `index` is not
    /// under its current layout, the parents walked, and the key to go on from (`None` past
    /// the last parent).
    fn unmoved_parents(
        &self,
        info: &CollectionInfo,
        index: usize,
        from: &Bytes,
    ) -> Result<(Vec<Bytes>, u64, Option<Bytes>)> {
        let version = self.current();
        let pages = self.pages.maintaining();
        let tree = &version.tree;
        let start = keys::parent(info.id, from);
        let end = keys::parents_end(info.id);
        let parity = info.layouts[index].parity;
        let mut walk = tree.cursor(&pages, Bound::Included(start.as_ref()))?;
        let (mut found, mut walked, mut items) = (Vec::new(), 0, 0);
        while let Some((tree_key, value)) = walk.next(tree, &pages)? {
            if tree_key >= end {
                break;
            }
            let key = keys::parent_key_of(&tree_key);
            if found.len() == STEP_PARENTS || walked == STEP_WALKED as u64 || items >= STEP_ITEMS {
                return Ok((found, walked, Some(key)));
            }
            walked += 1;
            let bytes = pages.value_bytes(&value)?;
            let record = decode_record_fields(bytes, info, &key, |_| false)
                .map_err(|e| self.placed(e, tree, &tree_key))?;
            let array = &record.arrays[index];
            if array.parity != parity && !is_empty(array) {
                if !found.is_empty() && items + array.total > STEP_ITEMS {
                    // It goes first in the next batch.
                    return Ok((found, walked - 1, Some(key)));
                }
                items += array.total;
                found.push(key);
            }
        }
        Ok((found, walked, None))
    }
}
