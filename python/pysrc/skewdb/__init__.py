"""skewdb: an embedded storage engine for heavy-tailed data.

Arrays inside documents are stored by their pattern: ``Subset`` keeps the newest items in
the parent and the history cold, ``Outlier`` keeps items inline up to a cap and overflows
the rest, ``Bucket`` groups a stream into summarized buckets. A quick tour::

    import skewdb

    with skewdb.open("shop.db") as db:
        products = db.create_collection("products", {"reviews": skewdb.Subset(keep=5)})
        products.put("p1", {"name": "lamp"})
        products.push("p1", "reviews", {"stars": 5, "text": "bright"}, value=5)
        page = products.get("p1")              # the body and the 5 newest reviews
        for review in products.items("p1", "reviews", newest_first=True, limit=20):
            print(review.key, review.payload)
"""

from ._errors import (
    BatchTooLarge,
    Closed,
    Codec,
    Conflict,
    Corruption,
    Error,
    InvalidCursor,
    InvalidInput,
    InvalidItem,
    InvalidName,
    InvalidOption,
    InvalidSchema,
    IoError,
    KeyTooLarge,
    Locked,
    NoDatabase,
    NotFound,
    RangeCutsRollup,
    ReadOnly,
    RecordTooLarge,
    SchemaConflict,
    UnknownCollection,
    UnknownField,
    UnknownMeasure,
    UnsupportedVersion,
    WriteFailed,
    WrongLayout,
)
from ._layouts import Bucket, Embed, Layout, Outlier, Reference, Subset
from ._skewdb import (
    MAX_RECORD_BYTES,
    Batch,
    Collection,
    Db,
    Item,
    Items,
    Snapshot,
    Transaction,
    __version__,
    open,
    restore,
)

__all__ = [
    "open", "restore", "Db", "Collection", "Batch", "Transaction", "Snapshot", "Items",
    "Item", "Layout", "Embed", "Reference", "Subset", "Outlier", "Bucket",
    "MAX_RECORD_BYTES", "__version__",
    "Error", "NotFound", "InvalidInput", "IoError", "Corruption", "RecordTooLarge",
    "KeyTooLarge", "BatchTooLarge", "UnknownCollection", "UnknownField", "UnknownMeasure",
    "WrongLayout", "InvalidItem", "SchemaConflict", "InvalidName", "InvalidSchema",
    "Locked", "InvalidOption", "WriteFailed", "ReadOnly", "NoDatabase",
    "UnsupportedVersion", "RangeCutsRollup", "InvalidCursor", "Closed", "Conflict", "Codec",
]
