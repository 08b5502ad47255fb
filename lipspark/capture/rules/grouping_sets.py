"""Grouping sets: ``rollup(...)``, ``cube(...)`` and ``groupingSets(...)``, then ``.agg(...)``.

SQL's GROUPING SETS are a union of group-bys, one per grouping set, with the key columns a set
leaves out null (Gray et al., *Data Cube*, 1997; the SQL:1999 rewrite). The rule is that union:
each set's ``groupBy(set).agg(...)`` by the aggregation rule
(:func:`~lipspark.capture.rules.aggregate.aggregate`: a δ per group over its members, a v-node
per aggregate), the key columns it leaves out null with no v-node, then the union rule (each row
keeps its annotation). A rollup of ``n`` keys is ``n + 1`` group-bys, a cube ``2ⁿ``.

The set without keys (a rollup's or cube's grand total) is not a keyless ``agg``: Spark groups
the rows of every set by the set's id too, so the grand total is a group like the others — δ of
every row, and no row over no rows (where a keyless ``agg`` has one, annotated 1). It is the
group-by of a constant. ``grouping()`` and ``grouping_id()`` are refused: the union has no
grouping id to read (the alternative: the level is which keys are null, or a union of group-bys
each with its ``F.lit(level)``).

>>> rollup_sets(3), cube_sets(2)
([(0, 1, 2), (0, 1), (0,), ()], [(0, 1), (0,), (1,), ()])
"""
from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.plan import analyzed, node_name
from lipspark.capture.rules import aggregate as _aggregate
from lipspark.capture.rules import union as _union
from lipspark.errors import UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import GroupedData

    from lipspark.frame import AnnotatedFrame

__all__ = ["cube_sets", "grouping_sets", "named_sets", "rollup_sets"]

#: The column Spark's grouping analytics add, which grouping() and grouping_id() read.
_GROUPING_ID = "spark_grouping_id"


def rollup_sets(n: int) -> list[tuple[int, ...]]:
    """The grouping sets of ``rollup`` over ``n`` keys (positions): every prefix, longest first."""
    return [tuple(range(i)) for i in range(n, -1, -1)]


def cube_sets(n: int) -> list[tuple[int, ...]]:
    """The grouping sets of ``cube`` over ``n`` keys (positions): every subset, largest first."""
    return [c for size in range(n, -1, -1) for c in combinations(range(n), size)]


def named_sets(frame: AnnotatedFrame, keys: Sequence[Any], sets: Sequence[Sequence[Any]]) -> list[tuple[int, ...]]:
    """The grouping sets of ``groupingSets(sets, *keys)`` as positions in ``keys``: each set's
    members name key columns (as Spark compares names)."""
    same: Callable[[str, str], bool] = ((lambda a, b: a == b) if frame.tracker.case_sensitive
                                        else (lambda a, b: a.lower() == b.lower()))
    out = []
    for s in sets:
        positions = []
        for member in s:
            at = [i for i, k in enumerate(keys) if isinstance(k, str) and isinstance(member, str) and same(k, member)]
            if not at:
                raise UnsupportedOperation(
                    f"groupingSets with the set member {member!r}, not the name of one of the key columns {list(keys)}",
                    "name the keys as strings, groupingSets([['a', 'b'], ['a'], []], 'a', 'b'), computing an expression "
                    "key in a column first (withColumn)")
            positions.append(at[0])
        out.append(tuple(sorted(set(positions))))
    return out


def _quoted(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def grouping_sets(frame: AnnotatedFrame, keys: Sequence[Any], sets: Sequence[Sequence[int]], exprs: Sequence[Any],
                  plain: Callable[[DataFrame], GroupedData], what: str) -> AnnotatedFrame:
    """``plain(df).agg(*exprs)`` — ``plain`` the grouping module code wrote (``rollup``, ``cube``,
    ``groupingSets`` over ``keys``; ``what`` names it in errors) — as the union over ``sets``
    (positions in ``keys``) of one group-by each, the keys a set leaves out null.

    Spark analyzes the plain grouping first (its errors, its output's names and types; no job)."""
    out = plain(frame.to_plain()).agg(*exprs)
    top = analyzed(out)
    if any(_GROUPING_ID in str(e.toString()) for e in _aggregate_expressions(top)):
        raise UnsupportedOperation(
            f"grouping() or grouping_id() in {what}(...).agg(...) (lipspark computes the grouping sets as a union of "
            "group-bys, which has no grouping id)",
            "tell the levels apart by which key columns are null, or union one groupBy per level with F.lit(level) "
            "as a column")
    names = out.columns
    types = [f.dataType for f in out.schema.fields]
    nkeys = len(keys)
    parts = []
    for s in sets:
        group = [keys[i] for i in s]
        constant = [] if group else [F.lit(0).alias(_fresh("lp_all", names))]  # a group, absent over no rows
        part = _aggregate.aggregate(frame, group + constant, list(exprs))
        cols = part.columns
        select: list[Column] = []
        for i in range(nkeys):
            if i in s:
                select.append(_quoted(cols[s.index(i)]).alias(names[i]))
            else:
                select.append(F.lit(None).cast(types[i]).alias(names[i]))
        select += [_quoted(c) for c in cols[len(group) + len(constant):]]
        parts.append(part.select(*select))
    result = parts[0]
    for p in parts[1:]:
        result = _union.union(result, p, by_name=False)
    return result


def _aggregate_expressions(top: Any) -> list[Any]:
    """The aggregate expressions of the analyzed plan's Aggregate (under any projection)."""
    node = top
    while node is not None and node_name(node) != "Aggregate":
        children = node.children()
        node = children.apply(0) if children.size() else None
    if node is None:
        return []
    seq = node.aggregateExpressions()
    return [seq.apply(i) for i in range(seq.size())]


def _fresh(name: str, taken: Sequence[str]) -> str:
    lowered = {t.lower() for t in taken}
    while name.lower() in lowered:
        name += "_"
    return name
