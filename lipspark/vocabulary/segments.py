"""What capture writes and every reader reads: typed, versioned descriptions of segments.

A *segment* is one operation's nodes in compact form (see docs/graph-format.md). Capture
(:mod:`lipspark.capture`) and the executor create these records, the store keeps them as JSON
(``manifest.json`` of each graph, ``store.json`` for stored relations), and expansion
(:mod:`lipspark.graph.expand`), graph statistics and the test generator read them back —
always through :meth:`Segment.from_json` / :meth:`Segment.to_json`, never as raw dicts.

=============  ===============================================  ======================
kind           nodes                                            tables
=============  ===============================================  ======================
base           one token per base tuple                         ``tuples`` (when the
                                                                relation has no files)
group          δ (or relation-level black box) per group, ·      ``members``
               member nodes, aggregate v-nodes with ⊗ members
rownode        one value-level black-box v-node per row          ``nodes``
monus          per row a ⊖ node (its minuend and its δ             ``sides``, ``rows``
               subtrahend), · member nodes
invocation     the module invocation's node                     —
boundary       module input/state/output nodes of a stored       — (read from the
               relation (and v-nodes of its value columns)       relation's files)
=============  ===============================================  ======================

>>> s = GroupSegment(7, Context(module="m"), op=Op.DELTA, label="δ", k=1,
...                  aggregates=(AggregateSpec(Op.COUNT, None, "n"),))
>>> Segment.from_json(s.to_json()) == s
True
>>> s.to_json()["meta"]["aggregates"]
[{'op': 'Count', 'arg': None, 'column': 'n'}]
"""
from __future__ import annotations

import os
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from lipspark.errors import StoreError
from lipspark.vocabulary.ops import Op

__all__ = [
    "FORMAT_VERSION", "AGGREGATES_VERSION", "ARITHMETIC_VERSION", "GROUPING_VERSION", "READABLE_VERSIONS", "SEG_COLUMN", "FileRef", "file_crc32", "PScheme", "RelationDescriptor", "fingerprint_json", "fingerprint_of", "Context", "AggregateSpec",
    "Segment", "BaseSegment", "GroupSegment", "RowNodeSegment", "InvocationSegment", "BoundarySegment",
    "MonusSegment", "BOUNDARY_ROLES", "P_SCHEMES", "BASE_ID",
]

#: Version of the graph layout (manifest ``version``) that capture writes for a graph using
#: nothing newer. Version 2 stores the tables of one kind of all segments in one file with a
#: segment column; version 1 had a directory per segment, and a version-1 reader would take a
#: version-2 file for one segment's rows, hence the new number.
FORMAT_VERSION = 2
#: Version of a graph with a group segment using what version 2 lacks (:attr:`Segment.version`):
#: DISTINCT aggregates, aggregates over expressions reading v-nodes, black-box aggregates and
#: expressions over aggregates, and the group ``values`` table. A version-2 reader would read
#: such a segment as ordinary aggregates, silently wrong, so capture writes 3 exactly then.
AGGREGATES_VERSION = 3
#: Version of a graph with a formula over aggregates (arithmetic v-nodes, constants: ``100 ·
#: Σa / Σb``), which a version-3 reader would refuse node by node; capture writes 4 exactly then.
ARITHMETIC_VERSION = 4
#: Version of a graph with group memberships over values (``in_group`` row nodes: a group-by on
#: a count), whose operator a version-4 reader does not know; capture writes 5 exactly then.
GROUPING_VERSION = 5
#: The versions readers accept (version 1 graphs are read in their own layout); others are refused.
READABLE_VERSIONS = (1, 2, 3, 4, 5)
#: Column of a combined table (version 2) holding the segment number of each row.
SEG_COLUMN = "seg"
#: A boundary segment's role: module input, state read, output, state written (the · node
#: over a new state tuple's factors: on every row under the ``state`` scheme, where it has
#: several under ``collapse``), an output value column and a written state's value column.
BOUNDARY_ROLES = ("i", "s", "o", "collapse", "vo", "vs")
_CONTEXT = ("module", "node", "execution", "invocation")
#: Column holding the token id in a base segment's ``tuples`` table (never a user column).
BASE_ID = "__lp_id"


