"""EXCEPT rule: each distinct tuple of the left that the right lacks, ``δ(Σ left rows) ⊖ δ(Σ right rows)``.

``subtract(other)`` is SQL's EXCEPT (DISTINCT): the distinct tuples of the left side that the
right side does not have, compared by position in the types Spark widens the two sides to,
nulls equal to nulls. Its provenance is the m-semiring difference (Geerts and Poggi 2010;
ProvSQL's EXCEPT) of the tuple's δ on each side. The left side is de-duplicated by the
aggregate rule (a δ node per distinct tuple with an edge from each of its rows), then anti
joined null-safely with the right's rows (:mod:`~lipspark.capture.rules.antijoin`): a tuple the
right lacks is ``δ(Σ left rows) ⊖ 0``, its δ; a tuple the right has is absent, recorded as a ⊖
node over the right's rows of it, which appears when a deletion removes them all.

``exceptAll`` (m − n copies of a tuple) is refused: the counting semiring's monus gives the
number of copies, ``(Σ left rows) ⊖ (Σ right rows)``, but not an annotation for each copy — which
of the m rows stay is not a function of the rows. Use ``subtract`` for the distinct tuples.
"""
from __future__ import annotations

import re
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.capture.rules._common import same_tracker
from lipspark.capture.rules.aggregate import distinct
from lipspark.capture.rules.antijoin import anti_join
from lipspark.capture.rules.intersect import _positional
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary.columns import factor

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["subtract", "EXCEPT_ALL_WHY", "EXCEPT_ALL_INSTEAD"]

#: Why ``exceptAll`` is refused, and what to use.
EXCEPT_ALL_WHY = ("a bag difference: m − n copies of a tuple have a count ((Σ left rows) ⊖ (Σ right rows) in counting) "
                  "but no annotation per copy — which copies stay is not a function of the rows")
EXCEPT_ALL_INSTEAD = "subtract(other) for the distinct tuples of the left the right lacks, each δ(Σ left rows) ⊖ δ(Σ right rows)"


def subtract(left: AnnotatedFrame, other: Any) -> AnnotatedFrame:
    """``left.subtract(other)``: each distinct tuple of the left the right lacks."""
    right = same_tracker(left, other, "subtract")
    for side in (left, right):
        if side.layout.bags:
            raise UnsupportedOperation(f"subtract over nested bag column(s) {list(side.layout.bags)} whose members have provenance",
                                       "explode the bag first, or drop the column before subtracting")
    plain = left.to_plain().subtract(right.to_plain())  # Spark's own checks; the result's names and types
    types = [f.dataType for f in plain.schema.fields]
    names = plain.columns
    unique = len({c.lower() for c in names}) == len(names) and not any(re.fullmatch(r"_r\d+", c) for c in names)
    lcols = names if unique else [f"_l{i}" for i in range(len(types))]
    ldist = distinct(_positional(left, "_l", types))
    ldist = ldist.derive(ldist.with_annotations().toDF(*lcols, factor(0)), Layout(1))
    rpos = _positional(right, "_r", types)
    same = reduce(lambda a, b: a & b, [F.col(lc).eqNullSafe(F.col(f"_r{i}")) for i, lc in enumerate(lcols)])
    out = anti_join(ldist, rpos, same, "left_anti")
    return out.derive(out.with_annotations().toDF(*names, factor(0)), Layout(1))
