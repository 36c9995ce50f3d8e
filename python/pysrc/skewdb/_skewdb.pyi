"""Type stubs of the extension module (re-exported by ``skewdb``)."""

import datetime
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar, Union

from ._layouts import Layout

T = TypeVar("T")
Path = Union[str, "os.PathLike[str]"]
# A parent key: any document value in a collection of documents, bytes or str in one of
# bytes.
Key = Any
# An item key: an int, or a datetime in a time series.
ItemKey = Union[int, datetime.datetime]
Span = Union[int, str, datetime.timedelta]
Summary = Dict[str, Any]

MAX_RECORD_BYTES: int
__version__: str

def open(
    path: Path,
    *,
    cache: Union[int, str, None] = None,
    durability: str = "immediate",
    read_only: bool = False,
) -> Db:
    """Opens (creating when absent, unless ``read_only``) the database in ``path``."""

def restore(
    backup: Path,
    path: Path,
    *,
    cache: Union[int, str, None] = None,
    durability: str = "immediate",
) -> Db:
    """Loads a backup file into a new database in ``path`` and opens it."""

class Item:
    """One item of an array."""

    key: ItemKey
    value: Optional[float]
    measures: Dict[str, float]
    payload: Any
    cursor: Optional[str]

class Items(Iterator[Item]):
    """An array's items, read a page at a time as they are taken."""

    def __iter__(self) -> Items: ...
    def __next__(self) -> Item: ...
    @property
    def cursor(self) -> Optional[str]:
        """The token that continues the read after the last item taken."""

class Collection:
    """A collection of documents (or of bytes)."""

    @property
    def name(self) -> str: ...
    @property
    def arrays(self) -> Dict[str, str]: ...
    def put(self, key: Key, body: Any) -> None: ...
    def delete(self, key: Key) -> None: ...
    def push(
        self,
        parent: Key,
        field: str,
        item: Any = None,
        *,
        key: Optional[ItemKey] = None,
        value: Optional[float] = None,
        measures: Optional[Dict[str, float]] = None,
    ) -> None: ...
    def remove(self, parent: Key, field: str, key: ItemKey) -> None: ...
    def get(self, key: Key) -> Optional[Dict[str, Any]]: ...
    def __contains__(self, key: Key) -> bool: ...
    def scan(
        self, start: Optional[Key] = None, end: Optional[Key] = None
    ) -> List[Tuple[Any, Dict[str, Any]]]: ...
    def items(
        self,
        parent: Key,
        field: str,
        *,
        start: Optional[ItemKey] = None,
        end: Optional[ItemKey] = None,
        newest_first: bool = False,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Items: ...
    def summary(
        self,
        parent: Key,
        field: str,
        *,
        start: Optional[ItemKey] = None,
        end: Optional[ItemKey] = None,
        every: Optional[Span] = None,
    ) -> Any:
        """A summary dict, or with ``every`` a list of ``(window_start, summary)``."""
    def outliers(self, field: str) -> List[Tuple[Any, int]]: ...
    def expire_buckets(self, field: str, before: ItemKey) -> Dict[str, int]: ...

class Batch:
    """Writes to any collections, committed atomically."""

    def put(self, collection: str, key: Key, body: Any) -> None: ...
    def delete(self, collection: str, key: Key) -> None: ...
    def push(
        self,
        collection: str,
        parent: Key,
        field: str,
        item: Any = None,
        *,
        key: Optional[ItemKey] = None,
        value: Optional[float] = None,
        measures: Optional[Dict[str, float]] = None,
    ) -> None: ...
    def commit(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool: ...

class Transaction:
    """Reads at one version plus its own writes; commits atomically and serializably."""

    def collection(self, name: str) -> Collection: ...
    def __getitem__(self, name: str) -> Collection: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def __enter__(self) -> Transaction: ...
    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool: ...

class Snapshot:
    """Every collection as of one moment."""

    def collection(self, name: str) -> Collection: ...
    def __getitem__(self, name: str) -> Collection: ...
    def collections(self) -> List[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Snapshot: ...
    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool: ...

class Db:
    """An open database."""

    @property
    def path(self) -> str: ...
    def create_collection(
        self,
        name: str,
        arrays: Optional[Dict[str, Layout]] = None,
        *,
        rollups: Optional[Dict[str, Span]] = None,
        key_field: str = "_id",
        item_keys: Optional[Dict[str, str]] = None,
        bytes: bool = False,
    ) -> Collection: ...
    def collection(self, name: str) -> Collection: ...
    def __getitem__(self, name: str) -> Collection: ...
    def collections(self) -> List[str]: ...
    def alter(
        self,
        name: str,
        *,
        rename: Optional[str] = None,
        add_arrays: Optional[Dict[str, Layout]] = None,
        drop_arrays: Optional[List[str]] = None,
        add_measures: Optional[Dict[str, List[str]]] = None,
        set_layouts: Optional[Dict[str, Layout]] = None,
        set_rollups: Optional[Dict[str, Span]] = None,
    ) -> Collection: ...
    def drop(self, name: str) -> None: ...
    def wait_for_migrations(self) -> List[Dict[str, Any]]: ...
    def batch(self) -> Batch: ...
    def transaction(self) -> Transaction: ...
    def transact(self, work: Callable[[Transaction], T], *, attempts: int = 10) -> T: ...
    def snapshot(self) -> Snapshot: ...
    def stats(self) -> Dict[str, Any]: ...
    def backup(self, path: Path) -> Dict[str, int]: ...
    def checkpoint(self) -> None: ...
    def compact(self) -> None: ...
    def verify(self) -> None: ...
    def persist(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Db: ...
    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool: ...
