"""Views (lipspark.graph.view): ZoomOut, ZoomIn and deletion made as a mask and an overlay over the
captured graph answer exactly as a copy of the same view does, over a store's mapped index as
over a graph in memory; nothing of the base is copied, and a query session keeps its base."""
from __future__ import annotations

import os
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import StoreError
from lipspark.graph import qindex
from lipspark.graph.index import GraphIndex, NodeSet
from lipspark.graph.view import View, ViewArray, change
from lipspark.query import Session, delete, polynomial, zoom_in, zoom_out
from lipspark.vocabulary import Op
from tests.graph.test_qindex import _mapped
from tests.query.graphs import generate, workflow_graphs

SETTINGS = settings(max_examples=25, deadline=None, database=None)


def _copy(v: GraphIndex) -> GraphIndex:
    """The same view as a plain in-memory index (what ZoomOut and deletion used to make)."""
    return v.derive(np.ones(len(v), dtype=bool), np.ones(v.num_edges, dtype=bool))


def _ops(rnd: random.Random, gen, steps: int) -> list[tuple[str, list]]:
    """A random session: zoom out some modules, delete a few nodes, zoom some back in."""
    ops: list[tuple[str, list]] = []
    zoomed: list[str] = []
    for _ in range(steps):
        what = rnd.choice(["zoomout", "delete", "zoomin"])
        if what == "zoomout" and len(zoomed) < len(gen.modules):
            free = [m for m in gen.modules if m not in zoomed]
            mods = rnd.sample(free, rnd.randint(1, len(free)))
            zoomed += mods
            ops.append(("zoomout", mods))
        elif what == "zoomin" and zoomed:
            mods = rnd.sample(zoomed, rnd.randint(1, len(zoomed)))
            zoomed = [m for m in zoomed if m not in mods]
            ops.append(("zoomin", mods))
        else:
            ops.append(("delete", [rnd.random() for _ in range(rnd.randint(1, 2))]))  # picks among the view's tokens
    return ops


def _apply(g: GraphIndex, op: tuple[str, list]) -> GraphIndex:
    what, arg = op
    if what == "zoomout":
        return zoom_out(g, arg)
    if what == "zoomin":
        return zoom_in(g, arg)
    tokens = sorted(int(i) for i in g.ids[g.nodes_with(op=Op.TOKEN)])
    if not tokens:
        return g
    return delete(g, [tokens[int(x * len(tokens))] for x in arg], values=False).view


def _same_answers(v: GraphIndex, c: GraphIndex, rnd: random.Random) -> None:
    """The view ``v`` and the plain index ``c`` of the same graph answer alike."""
    assert len(v) == len(c) and v.num_edges == c.num_edges
    assert v.same_as(c)
    ids = sorted(int(i) for i in c.ids)
    missing = np.array([max(ids, default=0) + 7, -3], dtype=np.int64)
    pos_v, pos_c = v.lookup(np.array(ids + missing.tolist())), c.lookup(np.array(ids + missing.tolist()))
    assert (pos_v[-2:] == -1).all() and (pos_c[-2:] == -1).all()
    assert v.ids[pos_v[:-2]].tolist() == ids  # every id found where it is
    for name in ("label", "module", "execution", "relation", "tuple", "value", "seg"):
        assert v.column(name, pos_v[:-2]).tolist() == c.column(name, pos_c[:-2]).tolist()
    assert v.in_degree()[pos_v[:-2]].tolist() == c.in_degree()[pos_c[:-2]].tolist()
    for kw in ({"op": Op.TOKEN}, {"op": Op.ZOOM}, {"type": "o", "kind": "p"}, {"kind": "v"}):
        assert sorted(v.ids[v.nodes_with(**kw)].tolist()) == sorted(c.ids[c.nodes_with(**kw)].tolist())
    mods = sorted({str(m) for m in c.column("module", np.arange(len(c))).tolist() if m is not None})
    for m in mods[:2]:
        assert sorted(v.ids[v.where("module", [m])].tolist()) == sorted(c.ids[c.where("module", [m])].tolist())
    for nid in rnd.sample(ids, min(6, len(ids))):
        a, b = v.position(nid), c.position(nid)
        assert sorted(v.ids[v.ancestors(a)].tolist()) == sorted(c.ids[c.ancestors(b)].tolist())
        assert sorted(v.ids[v.descendants(a)].tolist()) == sorted(c.ids[c.descendants(b)].tolist())
        assert sorted(v.ids[v.children(a)].tolist()) == sorted(c.ids[c.children(b)].tolist())
        assert sorted(v.ids[v.parents(a)].tolist()) == sorted(c.ids[c.parents(b)].tolist())
        assert str(polynomial(v, nid)) == str(polynomial(c, nid))
        up = v.ancestors(a)
        es, ed = v.edges_among(np.append(up, a))
        fs, fd = c.edges_among(np.append(c.ancestors(b), b))
        assert (v.ids[es].tolist(), v.ids[ed].tolist()) == (c.ids[fs].tolist(), c.ids[fd].tolist())
        order = v.topological(np.append(up, a))
        place = {int(p): i for i, p in enumerate(order.tolist())}
        assert all(place[int(k)] < place[int(p)] for p in order.tolist() for k in v.children(p) if int(k) in place)
    tokens = sorted(int(i) for i in c.ids[c.nodes_with(op=Op.TOKEN)])
    for t in rnd.sample(tokens, min(2, len(tokens))):
        ra, rb = delete(v, [t]), delete(c, [t])
        assert ra.removed_ids.tolist() == rb.removed_ids.tolist()
        assert ra.surviving_outputs.tolist() == rb.surviving_outputs.tolist()
        assert [(x.node, x.before, repr(x.after)) for x in ra.values] == [(x.node, x.before, repr(x.after)) for x in rb.values]
        assert ra.view.same_as(rb.view)


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_a_view_answers_as_its_copy_over_a_mapped_store_and_in_memory(tmp_path_factory, gen, rnd):
    bases = {"mapped": _mapped(str(tmp_path_factory.mktemp("v")), gen), "memory": gen.index}
    ops = _ops(rnd, gen, rnd.randint(1, 4))
    views = dict(bases)
    for op in ops:
        views = {k: _apply(g, op) for k, g in views.items()}
        for k, v in views.items():
            assert v.base is bases[k]  # a view of a view is a view of the captured graph
            _same_answers(v, _copy(v), random.Random(rnd.random()))
        assert views["mapped"].same_as(views["memory"])


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_zooming_everything_back_in_gives_the_base_itself(gen, rnd):
    g = gen.index
    z = zoom_out(g, rnd.sample(gen.modules, rnd.randint(1, len(gen.modules))))
    assert isinstance(z, View) and z.base is g and isinstance(z.ids, ViewArray)
    assert zoom_in(z, list(z.zoom)) is g  # nothing hidden, nothing added: no view at all


