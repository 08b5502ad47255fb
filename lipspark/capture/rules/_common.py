"""What the rewrite rules share: argument normalization, key normalization, tracker checks."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from lipspark.errors import AnnotationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql import types as T

    from lipspark.frame import AnnotatedFrame

__all__ = ["BLACK_BOX_HINT", "NO_VALUE", "as_list", "normalized", "same_tracker"]

#: The advice every unsupported operation ends with.
BLACK_BOX_HINT = "wrap the computation in lipspark.black_box(fn, frame, ...) to keep coarse provenance"


class _NoValue:
    def __repr__(self) -> str:
        return "<no value>"


#: An argument left out (``replace(to_replace)`` with a dict, where ``None`` is a value).
NO_VALUE: Any = _NoValue()


def as_list(cols: Iterable[Any]) -> list[Any]:
    """PySpark's argument convention: ``f(a, b)`` and ``f([a, b])`` mean the same.

    >>> as_list(["a", ["b", "c"], ("d",)])
    ['a', 'b', 'c', 'd']
    """
    out: list[Any] = []
    for c in cols:
        if isinstance(c, (list, tuple)):
            out.extend(c)
        else:
            out.append(c)
    return out


def normalized(col: "Column", dtype: "T.DataType") -> "Column":
    """A key value as Spark groups it: -0.0 and 0.0 are one group (content ids must agree)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return F.when(col == 0, F.lit(0.0).cast(dtype)).otherwise(col)
    return col


def same_tracker(frame: "AnnotatedFrame", other: Any, op: str) -> "AnnotatedFrame":
    """``other`` if it is an annotated frame of ``frame``'s tracker, else a clear error: frames of
    different trackers belong to different graphs (another invocation, another run)."""
    from pyspark.sql import DataFrame

    if isinstance(other, DataFrame):
        raise AnnotationError(
            f"{op}: the other relation is a plain DataFrame; annotate it first "
            "(tracker.annotate(df, 'Name', key=[...])) so its rows have provenance"
        )
    if not isinstance(other, type(frame)):  # the rules never import the frame that calls them
        raise TypeError(f"{op}: expected an annotated frame, got {type(other).__name__}")
    if other.tracker is not frame.tracker:
        raise AnnotationError(f"{op}: the two frames belong to different trackers (different provenance graphs)")
    return other
