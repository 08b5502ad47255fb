"""ZoomOut / ZoomIn (Lipstick §4.1) on generated workflow graphs, against a networkx reference."""
from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import QueryError
from lipspark.query.deletion import delete
from lipspark.query.zoom import intermediate, zoom_in, zoom_out, zoomed_modules
from lipspark.vocabulary import Op
from tests.query.graphs import (
    assert_same_graph,
    dealership,
    generate,
    signature,
    workflow_graphs,
)

SETTINGS = settings(max_examples=15, deadline=None, database=None)


# ------------------------------------------------------------------ the reference


def _typed(g: nx.MultiDiGraph, n: int, t: str) -> bool:
    return g.nodes[n].get("type") == t


def reference_intermediate(g: nx.MultiDiGraph, module: str) -> tuple[set[int], dict[int, dict[str, list[int]]]]:
    """Definition 4.1 for all invocations of ``module``, and each invocation's i/s/o nodes."""
    invs = [n for n, a in g.nodes(data=True) if a.get("type") == "m" and a.get("module") == module]  # step 1
    parts = {inv: {t: sorted({v for v in g.successors(inv) if _typed(g, v, t)}) for t in "iso"} for inv in invs}  # step 2
    outputs = {n for n in g if _typed(g, n, "o")}
    no_output = g.subgraph([n for n in g if n not in outputs])
    seeds = {v for p in parts.values() for v in p["i"] + p["s"]}
    # a path of length >= 1 from an input or state node with no output node on it (v included)
    inter: set[int] = set().union(*(nx.descendants(no_output, s) for s in seeds)) if seeds else set()
    # what an invocation created that no input or state reaches: constants inside the module
    inter |= {n for n, a in g.nodes(data=True) if a.get("invocation") in parts and a.get("type") is None}
    return inter, parts


def reference_zoom_out(g: nx.MultiDiGraph, modules: list[str]) -> nx.MultiDiGraph:
    """Steps 1-5 of ZoomOut, straightforwardly, on a copy of ``g``."""
    out = g.copy()
    hidden: set[int] = set()
    zoom_nodes, zoom_edges = {}, []
    for m in modules:
        inter, parts = reference_intermediate(g, m)  # steps 1-3
        states = {s for p in parts.values() for s in p["s"]}
        base = {u for s in states for u in g.predecessors(s)  # step 4: base tuples next to state nodes
                if g.in_degree(u) == 0 and g.nodes[u].get("kind") == "p" and g.nodes[u].get("type") != "m"}
        hidden |= inter | states | base
        for inv, p in parts.items():  # step 5
            z = inv | 1
            zoom_nodes[z] = dict(g.nodes[inv], label=m, type="z", op=Op.ZOOM)
            zoom_edges += [(i, z) for i in p["i"]] + [(z, o) for o in p["o"]]
            # the zoom node stands for all of the computation: no input straight to an output
            for i in p["i"]:
                for o in p["o"]:
                    while out.has_edge(i, o):
                        out.remove_edge(i, o)
    out.remove_nodes_from(hidden)
    for z, attrs in zoom_nodes.items():
        assert z not in out
        out.add_node(z, **attrs)
    out.add_edges_from(zoom_edges)
    return out


def _subsets(rnd: random.Random, modules: list[str]) -> list[str]:
    return rnd.sample(modules, rnd.randint(1, len(modules)))