def test_a_view_copies_nothing_of_its_base(tmp_path):
    gen = generate(5, modules=3, executions=2)
    base = _mapped(str(tmp_path), gen)
    t = base.nodes_with(op=Op.TOKEN)[0]
    v = delete(base, [int(base.ids[t])], values=False).view
    assert isinstance(v, View) and v.base is base
    assert v.hidden is not None and int(v.hidden.sum()) == len(base) - len(v)
    assert len(v.overlay) == 0 and v.zoom == {}
    for name in ("ids", "is_v", "op", "type_code"):
        arr = getattr(v, name)
        assert isinstance(arr, ViewArray) and arr._whole is None  # read by position, not built
    assert v.num_edges < base.num_edges and v._csr is None  # counted from the mask, not listed
    z = zoom_out(v, ["mod0"])
    assert z.base is base and len(z.overlay) == len(gen.invocations["mod0"])
    assert z.zoom["mod0"].base is base and z.zoom["mod0"]._positions is not None  # listed only when asked


def test_view_arrays_behave_as_arrays():
    g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": list("ppvp"), "op": ["token", "token", "constant", "+"],
                                       "label": ["R:a", "R:b", "1", "+"], "value": [None, None, 1, None]}),
                         pd.DataFrame({"src": [1, 2], "dst": [4, 4]}))
    v = change(g, remove=np.array([1]))
    assert isinstance(v.ids, ViewArray) and len(v.ids) == 3 and v.ids.shape == (3,)
    assert v.ids[0] == 1 and v.ids[-1] == 4 and v.ids[1:].tolist() == [3, 4] and v.ids[[2, 0]].tolist() == [4, 1]
    assert v.ids[np.array([True, False, True])].tolist() == [1, 4] and v.ids[np.array([], dtype=np.int64)].tolist() == []
    assert (v.op == int(Op.TOKEN)).tolist() == [True, False, False] and (~v.is_v).tolist() == [True, False, True]
    assert np.asarray(v.ids).tolist() == [1, 3, 4] and list(v.ids) == [1, 3, 4] and v.ids.max() == 4
    with pytest.raises(IndexError):
        v.ids[3]
    with pytest.raises(TypeError):
        v.ids[0] = 5
    assert v.ids[v.ancestors(v.position(4))].tolist() == [1] and v.num_edges == 1
    assert v.node(3)["value"] == 1 and v.find(op="token") == [1] and not v.contains(2)


def test_change_keeps_ids_unique_and_edges_whole():
    g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": ["token", "δ"]}), pd.DataFrame({"src": [1], "dst": [2]}))
    two = NodeSet.from_frame(pd.DataFrame({"id": [9, 9], "kind": "p", "op": ["zoom", "zoom"]}))
    with pytest.raises(StoreError, match="two nodes with the same id"):
        change(g, add=two)
    one = NodeSet.from_frame(pd.DataFrame({"id": [9], "kind": "p", "op": ["zoom"], "label": ["M"]}))
    with pytest.raises(StoreError, match="endpoint that does not exist"):
        change(g, remove=np.array([0]), add=one, add_edges=(np.array([0]), np.array([2]), np.array([-1])))
    v = change(g, add=one, add_edges=(np.array([2]), np.array([1]), np.array([-1])))  # 9 -> 2
    assert sorted(v.ids.tolist()) == [1, 2, 9] and v.child_ids(2) == [1, 9] and v.label(v.position(9)) == "M"
    w = change(v, remove=np.array([v.position(9)]))  # the added node goes, and its edge with it
    assert w is g


# ------------------------------------------------------------------ a query session keeps its base


def test_a_second_query_reuses_the_mapped_base(tmp_path, monkeypatch):
    root = str(tmp_path / "g")
    _mapped(root, generate(9, modules=2, executions=2))
    opened = []  # a store's index, mapped by GraphIndex.load (here an index alone: no store to check it against)
    monkeypatch.setattr(qindex, "open_mapped", lambda path: opened.append(path) or qindex.open_index(os.path.join(path, "index")))
    s = Session(root)
    base = s.base
    first = s.run("zoomout mod0")[0]
    assert s.view.base is base and first.graph is s.view
    tokens = base.nodes_with(op=Op.TOKEN)  # kept by the base for every later query
    inv = int(base.ids[base.nodes_with(op=Op.INVOCATION)[0]])
    shown = s.view.nodes_with(op=Op.TOKEN)
    s.run(f"delete node {int(s.view.ids[shown[0]])}; ancestors node {inv}")
    s.run("reset; zoomout mod1")
    assert opened == [root] and s.base is base and s.view.base is base
    assert base.nodes_with(op=Op.TOKEN) is tokens
