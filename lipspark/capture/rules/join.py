"""Join rules: inner and cross joins (each output row the · of its two input rows); the others dispatched.

Inner joins, on column names or on a condition (an equality or not, a self join through
``alias``), and ``crossJoin``: the factor lists of both sides are concatenated
(``k = k_left + k_right``) instead of making a · node per row; the · node is made lazily, only
where a pipeline breaker needs the row as one p-node (the member rule). An inner join whose
condition is plain keys and a comparison over values (``p_partkey = mc_partkey AND supplycost =
min_cost``, ``min_cost`` an aggregate) is the join on the keys, then a filter on the rest, whose
outcome per row is recorded (:mod:`~lipspark.capture.rules.guard`). Semi joins keep the left
rows that have a partner, each ``r · δ(Σ partners)``: :mod:`~lipspark.capture.rules.semijoin`.
A row kept *because it has no partner* needs a monus: anti joins are
:mod:`~lipspark.capture.rules.antijoin` (``r ⊖ δ(Σ partners)``), outer joins
:mod:`~lipspark.capture.rules.outer` (matched rows as here, padded rows ``r ⊖ δ(Σ partners)``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from lipspark.capture.plan import _tree, analyzed, node_name, references
from lipspark.capture.rules._common import BLACK_BOX_HINT, align_left, align_right, same_tracker
from lipspark.capture.rules.antijoin import ANTI, anti_join
from lipspark.capture.rules.outer import OUTER, outer_join
from lipspark.capture.rules.condition import record_join_condition
from lipspark.capture.rules.semijoin import SEMI, semi_join
from lipspark.errors import UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["join", "cross_join", "KINDS"]

#: The join kinds the rules cover (as Spark spells them).
KINDS = "how='inner', 'cross', 'left_semi', 'left_anti', 'left', 'right' or 'full'"


def join(left: AnnotatedFrame, other: Any, on: Any = None, how: str | None = None) -> AnnotatedFrame:
    """Inner, cross or semi join on column names or a condition."""
    right = same_tracker(left, other, "join")
    kind = (how or "inner").lower().replace("_", "")
    if kind in SEMI:
        return semi_join(left, right, on, str(how))
    if kind in ANTI:
        return anti_join(left, right, on, str(how))
    if kind in OUTER:
        return outer_join(left, right, on, str(how))
    if kind == "cross" and on is None:
        return cross_join(left, right)
    if kind not in ("inner", "cross"):
        left.to_plain().join(right.to_plain(), on, how)  # Spark's own error for a join type it does not know
        raise UnsupportedOperation(f"join(how={how!r})", KINDS + "; or " + BLACK_BOX_HINT)
    if on is None:
        raise UnsupportedOperation("join without a condition", "crossJoin(other) for a Cartesian product")
    keys = {on} if isinstance(on, str) else ({c for c in on if isinstance(c, str)} if isinstance(on, (list, tuple)) else set())
    aligned, layout = align_right(left, right, keys)
    joined = align_left(left, right, keys).join(aligned, on, "inner")
    if not keys and (left.layout.values or right.layout.values):
        split = split_condition(joined, set(left.layout.values) | set(right.layout.values), set(left.columns), set(right.columns))
        if split is not None:  # a join on plain keys and a condition over values: the join, then a filter
            from lipspark.capture.rules.selection import filter_rows

            plain, valued = split
            return filter_rows(join(left, right, F.expr(plain), how), F.expr(valued))
    record_join_condition(left, right, joined, keys or None)
    return left.derive(joined, layout)


def split_condition(joined: Any, values: set[str], left: set[str], right: set[str]) -> tuple[str, str] | None:
    """An inner join's condition as (the conjuncts reading no valued column, those reading one),
    as SQL text, when there are both and every column they read is named by one side only
    (the text is read back against the joined columns); else ``None``."""
    top = analyzed(joined)
    if node_name(top) == "Project" and node_name(top.child()) == "Join":
        top = top.child()
    if node_name(top) != "Join" or not top.condition().isDefined():
        return None
    plain: list[str] = []
    valued: list[str] = []
    stack = [top.condition().get()]
    while stack:
        j = stack.pop()
        if node_name(j) == "And":
            stack.extend([j.right(), j.left()])
            continue
        names = references(_tree(j))
        if any(n in left and n in right for n in names):
            return None
        (valued if any(n in values for n in names) else plain).append(str(j.sql()))
    if not plain or not valued:
        return None
    return " AND ".join(f"({p})" for p in plain), " AND ".join(f"({v})" for v in valued)


def cross_join(left: AnnotatedFrame, other: Any) -> AnnotatedFrame:
    """Cartesian product: every pair, each the · of its two rows."""
    right = same_tracker(left, other, "crossJoin")
    aligned, layout = align_right(left, right, set())
    return left.derive(align_left(left, right, set()).crossJoin(aligned), layout)
