"""Replaying one invocation of a deferred store alone gives the segments an eager run recorded for it."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from lipspark.errors import StoreError
from lipspark.graph.expand import expand_segments
from lipspark.store import graph_segments
from lipspark.vocabulary import BaseSegment, BoundarySegment, Op
from lipspark.vocabulary.columns import is_hidden
from lipspark.workflow import Store, run
from lipspark.workflow.layouts import LAYOUTS_FILE, REPLAYS_DIR, store_layouts
from lipspark.workflow.materialize import _replayable_definition
from lipspark.workflow.replay import replay_invocation
from tests.workflow.test_execution import CARS

PARAMS = {"numCars": 160, "numExec": 3, "acceptance": 0.0, "seed": 5}

pytestmark = pytest.mark.slow  # two 3-execution car dealership runs and their replays (CI's slow suite)


@pytest.fixture(scope="module")
def car_stores(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    eager, deferred = str(root / "eager"), str(root / "deferred")
    run(CARS, graph_dir=eager, spark=spark, params=PARAMS)
    run(CARS, graph_dir=deferred, spark=spark, params=PARAMS, capture="deferred")
    return Store.open(eager), Store.open(deferred)


def _visible(path: str) -> list[dict]:
    t = pq.read_table(path)
    return t.select([c for c in t.column_names if not is_hidden(c)]).to_pylist()


def _record(s):
    """A segment as recorded, but for where its source's files are."""
    if isinstance(s, BoundarySegment):
        src = s.source
        return dataclasses.replace(s, source=dataclasses.replace(src, dir="", files=()))
    if isinstance(s, BaseSegment) and s.files is not None:
        return dataclasses.replace(s, files=())
    return s


def test_deferred_run_numbers_and_lays_out_as_eager(spark, car_stores):
    eager, deferred = car_stores
    workflow = _replayable_definition(deferred).build(deferred.meta["params"])
    layouts = store_layouts(deferred, workflow, spark, len(deferred.executions))
    assert os.path.exists(os.path.join(deferred.root, REPLAYS_DIR, LAYOUTS_FILE))
    assert store_layouts(deferred, workflow, spark, len(deferred.executions)) == layouts  # read back, not probed again
    for a, b, lay in zip(eager.executions, deferred.executions, layouts):
        assert a["segments"] == b["segments"]
        # every relation the deferred run wrote has the eager run's rows, in the same positions
        for key in ("inputs", "outputs", "state"):
            for owner, rels in a[key].items():
                for r, d in rels.items():
                    other = b[key][owner][r]
                    assert len(d["files"]) == len(other["files"])
                    for f, g in zip(d["files"], other["files"]):
                        assert _visible(eager.resolve(f["path"])) == _visible(deferred.resolve(g["path"]))
        # the probed layouts are the eager run's
        for owner, rels in a["outputs"].items():
            for r, d in rels.items():
                probed = lay[owner]["writes"][r]
                assert tuple(sorted(d["values"])) == probed.values and tuple(d["bags"]) == probed.bags and d["p"]["k"] == probed.k


def _compare(eager: Store, deferred: Store, rep, n: int, node: str) -> int:
    segments, root = graph_segments(eager.root)
    mine = [(s, t) for s, t in segments if s.context.execution == n and s.context.node == node]
    assert sorted(_record(s).seg for s, _ in mine) == sorted(s.seg for s, _ in rep.segments)
    theirs = {s.seg: (s, t) for s, t in mine}
    for s, t in rep.segments:
        e, et = theirs[s.seg]
        assert _record(s) == _record(e), (node, s)
        assert set(t) == set(et)
    # every node and edge it makes, but for those read from its producers' files, is the eager run's
    own = lambda segs: [(s, t) for s, t in segs if not (isinstance(s, BoundarySegment) and s.role in ("i", "s"))]  # noqa: E731
    (na, ea), (nb, eb) = expand_segments(own(mine), root), expand_segments(own(rep.segments), deferred.root)
    cols = ["id", "kind", "op", "label", "value", "type", "relation", "column"]
    key = lambda n_: n_[cols].astype(str).sort_values(cols).reset_index(drop=True)  # noqa: E731
    assert key(na).equals(key(nb)), node
    assert sorted(zip(ea["src"], ea["dst"])) == sorted(zip(eb["src"], eb["dst"])), node
    return len(na)


