"""The replay service: a warm Spark that replays a deferred store's invocations for its queries.

A query on a deferred store replays the invocations its answer reaches
(:mod:`lipspark.workflow.ondemand`). In a new process that replay runs on a cold JVM: Spark's
start, then Catalyst's analysis, Spark's generated code and the Py4J bridge all run interpreted
until the JIT has seen them, so a first replay costs several times what the same replay costs in
a JVM that has run one (docs/benchmarks.md, "Provenance on demand"). ``lipspark serve G`` keeps one
Spark session running for the store ``G``:

* it warms itself first: it replays the invocations of execution 1 into a scratch directory it
  then removes (nothing of the store changes), so the JIT has seen every module's replay before
  the first query comes; a query that comes meanwhile is served after the warm-up step under way;
* a query process (``lipspark query``, ``shell``, ``viz``, ``export``, a
  :class:`~lipspark.query.Session` on a :class:`~lipspark.workflow.ondemand.DeferredGraph`) that
  needs replays hands them to it and reads what it wrote from the store, as if it had replayed
  them itself: the same directories, under the same ``replays`` lock, so answers are the same
  either way (``tests/workflow/test_service.py``). With no service running (or one that has gone
  away) the query process replays them itself;
* it stops after ``idle`` seconds without a request, on ``lipspark serve G --stop``, or on
  SIGTERM, and removes its socket and ``replays/service.json`` as it goes.

The protocol and the client side are :mod:`lipspark.workflow.service_protocol`. A request names
invocations of the store the service serves, by execution number and workflow node; nothing in
it is evaluated.
"""
from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable

from lipspark.errors import LipsparkError, StoreError
from lipspark.store import Store
from lipspark.workflow.layouts import REPLAYS_DIR
from lipspark.workflow.service_protocol import (CONNECT_TIMEOUT, FORMAT, LOCK_FILE, REQUEST_TIMEOUT, SERVICE_FILE, VERSION, alive,
                                                find_service, info_path, read_info, request, socket_path, write_info)

__all__ = ["serve", "start_detached", "run_then_serve", "serve_default", "stop_service", "ping", "find_service", "SERVICE_FILE"]

#: The environment variable that turns off the service a deferred ``lipspark run`` leaves by
#: default (``off``, ``0``, ``no`` or ``false``; ``lipspark run --no-serve`` does it for one run).
SERVE_ENV = "LIPSPARK_SERVE"
#: Idle minutes after which the service a deferred ``lipspark run`` leaves stops.
DEFAULT_IDLE_MINUTES = 15


def _check_request(doc: Any, graph: Any) -> list[tuple[int, str]]:
    """The invocations a replay request names, checked against the store the service serves."""
    invocations = doc.get("invocations") if isinstance(doc, dict) else None
    if not isinstance(invocations, list):
        raise StoreError('a replay request names its invocations: {"op": "replay", "invocations": [[execution, "node"], ...]}')
    count, nodes = len(graph.store.executions), graph.workflow.nodes
    todo = []
    for item in invocations:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], int) and isinstance(item[1], str)):
            raise StoreError(f"expected an invocation as [execution, \"node\"], got {json.dumps(item)[:80]}")
        n, node = item
        if not 1 <= n <= count or node not in nodes:
            raise StoreError(f"the store at {graph.store.root} has no invocation of {node!r} in execution {n} "
                             f"(executions 1..{count}; nodes: {', '.join(nodes)})")
        todo.append((n, node))
    return todo


def _receive(listening: socket.socket) -> tuple[Any, Any]:
    """Accept one connection and read its request line: (connection, request), or (None, None)
    when the client went away or sent no JSON line (nothing to answer)."""
    conn, _ = listening.accept()
    conn.settimeout(REQUEST_TIMEOUT)
    try:
        with conn.makefile("r", encoding="utf-8") as fh:
            line = fh.readline()
        return conn, json.loads(line)
    except (OSError, ValueError):
        conn.close()
        return None, None


def _send(conn: socket.socket, answer: dict[str, Any]) -> None:
    try:
        conn.settimeout(None)
        conn.sendall((json.dumps(answer) + "\n").encode())
    except OSError:
        pass  # the client went away; what was replayed is in the store all the same


