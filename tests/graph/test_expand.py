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


# ---------------------------------------------------------------------- version 3: DISTINCT, black boxes, expressions
def test_a_distinct_aggregate_has_one_delta_and_one_tensor_per_distinct_value():
    (hr, r), rid = base(1, "R", ["a", "b", "c", "d"])
    members = pa.table({"g": [9, 9, 9, 9], "m": rid, "x0": pa.array([10, 10, 30, None], pa.int64()),
                        "d0": pa.array([101, 101, 303, None], pa.int64()), "d1": pa.array([111, 111, 333, None], pa.int64())})
    seg = group(2, AggregateSpec(Op.COUNT, None, "n", distinct="d0"), AggregateSpec(Op.SUM, 0, "s", distinct="d1"))
    graph = GraphIndex.from_segments([(hr, r), (seg, {"members": members})])
    assert str(graph.value(aggregate_ids(9, 0))) == "Count(δ(R:a + R:b) ⊗ 1 + δ(R:c) ⊗ 1)"
    assert str(graph.value(aggregate_ids(9, 1))) == "Sum(δ(R:a + R:b) ⊗ 10 + δ(R:c) ⊗ 30)"
    assert (graph.node(aggregate_ids(9, 0))["value"], graph.node(aggregate_ids(9, 1))["value"]) == (2, 40)
    assert graph.node(101)["label"] == "δ" and graph.child_ids(101) == rid[:2]
    # the member with a null value is in the group, in no δ of a value
    assert graph.child_ids(9) == rid and graph.node(rid[3])["kind"] == "p" and len(graph.parents(graph.position(rid[3]))) == 1


def test_a_distinct_aggregate_expands_the_same_whatever_the_member_order():
    (hr, r), rid = base(1, "R", ["a", "b", "c"])
    rows = {"g": [1, 1, 1], "m": rid, "x0": [3, 3, 2], "d0": [7, 7, 8]}
    seg = group(2, AggregateSpec(Op.SUM, 0, "s", distinct="d0"))
    a = expand_segments([(hr, r), (seg, {"members": pa.table(rows)})])
    b = expand_segments([(hr, r), (seg, {"members": pa.table({k: list(reversed(v)) for k, v in rows.items()})})])
    for x, y in zip(a, b):
        assert x.sort_values(list(x.columns[:2])).reset_index(drop=True).equals(y.sort_values(list(y.columns[:2])).reset_index(drop=True))


def test_a_black_box_aggregate_has_an_edge_from_every_member_and_the_recorded_value():
    (hr, r), rid = base(1, "R", ["a", "b", "c"])
    members = pa.table({"g": [9, 9, 9], "m": rid, "v0": pa.array([None, 555, None], pa.int64())})
    values = pa.table({"g": [9], "y0": ['{"d":"1.5"}']})
    seg = group(2, AggregateSpec(Op.BLACK_BOX, None, "sd", vnode="v0", label="stddev", value="y0"))
    nodes, edges = expand_segments([(hr, r), (seg, {"members": members, "values": values})])
    node = nodes[nodes["id"] == aggregate_ids(9, 0)].iloc[0]
    assert (Op(node["op"]), node["label"], node["value"]) == (Op.BLACK_BOX, "stddev", 1.5)
    assert sorted(edges.loc[edges["dst"] == aggregate_ids(9, 0), "src"]) == sorted([*rid, 555])
    with pytest.raises(StoreError, match="no values table"):
        expand_segments([(hr, r), (seg, {"members": members})])


def test_an_expression_over_aggregates_is_fed_by_the_group_and_its_aggregates():
    (hr, r), rid = base(1, "R", ["a", "b"])
    members = pa.table({"g": [9, 9], "m": rid, "x0": pa.array([4, 6], pa.int64())})
    seg = group(2, AggregateSpec(Op.SUM, 0, "r: sum(v)"), AggregateSpec(Op.COUNT, None, "r: count(1)"),
                AggregateSpec(Op.BLACK_BOX, None, "r", label="r", value="y2", inputs=(0, 1)))
    graph = GraphIndex.from_segments([(hr, r), (seg, {"members": members, "values": pa.table({"g": [9], "y2": ['{"d":"5.0"}']})})])
    r_node = aggregate_ids(9, 2)
    assert sorted(graph.child_ids(r_node)) == sorted([9, aggregate_ids(9, 0), aggregate_ids(9, 1)])
    assert str(graph.value(r_node)) == "r(δ(R:a + R:b))" and graph.node(r_node)["value"] == 5.0


