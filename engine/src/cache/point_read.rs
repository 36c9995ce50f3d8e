//! A point read of a parent record as the cache answers it: one request of the reader's,
//! inside which the cache looks in the record tier, walks the tree on a miss (through the
//! reader's [`RecordSource`]), admits the leaf the walk read, offers the lookup to the
//! what-if sample, and keeps the record, or the document built from it. The reader says how
//! to walk and how to build; the cache decides what it keeps.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::records::{self, KeptRecord, Seen};
use super::{Admission, CacheValue, PageCache, Unkept, Walked};
use crate::error::Result;

/// A parent record as a point read found it: kept in the record tier, or read from the
/// tree.
pub enum FoundRecord {
    Kept(KeptRecord),
    /// The parent's key (a slice of the tree's copy, not of the caller's) and its record.
    Read {
        key: Bytes,
        record: Bytes,
    },
}

impl FoundRecord {
    /// The parent's key and its record.
    pub fn into_parts(self) -> (Bytes, Bytes) {
        match self {
            FoundRecord::Kept(kept) => (kept.key(), kept.value()),
            FoundRecord::Read { key, record } => (key, record),
        }
    }

    /// The record alone.
    pub fn into_record(self) -> Bytes {
        match self {
            FoundRecord::Kept(kept) => kept.value(),
            FoundRecord::Read { record, .. } => record,
        }
    }
}

/// Whether a walk keeps in the cache the leaf it reads from storage, or hands it back for
/// the cache to admit once it knows what the leaf held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafKeeping {
    Keep,
    HandBack,
}

/// What a walk to a record's leaf found: the record's entry, if the tree holds its key, and
/// the leaf, if the walk read it from storage and handed it back.
pub type Walk<E, V> = (Option<E>, Option<Unkept<V>>);

/// Where a point read finds a parent record after a record tier miss: the tree at the
/// version read.
pub trait RecordSource<V> {
    /// An entry of the record's leaf, before its value is read.
    type Entry;

    /// The walk down to the record's leaf: its entry, if the tree holds the key, and the
    /// leaf, if the walk read it from storage and `keeping` says to hand it back.
    fn walk(&self, keeping: LeafKeeping) -> Result<Walk<Self::Entry, V>>;

    /// Whether the entry names a large record (read through the cache after its leaf).
    fn is_large(entry: &Self::Entry) -> bool;

    /// The parent's key and record of an entry the walk found.
    fn read(&self, entry: Self::Entry) -> Result<(Bytes, Bytes)>;
}

/// The version a point read reads, as the record tier sees it.
pub struct RecordAt<'a> {
    pub collection: u32,
    pub key: &'a [u8],
    /// The version's generation: a tier entry of it or older answers. `None` for a view the
    /// tier does not serve (a transaction's own, with writes no version published).
    pub generation: Option<u64>,
    /// Reads the record epoch (see `Versions::record_epoch`): a record read from the tree
    /// is kept only if the epoch, read before the walk, equals the generation read, and
    /// still does when it is kept.
    pub epoch: &'a dyn Fn() -> u64,
}

impl<V: CacheValue, D: Clone> PageCache<V, D> {
    /// A parent record at `at`: from the record tier, or walked to through `source`.
    pub fn read_record<S: RecordSource<V>>(
        &self,
        at: &RecordAt<'_>,
        source: &S,
    ) -> Result<Option<FoundRecord>> {
        if let Some(generation) = at.generation
            && let Some(kept) = self.get_record(at.collection, at.key, generation)
        {
            return Ok(Some(FoundRecord::Kept(kept)));
        }
        let read = self.read_through(at, source)?;
        Ok(read.map(|(key, record)| FoundRecord::Read { key, record }))
    }

