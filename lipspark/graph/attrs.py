"""Node attributes read on demand: only for the nodes a query shows or filters on.

A :class:`~lipspark.graph.index.GraphIndex` keeps what traversals need as arrays (ids,
operators, types, edges) and asks an :class:`Attributes` source for everything else —
``label``, ``value``, ``tuple``, ``relation``, ``module``, ``node``, ``execution``,
``invocation``, ``column``, ``seg`` — by position:

* :class:`Columns`: in-memory columns (a graph built from frames, the nodes a view adds);
* :class:`Mapped`: a store's query-ready index (:mod:`lipspark.graph.qindex`): per-node
  strings in memory-mapped files, and the attributes every node of a segment shares
  (relation, module, execution…) in a small segment table, so a filter on them is one gather;
* :class:`Derived`: a view's nodes, each taken from one of several sources.

>>> a = Columns(3, {"label": ["R:a", "R:b", "δ"], "relation": ["R", "R", None]})
>>> a.get("label", np.array([2, 0])).tolist(), a.where("relation", {"R"}).tolist()
(['δ', 'R:a'], [True, True, False])
>>> d = Derived([a, Columns(1, {"label": ["z"]})], np.array([0, 1]), np.array([2, 0]))
>>> d.get("label", np.array([0, 1])).tolist(), d.get("relation", np.array([1])).tolist()
(['δ', 'z'], [None])
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from lipspark.errors import LipsparkError, StoreError
from lipspark.vocabulary import Op

__all__ = ["Attributes", "Columns", "Overlay", "Mapped", "Derived", "ATTRIBUTES", "SEGMENT_ATTRIBUTES", "NUMERIC", "Blob",
           "NODE_TYPES", "op_codes", "type_codes", "lookup_in_blocks", "SegmentTable"]

#: Node types of the paper (input, state, output, module invocation) and ``z``, the p-node a
#: ZoomOut puts in place of an invocation's intermediate computation. Code 0 is "no type".
NODE_TYPES = ("", "i", "s", "o", "m", "z")
def op_codes(column: Any) -> np.ndarray:
    """The int8 :class:`~lipspark.vocabulary.Op` codes of an ``op`` column of Op members, codes,
    names or symbols (:meth:`Op.parse`); anything else is a :class:`~lipspark.errors.StoreError`.

    >>> op_codes(["token", Op.TIMES, 5, "⊗"]).tolist()
    [1, 3, 5, 11]
    """
    values = column.tolist() if hasattr(column, "tolist") else list(column)
    arr = np.asarray(column) if hasattr(column, "dtype") else None
    if arr is not None and arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        bad = sorted(set(codes.tolist()) - {int(o) for o in Op})
        if bad:
            raise StoreError(f"unknown operator code(s) {bad[:5]} in the node column 'op'; expected 1..{len(Op)}")
        return codes.astype(np.int8)
    parsed: dict[Any, int] = {}
    out = np.empty(len(values), dtype=np.int8)
    for i, v in enumerate(values):
        if v not in parsed:
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise StoreError("a node has no operator: the node column 'op' must name one for every node")
            try:
                parsed[v] = int(Op.parse(v.item() if hasattr(v, "item") else v))
            except LipsparkError as err:
                raise StoreError(f"node column 'op': {err}") from err
        out[i] = parsed[v]
    return out


def type_codes(column: Any) -> np.ndarray:
    """The :data:`NODE_TYPES` codes of a ``type`` column (None, NaN and ``""``: no type).

    >>> type_codes(["i", None, "m"]).tolist()
    [1, 0, 4]
    """
    values = column.tolist() if hasattr(column, "tolist") else list(column)
    lut = {t: i for i, t in enumerate(NODE_TYPES)}
    out = np.zeros(len(values), dtype=np.int8)
    bad = set()
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType":
            continue
        code = lut.get(str(v))
        if code is None:
            bad.add(str(v))
        else:
            out[i] = code
    if bad:
        raise StoreError(f"unknown node type(s) {sorted(bad)}; expected one of {list(NODE_TYPES[1:])}")
    return out



#: Every attribute a node may have besides ``id``, ``kind``, ``op`` and ``type`` (arrays of the index).
ATTRIBUTES = ("label", "seg", "value", "relation", "tuple", "module", "node", "execution", "invocation", "column")
#: Attributes all nodes of one segment share (kept once per segment in a mapped index).
SEGMENT_ATTRIBUTES = ("relation", "module", "node", "execution", "invocation", "column")
#: Integer-valued attributes.
NUMERIC = ("seg", "execution", "invocation")


def _clean(v: Any) -> Any:
    """A plain Python value: numpy scalars unwrapped; None, NA and NaN of missing cells as None."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    return v