def _require(d: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in d:
        raise StoreError(f"{what} lacks {key!r}; the graph or store is corrupt or from another lipspark version")
    return d[key]


@dataclass(frozen=True)
class FileRef:
    """A Parquet file a graph refers to, with what it looked like when captured: its size,
    modification time and CRC-32 (``None`` in stores written before checksums were recorded).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "f.parquet"), "wb") as fh:
    ...     _ = fh.write(b"PAR1")
    >>> ref = FileRef.of(os.path.join(d, "f.parquet"), "rel/f.parquet")
    >>> ref.size, ref.crc32, FileRef.from_json(ref.to_json()) == ref
    (4, 1111623845, True)
    """

    path: str
    size: int
    mtime_ns: int
    crc32: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "size": self.size, "mtime_ns": self.mtime_ns}
        if self.crc32 is not None:
            out["crc32"] = self.crc32
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "FileRef":
        crc = d.get("crc32")
        return cls(str(_require(d, "path", "a file reference")), int(d["size"]), int(d["mtime_ns"]), None if crc is None else int(crc))

    @classmethod
    def of(cls, path: str, name: str) -> "FileRef":
        """The reference of the file at ``path`` (recorded as ``name``), checksum included."""
        st = os.stat(path)
        return cls(name, st.st_size, st.st_mtime_ns, file_crc32(path))

    def unchanged(self, st: os.stat_result, path: str) -> bool:
        """Whether the file at ``path`` (whose ``os.stat`` is ``st``) is the one referred to: the
        same size and modification time, or, for a copy (``cp -r`` gives new times), the same
        size and checksum. A file of a store written before checksums were recorded must keep
        its time.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "f.parquet")
        >>> with open(path, "wb") as fh:
        ...     _ = fh.write(b"PAR1")
        >>> ref = FileRef.of(path, "f.parquet")
        >>> os.utime(path, ns=(0, 0))  # what a copy that does not keep times does
        >>> ref.unchanged(os.stat(path), path), FileRef(ref.path, ref.size, ref.mtime_ns).unchanged(os.stat(path), path)
        (True, False)
        """
        if st.st_size != self.size:
            return False
        if st.st_mtime_ns == self.mtime_ns:
            return True
        return self.crc32 is not None and file_crc32(path) == self.crc32


def file_crc32(path: str) -> int:
    """The CRC-32 of a file's bytes (what ``lipspark check`` compares with the recorded one)."""
    crc = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


#: The p-node schemes of a stored relation (:class:`PScheme`).
P_SCHEMES = ("token", "output", "state", "collapse")


@dataclass(frozen=True)
class PScheme:
    """How the p-node of each row of a stored relation is found.

    ``token``: the row is a base tuple, its token is ``positional(seg, row position)``;
    ``output``: the row's output node is ``positional(seg, position)``;
    ``state``: a new state row's · node over its ``k`` stored factors is
    ``positional(seg, position)``, on every row — so a reader of the state refers to the row
    by its position alone, never to the writer's fine nodes, and is replayable without it;
    ``collapse`` (stores made before): the member rule over the row's ``k`` stored factors,
    with ``positional(seg, position)`` as the · node when several are non-zero.

    >>> PScheme.from_json(PScheme("state", 12, 2).to_json())
    PScheme(kind='state', seg=12, k=2)
    """

    kind: str
    seg: int
    k: int = 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "seg": self.seg}
        if self.kind != "token":
            out["k"] = self.k
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "PScheme":
        kind = str(_require(d, "kind", "a stored relation's p-node scheme"))
        if kind not in P_SCHEMES:
            raise StoreError(f"unknown p-node scheme {kind!r}; expected one of {', '.join(P_SCHEMES)} (written by a newer lipspark?)")
        return cls(kind, int(d["seg"]), int(d.get("k", 1)))