@pytest.mark.parametrize("node", ["request", "dealer1_bid", "agg", "xor", "dealer2_buy"])
def test_one_invocation_replays_alone_into_its_eager_segments(spark, car_stores, tmp_path, node):
    eager, deferred = car_stores
    workflow_nodes = {s.context.node for s, _ in graph_segments(eager.root)[0] if s.context.execution == 3}
    if node not in workflow_nodes:
        pytest.skip(f"no node {node} in this workflow: {sorted(n for n in workflow_nodes if n)}")
    rep = replay_invocation(deferred, 3, node, str(tmp_path / node), spark=spark)
    assert _compare(eager, deferred, rep, 3, node) > 0


def test_replay_refuses_what_it_cannot_replay(spark, car_stores, tmp_path):
    eager, deferred = car_stores
    with pytest.raises(StoreError, match="only a deferred store"):
        replay_invocation(eager, 1, "agg", str(tmp_path / "x"), spark=spark)
    with pytest.raises(StoreError, match="executions 1..3, not 4"):
        replay_invocation(deferred, 4, "agg", str(tmp_path / "x"), spark=spark)
    with pytest.raises(StoreError, match="has no node 'nope'"):
        replay_invocation(deferred, 1, "nope", str(tmp_path / "x"), spark=spark)
    assert not os.path.exists(tmp_path / "x")


def test_a_replay_that_disagrees_with_the_probe_fails_and_leaves_nothing(spark, car_stores, tmp_path):
    import json
    import shutil

    _, deferred = car_stores
    copy = str(tmp_path / "copy")
    shutil.copytree(deferred.root, copy)
    store = Store.open(copy)
    store_layouts(store, _replayable_definition(store).build(store.meta["params"]), spark, 1)
    path = os.path.join(copy, REPLAYS_DIR, LAYOUTS_FILE)
    doc = json.load(open(path))
    for node, _, writes in doc["probes"]:
        if node == "agg":
            writes["BestBid"]["values"] = []  # as if its probe had found no v-nodes in BestBid.Amount
    json.dump(doc, open(path, "w"))
    target = tmp_path / "out"
    with pytest.raises(StoreError, match=r"relation 'BestBid' has provenance layout .* decides its layout from its data"):
        replay_invocation(Store.open(copy), 1, "agg", str(target), spark=spark)
    assert not target.exists()
    os.makedirs(target)
    with pytest.raises(StoreError, match="exists; a replay writes"):
        replay_invocation(Store.open(copy), 1, "agg", str(target), spark=spark)


def _differences(a, b) -> list[str]:
    """What differs between two graphs (nodes by id and attributes, edges by ids), for a failure message."""
    from lipspark.graph.index import NODE_COLUMNS

    out = []
    ia, ib = set(a.ids.tolist()), set(b.ids.tolist())
    out += [f"{len(ia - ib)} node(s) only in the coarse graph, {len(ib - ia)} only in the eager one"] if ia != ib else []
    both = sorted(ia & ib)
    pa_, pb = a.lookup(both), b.lookup(both)
    for name in NODE_COLUMNS:
        x, y = a.column(name, pa_).tolist(), b.column(name, pb).tolist()
        bad = [(i, u, v) for i, u, v in zip(both, x, y) if u != v]
        out += [f"{name}: {len(bad)} differ, e.g. {bad[:2]}"] if bad else []
    ea = set(zip(a.ids[a.src].tolist(), a.ids[a.dst].tolist()))
    eb = set(zip(b.ids[b.src].tolist(), b.ids[b.dst].tolist()))
    out += [f"edges: {len(ea - eb)} only coarse, {len(eb - ea)} only eager"] if ea != eb else []
    return out