class Attributes(ABC):
    """A source of node attributes by position (``0 … n-1``)."""

    n: int

    @abstractmethod
    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        """Object array of attribute ``name`` at ``pos`` (None where a node has none)."""

    def where(self, name: str, values: Iterable[Any]) -> np.ndarray:
        """Boolean mask over all nodes: attribute ``name`` is one of ``values``."""
        wanted = set(values)
        col = self.get(name, np.arange(self.n, dtype=np.int64))
        return np.fromiter((v in wanted for v in col.tolist()), dtype=bool, count=len(col))

    def segment_blocks(self, segs: np.ndarray) -> np.ndarray | None:
        """The block holding each segment number (-1: no such segment), or None when this
        source has no segment table (a graph in memory: one block)."""
        return None

    def segment_rows(self, conditions: Mapping[str, Sequence[Any]]) -> tuple[np.ndarray, np.ndarray] | None:
        """(segment numbers, their blocks) of the segments whose :data:`SEGMENT_ATTRIBUTES` match
        every condition (attribute -> allowed values), or None when this source has no segment
        table (then callers filter nodes one by one)."""
        return None

    def int_column(self, name: str) -> np.ndarray:
        """An integer attribute (:data:`NUMERIC`) of every node as int64, -1 where missing."""
        vals = self.get(name, np.arange(self.n, dtype=np.int64)).tolist()
        return np.array([-1 if v is None else int(v) for v in vals], dtype=np.int64)

    def distinct(self, name: str, pos: np.ndarray | None = None) -> set[Any]:
        """The distinct non-missing values of ``name`` (at ``pos``, or everywhere)."""
        pos = np.arange(self.n, dtype=np.int64) if pos is None else pos
        return {v for v in self.get(name, pos).tolist() if v is not None}

    def group_of(self, name: str, groups: Sequence[Iterable[Any]]) -> np.ndarray:
        """For every node, ``1 +`` the index of the first of ``groups`` that holds its attribute
        ``name`` (0: none): several :meth:`where` at once (ZoomOut asks which of the zoomed
        modules' invocations created each node).

        >>> Columns(3, {"module": ["a", "b", None]}).group_of("module", [["b"], ["a", "b"]]).tolist()
        [2, 1, 0]
        """
        label = _labels(groups)
        dtype = _group_dtype(len(groups))
        if name in NUMERIC:  # one vectorized lookup of the integer column
            keys = {(-1 if v is None else int(v)): g for v, g in label.items()
                    if v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))}
            return _lookup_labels(self.int_column(name), keys, dtype)
        col = self.get(name, np.arange(self.n, dtype=np.int64)).tolist()
        return np.fromiter((label.get(v, 0) for v in col), dtype=dtype, count=len(col))


def _group_dtype(k: int) -> Any:
    return np.uint8 if k < 255 else np.int32


def _labels(groups: Sequence[Iterable[Any]]) -> dict[Any, int]:
    """Each value of ``groups`` -> 1 + the index of the first group that holds it."""
    label: dict[Any, int] = {}
    for i, values in enumerate(groups):
        for v in values:
            label.setdefault(v, i + 1)
    return label


