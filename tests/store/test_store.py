"""A store several processes can trust: one writer (the lock), readers that change nothing, one
commit point, and a first run that is resumed like any other."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.query.engine import Session
from lipspark.store import Store
from lipspark.store.lock import LOCK_FILE, StoreLockedError, WriterLock
from lipspark.workflow import run
from tests.workflow.test_execution import LEDGER, stored

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _holder(path: str, then: str = "time.sleep(120)") -> subprocess.Popen:
    """A process that takes the writer lock of ``path``, says so, then does ``then``."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {ROOT!r})
        from lipspark.store.lock import WriterLock
        lock = WriterLock({path!r}).acquire()
        print("locked", flush=True)
        {then}
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _tree(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs + [""])


def test_a_second_writer_fails_at_once_naming_the_first(tmp_path):
    d = str(tmp_path / "s")
    holder = _holder(d)
    try:
        with pytest.raises(StoreLockedError) as err:
            WriterLock(d).acquire()
        msg = str(err.value)
        assert f"pid {holder.pid}" in msg and "\n" not in msg and "wait for it to finish" in msg
        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}"):
            Store.create(d, "wf", True, {})
        assert os.listdir(d) == [LOCK_FILE]  # the refused writer wrote nothing
    finally:
        holder.kill()
        holder.wait()


