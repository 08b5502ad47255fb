"""The replay service's protocol, the client side: finding a store's service, and replaying in the
query process when none answers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from lipspark.store import Store
from lipspark.workflow import service_protocol as protocol
from tests.conftest import LEDGER


def _record(root: str, **doc) -> None:
    os.makedirs(os.path.join(root, "replays"), exist_ok=True)
    with open(os.path.join(root, "replays", protocol.SERVICE_FILE), "w") as fh:
        json.dump({"format": "lipspark-replay-service", "version": 1, **doc}, fh)


def test_a_record_left_by_a_dead_service_is_removed_and_replays_stay_in_the_process(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    root = str(tmp_path)
    _record(root, pid=pid, socket=str(tmp_path / "nowhere.sock"), warm=True)
    assert protocol.find_service(root) is None
    assert not os.path.exists(os.path.join(root, "replays", protocol.SERVICE_FILE))


def test_a_live_process_that_does_not_answer_is_no_service(tmp_path):
    """A record naming a live process (this one) whose socket nobody listens on: the client
    replays itself (``None``), it does not wait or fail."""
    store = Store.create(str(tmp_path / "s"), "w", True, {}, capture="deferred", definition=LEDGER)
    store.unlock()
    _record(store.root, pid=os.getpid(), socket=str(tmp_path / "nobody.sock"), warm=True)
    assert protocol.replay_by_service(store, [(1, "x")]) is None


def test_a_long_store_path_gets_its_socket_in_the_temporary_directory(tmp_path):
    short = protocol.socket_path(str(tmp_path / "s"))
    assert short == os.path.join(str(tmp_path / "s"), "replays", "service.sock")
    deep = str(tmp_path / ("d" * 120))
    path = protocol.socket_path(deep)
    assert len(path.encode()) <= 100 and os.path.dirname(path) != os.path.join(deep, "replays")
    assert protocol.socket_path(deep) == path  # the same store, the same socket


def test_a_record_naming_a_live_process_that_holds_no_service_lock_is_stale(tmp_path):
    """A pid is reused once its process is gone: the record names this (live) test process, but
    no service holds the store's lock, so no service runs and nobody is signalled to stop."""
    from lipspark.workflow import service

    root = str(tmp_path)
    _record(root, pid=os.getpid(), socket=str(tmp_path / "s.sock"), warm=True)
    assert protocol.find_service(root) is None
    assert not os.path.exists(os.path.join(root, "replays", protocol.SERVICE_FILE))
    _record(root, pid=os.getpid(), socket=str(tmp_path / "s.sock"), warm=True)
    assert service.stop_service(root) is None


def test_a_zombie_is_not_alive():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while protocol.alive(proc.pid) and time.monotonic() < deadline:  # exited, not reaped: a zombie
        time.sleep(0.05)
    assert not protocol.alive(proc.pid)
    proc.wait()
