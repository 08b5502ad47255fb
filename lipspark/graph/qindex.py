"""The query-ready index of a store's graph: written once per graph directory, memory-mapped on open.

The canonical graph (manifests and Parquet tables, :mod:`lipspark.store`) stays what Spark
and :func:`~lipspark.graph.expand.expand_segments` read. Queries read a derived index beside
it, ``index/`` (see ``docs/store-format.md``): flat binary arrays, appended one *block* per graph
directory (the initial state, then each execution) and mapped with :func:`numpy.memmap`, so
opening a store reads ``index.json`` and maps files — it reads no graph — and a query touches
the pages that hold its answer:

==================  =========  ==============================================================
file                dtype      per
==================  =========  ==============================================================
``ids``             int64      node (sorted within its block)
``kind``/``op``/    int8       node: v-node?, :class:`~lipspark.vocabulary.Op`, node type
``type``
``seg``             int32      node: its segment (relation, module, execution… are per segment)
``in_ptr``          int64      node + 1: edge slots into the node (children), grouped by target
``in_src``          int32      edge: source position (the slot is the edge's id)
``out_ptr``         int64      node + 1: edges from the node to nodes of its own block
``out_dst``         int32      edge of the same block: target position
``xsrc``/``xdst``   int32      edge from an earlier block (sorted by source, per block)
``<a>.off``         int64      node + 1: byte offsets of ``label``, ``value`` (JSON), ``tuple``
``<a>.dat``         uint8      the strings (:class:`~lipspark.graph.attrs.Blob`)
==================  =========  ==============================================================

``index.json`` names, per block, its graph directory with the size and modification time of its
manifest and of every file the graph reads, and the committed length of every array. The index
is derived and never trusted: on open each block is checked against its graph (sizes, times,
version) and against the store's list of graphs; blocks missing at the end are appended, anything
else stale is rebuilt (:func:`reindex`, ``lipspark reindex``). Appends truncate to the committed
lengths first, write, then replace ``index.json`` atomically, under a lock, so readers that
mapped the old lengths keep working and a crash leaves the last complete index.

>>> import os, tempfile, pandas as pd
>>> nodes = pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "+"], "label": ["R:a", "R:b", "+"], "seg": 1})
>>> d = tempfile.mkdtemp()
>>> _ = append_block(os.path.join(d, "index"), "graph", nodes, pd.DataFrame({"src": [1, 2], "dst": [3, 3]}), {})
>>> m = open_index(os.path.join(d, "index"))
>>> m.ids.tolist(), m.in_ptr.tolist(), m.in_src.tolist(), m.attrs.get("label", np.array([2])).tolist()
([1, 2, 3], [0, 0, 0, 2], [0, 1], ['+'])
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from lipspark.errors import StoreError
from lipspark.graph.attrs import SEGMENT_ATTRIBUTES, Blob, Mapped, SegmentTable, _clean, lookup_in_blocks, op_codes, type_codes

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["INDEX_DIR", "INDEX_FORMAT", "INDEX_VERSION", "MappedGraph", "open_mapped", "open_index", "append_block", "reindex", "update",
           "update_blocks"]

INDEX_DIR = "index"
INDEX_FORMAT = "lipspark-index"
#: 2: token labels tell null, quoted values and repeated values apart (lipspark.vocabulary.tokens);
#: 3: a boundary value's v-node carries the tuple it is a value of;
#: 4: a keyless aggregate's row is annotated 1 (no edges from its members: they reach it through its
#: aggregates), so an index expanded before reads such graphs otherwise; an older index is rebuilt when opened
INDEX_VERSION = 4
#: array files: name -> (dtype, what one entry is per: "node", "node+1", "edge", "out", "cross")
_ARRAYS: dict[str, tuple[str, str]] = {
    "ids": ("<i8", "node"), "kind": ("<i1", "node"), "op": ("<i1", "node"), "type": ("<i1", "node"), "seg": ("<i4", "node"),
    "in_ptr": ("<i8", "node+1"), "in_src": ("<i4", "edge"), "out_ptr": ("<i8", "node+1"), "out_dst": ("<i4", "out"),
    "xsrc": ("<i4", "cross"), "xdst": ("<i4", "cross"),
    "label.off": ("<i8", "node+1"), "value.off": ("<i8", "node+1"), "tuple.off": ("<i8", "node+1"),
    "label.dat": ("<u1", "label"), "value.dat": ("<u1", "value"), "tuple.dat": ("<u1", "tuple"),
    "seg.seg": ("<i4", "segment"), "seg.execution": ("<i8", "segment"), "seg.invocation": ("<i8", "segment"),
    "seg.relation": ("<i4", "segment"), "seg.module": ("<i4", "segment"), "seg.node": ("<i4", "segment"), "seg.column": ("<i4", "segment"),
}
_BLOBS = ("label", "value", "tuple")
_MAX_POS = 2**31 - 1


# ---------------------------------------------------------------------------------- files
def _lengths(meta: Mapping[str, Any]) -> dict[str, int]:
    """Committed entries of every array file after the last block (none without blocks)."""
    if not meta["blocks"]:
        return {name: 0 for name in _ARRAYS}
    last: dict[str, Any] = meta["blocks"][-1] if meta["blocks"] else {"nodes": 0, "edges": 0, "out": 0, "cross": 0, "segments": 0,
                                                                       "bytes": {b: 0 for b in _BLOBS}}
    per = {"node": last["nodes"], "node+1": last["nodes"] + 1, "edge": last["edges"], "out": last["out"], "cross": last["cross"],
           "segment": last["segments"], **{b: last["bytes"][b] for b in _BLOBS}}
    return {name: int(per[unit]) for name, (_, unit) in _ARRAYS.items()}


def read_record(path: str, name: str, fmt: str, version: int) -> dict[str, Any] | None:
    """The JSON record ``name`` of a derived directory (the index, the partitioned tables), or
    None when it is missing, unreadable or of another format or version (then made again)."""
    try:
        with open(os.path.join(path, name)) as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != fmt or meta.get("version") != version:
        return None
    return meta


def write_record(path: str, name: str, meta: Mapping[str, Any]) -> None:
    """Replace the JSON record ``name`` atomically (a temporary file, fsync, rename)."""
    tmp = os.path.join(path, f"{name}.tmp-{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(meta, fh, separators=(",", ":"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, os.path.join(path, name))


def _read_meta(path: str) -> dict[str, Any] | None:
    return read_record(path, "index.json", INDEX_FORMAT, INDEX_VERSION)


def _write_meta(path: str, meta: Mapping[str, Any]) -> None:
    write_record(path, "index.json", meta)


def _map(path: str, name: str, length: int) -> np.ndarray:
    dtype = np.dtype(_ARRAYS[name][0])
    if length == 0:
        return np.zeros(0, dtype=dtype)
    # a plain ndarray over the mapping (np.memmap's subclass machinery costs ~0.5 ms per
    # indexing, which traversals do thousands of times); the view keeps the mapping alive
    return np.memmap(os.path.join(path, name), dtype=dtype, mode="r", shape=(length,)).view(np.ndarray)


@contextmanager
def locked(path: str) -> Iterator[None]:
    """A derived directory's writer lock (appends and rebuilds are serialized; readers never wait)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, ".lock"), "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------- opening