def _lookup_labels(column: np.ndarray, keys: Mapping[int, int], dtype: Any) -> np.ndarray:
    """``keys[v]`` for every ``v`` of an integer ``column`` (0 where absent)."""
    out = np.zeros(len(column), dtype=dtype)
    if keys:
        k = np.array(sorted(keys), dtype=np.int64)
        g = np.array([keys[x] for x in k.tolist()], dtype=dtype)
        at = np.minimum(np.searchsorted(k, column), len(k) - 1)
        hit = k[at] == column
        out[hit] = g[at[hit]]
    return out


class Columns(Attributes):
    """Attributes held as in-memory columns (lists or arrays of length ``n``); missing columns
    are missing values. Missing cells (None, NaN, pandas NA) read as None."""

    def __init__(self, n: int, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> None:
        self.n = n
        self._ints: dict[str, np.ndarray] = {}
        self.columns: dict[str, np.ndarray] = {}
        for name, col in columns.items():
            arr = np.empty(n, dtype=object)
            arr[:] = [_clean(v) for v in (col.tolist() if hasattr(col, "tolist") else list(col))]
            self.columns[name] = arr

    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        col = self.columns.get(name)
        if col is None:
            return np.full(len(pos), None, dtype=object)
        return col[np.asarray(pos, dtype=np.int64)]

    def int_column(self, name: str) -> np.ndarray:
        if name not in self._ints:  # the columns never change: convert once
            self._ints[name] = super().int_column(name)
            self._ints[name].flags.writeable = False
        return self._ints[name]


class Overlay(Attributes):
    """``base``'s attributes with the columns of ``own`` in their place (a zoom node: its
    invocation's context under its module's name).

    >>> o = Overlay(Columns(1, {"label": ["dealer1"], "module": ["dealer1"]}), Columns(1, {"label": ["Z"]}))
    >>> o.get("label", np.array([0])).tolist(), o.get("module", np.array([0])).tolist()
    (['Z'], ['dealer1'])
    """

    def __init__(self, base: Attributes, own: Columns) -> None:
        if base.n != own.n:
            raise StoreError(f"an overlay needs as many rows as its base ({base.n}), found {own.n}")
        self.n = base.n
        self.base = base
        self.own = own

    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        return (self.own if name in self.own.columns else self.base).get(name, pos)


class Blob:
    """Strings of variable length in two memory-mapped arrays: ``offsets`` (n+1 int64, byte
    positions) and ``data`` (uint8). A present string is stored as ``=`` and its UTF-8 bytes,
    a missing one (None) as nothing, so ``""`` and None stay apart.

    >>> b = Blob.encode(["ab", None, ""])
    >>> b.strings(np.array([0, 1, 2])), b.equal(np.array([0, 1, 2]), "ab").tolist()
    (['ab', None, ''], [True, False, False])
    """

    MARK = b"="

    @staticmethod
    def encode(strings: Sequence[str | None]) -> "Blob":
        """A blob in memory (the index writer writes the same two arrays to files)."""
        parts = [b"" if s is None else Blob.MARK + s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        return Blob(offsets, np.frombuffer(b"".join(parts), dtype=np.uint8))

    def __init__(self, offsets: np.ndarray, data: np.ndarray) -> None:
        self.offsets = offsets
        self.data = data

    def strings(self, pos: np.ndarray) -> list[str | None]:
        pos = np.asarray(pos, dtype=np.int64)
        lo, hi = self.offsets[pos], self.offsets[pos + 1]
        raw = self.data
        out: list[str | None] = []
        for a, b in zip(lo.tolist(), hi.tolist()):
            out.append(None if a == b else bytes(raw[a + 1:b]).decode("utf-8"))
        return out

    def equal(self, pos: np.ndarray, text: str) -> np.ndarray:
        """Mask over ``pos``: the string there is ``text`` (compared as bytes, vectorized)."""
        want = np.frombuffer(Blob.MARK + text.encode("utf-8"), dtype=np.uint8)
        pos = np.asarray(pos, dtype=np.int64)
        lo = self.offsets[pos]
        same_len = (self.offsets[pos + 1] - lo) == len(want)
        out = np.zeros(len(pos), dtype=bool)
        cand = np.flatnonzero(same_len)
        if not len(cand):
            return out
        for start in range(0, len(cand), 1 << 16):  # bounded temporaries
            chunk = cand[start:start + (1 << 16)]
            block = self.data[lo[chunk][:, None] + np.arange(len(want), dtype=np.int64)]
            out[chunk] = (block == want).all(axis=1)
        return out


class SegmentTable:
    """The attributes every node of a segment shares, one row per segment: ``seg`` (int32),
    ``execution`` and ``invocation`` (int64, -1 for none), and ``relation``, ``module``,
    ``node``, ``column`` as int32 codes into ``strings`` (-1 for none).

    >>> t = SegmentTable.from_rows([{"seg": 4, "module": "m", "execution": 2}, {"seg": 9, "relation": "R"}])
    >>> t.seg.tolist(), t.codes["module"].tolist(), t.ints["execution"].tolist(), t.strings
    ([4, 9], [1, -1], [2, -1], ['R', 'm'])
    """

    STRINGS = ("relation", "module", "node", "column")
    INTS = ("execution", "invocation")

    def __init__(self, seg: np.ndarray, codes: Mapping[str, np.ndarray], ints: Mapping[str, np.ndarray], strings: Sequence[str]) -> None:
        self.seg = seg
        self.codes = dict(codes)
        self.ints = dict(ints)
        self.strings = list(strings)

    def __len__(self) -> int:
        return len(self.seg)

    @staticmethod
    def from_rows(rows: Sequence[Mapping[str, Any]], strings: Sequence[str] = ()) -> "SegmentTable":
        """A table of ``rows`` (dicts with ``seg`` and any of :data:`SEGMENT_ATTRIBUTES`),
        coding new strings after ``strings``."""
        known = list(strings)
        code = {s: i for i, s in enumerate(known)}

        def enc(v: Any) -> int:
            if v is None:
                return -1
            v = str(v)
            if v not in code:
                code[v] = len(known)
                known.append(v)
            return code[v]

        seg = np.array([int(r["seg"]) for r in rows], dtype=np.int32)
        codes = {c: np.array([enc(r.get(c)) for r in rows], dtype=np.int32) for c in SegmentTable.STRINGS}
        ints = {c: np.array([-1 if r.get(c) is None else int(r[c]) for r in rows], dtype=np.int64) for c in SegmentTable.INTS}
        return SegmentTable(seg, codes, ints, known)

    def decoded(self, name: str) -> np.ndarray:
        """Attribute ``name`` of every row as plain values, plus a trailing None (row -1)."""
        out = np.empty(len(self.seg) + 1, dtype=object)
        if name in self.ints:
            vals = self.ints[name]
            out[:-1] = [None if v < 0 else v for v in np.asarray(vals).tolist()]
        else:
            lut = np.array([*self.strings, None], dtype=object)
            out[:-1] = lut[np.asarray(self.codes[name], dtype=np.int64)]  # code -1: the trailing None
        return out


class Mapped(Attributes):
    """Attributes of a store's query-ready index: ``label``, ``value`` (JSON), ``tuple`` (JSON)
    per node in :class:`Blob` s, ``seg`` per node, and :data:`SEGMENT_ATTRIBUTES` per segment in
    a :class:`SegmentTable`, reached through the node's ``seg``."""

    def __init__(self, seg: np.ndarray, blobs: Mapping[str, Blob], segments: SegmentTable, row_block: np.ndarray | None = None) -> None:
        self.n = len(seg)
        self.seg = seg
        self.blobs = dict(blobs)
        self.table = segments
        #: the block of each segment row (segments are numbered per execution, one block each)
        self.row_block = np.zeros(len(segments), dtype=np.int64) if row_block is None else row_block
        top = int(np.max(segments.seg)) if len(segments) else 0
        self._row = np.full(top + 2, -1, dtype=np.int64)
        self._row[np.asarray(segments.seg, dtype=np.int64)] = np.arange(len(segments), dtype=np.int64)
        self._decoded: dict[str, np.ndarray] = {}

    def _node_rows(self, pos: np.ndarray | None = None) -> np.ndarray:
        segs = np.asarray(self.seg if pos is None else self.seg[np.asarray(pos, dtype=np.int64)], dtype=np.int64)
        return self._row[np.clip(segs, 0, len(self._row) - 1)]

    def _per_node(self, per_row: np.ndarray) -> np.ndarray:
        """``per_row`` (one entry per segment row, plus the no-segment row) for every node: one
        gather through a per-segment-number table, no array of the graph's size but the result."""
        rows = self._row
        by_seg = per_row[np.where(rows >= 0, rows, len(per_row) - 1)]
        seg = np.asarray(self.seg)
        if len(seg) and (int(seg.min()) < 0 or int(seg.max()) >= len(by_seg)):
            seg = np.clip(seg, 0, len(by_seg) - 1)
        return by_seg[seg]

    def _values(self, name: str) -> np.ndarray:
        if name not in self._decoded:
            self._decoded[name] = self.table.decoded(name)
        return self._decoded[name]

    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        pos = np.asarray(pos, dtype=np.int64)
        if name == "seg":
            out = np.empty(len(pos), dtype=object)
            out[:] = np.asarray(self.seg[pos], dtype=np.int64).tolist()
            return out
        if name in SEGMENT_ATTRIBUTES:
            return self._values(name)[self._node_rows(pos)]
        blob = self.blobs.get(name)
        out = np.empty(len(pos), dtype=object)
        if blob is None:
            return out
        strings = blob.strings(pos)
        if name == "value":
            out[:] = [None if s is None else json.loads(s) for s in strings]
        else:
            out[:] = strings
        return out

    def _row_mask(self, name: str, wanted: set[Any]) -> np.ndarray:
        """Which segment rows (plus the trailing no-segment row) have ``name`` in ``wanted``."""
        t = self.table
        if name in t.codes:
            codes = [i for i, s in enumerate(t.strings) if s in wanted] + ([-1] if None in wanted else [])
            good = np.isin(np.asarray(t.codes[name]), np.array(codes, dtype=np.int64))
        else:
            nums = [v for v in wanted if isinstance(v, int) and not isinstance(v, bool)] + ([-1] if None in wanted else [])
            good = np.isin(np.asarray(t.ints[name]), np.array(nums, dtype=np.int64))
        return np.append(good, None in wanted)

    def segment_blocks(self, segs: np.ndarray) -> np.ndarray | None:
        segs = np.asarray(segs, dtype=np.int64)
        inside = (segs >= 0) & (segs < len(self._row))
        rows = np.full(len(segs), -1, dtype=np.int64)
        rows[inside] = self._row[segs[inside]]
        return np.where(rows >= 0, self.row_block[np.maximum(rows, 0)], -1) if len(self.row_block) else rows

    def segment_rows(self, conditions: Mapping[str, Sequence[Any]]) -> tuple[np.ndarray, np.ndarray] | None:
        keep = np.ones(len(self.table), dtype=bool)
        for name, values in conditions.items():
            if name not in SEGMENT_ATTRIBUTES:
                return None
            keep &= self._row_mask(name, set(values))[:-1]
        rows = np.flatnonzero(keep)
        return np.asarray(self.table.seg, dtype=np.int64)[rows], self.row_block[rows]

    def where(self, name: str, values: Iterable[Any]) -> np.ndarray:
        wanted = set(values)
        if name == "seg":
            nums = np.array([v for v in wanted if isinstance(v, int) and not isinstance(v, bool)], dtype=np.int64)
            return np.isin(np.asarray(self.seg, dtype=np.int64), nums)
        if name in SEGMENT_ATTRIBUTES:
            return self._per_node(self._row_mask(name, wanted))
        blob = self.blobs.get(name)
        if blob is not None and name != "value" and all(isinstance(v, str) for v in wanted):
            everything = np.arange(self.n, dtype=np.int64)
            out = np.zeros(self.n, dtype=bool)
            for v in wanted:
                out |= blob.equal(everything, v)
            return out
        return super().where(name, wanted)

    def group_of(self, name: str, groups: Sequence[Iterable[Any]]) -> np.ndarray:
        if name not in SEGMENT_ATTRIBUTES:
            return super().group_of(name, groups)
        t = self.table
        label = _labels(groups)  # the first group holding a value wins
        keys: dict[int, int] = {}  # the row value (a string's code, an int; -1: missing) -> its group
        if name in t.codes:  # strings: compare their codes
            code = {s: c for c, s in enumerate(t.strings)}
            for v, grp in label.items():
                if v is None or v in code:
                    keys[-1 if v is None else code[v]] = grp
            column = np.asarray(t.codes[name], dtype=np.int64)
        else:
            for v, grp in label.items():
                if v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
                    keys[-1 if v is None else int(v)] = grp
            column = np.asarray(t.ints[name], dtype=np.int64)
        dtype = _group_dtype(len(groups))  # decided per segment, then one gather
        per_row = np.append(_lookup_labels(column, keys, dtype), np.array([keys.get(-1, 0)], dtype=dtype))  # last: no segment
        return self._per_node(per_row)

    def int_column(self, name: str) -> np.ndarray:
        if name == "seg":
            return np.asarray(self.seg, dtype=np.int64)
        if name in self.table.ints:
            return self._per_node(np.append(np.asarray(self.table.ints[name], dtype=np.int64), -1))
        return super().int_column(name)

    def distinct(self, name: str, pos: np.ndarray | None = None) -> set[Any]:
        if name in SEGMENT_ATTRIBUTES and pos is None:
            return {v for v in self._values(name).tolist() if v is not None}
        return super().distinct(name, pos)


class Derived(Attributes):
    """A view's attributes: node ``i`` is node ``where[i]`` of source ``parts[which[i]]``."""

    def __init__(self, parts: Sequence[Attributes], which: np.ndarray, where: np.ndarray) -> None:
        self.parts = list(parts)
        self.which = np.asarray(which, dtype=np.int16)
        self.where_pos = np.asarray(where, dtype=np.int64)
        self.n = len(self.which)

    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        pos = np.asarray(pos, dtype=np.int64)
        out = np.empty(len(pos), dtype=object)
        w = self.which[pos]
        for i, part in enumerate(self.parts):
            sel = np.flatnonzero(w == i)
            if len(sel):
                out[sel] = part.get(name, self.where_pos[pos[sel]])
        return out

    def where(self, name: str, values: Iterable[Any]) -> np.ndarray:
        wanted = list(values)
        out = np.zeros(self.n, dtype=bool)
        for i, part in enumerate(self.parts):
            sel = np.flatnonzero(self.which == i)
            if len(sel):
                out[sel] = part.where(name, wanted)[self.where_pos[sel]]
        return out

    def group_of(self, name: str, groups: Sequence[Iterable[Any]]) -> np.ndarray:
        groups = [list(g) for g in groups]
        out = np.zeros(self.n, dtype=_group_dtype(len(groups)))
        for i, part in enumerate(self.parts):
            sel = np.flatnonzero(self.which == i)
            if len(sel):
                out[sel] = part.group_of(name, groups)[self.where_pos[sel]]
        return out

    def int_column(self, name: str) -> np.ndarray:
        out = np.full(self.n, -1, dtype=np.int64)
        for i, part in enumerate(self.parts):
            sel = np.flatnonzero(self.which == i)
            if len(sel):
                out[sel] = part.int_column(name)[self.where_pos[sel]]
        return out

    @staticmethod
    def flatten(parts: Sequence[tuple[Attributes, np.ndarray]]) -> "Derived":
        """The attributes of nodes taken, in order, from ``(source, positions)`` pairs; sources
        that are themselves :class:`Derived` are unwrapped so views of views stay one level."""
        leaves: list[Attributes] = []
        which_parts, where_parts = [], []

        def leaf(a: Attributes) -> int:
            for i, x in enumerate(leaves):
                if x is a:
                    return i
            leaves.append(a)
            return len(leaves) - 1

        for source, pos in parts:
            pos = np.asarray(pos, dtype=np.int64)
            if isinstance(source, Derived):
                remap = np.array([leaf(p) for p in source.parts], dtype=np.int16)
                which_parts.append(remap[source.which[pos]] if len(remap) else np.zeros(0, np.int16))
                where_parts.append(source.where_pos[pos])
            else:
                which_parts.append(np.full(len(pos), leaf(source), dtype=np.int16))
                where_parts.append(pos)
        which = np.concatenate(which_parts) if which_parts else np.zeros(0, np.int16)
        where = np.concatenate(where_parts) if where_parts else np.zeros(0, np.int64)
        return Derived(leaves, which, where)


def lookup_in_blocks(ids: np.ndarray, blocks: np.ndarray, refs: np.ndarray, hint: np.ndarray | None = None,
                     hinted_only: bool = False) -> np.ndarray:
    """Position of each id of ``refs`` in ``ids``, an array sorted within each block
    (``blocks``: the block offsets, ``[0, …, len(ids)]``); -1 where absent.

    ``hint``: for each ref, the block to look in first (-1: none); refs found there are not
    looked for elsewhere (ids are unique). With ``hinted_only``, a hinted ref missing from its
    block is absent.

    >>> lookup_in_blocks(np.array([5, 9, 1, 7]), np.array([0, 2, 4]), np.array([7, 5, 3])).tolist()
    [3, 0, -1]
    >>> lookup_in_blocks(np.array([5, 9, 1, 7]), np.array([0, 2, 4]), np.array([7, 5, 3]), np.array([1, 1, -1])).tolist()
    [3, 0, -1]
    """
    refs = np.asarray(refs, dtype=np.int64)
    out = np.full(len(refs), -1, dtype=np.int64)
    rest = np.arange(len(refs), dtype=np.int64)
    if hint is not None and len(refs):
        has = np.flatnonzero(hint >= 0)
        by_block = has[np.argsort(hint[has], kind="stable")]
        cuts = np.flatnonzero(np.diff(hint[by_block])) + 1
        for group in np.split(by_block, cuts) if len(by_block) else []:
            b = int(hint[group[0]])
            lo, hi = int(blocks[b]), int(blocks[b + 1])
            if hi <= lo:
                continue
            part = ids[lo:hi]
            pos = np.minimum(np.searchsorted(part, refs[group]), hi - lo - 1)
            hit = np.asarray(part[pos]) == refs[group]
            out[group[hit]] = pos[hit] + lo
        rest = np.flatnonzero((out < 0) & (hint < 0)) if hinted_only else np.flatnonzero(out < 0)
    if not len(rest):
        return out
    sub = refs[rest]
    for b in range(len(blocks) - 1):
        lo, hi = int(blocks[b]), int(blocks[b + 1])
        if hi <= lo:
            continue
        part = ids[lo:hi]
        pos = np.minimum(np.searchsorted(part, sub), hi - lo - 1)
        hit = np.asarray(part[pos]) == sub
        out[rest[hit]] = pos[hit] + lo
    return out
