"""Deferred capture: executions at plain speed, the graph made later by replay, identical to eager."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from lipspark.cli import main as cli
from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session
from lipspark.workflow import Store, materialize, run
from lipspark.workflow.materialize import PROVENANCE_DIR, graph_store
from tests.workflow.test_execution import LEDGER, stored

NONDETERMINISTIC = '''
import os
from pyspark.sql import functions as F
from lipspark.workflow import Module, Workflow, WorkflowDefinition

NOISE = int.from_bytes(os.urandom(4), "big")  # differs every time the definition is loaded

def pick(Items):
    return {"Out": Items.filter(F.col("n") % 2 == NOISE % 2)}

def build(params):
    wf = Workflow("noisy", [Module("pick", inputs={"Items": "n bigint"}, outputs={"Out": "n bigint"}, keys={"Items": ["n"]}, logic=pick)])
    return wf.node("pick", "pick", input=True, output=True)

DEFINITION = WorkflowDefinition("noisy", build, lambda spark, p: {},
                                lambda spark, n, p: {"pick": {"Items": spark.createDataFrame([(i,) for i in range(20)], "n bigint")}},
                                params={"numExec": 1})
'''


def same_graph(a: GraphIndex, b: GraphIndex) -> None:
    assert np.array_equal(a.ids, b.ids)
    assert np.array_equal(a.in_ptr, b.in_ptr) and np.array_equal(a.in_src, b.in_src)
    assert a.column("label").tolist() == b.column("label").tolist()
    assert np.array_equal(a.type_code, b.type_code)
    assert a.same_as(b)


@pytest.mark.slow  # replays a whole ledger run (CI); the small deferred runs below stay in `make test`
def test_deferred_run_replays_into_the_eager_graph(spark, ledger_runs, tmp_path):
    eager, _ = ledger_runs
    d = str(tmp_path / "deferred")
    summary = run(LEDGER, graph_dir=d, spark=spark, executions=2, capture="deferred")
    assert summary.nodes is None and summary.deferred and "deferred" in str(summary)
    store = Store.open(d)
    assert store.capture == "deferred" and graph_store(store) is None
    assert not os.path.exists(os.path.join(d, "executions", "000001", "graph"))  # nothing captured yet
    sub = materialize(d, spark=spark)
    assert len(sub.executions) == 2 and graph_store(Store.open(d)).root == sub.root
    # continue the deferred run: loading never replays, it names the step; materializing
    # again replays only the new execution
    run(LEDGER, graph_dir=d, spark=spark, executions=1, capture="deferred")
    with pytest.raises(StoreError, match=f"lipspark materialize {d}"):
        GraphIndex.load(d)
    assert len(Store.open(os.path.join(d, PROVENANCE_DIR)).executions) == 2
    materialize(d, spark=spark)
    assert len(Store.open(os.path.join(d, PROVENANCE_DIR)).executions) == 3
    same_graph(GraphIndex.load(d), GraphIndex.load(eager))  # same node ids, edges, labels as eager capture
    # fidelity: the deferred run stored the data the eager one did
    assert stored(spark, d) == stored(spark, eager)
    # queries resolve tuples against the replayed store's files
    q = "polynomial output Summary of report execution 3"
    assert [r.to_dict() for r in Session(d).run(q)] == [r.to_dict() for r in Session(eager).run(q)]


def test_deferred_capture_needs_a_definition_file_and_the_same_mode(spark, ledger_runs, tmp_path):
    src = tmp_path / "ledger.py"
    shutil.copy(LEDGER, src)
    d = str(tmp_path / "deferred")
    run(str(src), graph_dir=d, spark=spark, executions=1, capture="deferred")
    with pytest.raises(StoreError, match="--capture deferred"):
        run(str(src), graph_dir=d, spark=spark, executions=1)
    os.remove(src)
    with pytest.raises(StoreError, match="does not exist.*--capture eager"):
        materialize(d, spark=spark)
    assert not os.path.exists(os.path.join(d, PROVENANCE_DIR))
    with pytest.raises(StoreError, match="no-provenance"):
        materialize(ledger_runs[1], spark=spark)
    assert materialize(ledger_runs[0], spark=spark).root == Store.open(ledger_runs[0]).root  # eager: itself


def test_a_module_that_is_not_deterministic_cannot_be_deferred(spark, tmp_path):
    wf = tmp_path / "noisy.py"
    wf.write_text(NONDETERMINISTIC)
    d = str(tmp_path / "deferred")
    run(str(wf), graph_dir=d, spark=spark, capture="deferred")
    for _ in range(8):  # the replay loads the definition afresh: its NOISE differs with chance 1/2 each time
        try:
            materialize(d, spark=spark)
        except StoreError as err:
            assert "output Out of pick" in str(err) and "not deterministic" in str(err) and "--capture eager" in str(err)
            assert Store.open(os.path.join(d, PROVENANCE_DIR)).executions == []  # nothing committed
            return
        shutil.rmtree(os.path.join(d, PROVENANCE_DIR))
    pytest.fail("eight replays of a module filtering by a random parity all agreed with the run")


def test_cli_run_deferred_and_materialize(spark, tmp_path, capsys):
    d = str(tmp_path / "g")
    assert cli(["run", LEDGER, "--graph", d, "--executions", "1", "--capture", "deferred", "--quiet"]) == 0
    assert "deferred" in capsys.readouterr().out
    assert not os.path.exists(os.path.join(d, PROVENANCE_DIR))
    # a query of a deferred store replays what its answer reaches (lipspark.workflow.ondemand), not the store
    assert cli(["query", d, "-e", "polynomial output Summary of report execution 1", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert not os.path.exists(os.path.join(d, PROVENANCE_DIR))
    assert os.listdir(os.path.join(d, "replays", "invocations"))
    # materialize replays every execution up front (the explicit step)
    assert cli(["materialize", d, "--quiet"]) == 0
    assert len(Store.open(os.path.join(d, PROVENANCE_DIR)).executions) == 1
    out = capsys.readouterr().out
    assert "1 executions" in out and "nodes" in out and "replayed" in out


def test_two_replays_of_one_store_wait_for_each_other(spark, tmp_path, monkeypatch):
    import time

    from lipspark.store.lock import StoreLockedError
    import importlib

    mat = importlib.import_module("lipspark.workflow.materialize")  # the module (the package exports the function)
    from tests.store.test_store import _holder

    d = str(tmp_path / "deferred")
    run(LEDGER, graph_dir=d, spark=spark, executions=1, capture="deferred")
    sub_root = os.path.join(d, PROVENANCE_DIR)
    holder = _holder(sub_root)  # another process replaying this store
    try:
        monkeypatch.setattr(mat, "REPLAY_WAIT", 0.5)
        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}"):
            materialize(d, spark=spark)
        assert os.listdir(sub_root) == [".writer.lock"]  # nothing written meanwhile
    finally:
        holder.kill()
        holder.wait()
    # a holder that finishes while we wait: the replay goes ahead after it, once
    holder = _holder(sub_root, "time.sleep(2)")
    t0 = time.perf_counter()
    monkeypatch.setattr(mat, "REPLAY_WAIT", 60.0)
    sub = materialize(d, spark=spark)
    assert time.perf_counter() - t0 >= 1.0 and len(sub.executions) == 1
    holder.wait()
    mtime = os.stat(os.path.join(sub_root, "store.json")).st_mtime_ns
    assert materialize(d, spark=spark).root == sub.root  # all replayed: nothing is replayed again
    assert os.stat(os.path.join(sub_root, "store.json")).st_mtime_ns == mtime
