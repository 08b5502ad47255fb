"""Black boxes: code the rewrite cannot see into keeps coarse provenance (Lipstick §3.2).

A *relation-level* black box is a Python function from DataFrames to a DataFrame. Its result
rows all derive from one p-node labelled with the function's name, which has an edge from the
p-node of every input row: coarse inside, fine around.

A *value-level* black box is a Python function applied to columns of a row, like a UDF. Each
result value is a v-node labelled with the function's name, with edges from the row's p-node,
the v-nodes of its arguments and, for nested-bag arguments, their members.

Both work unchanged on plain PySpark DataFrames (no provenance) and on annotated frames.

>>> from pyspark.sql import types as T
>>> bid = black_box(lambda n: 100.0 * n, returnType=T.DoubleType(), name="calcBid")
>>> bid.name
'calcBid'
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from pyspark.sql import Column, DataFrame

from lipspark.errors import AnnotationError

__all__ = ["BlackBoxFunction", "black_box", "registered_black_box"]

_REGISTRY: dict[str, "BlackBoxFunction"] = {}


class BlackBoxFunction:
    """A value-level black box; call it on columns to get a :class:`~pyspark.sql.Column`."""

    def __init__(self, fn: Callable[..., Any], returnType: Any, name: str) -> None:
        from pyspark.sql import functions as F

        if not name.isidentifier():
            raise AnnotationError(f"a black box needs a Python identifier as name, got {name!r}")
        self.fn = fn
        self.name = name
        self.returnType = returnType

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            return fn(*args)

        call.__name__ = name
        call.__qualname__ = name
        self._udf = F.udf(call, returnType)

    def __call__(self, *cols: "str | Column") -> Column:
        return self._udf(*cols)

    def __repr__(self) -> str:
        return f"black_box({self.name})"


def registered_black_box(name: str) -> BlackBoxFunction | None:
    """The value-level black box registered under ``name``, if any."""
    return _REGISTRY.get(name)


def black_box(fn: Callable[..., Any], *frames: Any, name: str | None = None, returnType: Any = None) -> Any:
    """Make ``fn`` a black box, or apply it to relations at once.

    Parameters
    ----------
    fn
        The function. Relation-level: takes DataFrames, returns a DataFrame. Value-level: takes
        column values of one row (nested bags arrive as lists of Rows), returns one value.
    *frames
        Relations to apply ``fn`` to now (relation level). Plain DataFrames give a plain
        DataFrame; annotated frames give an annotated frame whose rows all derive from one
        black-box p-node fed by every input row.
    name
        Label of the black-box node (default: ``fn.__name__``).
    returnType
        For value-level black boxes (no ``frames``): the Spark type of the result.

    Returns
    -------
    DataFrame, AnnotatedFrame or BlackBoxFunction
    """
    label = name or getattr(fn, "__name__", None) or "black_box"
    if label == "<lambda>":
        raise AnnotationError("name the black box: black_box(lambda ..., name='calcBid')")
    if not frames:
        if returnType is None:
            raise AnnotationError(
                f"black box {label!r}: give returnType= for a value-level black box, "
                "or pass the DataFrames to apply it to"
            )
        bb = BlackBoxFunction(fn, returnType, label)
        _REGISTRY[label] = bb
        return bb
    from lipspark.frame import AnnotatedFrame

    if all(isinstance(f, DataFrame) for f in frames):
        return fn(*frames)
    if all(isinstance(f, AnnotatedFrame) for f in frames):
        return AnnotatedFrame._black_box(fn, label, list(frames))
    raise AnnotationError(
        f"black box {label!r} got a mix of plain DataFrames and annotated frames; "
        "annotate every input (Tracker.annotate) or none"
    )