@dataclass(frozen=True)
class MappedGraph:
    """The arrays of a mapped index, as :class:`~lipspark.graph.index.GraphIndex` takes them."""

    ids: np.ndarray
    is_v: np.ndarray
    op: np.ndarray
    type_code: np.ndarray
    in_ptr: np.ndarray
    in_src: np.ndarray
    attrs: Mapped
    out: tuple[np.ndarray, np.ndarray]
    cross: list[tuple[np.ndarray, np.ndarray]]
    blocks: np.ndarray


def open_index(path: str, meta: Mapping[str, Any] | None = None) -> MappedGraph:
    """Map the index at ``path`` (as recorded in its ``index.json``; no freshness check:
    :func:`open_mapped` checks it against the graph it derives from)."""
    meta = _read_meta(path) if meta is None else meta
    if meta is None:
        raise StoreError(f"no query-ready index at {path}; run `lipspark reindex` on the store")
    lengths = _lengths(meta)
    for name, length in lengths.items():
        fpath = os.path.join(path, name)
        if length and (not os.path.exists(fpath) or os.path.getsize(fpath) < length * np.dtype(_ARRAYS[name][0]).itemsize):
            raise StoreError(f"the query-ready index at {path} is damaged ({name} is short); run `lipspark reindex` on the store")
    a = {name: _map(path, name, length) for name, length in lengths.items()}
    n = lengths["ids"]
    if n == 0:  # an empty graph: the ptr arrays still need their leading 0
        a["in_ptr"] = a["out_ptr"] = np.zeros(1, dtype=np.int64)
    blocks = np.array([0] + [b["nodes"] for b in meta["blocks"]], dtype=np.int64)
    cross = []
    start = 0
    for b in meta["blocks"]:
        if b["cross"] > start:
            cross.append((a["xsrc"][start:b["cross"]], a["xdst"][start:b["cross"]]))
        start = b["cross"]
    blobs = {name: Blob(a[f"{name}.off"] if n else np.zeros(1, np.int64), a[f"{name}.dat"]) for name in _BLOBS}
    table = SegmentTable(a["seg.seg"], {c: a[f"seg.{c}"] for c in SegmentTable.STRINGS},
                         {c: a[f"seg.{c}"] for c in SegmentTable.INTS}, meta.get("strings", []))
    ends = np.array([b["segments"] for b in meta["blocks"]], dtype=np.int64)
    row_block = np.searchsorted(ends, np.arange(len(table), dtype=np.int64), side="right")
    attrs = Mapped(a["seg"], blobs, table, row_block)
    return MappedGraph(a["ids"], a["kind"].view(bool), a["op"], a["type"], a["in_ptr"], a["in_src"], attrs,
                       (a["out_ptr"], a["out_dst"]), cross, blocks)


