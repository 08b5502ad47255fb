"""Expansion of compact segments into nodes and edges (no Spark needed)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from lipspark.errors import StoreError
from lipspark.vocabulary.ids import SEGMENT_SHIFT, aggregate_salt
from lipspark.graph.expand import expand_segments
from lipspark.graph.model import ProvenanceGraph


def base(seg, rel, keys):
    ids = [(seg << SEGMENT_SHIFT) | i for i in range(len(keys))]
    return ({"seg": seg, "kind": "base", "meta": {"relation": rel, "key": ["k"], "columns": ["k"]}},
            {"tuples": pa.table({"__lp_id": ids, "k": keys})}), ids


def test_group_with_products_and_aggregates():
    (hr, r), rid = base(1, "R", ["a", "b"])
    (hs, s), sid = base(2, "S", ["x"])
    g = 12345
    members = pa.table({
        "g": [g, g, g], "m": [777, 888, 888],
        "__lp_f0": [rid[0], rid[1], rid[1]], "__lp_f1": [sid[0], sid[0], sid[0]],
        "x0": pa.array([5, None, None], pa.int64()),
    })
    grp = ({"seg": 3, "kind": "group", "meta": {"label": "δ", "k": 2, "aggregates": [
        {"op": "Sum", "arg": 0, "column": "s"}, {"op": "Count", "arg": None, "column": "n"}]}},
        {"members": members})
    nodes, edges = expand_segments([(hr, r), (hs, s), grp])
    graph = ProvenanceGraph(nodes, edges)
    assert str(graph.polynomial(g)) == "δ(R:a·S:x + R:b·S:x + R:b·S:x)"
    assert sorted(graph.children(g)) == [777, 888, 888]  # duplicate member rows: two edges
    assert graph.node(777)["label"] == "·" and sorted(graph.children(777)) == sorted([rid[0], sid[0]])
    sum_node, count_node = g ^ aggregate_salt(0), g ^ aggregate_salt(1)
    assert (graph.node(sum_node)["label"], graph.node(sum_node)["value"]) == ("Sum", 5)
    assert (graph.node(count_node)["label"], graph.node(count_node)["value"]) == ("Count", 3)
    assert len(graph.children(sum_node)) == 1 and len(graph.children(count_node)) == 3
    assert str(graph.value(sum_node)) == "Sum(R:a·S:x ⊗ 5)"


def test_expansion_is_deterministic_whatever_the_member_order():
    (hr, r), rid = base(1, "R", ["a", "b", "c"])
    rows = {"g": [1, 1, 2], "m": rid, "x0": [3.0, 1.0, 2.0]}
    meta = {"seg": 2, "kind": "group", "meta": {"label": "δ", "k": 1, "aggregates": [{"op": "Max", "arg": 0, "column": "hi"}]}}
    a = expand_segments([(hr, r), (meta, {"members": pa.table(rows)})])
    rev = {k: list(reversed(v)) for k, v in rows.items()}
    b = expand_segments([(hr, r), (meta, {"members": pa.table(rev)})])
    for x, y in zip(a, b):
        assert sorted(map(tuple, x.astype(str).values.tolist())) == sorted(map(tuple, y.astype(str).values.tolist()))


def test_id_collision_is_an_error():
    (hr, r), rid = base(1, "R", ["a"])
    clash = ({"seg": 2, "kind": "group", "meta": {"label": "δ", "k": 1, "aggregates": []}},
             {"members": pa.table({"g": [rid[0]], "m": [rid[0]]})})
    with pytest.raises(StoreError, match="collision"):
        expand_segments([(hr, r), clash])


def test_unknown_segment_kind_is_an_error():
    with pytest.raises(StoreError, match="unknown segment kind"):
        expand_segments([({"seg": 1, "kind": "teleport", "meta": {}}, {})])
