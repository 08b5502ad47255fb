"""Anti join rule: each left row without a partner, ``r ⊖ δ(Σ partners)`` (a monus).

``join(other, on, how="anti" | "leftanti" | "left_anti")`` keeps each left row that has *no*
partner on the right, as often as the left has it (as Spark does). Its provenance is the
m-semiring difference ``r ⊖ δ(Σ partners)`` (Geerts and Poggi 2010; ProvSQL's monus gate,
which it uses for ``EXCEPT`` and ``NOT EXISTS``): the row, as long as no partner holds.

* A row with no partner at all is ``r ⊖ δ(0) = r``: it keeps its factors, value and bag
  columns, and nothing is recorded for it.
* A row *with* partners is absent from the output (its difference is 0 in this world), but a
  deletion of all its partners makes it appear, so the graph holds it: one ⊖ node per such row
  (a :class:`~lipspark.vocabulary.MonusSegment`), its minuend the row's p-node and its
  subtrahend a δ with an edge from each partner, with the row's data and how many copies of it
  the left has. Deletion propagation reports it as appearing (:mod:`lipspark.query.deletion`).

Partners are found as Spark finds them: on column names (a null key never matches) or on a
condition (a Column, or a list of them). :func:`record_absent` is shared with the outer joins
(:mod:`~lipspark.capture.rules.outer`), whose padded rows follow the same rule.
"""
from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from lipspark.capture.rules._common import unique_columns
from lipspark.capture.rules.condition import record_join_condition
from lipspark.capture.rules.semijoin import _row_id
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary import MonusSegment
from lipspark.vocabulary.columns import factor
from lipspark.vocabulary.ids import MINUEND, SUBTRAHEND

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["ANTI", "anti_join", "join_keys", "record_absent"]

#: The ``how`` of an anti join, lower-cased without underscores (``left_anti`` is ``leftanti``).
ANTI = ("anti", "leftanti")

# temporary columns of the rule (never in an annotated frame's columns)
_ROW, _TUPLE, _LEFT, _RIGHT = "__lp_row", "__lp_tuple", "__lp_lm", "__lp_rm"
_LF, _RF = "__lp_lf", "__lp_rf"


def join_keys(on: Any) -> list[str] | None:
    """The key column names of ``on``, or ``None`` when it is a condition."""
    if isinstance(on, str):
        return [on]
    if isinstance(on, (list, tuple)) and on and all(isinstance(c, str) for c in on):
        return list(on)
    return None


def _condition(on: Any) -> Column:
    return reduce(lambda a, b: a & b, on) if isinstance(on, (list, tuple)) else on


def anti_join(left: AnnotatedFrame, right: AnnotatedFrame, on: Any, how: str) -> AnnotatedFrame:
    """``left.join(right, on, how)`` for an anti ``how``: the left rows without a partner, each
    its own annotation (``r ⊖ 0``); the rows with partners recorded as ⊖ nodes."""
    if on is None or (isinstance(on, (list, tuple)) and not on):
        raise UnsupportedOperation(f"join(how={how!r}) without a condition",
                                   "name the key columns (on=['k']) or give a condition (on=F.col('x') < F.col('y'))")
    ldf, rdf = left.with_annotations(), right.with_annotations()
    names = join_keys(on)
    probe = left.to_plain().join(right.to_plain(), on, "left_anti")  # Spark's own checks and key types
    record_join_condition(left, right, probe, names, "anti join")
    record_absent(left, right, on, "anti join")
    out = ldf.join(rdf, names if names else _condition(on), "left_anti")
    return left.derive(out, left.layout)


def record_absent(left: AnnotatedFrame, right: AnnotatedFrame, on: Any, what: str,
                  padded: Sequence[str] = ()) -> None:
    """Record a ⊖ node ``r ⊖ δ(Σ partners)`` for each distinct left row ``r`` that has partners
    on the right (an anti join's dropped row, an outer join's padded row that is not there).

    The row's data is its visible columns, then ``padded`` (an outer join's columns from the
    other side) as nulls. Rows equal in data and annotation share one ⊖ node, which counts them.
    """
    unique_columns(left, f"an {what}")
    tracker = left.tracker
    seg = tracker.builder.allocate()
    ldf, rdf = tracker.share(left.with_annotations()), tracker.share(right.with_annotations())
    lk, rk = left.layout.k, right.layout.k
    k = max(lk, rk)
    row = F.to_json(F.struct(*[ldf[c] for c in left.columns], *[F.lit(None).alias(c) for c in padded]),
                    {"ignoreNullFields": "false"})
    rows = ldf.withColumns({_ROW: _row_id(seg, ldf), _TUPLE: row, _LEFT: left.layout.member_col(seg),
                            **{f"{_LF}{i}": c for i, c in enumerate(left.layout.padded_factor_cols(k))}})
    rx = rdf.withColumns({_RIGHT: right.layout.member_col(seg),
                          **{f"{_RF}{i}": c for i, c in enumerate(right.layout.padded_factor_cols(k))}})
    names = join_keys(on)
    pairs = rows.dropDuplicates([_ROW]).join(rx, names if names else _condition(on), "inner")
    fk = range(k) if k > 1 else range(0)
    minuend = pairs.select(F.col(_ROW).alias("g"), F.col(_LEFT).alias("m"), F.lit(MINUEND).alias("side"),
                           *[F.col(f"{_LF}{i}").alias(factor(i)) for i in fk]).dropDuplicates(["g"])
    subtrahend = pairs.select(F.col(_ROW).alias("g"), F.col(_RIGHT).alias("m"), F.lit(SUBTRAHEND).alias("side"),
                              *[F.col(f"{_RF}{i}").alias(factor(i)) for i in fk])
    having = minuend.select("g")
    copies = (rows.select(F.col(_ROW).alias("g"), _TUPLE).join(having, "g", "left_semi")
              .groupBy("g").agg(F.first(_TUPLE).alias("tuple"), F.count(F.lit(1)).alias("copies")))
    tracker.builder.record(MonusSegment(seg, tracker.context, minuend="row", k=k if k > 1 else 1),
                           sides=minuend.unionByName(subtrahend), rows=copies)
