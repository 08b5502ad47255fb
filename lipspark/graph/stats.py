"""Size of a written graph (nodes, edges, bytes) read from its compact tables, without expanding.

:func:`graph_stats` counts exactly the nodes and edges :func:`~lipspark.graph.expand.expand_segments`
makes from the same segments (a test checks it against the loaded graph), using only the
columns it needs: per group the members' group and member ids, factors and argument null counts;
per row-node segment the ids and their children lists. Each table shared by the segments of a
graph directory is read once (:class:`~lipspark.store.manifest.TableReader`).

>>> from lipspark.graph.stats import GraphStats
>>> GraphStats(nodes=3, edges=2, bytes=48).bytes_per_edge
24.0
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lipspark.vocabulary.columns import factor
from lipspark.errors import StoreError
from lipspark.graph.expand import TOKEN_ID, local_path
from lipspark.store.manifest import TableReader, read_manifest
from lipspark.vocabulary import AggregateSpec, BaseSegment, GroupSegment, MonusSegment, Op, RowNodeSegment, Segment

__all__ = ["GraphStats", "graph_stats", "directory_bytes"]


@dataclass(frozen=True)
class GraphStats:
    """Nodes, edges (with multiplicity) and bytes on disk of a graph."""

    nodes: int
    edges: int
    bytes: int

    @property
    def bytes_per_edge(self) -> float:
        """Bytes on disk per edge (NaN without edges)."""
        return self.bytes / self.edges if self.edges else float("nan")


def directory_bytes(path: str, *, skip: tuple[str, ...] = ()) -> int:
    """Bytes of all data files under ``path`` (Spark's ``_SUCCESS``/checksum files excluded;
    ``skip``: names of sub-directories of ``path`` not counted)."""
    total = 0
    for root, dirs, files in os.walk(path):
        if root == path:
            dirs[:] = [d for d in dirs if d not in skip]
        for f in files:
            if f.endswith(".crc") or f.startswith("_"):
                continue
            total += os.path.getsize(os.path.join(root, f))
    return total


def _read(reader: TableReader, seg: int, entry: dict[str, Any], columns: list[str]) -> pa.Table | None:
    """The named columns of one of a segment's tables, or None when the segment has no rows and
    its columns are unknown (a version-1 graph)."""
    t = reader.read(seg, entry)
    return None if t is None else t.select(columns)


def _base(s: BaseSegment, path: str, reader: TableReader, tables: dict[str, Any]) -> tuple[int, int]:
    if s.files is not None:
        return sum(pq.ParquetFile(local_path(f.path, path)).metadata.num_rows for f in s.files), 0
    t = _read(reader, s.seg, tables["tuples"], [TOKEN_ID])
    return (0 if t is None else len(pc.unique(t[TOKEN_ID]))), 0


def _not_null(t: pa.Table, column: str) -> np.ndarray:
    return ~t[column].is_null().to_numpy(zero_copy_only=False)


def _read_edges(t: pa.Table, a: AggregateSpec, rows: np.ndarray) -> int:
    """Edges from the v-nodes an argument reads (``vnode`` and ``reads``) of the members ``rows``."""
    return sum(int((rows & _not_null(t, c)).sum()) for c in (a.vnode, *a.reads) if c is not None and c in t.column_names)


def _aggregate(t: pa.Table, a: AggregateSpec, groups: int) -> tuple[int, int]:
    """The nodes and edges of one aggregate of a group segment with members ``t`` (see
    :func:`lipspark.graph.expand._group`)."""
    if a.op is Op.CONSTANT:  # a formula's literal: a v-node per group
        return groups, 0
    if a.op.is_arithmetic:  # a formula's node: from its inputs (and the root from the group's node)
        return groups, groups * (len(a.inputs) + (1 if a.value else 0))
    if a.black_box:
        if a.inputs:  # an expression over aggregates: from the group's node and those aggregates
            return groups, groups * (1 + len(a.inputs))
        return groups, t.num_rows + _read_edges(t, a, np.ones(t.num_rows, dtype=bool))  # from every member
    present = np.ones(t.num_rows, dtype=bool) if a.arg is None else _not_null(t, f"x{a.arg}")
    if a.distinct is not None:
        present &= _not_null(t, a.distinct)
        runs = len(np.unique(t[a.distinct].to_numpy(zero_copy_only=False)[present]))
        reads = _read_edges(t, a, present) if a.vnode is not None or a.reads else 0
        # values, δ per value, ⊗ and value per value; member -> δ, δ/value -> ⊗, ⊗ -> aggregate
        return groups + 3 * runs, int(present.sum()) + 3 * runs + reads
    n_present = int(present.sum())
    has_own = 0
    if a.vnode is not None and a.op is not Op.COUNT and a.vnode in t.column_names:
        has_own = int((present & _not_null(t, a.vnode)).sum())
    reads = sum(int((present & _not_null(t, c)).sum()) for c in a.reads if c in t.column_names)
    # values, ⊗, value nodes (not for own v-nodes); member -> ⊗, value -> ⊗, ⊗ -> aggregate
    return groups + n_present + (n_present - has_own), 3 * n_present + reads


def _group(s: GroupSegment, reader: TableReader, tables: dict[str, Any]) -> tuple[int, int]:
    """Group nodes, · member nodes, and per aggregate its v-nodes, ⊗ nodes and values."""
    fcols = [factor(i) for i in range(s.k)] if s.k > 1 else []
    members = reader.read(s.seg, tables["members"])
    if members is None:  # no rows: only a keyless aggregate's group and its values
        if s.group is None:
            return 0, 0
        return 1 + len(s.aggregates), sum(len(a.inputs) + (1 if a.black_box or a.value else 0) for a in s.aggregates if a.inputs)
    needed = {"g", "m", *fcols, *(f"x{a.arg}" for a in s.aggregates if a.arg is not None)}
    needed |= {c for a in s.aggregates for c in (a.vnode, a.distinct, *a.reads) if c is not None}
    t = members.select([c for c in members.column_names if c in needed])
    g = t["g"].to_numpy()
    groups = len(np.union1d(g, [s.group]) if s.group is not None else np.unique(g))
    nodes, edges = groups, t.num_rows if s.group is None else 0  # a member -> group edge per row (a keyless group is 1)
    if fcols:
        dn, de = _member_products(t, fcols)
        nodes, edges = nodes + dn, edges + de
    for a in s.aggregates:
        n, e = _aggregate(t, a, groups)
        nodes += n
        edges += e
    return nodes, edges


def _rownode(s: RowNodeSegment, reader: TableReader, tables: dict[str, Any]) -> tuple[int, int]:
    """One node per distinct id, with the children of its first row (as expansion keeps it)."""
    t = _read(reader, s.seg, tables["nodes"], ["id", "children"])
    if t is None:
        return 0, 0
    _, first = np.unique(t["id"].to_numpy(), return_index=True)
    lengths = pc.list_value_length(t["children"]).fill_null(0).to_numpy(zero_copy_only=False)
    return len(first), int(lengths[first].sum())


def _monus(s: MonusSegment, reader: TableReader, tables: dict[str, Any]) -> tuple[int, int]:
    """Per row a ⊖ node and its δ subtrahend (and δ minuend), the members' edges, · member nodes."""
    fcols = [factor(i) for i in range(s.k)] if s.k > 1 else []
    rows = _read(reader, s.seg, tables["rows"], ["g"])
    t = _read(reader, s.seg, tables["sides"], ["g", "m", "side", *fcols])
    if rows is None or t is None:
        return 0, 0
    n = len(np.unique(rows["g"].to_numpy()))
    parts = 3 if s.minuend == "delta" else 2
    side = t["side"].to_numpy()
    left = int((side == 0).sum()) if s.minuend == "delta" else len(np.unique(t["g"].to_numpy()[side == 0]))
    nodes, edges = parts * n, (parts - 1) * n + int((side == 1).sum()) + left
    if fcols:
        dn, de = _member_products(t, fcols)
        nodes, edges = nodes + dn, edges + de
    return nodes, edges


