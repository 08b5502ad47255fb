"""GraphIndex: CSR both ways, traversals against networkx, topological order, derive, same_as."""
from __future__ import annotations

import random
from collections import Counter

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import LipsparkError, StoreError
from lipspark.graph.index import GraphIndex, NodeSet, gather
from lipspark.vocabulary import Op
from tests.query.graphs import assert_same_graph, generate, signature, workflow_graphs

SETTINGS = settings(max_examples=20, deadline=None, database=None)


def _nodes(ids, labels=None):
    return pd.DataFrame({"id": ids, "kind": "p", "op": "+", "label": labels or ["x"] * len(ids)})


def _edges(pairs):
    return pd.DataFrame({"src": [s for s, _ in pairs], "dst": [d for _, d in pairs]}, dtype="int64")


# ------------------------------------------------------------------ build and CSR


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_csr_agrees_with_the_edge_list(gen, rnd):
    g = GraphIndex.build(*gen.frames(shuffle=rnd))
    assert g.ids.tolist() == sorted(r["id"] for r in gen.rows)
    assert g.num_edges == len(gen.edge_list)
    ins, outs = Counter(), Counter()
    for s, d in gen.edge_list:
        ins[d, s] += 1
        outs[s, d] += 1
    got_in, got_out = Counter(), Counter()
    for pos, nid in enumerate(g.ids.tolist()):
        for c in g.children(pos).tolist():
            got_in[nid, int(g.ids[c])] += 1
        for p in g.parents(pos).tolist():
            got_out[nid, int(g.ids[p])] += 1
    assert got_in == ins
    assert got_out == outs
    assert g.in_degree().tolist() == [sum(1 for _, d in gen.edge_list if d == i) for i in g.ids.tolist()]
    # eids name edges consistently in both the edge arrays and the in-CSR
    by_eid = {int(e): (int(g.ids[s]), int(g.ids[d])) for s, d, e in zip(g.src, g.dst, g.eid)}
    assert len(by_eid) == g.num_edges
    for pos in range(len(g)):
        lo, hi = g.in_ptr[pos], g.in_ptr[pos + 1]
        for c, e in zip(g.in_src[lo:hi].tolist(), g.in_eid[lo:hi].tolist()):
            assert by_eid[e] == (int(g.ids[c]), int(g.ids[pos]))
    # and the attributes: to_networkx equals the rows, node for node and edge for edge
    got, want = g.to_networkx(), gen.networkx()
    assert dict(got.nodes(data=True)) == dict(want.nodes(data=True))
    assert Counter(got.edges()) == Counter(want.edges())
    assert_same_graph(g, want)


def test_build_keeps_multi_edges_and_orders_ids():
    g = GraphIndex.build(_nodes([30, -5, 7]), _edges([(30, 7), (30, 7), (-5, 7), (-5, 30)]))
    assert g.ids.tolist() == [-5, 7, 30]
    assert sorted(g.ids[g.children(g.position(7))].tolist()) == [-5, 30, 30]
    assert sorted(g.ids[g.parents(g.position(-5))].tolist()) == [7, 30]
    assert g.to_networkx().number_of_edges(30, 7) == 2


@pytest.mark.parametrize("pairs, which", [
    ([(1, 99)], "target"),
    ([(99, 1)], "source"),
    ([(1, 2), (-1, 2)], "source"),
    ([(1, 2), (2, 2**62)], "target"),
])
def test_dangling_edges_are_a_store_error(pairs, which):
    with pytest.raises(StoreError, match=f"have a {which} node that does not exist"):
        GraphIndex.build(_nodes([1, 2]), _edges(pairs))


def test_dangling_edge_in_a_graph_without_nodes_is_a_store_error():
    empty = pd.DataFrame({"id": pd.Series([], dtype="int64"), "kind": [], "op": [], "label": []})
    with pytest.raises(StoreError, match="does not exist"):
        GraphIndex.build(empty, _edges([(1, 2)]))
    g = GraphIndex.build(empty, _edges([]))
    assert len(g) == 0 and g.num_edges == 0 and g.positions([1]).tolist() == []


