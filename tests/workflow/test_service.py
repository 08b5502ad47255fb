"""The replay service (``lipspark serve``): a query process hands its replays to a warm Spark and
gets the answers it would have got replaying them itself."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from lipspark.errors import StoreError
from lipspark.query import Session
from lipspark.store import Store
from lipspark.workflow import run, service
from lipspark.workflow import service_protocol as protocol
from lipspark.workflow.ondemand import DeferredGraph
from tests.conftest import LEDGER

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_only_a_deferred_store_is_served(tmp_path):
    store = Store.create(str(tmp_path / "eager"), "w", True, {})
    store.unlock()
    with pytest.raises(StoreError, match="only a deferred store has invocations to replay on demand") as err:
        service.serve(store.root)
    assert "\n" not in str(err.value)
    with pytest.raises(StoreError, match="only a deferred store"):
        service.start_detached(store.root)
    assert service.stop_service(store.root) is None


class _Graph:
    def __init__(self, root: str) -> None:
        self.store = type("S", (), {"executions": [{}, {}], "root": root})()
        self.workflow = type("W", (), {"nodes": {"intake": 0, "ledger": 1}})()


def test_a_request_names_invocations_of_the_store_it_serves():
    g = _Graph("/s")
    assert service._check_request({"op": "replay", "invocations": [[2, "ledger"], [1, "intake"]]}, g) == [(2, "ledger"), (1, "intake")]
    for doc, msg in (({"op": "replay"}, "names its invocations"),
                     ({"op": "replay", "invocations": [[3, "ledger"]]}, "no invocation of 'ledger' in execution 3"),
                     ({"op": "replay", "invocations": [[1, "__import__('os')"]]}, "no invocation of"),
                     ({"op": "replay", "invocations": [["1", "ledger"]]}, 'expected an invocation as \\[execution, "node"\\]')):
        with pytest.raises(StoreError, match=msg):
            service._check_request(doc, g)


# ---- with Spark: a service in a thread of this process, on the suite's session ------------------


@pytest.fixture(scope="module")
def ledgers(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("service")
    eager, deferred = str(root / "eager"), str(root / "deferred")
    run(LEDGER, graph_dir=eager, spark=spark, executions=3)
    run(LEDGER, graph_dir=deferred, spark=spark, executions=3, capture="deferred")
    return eager, deferred


class _Serving:
    """``serve`` in a thread (the suite's SparkSession is this process's); stopped on exit."""

    def __init__(self, root: str, **kwargs) -> None:
        self.root, self.lines = root, []
        self.result: list[int] = []
        self.thread = threading.Thread(target=lambda: self.result.append(service.serve(root, log=self.lines.append, **kwargs)),
                                       daemon=True)

    def __enter__(self) -> "_Serving":
        self.thread.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (service.find_service(self.root) or {}).get("warm"):
            time.sleep(0.05)
        assert (service.find_service(self.root) or {}).get("warm"), self.lines
        return self

    def __exit__(self, *exc) -> None:
        info = service.find_service(self.root)
        if info is not None:
            assert protocol.request(info["socket"], {"op": "stop"}, timeout=60) == {"ok": True}
        self.thread.join(60)
        assert not self.thread.is_alive()


def _fresh(deferred: str) -> None:
    shutil.rmtree(os.path.join(deferred, "replays", "invocations"), ignore_errors=True)


@pytest.mark.slow  # two ledger runs, a service's warm-up and replays
def test_a_query_whose_replays_run_in_the_service_answers_as_the_eager_store(spark, ledgers):
    eager, deferred = ledgers
    _fresh(deferred)
    queries = ("polynomial output Changed of ledger execution 3", 'delete tuple Deposits(DepId = "D1-0")',
               "zoomout ledger; ancestors output Changed of ledger execution 2")
    with _Serving(deferred, idle=120, warm=60) as serving:
        assert any("warm-up: replayed ledger of execution 1" in line for line in serving.lines), serving.lines
        assert not os.path.exists(os.path.join(deferred, "replays", "invocations")), "the warm-up wrote into the store"
        dg = DeferredGraph(deferred)  # no Spark of its own: it hands its replays to the service
        for q in queries:
            a, b = Session(eager).run(q)[-1], Session(dg).run(q)[-1]
            assert b.to_text() == a.to_text(), q
        assert dg._spark is None, "the query process started Spark"
        assert dg.replayed and {(n, node) for n, node, _ in dg.replayed} == {(n, node) for n, node in _done(deferred)}
        assert service.ping(deferred)["replays"] == len(dg.replayed)
        # an invocation the service replayed is read from the store by any later process, not replayed again
        again = DeferredGraph(deferred)
        Session(again).run(queries[0])
        assert again.replayed == []
    assert service.find_service(deferred) is None and not os.path.exists(os.path.join(deferred, "replays", "service.sock"))
    assert serving.result == [len(dg.replayed)]


def _done(root: str) -> list[tuple[int, str]]:
    base = os.path.join(root, "replays", "invocations")
    out = []
    for d in os.listdir(base):
        with open(os.path.join(base, d, "done.json")) as fh:
            doc = json.load(fh)
        out.append((doc["execution"], doc["node"]))
    return out


@pytest.mark.slow
def test_a_failing_replay_is_the_clients_one_line_error_and_the_service_goes_on(spark, ledgers, monkeypatch):
    eager, deferred = ledgers
    _fresh(deferred)
    from lipspark.workflow import ondemand

    with _Serving(deferred, idle=120, warm=0):
        def broken(self, todo, on_replay=None):
            raise StoreError("replaying ledger of execution 2 wrote relation Changed with rows the run did not store")

        monkeypatch.setattr(ondemand.DeferredGraph, "replay_here", broken)  # the service's (this process's) replays fail
        with pytest.raises(StoreError, match="wrote relation Changed with rows the run did not store") as err:
            Session(DeferredGraph(deferred)).run("polynomial output Changed of ledger execution 2")
        assert "\n" not in str(err.value)
        monkeypatch.undo()
        info = service.find_service(deferred)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # a client that sends no JSON is dropped, not fatal
            s.connect(info["socket"])
            s.sendall(b"not json\n")
        assert protocol.request(info["socket"], {"op": "launch"}, timeout=30)["error"].startswith("expected a request op")
        dg = DeferredGraph(deferred)
        assert Session(dg).run("polynomial output Changed of ledger execution 2")[-1].to_text() == \
            Session(eager).run("polynomial output Changed of ledger execution 2")[-1].to_text()
        assert dg.replayed


@pytest.mark.slow
def test_a_second_service_on_a_store_is_refused_and_an_idle_one_stops(spark, ledgers):
    _, deferred = ledgers
    with _Serving(deferred, idle=2, warm=0) as serving:
        with pytest.raises(StoreError, match=r"a replay service already serves .* \(pid \d+\): lipspark serve .* --stop ends it"):
            service.serve(deferred, warm=0)
        serving.thread.join(30)
        assert not serving.thread.is_alive() and any("no request for 2s: stopping" in line for line in serving.lines)
    assert service.find_service(deferred) is None


@pytest.mark.slow  # a service process of its own (a JVM), started and stopped by the CLI
def test_lipspark_serve_detached_serves_a_query_process_and_stops(ledgers):
    eager, deferred = ledgers
    _fresh(deferred)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    lipspark = [sys.executable, "-m", "lipspark"]
    started = subprocess.run([*lipspark, "serve", deferred, "--detach", "--idle", "5", "--warm", "0"], capture_output=True, text=True,
                             env=env, cwd=ROOT)
    try:
        assert started.returncode == 0, started.stderr
        assert "listening" in started.stdout
        q = "polynomial output Changed of ledger execution 3"
        out = subprocess.run([*lipspark, "query", deferred, "-e", q], capture_output=True, text=True, env=env, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == Session(eager).run(q)[-1].to_text().strip()
        status = subprocess.run([*lipspark, "serve", deferred, "--status"], capture_output=True, text=True, env=env, cwd=ROOT)
        assert status.returncode == 0 and f"{len(_done(deferred))} invocation(s) replayed for queries" in status.stdout
    finally:
        stopped = subprocess.run([*lipspark, "serve", deferred, "--stop"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert stopped.returncode == 0 and "stopped the replay service" in stopped.stdout
    none = subprocess.run([*lipspark, "serve", deferred, "--status"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert none.returncode == 1 and "no replay service runs" in none.stdout


def test_run_serve_needs_deferred_capture_and_writes_nothing_without_it(tmp_path, capsys):
    from lipspark.cli import main

    graph = tmp_path / "g"
    assert main(["run", LEDGER, "--graph", str(graph), "--serve", "5"]) == 2
    err = capsys.readouterr().err
    assert err == ("lipspark: error: --serve keeps a replay service for a deferred store's queries: add --capture deferred "
                   "(an eager store's graph needs no replay)\n")
    assert not graph.exists()


def _args(*argv: str):
    from lipspark.cli import build_parser

    return build_parser().parse_args(["run", LEDGER, *argv])


def test_a_deferred_run_serves_by_default_for_fifteen_idle_minutes_unless_told_not_to(monkeypatch):
    from lipspark.cli import _serve_minutes

    monkeypatch.delenv("LIPSPARK_SERVE", raising=False)
    assert _serve_minutes(_args("--capture", "deferred")) == 15
    assert _serve_minutes(_args("--capture", "deferred", "--serve", "3")) == 3
    assert _serve_minutes(_args("--capture", "deferred", "--no-serve")) is None
    assert _serve_minutes(_args()) is None  # an eager store needs no replay
    for off in ("off", "0", "no", "False"):
        monkeypatch.setenv("LIPSPARK_SERVE", off)
        assert _serve_minutes(_args("--capture", "deferred")) is None
        assert _serve_minutes(_args("--capture", "deferred", "--serve", "3")) == 3  # asked for, in so many words


def test_serve_and_no_serve_are_one_choice(capsys):
    from lipspark.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", LEDGER, "--capture", "deferred", "--serve", "3", "--no-serve"])
    assert "not allowed with argument" in capsys.readouterr().err


def _lipspark_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LIPSPARK_SERVE"}
    return {**env, "PYSPARK_PYTHON": sys.executable}


def test_a_deferred_run_that_fails_leaves_no_service_and_says_why(tmp_path):
    graph = str(tmp_path / "g")
    p = subprocess.run([sys.executable, "-m", "lipspark", "run", LEDGER, "--capture", "deferred", "--graph", graph,
                        "--param", "nosuch=1"], capture_output=True, text=True, env=_lipspark_env(), cwd=ROOT, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("lipspark: error: ") and p.stderr.count("\n") == 1, p.stderr
    assert service.find_service(graph) is None and not os.path.exists(os.path.join(graph, "replays"))


_NO_JVM_QUERY = """
import json, sys
from lipspark.query import Session
from lipspark.workflow.ondemand import DeferredGraph
graph = DeferredGraph(sys.argv[1])
text = Session(graph).run(sys.argv[2])[-1].to_text()
from pyspark import SparkContext
print(json.dumps({"text": text, "jvm": SparkContext._gateway is not None, "replayed_here": len(graph.replayed)}))
"""


@pytest.mark.slow  # a deferred run in a process of its own that stays on as the service, and its queries
def test_a_deferred_run_stays_on_as_its_stores_service_and_its_first_query_starts_no_spark(ledgers, tmp_path):
    eager, _ = ledgers
    graph = str(tmp_path / "deferred")
    env = _lipspark_env()
    # output to pipes: the run's command ends although its Spark lives on (the JVM writes to a relay, not to them)
    p = subprocess.run([sys.executable, "-m", "lipspark", "run", LEDGER, "--capture", "deferred", "--graph", graph, "--executions", "3",
                        "--quiet", "--serve", "5"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    try:
        assert p.returncode == 0, p.stderr
        line = p.stdout.strip().splitlines()[-1]
        assert line.startswith("replay service pid ") and f"warming up on this run's Spark for {graph}'s queries" in line
        info = service.find_service(graph)
        assert info is not None and f"pid {info['pid']} " in line
        # a query process right after: the layouts execution 3 lacks are probed by the service, the
        # replays run there, and the query process itself starts no JVM
        q = "polynomial output Changed of ledger execution 3"
        out = subprocess.run([sys.executable, "-c", _NO_JVM_QUERY, graph, q], capture_output=True, text=True, env=env, cwd=ROOT,
                             timeout=600)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["text"].strip() == Session(eager).run(q)[-1].to_text().strip()
        assert got["jvm"] is False
        assert (service.ping(graph) or {}).get("replays") == len(_done(graph)) > 0
    finally:
        stopped = subprocess.run([sys.executable, "-m", "lipspark", "serve", graph, "--stop"], capture_output=True, text=True, env=env,
                                 cwd=ROOT)
    assert stopped.returncode == 0 and "stopped the replay service" in stopped.stdout
    with open(os.path.join(graph, "replays", "service.log")) as fh:
        log = fh.read()
    assert "listening on" in log and "stopped on request" in log
    assert service.find_service(graph) is None


@pytest.mark.slow  # a deferred run in a process of its own, interrupted
def test_ctrl_c_at_a_run_that_would_serve_interrupts_the_run_and_leaves_no_service(tmp_path):
    import signal

    graph = str(tmp_path / "deferred")
    proc = subprocess.Popen([sys.executable, "-m", "lipspark", "run", LEDGER, "--capture", "deferred", "--graph", graph,
                             "--executions", "40", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_lipspark_env(), cwd=ROOT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(Store.open(graph).executions) >= 1:
                break
        except Exception:  # noqa: BLE001 - not made yet
            pass
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # to the command, as a terminal sends it; the command passes it on to the run
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "interrupted: the store at" in err and "run the same command again to continue" in err
    assert "replay service" not in out
    assert service.find_service(graph) is None
    assert 1 <= len(Store.open(graph).executions) < 40


# ---- what a deferred run prepares for its service while it goes on ------------------------------

_TALLY = '''
from lipspark.workflow import Module, Workflow, WorkflowDefinition

def tally(Deposits):
    Deposits.createOrReplaceTempView("tally_source")
    return {"Totals": Deposits.sparkSession.sql("SELECT Account, SUM(Amount) AS Total FROM tally_source GROUP BY Account")}

DEP = "DepId string, Account string, Amount bigint"

def build(params):
    wf = Workflow("tally", [Module("tally", inputs={"Deposits": DEP}, outputs={"Totals": "Account string, Total bigint"},
                                   keys={"Deposits": ["DepId"]}, logic=tally)])
    wf.node("tally", "tally", input=True, output=True)
    return wf

def inputs(spark, execution, params):
    return {"tally": {"Deposits": spark.createDataFrame([(f"D{execution}-{i}", "AB"[i % 2], execution + i) for i in range(3)], DEP)}}

DEFINITION = WorkflowDefinition("tally", build, lambda spark, params: {}, inputs, params={"numExec": 2})
'''


def _prepared(root: str) -> bool:
    from lipspark.graph import qindex

    graph = DeferredGraph(root)
    return qindex.holds_blocks(os.path.join(root, "replays", "coarse"), graph._wanted_blocks())


def test_a_deferred_run_prepares_its_stores_queries_while_it_goes_on(spark, tmp_path):
    graph = str(tmp_path / "deferred")
    preparer = service._Preparer(lambda: graph, poll=0.05)
    preparer.start()
    try:
        run(LEDGER, graph_dir=graph, spark=spark, executions=3, capture="deferred")
    finally:
        preparer.finish()
    assert preparer.error is None and preparer.prepared == 3
    assert os.path.exists(os.path.join(graph, "replays", "layouts.json")) and _prepared(graph)
    # what it made is what a query would have made: the coarse graph of an unprepared copy, node for node
    copy = str(tmp_path / "copy")
    shutil.copytree(graph, copy, ignore=shutil.ignore_patterns("replays"))
    made, fresh = DeferredGraph(graph).coarse(), DeferredGraph(copy, spark=spark).coarse()
    assert sorted(made.ids.tolist()) == sorted(fresh.ids.tolist()) and made.num_edges == fresh.num_edges


def test_what_the_run_prepares_is_probed_in_a_session_of_its_own_and_runs_no_job(spark, tmp_path):
    definition = tmp_path / "tally.py"
    definition.write_text(_TALLY)
    graph = str(tmp_path / "deferred")
    run(str(definition), graph_dir=graph, spark=spark, capture="deferred")
    spark.createDataFrame([("mine", "Z", 7)], "DepId string, Account string, Amount bigint").createOrReplaceTempView("tally_source")
    jobs = spark.sparkContext.statusTracker()
    before = set(jobs.getJobIdsForGroup())
    preparer = service._Preparer(lambda: graph, poll=0.05)
    preparer.start()
    deadline = time.monotonic() + 120
    while preparer.prepared < 2 and preparer.error is None and time.monotonic() < deadline:
        time.sleep(0.05)
    preparer.finish()
    assert set(jobs.getJobIdsForGroup()) == before  # probes plan over no rows: no job ran
    assert preparer.error is None and preparer.prepared == 2 and _prepared(graph)
    # the probes registered the module's view in their own session: this session's view is the test's still
    assert [tuple(r) for r in spark.table("tally_source").collect()] == [("mine", "Z", 7)]
    spark.catalog.dropTempView("tally_source")


def test_a_failed_run_does_not_wait_for_what_is_being_prepared():
    started = threading.Event()
    release = threading.Event()

    class _Slow(service._Preparer):
        def _step(self, root: str) -> None:
            started.set()
            release.wait(30)

    preparer = _Slow(lambda: "/nonexistent", poll=0.01)
    preparer.start()
    assert started.wait(10)
    t0 = time.monotonic()
    preparer.finish(wait=False)
    assert time.monotonic() - t0 < 1 and preparer.is_alive()
    release.set()
    preparer.join(10)
    assert not preparer.is_alive() and preparer.error is None
