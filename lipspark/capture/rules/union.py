"""Union rule: bag union, every row keeps its annotation (the + is taken per distinct tuple,
when a later δ groups them).

Both sides are padded to the same number of factors with zeros (the semiring's 1); a value
column keeps its v-nodes where a side has them (null elsewhere); a nested bag keeps its members'
provenance only if both sides have it. ``unionByName`` matches columns by name as Spark does
(case-insensitively unless ``spark.sql.caseSensitive``); with ``allowMissingColumns=True`` a
column one side lacks is null on that side's rows, with no v-node (a constant null derives from
nothing), and the right side's extra columns come after the left's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import bag_col, factor, value_col
from lipspark.capture.rules._common import same_tracker
from lipspark.errors import AnnotationError, UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["union"]


def union(left: AnnotatedFrame, other: Any, *, by_name: bool, allow_missing: bool = False) -> AnnotatedFrame:
    """``union`` (by position) or ``unionByName`` (``allowMissingColumns`` is ``allow_missing``)."""
    right = same_tracker(left, other, "union")
    lcols, rcols = left.columns, right.columns
    if by_name:
        left.to_plain().unionByName(right.to_plain(), allowMissingColumns=allow_missing)  # Spark's own checks
        find = _finder(left.tracker.case_sensitive)
        visible = lcols + [c for c in rcols if find(lcols, c) is None]
        lnames = {c: find(lcols, c) for c in visible}
        rnames = {c: find(rcols, c) for c in visible}
    else:
        if len(rcols) != len(lcols):
            raise AnnotationError(f"union: {len(lcols)} columns on the left, {len(rcols)} on the right")
        lnames, rnames, visible = {c: c for c in lcols}, dict(zip(lcols, rcols)), lcols
    ll, rl = left.layout, right.layout
    values = [c for c in visible if lnames[c] in ll.values or rnames[c] in rl.values]
    half = [c for c in visible if lnames[c] is not None and rnames[c] is not None and (lnames[c] in ll.bags) != (rnames[c] in rl.bags)]
    if half:
        raise UnsupportedOperation(
            f"union of nested bag column(s) {sorted(half)} whose members have provenance on one side only",
            "build the bags on both sides the same way (collect_list or cogroup), or drop the column",
        )
    bags = [c for c in visible if lnames[c] in ll.bags or rnames[c] in rl.bags]
    layout = Layout(max(ll.k, rl.k), tuple(values), tuple(bags))
    lside = _side(left, lnames, visible, layout, right, rnames)
    rside = _side(right, rnames, visible, layout, left, lnames)
    # allowing missing columns, Spark also fills the fields a nested struct lacks on one side
    united = lside.unionByName(rside, allowMissingColumns=True) if allow_missing else lside.union(rside)
    return left.derive(united, layout)


def _finder(case_sensitive: bool) -> Callable[[list[str], str], "str | None"]:
    """The column of a list that a name means, as Spark resolves names (or ``None``)."""
    def find(cols: list[str], name: str) -> str | None:
        if name in cols:
            return name
        if case_sensitive:
            return None
        return next((c for c in cols if c.lower() == name.lower()), None)
    return find


def _side(frame: AnnotatedFrame, names: dict[str, "str | None"], visible: list[str], layout: Layout,
          other: AnnotatedFrame, other_names: dict[str, "str | None"]) -> DataFrame:
    """One side in the union's layout (``names``: output column → this side's column, ``None``
    for a column only ``other`` has: null here, of the other side's type)."""
    own = frame.layout
    schema = other.with_annotations().schema

    def absent(column: str, hidden: Callable[[str], str] = lambda c: c) -> Column:
        """Null, typed as the other side's column (or its hidden column)."""
        theirs = other_names[column]
        assert theirs is not None  # a column is on one side at least
        return F.lit(None).cast(schema[hidden(theirs)].dataType)

    zero = F.lit(0).cast("long")
    cols: list[Column] = []
    for c in visible:
        mine = names[c]
        cols.append((F.col(mine) if mine is not None else absent(c)).alias(c))
    cols += [F.col(factor(i)) if i < own.k else zero.alias(factor(i)) for i in range(layout.k)]
    for v in layout.values:
        mine = names[v]
        cols.append((F.col(value_col(mine)) if mine is not None and mine in own.values else F.lit(None).cast("long")).alias(value_col(v)))
    for b in layout.bags:
        mine = names[b]  # a column this side lacks is null, so it has no members
        cols.append((F.col(bag_col(mine)) if mine is not None and mine in own.bags else absent(b, bag_col)).alias(bag_col(b)))
    return frame.with_annotations().select(*cols)