def test_duplicate_ids_are_a_store_error():
    with pytest.raises(StoreError, match="two nodes with the same id"):
        GraphIndex.build(_nodes([1, 2, 1], ["a", "b", "c"]), _edges([(1, 2)]))


def test_the_op_column_is_required_and_parsed():
    with pytest.raises(StoreError, match="no 'op' column"):
        GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "label": ["R:a"]}), _edges([]))
    with pytest.raises(StoreError, match="node column 'op': unknown operator 'teleport'"):
        GraphIndex.build(_nodes([1]).assign(op=["teleport"]), _edges([]))
    with pytest.raises(StoreError, match="unknown operator code"):
        GraphIndex.build(_nodes([1]).assign(op=[99]), _edges([]))
    with pytest.raises(StoreError, match="no operator"):
        GraphIndex.build(_nodes([1, 2]).assign(op=["token", None]), _edges([]))
    g = GraphIndex.build(_nodes([1, 2, 3, 4]).assign(op=[Op.TOKEN, 3, "δ", "Count"]), _edges([]))
    assert g.op.dtype == np.int8 and g.op.tolist() == [Op.TOKEN, Op.TIMES, Op.DELTA, Op.COUNT]
    assert g.attrs(3)["op"] is Op.COUNT and g.op_of(2) is Op.DELTA


def test_unknown_node_type_is_a_store_error():
    nodes = _nodes([1, 2]).assign(type=["m", "q"])
    with pytest.raises(StoreError, match="unknown node type"):
        GraphIndex.build(nodes, _edges([]))


def test_lookups():
    g = GraphIndex.build(_nodes([-3, 4, 9], ["a", "b", "c"]), _edges([(-3, 4)]))
    assert g.position(9) == 2 and g.contains(-3) and not g.contains(5) and not g.contains(10)
    assert g.positions([9, 5, -3, 9, 100]).tolist() == [0, 2]
    assert g.label(1) == "b" and g.type(1) == ""
    with pytest.raises(LipsparkError, match="no node with id 5"):
        g.position(5)
    with pytest.raises(LipsparkError):
        g.position(10)


# ------------------------------------------------------------------ gather


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.lists(st.integers(-50, 50), max_size=4), min_size=1, max_size=8), st.data())
def test_gather_concatenates_rows(rows, data):
    ptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    targets = np.asarray([x for r in rows for x in r], dtype=np.int64)
    picks = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=10))
    got = gather(ptr, targets, np.asarray(picks, dtype=np.int64))
    assert got.tolist() == [x for i in picks for x in rows[i]]


# ------------------------------------------------------------------ traversals