def test_the_coarse_graph_of_a_deferred_store_is_the_eager_graph_with_every_module_zoomed_out(spark, car_stores):
    from lipspark.graph.index import GraphIndex
    from lipspark.query.zoom import zoom_out
    from lipspark.workflow.coarse import coarse_graph

    eager, deferred = car_stores
    workflow = _replayable_definition(deferred).build(deferred.meta["params"])
    coarse = zoom_out(coarse_graph(deferred, workflow, store_layouts(deferred, workflow, spark, len(deferred.executions))),
                      list(workflow.modules))
    full = GraphIndex.load(eager.root)
    zoomed = zoom_out(full, list(workflow.modules))
    assert len(coarse) == len(zoomed) > 0 and set(coarse.ids.tolist()) == set(zoomed.ids.tolist())
    # the edges from an invocation's input node straight to its output node (a row the module
    # passes on unchanged) are in the eager graph, which only the fine computation shows; ZoomOut
    # cuts them (the zoom node stands for the computation), so the coarse graph is the zoomed one
    types, invocation = full.column("type", np.arange(len(full))), full.column("invocation", np.arange(len(full)))
    src, dst = np.asarray(full.src), np.asarray(full.dst)
    passed = (types[src] == "i") & (types[dst] == "o") & (invocation[src] == invocation[dst])
    assert passed.any()  # the car dealership's `and` and `choice` pass rows on
    zt, zi = zoomed.column("type", np.arange(len(zoomed))), zoomed.column("invocation", np.arange(len(zoomed)))
    zs, zd = np.asarray(zoomed.src), np.asarray(zoomed.dst)
    assert not ((zt[zs] == "i") & (zt[zd] == "o") & (zi[zs] == zi[zd])).any()
    assert sorted(zip(coarse.ids[coarse.src].tolist(), coarse.ids[coarse.dst].tolist())) == sorted(zip(zoomed.ids[zs].tolist(), zoomed.ids[zd].tolist()))
    assert coarse.num_edges == zoomed.num_edges
    assert not [d for d in _differences(coarse, zoomed) if not d.startswith("edges:")]


def test_the_state_scheme_gives_every_output_the_polynomial_and_what_if_of_the_collapse_scheme(spark, tmp_path):
    """State rows numbered by position (scheme ``state``, new stores') add · nodes with one factor,
    and · v-nodes carrying a value: every output's polynomial, and a what-if's values, are those of
    ``collapse`` (a store made before, here made as one and continued by the run)."""
    from lipspark.graph.index import GraphIndex
    from lipspark.query.deletion import delete
    from lipspark.semiring import normal_form
    from lipspark.workflow import load_definition

    params = {**PARAMS, "numCars": 60, "numExec": 2}
    Store.create(str(tmp_path / "collapse"), "car_dealership", True, load_definition(CARS).with_params(params),
                 definition=CARS, state_scheme="collapse").unlock()
    run(CARS, graph_dir=str(tmp_path / "collapse"), spark=spark, params=params)
    run(CARS, graph_dir=str(tmp_path / "state"), spark=spark, params=params)
    assert (Store.open(str(tmp_path / "collapse")).state_scheme, Store.open(str(tmp_path / "state")).state_scheme) == ("collapse", "state")
    a, b = GraphIndex.load(str(tmp_path / "collapse")), GraphIndex.load(str(tmp_path / "state"))
    kinds = {name: {s.source.p.kind for s, _ in graph_segments(str(tmp_path / name))[0]
                    if isinstance(s, BoundarySegment) and s.role == "collapse" and s.source.p is not None}
             for name in ("collapse", "state")}
    assert kinds == {"collapse": {"collapse"}, "state": {"state"}} and len(b) > len(a)
    outs = [int(i) for i in a.ids[a.nodes_with(type="o", kind="p")].tolist()]
    assert outs and all(b.contains(i) for i in outs)
    assert [str(normal_form(a.polynomial(i))) for i in outs] == [str(normal_form(b.polynomial(i))) for i in outs]
    token = int(a.ids[a.nodes_with(op=Op.TOKEN)][0])
    wa, wb = delete(a, [token]), delete(b, [token])
    shown = {int(i) for i in a.ids.tolist()}
    assert {(c.node, str(c.after)) for c in wa.values} == {(c.node, str(c.after)) for c in wb.values if c.node in shown}


def _copy(store: Store, where) -> str:
    import shutil

    shutil.copytree(store.root, str(where), ignore=shutil.ignore_patterns("replays"))
    return str(where)


def _edit_fingerprints(root: str, change) -> None:
    import json

    path = os.path.join(root, "store.json")
    with open(path) as fh:
        meta = json.load(fh)
    for rec in meta["executions"]:
        for key in ("outputs", "state"):
            for rels in rec[key].values():
                for d in rels.values():
                    change(d)
        prints = rec.get("state_fingerprints", {})
        for k in list(prints):
            d = {"dir": k, "fingerprint": prints[k]}
            change(d)
            if "fingerprint" in d:
                prints[k] = d["fingerprint"]
            else:
                del prints[k]
    with open(path, "w") as fh:
        json.dump(meta, fh)


