"""Expansion of compact segments into nodes and edges (no Spark needed)."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest

from lipspark.errors import StoreError
from lipspark.graph.expand import expand_segments
from lipspark.graph.index import GraphIndex
from lipspark.semiring import BlackBox, Delta
from lipspark.vocabulary import AggregateSpec, BaseSegment, Context, GroupSegment, Op, Segment
from lipspark.vocabulary.ids import aggregate_ids, positional


def base(seg, rel, keys):
    ids = [positional(seg, i) for i in range(len(keys))]
    return (BaseSegment(seg, Context(), relation=rel, key=("k",), columns=("k",)), {"tuples": pa.table({"__lp_id": ids, "k": keys})}), ids


def group(seg, *aggregates, k=1, label="δ", op=Op.DELTA):
    return GroupSegment(seg, Context(), op=op, label=label, k=k, aggregates=tuple(aggregates))


def test_group_with_products_and_aggregates():
    (hr, r), rid = base(1, "R", ["a", "b"])
    (hs, s), sid = base(2, "S", ["x"])
    g = 12345
    members = pa.table({
        "g": [g, g, g], "m": [777, 888, 888],
        "__lp_f0": [rid[0], rid[1], rid[1]], "__lp_f1": [sid[0], sid[0], sid[0]],
        "x0": pa.array([5, None, None], pa.int64()),
    })
    grp = (group(3, AggregateSpec(Op.SUM, 0, "s"), AggregateSpec(Op.COUNT, None, "n"), k=2), {"members": members})
    graph = GraphIndex.from_segments([(hr, r), (hs, s), grp])
    assert str(graph.polynomial(g)) == "δ(R:a·S:x + R:b·S:x + R:b·S:x)"
    assert graph.child_ids(g) == [777, 888, 888]  # duplicate member rows: two edges
    assert graph.node(777)["label"] == "·" and graph.child_ids(777) == sorted([rid[0], sid[0]])
    sum_node, count_node = aggregate_ids(g, 0), aggregate_ids(g, 1)
    assert (graph.node(sum_node)["label"], graph.node(sum_node)["value"]) == ("Sum", 5)
    assert (graph.node(count_node)["label"], graph.node(count_node)["value"]) == ("Count", 3)
    assert len(graph.child_ids(sum_node)) == 1 and len(graph.child_ids(count_node)) == 3
    assert str(graph.value(sum_node)) == "Sum(R:a·S:x ⊗ 5)"
    # every node has its operator
    ops = {int(i): Op(int(o)) for i, o in zip(graph.ids, graph.op)}
    assert ops[g] is Op.DELTA and ops[777] is Op.TIMES and ops[rid[0]] is Op.TOKEN
    assert ops[sum_node] is Op.SUM and ops[count_node] is Op.COUNT
    assert {ops[t] for t in graph.child_ids(count_node)} == {Op.TENSOR}
    assert {ops[c] for t in graph.child_ids(sum_node) for c in graph.child_ids(t) if graph.node(c)["kind"] == "v"} == {Op.CONSTANT}


def test_expansion_is_deterministic_whatever_the_member_order():
    (hr, r), rid = base(1, "R", ["a", "b", "c"])
    rows = {"g": [1, 1, 2], "m": rid, "x0": [3.0, 1.0, 2.0]}
    seg = group(2, AggregateSpec(Op.MAX, 0, "hi"))
    a = expand_segments([(hr, r), (seg, {"members": pa.table(rows)})])
    rev = {k: list(reversed(v)) for k, v in rows.items()}
    b = expand_segments([(hr, r), (seg, {"members": pa.table(rev)})])
    for x, y in zip(a, b):
        assert sorted(map(tuple, x.astype(str).values.tolist())) == sorted(map(tuple, y.astype(str).values.tolist()))


def test_a_relation_level_black_box_named_like_delta_is_a_black_box():
    (hr, r), rid = base(1, "R", ["a", "b"])
    seg = Segment.from_json({"seg": 2, "kind": "group", "meta": {"op": "black_box", "label": "δ", "k": 1, "aggregates": []}})
    graph = GraphIndex.from_segments([(hr, r), (seg, {"members": pa.table({"g": [9, 9], "m": rid})})])
    assert graph.op_of(graph.position(9)) is Op.BLACK_BOX
    assert isinstance(graph.polynomial(9), BlackBox) and not isinstance(graph.polynomial(9), Delta)


def test_nan_is_a_value_and_null_is_not():
    (hr, r), rid = base(1, "R", ["a", "b", "c"])
    rows = {"g": [1, 1, 1], "m": rid, "x0": pa.array([float("nan"), None, 2.0], pa.float64())}
    seg = group(2, AggregateSpec(Op.COUNT, 0, "n"), AggregateSpec(Op.MAX, 0, "hi"), AggregateSpec(Op.MIN, 0, "lo"))
    nodes, edges = expand_segments([(hr, r), (seg, {"members": pa.table(rows)})])
    values = [nodes.loc[nodes["id"] == aggregate_ids(1, j), "value"].item() for j in range(3)]
    assert values[0] == 2 and math.isnan(values[1]) and values[2] == 2.0  # Count 2, Max NaN, Min 2.0
    assert (edges["dst"] == aggregate_ids(1, 0)).sum() == 2  # no ⊗ for the null


def test_id_collision_is_an_error():
    (hr, r), rid = base(1, "R", ["a"])
    clash = (group(2), {"members": pa.table({"g": [rid[0]], "m": [rid[0]]})})
    with pytest.raises(StoreError, match="collision"):
        expand_segments([(hr, r), clash])


def test_unknown_segment_kind_is_an_error():
    with pytest.raises(StoreError, match="unknown segment kind"):
        Segment.from_json({"seg": 1, "kind": "teleport", "meta": {}})


def test_a_token_keeps_its_key_and_the_columns_kept_and_is_labelled_by_its_key():
    import json

    ids = [positional(1, i) for i in range(3)]
    table = pa.table({"__lp_id": ids, "k": ["a", "b", "b"], "level": ["secret", None, "public"]})
    kept = BaseSegment(1, Context(), relation="R", key=("k",), columns=("k", "level"))
    nodes, _ = expand_segments([(kept, {"tuples": table})])
    assert nodes["label"].tolist() == ["R:a", "R:b", "R:b#2"]  # the key alone, as without kept columns
    assert [json.loads(t) for t in nodes["tuple"]] == [{"k": "a", "level": "secret"}, {"k": "b", "level": None},
                                                      {"k": "b", "level": "public"}]
    keyless = BaseSegment(1, Context(), relation="R", columns=("k", "level"))
    nodes, _ = expand_segments([(keyless, {"tuples": table})])
    assert nodes["label"].tolist() == ["R:a,secret", "R:b,null", "R:b,public"]  # no key: labelled by every value
