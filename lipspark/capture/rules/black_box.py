"""Relation-level black box rule: coarse inside, fine around (Lipstick §3.2).

The function runs on the plain inputs; every result row derives from one p-node of operator
:attr:`~lipspark.vocabulary.Op.BLACK_BOX` labelled with the function's name, with an edge from
the p-node of every input row (recorded as a group segment with one group).
"""
from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import factor, is_hidden
from lipspark.capture.rules._common import same_tracker
from lipspark.errors import AnnotationError
from lipspark.vocabulary import GroupSegment, Op
from lipspark.vocabulary.ids import segment_node

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["relation_black_box"]


def relation_black_box(fn: Callable[..., Any], label: str, frames: Sequence[AnnotatedFrame]) -> AnnotatedFrame:
    """Apply ``fn`` to the plain data of ``frames``; its rows all get the black box's p-node."""
    first = frames[0]
    for f in frames[1:]:
        same_tracker(first, f, f"black box {label}")
    tracker = first.tracker
    seg = tracker.builder.allocate()
    node = segment_node(seg)
    result = fn(*[f.to_plain() for f in frames])
    if not isinstance(result, DataFrame):
        raise AnnotationError(f"black box {label!r} must return a DataFrame, returned {type(result).__name__}")
    hidden = [c for c in result.columns if is_hidden(c)]
    if hidden:
        raise AnnotationError(f"black box {label!r} returned reserved columns {hidden}")
    k = max(f.layout.k for f in frames)
    members = []
    for f in frames:
        df = tracker.share(f.with_annotations())
        members.append(df.select(F.lit(node).alias("g"), f.layout.member_col(seg).alias("m"), *f.layout.padded_factor_cols(k)))
    segment = GroupSegment(seg, tracker.context, op=Op.BLACK_BOX, label=label, k=k, aggregates=())
    tracker.builder.record(segment, members=reduce(DataFrame.union, members))
    return first.derive(result.withColumn(factor(0), F.lit(node)), Layout(1))
