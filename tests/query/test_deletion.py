"""Deletion propagation (Lipstick §4.2, Definition 4.2) and what-if values, on generated graphs."""
from __future__ import annotations

import math

import networkx as nx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import UNKNOWN, delete, propagate
from lipspark.vocabulary import Op, aggregate
from tests.query.graphs import (
    AGG_OPS,
    assert_same_graph,
    dealership,
    group_of,
    naive_delete,
    workflow_graphs,
)

SETTINGS = settings(max_examples=30, deadline=None, database=None)


def _deleted_sets(gen, rnd):
    """A few nodes of any kind; sometimes a node together with one of its descendants."""
    ids = [r["id"] for r in gen.rows]
    picked = rnd.sample(ids, min(len(ids), rnd.randint(1, 4)))
    if gen.edge_list and rnd.random() < 0.3:
        picked.append(rnd.choice(gen.edge_list)[1])
    return picked


def _expected_values(nxg: nx.MultiDiGraph, removed: set[int]) -> dict[int, tuple]:
    """The what-if rules, stated plainly: surviving v-nodes downstream of the deletion get
    aggregates recomputed over their surviving ⊗ members (UNKNOWN if a member's value is),
    boundary values copy their value's new value, black boxes become UNKNOWN; report a node
    when its value is UNKNOWN or differs."""
    downstream = set().union(*(nx.descendants(nxg, r) for r in removed)) - removed
    after: dict[int, object] = {}
    out = {}
    for v in nx.topological_sort(nxg.subgraph(downstream)):
        a = nxg.nodes[v]
        if a["kind"] != "v":
            continue
        kids = [u for u, _ in nxg.in_edges(v) if u not in removed]
        label, before, op = a["label"], a.get("value"), Op(a["op"])
        if op.is_aggregate:
            vals = []
            for t in kids:
                vk = [u for u, _ in nxg.in_edges(t) if nxg.nodes[u]["kind"] == "v"]
                vals.append(after.get(vk[0], nxg.nodes[vk[0]].get("value")))
            new = len(vals) if label == "Count" else UNKNOWN if UNKNOWN in vals else aggregate(label, vals)
        elif op.is_boundary:
            vk = [u for u in kids if nxg.nodes[u]["kind"] == "v"]
            if not vk or vk[0] not in after:
                continue
            new = after[vk[0]]
        elif op is Op.TENSOR or not nxg.in_degree(v):
            continue
        else:
            new = UNKNOWN
        if new is UNKNOWN or new is None or before is None:
            differs = new is UNKNOWN or (new is None) != (before is None)
        else:
            differs = not math.isclose(float(new), float(before), rel_tol=1e-9, abs_tol=1e-12)
        if differs:
            after[v] = new
            out[v] = (label, before, new)
    return out


