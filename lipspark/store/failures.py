"""Failed executions in a store: their crash reports and what their failing invocation read.

An execution that fails is never committed (``store.json`` does not change). What the store keeps
of it lives outside ``executions/``, under ``failures/``, so no reader of executions sees it:

    failures/000003.json            the crash report (:class:`~lipspark.vocabulary.culprits.CrashReport`)
    failures/000003/                the relations the failing invocation read that the failed
                                    execution itself had written (outputs of earlier invocations,
                                    workflow inputs), copied before the execution is discarded,
                                    so ``lipspark run --explain-failure`` can replay the invocation
    failures/000003.invocation.json what the failing invocation read: relation, role, directory

Each file is written atomically (a temporary file, then a rename). A later failure of the same
execution number replaces them; a later successful run of that number leaves them (they describe
the failed attempt).

>>> import tempfile
>>> from lipspark.vocabulary.culprits import CrashReport
>>> root = tempfile.mkdtemp()
>>> r = CrashReport(1, "m", "m", "f at w.py:3", "ValueError: x", (), "none", 0)
>>> path = write_report(root, r)
>>> read_report(root) == r, failed_executions(root)
(True, [1])
"""
from __future__ import annotations

import json
import os
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.manifest import read_json
from lipspark.vocabulary.culprits import CrashReport

__all__ = ["FAILURES_DIR", "write_report", "read_report", "failed_executions", "write_invocation", "read_invocation", "kept_dir"]

FAILURES_DIR = "failures"


def _atomic(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def kept_dir(n: int) -> str:
    """The store-relative directory holding what failed execution ``n`` wrote and its failing invocation read."""
    return f"{FAILURES_DIR}/{n:06d}"


def write_report(root: str, report: CrashReport) -> str:
    """Keep ``report`` in the store at ``root``; returns the file's path."""
    path = os.path.join(root, FAILURES_DIR, f"{report.execution:06d}.json")
    _atomic(path, report.to_json())
    return path


def failed_executions(root: str) -> list[int]:
    """The execution numbers the store keeps a crash report of, in order."""
    d = os.path.join(root, FAILURES_DIR)
    names = os.listdir(d) if os.path.isdir(d) else []
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


def read_report(root: str, n: int | None = None) -> CrashReport:
    """The crash report of execution ``n`` (default: the latest the store keeps)."""
    kept = failed_executions(root)
    if n is None:
        if not kept:
            raise StoreError(f"the store at {root} keeps no crash report: no execution has failed there")
        n = kept[-1]
    if n not in kept:
        has = ", ".join(map(str, kept)) or "none"
        raise StoreError(f"the store at {root} keeps no crash report of execution {n}; it keeps reports of: {has}")
    return CrashReport.from_json(read_json(os.path.join(root, FAILURES_DIR, f"{n:06d}.json"), f"the crash report of execution {n}"))


def write_invocation(root: str, n: int, record: dict[str, Any]) -> None:
    """Keep what the failing invocation of execution ``n`` read (see the module docstring)."""
    _atomic(os.path.join(root, FAILURES_DIR, f"{n:06d}.invocation.json"), record)


def read_invocation(root: str, n: int) -> dict[str, Any]:
    path = os.path.join(root, FAILURES_DIR, f"{n:06d}.invocation.json")
    if not os.path.exists(path):
        raise StoreError(f"the store at {root} keeps nothing of the invocation that failed execution {n}; run it again to fail and keep it")
    data: dict[str, Any] = read_json(path, f"the failed invocation of execution {n}")
    return data