class _Service:
    """The serving side: the store's :class:`DeferredGraph` on one Spark session, opened again
    when the store has grown (``lipspark run`` appended executions since)."""

    def __init__(self, root: str, spark: Any) -> None:
        self.root, self.spark = root, spark
        self.replays = 0
        self._stamp: tuple[int, int] | None = None
        self._graph: Any = None

    def graph(self) -> Any:
        from lipspark.workflow.ondemand import DeferredGraph

        st = os.stat(os.path.join(self.root, "store.json"))
        stamp = (st.st_mtime_ns, st.st_size)
        if self._graph is None or stamp != self._stamp:
            workflow = self._graph.workflow if self._graph is not None else None
            self._graph = DeferredGraph(Store.open(self.root), spark=self.spark)
            self._graph._workflow = workflow
            self._stamp = stamp
        return self._graph

    def warm(self, listening: socket.socket, budget: float, log: Callable[[str], None]) -> tuple[socket.socket, Any] | None:
        """Replay execution 1's invocations into a scratch directory (removed after) until a
        request other than a ping comes (returned, with the connection it came on, to be served
        first) or ``budget`` seconds have passed. Pings are answered as they come."""
        from lipspark.workflow.replay import replay_invocation

        graph = self.graph()
        if not graph.store.executions:
            return None
        scratch = tempfile.mkdtemp(prefix="lipspark-warm-")
        t0 = time.perf_counter()
        try:
            layouts = graph.layouts()
            for node in graph.workflow.topological_order():
                while select.select([listening], [], [], 0)[0]:
                    conn, doc = _receive(listening)
                    if conn is None:
                        continue
                    if isinstance(doc, dict) and doc.get("op") in ("ping", "prepare"):  # done by now: answered in the warm-up
                        _send(conn, self.answer(doc)[0])
                        conn.close()
                        continue
                    log("warm-up cut short: a request came")
                    return conn, doc
                if time.perf_counter() - t0 > budget:
                    log(f"warm-up stopped after its {budget:g}s")
                    return None
                t = time.perf_counter()
                try:
                    replay_invocation(graph.store, 1, node, os.path.join(scratch, node), spark=self.spark, workflow=graph.workflow,
                                      layouts=layouts, graph=True)
                except LipsparkError as err:  # the same replay asked for by a query would say it again
                    log(f"warm-up: {node} of execution 1 did not replay: {err}")
                    continue
                log(f"warm-up: replayed {node} of execution 1 in {time.perf_counter() - t:.1f}s")
            return None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def prepare(self) -> None:
        """Probe the layouts the store lacks and bring its coarse graph's index up to date (a run
        appended executions): a query process would otherwise start Spark to probe, and build
        the index itself."""
        graph = self.graph()
        graph.layouts()
        graph.coarse()

    def answer(self, doc: Any) -> tuple[dict[str, Any], bool]:
        """The answer to one request, and whether the service stops after it."""
        op = doc.get("op") if isinstance(doc, dict) else None
        if op == "ping":
            return {"ok": True, **(read_info(self.root) or {}), "replays": self.replays}, False
        if op == "stop":
            return {"ok": True}, True
        if op == "prepare":  # what a query process would otherwise start Spark for, or build itself
            try:
                self.prepare()
            except LipsparkError as err:
                return {"ok": False, "error": str(err)}, False
            return {"ok": True}, False
        if op != "replay":
            return {"ok": False, "error": f"expected a request op of ping, prepare, replay or stop, got {json.dumps(op)}"}, False
        done: list[list[Any]] = []
        try:
            graph = self.graph()
            graph.replay_here(_check_request(doc, graph), on_replay=lambda n, node, s: done.append([n, node, round(s, 3)]))
        except LipsparkError as err:
            return {"ok": False, "error": str(err)}, False
        except Exception as err:  # noqa: BLE001 - told to the client in one line; the service goes on
            return {"ok": False, "error": f"the replay failed: {type(err).__name__}: {err}"}, False
        self.replays += len(done)
        return {"ok": True, "replayed": done}, False


def _servable(root: str) -> Store:
    """The deferred store at ``root``, with its ``replays`` directory (a one-line error for any other)."""
    store = Store.open(root)
    if store.capture != "deferred":
        raise StoreError(f"the store at {store.root} captured its provenance {store.capture or 'never'}: only a deferred store "
                         "has invocations to replay on demand")
    os.makedirs(os.path.join(store.root, REPLAYS_DIR), exist_ok=True)
    return store


def _already(root: str, running: dict[str, Any]) -> StoreError:
    return StoreError(f"a replay service already serves {root} (pid {running['pid']}): lipspark serve {root} --stop ends it")