def fingerprint_json(fingerprint: "tuple[int, int]") -> list[Any]:
    """A relation's fingerprint (rows, sum of row hashes) as ``store.json`` keeps it: the sum, which
    may not fit a double, as a decimal string.

    >>> fingerprint_json((3, 2**70)), fingerprint_of(fingerprint_json((3, 2**70))) == (3, 2**70)
    ([3, '1180591620717411303424'], True)
    """
    return [int(fingerprint[0]), str(fingerprint[1])]


def fingerprint_of(value: Sequence[Any]) -> "tuple[int, int]":
    """The fingerprint :func:`fingerprint_json` wrote."""
    return int(value[0]), int(value[1])


@dataclass(frozen=True)
class RelationDescriptor:
    """A relation stored as Parquet in a workflow store (an input, output or state).

    ``values`` maps a value column to the segment of its stored v-nodes (``None``: the stored
    v-node ids are used as they are); ``bags`` names nested-bag columns; ``p`` is the p-node
    scheme, absent without provenance. ``every_row``: the v-nodes of a segment in ``values`` are
    one per row (:class:`BoundarySegment`), not only where the stored id is not null (relations
    written before). ``fingerprint``: (rows, sum of the rows' hashes) of the visible columns, as
    the job that wrote it observed them — a deferred run's outputs and state, which a replay must
    give again (absent elsewhere, and in stores written before).
    """

    dir: str
    files: tuple[FileRef, ...]
    values: Mapping[str, "int | None"] = field(default_factory=dict)
    bags: tuple[str, ...] = ()
    p: PScheme | None = None
    every_row: bool = False
    fingerprint: "tuple[int, int] | None" = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir, "files": [f.to_json() for f in self.files],
                               "values": dict(self.values), "bags": list(self.bags)}
        if self.p is not None:
            out["p"] = self.p.to_json()
        if self.every_row:
            out["value_rows"] = "every"
        if self.fingerprint is not None:
            out["fingerprint"] = fingerprint_json(self.fingerprint)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RelationDescriptor":
        return cls(
            str(_require(d, "dir", "a stored relation")),
            tuple(FileRef.from_json(f) for f in d.get("files", [])),
            {str(k): (None if v is None else int(v)) for k, v in d.get("values", {}).items()},
            tuple(d.get("bags", [])),
            PScheme.from_json(d["p"]) if d.get("p") is not None else None,
            d.get("value_rows") == "every",
            fingerprint_of(d["fingerprint"]) if d.get("fingerprint") is not None else None,
        )


@dataclass(frozen=True)
class Context:
    """Where a segment was recorded: the module, workflow node, execution and invocation node
    id (all ``None`` outside a workflow). Set explicitly by whoever records (the executor gives
    each invocation a tracker with its context), never ambient."""

    module: str | None = None
    node: str | None = None
    execution: int | None = None
    invocation: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _CONTEXT if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Context":
        return cls(d.get("module"), d.get("node"),
                   None if d.get("execution") is None else int(d["execution"]),
                   None if d.get("invocation") is None else int(d["invocation"]))


