"""skewdb's exceptions: ``Error`` and one subclass per error kind.

Every exception skewdb raises is an ``Error``; ``kind`` is the kind's string, the same as
the Rust library's ``Error::kind`` and the ``skewdb`` tool's ``--json`` errors.
"""

from typing import Dict, Optional, Type


class Error(Exception):
    """Every error of skewdb; ``kind`` names which."""

    kind: str = "error"

    def __init__(self, message: str, kind: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message


class NotFound(Error, KeyError):
    """No parent of that key (also a ``KeyError``)."""

    kind = "not_found"


class InvalidInput(Error, ValueError):
    """A bad argument (also a ``ValueError``)."""

    kind = "invalid_input"


class IoError(Error):
    """The file system refused a read or write."""

    kind = "io"


class Corruption(Error):
    """Stored bytes fail their checks."""

    kind = "corruption"


class RecordTooLarge(Error):
    """A record would pass the 16 MiB limit."""

    kind = "record_too_large"


class KeyTooLarge(Error):
    """A key passes its limit."""

    kind = "key_too_large"


class BatchTooLarge(Error):
    """A batch passes its limit."""

    kind = "batch_too_large"


class UnknownCollection(Error):
    """No collection of that name (or a handle's collection was dropped or renamed)."""

    kind = "unknown_collection"


class UnknownField(Error):
    """The collection has no array of that name."""

    kind = "unknown_field"


class UnknownMeasure(Error):
    """The array has no measure of that name."""

    kind = "unknown_measure"


class WrongLayout(Error):
    """An operation the array's layout does not support."""

    kind = "wrong_layout"


class InvalidItem(Error):
    """An item the array cannot take."""

    kind = "invalid_item"


class SchemaConflict(Error):
    """A collection of that name exists with another schema."""

    kind = "schema_conflict"


class InvalidName(Error):
    """A name skewdb does not take."""

    kind = "invalid_name"


class InvalidSchema(Error):
    """A schema or schema change skewdb does not take."""

    kind = "invalid_schema"


class Locked(Error):
    """Another process has the database open for writing."""

    kind = "locked"


class InvalidOption(Error):
    """An option out of its range."""

    kind = "invalid_option"


class WriteFailed(Error):
    """An earlier write failed; the database takes no more writes."""

    kind = "write_failed"


class ReadOnly(Error):
    """The database was opened read-only."""

    kind = "read_only"


class NoDatabase(Error):
    """No database at the path."""

    kind = "no_database"


class UnsupportedVersion(Error):
    """A format version this build does not read."""

    kind = "unsupported_version"


class RangeCutsRollup(Error):
    """A range that cuts a rollup's window."""

    kind = "range_cuts_rollup"


class InvalidCursor(Error):
    """A cursor that does not continue this read."""

    kind = "invalid_cursor"


class Closed(Error):
    """The database (or the transaction, snapshot or batch) was closed."""

    kind = "closed"


class Conflict(Error):
    """A transaction read what another commit changed: run it again."""

    kind = "conflict"


class Codec(Error):
    """A value that does not encode or decode."""

    kind = "codec"


_CLASSES: Dict[str, Type[Error]] = {
    cls.kind: cls
    for cls in [
        NotFound, InvalidInput, IoError, Corruption, RecordTooLarge, KeyTooLarge,
        BatchTooLarge, UnknownCollection, UnknownField, UnknownMeasure, WrongLayout,
        InvalidItem, SchemaConflict, InvalidName, InvalidSchema, Locked, InvalidOption,
        WriteFailed, ReadOnly, NoDatabase, UnsupportedVersion, RangeCutsRollup,
        InvalidCursor, Closed, Conflict, Codec,
    ]
}
_CLASSES["usage"] = InvalidInput


def class_of(kind: str) -> Type[Error]:
    """The exception class of an error kind (``Error`` for a kind without one)."""
    return _CLASSES.get(kind, Error)