def serve(root: str, *, idle: float = 900.0, warm: float = 300.0, master: str | None = None,
          log: Callable[[str], None] | None = None, on_listening: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Serve replays for the deferred store at ``root`` until ``idle`` seconds pass without a
    request (or a ``stop`` request, or SIGTERM); warm up for at most ``warm`` seconds first (0:
    none). ``log``: where progress lines go (default: standard error). ``on_listening`` is called
    with the service's record once it listens, before its warm-up. Returns the number of
    invocations replayed for requests."""
    say = log or (lambda line: print(f"lipspark serve: {line}", file=sys.stderr, flush=True))
    store = _servable(root)
    root = store.root
    held = open(os.path.join(root, REPLAYS_DIR, LOCK_FILE), "a")  # one service a store: held while it runs
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        held.close()
        raise _already(root, find_service(root) or {"pid": "?"}) from None
    try:
        return _serve_locked(root, store, idle=idle, warm=warm, master=master, say=say, on_listening=on_listening)
    finally:
        held.close()


def _serve_locked(root: str, store: Store, *, idle: float, warm: float, master: str | None, say: Callable[[str], None],
                  on_listening: Callable[[dict[str, Any]], None] | None = None) -> int:
    """:func:`serve` once it holds the store's service lock."""
    from lipspark.session import get_spark

    path = socket_path(root)
    spark = get_spark(master, app_name=f"lipspark-serve-{store.meta.get('workflow', '')}")
    service = _Service(root, spark)
    service.graph()  # a store whose scheme cannot be replayed alone is refused before listening
    if os.path.exists(path):
        os.remove(path)  # left by a service that died (this one holds the lock now)
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listening.bind(path)
    finally:
        os.umask(mask)
    listening.listen(16)
    info = {"format": FORMAT, "version": VERSION, "pid": os.getpid(), "socket": path, "started": time.time(), "warm": False,
            "idle": idle}

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    main = threading.current_thread() is threading.main_thread()  # signal handlers are the main thread's (a test serves from another)
    previous = signal.signal(signal.SIGTERM, stop) if main else None
    try:
        write_info(root, info)
        if on_listening is not None:
            on_listening(info)
        say(f"listening on {path} for {root}")
        t0 = time.perf_counter()
        try:
            service.prepare()  # before any request is taken: a query process waits for it rather than doing it itself
            say(f"prepared the layouts and the coarse graph in {time.perf_counter() - t0:.1f}s")
        except LipsparkError as err:  # a query asking for them is told the same
            say(f"could not prepare the layouts and the coarse graph: {err}")
        first = service.warm(listening, warm, say) if warm > 0 else None
        write_info(root, {**info, "warm": True})
        say(f"warm; stops after {idle:g}s without a request")
        while True:
            if first is not None:
                (conn, doc), first = first, None
            elif not select.select([listening], [], [], idle)[0]:
                say(f"no request for {idle:g}s: stopping")
                break
            else:
                conn, doc = _receive(listening)
                if conn is None:
                    continue
            with conn:
                t = time.perf_counter()
                answer, last = service.answer(doc)
                if isinstance(doc, dict) and doc.get("op") == "replay":
                    say(f"{'replayed ' + str(len(answer.get('replayed', []))) if answer.get('ok') else 'failed: ' + str(answer.get('error'))}"
                        f" in {time.perf_counter() - t:.1f}s")
                _send(conn, answer)
            if last:
                say("stopped on request")
                break
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        listening.close()
        for leftover in (path, info_path(root)):
            try:
                if leftover != info_path(root) or (read_info(root) or {}).get("pid") == os.getpid():
                    os.remove(leftover)
            except OSError:
                pass
    return service.replays


def start_detached(root: str, *, idle: float = 900.0, warm: float = 300.0, master: str | None = None,
                   timeout: float = 180.0) -> dict[str, Any]:
    """Start ``lipspark serve`` for the store at ``root`` in a process of its own (its output in
    ``replays/service.log``) and return its record once it listens (it warms up after that)."""
    store = _servable(root)
    running = find_service(store.root)
    if running is not None:
        raise _already(store.root, running)
    args = [sys.executable, "-m", "lipspark", "serve", store.root, "--idle", f"{idle / 60:g}", "--warm", f"{warm:g}"]
    if master:
        args += ["--master", master]
    logfile = os.path.join(store.root, REPLAYS_DIR, "service.log")
    with open(logfile, "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = find_service(store.root)
        if info is not None and info.get("pid") == proc.pid:
            return info
        if proc.poll() is not None:
            with open(logfile, errors="replace") as fh:
                last = [ln.strip() for ln in fh if ln.strip()][-1:] or ["(nothing logged)"]
            raise StoreError(f"the replay service did not start: {last[0]} (log: {logfile})")
        time.sleep(0.1)
    proc.terminate()
    raise StoreError(f"the replay service did not listen within {timeout:g}s (log: {logfile})")


def stop_service(root: str, *, timeout: float = 60.0) -> dict[str, Any] | None:
    """Stop the replay service of the store at ``root``; its record, or ``None`` if none ran."""
    info = find_service(root)
    if info is None:
        return None
    pid = int(info["pid"])
    if request(str(info.get("socket")), {"op": "stop"}, timeout=timeout) is None:
        os.kill(pid, signal.SIGTERM)  # busy with a request, or not answering: ask the process instead
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    if alive(pid):
        raise StoreError(f"the replay service (pid {pid}) did not stop within {timeout:g}s")
    return info


def ping(root: str) -> dict[str, Any] | None:
    """The running service's record with its count of replays (``replays``), or ``None``."""
    info = find_service(root)
    if info is None:
        return None
    return request(str(info.get("socket")), {"op": "ping"}, timeout=CONNECT_TIMEOUT) or {**info, "replays": None}


def serve_default() -> bool:
    """Whether a deferred ``lipspark run`` stays on as its store's replay service unless told not to
    (:data:`SERVE_ENV`)."""
    return os.environ.get(SERVE_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def run_then_serve(run: Callable[[], int], graph: Callable[[], str], *, idle: float = DEFAULT_IDLE_MINUTES * 60.0,
                   warm: float = 300.0, master: str | None = None) -> int:
    """Run ``run`` (a deferred ``lipspark run``: its exit code) in a child process which, once the
    run has succeeded, stays on as the replay service of the store at ``graph()``, on the Spark the
    run warmed: the store's first query then replays in a JVM that has just run every module,
    instead of starting and warming one (docs/benchmarks.md, "Provenance on demand").

    This process waits for the run and returns its exit code as soon as the child listens (its
    record is in ``replays/service.json`` by then, so the next command finds it). Until then the
    child writes to this process's terminal, and Ctrl-C (or SIGTERM, SIGHUP) here is passed on to
    it, so the run behaves as one in this process would. Then the child leaves the terminal: its
    output, and its JVM's (relayed through a pipe from the start, so that no JVM holds the
    terminal or a pipe whose reader waits for it to close), go to ``replays/service.log``. It
    stops as :func:`serve` does (idle, ``lipspark serve G --stop``, SIGTERM). A run that fails,
    is interrupted, or finds another service serving the store, leaves no service.
    """
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(status_w)
        return _wait_for_run(pid, status_r)
    os.close(status_r)  # pragma: no cover - the child: tests see it through the processes it leaves
    code, reported = 1, [False]
    try:
        os.setsid()  # the terminal's signals reach the parent, which passes them on
        code = _run_and_serve(run, graph, status_w, reported, idle=idle, warm=warm, master=master)
    except SystemExit as stop:  # SIGTERM while serving
        code = stop.code if isinstance(stop.code, int) else 0
    except BaseException as err:  # noqa: BLE001 - said where the child writes now (terminal or log)
        print(f"lipspark: error: {type(err).__name__}: {err}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        _report(status_w, code, reported)
        os._exit(code)


def _wait_for_run(pid: int, status_r: int) -> int:
    """The parent's side of :func:`run_then_serve`: the run's exit code, once the child reports it."""
    def forward(signum: int, frame: Any) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    data = b""
    try:
        while b"\n" not in data:
            chunk = os.read(status_r, 64)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(status_r)
        for s, handler in previous.items():
            signal.signal(s, handler)
    line = data.split(b"\n")[0].strip()
    if line == b"0":
        return 0  # the child serves on, on its own
    _, status = os.waitpid(pid, 0)  # a failed run: its child ends now; its output is all out
    if line.lstrip(b"-").isdigit():
        return int(line)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code or 1


def _report(status_w: int, code: int, reported: list[bool]) -> None:
    if reported[0]:
        return
    reported[0] = True
    try:
        os.write(status_w, f"{code}\n".encode())
        os.close(status_w)
    except OSError:
        pass


def _relay(fd: int) -> None:
    """Copy what the JVM writes to this process's standard error, wherever that is now."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        try:
            os.write(2, chunk)
        except OSError:
            pass


class _Preparer(threading.Thread):
    """What the service prepares (:meth:`_Service.prepare`), done while the run goes on: after each
    execution the run commits, the layouts of its invocations (probed on the run's Spark, once
    per node and input layouts: most in the first execution) and its block of the coarse graph's
    index. A probe plans module code over no rows, caching nothing, in a Spark session of its own
    (:func:`~lipspark.session.session_like`: the run's module code never sees a probe's
    temporary view), and a block is read from files the run has committed, so the run's jobs and
    data are untouched. The work shares the cores with the run (the car dealership's 10
    executions: 1.07× the run without it), and the service, once the run ends, finds nothing
    left to prepare instead of the whole store (docs/benchmarks.md, "The first query right after
    a deferred run").

    Its failures are kept, not said: the service's own prepare does the same work again and says
    why it cannot. :meth:`finish` ends it when the run has ended."""

    def __init__(self, graph: Callable[[], str], poll: float = 1.0) -> None:
        super().__init__(name="lipspark-prepare", daemon=True)
        self._graph, self._poll = graph, poll
        self._halt = threading.Event()
        self._complete = False  # finish: one more step after the run
        self.prepared = 0  # executions whose layouts and block are made
        self._spark: Any = None
        self._workflow: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            root = self._graph()
            while not self._halt.wait(self._poll):
                self._step(root)
            if self._complete:
                self._step(root)  # what the run's last executions added
        except BaseException as err:  # noqa: BLE001 - the service's prepare tells it, if it still fails
            self.error = err

    def _step(self, root: str) -> None:
        from pyspark import SparkContext

        if not os.path.exists(os.path.join(root, "store.json")) or SparkContext._active_spark_context is None:
            return  # nothing committed yet
        store = Store.open(root)
        if store.capture != "deferred" or len(store.executions) <= self.prepared:
            return
        from pyspark.sql import SparkSession

        from lipspark.workflow.ondemand import DeferredGraph

        if self._spark is None:  # the run's Spark, in a session of its own: module code's temporary views stay the run's
            from lipspark.session import session_like

            self._spark = session_like(SparkSession.builder.getOrCreate())
        graph = DeferredGraph(store, spark=self._spark)
        graph._workflow = self._workflow  # built from the definition once, not at every execution
        graph.layouts()
        self._workflow = graph.workflow
        if self._complete or not self._halt.is_set():
            graph.coarse()
            self.prepared = len(store.executions)

    def finish(self, wait: bool = True) -> None:
        """The run has ended: ``wait`` (it succeeded) for the step under way and one more, for
        what the run's last executions added; else stop after the step under way without waiting
        for it (the process ends; what the step was writing is replaced whole or not at all)."""
        self._complete = wait
        self._halt.set()
        if wait:
            self.join()


def _run_and_serve(run: Callable[[], int], graph: Callable[[], str], status_w: int, reported: list[bool], *,
                   idle: float, warm: float, master: str | None) -> int:
    """The child's side of :func:`run_then_serve`."""
    from lipspark.session import jvm_output

    relay_r, relay_w = os.pipe()
    threading.Thread(target=_relay, args=(relay_r,), name="lipspark-jvm-output", daemon=True).start()
    preparer = _Preparer(graph)
    preparer.start()
    code = 1
    try:
        with jvm_output(relay_w):
            code = run()
    finally:
        preparer.finish(wait=code == 0)
        os.close(relay_w)  # the JVM keeps its own copy
    if code != 0:
        return code
    root = graph()

    def detach(info: dict[str, Any]) -> None:
        print(f"replay service pid {os.getpid()} warming up on this run's Spark for {root}'s queries; it stops after "
              f"{idle / 60:g} idle minutes, or: lipspark serve {root} --stop (lipspark run --no-serve leaves none)", flush=True)
        sys.stderr.flush()
        log = os.open(os.path.join(root, REPLAYS_DIR, "service.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        _report(status_w, 0, reported)
        said = f"{type(preparer.error).__name__}: {preparer.error}" if preparer.error is not None else ""
        print(f"lipspark serve: during the run, brought the layouts and the coarse graph's index up to execution {preparer.prepared}"
              f"{'; then stopped: ' + said if said else ''}", file=sys.stderr, flush=True)

    try:
        serve(root, idle=idle, warm=warm, master=master, on_listening=detach)
    except Exception as err:  # noqa: BLE001 - the run succeeded: its exit code stays 0
        if reported[0]:
            raise
        running = find_service(root)
        print(f"replay service pid {running['pid']} already serves {root}'s queries" if running is not None
              else f"lipspark: no replay service: {err}", flush=True)
    return 0
