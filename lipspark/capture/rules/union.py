"""Union rule: bag union, every row keeps its annotation (the + is taken per distinct tuple,
when a later δ groups them).

Both sides are padded to the same number of factors with zeros (the semiring's 1); a value
column keeps its v-nodes where a side has them (null elsewhere); a nested bag keeps its members'
provenance only if both sides have it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import bag_col, factor, value_col
from lipspark.capture.rules._common import same_tracker
from lipspark.errors import AnnotationError, UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["union"]


def union(left: AnnotatedFrame, other: Any, *, by_name: bool) -> AnnotatedFrame:
    """``union`` (by position) or ``unionByName``."""
    right = same_tracker(left, other, "union")
    lcols, rcols = left.columns, right.columns
    if len(rcols) != len(lcols):
        raise AnnotationError(f"union: {len(lcols)} columns on the left, {len(rcols)} on the right")
    if by_name:
        if set(rcols) != set(lcols):
            raise AnnotationError(f"unionByName: columns differ: {lcols} vs {rcols}")
        mapping = {c: c for c in lcols}
    else:
        mapping = dict(zip(lcols, rcols))
    ll, rl = left.layout, right.layout
    values = sorted(set(ll.values) | {c for c in lcols if mapping[c] in rl.values})
    bags = sorted(c for c in lcols if c in ll.bags and mapping[c] in rl.bags)
    half = sorted({c for c in lcols if (c in ll.bags) != (mapping[c] in rl.bags)})
    if half:
        raise UnsupportedOperation(
            f"union of nested bag column(s) {half} whose members have provenance on one side only",
            "build the bags on both sides the same way (collect_list or cogroup), or drop the column",
        )
    layout = Layout(max(ll.k, rl.k), tuple(values), tuple(bags))
    united = _side(left, {c: c for c in lcols}, lcols, layout).union(_side(right, mapping, lcols, layout))
    return left.derive(united, layout)


def _side(frame: AnnotatedFrame, names: dict[str, str], visible: list[str], layout: Layout) -> DataFrame:
    """One side in the union's layout (``names``: output column → this side's column)."""
    own = frame.layout
    zero = F.lit(0).cast("long")
    cols: list[Column] = [F.col(names[c]).alias(c) for c in visible]
    cols += [F.col(factor(i)) if i < own.k else zero.alias(factor(i)) for i in range(layout.k)]
    for v in layout.values:
        present = names[v] in own.values
        cols.append(F.col(value_col(names[v])).alias(value_col(v)) if present else F.lit(None).cast("long").alias(value_col(v)))
    cols += [F.col(bag_col(names[b])).alias(bag_col(b)) for b in layout.bags]
    return frame.with_annotations().select(*cols)