# ---------------------------------------------------------------------------------- writing
def _segment_rows(nodes: "pd.DataFrame") -> list[dict[str, Any]]:
    """One row per segment of the attributes all its nodes share."""
    cols = [c for c in SEGMENT_ATTRIBUTES if c in nodes.columns]
    if "seg" not in nodes.columns or not len(nodes):
        return []
    sub = nodes[["seg", *cols]].astype(object).where(nodes[["seg", *cols]].notna(), None)
    rows = []
    distinct = sub.drop_duplicates()
    if distinct["seg"].duplicated().any():
        bad = distinct.loc[distinct["seg"].duplicated(keep=False)].head(4).to_dict("records")
        raise StoreError(f"internal: nodes of one segment disagree on a segment attribute: {bad}")
    for rec in distinct.to_dict("records"):
        row = {k: _clean(v) for k, v in rec.items() if _clean(v) is not None}
        row["seg"] = int(rec["seg"])
        rows.append(row)
    return rows


def _blob_parts(values: Sequence[Any], as_json: bool) -> tuple[np.ndarray, bytes]:
    parts = []
    for v in values:
        v = _clean(v)
        if v is None:
            parts.append(b"")
        else:
            text = json.dumps(v, default=str, ensure_ascii=False) if as_json else str(v)
            parts.append(Blob.MARK + text.encode("utf-8"))
    lens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    return np.cumsum(lens), b"".join(parts)


def append_block(path: str, graph: str, nodes: "pd.DataFrame", edges: "pd.DataFrame", check: Mapping[str, Any]) -> dict[str, Any]:
    """Append the graph directory ``graph``'s expanded ``nodes`` and ``edges`` as a new block
    of the index at ``path`` (created if needed); ``check`` is what :func:`open_mapped` compares
    to decide the block is still current. Edge sources may lie in earlier blocks; targets must be
    this block's nodes. Returns the new ``index.json``."""
    with locked(path):
        return _append_locked(path, graph, nodes, edges, check)


