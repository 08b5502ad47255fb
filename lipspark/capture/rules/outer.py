"""Outer join rule: matched rows as an inner join; a padded row is ``r ⊖ δ(Σ partners)``.

``join(other, on, how)`` with ``how`` ``"left"``/``"leftouter"``/``"left_outer"``, ``"right"``
(…), ``"full"``/``"outer"``/``"fullouter"``/``"full_outer"``, on column names or a condition:

* a row with partners is, for each partner, the · of the two rows (their factors
  concatenated, as :mod:`~lipspark.capture.rules.join` does);
* a row without partners is padded with nulls, and its annotation is ``r ⊖ δ(Σ partners)``
  (the m-semiring difference: Geerts and Poggi 2010; ProvSQL's outer joins): with no partner,
  ``r ⊖ 0 = r``, so it keeps its own factors (the other side's are 1) and the padded columns
  are null with no v-node;
* a row *with* partners has no padded row now, but deleting all its partners makes one appear:
  the graph holds it as a ⊖ node (:func:`~lipspark.capture.rules.antijoin.record_absent`), which
  deletion propagation reports as appearing. A full join does this on both sides.

A join without ``on`` is refused for these kinds: name the keys or give a condition.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from lipspark.capture.rules.antijoin import join_keys, record_absent
from lipspark.capture.rules.condition import record_join_condition
from lipspark.capture.rules._common import align_left, align_right
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary.columns import factor

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["OUTER", "outer_join"]

#: The ``how`` of an outer join (lower-cased without underscores) → the sides whose rows are padded.
OUTER = {**dict.fromkeys(("left", "leftouter"), ("left",)), **dict.fromkeys(("right", "rightouter"), ("right",)),
         **dict.fromkeys(("outer", "full", "fullouter"), ("left", "right"))}


def outer_join(left: AnnotatedFrame, right: AnnotatedFrame, on: Any, how: str) -> AnnotatedFrame:
    """``left.join(right, on, how)`` for an outer ``how`` (a key of :data:`OUTER`)."""
    kind = how.lower().replace("_", "")
    if on is None or (isinstance(on, (list, tuple)) and not on):
        raise UnsupportedOperation(f"join(how={how!r}) without a condition",
                                   "name the key columns (on=['k']) or give a condition (on=F.col('x') == F.col('y'))")
    names = join_keys(on)
    keys = set(names or [])
    aligned, layout = align_right(left, right, keys)
    joined = align_left(left, right, keys).join(aligned, on, how)
    record_join_condition(left, right, joined, names)
    # a padded row's factors from the other side are null: 1 (factor 0), r ⊖ 0 = r
    joined = joined.withColumns({factor(i): F.coalesce(F.col(factor(i)), F.lit(0).cast("long")) for i in range(layout.k)})
    sides = OUTER[kind]
    if "left" in sides:
        record_absent(left, right, on, f"outer join (how={how!r})", padded=[c for c in right.columns if c not in keys])
    if "right" in sides:
        record_absent(right, left, on, f"outer join (how={how!r})", padded=[c for c in left.columns if c not in keys])
    return left.derive(joined, layout)
