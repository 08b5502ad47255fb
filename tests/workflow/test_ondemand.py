"""Fine-grained provenance on demand: a deferred store answers as the eager store does, replaying
only the invocations each answer reaches into."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session
from lipspark.workflow import run
from lipspark.workflow.ondemand import COARSE_DIR, DONE_FILE, FINE_FILE, DeferredGraph, replay_dir
from tests.workflow.test_execution import CARS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PARAMS = {"numCars": 60, "numExec": 2, "acceptance": 0.0, "seed": 5}
MODULES = ["request", "and", "agg", "choice", "xor", "car", "dealer1", "dealer2", "dealer3", "dealer4"]

pytestmark = pytest.mark.slow  # two car dealership runs and replays of their invocations (CI's slow suite)


@pytest.fixture(scope="module")
def stores(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("ondemand")
    eager, deferred = str(root / "eager"), str(root / "deferred")
    run(CARS, graph_dir=eager, spark=spark, params=PARAMS)
    run(CARS, graph_dir=deferred, spark=spark, params=PARAMS, capture="deferred")
    return eager, deferred


def _fresh(spark, deferred: str) -> DeferredGraph:
    """The deferred store as a query first sees it: nothing replayed."""
    shutil.rmtree(os.path.join(deferred, "replays", "invocations"), ignore_errors=True)
    return DeferredGraph(deferred, spark=spark)


def _rows(result) -> list[str]:
    keys = ("id", "node", "polynomial", "before", "after", "depends", "value")
    return sorted(json.dumps({k: r.get(k) for k in keys}, default=str, sort_keys=True) for r in (result.rows or []))


def _same_answers(eager: str, dg: DeferredGraph, text: str) -> None:
    a, b = Session(eager).run(text), Session(dg).run(text)
    for x, y in zip(a, b):
        if x.kind == "view":  # the working view: with one node per invocation not replayed yet, and says so
            assert y.summary.split("; view:")[0] == x.summary.split("; view:")[0], (text, x.summary, y.summary)
            continue
        assert x.summary == y.summary, (text, x.summary, y.summary)
        assert _rows(x) == _rows(y), text
        assert sorted(map(str, x.extra.get("edges", []))) == sorted(map(str, y.extra.get("edges", []))), text


def test_a_query_inside_one_invocation_replays_exactly_that_one(spark, stores):
    eager, deferred = stores
    dg = _fresh(spark, deferred)
    others = ", ".join(m for m in MODULES if m != "dealer1")
    _same_answers(eager, dg, f"zoomout {others}; polynomial output Bids1 of dealer1_bid execution 1")
    assert [(n, node) for n, node, _ in dg.replayed] == [(1, "dealer1_bid")]
    # a zoomed-out module is never replayed, and what was replayed is not replayed again
    _same_answers(eager, dg, "zoomout " + ", ".join(MODULES) + "; ancestors output BestBid of agg execution 2")
    assert len(dg.replayed) == 1


def test_answers_are_the_eager_stores_and_reach_only_what_they_need(spark, stores):
    eager, deferred = stores
    dg = _fresh(spark, deferred)
    _same_answers(eager, dg, "zoomout dealer1, dealer2, dealer3; subgraph output Bids4 of dealer4_bid execution 2")
    # dealer4's bid in execution 2 reads its state, written by its purchase in execution 1
    assert {node for _, node, _ in dg.replayed} >= {"dealer4_bid", "dealer4_buy"}
    # a subgraph reaches down to agg and xor too, never into the zoomed-out dealers
    assert not {node for _, node, _ in dg.replayed} & {f"dealer{k}_{p}" for k in (1, 2, 3) for p in ("bid", "buy")}
    assert len(dg.replayed) < len(dg.pending()) + len(dg.replayed)
    _same_answers(eager, dg, 'delete tuple Cars(CarId = "D1C000002")')
    _same_answers(eager, dg, "polynomial output BestBid of agg execution 2")
    _same_answers(eager, dg, 'descendants tuple Requests(BidId = "B1") execution 1')
    _same_answers(eager, dg, 'depends output BestBid of agg execution 2 on tuple Requests(BidId = "B1") execution 1')
    # another process opening the store reuses the replays kept there
    again = DeferredGraph(deferred, spark=spark)
    Session(again).run("polynomial output BestBid of agg execution 2")
    assert again.replayed == []


def test_replayed_whole_it_is_the_eager_graph_node_for_node(spark, stores):
    eager, deferred = stores
    dg = _fresh(spark, deferred)
    pending = dg.pending()
    assert len(pending) == PARAMS["numExec"] * len(dg.workflow.topological_order())  # every invocation starts pending
    g = dg.replay(list(pending))
    assert dg.pending() == {}
    e = GraphIndex.load(eager)
    assert (len(g), g.num_edges) == (len(e), e.num_edges)
    assert g.same_as(e)


def test_a_replay_keeps_its_fine_part_ready_and_never_trusts_a_bad_one(spark, stores, monkeypatch):
    eager, deferred = stores
    dg = _fresh(spark, deferred)
    text = "zoomout " + ", ".join(m for m in MODULES if m != "dealer2") + "; polynomial output Bids2 of dealer2_bid execution 2"
    _same_answers(eager, dg, text)
    fine = os.path.join(deferred, replay_dir(2, "dealer2_bid"), FINE_FILE)
    with open(fine) as fh:
        assert json.load(fh)["node"] == "dealer2_bid"
    # another process reads the kept part: no graph is expanded again
    import lipspark.workflow.ondemand as ondemand

    def no_expansion(*a, **kw):
        raise AssertionError("expanded a replay's graph again")

    with monkeypatch.context() as m:
        m.setattr(ondemand, "expand_segments", no_expansion)
        _same_answers(eager, DeferredGraph(deferred, spark=spark), text)
    # a corrupt or foreign part is made again from the replay's graph, and answers stay the eager ones
    for bad in ("{not json", json.dumps({"format": "lipspark-fine-part", "version": 999, "execution": 2, "node": "dealer2_bid"})):
        with open(fine, "w") as fh:
            fh.write(bad)
        again = DeferredGraph(deferred, spark=spark)
        _same_answers(eager, again, text)
        assert again.replayed == []
        with open(fine) as fh:
            assert json.load(fh)["version"] == ondemand._FINE_VERSION


def test_an_interrupted_replay_leaves_the_store_as_it_was(spark, stores, monkeypatch):
    eager, deferred = stores
    dg = _fresh(spark, deferred)
    import lipspark.workflow.replay as replay

    def boom(store, n, node, target, **kw):
        os.makedirs(store.resolve(target))  # it had begun writing
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "replay_invocation", boom)
    with pytest.raises(KeyboardInterrupt):
        Session(dg).run("polynomial output Bids1 of dealer1_bid execution 1")
    assert not os.path.exists(os.path.join(deferred, replay_dir(1, "dealer1_bid")))
    monkeypatch.undo()
    # a directory without its done file (a killed process) is replayed again, not read
    os.makedirs(os.path.join(deferred, replay_dir(1, "request")))
    dg = DeferredGraph(deferred, spark=spark)
    assert not dg.is_replayed(1, "request")
    _same_answers(eager, dg, "ancestors output Requests of and execution 1")
    assert os.path.exists(os.path.join(deferred, replay_dir(1, "request"), DONE_FILE))


def test_a_store_of_the_collapse_scheme_is_replayed_whole(spark, stores, tmp_path):
    _, deferred = stores
    copy = shutil.copytree(deferred, str(tmp_path / "old"), ignore=shutil.ignore_patterns("replays"))
    meta = json.load(open(os.path.join(copy, "store.json")))
    meta["state_scheme"] = "collapse"
    json.dump(meta, open(os.path.join(copy, "store.json"), "w"))
    with pytest.raises(StoreError, match="lipspark materialize"):
        DeferredGraph(copy, spark=spark)


def test_lipspark_query_replays_on_demand_not_the_whole_store(spark, stores, capsys):
    from lipspark.cli import main

    _, deferred = stores
    _fresh(spark, deferred)
    others = ", ".join(m for m in MODULES if m != "dealer1")
    assert main(["query", deferred, "-e", f"zoomout {others}; polynomial output Bids1 of dealer1_bid execution 1", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "not replayed" not in out[-1]["rows"][0]["polynomial"]
    assert not os.path.exists(os.path.join(deferred, "provenance"))  # nothing materialized
    assert sorted(os.listdir(os.path.join(deferred, "replays", "invocations"))) == [os.path.basename(replay_dir(1, "dealer1_bid"))]


def test_the_coarse_graph_is_made_once_and_mapped_after(spark, stores, monkeypatch):
    eager, deferred = stores
    DeferredGraph(deferred, spark=spark).graph()  # made (or found current) by the first opening

    def made(self, name):
        raise AssertionError(f"coarse block {name} made again")

    monkeypatch.setattr(DeferredGraph, "_coarse_block", made)
    dg = DeferredGraph(deferred, spark=spark)
    assert len(dg.coarse().blocks) == PARAMS["numExec"] + 2  # initial state, then one block per execution
    monkeypatch.undo()
    # a block that no longer matches what it was made from is made again, never used
    index = os.path.join(deferred, "replays", COARSE_DIR, "index.json")
    meta = json.load(open(index))
    meta["blocks"][1]["check"]["execution"] = "0" * 32
    json.dump(meta, open(index, "w"))
    called = []
    real = DeferredGraph._coarse_block
    monkeypatch.setattr(DeferredGraph, "_coarse_block", lambda self, name: called.append(name) or real(self, name))
    _same_answers(eager, DeferredGraph(deferred, spark=spark), "zoomout " + ", ".join(MODULES) + "; ancestors output BestBid of agg execution 2")
    assert called == ["initial", "e000001", "e000002"]


def test_a_query_that_replays_nothing_imports_no_pyspark(stores):
    _, deferred = stores
    code = ("import sys, traceback\n"
            "class Hook:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pyspark': traceback.print_stack(limit=12)\n"
            "sys.meta_path.insert(0, Hook())\n"
            "from lipspark.cli import main; "
            f"assert main(['query', {deferred!r}, '-e', 'zoomout {', '.join(MODULES)}', '--format', 'json']) == 0; "
            "assert 'pyspark' not in sys.modules and 'sympy' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_invocations_are_replayed_two_at_a_time_each_in_a_session_of_its_own_and_kept_one_by_one(spark, stores, monkeypatch):
    import threading

    import lipspark.workflow.replay as replay

    eager, deferred = stores
    dg = _fresh(spark, deferred)
    real, seen, lock = replay.replay_invocation, [], threading.Lock()
    running, most = [0], [0]

    def watched(store, n, node, target, *, spark, **kw):
        with lock:
            seen.append((node, threading.current_thread().name, id(spark)))
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            if node == "dealer2_bid":
                raise StoreError("replaying dealer2_bid failed here")
            return real(store, n, node, target, spark=spark, **kw)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(replay, "replay_invocation", watched)
    todo = [(1, "dealer1_bid"), (1, "dealer2_bid"), (1, "dealer3_bid")]
    with pytest.raises(StoreError, match="replaying dealer2_bid failed here"):
        dg.replay_here(todo)
    assert sorted(node for node, _, _ in seen) == ["dealer1_bid", "dealer2_bid", "dealer3_bid"]
    assert all(name.startswith("lipspark-replay") for _, name, _ in seen)
    assert id(spark) not in {s for _, _, s in seen} and most[0] == 2  # two at once, neither in the caller's session
    # the two that succeeded are kept and noted in order; the failed one left nothing
    assert [(n, node) for n, node, _ in dg.replayed] == [(1, "dealer1_bid"), (1, "dealer3_bid")]
    assert dg.is_replayed(1, "dealer1_bid") and dg.is_replayed(1, "dealer3_bid") and not dg.is_replayed(1, "dealer2_bid")
    assert not os.path.exists(os.path.join(deferred, replay_dir(1, "dealer2_bid")))
    monkeypatch.undo()
    _same_answers(eager, DeferredGraph(deferred, spark=spark), "zoomout agg, xor, car, choice, and, request; descendants output Bids1 of dealer1_bid execution 1")