@dataclass(frozen=True)
class AggregateSpec:
    """One aggregate v-node per group of a group segment, and what it is computed from.

    A *semimodule* aggregate (``op`` Count, Sum, Min, Max or Avg) is ``Σ pᵢ ⊗ vᵢ``: ``arg`` is
    the index of its argument column ``x<arg>`` in the members table (``None``: a constant
    argument, ``count(*)``, or a ``count(DISTINCT …)``), ``vnode`` the members-table column
    holding the argument's own v-node when the argument is a bare column that has one, and
    ``reads`` the members-table columns holding the v-nodes an argument *expression* reads
    (``sum(n * 2)`` over an aggregated ``n``): each member's value node is then a black box
    labelled ``argument`` over them, so a what-if that changes them says unknown. With
    ``distinct`` (the members-table column of each member's δ id for its distinct value, null
    when the value is null) the ⊗ pairs are one per distinct value, ``δ(Σ its members) ⊗ v``.

    A *black-box* aggregate (``op`` BLACK_BOX: ``first``, ``stddev``, an expression over
    aggregates…) has no ⊗ form: its v-node is labelled ``label``, its value is column ``value``
    of the segment's ``values`` table, and its children are every member (and the v-nodes in
    ``vnode``/``reads``) or, for an expression over aggregates, the group's node and the
    aggregates listed in ``inputs`` (indices into the segment's aggregates).

    A *formula* over aggregates (``100 · sum(a) / sum(b)``) is a tree of such specs: an
    arithmetic ``op`` (ADD, MULTIPLY, NEGATE, INVERSE) over the specs in ``inputs``, and CONSTANT
    specs holding a literal in ``constant``. Its root shows in ``column``, valued as Spark
    computed it (``value``, as for a black box); the other nodes are valued from their inputs
    (:func:`~lipspark.vocabulary.arithmetic`), and a what-if recomputes them all.

    >>> AggregateSpec.from_json(AggregateSpec(Op.CONSTANT, None, "", constant=0).to_json()).constant
    0
    >>> AggregateSpec.from_json(AggregateSpec(Op.BLACK_BOX, None, "sd", label="stddev", value="y0").to_json()).label
    'stddev'
    """

    op: Op
    arg: int | None
    column: str
    vnode: str | None = None
    reads: tuple[str, ...] = ()
    argument: str | None = None
    distinct: str | None = None
    label: str | None = None
    value: str | None = None
    inputs: tuple[int, ...] = ()
    constant: Any = None

    @property
    def black_box(self) -> bool:
        """Whether the aggregate is a black box (no ⊗ form)."""
        return self.op is Op.BLACK_BOX

    @property
    def version(self) -> int:
        """The graph format version a segment with this aggregate needs."""
        if self.op.is_arithmetic or self.op is Op.CONSTANT:
            return ARITHMETIC_VERSION
        if self.black_box or self.reads or self.distinct is not None or self.inputs:
            return AGGREGATES_VERSION
        return FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        named = self.black_box or self.op.is_arithmetic or self.op is Op.CONSTANT
        out: dict[str, Any] = {"op": self.op.name.lower() if named else self.op.label, "arg": self.arg, "column": self.column}
        optional = {"vnode": self.vnode, "reads": list(self.reads), "argument": self.argument, "distinct": self.distinct,
                    "label": self.label, "value": self.value, "inputs": list(self.inputs)}
        out.update({k: v for k, v in optional.items() if v})
        if self.op is Op.CONSTANT:
            out["constant"] = self.constant
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "AggregateSpec":
        op = Op.parse(str(_require(d, "op", "an aggregate")))
        if not op.is_aggregate and not op.is_arithmetic and op not in (Op.BLACK_BOX, Op.CONSTANT):
            raise StoreError(f"aggregate operator {d['op']!r} is not one of Count, Sum, Min, Max, Avg, black_box, "
                             "add, multiply, negate, inverse, constant")
        if op is Op.BLACK_BOX and (not d.get("label") or not d.get("value")):
            raise StoreError(f"black-box aggregate {d.get('column')!r} lacks its label or value column; the graph is corrupt")
        inputs = tuple(int(i) for i in d.get("inputs", ()))
        if op.is_arithmetic and (not inputs or (op in (Op.NEGATE, Op.INVERSE) and len(inputs) != 1)):
            raise StoreError(f"formula node {op.name.lower()} has inputs {list(inputs)}; the graph is corrupt")
        if op is Op.CONSTANT and "constant" not in d:
            raise StoreError(f"constant of formula {d.get('column')!r} lacks its value; the graph is corrupt")
        return cls(op, None if d.get("arg") is None else int(d["arg"]), str(d.get("column", "")), d.get("vnode"),
                   tuple(d.get("reads", ())), d.get("argument"), d.get("distinct"), d.get("label"), d.get("value"),
                   inputs, d.get("constant"))