def _stop_reference(nxg, seeds, stop):
    """Nodes reachable from seeds, not expanding stop nodes (seeds always expanded)."""
    seen, todo = set(), list(seeds)
    expanded = set()
    while todo:
        v = todo.pop()
        if v in expanded:
            continue
        expanded.add(v)
        for w in nxg.successors(v):
            if w not in seen:
                seen.add(w)
                if w not in stop:
                    todo.append(w)
    return seen


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_traversals_equal_networkx(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    ids = g.ids.tolist()
    for nid in rnd.sample(ids, min(8, len(ids))):
        pos = g.position(nid)
        assert g.ids[g.ancestors(pos)].tolist() == sorted(nx.ancestors(nxg, nid))
        assert g.ids[g.descendants(pos)].tolist() == sorted(nx.descendants(nxg, nid))
    seeds = rnd.sample(ids, min(4, len(ids)))
    pos = g.positions(seeds)
    assert g.ids[g.ancestors(pos)].tolist() == sorted(set().union(*(nx.ancestors(nxg, s) for s in seeds)))
    assert g.ids[g.descendants(pos)].tolist() == sorted(set().union(*(nx.descendants(nxg, s) for s in seeds)))
    # descendants with stop nodes: reported, not expanded
    stop_ids = {n for n in ids if rnd.random() < 0.3}
    stop = np.isin(g.ids, list(stop_ids))
    assert g.ids[g.descendants(pos, stop=stop)].tolist() == sorted(_stop_reference(nxg, seeds, stop_ids))


def test_traversal_examples():
    g = GraphIndex.build(_nodes([1, 2, 3, 4, 5]), _edges([(1, 2), (2, 3), (1, 3), (3, 4), (5, 4)]))
    p = g.position
    assert g.ids[g.ancestors(p(4))].tolist() == [1, 2, 3, 5]
    assert g.ids[g.ancestors(p(1))].tolist() == []
    assert g.ids[g.descendants(p(2))].tolist() == [3, 4]
    assert g.ids[g.descendants([p(1), p(2)])].tolist() == [2, 3, 4]  # seed 2 is a descendant of seed 1
    stop = np.zeros(len(g), dtype=bool)
    stop[p(3)] = True
    assert g.ids[g.descendants(p(1), stop=stop)].tolist() == [2, 3]


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_topological_order_is_valid(gen, rnd):
    g = gen.index
    subset = np.asarray(sorted(rnd.sample(range(len(g)), rnd.randint(0, len(g)))), dtype=np.int64)
    for positions in (np.arange(len(g)), subset):
        order = g.topological(positions).tolist()
        assert sorted(order) == positions.tolist()
        rank = {p: i for i, p in enumerate(order)}
        for s, d in zip(g.src.tolist(), g.dst.tolist()):
            if s in rank and d in rank:
                assert rank[s] < rank[d]


def test_topological_order_of_a_cycle_is_a_store_error():
    g = GraphIndex.build(_nodes([1, 2, 3]), _edges([(1, 2), (2, 3), (3, 2)]))
    with pytest.raises(StoreError, match="cycle"):
        g.topological(np.arange(3))
    assert g.topological(np.array([0, 1])).tolist() == [0, 1]  # the cycle is not inside


# ------------------------------------------------------------------ derive


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_derive_keeps_and_adds(gen, rnd):
    g = gen.index
    keep = np.array([rnd.random() < 0.7 for _ in range(len(g))], dtype=bool)
    edge_keep = keep[g.src] & keep[g.dst] & np.array([rnd.random() < 0.8 for _ in range(g.num_edges)], dtype=bool)
    kept_ids = g.ids[keep].tolist()
    new_id = next(i for i in range(7, 10**6) if not g.contains(i))
    add_nodes = pd.DataFrame({"id": [new_id], "kind": ["p"], "op": ["zoom"], "label": ["M"], "type": ["z"], "module": ["mod0"], "execution": [1]})
    targets = rnd.sample(kept_ids, min(2, len(kept_ids)))
    add = (np.asarray([new_id] * len(targets), dtype=np.int64), np.asarray(targets, dtype=np.int64), np.full(len(targets), -1, dtype=np.int64))
    d = g.derive(keep, edge_keep, NodeSet.from_frame(add_nodes), add, zoom={"mod0": "record"})

    want = nx.MultiDiGraph()
    full = gen.networkx()
    for n in kept_ids:
        want.add_node(n, **full.nodes[n])
    want.add_node(new_id, kind="p", op=Op.ZOOM, label="M", type="z", module="mod0", execution=1)
    want.add_edges_from(zip(g.ids[g.src[edge_keep]].tolist(), g.ids[g.dst[edge_keep]].tolist()))
    want.add_edges_from(zip([new_id] * len(targets), targets))
    assert_same_graph(d, want)
    assert d.zoom == {"mod0": "record"} and g.zoom == {}
    assert sorted(d.eid.tolist()) == sorted(g.eid[edge_keep].tolist() + [-1] * len(targets))
    # the original index is untouched (indexes are immutable)
    assert_same_graph(g, gen.networkx())
    # zoom records carry over when not replaced
    assert g.derive(keep, edge_keep, zoom={"a": 1}).derive(keep[keep], np.ones(int(edge_keep.sum()), dtype=bool)).zoom == {"a": 1}


def test_derive_refuses_an_edge_to_a_dropped_node():
    g = GraphIndex.build(_nodes([1, 2, 3]), _edges([(1, 2), (2, 3)]))
    keep = np.array([True, False, True])
    with pytest.raises(StoreError, match="does not exist"):
        g.derive(keep, np.array([True, False]))
    assert g.derive(keep, np.array([False, False])).ids.tolist() == [1, 3]


# ------------------------------------------------------------------ same_as


def test_same_as_on_generated_graphs():
    for seed in range(8):
        gen = generate(seed)
        g = gen.index
        rnd = random.Random(seed)
        assert g.same_as(GraphIndex.build(*gen.frames(shuffle=rnd)))

        rows = [dict(r) for r in gen.rows]
        victim = rnd.randrange(len(rows))
        rows[victim]["label"] = rows[victim]["label"] + "'"
        assert not g.same_as(GraphIndex.build(*type(gen)(rows, gen.edge_list, [], {}).frames()))

        if gen.edge_list:
            e = rnd.choice(gen.edge_list)
            more = type(gen)(gen.rows, gen.edge_list + [e], [], {})
            assert not g.same_as(more.index)
            # same number of edges, other multiplicities
            other = list(gen.edge_list)
            i = other.index(e)
            j = next((k for k, x in enumerate(other) if x != e), None)
            if j is not None:
                other[j] = e
                assert len(other) == g.num_edges
                assert not g.same_as(type(gen)(gen.rows, other, [], {}).index)
                del other[i]
            fewer = list(gen.edge_list)
            fewer.remove(e)
            assert not g.same_as(type(gen)(gen.rows, fewer, [], {}).index)


@pytest.mark.parametrize("column, value", [("label", "+"), ("op", "input"), ("value", 3), ("module", "other"), ("execution", 2),
                                           ("type", "o"), ("tuple", '{"a": 2}'), ("kind", "v"), ("invocation", None)])
def test_same_as_detects_a_changed_attribute(column, value):
    nodes = pd.DataFrame({"id": [1, 2], "kind": ["p", "v"], "op": ["state", "count"], "label": ["·", "Count"], "value": pd.Series([None, 2], dtype=object),
                          "type": ["i", None], "module": ["m", "m"], "execution": [1, 1], "tuple": ['{"a": 1}', None],
                          "invocation": [7, 7]})
    edges = _edges([(1, 2), (1, 2)])
    g = GraphIndex.build(nodes, edges)
    assert g.same_as(GraphIndex.build(nodes.iloc[::-1].reset_index(drop=True), edges.iloc[::-1]))
    changed = nodes.copy()
    changed.at[0, column] = value
    assert not g.same_as(GraphIndex.build(changed, edges))
    assert not g.same_as(GraphIndex.build(nodes, _edges([(1, 2)])))
    assert not g.same_as(GraphIndex.build(nodes, _edges([(1, 2), (1, 2), (1, 2)])))
    assert not g.same_as(GraphIndex.build(nodes, _edges([(1, 2), (2, 1)])))
    assert not g.same_as(GraphIndex.build(nodes.iloc[:1], _edges([])))


def test_signature_helper_sees_differences():
    # the comparison helper the other tests rely on must be able to fail
    gen = generate(5)
    g = gen.index
    n, e = signature(g)
    assert n == signature(gen.networkx())[0] and e == signature(gen.networkx())[1]
    with pytest.raises(AssertionError, match="edges"):
        assert_same_graph(g, type(gen)(gen.rows, gen.edge_list + gen.edge_list[:1], [], {}).index)
    rows = [dict(r, value=99) if r["kind"] == "v" else r for r in gen.rows]
    if any(r["kind"] == "v" for r in gen.rows):
        with pytest.raises(AssertionError, match="attributes"):
            assert_same_graph(g, type(gen)(rows, gen.edge_list, [], {}).index)