    /// A parent's document at `at`: the one the tier keeps built, else built by `build`
    /// from the record, and kept beside it (weighing what `weigh` says) when the tier holds
    /// that record.
    pub fn read_document<S: RecordSource<V>>(
        &self,
        at: &RecordAt<'_>,
        source: &S,
        build: impl FnOnce(Bytes, Bytes) -> Result<D>,
        weigh: impl FnOnce(&D) -> u64,
    ) -> Result<Option<D>> {
        let found = match at.generation {
            Some(generation) => match self.get_decoded(at.collection, at.key, generation) {
                Some(Ok(document)) => return Ok(Some(document)),
                Some(Err((kept, seen))) => {
                    let document = build(kept.key(), kept.value())?;
                    let weight = weigh(&document);
                    let (collection, key) = (at.collection, at.key);
                    self.keep_document(collection, key, &kept, seen, document.clone(), weight);
                    return Ok(Some(document));
                }
                None => self.read_through(at, source)?,
            },
            None => self.read_through(at, source)?,
        };
        found.map(|(key, record)| build(key, record)).transpose()
    }

    /// A record tier miss (the parent's key and record, if the tree holds it): the walk,
    /// then the leaf admitted (a large record's always, as
    /// the record is read through the cache next; another's if read lately), the lookup
    /// offered to the what-if sample, and the record kept if the version read is the
    /// current one. Without a tier (or for a view it does not serve) the walk keeps its
    /// leaf as any other read.
    fn read_through<S: RecordSource<V>>(
        &self,
        at: &RecordAt<'_>,
        source: &S,
    ) -> Result<Option<(Bytes, Bytes)>> {
        if at.generation.is_none() || self.records.budget_bytes() == 0 {
            let (entry, _) = source.walk(LeafKeeping::Keep)?;
            return entry.map(|entry| source.read(entry)).transpose();
        }
        let epoch = (at.epoch)();
        let ((entry, leaf), walked) =
            self.walk_for_record(|| source.walk(LeafKeeping::HandBack))?;
        if let Some(leaf) = leaf {
            let admission = match entry.as_ref().is_some_and(S::is_large) {
                true => Admission::Always,
                false => Admission::IfReadLately,
            };
            let _ = self.admit(leaf, admission);
        }
        let found = entry.map(|entry| source.read(entry)).transpose()?;
        let weight = found.as_ref().map_or(0, |(_, record)| {
            records::entry_weight(at.key.len() + record.len())
        });
        let (collection, key) = (at.collection, at.key);
        self.sample_record(collection, key, weight, walked.leaf, walked.leaf_weight);
        if let Some((_, record)) = &found
            && at.generation == Some(epoch)
        {
            let still_current = || (at.epoch)() == epoch;
            self.keep_record(collection, key, record, epoch, &walked, &still_current);
        }
        Ok(found)
    }

    /// Keeps a copy of a parent record in the record tier (see [`RecordCache::insert`]),
    /// evicting pages if the two together went over the budget.
    pub(super) fn keep_record(
        &self,
        collection: u32,
        key: &[u8],
        value: &[u8],
        generation: u64,
        walked: &Walked,
        still_current: &dyn Fn() -> bool,
    ) {
        self.records.insert_from(
            collection,
            key,
            value,
            generation,
            walked.leaf,
            still_current,
        );
        self.fit_pages();
    }

    /// Keeps `value` as the record of `key` in `collection` as of `generation`: the record
    /// a commit wrote, of a parent the tier held before the commit changed it (`leaf`: the
    /// leaf it was read from). Only the writer calls this, while it publishes the version of
    /// `generation` (no reader can be keeping an older record then).
    pub fn refresh_record(
        &self,
        collection: u32,
        key: &[u8],
        value: &[u8],
        generation: u64,
        leaf: u64,
    ) {
        self.records
            .insert_from(collection, key, value, generation, leaf, || true);
        self.fit_pages();
    }

    /// The record tier's record of `key` in `collection` (see [`RecordCache::get_record`]);
    /// a hit is offered to the what-if sample.
    pub(super) fn get_record(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
    ) -> Option<KeptRecord> {
        let (kept, seen) = self.records.get_record(collection, key, generation)?;
        self.sample_hit(collection, key, seen);
        Some(kept)
    }