@dataclass(frozen=True)
class Segment(ABC):
    """Base class: the segment number and the context it was recorded in."""

    seg: int
    context: Context

    kind: ClassVar[str] = ""
    #: the tables a segment of this kind may carry
    tables: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def _meta(self) -> dict[str, Any]:
        """The kind's own fields, as stored in the manifest's ``meta``."""

    @property
    def version(self) -> int:
        """The graph format version a graph with this segment needs (a manifest has the greatest)."""
        return FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        """The manifest entry: ``{"seg", "kind", "meta"}`` (the context merged into meta)."""
        return {"seg": self.seg, "kind": self.kind, "meta": {**self.context.to_json(), **self._meta()}}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Segment":
        """Read a manifest entry (its ``tables`` entry, if any, is the reader's business)."""
        kind = _require(d, "kind", "a graph segment")
        cls = _KINDS.get(kind)
        if cls is None:
            raise StoreError(f"unknown segment kind {kind!r} in segment {d.get('seg')}; written by a newer lipspark?")
        meta = d.get("meta", {})
        return cls._from_meta(int(_require(d, "seg", "a graph segment")), Context.from_json(meta), meta)

    @classmethod
    @abstractmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "Segment":
        """Build the kind from a manifest's ``meta``."""


@dataclass(frozen=True)
class BaseSegment(Segment):
    """Base tuples of a relation: tokens labelled ``relation:key values``. With ``files`` the
    tuples are read from those Parquet files (token ordinal = file, row); otherwise from the
    segment's ``tuples`` table (column ``__lp_id`` and the ``columns``). ``type`` is ``"i"`` for
    workflow inputs, ``None`` for a module's initial state and for plain base relations."""

    relation: str = ""
    key: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    files: tuple[FileRef, ...] | None = None
    type: str | None = None

    kind: ClassVar[str] = "base"
    tables: ClassVar[tuple[str, ...]] = ("tuples",)

    def _meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"relation": self.relation, "key": list(self.key), "columns": list(self.columns)}
        if self.files is not None:
            out["files"] = [f.to_json() for f in self.files]
        if self.type is not None:
            out["type"] = self.type
        return out

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "BaseSegment":
        files = meta.get("files")
        return cls(seg, context, str(_require(meta, "relation", "a base segment")), tuple(meta.get("key", [])),
                   tuple(meta.get("columns", [])), tuple(FileRef.from_json(f) for f in files) if files is not None else None,
                   meta.get("type"))


