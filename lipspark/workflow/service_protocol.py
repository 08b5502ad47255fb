"""The replay service's protocol and its client side: where a store's service records itself and
listens, and how a query process hands it replays (:func:`replay_by_service`). The service itself
is :mod:`lipspark.workflow.service`; this module is apart so that
:mod:`lipspark.workflow.ondemand`, which calls the service, and the service, which replays with
a :class:`~lipspark.workflow.ondemand.DeferredGraph`, do not import each other.

Protocol: a Unix socket (``replays/service.sock``, or one in the temporary directory when that
path is too long for a socket), created readable and writable by its owner only; one JSON object
a line each way: ``{"op": "replay", "invocations": [[n, "node"], …]}`` → ``{"ok": true,
"replayed": [[n, "node", seconds], …]}`` (or ``{"ok": false, "error": "…"}``, the one-line error
a replay in the query process would have raised); ``{"op": "ping"}`` → the service's
``service.json`` with its count of replays; ``{"op": "prepare"}`` → ``{"ok": true}`` once the
service has probed the layouts the store lacks (``replays/layouts.json``) and brought the coarse
graph's index up to date (``replays/coarse/``) — a run appended executions — so that the client
neither starts Spark nor builds the index; ``{"op": "stop"}``.

>>> import tempfile
>>> find_service(tempfile.mkdtemp()) is None  # no service runs for this directory
True
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import tempfile
from typing import Any

from lipspark.errors import StoreError
from lipspark.store import Store
from lipspark.workflow.layouts import REPLAYS_DIR

__all__ = ["SERVICE_FILE", "LOCK_FILE", "find_service", "prepare_by_service", "replay_by_service", "request", "socket_path", "read_info", "write_info", "info_path", "alive", "lock_held"]

#: The service's record, under the store's ``replays`` directory: pid, socket, start time, warm or not.
SERVICE_FILE = "service.json"
SOCKET_FILE = "service.sock"
LOCK_FILE = "service.lock"
FORMAT, VERSION = "lipspark-replay-service", 1
#: Longest socket path the kernel takes (``sun_path`` is 108 bytes with its terminating NUL).
MAX_SOCKET_PATH = 100
#: How long a client waits to connect, and a service for a request's line once connected (seconds).
CONNECT_TIMEOUT = 2.0
REQUEST_TIMEOUT = 30.0


def info_path(root: str) -> str:
    return os.path.join(root, REPLAYS_DIR, SERVICE_FILE)


def socket_path(root: str) -> str:
    """Where the service for the store at ``root`` listens."""
    path = os.path.join(os.path.abspath(root), REPLAYS_DIR, SOCKET_FILE)
    if len(path.encode()) <= MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"lipspark-{os.getuid()}-{digest}.sock")


def read_info(root: str) -> dict[str, Any] | None:
    try:
        with open(info_path(root)) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        return None
    return doc


def write_info(root: str, doc: dict[str, Any]) -> None:
    path = info_path(root)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, path)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def lock_held(root: str) -> bool:
    """Whether a service holds the store's service lock (``replays/service.lock``, taken with
    ``flock`` for as long as it runs: the kernel drops it when the service exits, however)."""
    try:
        fd = os.open(os.path.join(root, REPLAYS_DIR, LOCK_FILE), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing the descriptor releases a lock this call took
    return False


def request(path: str, doc: dict[str, Any], *, timeout: float | None) -> dict[str, Any] | None:
    """Send one request to the service listening at ``path``; its answer, or ``None`` when no
    service answers there (none listens, or it went away before answering)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(path)
            sock.settimeout(timeout)
            sock.sendall((json.dumps(doc) + "\n").encode())
            with sock.makefile("r", encoding="utf-8") as fh:
                line = fh.readline()
    except OSError:
        return None
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def find_service(root: str) -> dict[str, Any] | None:
    """The record of the replay service running for the store at ``root`` (``pid``, ``socket``,
    ``started``, ``warm``, ``idle``), or ``None`` when none runs (a record left by a service that
    is gone is removed)."""
    info = read_info(root)
    if info is None:
        return None
    pid = info.get("pid")
    # the lock, not the pid alone, says a service runs: a pid is reused once its process is gone
    if not isinstance(pid, int) or not alive(pid) or not lock_held(root):
        try:
            if (read_info(root) or {}).get("pid") == pid:  # not a record a new service wrote meanwhile
                os.remove(info_path(root))
        except OSError:
            pass
        return None
    return info


def prepare_by_service(store: Store) -> bool:
    """Have the replay service of ``store`` probe the layouts the store lacks and make its coarse
    graph's index; whether one did (``False``: none runs, the caller does it itself). The caller
    must not hold the coarse index's lock meanwhile: the service takes it."""
    info = find_service(store.root)
    if info is None:
        return False
    answer = request(str(info.get("socket")), {"op": "prepare"}, timeout=None)
    return bool(answer and answer.get("ok"))


def replay_by_service(store: Store, todo: list[tuple[int, str]]) -> list[tuple[int, str, float]] | None:
    """Have the replay service of ``store`` replay ``todo`` (execution, workflow node); what it
    replayed (execution, node, seconds), or ``None`` when no service runs (the caller replays
    them itself). A replay that fails raises the service's one-line error as a :class:`StoreError`."""
    info = find_service(store.root)
    if info is None:
        return None
    answer = request(str(info.get("socket")), {"op": "replay", "invocations": [[n, node] for n, node in todo]}, timeout=None)
    if answer is None:
        return None
    if not answer.get("ok"):
        raise StoreError(str(answer.get("error") or "the replay service failed without saying why"))
    return [(int(n), str(node), float(seconds)) for n, node, seconds in answer.get("replayed", [])]
