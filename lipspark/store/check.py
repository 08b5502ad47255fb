"""``lipspark check STORE``: verify every file a store's records name, without trusting any.

Each stored relation (workflow inputs, outputs, state, the initial state) and each graph table is
recorded with its size and CRC-32 when it is written (:class:`~lipspark.vocabulary.FileRef`). A
check opens ``store.json`` and every graph manifest, then verifies each file they name: present,
of the recorded size, with the recorded checksum (files recorded by a lipspark that kept no
checksum are checked for size only, and counted). The replay store of a deferred store
(``provenance/``) is checked too. The derived query-ready index is not: a stale or damaged index
is rebuilt by the next query (``lipspark reindex``).

Reading only, like every reader: nothing is written, whatever is found. Each problem is one line
naming the file, what is wrong, and what repairs it.

>>> check_store("/nonexistent").problems
['/nonexistent: no provenance store or graph here (store.json and manifest.json missing)']
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from lipspark.errors import StoreError
from lipspark.store.manifest import read_manifest
from lipspark.store.store import PROVENANCE_DIR, Store
from lipspark.vocabulary.segments import BaseSegment, BoundarySegment, FileRef, Segment, file_crc32

__all__ = ["check_store", "CheckReport"]


@dataclass
class CheckReport:
    """What :func:`check_store` found: files verified (and how many only by size), and problems."""

    path: str
    verified: int = 0
    size_only: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"{self.path}: {self.verified:,} file(s) verified"
        if self.size_only:
            head += f" ({self.size_only:,} without a recorded checksum, written by an older lipspark: size or footer checked only)"
        if self.ok:
            return head + ", all intact"
        return "\n".join([*self.problems, head + f", {len(self.problems):,} problem(s)"])


def check_store(path: str) -> CheckReport:
    """Verify the store (or graph directory) at ``path``; see the module docstring."""
    report = CheckReport(path)
    if os.path.exists(os.path.join(path, "store.json")):
        _check_workflow_store(path, report, _RESTORE)
    elif os.path.exists(os.path.join(path, "manifest.json")):
        _check_graph(path, ".", path, report, "restore it from a backup, or capture the graph again")
    else:
        report.problems.append(f"{path}: no provenance store or graph here (store.json and manifest.json missing)")
    return report


#: The fix for a damaged file of a store's own records (a replay's are replayed again instead).
_RESTORE = ("restore it from a backup: the store cannot be rebuilt without it "
            "(or run the workflow again into a new store, `lipspark run WORKFLOW --graph NEW`)")


def _check_workflow_store(root: str, report: CheckReport, fix: str) -> None:
    try:
        store = Store.open(root)
    except StoreError as err:
        report.problems.append(f"{err}")
        return
    seen: set[str] = set()
    for ref in _relation_refs(store.meta):
        _check_file(store.root, ref, report, seen, fix)
    try:
        graph_dirs = store.graph_dirs()
    except StoreError as err:
        report.problems.append(f"{err}; {fix}")
        graph_dirs = []
    for gdir in graph_dirs:
        _check_graph(store.root, gdir, os.path.join(store.root, gdir), report, fix, seen)
    sub = os.path.join(store.root, PROVENANCE_DIR)
    if store.capture == "deferred" and os.path.exists(os.path.join(sub, "store.json")):
        _check_workflow_store(sub, report, f"delete {sub} and run `lipspark materialize {store.root}` to replay it again")


def _relation_refs(meta: dict[str, Any]) -> Iterator[FileRef]:
    """Every file of every relation ``store.json`` describes."""
    groups = [meta.get("initial") or {}]
    for e in meta.get("executions", []):
        groups += [e.get("inputs", {}), e.get("outputs", {}), e.get("state", {})]
    for group in groups:
        for rels in group.values():
            for desc in rels.values():
                for f in desc.get("files", []):
                    yield FileRef.from_json(f)


def _check_graph(root: str, gdir: str, full: str, report: CheckReport, fix: str, seen: set[str] | None = None) -> None:
    """The graph directory ``gdir`` of ``root``: its manifest, its tables, the relation files its
    segments read."""
    seen = set() if seen is None else seen
    try:
        manifest = read_manifest(full)
        segments = [Segment.from_json(s) for s in manifest["segments"]]
    except StoreError as err:
        report.problems.append(f"{err}; {fix}")
        return
    for f in manifest.get("files", []):
        ref = FileRef.from_json(f)
        _check_file(root, FileRef(os.path.normpath(os.path.join(gdir, ref.path)), ref.size, ref.mtime_ns, ref.crc32), report, seen, fix)
    if "files" not in manifest:  # written before tables were recorded: check that each one reads
        tables = sorted({t["path"] for s in manifest["segments"] for t in s.get("tables", {}).values()})
        for t in tables:
            _check_readable(os.path.join(full, t), report, fix)
    for s in segments:
        refs = s.files if isinstance(s, BaseSegment) and s.files else s.source.files if isinstance(s, BoundarySegment) else ()
        for ref in refs:
            _check_file(root, ref, report, seen, fix)


def _check_file(root: str, ref: FileRef, report: CheckReport, seen: set[str], fix: str) -> None:
    from lipspark.store.manifest import local_path

    path = local_path(ref.path, root)
    if path in seen:
        return
    seen.add(path)
    try:
        size = os.path.getsize(path)
    except OSError:
        report.problems.append(f"{path}: missing; {fix}")
        return
    if size != ref.size:
        report.problems.append(f"{path}: {size:,} bytes, {ref.size:,} recorded (truncated or rewritten); {fix}")
        return
    if ref.crc32 is not None and file_crc32(path) != ref.crc32:
        report.problems.append(f"{path}: checksum differs from the one recorded (the file is damaged); {fix}")
        return
    report.verified += 1
    report.size_only += ref.crc32 is None


def _check_readable(table_dir: str, report: CheckReport, fix: str) -> None:
    """Each Parquet file of a graph table with no recorded sizes: its footer must parse."""
    import pyarrow.parquet as pq

    try:
        names = sorted(n for n in os.listdir(table_dir) if n.endswith(".parquet"))
    except OSError:
        report.problems.append(f"{table_dir}: missing; {fix}")
        return
    for n in names:
        path = os.path.join(table_dir, n)
        try:
            pq.read_metadata(path)
        except Exception as err:  # pyarrow raises several types for a damaged file
            report.problems.append(f"{path}: cannot be read ({type(err).__name__}: the file is damaged); {fix}")
            continue
        report.verified += 1
        report.size_only += 1
