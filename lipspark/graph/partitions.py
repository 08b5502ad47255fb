"""Connected sets: the graph's tables partitioned so that a query reads only what it can reach.

A store's graph is kept twice for queries: the query-ready index (:mod:`lipspark.graph.qindex`,
one process, memory-mapped) and, beside it, ``partitions/`` — flat Parquet tables a Spark query
engine reads (:mod:`lipspark.engines`), partitioned by **connected set**, after
CSProv's "connected sets" (the IBM workflow-provenance paper): two nodes are in one set when an
edge path joins them, ignoring the direction of edges and the invocation nodes. Every answer of
the query language — a trace either way, a polynomial, a deletion and what it changes — stays
inside the sets of the nodes it starts from, so a query reads the files of those sets only.

Invocation nodes are left out of the connectivity: each is a leaf with an edge to every input,
state and output node of its invocation, and would join the whole execution into one set (and,
through the state, every execution). They are *hubs*: a hub keeps a set of its own, and
``hubs/`` lists the sets each hub has edges into, which is what a query needs when it starts
from an invocation (``descendants invocation M``) or zooms a module out (a zoomed invocation
joins the sets of its inputs and outputs).

Sets are found once per block of the index (the initial state, then each execution), when the
block is partitioned, and never renumbered: an execution whose nodes join sets of earlier ones
(through a state it reads) records *merges*, ``[set, into]``, and a reader resolves each set to
its representative (union–find). Files, one per block and kind, under ``partitions/``:

=====================  ===============================================================
``nodes/b<N>.parquet``  ``id``, ``set``, ``is_v``, ``op``, ``type``, ``seg``, ``label``,
                        ``value`` (JSON), ``tuple`` (JSON); sorted by set, then id
``edges/b<N>.parquet``  ``src``, ``dst``, ``set`` (the target's); one row per edge, sorted by set
``segments/b<N>...``    ``seg``, ``execution``, ``invocation``, ``relation``, ``module``,
                        ``node``, ``column``: what the nodes of a segment share
``hubs/b<N>.parquet``   ``hub`` (invocation node id), ``set``: the sets it has edges into
``invocations/b<N>...`` the invocation nodes' rows of ``nodes/`` (a reader keeps them all: a
                        few per execution)
``set.i8``              int64 per node in index order: its set (finding the sets of the
                        sources of the next block's edges)
``merges.i8``           int64 pairs ``set, into``: each block's merges (its record says which)
``roots.i8``            the merged sets (sorted), then each one's representative: the merges
                        resolved (rewritten with each block)
``partitions.json``     ``{"format": "lipspark-partitions", "version": 1, "blocks": [...]}``:
                        per block its index block (graph, check), sizes and merges
=====================  ===============================================================

A set id is ``(block + 1) << 32 | k``, so the block whose files hold a set is its id's high
half. Rows are written in row groups of :data:`ROW_GROUP` rows, so Spark's Parquet filter on
``set`` skips the groups a query does not need. Like ``index/``, the directory is derived: each
block is checked against the index block it was made from (same graph directory, same check),
stale blocks are made again, and ``lipspark partition DIR`` (re)makes them.

>>> import os, tempfile, pandas as pd
>>> from lipspark.graph import qindex
>>> d = tempfile.mkdtemp()
>>> nodes = pd.DataFrame({"id": [1, 2, 3, 4, 5, 9], "op": ["token", "token", "+", "token", "·", "invocation"], "seg": 1})
>>> _ = qindex.append_block(os.path.join(d, "index"), "g", nodes, pd.DataFrame({"src": [1, 2, 9, 4, 9], "dst": [3, 3, 3, 5, 5]}), {})
>>> _ = update_from(os.path.join(d, "index"))
>>> p = Partitions.open(d)
>>> p.nodes, p.edges, p.blocks[0]["sets"]  # {1, 2, 3}, {4, 5} and the invocation node 9 alone
(6, 5, 3)
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from lipspark.errors import StoreError
from lipspark.vocabulary import Op

__all__ = ["PARTITIONS_DIR", "FORMAT", "VERSION", "ROW_GROUP", "Partitions", "update", "update_from", "rebuild", "set_block"]

PARTITIONS_DIR = "partitions"
FORMAT, VERSION = "lipspark-partitions", 1
#: rows per Parquet row group: the unit Spark's filter on ``set`` skips
ROW_GROUP = 1 << 16
KINDS = ("nodes", "edges", "segments", "hubs", "invocations")
_SET_FILE = "set.i8"
_MERGES_FILE = "merges.i8"
_ROOTS_FILE = "roots.i8"


def set_block(sets: Any) -> np.ndarray:
    """The block whose files hold each set id.

    >>> set_block(np.array([(1 << 32) | 5, (3 << 32)])).tolist()
    [0, 2]
    """
    return (np.asarray(sets, dtype=np.int64) >> 32) - 1


def _file(kind: str, b: int) -> str:
    return f"{kind}/b{b:06d}.parquet"


def _read_meta(ppath: str) -> dict[str, Any] | None:
    from lipspark.graph.qindex import read_record

    return read_record(ppath, "partitions.json", FORMAT, VERSION)


def _write_meta(ppath: str, meta: Mapping[str, Any]) -> None:
    from lipspark.graph.qindex import write_record

    write_record(ppath, "partitions.json", meta)


def _held(ppath: str, meta: Mapping[str, Any] | None, index_blocks: Sequence[Mapping[str, Any]]) -> int:
    """How many of the index's blocks ``meta`` holds, current; -1 if anything differs."""
    if meta is None:
        return -1
    blocks = meta["blocks"][:len(index_blocks)]
    if [(b["graph"], b["check"]) for b in blocks] != [(b["graph"], b["check"]) for b in index_blocks[:len(blocks)]]:
        return -1
    for i in range(len(blocks)):
        if not all(os.path.exists(os.path.join(ppath, _file(k, i))) for k in KINDS):
            return -1
    nodes = blocks[-1]["node_end"] if blocks else 0
    sfile = os.path.join(ppath, _SET_FILE)
    if (os.path.getsize(sfile) if os.path.exists(sfile) else 0) < 8 * nodes:
        return -1
    return len(blocks)