def test_an_argument_expression_over_v_nodes_has_black_box_member_values():
    (hr, r), rid = base(1, "R", ["a", "b"])
    members = pa.table({"g": [9, 9], "m": rid, "x0": pa.array([8, 2], pa.int64()), "w0_0": pa.array([444, None], pa.int64())})
    seg = group(2, AggregateSpec(Op.SUM, 0, "s", reads=("w0_0",), argument="(n * 2)"))
    nodes, edges = expand_segments([(hr, r), (seg, {"members": members})])
    values = nodes[nodes["label"] == "(n * 2)"]
    assert sorted(values["value"]) == [2, 8] and set(values["op"]) == {int(Op.BLACK_BOX)}
    assert edges.loc[edges["src"] == 444, "dst"].tolist() == values.loc[values["value"] == 8, "id"].tolist()


def test_version_3_specs_round_trip_and_need_version_3():
    specs = (AggregateSpec(Op.COUNT, None, "n", distinct="d0"), AggregateSpec(Op.SUM, 0, "s", reads=("w1_0",), argument="(n * 2)"),
             AggregateSpec(Op.BLACK_BOX, None, "sd", vnode="v2", label="stddev", value="y2"),
             AggregateSpec(Op.BLACK_BOX, None, "r", label="r", value="y3", inputs=(0, 1)))
    seg = group(2, *specs)
    assert Segment.from_json(seg.to_json()) == seg and seg.version == 3
    assert group(2, AggregateSpec(Op.SUM, 0, "s", vnode="v0")).version == 2
    with pytest.raises(StoreError, match="computed from aggregates"):
        group(2, AggregateSpec(Op.BLACK_BOX, None, "r", label="r", value="y0", inputs=(0,)))
    with pytest.raises(StoreError, match="label or value"):
        AggregateSpec.from_json({"op": "black_box", "arg": None, "column": "sd"})


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


def test_a_rows_tuple_is_the_json_of_its_values_as_json_dumps_writes_the_row(tmp_path):
    """tuple_json encodes a column at a time; it must give json.dumps(row) of each row, exactly."""
    import datetime
    import decimal
    import json

    import pyarrow.parquet as pq

    from lipspark.graph.expand import _read_files, tuple_json
    from lipspark.vocabulary.segments import FileRef

    table = pa.table({
        "s": pa.array(["a", "a", None, 'q"u\\ote', "ünï", "1"]),
        "i": pa.array([1, 1, None, -7, 2**40, 1], pa.int64()),
        "f": pa.array([1.0, -0.0, float("nan"), None, 0.0, 1e300]),
        "b": pa.array([True, False, None, True, True, False]),
        "d": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("0"), decimal.Decimal("-2.25"), None, decimal.Decimal("1")],
                      pa.decimal128(10, 2)),
        "t": pa.array([datetime.datetime(2026, 1, 1), None, datetime.datetime(1970, 1, 1, 0, 0, 1)] * 2, pa.timestamp("us")),
        "day": pa.array([datetime.date(2026, 11, 28), None] * 3, pa.date32()),
        "l": pa.array([[1, 2], None, [], [3], [1, 2], None], pa.list_(pa.int64())),
    })
    path = str(tmp_path / "r.parquet")
    pq.write_table(table, path)
    df = _read_files([FileRef.of(path, path)], None, "relation 'r'", None)
    cols = list(table.column_names)
    expected = [json.dumps(r, default=str) for r in df[cols].astype(object).where(df[cols].notna(), None).to_dict("records")]
    assert list(tuple_json(df, cols)) == expected
    assert list(tuple_json(df.iloc[:0], cols)) == []
