"""The writer lock: one process at a time writes a store; readers never take it and never wait.

A store's writer (``lipspark run``, a replay into a deferred store's ``provenance/``) holds an
OS-level lock (``fcntl.flock``) on ``<store>/.writer.lock`` for as long as it writes, and records
who holds it (pid, host, start time) in that file, so a second writer can say whom it is waiting
for. The kernel releases the lock when its holder exits, however it exits (SIGKILL included), so
a lock left by a dead process is never in the way: the recorded holder is only information. The
file descriptor is not inherited by child processes (Python opens files non-inheritable), so a
Spark JVM started by the writer does not keep the lock alive.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> with WriterLock(d):  # doctest: +ELLIPSIS
...     WriterLock(d).acquire()
Traceback (most recent call last):
...
lipspark.store.lock.StoreLockedError: ...
>>> with WriterLock(d) as lock:
...     lock.held
True
"""
from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import socket
import time
from typing import Any

from lipspark.errors import StoreError

__all__ = ["WriterLock", "StoreLockedError", "LOCK_FILE"]

#: The lock file, in the store's directory.
LOCK_FILE = ".writer.lock"


class StoreLockedError(StoreError):
    """Another process is writing the store."""


class WriterLock:
    """The writer lock of the store at ``root`` (its directory is created if missing).

    ``acquire()`` fails at once with :class:`StoreLockedError` naming the holder, unless
    ``wait`` seconds are given: then it waits that long for the holder to finish.
    """

    def __init__(self, root: str, what: str = "run") -> None:
        self.root = os.path.abspath(root)
        self.path = os.path.join(self.root, LOCK_FILE)
        self.what = what
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> dict[str, Any]:
        """Who last took the lock, as its file records it (empty if unknown)."""
        try:
            with open(self.path) as fh:
                info = json.load(fh)
            return info if isinstance(info, dict) else {}
        except (OSError, ValueError):
            return {}

    def acquire(self, wait: float = 0.0) -> "WriterLock":
        if self._fd is not None:
            return self
        try:
            os.makedirs(self.root, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StoreError(f"cannot write the store at {self.root} ({err.strerror}); choose a directory you can write") from None
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as err:
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise StoreError(f"cannot lock the store at {self.root} ({err.strerror})") from None
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StoreLockedError(self._busy()) from None
                time.sleep(0.2)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "what": self.what,
                "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __del__(self) -> None:  # a lock whose owner is gone is released, not leaked with its fd
        self.release()

    def _busy(self) -> str:
        h = self.holder()
        who = (f"{h.get('what', 'a writer')} (pid {h.get('pid', '?')} on {h.get('host', '?')}, since {h.get('since', '?')})"
               if h else "another process")
        return (f"the store at {self.root} is being written by {who}; wait for it to finish, "
                "or stop it, then try again (a writer that died releases the store by itself)")

    def __enter__(self) -> "WriterLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