# ------------------------------------------------------------------ properties


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_zoom_out_matches_the_reference_and_zoom_in_inverts_it(gen, rnd):
    g = gen.index
    mods = _subsets(rnd, gen.modules)
    z = zoom_out(g, mods)
    assert_same_graph(z, reference_zoom_out(gen.networkx(), mods))
    assert zoomed_modules(z) == mods
    back = zoom_in(z, mods)
    assert back.same_as(g)
    assert_same_graph(back, gen.networkx())
    assert zoomed_modules(back) == []
    assert np.array_equal(np.sort(back.eid), np.arange(g.num_edges))  # the very same edges came back
    # a view without any zoomed module is the graph itself
    assert zoom_out(g, []).same_as(g)


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_intermediate_matches_definition_4_1(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    for m in gen.modules:
        want, parts = reference_intermediate(nxg, m)
        assert sorted(g.ids[intermediate(g, m)].tolist()) == sorted(want)
        # never an invocation, input or output node
        kept = {inv for inv in parts} | {v for p in parts.values() for v in p["i"] + p["o"]}
        assert not (kept & want)


@settings(max_examples=8, deadline=None, database=None)
@given(workflow_graphs(modules=3, max_ops=4), st.randoms(use_true_random=False))
def test_zoom_order_does_not_matter(gen, rnd):
    g = gen.index
    a, b, c = rnd.sample(gen.modules, 3)
    a_ = zoom_out(g, [a])
    a_b = zoom_out(a_, [b])
    only_b = zoom_out(g, [b])
    # zoom out A then B, zoom in A: B alone (and B then A, or both at once)
    assert zoom_in(a_b, [a]).same_as(only_b)
    assert zoom_in(zoom_out(only_b, [a]), [a]).same_as(only_b)
    assert zoom_in(zoom_out(g, [a, b]), [a]).same_as(only_b)
    # at once or one after the other
    assert zoom_out(g, [b, a]).same_as(a_b)
    assert zoom_out(only_b, [c, a]).same_as(zoom_out(a_b, [c]))
    # zooming in in any order (or all at once) gives the graph back
    abc = zoom_out(a_b, [c])
    assert zoom_in(zoom_in(zoom_in(abc, [c]), [a]), [b]).same_as(g)
    assert zoom_in(abc, [b, c, a]).same_as(g)
    assert zoom_in(abc, [a, b]).same_as(zoom_out(g, [c]))


@SETTINGS
@given(workflow_graphs())
def test_zooming_out_every_module_leaves_the_coarse_graph(gen):
    g = gen.index
    z = zoom_out(g, gen.modules)
    nodes, edges = signature(z)
    kind = {n: a.get("type") for n, a in nodes.items()}
    assert set(kind.values()) <= {"m", "i", "o", "z"}
    invs = {inv for invs in gen.invocations.values() for inv in invs}
    assert {n for n, t in kind.items() if t == "m"} == invs
    assert {n for n, t in kind.items() if t == "z"} == {inv | 1 for inv in invs}
    indeg = {n: 0 for n in nodes}
    for (s, d), k in edges.items():
        indeg[d] += k
    for (s, d), k in edges.items():
        pair = (kind[s], kind[d])
        if pair == ("m", "i") or pair == ("m", "o"):
            assert nodes[s]["invocation"] == nodes[d]["invocation"]
        elif pair == ("i", "z"):  # an invocation's input into its zoom node
            assert nodes[d]["invocation"] == nodes[s]["invocation"] and k == 1
        elif pair == ("z", "o"):
            assert nodes[s]["invocation"] == nodes[d]["invocation"] and k == 1
        elif pair == ("o", "i"):  # an upstream output into a module input
            assert nodes[s]["invocation"] != nodes[d]["invocation"]
        elif pair == ("i", "i"):  # a workflow input token into a module input
            assert indeg[s] == 0 and nodes[d]["label"] == "·"
        elif pair == ("i", "o"):  # an output that is (a factor of) an input: steps 3-5 keep the edge
            assert nodes[s]["invocation"] == nodes[d]["invocation"]
        else:
            pytest.fail(f"unexpected edge {s} -> {d} of types {pair} in the coarse-grained graph")
    # and it is still exactly invertible
    assert zoom_in(z, gen.modules).same_as(g)


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_zoom_out_of_a_view_after_a_deletion(gen, rnd):
    g = gen.index
    nxg = gen.networkx()
    candidates = [r["id"] for r in gen.rows if r["type"] != "m"]
    view = delete(g, rnd.sample(candidates, min(len(candidates), rnd.randint(1, 3))), values=False).view
    mods = _subsets(rnd, gen.modules)
    z = zoom_out(view, mods)
    assert_same_graph(z, reference_zoom_out(view.to_networkx(), mods))
    assert zoom_in(z, mods).same_as(view)
    assert nxg.number_of_nodes() == len(g)  # the original is untouched


# ------------------------------------------------------------------ the dealership


def test_zoom_out_the_dealer():
    d = dealership()
    g, n = d.index, d.names
    z = zoom_out(g, ["dealer1"])
    for e in (1, 2):
        inv = n[f"dealer1[{e}]"]
        zid = inv | 1
        assert z.contains(zid) and z.type(z.position(zid)) == "z" and z.label(z.position(zid)) == "dealer1"
        kids = sorted(z.ids[z.children(z.position(zid))].tolist())
        assert kids == sorted(v for k, v in n.items() if k.startswith("in:") and g.attrs(g.position(v))["execution"] == e)
        parents = sorted(z.ids[z.parents(z.position(zid))].tolist())
        assert parents == sorted(v for k, v in n.items() if k.startswith(("bids:", "amount:"))
                                 and g.attrs(g.position(v))["execution"] == e)
    hidden = [k for k in n if k.startswith(("Cars:", "state:", "join:", "group:", "count:", "calc:"))]
    assert hidden and not any(z.contains(n[k]) for k in hidden)
    kept = [k for k in n if k.startswith(("Requests:", "in:", "bids:", "amount:", "agg", "min", "best", "dealer1["))]
    assert all(z.contains(n[k]) for k in kept)
    assert zoom_in(z, ["dealer1"]).same_as(g)


# ------------------------------------------------------------------ errors


def test_zoom_errors():
    g = generate(11, modules=2).index
    with pytest.raises(QueryError, match=r"no invocation of a module 'nope' in this graph; modules: mod0, mod1"):
        zoom_out(g, ["nope"])
    z = zoom_out(g, ["mod0"])
    with pytest.raises(QueryError, match=r"module 'mod0' is already zoomed out; zoomin mod0 first"):
        zoom_out(z, ["mod0"])
    with pytest.raises(QueryError, match=r"already zoomed out"):
        zoom_out(z, ["mod1", "mod0"])
    with pytest.raises(QueryError, match=r"module 'mod1' is not zoomed out in this view \(zoomed out: mod0\)"):
        zoom_in(z, ["mod1"])
    with pytest.raises(QueryError, match=r"zoomed out: none"):
        zoom_in(g, ["mod0"])
    with pytest.raises(QueryError, match="not zoomed out"):
        zoom_in(z, ["mod0", "nope"])
    # a failed zoom leaves the view as it was
    assert zoomed_modules(z) == ["mod0"] and zoom_in(z, ["mod0"]).same_as(g)


def test_zoom_out_refuses_a_taken_zoom_id():
    gen = generate(4, modules=1)
    inv = gen.invocations["mod0"][0]
    rows = gen.rows + [dict(gen.rows[0], id=inv | 1, label="x", type=None)]
    with pytest.raises(QueryError, match="zoom node ids are taken"):
        zoom_out(type(gen)(rows, gen.edge_list, gen.modules, gen.invocations).index, ["mod0"])
