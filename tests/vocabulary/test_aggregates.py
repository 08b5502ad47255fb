"""One aggregate semantics everywhere: expansion's recorded value, deletion's what-if value,
the semirings' Σ kᵢ ⊗ vᵢ and :func:`lipspark.vocabulary.aggregate` agree (hypothesis)."""
from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.graph.expand import expand_segments
from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import BOOLEAN, COUNTING, AggValue, evaluate
from lipspark.vocabulary import AggregateSpec, BaseSegment, Context, GroupSegment, Op, aggregate
from lipspark.vocabulary.ids import aggregate_ids, positional

OPS = (Op.COUNT, Op.SUM, Op.MIN, Op.MAX, Op.AVG)
GROUP = 4242
SETTINGS = settings(max_examples=60, deadline=None, database=None)

numbers = st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
members = st.lists(st.one_of(st.none(), numbers), min_size=0, max_size=8)


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


def _graph(values: list[Any]) -> tuple[GraphIndex, list[int], dict[Op, Any]]:
    """One group (keyless, so it exists over no members too) of base tuples R:0.. whose argument
    ``x0`` is ``values``, with one aggregate per operator; also the values expansion recorded."""
    tokens = [positional(1, i) for i in range(len(values))]
    base = BaseSegment(1, Context(), relation="R", key=("i",), columns=("i",))
    group = GroupSegment(2, Context(), op=Op.DELTA, label="δ", aggregates=tuple(AggregateSpec(op, 0, op.name.lower()) for op in OPS),
                         group=GROUP)
    x0 = pa.array(values, pa.float64() if any(isinstance(v, float) for v in values) else pa.int64())
    segments = [(base, {"tuples": pa.table({"__lp_id": pa.array(tokens, pa.int64()), "i": list(range(len(values)))})}),
                (group, {"members": pa.table({"g": pa.array([GROUP] * len(values), pa.int64()), "m": pa.array(tokens, pa.int64()), "x0": x0})})]
    nodes, edges = expand_segments(segments)
    recorded = {op: nodes.loc[nodes["id"] == aggregate_ids(GROUP, j), "value"].item() for j, op in enumerate(OPS)}
    return GraphIndex.build(nodes, edges), tokens, recorded


@SETTINGS
@given(members, st.data())
def test_expansion_deletion_semirings_and_vocabulary_agree(values, data):
    g, tokens, recorded = _graph(values)
    gone = data.draw(st.sets(st.sampled_from(range(len(values))), max_size=len(values)) if values else st.just(set()))
    survivors = [v for i, v in enumerate(values) if i not in gone]
    result = delete(g, [tokens[i] for i in sorted(gone)])
    changes = {c.node: c.after for c in result.values}
    removed = set(result.removed_ids.tolist())
    for j, op in enumerate(OPS):
        node = aggregate_ids(GROUP, j)
        want = aggregate(op, values)
        assert g.op_of(g.position(node)) is op
        # 1. the value expansion recorded
        assert _same(recorded[op], want), (op, recorded[op], want)
        # 2. the semirings over the node's AggValue, every token present
        expr = g.value(node)
        assert isinstance(expr, AggValue) and expr.op == op.label
        assert _same(evaluate(expr, COUNTING, {}, default=1), want)
        assert _same(evaluate(expr, BOOLEAN, {}, default=True), want)
        # ... and with the deleted tokens absent
        absent = {f"R:{i}": 0 for i in gone}
        assert _same(evaluate(expr, COUNTING, absent, default=1), aggregate(op, survivors))
        # 3. deletion's what-if value (gone altogether when every ⊗ member is deleted: Def. 4.2)
        if node in removed:
            assert all(v is None for v in survivors) and any(v is not None for v in values)
            continue
        after = changes.get(node, recorded[op])
        assert after is not UNKNOWN and _same(after, aggregate(op, survivors)), (op, after, survivors)


def test_count_skips_nulls_everywhere():
    g, tokens, recorded = _graph([None, 1, 2])
    assert recorded[Op.COUNT] == 2 == aggregate(Op.COUNT, [None, 1, 2])
    assert evaluate(g.value(aggregate_ids(GROUP, 0)), COUNTING, {}, default=1) == 2
    r = delete(g, [tokens[1]])
    assert {c.node: c.after for c in r.values}[aggregate_ids(GROUP, 0)] == 1


def test_avg_of_decimals_is_sparks_decimal(spark):
    """Avg of decimal(15, 2) is decimal(19, 6) rounded half up in Spark; the graph's value and a
    what-if's must be that number, not a float (found by the TPC-H oracle, Q1's avg_disc)."""
    from decimal import Decimal

    from pyspark.sql import functions as F

    cases = [[Decimal("0.01")] + [Decimal("0.00")] * 31,  # 0.0003125: half up gives 0.000313
             [Decimal("0.05"), Decimal("0.04"), Decimal("0.06"), Decimal("0.05"), Decimal("0.03"), Decimal("0.07"), Decimal("0.02")],
             [Decimal("-1.00"), Decimal("0.01"), Decimal("0.01")]]
    for values in cases:
        df = spark.createDataFrame([(v,) for v in values], "d decimal(15,2)")
        expected = df.agg(F.avg("d")).first()[0]
        got = aggregate(Op.AVG, values)
        assert (got, str(got)) == (expected, str(expected))