@dataclass(frozen=True)
class GroupSegment(Segment):
    """A pipeline breaker: per group one node of operator ``op`` (δ, or a relation-level black
    box labelled ``label``) with an edge from each member; members with ``k > 1`` factors are
    · nodes over them (the member rule); per aggregate one v-node per group with a ⊗ per member
    whose argument is not null (see :class:`AggregateSpec`). ``group`` is the static id of a
    keyless aggregate's group (it has one group even over no rows, and that node is 1, an empty
    product with no member edges: SQL returns the row over any input, so no deletion removes
    it; its aggregates are recomputed). The ``values`` table (``g`` and per
    black-box aggregate its JSON value column) holds what Spark computed for the aggregates
    without a ⊗ form."""

    op: Op = Op.DELTA
    label: str = "δ"
    k: int = 1
    aggregates: tuple[AggregateSpec, ...] = ()
    group: int | None = None

    kind: ClassVar[str] = "group"
    tables: ClassVar[tuple[str, ...]] = ("members", "values")

    def __post_init__(self) -> None:
        if self.op not in (Op.DELTA, Op.BLACK_BOX):
            raise StoreError(f"a group segment's operator is delta or black_box, found {self.op.name.lower()}")
        n = len(self.aggregates)
        for j, a in enumerate(self.aggregates):
            if any(not 0 <= i < n or i == j for i in a.inputs):
                raise StoreError(f"aggregate {a.column!r} of segment {self.seg} is computed from aggregates {list(a.inputs)}, "
                                 f"not among the segment's other {n - 1}; the graph is corrupt")

    @property
    def version(self) -> int:
        return max([FORMAT_VERSION, *(a.version for a in self.aggregates)])

    def _meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op.name.lower(), "label": self.label, "k": self.k,
                               "aggregates": [a.to_json() for a in self.aggregates]}
        if self.group is not None:
            out["group"] = self.group
        return out

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "GroupSegment":
        label = str(_require(meta, "label", "a group segment"))
        # graphs written before the operator had its own field: δ was labelled δ, anything else
        # was a relation-level black box (names are identifiers, and "δ" is reserved for δ)
        op = Op.parse(meta["op"]) if "op" in meta else (Op.DELTA if label == "δ" else Op.BLACK_BOX)
        return cls(seg, context, op, label, int(meta.get("k", 1)),
                   tuple(AggregateSpec.from_json(a) for a in meta.get("aggregates", [])),
                   None if meta.get("group") is None else int(meta["group"]))


@dataclass(frozen=True)
class RowNodeSegment(Segment):
    """Nodes made per row, one per distinct id: table ``nodes`` with ``id``, ``children`` (for a
    value-level black box the row's p-node, its argument v-nodes and bag members) and ``value``
    (JSON). ``node_kind`` ``v`` (value-level black boxes, CONDITION nodes, the nodes of a
    filter's condition over values) or, since version 4, ``p`` (the · a row kept by such a
    filter gets over its condition, :mod:`lipspark.capture.rules.guard`)."""

    label: str = ""
    op: Op = Op.BLACK_BOX
    node_kind: str = "v"

    kind: ClassVar[str] = "rownode"
    tables: ClassVar[tuple[str, ...]] = ("nodes",)

    def __post_init__(self) -> None:
        if self.node_kind not in ("p", "v"):
            raise StoreError(f"a row-node segment's nodes are p or v, found {self.node_kind!r}")

    @property
    def version(self) -> int:
        if self.op is Op.IN_GROUP:
            return GROUPING_VERSION
        return ARITHMETIC_VERSION if self.node_kind == "p" or self.op.is_arithmetic or self.op is Op.CONSTANT else FORMAT_VERSION

    def _meta(self) -> dict[str, Any]:
        return {"op": self.op.name.lower(), "label": self.label, "kind": self.node_kind}

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "RowNodeSegment":
        return cls(seg, context, str(_require(meta, "label", "a row-node segment")), Op.parse(meta.get("op", "black_box")),
                   str(meta.get("kind", "v")))


@dataclass(frozen=True)
class InvocationSegment(Segment):
    """A module invocation: one p-node ``positional(seg, 0)`` labelled with the module."""

    label: str = ""

    kind: ClassVar[str] = "invocation"

    def _meta(self) -> dict[str, Any]:
        return {"type": "m", "label": self.label}

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "InvocationSegment":
        return cls(seg, context, str(_require(meta, "label", "an invocation segment")))