def update(path: str) -> dict[str, Any]:
    """Bring ``partitions/`` of the store (or graph directory) at ``path`` up to date with its
    query-ready index (which is brought up to date first): blocks the index has and the
    partitions lack are partitioned; anything stale makes them all again. Returns
    ``partitions.json`` as of the index's blocks."""
    from lipspark.graph import qindex

    ipath, imeta = qindex.update(path)
    return update_from(ipath, imeta)


def update_from(ipath: str, imeta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Partition the query-ready index at ``ipath`` (as its ``index.json`` records it, or as
    ``imeta``) into ``partitions/`` beside it; see :func:`update`."""
    from lipspark.graph import qindex

    if imeta is None:
        imeta = qindex._read_meta(ipath)
        if imeta is None:
            raise StoreError(f"no query-ready index at {ipath}")
    ppath = os.path.join(os.path.dirname(ipath), PARTITIONS_DIR)
    want = imeta["blocks"]
    meta = _read_meta(ppath)
    if _held(ppath, meta, want) != len(want):
        with qindex.locked(ppath):
            meta = _read_meta(ppath)
            done = _held(ppath, meta, want)
            if done < 0:
                _clear(ppath)
                meta, done = {"format": FORMAT, "version": VERSION, "blocks": []}, 0
            assert meta is not None
            if done < len(want):
                mapped = qindex.open_index(ipath, imeta)
                for b in range(done, len(want)):
                    meta = _append_block(ppath, meta, mapped, b, want[b])
    assert meta is not None
    return {**meta, "blocks": meta["blocks"][:len(want)]}


def rebuild(path: str) -> dict[str, Any]:
    """Make ``partitions/`` of the store at ``path`` again from its index (``lipspark partition --rebuild``)."""
    from lipspark.graph import qindex

    ipath, _ = qindex.update(path)
    ppath = os.path.join(os.path.dirname(ipath), PARTITIONS_DIR)
    with qindex.locked(ppath):
        _clear(ppath)
    return update(path)


def _clear(ppath: str) -> None:
    import shutil

    for k in KINDS:
        shutil.rmtree(os.path.join(ppath, k), ignore_errors=True)
    for name in (_SET_FILE, _MERGES_FILE, _ROOTS_FILE, "zoom.json", "partitions.json"):
        try:
            os.remove(os.path.join(ppath, name))
        except FileNotFoundError:
            pass


def _roots(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merges ``[set, into]`` resolved: every merged set (sorted) and its representative."""
    order = np.argsort(pairs[:, 0], kind="stable")
    keys, parent = pairs[order, 0], pairs[order, 1]
    while len(keys):  # pointer jumping: each round halves the chains' lengths
        at = np.minimum(np.searchsorted(keys, parent), len(keys) - 1)
        hit = keys[at] == parent
        if not hit.any():
            break
        parent = np.where(hit, parent[at], parent)
    return keys, parent


def _representative(roots: tuple[np.ndarray, np.ndarray], sets: Any) -> np.ndarray:
    sets = np.asarray(sets, dtype=np.int64)
    keys, rep = roots
    if not len(keys):
        return sets
    at = np.minimum(np.searchsorted(keys, sets), len(keys) - 1)
    return np.where(keys[at] == sets, rep[at], sets)


def _write_table(table: Any, path: str) -> None:
    import pyarrow.parquet as pq

    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + f".tmp-{os.getpid()}"
    pq.write_table(table, tmp, row_group_size=ROW_GROUP, compression="zstd")
    os.replace(tmp, path)


def _append_block(ppath: str, meta: dict[str, Any], mapped: Any, b: int, iblock: Mapping[str, Any]) -> dict[str, Any]:
    """Partition block ``b`` of the mapped index into connected sets and write its files."""
    import pyarrow as pa
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    lo, hi = int(mapped.blocks[b]), int(mapped.blocks[b + 1])
    n = hi - lo
    in_ptr = mapped.in_ptr
    s0, s1 = int(in_ptr[lo]), int(in_ptr[hi])
    src = np.asarray(mapped.in_src[s0:s1], dtype=np.int64)
    ptr: np.ndarray = np.asarray(in_ptr[lo:hi + 1], dtype=np.int64)
    dst = np.repeat(np.arange(lo, hi, dtype=np.int64), ptr[1:] - ptr[:-1])
    op = np.asarray(mapped.op[lo:hi])
    hub_local = op == int(Op.INVOCATION)
    # the sets of earlier blocks' nodes, as their representatives now
    earlier = np.fromfile(os.path.join(ppath, _SET_FILE), dtype=np.int64, count=lo) if lo else np.zeros(0, np.int64)
    done_pairs = int(meta["blocks"][-1]["merges"][1]) if meta["blocks"] else 0
    prior = np.fromfile(os.path.join(ppath, _MERGES_FILE), dtype="<i8", count=2 * done_pairs).reshape(-1, 2) if done_pairs else \
        np.zeros((0, 2), dtype=np.int64)
    roots = _roots(prior)
    src_hub = np.zeros(len(src), dtype=bool)
    inside = src >= lo
    src_hub[inside] = hub_local[src[inside] - lo]
    if (~inside).any():
        src_hub[~inside] = np.asarray(mapped.op[src[~inside]]) == int(Op.INVOCATION)
    keep = ~src_hub & ~hub_local[dst - lo]
    ls, ld = src[keep], dst[keep] - lo
    old = ls < lo
    reps = _representative(roots, earlier[ls[old]])
    uniq, inv = np.unique(reps, return_inverse=True)
    vs = ls.copy()
    vs[~old] -= lo
    vs[old] = n + inv
    m = coo_matrix((np.ones(len(vs), dtype=np.int8), (vs, ld)), shape=(n + len(uniq), n + len(uniq)))
    k, label = connected_components(m, directed=False)
    base = (b + 1) << 32
    node_set = base + label[:n].astype(np.int64)
    merges: list[tuple[int, int]] = []
    if len(uniq):
        comp_of_old = label[n:]
        for c in np.unique(comp_of_old).tolist():
            olds = uniq[comp_of_old == c].tolist()
            into = min(olds)
            merges += [(o, into) for o in olds if o != into]
            if (label[:n] == c).any():
                merges.append((base + c, into))
    # files: nodes sorted by (set, id); edges by set
    ids = np.asarray(mapped.ids[lo:hi], dtype=np.int64)
    order = np.lexsort((ids, node_set))
    blobs = mapped.attrs.blobs
    pos = np.arange(lo, hi, dtype=np.int64)[order]
    nodes = pa.table({
        "id": ids[order], "set": node_set[order], "is_v": np.asarray(mapped.is_v[lo:hi], dtype=bool)[order],
        "op": np.asarray(op, dtype=np.int8)[order], "type": np.asarray(mapped.type_code[lo:hi], dtype=np.int8)[order],
        "seg": np.asarray(mapped.attrs.seg[lo:hi], dtype=np.int32)[order],
        **{name: pa.array(blobs[name].strings(pos), type=pa.string()) for name in ("label", "value", "tuple")},
    })
    all_ids = np.asarray(mapped.ids, dtype=np.int64)
    e_set = node_set[dst - lo]
    eorder = np.argsort(e_set, kind="stable")
    edges = pa.table({"src": all_ids[src][eorder], "dst": ids[dst - lo][eorder], "set": e_set[eorder]})
    hub_src = src[src_hub]
    hub_pairs = np.unique(np.stack([np.asarray(all_ids[hub_src], dtype=np.int64), e_set[src_hub]], axis=1), axis=0) if len(hub_src) \
        else np.zeros((0, 2), dtype=np.int64)
    hubs = pa.table({"hub": hub_pairs[:, 0], "set": hub_pairs[:, 1]})
    table = mapped.attrs.table
    rows = np.flatnonzero(mapped.attrs.row_block == b) if len(mapped.attrs.row_block) else np.arange(len(table))
    seg_cols: dict[str, Any] = {"seg": np.asarray(table.seg[rows], dtype=np.int32)}
    for c in ("execution", "invocation"):
        v = np.asarray(table.ints[c][rows], dtype=np.int64)
        seg_cols[c] = pa.array(v, mask=v < 0)
    lut = np.array([*table.strings, None], dtype=object)
    for c in ("relation", "module", "node", "column"):
        seg_cols[c] = pa.array(lut[np.asarray(table.codes[c][rows], dtype=np.int64)].tolist(), type=pa.string())
    segments = pa.table(seg_cols)
    import pyarrow.compute as pc

    invocations = nodes.filter(pc.equal(nodes.column("op"), int(Op.INVOCATION)))
    for kind, t in (("nodes", nodes), ("edges", edges), ("segments", segments), ("hubs", hubs), ("invocations", invocations)):
        _write_table(t, os.path.join(ppath, _file(kind, b)))
    _append_array(os.path.join(ppath, _SET_FILE), 8 * lo, node_set)
    _append_array(os.path.join(ppath, _MERGES_FILE), 16 * done_pairs, np.array(merges, dtype=np.int64).reshape(-1, 2))
    names: dict[str, list[Any]] = {c: sorted({str(v) for v in segments.column(c).to_pylist() if v is not None})
                                   for c in ("relation", "module", "node", "column")}
    ex = segments.column("execution").to_pylist()
    names["execution"] = sorted({int(v) for v in ex if v is not None}) + ([None] if any(v is None for v in ex) else [])
    all_pairs = np.concatenate([prior, np.array(merges, dtype=np.int64).reshape(-1, 2)])
    keys, root = _roots(all_pairs)
    _write_roots(ppath, keys, root)
    blocks = [*meta["blocks"], {"graph": iblock["graph"], "check": iblock["check"], "node_end": hi, "nodes": n, "edges": len(src),
                                "sets": int(k), "merges": [done_pairs, done_pairs + len(merges)], "names": names}]
    out = {"format": FORMAT, "version": VERSION, "blocks": blocks}
    _write_meta(ppath, out)
    return out


def _write_roots(ppath: str, keys: np.ndarray, root: np.ndarray) -> None:
    """``roots.i8``: every merged set (sorted) then its representative, resolved once at write
    time so a reader maps them instead of resolving every merge (3 s at 100M edges)."""
    tmp = os.path.join(ppath, f"{_ROOTS_FILE}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(np.ascontiguousarray(keys, dtype="<i8").tobytes())
        fh.write(np.ascontiguousarray(root, dtype="<i8").tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, os.path.join(ppath, _ROOTS_FILE))


def _append_array(path: str, at: int, a: np.ndarray) -> None:
    """Write ``a`` (int64) at byte ``at`` of ``path``, dropping what was after it (a crash's leftovers)."""
    with open(path, "r+b" if at and os.path.exists(path) else "wb") as fh:
        fh.truncate(at)
        fh.seek(at)
        fh.write(np.ascontiguousarray(a, dtype="<i8").tobytes())
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class Partitions:
    """The partitioned tables of a store, as a query engine reads them: the file of each block
    and kind, and the sets' representatives (what is small: the ``partitions.json`` record, the
    segment, hub and merge tables; the node and edge tables are read by Spark)."""

    root: str
    blocks: list[dict[str, Any]]
    _reps: tuple[np.ndarray, np.ndarray] | None = None

    @staticmethod
    def open(path: str, *, make: bool = True) -> "Partitions":
        """The partitions of the store (or graph directory) at ``path``; made or brought up to
        date first unless ``make`` is false (then a missing one is a :class:`StoreError`). A
        directory holding only ``partitions/`` (tables made elsewhere, e.g. by
        ``benchmarks/spark_engine.py``) is opened as it is."""
        from lipspark.graph import qindex

        try:
            root = os.path.dirname(qindex._graph_dirs(path)[2])
        except StoreError:
            meta = _read_meta(os.path.join(path, PARTITIONS_DIR))
            if meta is None:
                raise
            return Partitions(os.path.join(path, PARTITIONS_DIR), list(meta["blocks"]))
        if make:
            meta = update(path)
        else:
            meta = _read_meta(os.path.join(root, PARTITIONS_DIR))
            if meta is None:
                raise StoreError(f"the store at {path} has no partitioned tables; make them with: lipspark partition {path}")
        return Partitions(os.path.join(root, PARTITIONS_DIR), list(meta["blocks"]))

    @property
    def nodes(self) -> int:
        return sum(int(b["nodes"]) for b in self.blocks)

    @property
    def edges(self) -> int:
        return sum(int(b["edges"]) for b in self.blocks)

    def files(self, kind: str, blocks: Sequence[int] | None = None) -> list[str]:
        """The ``kind`` files of ``blocks`` (default: all), as absolute paths."""
        which = range(len(self.blocks)) if blocks is None else sorted(set(int(b) for b in blocks))
        return [os.path.join(self.root, _file(kind, b)) for b in which]

    def representatives(self) -> tuple[np.ndarray, np.ndarray]:
        """Every merged set (sorted) and its representative (a set not listed is its own)."""
        if self._reps is None:
            pairs = int(self.blocks[-1]["merges"][1]) if self.blocks else 0
            rpath = os.path.join(self.root, _ROOTS_FILE)
            if pairs and os.path.exists(rpath) and os.path.getsize(rpath) == 16 * pairs:
                both = np.memmap(rpath, dtype="<i8", mode="r")
                self._reps = (np.asarray(both[:pairs]), np.asarray(both[pairs:]))
                return self._reps
            pairs = int(self.blocks[-1]["merges"][1]) if self.blocks else 0
            mg = np.fromfile(os.path.join(self.root, _MERGES_FILE), dtype="<i8", count=2 * pairs).reshape(-1, 2) if pairs else \
                np.zeros((0, 2), dtype=np.int64)
            if len(mg) < pairs:
                raise StoreError(f"the partitioned tables at {self.root} are damaged ({_MERGES_FILE} is short); "
                                 f"make them again: lipspark partition --rebuild")
            self._reps = _roots(mg)
        return self._reps

    def representative(self, sets: Any) -> np.ndarray:
        """The representative of each of ``sets``."""
        return _representative(self.representatives(), sets)

    def members(self, sets: Any) -> np.ndarray:
        """Every set id whose representative is that of one of ``sets``: the sets to read."""
        want = np.unique(self.representative(sets))
        keys, rep = self.representatives()
        return np.union1d(want, keys[np.isin(rep, want)])