def _append_locked(path: str, graph: str, nodes: "pd.DataFrame", edges: "pd.DataFrame", check: Mapping[str, Any]) -> dict[str, Any]:
    meta = _read_meta(path) or {"format": INDEX_FORMAT, "version": INDEX_VERSION, "blocks": []}
    lengths = _lengths(meta)
    prev = open_index(path, meta) if meta["blocks"] else None
    base = lengths["ids"]
    order = np.argsort(nodes["id"].to_numpy(dtype=np.int64), kind="stable")
    nodes = nodes.iloc[order].reset_index(drop=True)
    ids = nodes["id"].to_numpy(dtype=np.int64)
    n = len(ids)
    if base + n > _MAX_POS:
        raise StoreError(f"the graph has more than {_MAX_POS} nodes; the query-ready index numbers positions in 32 bits")
    if n > 1 and (np.diff(ids) == 0).any():
        raise StoreError(f"the graph at {graph} has two nodes with the same id; it is corrupt")
    # edge endpoints as global positions
    src_ids = edges["src"].to_numpy(dtype=np.int64)
    dst_ids = edges["dst"].to_numpy(dtype=np.int64)
    own = np.minimum(np.searchsorted(ids, dst_ids), max(n - 1, 0))
    if len(dst_ids) and (not n or (ids[own] != dst_ids).any()):
        raise StoreError(f"the graph at {graph} has an edge into a node of another graph; it is corrupt")
    dst = own + base
    src = np.full(len(src_ids), -1, dtype=np.int64)
    if n and len(src_ids):
        sp = np.minimum(np.searchsorted(ids, src_ids), n - 1)
        hit = ids[sp] == src_ids
        src[hit] = sp[hit] + base
    if prev is not None and (src < 0).any():
        miss = np.flatnonzero(src < 0)
        src[miss] = lookup_in_blocks(prev.ids, prev.blocks, src_ids[miss])
    if (src < 0).any():
        bad = sorted(set(src_ids[src < 0].tolist()))[:5]
        raise StoreError(f"the graph at {graph} has {int((src < 0).sum())} edge(s) from nodes that do not exist (ids {bad}); it is corrupt")
    # children CSR (edge slots), own-block parents CSR, cross-block parents
    by_dst = np.argsort(dst, kind="stable")
    in_src = src[by_dst]
    in_counts = np.bincount(dst - base, minlength=n)
    local = src >= base
    osrc, odst = src[local], dst[local]
    by_src = np.argsort(osrc, kind="stable")
    out_counts = np.bincount(osrc - base, minlength=n)
    xs, xd = src[~local], dst[~local]
    by_x = np.argsort(xs, kind="stable")
    blocks_bytes = {}
    blob_data = {}
    for name in _BLOBS:
        col = nodes[name].astype(object).tolist() if name in nodes.columns else [None] * n
        ends, data = _blob_parts(col, as_json=name == "value")
        blob_data[name] = (ends, data)
        blocks_bytes[name] = lengths[f"{name}.dat"] + len(data)
    last_edge = lengths["in_src"] + len(in_src)
    arrays: dict[str, np.ndarray | bytes] = {
        "ids": ids,
        "kind": (nodes["kind"].astype(object).to_numpy() == "v").astype(np.int8) if "kind" in nodes.columns else np.zeros(n, np.int8),
        "op": op_codes(nodes["op"]),
        "type": type_codes(nodes["type"] if "type" in nodes.columns else [None] * n),
        "seg": nodes["seg"].fillna(0).to_numpy(dtype=np.int64).astype(np.int32) if "seg" in nodes.columns else np.zeros(n, np.int32),
        "in_ptr": lengths["in_src"] + np.cumsum(in_counts),
        "in_src": in_src.astype(np.int32),
        "out_ptr": lengths["out_dst"] + np.cumsum(out_counts),
        "out_dst": odst[by_src].astype(np.int32),
        "xsrc": xs[by_x].astype(np.int32),
        "xdst": xd[by_x].astype(np.int32),
    }
    for name in _BLOBS:
        ends, data = blob_data[name]
        arrays[f"{name}.off"] = lengths[f"{name}.dat"] + ends
        arrays[f"{name}.dat"] = data
    table = SegmentTable.from_rows(_segment_rows(nodes), meta.get("strings", []))
    arrays["seg.seg"] = table.seg
    for c in SegmentTable.STRINGS:
        arrays[f"seg.{c}"] = table.codes[c]
    for c in SegmentTable.INTS:
        arrays[f"seg.{c}"] = table.ints[c]
    if not meta["blocks"]:  # the leading 0 of each ptr / offset array
        for name, (_, unit) in _ARRAYS.items():
            if unit == "node+1":
                arrays[name] = np.concatenate([np.zeros(1, np.int64), np.asarray(arrays[name], dtype=np.int64)])
    for name, (dtype, _) in _ARRAYS.items():
        fpath = os.path.join(path, name)
        itemsize = np.dtype(dtype).itemsize
        with open(fpath, "ab") as fh:
            fh.truncate(lengths[name] * itemsize if meta["blocks"] else 0)  # drop what a crashed append left
            chunk = arrays[name]
            fh.write(chunk if isinstance(chunk, bytes) else np.ascontiguousarray(chunk, dtype=dtype).tobytes())
            fh.flush()
            os.fsync(fh.fileno())
    block = {"graph": graph, "check": dict(check), "nodes": base + n, "edges": last_edge,
             "out": lengths["out_dst"] + len(odst), "cross": lengths["xsrc"] + len(xs), "bytes": blocks_bytes,
             "segments": lengths["seg.seg"] + len(table)}
    meta = {**meta, "blocks": [*meta["blocks"], block], "strings": table.strings}
    _write_meta(path, meta)
    return meta