@dataclass(frozen=True)
class BoundarySegment(Segment):
    """Nodes of a stored relation at a module boundary, derived from its files: per row an
    input (``i``), state (``s``) or output (``o``) node, a · node over a new state tuple's
    factors (``collapse``), or, with ``column``, the v-node of that column's value
    (roles ``i``/``s``/``vo``, and ``vs`` for a new state row's value: a · node over the
    value's own node, without the invocation, as ``collapse`` is for the row).

    A value column's v-nodes are one per row (``every_row``: what a consumer can know from the
    data alone, so an invocation is replayable without its producer — docs/design.md, "Deferred
    capture"), each over the value's own node where the producer made one and a leaf where not;
    graphs written before have them only where the producer made one."""

    role: str = "i"
    relation: str = ""
    source: RelationDescriptor = field(default_factory=lambda: RelationDescriptor("", ()))
    invocation: int = 0
    column: str | None = None
    every_row: bool = False

    kind: ClassVar[str] = "boundary"

    def __post_init__(self) -> None:
        if self.role not in BOUNDARY_ROLES:
            raise StoreError(f"unknown boundary role {self.role!r}; expected one of {', '.join(BOUNDARY_ROLES)}")

    @property
    def op(self) -> Op:
        """The operator of the nodes this segment makes."""
        if self.role in ("collapse", "vs"):
            return Op.TIMES
        return {"i": Op.INPUT, "s": Op.STATE}.get(self.role, Op.OUTPUT)

    def _meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.role, "label": "·", "relation": self.relation,
                               "source": self.source.to_json(), "invocation": self.invocation}
        if self.column is not None:
            out["column"] = self.column
        if self.every_row:
            out["rows"] = "every"
        return out

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "BoundarySegment":
        rows = meta.get("rows", "stored")
        if rows not in ("stored", "every"):
            raise StoreError(f"boundary segment {seg} has v-nodes on {rows!r} rows; expected 'stored' or 'every' (written by a newer lipspark?)")
        return cls(seg, context, str(_require(meta, "type", "a boundary segment")), str(meta.get("relation", "")),
                   RelationDescriptor.from_json(_require(meta, "source", "a boundary segment")),
                   int(_require(meta, "invocation", "a boundary segment")), meta.get("column"), rows == "every")


@dataclass(frozen=True)
class MonusSegment(Segment):
    """Rows kept *because* another has no partner (outer and anti joins, set difference): per
    row ``g`` a ⊖ node, ``minuend ⊖ δ(Σ subtrahend members)`` (Geerts and Poggi 2010).

    Table ``sides``: ``g``, ``m`` (a member p-node, by the member rule over the ``k`` factor
    columns ``__lp_f<i>`` when ``k > 1``) and ``side`` (0: the minuend, 1: the subtrahend). The
    subtrahend is the δ node ``monus_part_ids(g, 1)`` over the side-1 members; the minuend is
    the side-0 member itself (``minuend="row"``: an anti or outer join's row) or the δ node
    ``monus_part_ids(g, 0)`` over the side-0 members (``minuend="delta"``: a distinct tuple of a
    set difference). Table ``rows``: ``g``, ``tuple`` (the row as JSON, the data it would have)
    and ``copies`` (how many such rows). Capture records only rows that have partners — absent
    now, present in a world without their partners; a row without partners is ``r ⊖ 0 = r``.

    >>> m = MonusSegment(4, Context(), minuend="delta", k=2)
    >>> Segment.from_json(m.to_json()) == m, m.to_json()["meta"]
    (True, {'label': '⊖', 'minuend': 'delta', 'k': 2})
    """

    label: str = "⊖"
    minuend: str = "row"
    k: int = 1

    kind: ClassVar[str] = "monus"
    tables: ClassVar[tuple[str, ...]] = ("sides", "rows")

    def __post_init__(self) -> None:
        if self.minuend not in ("row", "delta"):
            raise StoreError(f"a monus segment's minuend is 'row' or 'delta', found {self.minuend!r}; the graph is corrupt")

    def _meta(self) -> dict[str, Any]:
        return {"label": self.label, "minuend": self.minuend, "k": self.k}

    @classmethod
    def _from_meta(cls, seg: int, context: Context, meta: Mapping[str, Any]) -> "MonusSegment":
        return cls(seg, context, str(meta.get("label", "⊖")), str(_require(meta, "minuend", "a monus segment")), int(meta.get("k", 1)))


_KINDS: dict[str, type[Segment]] = {c.kind: c for c in (BaseSegment, GroupSegment, RowNodeSegment, InvocationSegment, BoundarySegment,
                                                         MonusSegment)}

