"""A group-by on a value: which group a row joins is itself provenance, recorded per member.

``groupBy("c_count")`` over rows whose ``c_count`` is an aggregate's value (TPC-H Q13: customers
by their number of orders) puts each row in the group of that value. A what-if that deletes an
order changes a customer's count, and a re-run moves the customer to another group: the group it
left counts one less (or goes), the group it joins one more (or appears). The rule records, per
member whose key has a v-node:

* a CONSTANT v-node of the key's value as captured (one per distinct value: ids are content);
* an IN_GROUP v-node over the member's key v-node and that constant — true, and a what-if that
  changes the key recomputes it (:func:`~lipspark.vocabulary.arithmetic`: equal as Spark groups,
  null with null);
* one more factor of the member, a · p-node over its IN_GROUP: its polynomial is unchanged (the
  · over no p-node is 1), and a what-if that makes IN_GROUP false takes the member out of its
  group through Definition 4.2 — its ⊗ go, the group's aggregates recompute, a group left
  without members goes (:mod:`lipspark.query.deletion`, which lists the member as *moved*).

Where the member goes is the frame's to say: the aggregation's result carries the grouping (its
key columns, :class:`Regrouping`) through operations that keep its rows as they are (``orderBy``,
``alias``), and :func:`lipspark.query.prediction.predict` puts each moved member in the group of
its new key, recomputing that group's Count/Sum/Min/Max/Avg over its members and the newcomers,
or makes a new row when no group has that key. The graph alone cannot (the group it joins never
saw it), so a what-if on the graph says *not exact*.

The prediction says *not exact* where a column of the result is no Count/Sum/Min/Max/Avg (or a
DISTINCT one), or a regrouped aggregate feeds later operations.

Only a group-by whose keys are column names, one of them with v-nodes, is recorded so; a
grouping on several values, on an expression of a value, or a ``distinct`` over values records
one CONDITION node (:mod:`~lipspark.capture.rules.condition`).

>>> valued_key(["c_count"], ("c_count",)), valued_key(["a", "b"], ("a", "b")), valued_key(["k"], ())
('c_count', None, None)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import functions as F

from lipspark.capture.rules._common import value_json
from lipspark.capture.rules.latent import LatentRows
from lipspark.vocabulary import Op, RowNodeSegment
from lipspark.vocabulary.columns import factor, value_col
from lipspark.vocabulary.ids import node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["valued_key", "pin", "Regrouping", "GroupKeys"]


def valued_key(keys: Sequence[Any], values: Sequence[str]) -> str | None:
    """The one key column with v-nodes among ``keys`` (column names; ``values``: the frame's
    valued columns), else ``None`` (none, several, or a key that is an expression)."""
    if not all(isinstance(k, str) for k in keys):
        return None
    found = [k for k in keys if k in set(values)]
    return found[0] if len(found) == 1 else None


def pin(frame: "AnnotatedFrame", key: str) -> "AnnotatedFrame":
    """``frame`` with one more factor per row: the · over its IN_GROUP test of ``key`` (0, which
    stands for 1, where the row's key has no v-node)."""
    tracker = frame.tracker
    df = frame.with_annotations()
    own = F.col(value_col(key))
    text = value_json(F.col(f"`{key}`"), df.schema[key].dataType)
    segs = [tracker.builder.allocate() for _ in range(3)]
    constant = node_hash_col(segs[0], text)
    test = node_hash_col(segs[1], own, constant)
    member = node_hash_col(segs[2], test)
    valued = df.where(own.isNotNull())
    label = f"groupBy on {key}"
    none = F.array().cast("array<bigint>")
    for seg, op, kind, nodes in (
            (segs[0], Op.CONSTANT, "v", valued.select(constant.alias("id"), none.alias("children"), text.alias("value"))),
            (segs[1], Op.IN_GROUP, "v", valued.select(test.alias("id"), F.array(own, constant).cast("array<bigint>").alias("children"),
                                                      F.lit('{"v":true}').alias("value"))),
            (segs[2], Op.TIMES, "p", valued.select(member.alias("id"), F.array(test).cast("array<bigint>").alias("children"),
                                                   F.lit(None).cast("string").alias("value")))):
        tracker.builder.record(RowNodeSegment(seg, tracker.context, label=label if op is Op.IN_GROUP else op.label, op=op,
                                              node_kind=kind), nodes=nodes)
    layout = frame.layout
    new = layout.with_(k=layout.k + 1)
    pinned = df.withColumn(factor(layout.k), F.when(own.isNotNull(), member).otherwise(F.lit(0).cast("bigint")))
    hidden = new.hidden()
    ordered = [F.col(f"`{c}`") for c in df.columns if c not in set(hidden)] + [F.col(h) for h in hidden]
    return frame.derive(pinned.select(*ordered), new)


@dataclass(frozen=True)
class GroupKeys:
    """What a frame's prediction needs to regroup: the group-by's key columns, ``valued`` the
    one whose value a what-if may change."""

    keys: tuple[str, ...]
    valued: str


@dataclass(frozen=True)
class Regrouping:
    """The grouping a frame carries (see the module's text): its rows are the groups, as the
    aggregation made them."""

    groups: GroupKeys
    #: the plan nodes an operation may add and keep the rows as they are
    allowed: frozenset[str] = frozenset({"Sort", "SubqueryAlias", "ResolvedHint"})

    def then(self, step: Callable[["AnnotatedFrame"], "AnnotatedFrame"]) -> "Regrouping":
        return self

    def collect(self) -> LatentRows:
        """No rows: the frame's keys, for the prediction to regroup by."""
        return LatentRows([], frozenset(), self.groups)
