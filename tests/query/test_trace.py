"""Traces, subgraph and dependency queries (Lipstick §4.3, §5.1) on generated graphs."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import LipsparkError
from lipspark.query.trace import (
    ancestors,
    depends,
    descendants,
    subgraph,
    subgraph_positions,
)
from tests.query.graphs import dealership, naive_delete, workflow_graphs

SETTINGS = settings(max_examples=25, deadline=None, database=None)


def reference_subgraph(g: nx.MultiDiGraph, seeds) -> set[int]:
    down = set().union(*(nx.descendants(g, s) for s in seeds))
    up = set().union(*(nx.ancestors(g, s) for s in seeds))
    siblings = {u for d in down for u in g.predecessors(d)}
    return set(seeds) | up | down | siblings


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_traces_and_subgraph_equal_networkx(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    for node in rnd.sample(sorted(nxg), min(6, len(nxg))):
        assert ancestors(g, node).tolist() == sorted(nx.ancestors(nxg, node))
        assert descendants(g, node).tolist() == sorted(nx.descendants(nxg, node))
        assert subgraph(g, node).tolist() == sorted(reference_subgraph(nxg, [node]))
    seeds = rnd.sample(sorted(nxg), min(3, len(nxg)))
    got = g.ids[subgraph_positions(g, g.positions(seeds))].tolist()
    assert got == sorted(reference_subgraph(nxg, seeds))
    assert set(got) == set().union(*(set(subgraph(g, s).tolist()) for s in seeds))


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_depends_iff_removed_by_the_deletion(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    ids = sorted(nxg)
    on = rnd.sample(ids, min(len(ids), rnd.randint(1, 3)))
    removed = naive_delete(nxg, on)
    for node in rnd.sample(ids, min(10, len(ids))):
        assert depends(g, node, on) == (node in removed)
        # only descendants can depend on a node
        if depends(g, node, on) and node not in on:
            assert any(node in nx.descendants(nxg, o) for o in on)
    for node in on:
        assert depends(g, node, [node])


@settings(max_examples=15, deadline=None, database=None)
@given(workflow_graphs())
def test_nodes_without_incoming_edges_have_no_ancestors(gen):
    g = gen.index
    leaves = np.flatnonzero(g.in_degree() == 0)
    assert len(leaves)  # tokens, invocation nodes, constants
    for p in leaves.tolist():
        assert ancestors(g, int(g.ids[p])).tolist() == []
    tokens = [r["id"] for r in gen.rows if r["relation"] and r["type"] in ("i", None) and r["label"] != "·"]
    for t in tokens:
        assert ancestors(g, t).tolist() == []


def test_traces_on_the_dealership():
    d = dealership()
    g, n = d.index, d.names
    assert ancestors(g, n["Cars:C2"]).tolist() == []
    assert ancestors(g, n["Requests:B1"]).tolist() == []
    assert set(ancestors(g, n["count:B1"]).tolist()) == {
        n["Cars:C2"], n["Cars:C3"], n["state:C2[1]"], n["state:C3[1]"], n["join:B1:C2"], n["join:B1:C3"],
        n["in:B1"], n["Requests:B1"], n["dealer1[1]"],
    } | {int(g.ids[x]) for t in g.children(g.position(n["count:B1"])) for x in [t, *g.children(t)] if g.is_v[x]}  # ⊗s, 1s
    down = set(descendants(g, n["Cars:C2"]).tolist())
    assert {n["state:C2[1]"], n["state:C2[2]"], n["join:B1:C2"], n["join:B2:C2"], n["count:B1"], n["best[1]"], n["best[2]"]} <= down
    assert n["join:B3:C1"] not in down and n["count:B3"] not in down
    sub = set(subgraph(g, n["Cars:C2"]).tolist())
    assert down | {n["Cars:C2"]} <= sub
    assert n["join:B1:C3"] in sub and n["in:B1"] in sub and n["dealer1[1]"] in sub  # siblings of descendants
    assert n["Cars:C3"] not in sub and n["Cars:C1"] not in sub  # but not their ancestors
    # Example 4.5: the bid does not depend on car C2, but on the request
    assert not depends(g, n["bids:B1"], [n["Cars:C2"]])
    assert depends(g, n["bids:B1"], [n["Cars:C2"], n["Cars:C3"]])
    assert depends(g, n["bids:B1"], [n["Requests:B1"]])
    assert not depends(g, n["bids:B2"], [n["Requests:B1"]])
    assert depends(g, n["join:B1:C2"], [n["Cars:C2"]])


def test_unknown_node():
    g = dealership().index
    for fn in (ancestors, descendants, subgraph):
        with pytest.raises(LipsparkError, match="no node with id 12345"):
            fn(g, 12345)
    with pytest.raises(LipsparkError, match="no node with id 12345"):
        depends(g, 12345, [g.ids[0]])