def _member_products(t: Any, fcols: list[str]) -> tuple[int, int]:
    """The · nodes of members with several non-zero factors (one per distinct member) and their edges."""
    f = np.stack([t[c].fill_null(0).to_numpy() for c in fcols], axis=1)
    nz = (f != 0).sum(axis=1)
    multi = nz > 1
    if not multi.any():
        return 0, 0
    _, first = np.unique(t["m"].to_numpy()[multi], return_index=True)
    return len(first), int(nz[multi][first].sum())


def graph_stats(path: str) -> GraphStats:
    """Count the nodes and edges a graph written by :meth:`Tracker.write` expands to.

    Segments of a workflow store (invocations, module boundaries) are read from the store's
    relation files; count those with :meth:`GraphIndex.load <lipspark.graph.index.GraphIndex.load>`.
    """
    manifest = read_manifest(path)
    reader = TableReader(path)  # each shared table read once
    nodes = edges = 0
    for entry in manifest["segments"]:
        s: Segment = Segment.from_json(entry)
        tables = entry.get("tables", {})
        if isinstance(s, BaseSegment):
            n, e = _base(s, path, reader, tables)
        elif isinstance(s, GroupSegment):
            n, e = _group(s, reader, tables)
        elif isinstance(s, RowNodeSegment):
            n, e = _rownode(s, reader, tables)
        elif isinstance(s, MonusSegment):
            n, e = _monus(s, reader, tables)
        else:
            raise StoreError(
                f"graph_stats counts graphs written by Tracker.write; segment kind {s.kind!r} "
                "belongs to a workflow store: use lipspark.graph.index.GraphIndex.load to count it"
            )
        nodes += n
        edges += e
    return GraphStats(nodes, edges, directory_bytes(path, skip=("index",)))  # the query-ready index is derived