    /// What a reader built from the record of `key` in `collection`, or the record (see
    /// [`RecordCache::get_decoded`]) with what the hit saw, for the reader to hand to
    /// [`PageCache::keep_document`] with what it builds. A hit that finds the built value is
    /// offered to the what-if sample now; one that finds the record alone when the reader
    /// keeps what it builds, with the weight it then has.
    pub(super) fn get_decoded(
        &self,
        collection: u32,
        key: &[u8],
        generation: u64,
    ) -> Option<std::result::Result<D, (KeptRecord, Seen)>> {
        let (found, seen) = self.records.get_decoded(collection, key, generation)?;
        match found {
            Ok(decoded) => {
                self.sample_hit(collection, key, seen);
                Some(Ok(decoded))
            }
            Err(kept) => Some(Err((kept, seen))),
        }
    }

    /// Offers a record tier hit to the what-if sample, as a lookup of a record in the
    /// leaf it was read from.
    fn sample_hit(&self, collection: u32, key: &[u8], seen: Seen) {
        let Some(estimator) = &self.estimator else {
            return;
        };
        // A leaf's weight is the page size's, as the latest walk saw it.
        let leaf_weight = estimator.leaf_weight.load(Ordering::Relaxed);
        self.sample_record(collection, key, seen.weight, seen.leaf, leaf_weight);
    }

    /// Runs `walk`, a point read's walk down the tree to a record's leaf after a record
    /// tier miss, and says what it asked of the page cache (nothing with the estimate off:
    /// [`Walked::NONE`]). Its page requests are not offered to the what-if sample: the
    /// record lookup stands for them (see [`PageCache::sample_record`]).
    pub(super) fn walk_for_record<T>(
        &self,
        walk: impl FnOnce() -> Result<T>,
    ) -> Result<(T, Walked)> {
        match &self.estimator {
            None => Ok((walk()?, Walked::NONE)),
            Some(estimator) => estimator.walk(walk),
        }
    }

    /// Offers a record tier lookup of `key` in `collection` (a miss after its walk, or a
    /// hit) to the what-if sample, sampled by the hash of its leaf: every lookup of the
    /// records of a sampled leaf is, as every request for that leaf. `weight` is the
    /// record's entry's in the tier, 0 for a key the tree does not hold; `leaf` (or
    /// [`NO_LEAF`](records::NO_LEAF)) weighs `leaf_weight`.
    pub(super) fn sample_record(
        &self,
        collection: u32,
        key: &[u8],
        weight: u64,
        leaf: u64,
        leaf_weight: u64,
    ) {
        let Some(estimator) = &self.estimator else {
            return;
        };
        let event = estimator.record_event(collection, key, weight, leaf, leaf_weight);
        let Some((hash, sampled)) = event else {
            return;
        };
        let mut guard = self.shard_of(hash).lock();
        guard.pending.samples.push(sampled);
        if guard.pending.is_full() {
            let pending = std::mem::take(&mut guard.pending);
            drop(guard);
            self.apply(pending);
        }
    }

    /// Adds a document built from a kept record that [`PageCache::get_decoded`] found
    /// (and `seen`; see [`RecordCache::attach`]), evicting pages if the two together went
    /// over the budget; offers the hit to the what-if sample at the weight the entry now
    /// has.
    pub(super) fn keep_document(
        &self,
        collection: u32,
        key: &[u8],
        kept: &KeptRecord,
        seen: Seen,
        document: D,
        weight: u64,
    ) {
        self.records.attach(collection, key, kept, document, weight);
        self.fit_pages();
        if self.estimator.is_some() {
            let seen = Seen {
                weight: seen.weight + weight,
                leaf: seen.leaf,
            };
            self.sample_hit(collection, key, seen);
        }
    }
}