# ---------------------------------------------------------------------------------- stores
def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _graph_dirs(path: str) -> tuple[str, list[str], str]:
    """(graph-store root, its graph directories relative to it, index path) for a workflow store
    or a graph directory; raises what reading the graph would (no store, deferred, no provenance)."""
    from lipspark.store.graphs import graph_root

    root, dirs = graph_root(path)
    return root, dirs, os.path.join(root, INDEX_DIR)


def _check(root: str, gdir: str) -> dict[str, Any]:
    """What a block is checked against: the size and time of its graph's manifest and of the
    graph's own tables (two files per execution). The relation files the graph reads tuples and
    values from (~60 per execution of the car dealership) are not looked at on every open: the
    index holds what was read from them, checked when it was read, and damage to them is what
    ``lipspark check`` finds."""
    from lipspark.store.manifest import read_manifest

    out: dict[str, Any] = {"manifest": _stat(os.path.join(root, gdir, "manifest.json")), "files": {}}
    for f in read_manifest(os.path.join(root, gdir)).get("files", []):
        rel = os.path.normpath(os.path.join(gdir, f["path"]))
        out["files"][rel] = _stat(os.path.join(root, rel))
    return out


def _current(root: str, block: Mapping[str, Any]) -> bool:
    check = block.get("check", {})
    if check.get("manifest") != _stat(os.path.join(root, block["graph"], "manifest.json")):
        return False
    return all(_stat(os.path.join(root, p)) == want for p, want in check.get("files", {}).items())


def _expand_dir(root: str, gdir: str) -> tuple[Any, Any, dict[str, Any]]:
    from lipspark.graph.expand import expand_segments
    from lipspark.store.manifest import read_manifest, read_segments

    full = os.path.join(root, gdir)
    segments = read_segments(full, read_manifest(full))
    nodes, edges = expand_segments(segments, root)
    return nodes, edges, _check(root, gdir)


def update(path: str) -> tuple[str, dict[str, Any]]:
    """Bring the index of the graph at ``path`` up to date (append blocks for new graph
    directories, rebuild if anything else changed) and return (index path, ``index.json``)."""
    root, dirs, ipath = _graph_dirs(path)
    meta = _read_meta(ipath)
    if meta is not None and _fresh(root, dirs, meta) == len(dirs):
        return ipath, _snapshot(meta, dirs)
    with locked(ipath):
        meta = _read_meta(ipath)
        done = _fresh(root, dirs, meta) if meta is not None else -1
        if done < 0:  # stale or damaged: rebuild from scratch
            _clear(ipath)
            meta, done = None, 0
        for gdir in dirs[done:]:
            nodes, edges, check = _expand_dir(root, gdir)
            meta = _append_locked(ipath, gdir, nodes, edges, check)
    assert meta is not None or not dirs
    return ipath, _snapshot(meta, dirs) if meta else {"format": INDEX_FORMAT, "version": INDEX_VERSION, "blocks": []}


def _snapshot(meta: dict[str, Any], dirs: list[str]) -> dict[str, Any]:
    """The index as of the store's graph directories ``dirs``: a writer may have committed and
    indexed later executions since the caller read the store, and those blocks are left out."""
    return meta if len(meta["blocks"]) <= len(dirs) else {**meta, "blocks": meta["blocks"][:len(dirs)]}


