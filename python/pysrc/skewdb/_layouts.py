"""The layouts an array field takes: where its items live."""

from datetime import timedelta
from typing import List, Optional, Sequence, Union

Span = Union[int, str, timedelta]


def _span_text(span: Span) -> str:
    if isinstance(span, timedelta):
        return f"{int(span / timedelta(milliseconds=1))}ms"
    return str(span)


class Layout:
    """A layout; ``measures`` names the values each item carries (none: one, ``value``)."""

    measures: List[str]

    def __init__(self, measures: Optional[Sequence[str]] = None) -> None:
        self.measures = list(measures or [])

    def _spec(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec()!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Layout)
            and self._spec() == other._spec()
            and self.measures == other.measures
        )


class Embed(Layout):
    """Every item inline in the parent (a push past 16 MiB is refused)."""

    def _spec(self) -> str:
        return "embed"


class Reference(Layout):
    """No item inline: every item in cold chunks."""

    def _spec(self) -> str:
        return "reference"


class Subset(Layout):
    """The ``keep`` newest items inline; the whole history cold."""

    def __init__(self, keep: int, measures: Optional[Sequence[str]] = None) -> None:
        super().__init__(measures)
        self.keep = keep

    def _spec(self) -> str:
        return f"subset:{self.keep}"


class Outlier(Layout):
    """Up to ``cap`` items inline; past it the parent is flagged and the rest overflow."""

    def __init__(self, cap: int, measures: Optional[Sequence[str]] = None) -> None:
        super().__init__(measures)
        self.cap = cap

    def _spec(self) -> str:
        return f"outlier:{self.cap}"


class Bucket(Layout):
    """Buckets of at most ``max_items`` items over ``span`` of key, with summaries.

    ``span`` is an int in the keys' units, or a duration (``"1h"``, a ``timedelta``): the
    array is then a time series, keyed by ``datetime`` (milliseconds since 1970).
    """

    def __init__(
        self,
        max_items: int,
        span: Optional[Span] = None,
        measures: Optional[Sequence[str]] = None,
    ) -> None:
        super().__init__(measures)
        self.max_items = max_items
        self.span = span

    def _spec(self) -> str:
        if self.span is None:
            return f"bucket:{self.max_items}"
        return f"bucket:{self.max_items}:{_span_text(self.span)}"