def test_a_deferred_run_records_the_fingerprint_its_files_give(spark, car_stores):
    """Each output and state relation a deferred run writes carries in store.json the fingerprint
    its writing job observed: the one reading its files back gives."""
    from lipspark.workflow.materialize import _fingerprints
    from lipspark.workflow.relations import descriptor, relation_frame

    _, deferred = car_stores
    seen = []
    for rec in deferred.executions:
        for key in ("outputs", "state"):
            for rels in rec[key].values():
                for d in rels.values():
                    if d["dir"].startswith("executions/"):
                        seen.append(descriptor(d))
        # every state relation written, also those a later invocation of the module replaced
        assert {d.dir for d in seen if "/state/" in d.dir and d.dir.startswith(rec["dir"])} <= set(rec["state_fingerprints"])
        seen += [descriptor({"dir": k, "fingerprint": v}) for k, v in rec["state_fingerprints"].items()]
    assert seen and all(d.fingerprint is not None for d in seen)
    assert _fingerprints(spark, [relation_frame(spark, deferred, d) for d in seen]) == [d.fingerprint for d in seen]
    assert any(d.fingerprint[0] == 0 for d in seen) and any(d.fingerprint[0] > 1 for d in seen)  # empty relations too


def test_a_replay_checks_what_it_writes_by_fingerprints_without_reading_the_run_back(spark, car_stores, tmp_path, monkeypatch):
    import importlib

    # the package exports a function named `materialize`, which shadows the submodule of that name
    materialize = importlib.import_module("lipspark.workflow.materialize")

    eager, deferred = car_stores
    read_back = materialize._fingerprints

    def unread(*args, **kwargs):
        raise AssertionError("the replay read a relation back to check it")

    monkeypatch.setattr(materialize, "_fingerprints", unread)
    rep = replay_invocation(deferred, 3, "dealer1_bid", str(tmp_path / "ok"), spark=spark)
    assert _compare(eager, deferred, rep, 3, "dealer1_bid") > 0
    # a fingerprint the replay does not give again is a mismatch: one line, and nothing left behind
    wrong = _copy(deferred, tmp_path / "wrong")
    _edit_fingerprints(wrong, lambda d: d.__setitem__("fingerprint", [d["fingerprint"][0], "1"]) if "fingerprint" in d else None)
    with pytest.raises(StoreError, match=r"replaying execution 3's invocation of dealer1_bid gave another (output|state) .* than the run "
                                         r"stored .* the module is not deterministic") as err:
        replay_invocation(Store.open(wrong), 3, "dealer1_bid", str(tmp_path / "bad"), spark=spark)
    assert "\n" not in str(err.value) and not os.path.exists(tmp_path / "bad")
    monkeypatch.undo()
    # a store written before fingerprints were kept: the replay reads both back, as it did
    old = _copy(deferred, tmp_path / "old")
    _edit_fingerprints(old, lambda d: d.pop("fingerprint", None))
    calls = []
    monkeypatch.setattr(materialize, "_fingerprints", lambda spark, frames: calls.append(len(frames)) or read_back(spark, frames))
    rep = replay_invocation(Store.open(old), 3, "dealer1_bid", str(tmp_path / "old-replay"), spark=spark)
    assert calls and calls[0] == 2 * (len(rep.outputs) + len(rep.state))


def test_a_replay_of_a_module_that_is_not_deterministic_fails_and_leaves_nothing(spark, tmp_path):
    from tests.workflow.test_materialize import NONDETERMINISTIC

    wf = tmp_path / "noisy.py"
    wf.write_text(NONDETERMINISTIC)
    d = str(tmp_path / "deferred")
    run(str(wf), graph_dir=d, spark=spark, capture="deferred")
    store = Store.open(d)
    for i in range(8):  # the replay loads the definition afresh: its NOISE differs with chance 1/2 each time
        target = tmp_path / f"r{i}"
        try:
            replay_invocation(store, 1, "pick", str(target), spark=spark)
        except StoreError as err:
            assert "output Out of pick" in str(err) and "not deterministic" in str(err) and "--capture eager" in str(err)
            assert not target.exists()
            return
    pytest.fail("eight replays of a module filtering by a random parity all agreed with the run")
