//! The write methods of [`super::Batch`] and [`super::Transaction`], written once: the macro
//! gives both types the same inherent methods (so nothing needs importing to call them),
//! each queueing its operation into the batch the type writes through (`queue`, which for
//! a transaction is its own batch, applied at its commit).

/// The shared write methods, for a type with `fn queue(&mut self) -> &mut Batch`.
macro_rules! write_methods {
    () => {
        /// Sets the body of parent `key` in `collection`, creating the parent if need be;
        /// its arrays are left as they are.
        pub fn put(
            &mut self,
            collection: &str,
            key: impl AsRef<[u8]>,
            body: impl AsRef<[u8]>,
        ) -> &mut Self {
            self.queue()
                .queue_put(collection, key.as_ref(), body.as_ref());
            self
        }

        /// Deletes parent `key` of `collection` and every item of its arrays (nothing if
        /// absent).
        pub fn delete(&mut self, collection: &str, key: impl AsRef<[u8]>) -> &mut Self {
            self.queue().queue_delete(collection, key.as_ref());
            self
        }

        /// Pushes an item to array `field` of parent `key` (created with an empty body if
        /// absent). The array's layout decides where the item lives.
        pub fn push(
            &mut self,
            collection: &str,
            key: impl AsRef<[u8]>,
            field: &str,
            item: $crate::item::NewItem,
        ) -> &mut Self {
            let queue = self.queue();
            let array = queue.names_of(collection, field);
            queue.queue_push(array, key.as_ref(), item);
            self
        }

        /// Removes every item with key `item_key` from array `field` of parent `key`,
        /// wherever it lives (inline, tail or cold chunks). Totals and summaries stay
        /// exact; a `Subset` window refills from history; see `format-spec/arrays.md` for
        /// the rule of each layout. Removing from a parent that does not exist, or a key
        /// the array does not hold, does nothing.
        pub fn remove(
            &mut self,
            collection: &str,
            key: impl AsRef<[u8]>,
            field: &str,
            item_key: i64,
        ) -> &mut Self {
            let queue = self.queue();
            let array = queue.names_of(collection, field);
            queue.queue_remove(array, key.as_ref(), item_key, None);
            self
        }

        /// Removes the one item `id` names (its key and push sequence, as
        /// [`crate::ItemPage::ids`] gives them) from array `field` of parent `key`,
        /// wherever it lives; items with the same key pushed at other times stay. Nothing
        /// if no item has that identity.
        pub fn remove_item(
            &mut self,
            collection: &str,
            key: impl AsRef<[u8]>,
            field: &str,
            id: $crate::document::Cursor,
        ) -> &mut Self {
            let queue = self.queue();
            let array = queue.names_of(collection, field);
            queue.queue_remove(array, key.as_ref(), id.key, Some(id.seq));
            self
        }

        /// Drops every sealed bucket of `Bucket` array `field` of parent `key` whose newest
        /// item key is below `before`, from the chunk index alone (no bucket is read); the
        /// open bucket and late items stay. Total and summary follow. `Error::WrongLayout`
        /// for an array of another layout.
        pub fn expire_buckets(
            &mut self,
            collection: &str,
            key: impl AsRef<[u8]>,
            field: &str,
            before: i64,
        ) -> &mut Self {
            let queue = self.queue();
            let array = queue.names_of(collection, field);
            queue.queue_expire(array, key.as_ref(), before);
            self
        }

        /// [`Self::push`] to the array of a handle (whose collection and field were checked
        /// when the handle was made). Every write through a handle is checked at commit
        /// against the collection the handle was made for: after a rename, a drop or a
        /// re-creation of its name the batch is refused whole with
        /// `Error::UnknownCollection`, never written to another collection.
        pub fn push_to(
            &mut self,
            array: &$crate::api::array::Array,
            key: impl AsRef<[u8]>,
            item: $crate::item::NewItem,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(array.collection(), array.collection_id());
            queue.queue_push(array.names(), key.as_ref(), item);
            self
        }

        /// [`Self::remove`] from the array of a handle.
        pub fn remove_from(
            &mut self,
            array: &$crate::api::array::Array,
            key: impl AsRef<[u8]>,
            item_key: i64,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(array.collection(), array.collection_id());
            queue.queue_remove(array.names(), key.as_ref(), item_key, None);
            self
        }

        /// [`Self::remove_item`] from the array of a handle.
        pub fn remove_item_from(
            &mut self,
            array: &$crate::api::array::Array,
            key: impl AsRef<[u8]>,
            id: $crate::document::Cursor,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(array.collection(), array.collection_id());
            queue.queue_remove(array.names(), key.as_ref(), id.key, Some(id.seq));
            self
        }

        /// [`Self::expire_buckets`] of the array of a handle.
        pub fn expire_buckets_of(
            &mut self,
            array: &$crate::api::array::Array,
            key: impl AsRef<[u8]>,
            before: i64,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(array.collection(), array.collection_id());
            queue.queue_expire(array.names(), key.as_ref(), before);
            self
        }

        /// [`Self::put`] into the collection of a handle (whose name was checked when the
        /// handle was made).
        pub fn put_in<V: $crate::api::view::View>(
            &mut self,
            collection: &$crate::api::collection::CollectionHandle<V>,
            key: impl AsRef<[u8]>,
            body: impl AsRef<[u8]>,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(collection.name(), collection.id());
            queue.queue_put(collection.name(), key.as_ref(), body.as_ref());
            self
        }

        /// [`Self::delete`] from the collection of a handle.
        pub fn delete_in<V: $crate::api::view::View>(
            &mut self,
            collection: &$crate::api::collection::CollectionHandle<V>,
            key: impl AsRef<[u8]>,
        ) -> &mut Self {
            let queue = self.queue();
            queue.queue_expect(collection.name(), collection.id());
            queue.queue_delete(collection.name(), key.as_ref());
            self
        }

        /// How durable the commit is: `Immediate` (on disk when `commit` returns) or
        /// `Buffered` (written, synced by a later commit, checkpoint or
        /// [`crate::Db::persist`]). The database's `Options::durability` by default.
        pub fn durability(&mut self, durability: $crate::options::Durability) -> &mut Self {
            self.queue().durability = durability;
            self
        }

        /// Operations queued, not yet committed (the checks of the handles they were
        /// queued through that their collections are still theirs are not counted).
        pub fn len(&self) -> usize {
            let queued = self.queued();
            queued.ops.len() - queued.checks
        }

        /// True when no operation is queued.
        pub fn is_empty(&self) -> bool {
            self.queued().ops.is_empty()
        }
    };
}

pub(crate) use write_methods;