def test_run_refuses_a_store_being_written_before_spark_starts(tmp_path):
    d = str(tmp_path / "s")
    holder = _holder(d)
    try:
        # no spark fixture: run must fail on the lock before it starts Spark
        proc = subprocess.run([sys.executable, "-m", "lipspark.cli", "run", LEDGER, "--graph", d, "--executions", "1"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode != 0
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0], proc.stderr
        assert os.listdir(d) == [LOCK_FILE]
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_dead_process_is_recovered(tmp_path):
    d = str(tmp_path / "s")
    holder = _holder(d, "os.kill(os.getpid(), signal.SIGKILL)")
    holder.wait()
    assert holder.returncode == -signal.SIGKILL
    lock = WriterLock(d)
    assert lock.holder()["pid"] == holder.pid  # the dead holder is recorded, but holds nothing
    with lock:
        assert lock.holder()["pid"] == os.getpid()


def _crash_leftovers(root: str) -> list[str]:
    """What a writer that died mid-execution leaves: a pending execution, and an execution renamed
    but not yet named by store.json (the crash between the rename and the commit)."""
    n = len(Store.open(root).executions) + 1
    for name in (f".pending-{n:06d}", f"{n:06d}"):
        os.makedirs(os.path.join(root, "executions", name, "outputs"))
        with open(os.path.join(root, "executions", name, "outputs", "part.parquet"), "w") as fh:
            fh.write("half")
    return [f".pending-{n:06d}", f"{n:06d}"]


def test_readers_never_modify_the_store(spark, ledger_runs, tmp_path, capsys):
    from lipspark.cli import main

    root = str(tmp_path / "s")
    shutil.copytree(ledger_runs[0], root, ignore=shutil.ignore_patterns("index"))
    GraphIndex.load(root)  # the query-ready index is a derived cache, written under its own lock
    left = _crash_leftovers(root)
    before = _tree(root)
    with WriterLock(root):  # a writer is at work: every kind of reader runs meanwhile
        store = Store.open(root)
        assert [e["n"] for e in store.executions] == [1, 2, 3]
        g = GraphIndex.load(root)
        assert len(g) > 0
        assert main(["query", root, "-e", "ancestors output Changed of ledger execution 3", "--format", "json"]) == 0
        assert main(["export", root, "--format", "graphml", "-o", str(tmp_path / "g.graphml")]) == 0
        assert len(Session(root).run("zoomout ledger")[0].graph) > 0
    capsys.readouterr()
    assert _tree(root) == before  # nothing deleted, nothing added
    # the next writer removes what the crashed one left, and continues the numbering
    with Store.open(root) as store:
        assert not any(os.path.exists(os.path.join(root, "executions", n)) for n in left)
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    assert [e["n"] for e in Store.open(root).executions] == [1, 2, 3, 4]


def test_saving_without_the_lock_is_refused(ledger_runs):
    store = Store.open(ledger_runs[0])
    with pytest.raises(StoreError, match="without its writer lock"):
        store.save()
    with pytest.raises(StoreError, match="without its writer lock"):
        store.begin(4)


def test_a_first_run_that_crashed_is_resumed_by_the_next(spark, ledger_runs, tmp_path):
    root = str(tmp_path / "first")
    # the crash: the store is created (store.json, empty) and part of the initial state written
    from lipspark.workflow.definition import load_definition

    store = Store.create(root, "ledger", True, load_definition(LEDGER).with_params({}))
    os.makedirs(os.path.join(root, "initial", "ledger", "Balances"))
    with open(os.path.join(root, "initial", "ledger", "Balances", "part.parquet"), "w") as fh:
        fh.write("half")
    store._lock.release()  # type: ignore[union-attr]  # the process died: the kernel drops its lock
    with pytest.raises(StoreError, match="nothing committed yet"):
        GraphIndex.load(root)
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    clean = ledger_runs[0]  # an uninterrupted run of the same workflow, same parameters
    assert stored(spark, root) == {k: v for k, v in stored(spark, clean).items() if k[0] == 1}
    a, b = GraphIndex.load(root), GraphIndex.load(clean)
    assert a.ids.tolist() == b.ids[:b.blocks[2]].tolist()  # blocks: initial state, execution 1, ...


def test_a_session_keeps_its_snapshot_until_refreshed(spark, tmp_path):
    root = str(tmp_path / "s")
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    session = Session(root)
    first = session.run("zoomout intake")[0].graph
    n1 = len(session.base)
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    assert len(session.base) == n1 and len(session.view) == len(first)
    gained = session.refresh()
    assert gained > 0 and len(session.base) == len(GraphIndex.load(root)) == n1 + gained
    assert "intake" in session.view.zoom  # the session's zoom applies to the new graph
    assert session.run("ancestors output Changed of ledger execution 2")[0].rows


def test_an_index_ahead_of_a_readers_snapshot_is_read_as_its_prefix(ledger_runs, tmp_path):
    from lipspark.graph import qindex

    root = str(tmp_path / "s")
    shutil.copytree(ledger_runs[0], root)
    full = GraphIndex.load(root)
    files = {n: os.stat(os.path.join(root, "index", n)).st_mtime_ns for n in os.listdir(os.path.join(root, "index"))}
    # a reader that read store.json before execution 3 was committed (and indexed by another process)
    meta = json.load(open(os.path.join(root, "store.json")))
    meta["executions"] = meta["executions"][:2]
    with open(os.path.join(root, "store.json"), "w") as fh:
        json.dump(meta, fh)
    _, imeta = qindex.update(root)
    assert len(imeta["blocks"]) == 3  # initial state + 2 executions
    g = GraphIndex.load(root)
    assert 0 < len(g) < len(full) and set(g.ids.tolist()) <= set(full.ids.tolist())
    assert {n: os.stat(os.path.join(root, "index", n)).st_mtime_ns for n in files} == files  # not rebuilt


class _Crash(BaseException):
    """The process dies here (no clean-up runs: Store.abort is disabled while it is raised)."""


@pytest.mark.slow
def test_a_crash_at_any_step_of_a_commit_keeps_the_last_execution(spark, ledger_runs, tmp_path, monkeypatch):
    """Fault injection on the real commit sequence: at each step a reader runs (it must see the
    last committed execution and change nothing), then the writer dies; the next run continues
    and the store ends equal to an uninterrupted run's."""
    from lipspark.workflow.execution import Executor

    root = str(tmp_path / "s")
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    real_replace, real_write_graph = os.replace, Executor._write_graph
    state = {"point": None, "committed": 1}

    def reader_then_crash(point: str) -> None:
        if state["point"] != point:
            return
        before = _tree(root)
        assert len(Store.open(root).executions) == state["committed"] + (point == "committed"), point
        assert len(GraphIndex.load(root)) > 0
        # the reader changed nothing (the derived index/ may have been appended)
        assert [p for p in _tree(root) if not p.startswith("index")] == [p for p in before if not p.startswith("index")]
        raise _Crash(point)

    def replace(src, dst, *a, **kw):
        if ".pending-" in str(src):
            real_replace(src, dst, *a, **kw)
            return reader_then_crash("renamed")
        if str(dst).endswith("store.json") and os.path.dirname(str(dst)) == root:
            reader_then_crash("store.json written")
            real_replace(src, dst, *a, **kw)
            return reader_then_crash("committed")
        return real_replace(src, dst, *a, **kw)

    def write_graph(self, n):
        reader_then_crash("writing")
        return real_write_graph(self, n)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(Executor, "_write_graph", write_graph)
    for point in ("writing", "renamed", "store.json written", "committed"):
        state["point"] = point
        with monkeypatch.context() as m:
            m.setattr(Store, "abort", lambda self: None)  # a dead process cleans nothing up
            with pytest.raises(_Crash):
                run(LEDGER, graph_dir=root, spark=spark, executions=1)
        if point == "committed":
            state["committed"] += 1
        assert len(Store.open(root).executions) == state["committed"], point
    state["point"] = None
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    assert [e["n"] for e in Store.open(root).executions] == [1, 2, 3]
    assert sorted(os.listdir(os.path.join(root, "executions"))) == ["000001", "000002", "000003"]
    assert stored(spark, root) == stored(spark, ledger_runs[0])
    assert GraphIndex.load(root).ids.tolist() == GraphIndex.load(ledger_runs[0]).ids.tolist()


@pytest.mark.slow
def test_a_reader_process_during_a_writer_process(ledger_runs, tmp_path):
    """The issue's scenario: queries in one process while `lipspark run` appends in another. The
    writer finishes, every query answers from a committed snapshot, nothing is lost."""
    from lipspark.cli import main

    root = str(tmp_path / "s")
    shutil.copytree(ledger_runs[0], root, ignore=shutil.ignore_patterns("index"))
    with open(os.path.join(root, "store.json")) as fh:
        meta = json.load(fh)
    for e in meta["executions"][1:]:  # keep execution 1: the writer appends 2 and 3
        shutil.rmtree(os.path.join(root, e["dir"]))
    meta["executions"] = meta["executions"][:1]
    meta["next_segment"] = meta["executions"][0]["segments"][1]
    with open(os.path.join(root, "store.json"), "w") as fh:
        json.dump(meta, fh)
    writer = subprocess.Popen([sys.executable, "-m", "lipspark.cli", "run", LEDGER, "--graph", root, "--executions", "2", "--quiet"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = set()
    while writer.poll() is None:
        n = len(Store.open(root).executions)
        assert main(["query", root, "-e", f"ancestors output Changed of ledger execution {n}", "--format", "json"]) == 0
        seen.add(n)
    out, err = writer.communicate()
    assert writer.returncode == 0, err[-2000:]
    assert [e["n"] for e in Store.open(root).executions] == [1, 2, 3] and seen
    assert GraphIndex.load(root).ids.tolist() == GraphIndex.load(ledger_runs[0]).ids.tolist()


@pytest.mark.slow
def test_ctrl_c_during_a_run_is_one_line_and_leaves_the_last_execution(spark, ledger_runs, tmp_path):
    root = str(tmp_path / "s")
    proc = subprocess.Popen([sys.executable, "-m", "lipspark.cli", "run", LEDGER, "--graph", root, "--executions", "3", "--quiet"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import time

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(os.path.join(root, "store.json")) and len(Store.open(root).executions) >= 1:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "py4j" not in err.lower(), err[-3000:]
    done = len(Store.open(root).executions)
    assert err.strip().splitlines()[-1] == (f"lipspark: interrupted: the store at {root} keeps its {done} committed execution(s), "
                                            "unchanged; run the same command again to continue")
    assert 1 <= done < 3
    # what the cancelled jobs left is not committed; the next run removes it and continues
    run(LEDGER, graph_dir=root, spark=spark, executions=3 - done)
    assert [e["n"] for e in Store.open(root).executions] == [1, 2, 3]
    assert stored(spark, root) == stored(spark, ledger_runs[0])


def test_a_graph_path_that_is_a_file_is_one_line_before_spark(tmp_path, capsys):
    from lipspark.cli import main

    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["run", LEDGER, "--graph", str(f), "--executions", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lipspark: error: {f} is a file, not a directory; choose an empty or new directory for the store"]
    assert f.read_text() == "x"


def _no_spark(monkeypatch):
    """Make starting Spark fail the test: what is checked must happen before."""
    import lipspark.session

    def refuse(*a, **k):
        raise AssertionError("Spark was started")
    monkeypatch.setattr(lipspark.session, "get_spark", refuse)


@pytest.mark.parametrize("err", [OSError(30, os.strerror(30)), PermissionError(13, os.strerror(13))], ids=["EROFS", "EACCES"])
def test_a_store_whose_lock_cannot_be_created_is_one_line_before_spark(tmp_path, capsys, monkeypatch, err):
    """The writer lock's file cannot be opened (a read-only file system, another user's store)."""
    import lipspark.store.lock as lock_module
    from lipspark.cli import main

    real_open = os.open

    def failing_open(path, *args, **kwargs):
        if os.path.basename(path) == LOCK_FILE:
            raise err
        return real_open(path, *args, **kwargs)
    _no_spark(monkeypatch)
    monkeypatch.setattr(lock_module.os, "open", failing_open)
    d = tmp_path / "s"
    assert main(["run", LEDGER, "--graph", str(d), "--executions", "1", "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"lipspark: error: cannot write the store at {d} ({err.strerror}); choose a directory you can write"]


@pytest.mark.parametrize("readonly", [True, False], ids=["EROFS", "EACCES"])
def test_a_store_whose_directory_cannot_be_written_is_one_line_before_spark(tmp_path, capsys, monkeypatch, readonly):
    """The lock file can be opened, but the store's directories cannot be written: refused when
    the lock is taken, not by a traceback from the execution's first write."""
    import lipspark.store.store as store_module
    from lipspark.cli import main

    root = tmp_path / "s"
    Store.create(str(root), "ledger", True, {"perExec": 2, "numExec": 3, "seed": 0}).unlock()
    before = sorted(os.listdir(root))
    real_access, real_statvfs = os.access, os.statvfs
    executions = str(root / "executions")

    class Flags:
        f_flag = os.ST_RDONLY if readonly else 0

    monkeypatch.setattr(store_module.os, "access", lambda p, mode, **k: False if str(p) == executions else real_access(p, mode, **k))
    monkeypatch.setattr(store_module.os, "statvfs", lambda p: Flags() if str(p) == executions else real_statvfs(p))
    _no_spark(monkeypatch)
    assert main(["run", LEDGER, "--graph", str(root), "--executions", "1", "--quiet"]) == 2
    why = os.strerror(30 if readonly else 13)
    assert capsys.readouterr().err.strip().splitlines() == [
        f"lipspark: error: cannot write the store at {root} ({why}: {executions}); choose a directory you can write"]
    assert sorted(os.listdir(root)) == before


def _as_nobody() -> list[str] | None:
    """The command prefix that runs a process as an unprivileged user, if this machine has one."""
    import shutil as sh

    if os.geteuid() != 0 or not sh.which("setpriv"):
        return None
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import lipspark.cli"], capture_output=True, cwd=ROOT, timeout=60)
    return prefix if probe.returncode == 0 else None


def test_run_as_a_user_who_cannot_write_the_store_is_one_line_before_spark():
    """For real: `lipspark run` as `nobody` against directories root owns (chmod denies nothing
    to root). A new store in a directory it cannot write; an existing store whose lock file it
    cannot open; one whose lock file it can open (mode 666) but whose directories it cannot write."""
    import tempfile

    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("needs root and setpriv to run a process as nobody")
    base = tempfile.mkdtemp(prefix="lipspark-readonly-")  # not under pytest's tmp dirs, which only root can enter
    try:
        os.chmod(base, 0o755)
        existing = os.path.join(base, "store")
        Store.create(existing, "ledger", True, {"perExec": 2, "numExec": 3, "seed": 0}).unlock()

        def run_as_nobody(graph: str) -> list[str]:
            proc = subprocess.run([*prefix, sys.executable, "-m", "lipspark.cli", "run", LEDGER, "--graph", graph, "--executions", "1",
                                   "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
            assert proc.returncode == 2, proc.stderr
            return [ln for ln in proc.stderr.splitlines() if ln.strip()]

        new = os.path.join(base, "new")
        assert run_as_nobody(new) == [f"lipspark: error: cannot write the store at {new} (Permission denied); choose a directory you can write"]
        assert not os.path.exists(new)
        denied = f"lipspark: error: cannot write the store at {existing} (Permission denied"
        lines = run_as_nobody(existing)
        assert len(lines) == 1 and lines[0].startswith(denied), lines
        os.chmod(os.path.join(existing, LOCK_FILE), 0o666)
        lines = run_as_nobody(existing)
        assert lines == [f"{denied}: {existing}); choose a directory you can write"], lines
        assert Store.open(existing).executions == [] and os.listdir(os.path.join(existing, "executions")) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_readers_parse_store_json_once_per_version_and_a_writer_reads_its_own(tmp_path, monkeypatch):
    """A command opens a store from several layers: `store.json` (which grows with every
    execution) is parsed once per version of the file; a writer's copy is never shared."""
    import lipspark.store.store as store_mod

    root = str(tmp_path / "s")
    w = Store.create(root, "wf", False, {})
    w.meta["initial"] = {}
    w.save()
    w.unlock()
    parsed = []
    real = store_mod.read_json
    monkeypatch.setattr(store_mod, "read_json", lambda path, what: parsed.append(path) or real(path, what))
    a, b = Store.open(root), Store.open(root)
    assert len(parsed) == 1 and a.meta is b.meta
    writer = Store.open(root).lock()
    assert writer.meta is not a.meta and len(parsed) == 2  # the writer's own copy
    writer.meta["executions"].append({"n": 1, "dir": "executions/000001", "outputs": {}, "state": {}})
    os.makedirs(os.path.join(root, "executions", "000001"))
    assert Store.open(root).executions == []  # uncommitted: readers still see the last commit
    writer.save()
    writer.unlock()
    assert [e["n"] for e in Store.open(root).executions] == [1] and a.executions == []  # a snapshot stays as it was


@pytest.mark.parametrize("capture", ["eager", "deferred"])
def test_new_stores_begin_with_the_state_scheme_and_old_ones_keep_collapse(tmp_path, capture):
    """Every new store writes ``state_scheme: state`` (a new state row's p-node is a · node by
    position); a ``store.json`` without the key (a store made before) reads ``collapse``."""
    root = str(tmp_path / "s")
    with Store.create(root, "wf", True, {}, capture=capture, definition=__file__) as store:
        assert store.state_scheme == "state"
    with open(os.path.join(root, "store.json")) as fh:
        meta = json.load(fh)
    assert meta["state_scheme"] == "state"
    del meta["state_scheme"]
    with open(os.path.join(root, "store.json"), "w") as fh:
        json.dump(meta, fh)
    assert Store.open(root).state_scheme == "collapse"
    with Store.create(str(tmp_path / "old"), "wf", True, {}, capture=capture, definition=__file__, state_scheme="collapse") as old:
        assert old.state_scheme == "collapse" and Store.open(old.root).meta["state_scheme"] == "collapse"


def test_an_unknown_state_scheme_is_refused_naming_the_choices(tmp_path):
    with pytest.raises(StoreError, match=r"state_scheme must be one of state, collapse, got 'positional'"):
        Store.create(str(tmp_path / "s"), "wf", True, {}, state_scheme="positional")
    assert not os.path.exists(tmp_path / "s")
    root = str(tmp_path / "t")
    with Store.create(root, "wf", True, {}) as store:
        store.meta["state_scheme"] = "positional"
        store.save()
    with pytest.raises(StoreError, match=r"state_scheme 'positional'; expected 'state' or 'collapse'"):
        Store.open(root).state_scheme