def _fresh(root: str, dirs: list[str], meta: Mapping[str, Any]) -> int:
    """How many of ``dirs`` the index holds, current; -1 if it holds anything stale or foreign.
    Blocks after ``dirs`` (an index ahead of the caller's snapshot of the store) are not looked at."""
    blocks = meta["blocks"][:len(dirs)]
    if [b["graph"] for b in blocks] != dirs[:len(blocks)]:
        return -1
    if not all(_current(root, b) for b in blocks):
        return -1
    lengths = _lengths(meta)
    ipath = os.path.join(root, INDEX_DIR)
    for name, length in lengths.items():
        fpath = os.path.join(ipath, name)
        have = os.path.getsize(fpath) if os.path.exists(fpath) else 0
        if have < length * np.dtype(_ARRAYS[name][0]).itemsize:
            return -1
    return len(blocks)


def holds_blocks(ipath: str, wanted: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """Whether the index at ``ipath`` holds the blocks ``wanted`` (:func:`update_blocks` would
    build none)."""
    return _held(ipath, _read_meta(ipath), _as_stored(wanted)) == len(wanted)


def _as_stored(wanted: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, Any]]:
    """The blocks ``wanted`` with their checks as ``index.json`` holds them (through JSON)."""
    return [(name, json.loads(json.dumps(check))) for name, check in wanted]


def _held(ipath: str, meta: Mapping[str, Any] | None, want: Sequence[tuple[str, Any]]) -> int:
    """How many of the blocks ``want`` the index (``meta``) holds, complete, in order; -1 if one differs."""
    if meta is None:
        return -1
    blocks = meta["blocks"][:len(want)]
    if [(b["graph"], b["check"]) for b in blocks] != list(want[:len(blocks)]):
        return -1
    for name, length in _lengths({**meta, "blocks": blocks}).items():
        fpath = os.path.join(ipath, name)
        if (os.path.getsize(fpath) if os.path.exists(fpath) else 0) < length * np.dtype(_ARRAYS[name][0]).itemsize:
            return -1
    return len(blocks)


def update_blocks(ipath: str, wanted: Sequence[tuple[str, Mapping[str, Any]]],
                  build: "Callable[[str], tuple[pd.DataFrame, pd.DataFrame]]") -> dict[str, Any]:
    """Bring the index at ``ipath`` to the blocks ``wanted`` — (name, check) pairs, in order, for
    a graph that is not a store's graph directories (a deferred store's coarse graph,
    :mod:`lipspark.workflow.ondemand`): the blocks it holds with the same names and checks are
    kept, the rest appended (``build(name)`` gives a block's nodes and edges), all of them if an
    earlier one differs. Returns the ``index.json`` of exactly those blocks."""
    want = _as_stored(wanted)
    meta = _read_meta(ipath)
    if _held(ipath, meta, want) != len(want):
        with locked(ipath):
            meta = _read_meta(ipath)
            done = _held(ipath, meta, want)
            if done < 0:
                _clear(ipath)
                meta, done = None, 0
            for name, check in want[done:]:
                nodes, edges = build(name)
                meta = _append_locked(ipath, name, nodes, edges, check)
    assert meta is not None or not want
    # blocks past the wanted ones (another process's later executions) are left out, as _snapshot does
    return {**meta, "blocks": meta["blocks"][:len(want)]} if meta is not None else {"format": INDEX_FORMAT, "version": INDEX_VERSION, "blocks": []}


def open_mapped(path: str) -> MappedGraph:
    """The mapped index of the store (or graph directory) at ``path``, appended or rebuilt
    first if it is missing or stale (an ``OSError`` if this process cannot write it)."""
    ipath, meta = update(path)
    return open_index(ipath, meta)


def reindex(path: str) -> dict[str, Any]:
    """Rebuild the query-ready index of the store at ``path`` from its graph (``lipspark reindex``)."""
    ipath = _graph_dirs(path)[2]
    with locked(ipath):
        _clear(ipath)
    _, meta = update(path)
    return meta


def _clear(ipath: str) -> None:
    """Unlink the index's files (never truncate them in place: a reader may have them mapped)."""
    for name in [*_ARRAYS, "index.json"]:
        try:
            os.remove(os.path.join(ipath, name))
        except FileNotFoundError:
            pass