# ------------------------------------------------------------------ Definition 4.2 on generated graphs


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_propagation_matches_definition_4_2(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    deleted = _deleted_sets(gen, rnd)
    want = naive_delete(nxg, deleted)
    mask = propagate(g, g.positions(deleted))
    assert sorted(g.ids[mask].tolist()) == sorted(want)

    r = delete(g, deleted)
    assert r.removed_ids.tolist() == sorted(want)
    rest = nxg.copy()
    rest.remove_nodes_from(want)
    for v, (_, _, new) in _expected_values(nxg, set(want)).items():  # the view reads the what-if values
        if new is None:  # the aggregate over no values (Max of nothing): no value, as missing attributes are compared
            rest.nodes[v].pop("value", None)
        else:
            rest.nodes[v]["value"] = new
    assert_same_graph(r.view, rest)
    assert r.view.what_if == {c.node: c.after for c in r.values}
    outputs = {n for n, a in nxg.nodes(data=True) if a.get("type") == "o" and a["kind"] == "p"}
    assert r.surviving_outputs.tolist() == sorted(outputs - want)
    assert r.removed_outputs.tolist() == sorted(outputs & want)
    # the index it ran on is untouched
    assert len(g) == nxg.number_of_nodes()


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_what_if_values(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    deleted = _deleted_sets(gen, rnd)
    removed = naive_delete(nxg, deleted)
    r = delete(g, deleted)
    got = {c.node: c for c in r.values}
    want = _expected_values(nxg, removed)
    assert sorted(got) == sorted(want)
    for n, (label, before, after) in want.items():
        c = got[n]
        assert (c.label, c.before) == (label, before)
        if after is UNKNOWN or after is None:
            assert c.after is after
        else:
            assert math.isclose(c.after, after, rel_tol=1e-9)
    assert not set(got) & removed
    # every surviving aggregate: its what-if value is the aggregate of its surviving members
    for n, a in nxg.nodes(data=True):
        if n in removed or not Op(a["op"]).is_aggregate:
            continue
        members = [t for t, _ in nxg.in_edges(n) if t not in removed]
        group = group_of(nxg, n)
        assert members or (group is not None and group not in removed), "an aggregate without members or group must be gone"
        now = got[n].after if n in got else a["value"]
        if a["label"] == "Count":
            assert now == len(members)
    assert delete(g, deleted, values=False).values == []


@settings(max_examples=20, deadline=None, database=None)
@given(workflow_graphs(), st.data())
def test_deleting_everything_upstream_of_an_output_removes_it(gen, data):
    g = gen.index
    outs = gen.of_type("o")
    if not outs:
        return
    o = data.draw(st.sampled_from(outs))
    pos = g.position(o)
    kids = g.ids[g.children(pos)].tolist()
    # an output is a · node: losing any of its factors (or its invocation) removes it
    k = data.draw(st.sampled_from(kids))
    assert propagate(g, g.positions([k]))[pos]
    # and deleting a node never removes anything that is not downstream of it
    mask = propagate(g, g.positions([k]))
    assert set(g.ids[mask].tolist()) <= {k} | set(g.ids[g.descendants(g.position(k))].tolist())


# ------------------------------------------------------------------ multi-edges


def _graph(nodes, edges):
    ids = [n[0] for n in nodes]
    frame = pd.DataFrame({"id": ids, "kind": [n[1] for n in nodes], "op": [n[2] for n in nodes], "label": [n[3] for n in nodes],
                          "value": pd.Series([n[4] if len(n) > 4 else None for n in nodes], dtype=object)})
    return GraphIndex.build(frame, pd.DataFrame({"src": [s for s, _ in edges], "dst": [d for _, d in edges]}, dtype="int64"))


def _removed(g, ids):
    return delete(g, ids).removed_ids.tolist()


def test_multi_edges_count_each_copy():
    # Y = X + X + Z
    g = _graph([(1, "p", "token", "R:x"), (2, "p", "token", "R:z"), (3, "p", "+", "+")], [(1, 3), (1, 3), (2, 3)])
    assert _removed(g, [1]) == [1]
    assert _removed(g, [2]) == [2]
    assert _removed(g, [1, 2]) == [1, 2, 3]
    # Y = X + X: losing X loses both edges
    g = _graph([(1, "p", "token", "R:x"), (3, "p", "+", "+"), (4, "p", "δ", "δ")], [(1, 3), (1, 3), (3, 4)])
    assert _removed(g, [1]) == [1, 3, 4]
    # Y = X·X
    g = _graph([(1, "p", "token", "R:x"), (2, "p", "token", "R:z"), (3, "p", "·", "·"), (4, "p", "+", "+")], [(1, 3), (1, 3), (3, 4), (2, 4)])
    assert _removed(g, [1]) == [1, 3]
    # δ over m, m, n with Sum over 4 (m), 6 (m), 5 (n)
    nodes = [(1, "p", "token", "R:m"), (2, "p", "token", "R:n"), (3, "p", "δ", "δ"), (10, "v", "sum", "Sum", 15),
             (11, "v", "⊗", "⊗"), (12, "v", "constant", "4", 4), (13, "v", "⊗", "⊗"), (14, "v", "constant", "6", 6), (15, "v", "⊗", "⊗"), (16, "v", "constant", "5", 5)]
    edges = [(1, 3), (1, 3), (2, 3), (1, 11), (12, 11), (1, 13), (14, 13), (2, 15), (16, 15), (11, 10), (13, 10), (15, 10)]
    g = _graph(nodes, edges)
    r = delete(g, [2])
    assert r.removed_ids.tolist() == [2, 15] and [(c.node, c.before, c.after) for c in r.values] == [(10, 15, 10)]
    r = delete(g, [1])
    assert r.removed_ids.tolist() == [1, 11, 13] and [(c.node, c.before, c.after) for c in r.values] == [(10, 15, 5)]
    assert _removed(g, [1, 2]) == [1, 2, 3, 10, 11, 13, 15]


def test_deleting_nothing_or_unknown_ids():
    g = _graph([(1, "p", "token", "R:x"), (2, "p", "·", "·")], [(1, 2)])
    r = delete(g, [])
    assert r.removed_ids.tolist() == [] and r.values == [] and r.view.same_as(g)
    assert delete(g, [99]).removed_ids.tolist() == []
    assert not propagate(g, []).any()


# ------------------------------------------------------------------ aggregates (Example 4.3's recomputation)


def _aggregate_graph(op, values):
    """R:a, R:b, R:c grouped (δ, id 10) with ``op`` (id 40) over constants ``values``; a black box
    (50) over the group and the aggregate; a value carried across a boundary (60, ·)."""
    nodes = [(1, "p", "token", "R:a"), (2, "p", "token", "R:b"), (3, "p", "token", "R:c"), (10, "p", "δ", "δ"),
             (40, "v", op, op, aggregate(op, values)), (50, "v", "black_box", "calc", 7), (60, "v", "output", "·", aggregate(op, values)), (61, "p", "invocation", "M")]
    edges = [(1, 10), (2, 10), (3, 10), (10, 50), (40, 50), (40, 60), (61, 60)]
    for i, v in enumerate(values):
        nodes += [(20 + i, "v", "⊗", "⊗"), (30 + i, "v", "constant", str(v), 1 if op == "Count" else v)]
        edges += [(1 + i, 20 + i), (30 + i, 20 + i), (20 + i, 40)]
    return _graph(nodes, edges)


@pytest.mark.parametrize("op, after", [("Count", 2), ("Sum", 7), ("Min", None), ("Max", 5), ("Avg", 3.5)])
def test_aggregates_are_recomputed_over_surviving_members(op, after):
    g = _aggregate_graph(op, [5, 2, 9])
    r = delete(g, [3])  # the member with value 9
    assert r.removed_ids.tolist() == [3, 22]
    changes = {c.node: c for c in r.values}
    assert changes[50].after is UNKNOWN and changes[50].label == "calc"  # a black box downstream
    if after is None:  # Min stays 2: not a change
        assert sorted(changes) == [50]
    else:
        assert sorted(changes) == [40, 50, 60]
        assert changes[40].label == op and changes[40].before == aggregate(op, [5, 2, 9] if op != "Count" else [1] * 3)
        assert changes[40].after == pytest.approx(after) and changes[60].after == pytest.approx(after)
        assert (changes[60].label, changes[60].before) == ("·", changes[40].before)
    assert str(UNKNOWN) == "unknown"


@pytest.mark.parametrize("op", AGG_OPS)
def test_an_aggregate_losing_all_members_disappears(op):
    g = _aggregate_graph(op, [5, 2, 9])
    r = delete(g, [1, 2, 3])
    # the aggregate lost every ⊗ (rule 1), the black box all its inputs, the · copy one input (rule 2)
    assert r.removed_ids.tolist() == [1, 2, 3, 10, 20, 21, 22, 40, 50, 60]
    assert r.values == []
    assert sorted(r.view.ids.tolist()) == [30, 31, 32, 61]


def test_sum_after_losing_two_members():
    r = delete(_aggregate_graph("Sum", [5, 2, 9]), [2, 3])
    assert {c.node: c.after for c in r.values if c.after is not UNKNOWN} == {40: 5, 60: 5}


# ------------------------------------------------------------------ the paper's examples


def test_example_4_3_deleting_a_car():
    d = dealership(executions=1)
    g, n = d.index, d.names
    r = delete(g, [n["Cars:C2"]])
    assert r.removed_ids.tolist() == sorted([n["Cars:C2"], n["state:C2[1]"], n["join:B1:C2"], _tensor_of(g, n["join:B1:C2"])])
    changes = {c.node: c for c in r.values}
    assert (changes[n["count:B1"]].before, changes[n["count:B1"]].after) == (2, 1)  # COUNT over a single car now
    for k in ("calc:B1", "amount:B1", "agg_amount:B1", "min[1]", "best_amount[1]"):
        assert changes[n[k]].after is UNKNOWN, k  # the bid is a black box of the count, and flows on
    assert sorted(changes) == sorted(n[k] for k in ("count:B1", "calc:B1", "amount:B1", "agg_amount:B1", "min[1]", "best_amount[1]"))
    assert r.removed_outputs.tolist() == []
    assert r.surviving_outputs.tolist() == sorted([n["bids:B1"], n["best[1]"]])


def test_example_4_4_deleting_the_request():
    d = dealership(executions=1)
    g, n = d.index, d.names
    r = delete(g, [n["Requests:B1"]])
    left = r.view
    state_tuples = {n[f"Cars:{c}"] for c in ("C1", "C2", "C3")} | {n[f"state:{c}[1]"] for c in ("C1", "C2", "C3")}
    invocations = {n["dealer1[1]"], n["agg[1]"]}
    constants = {i for i in left.ids.tolist() if left.is_v[left.position(i)] and not len(left.children(left.position(i)))}
    assert constants and all(left.label(left.position(i)) == "1" for i in constants)  # the Count's 1s
    assert set(left.ids.tolist()) == state_tuples | invocations | constants
    assert r.removed_outputs.tolist() == sorted([n["bids:B1"], n["best[1]"]]) and r.surviving_outputs.tolist() == []
    assert r.values == []


def test_deleting_a_request_of_the_second_execution():
    d = dealership(executions=2)
    g, n = d.index, d.names
    r = delete(g, [n["Requests:B2"]])
    changes = {c.node: c for c in r.values}
    assert (changes[n["min[2]"]].before, changes[n["min[2]"]].after) == (19500.0, 20000.0)  # only B3's bid is left
    assert set(r.removed_outputs.tolist()) == {n["bids:B2"], n["best[2]"]}
    assert set(r.surviving_outputs.tolist()) == {n["bids:B1"], n["best[1]"], n["bids:B3"]}
    # execution 1 is untouched
    assert not any(x in r.removed_ids for x in (n["in:B1"], n["count:B1"], n["min[1]"]))


def _tensor_of(g, member):
    ts = [int(g.ids[p]) for p in g.parents(g.position(member)) if g.label(p) == "⊗"]
    assert len(ts) == 1
    return ts[0]


def test_a_new_state_rows_value_carries_a_recomputed_aggregate_into_the_next_invocation():
    """The · v-node over a written state value (role ``vs``) carries its child's value, as the
    boundary nodes do: the state read (70) of the next invocation gets the recomputed Sum."""
    base = [(1, "p", "token", "R:a"), (2, "p", "token", "R:b"), (3, "p", "token", "R:c"), (10, "p", "δ", "δ"),
            (40, "v", "sum", "Sum", 16), (65, "v", "·", "·", 16), (70, "v", "state", "·", 16), (71, "p", "invocation", "M")]
    edges = [(1, 10), (2, 10), (3, 10), (40, 65), (65, 70), (71, 70)]
    for i, v in enumerate([5, 2, 9]):
        base += [(20 + i, "v", "⊗", "⊗"), (30 + i, "v", "constant", str(v), v)]
        edges += [(1 + i, 20 + i), (30 + i, 20 + i), (20 + i, 40)]
    g = _graph(base, edges)
    changes = {c.node: c.after for c in delete(g, [3]).values}
    assert changes == {40: 7, 65: 7, 70: 7}
