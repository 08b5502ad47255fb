"""Join rules: each output row's provenance is the · of its two input rows.

The factor lists of both sides are concatenated (``k = k_left + k_right``) instead of making a
· node per row; the · node is made lazily, only where a pipeline breaker needs the row as one
p-node (the member rule). Only inner and cross joins have a provenance rule here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import bag_col, factor, value_col
from lipspark.capture.plan import condition_sql, join_references
from lipspark.capture.rules._common import BLACK_BOX_HINT, same_tracker
from lipspark.capture.rules.condition import record_condition, valued_columns
from lipspark.errors import UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["join", "cross_join"]


def join(left: AnnotatedFrame, other: Any, on: Any = None, how: str | None = None) -> AnnotatedFrame:
    """Inner (or cross) join on column names or a condition."""
    right = same_tracker(left, other, "join")
    kind = (how or "inner").lower().replace("_", "")
    if kind == "cross" and on is None:
        return cross_join(left, right)
    if kind not in ("inner", "cross"):
        raise UnsupportedOperation(
            f"join(how={how!r})",
            f"an inner join (outer, semi and anti joins have no provenance rule here); or {BLACK_BOX_HINT}",
        )
    if on is None:
        raise UnsupportedOperation("join without a condition", "crossJoin(other) for a Cartesian product")
    keys = {on} if isinstance(on, str) else ({c for c in on if isinstance(c, str)} if isinstance(on, (list, tuple)) else set())
    aligned, layout = _align_right(left, right, keys)
    joined = left.with_annotations().join(aligned, on, "inner")
    _record_condition(left, right, keys or set(join_references(joined)), joined)
    return left.derive(joined, layout)


def _record_condition(left: AnnotatedFrame, right: AnnotatedFrame, read: set[str], joined: DataFrame) -> None:
    """A join whose condition reads values with v-nodes (``amount == best``, a join on an
    aggregate) records a CONDITION node over them (:mod:`~lipspark.capture.rules.condition`)."""
    sides = [(left.with_annotations(), valued_columns(read, left.layout.values)),
             (right.with_annotations(), valued_columns(read, right.layout.values))]
    if any(cols for _, cols in sides):
        record_condition(left.tracker, sides, f"join on {condition_sql(joined) or ', '.join(sorted(read))}")


def cross_join(left: AnnotatedFrame, other: Any) -> AnnotatedFrame:
    """Cartesian product: every pair, each the · of its two rows."""
    right = same_tracker(left, other, "crossJoin")
    aligned, layout = _align_right(left, right, set())
    return left.derive(left.with_annotations().crossJoin(aligned), layout)


def _align_right(left: AnnotatedFrame, right: AnnotatedFrame, keys: set[str]) -> tuple[DataFrame, Layout]:
    """The right side with its factors renumbered after the left's, and the joined layout.

    The annotations of a column name both sides have (other than a join key) are dropped: the
    name becomes ambiguous."""
    ll, rl = left.layout, right.layout
    clash = (set(left.columns) & set(right.columns)) - keys
    rdf = right.with_annotations()
    cols: list[Column] = [rdf[c] for c in right.columns]
    cols += [F.col(factor(i)).alias(factor(ll.k + i)) for i in range(rl.k)]
    values = [v for v in ll.values if v not in clash]
    bags = [b for b in ll.bags if b not in clash]
    for v in rl.values:
        if v not in clash and v not in keys:
            cols.append(F.col(value_col(v)).alias(value_col(v)))
            values.append(v)
    for b in rl.bags:
        if b not in clash and b not in keys:
            cols.append(F.col(bag_col(b)).alias(bag_col(b)))
            bags.append(b)
    return rdf.select(*cols), Layout(ll.k + rl.k, tuple(values), tuple(bags))
