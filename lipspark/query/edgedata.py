"""The data on every dataflow edge: each relation an invocation read or wrote, with its row count,
its change since the previous execution and a few sample rows with their provenance.

Inspector Gadget's interviews (VLDB 2011, Table 1) ask for samples of the data on each edge of a
dataflow. In the zoomed-out view (every module one step, Lipstick §4.1) the edges are the
relations that cross module boundaries: the workflow inputs a module reads, the state it reads
and the outputs it writes (which the next module reads as its inputs). For each of them, per
invocation and execution, :class:`EdgeReader` gives an :class:`EdgeData`:

* ``rows``: how many rows the stored relation has, summed from its Parquet footers (no data read);
* ``added`` / ``removed``: its change since the same workflow node's same relation in the
  previous execution, as a multiset of visible rows (lipspark's hidden ``__lp_`` columns left out):
  rows only the new one has, rows only the old one has, each copy counted; both ``None`` when
  there is no previous execution of it (the relation is *new*). This reads both executions' rows
  (pyarrow), for the relations asked about only;
* ``samples``: its first rows in stored order (the rows ``sample relation`` lists), each with the
  polynomial of its input, state or output node (in the view asked about; in the captured graph
  when the view hides the node, as a zoomed-out module hides its state).

Which relation an invocation read or wrote is what its graph recorded: the boundary segments of
the store's graph manifests (JSON only) name each one's stored files (a
:class:`~lipspark.vocabulary.segments.RelationDescriptor`). Nothing here starts Spark; files that
changed after capture are refused, as the graph's reader refuses them.

>>> before = [{"Id": "a"}, {"Id": "b"}, {"Id": "b"}]
>>> after = [{"Id": "b"}, {"Id": "c"}, {"Id": "c"}]
>>> row_changes(before, after)  # (added, removed): two c's came, an a and one b went
(2, 2)
>>> e = EdgeData("output", "Bids1", "dealer1", "dealer1_bid", 5, 7, "executions/000005/outputs/dealer1_bid/Bids1",
...              False, rows=412, previous=410, added=3, removed=1)
>>> e.describe()
'412 rows (+3 −1 since execution 4)'
>>> EdgeData("input", "Requests", "request", "request", 1, 3, "executions/000001/inputs/request/Requests", True, rows=1).describe()
'1 row (new: the first execution)'
"""
from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lipspark.errors import QueryError, StoreError
from lipspark.graph.expression import polynomial
from lipspark.graph.index import GraphIndex
from lipspark.query.text import printable
from lipspark.store.manifest import checked_path, read_manifest
from lipspark.vocabulary.columns import is_hidden
from lipspark.vocabulary.ids import file_position, positional
from lipspark.vocabulary.segments import BoundarySegment, FileRef, RelationDescriptor, Segment

__all__ = ["EdgeData", "SampleRow", "EdgeReader", "row_changes", "edge_lines", "SAMPLE_ROWS", "KINDS"]

#: how many sample rows each relation shows by default
SAMPLE_ROWS = 3
#: the relations an invocation reads and writes, in the order they are listed
KINDS = ("input", "state", "output")
_ROLE_KIND = {"i": "input", "s": "state", "o": "output"}
#: the longest polynomial a line of text shows (JSON has all of it)
POLYNOMIAL_CHARS = 160
#: the widest tuple a line of text shows
_TUPLE_CHARS = 72


@dataclass(frozen=True)
class SampleRow:
    """One stored row of a relation: its visible values, its node in the graph and that node's
    polynomial; ``in_view``: whether the view asked about has the node (a zoomed-out module's
    state tuples are hidden, and their polynomial is the captured graph's)."""

    values: Mapping[str, Any]
    node: int
    polynomial: str
    in_view: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"tuple": dict(self.values), "node": self.node, "polynomial": self.polynomial, "in_view": self.in_view}


@dataclass(frozen=True)
class EdgeData:
    """The data on one dataflow edge: relation ``relation`` that the invocation ``invocation``
    (node id) of ``module``, at workflow node ``node``, in execution ``execution``, read
    (``kind`` input or state) or wrote (output), stored at ``source`` (store-relative);
    ``workflow_input``: it is a workflow input (base tuples), not another module's output.

    ``rows`` counts its rows; ``previous`` the rows of the same node's same relation in the
    previous execution, ``added`` and ``removed`` the change between them as multisets of
    visible rows — all three ``None`` when it is new (the first execution, or none before).
    """

    kind: str
    relation: str
    module: str
    node: str
    execution: int
    invocation: int
    source: str
    workflow_input: bool
    rows: int
    previous: int | None = None
    added: int | None = None
    removed: int | None = None
    samples: tuple[SampleRow, ...] = field(default=())

    @property
    def new(self) -> bool:
        """Whether the previous execution had no such relation at this node (or there is none)."""
        return self.previous is None

    @property
    def name(self) -> str:
        """``output Bids1``, ``input Requests (workflow input)``."""
        return f"{self.kind} {self.relation}" + (" (workflow input)" if self.workflow_input else "")

    def change(self) -> str:
        """The change alone: ``+3 −1`` or ``new``."""
        return "new" if self.added is None or self.removed is None else f"+{self.added} −{self.removed}"

    def describe(self) -> str:
        """Its count and change: ``412 rows (+3 −1 since execution 4)``; new: ``(new: the first
        execution)`` or ``(new: none in execution 4)``."""
        count = f"{self.rows} row" + ("" if self.rows == 1 else "s")
        if self.added is None or self.removed is None:
            why = "the first execution" if self.execution <= 1 else f"none in execution {self.execution - 1}"
            return f"{count} (new: {why})"
        return f"{count} (+{self.added} −{self.removed} since execution {self.execution - 1})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, the samples as dicts, and ``data`` (:meth:`describe`)."""
        return {"kind": self.kind, "relation": self.relation, "module": self.module, "node": self.node, "execution": self.execution,
                "invocation": self.invocation, "source": self.source, "workflow_input": self.workflow_input, "rows": self.rows,
                "previous": self.previous, "added": self.added, "removed": self.removed, "new": self.new, "data": self.describe(),
                "samples": [s.to_dict() for s in self.samples]}


def _canon(v: Any) -> Any:
    """A value as a hashable key that compares as Spark compares rows: NaN equal to NaN, nested
    lists and structs by their members."""
    if isinstance(v, float) and math.isnan(v):
        return ("NaN",)
    if isinstance(v, (list, tuple)):
        return tuple(_canon(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _canon(x)) for k, x in v.items())
    return v


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple((k, _canon(row[k])) for k in sorted(row))


def row_changes(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(added, removed): how many rows of ``after`` are not in ``before`` and how many of
    ``before`` not in ``after``, as multisets (a row twice in ``after`` and once in ``before`` is
    one added). Rows are compared by column name; NaN equals NaN."""
    old = Counter(_row_key(r) for r in before)
    new = Counter(_row_key(r) for r in after)
    return sum((new - old).values()), sum((old - new).values())


class EdgeReader:
    """The data on the edges of one store's graph (a workflow store or its replayed provenance
    store), for any view of that graph. The graph manifests are read once, when first needed;
    counts and rows are kept per stored relation, so a relation read by several invocations (an
    output and the inputs it feeds) is read once.

    Parameters
    ----------
    path
        The store (or graph directory) the session opened.
    base
        Its captured graph: polynomials of nodes a view hides come from it.
    """

    def __init__(self, path: str, base: GraphIndex) -> None:
        self.path = path
        self.base = base
        self._segments: list[BoundarySegment] | None = None
        self._by_key: dict[tuple[Any, ...], BoundarySegment] | None = None
        self._root: str = path
        self._counts: dict[str, int] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}

    # ------------------------------------------------------------------ what the graph recorded
    def _load(self) -> list[BoundarySegment]:
        if self._segments is None:
            from lipspark.store.graphs import graph_root

            root, dirs = graph_root(self.path)
            found: list[BoundarySegment] = []
            for d in dirs:
                for entry in read_manifest(os.path.join(root, d))["segments"]:
                    if entry.get("kind") != "boundary" or entry.get("meta", {}).get("type") not in _ROLE_KIND:
                        continue
                    s = Segment.from_json(entry)
                    if isinstance(s, BoundarySegment) and s.column is None:
                        found.append(s)
            self._root, self._segments = root, sorted(found, key=lambda s: s.seg)
        return self._segments

    def _of(self, invocations: Iterable[int]) -> list[BoundarySegment]:
        wanted = {int(i) for i in invocations}
        return [s for s in self._load() if s.invocation in wanted]

    def _previous(self, s: BoundarySegment) -> BoundarySegment | None:
        """The same workflow node's same relation, same role, in the previous execution."""
        ex = s.context.execution
        if ex is None or ex <= 1:
            return None
        if self._by_key is None:
            self._by_key = {}
            for t in self._load():
                self._by_key.setdefault((t.role, t.relation, t.context.node, t.context.execution), t)
        return self._by_key.get((s.role, s.relation, s.context.node, ex - 1))

    # ------------------------------------------------------------------ reading the files
    def _path(self, f: FileRef, what: str) -> str:
        return checked_path(f, what, self._root)

    def count(self, desc: RelationDescriptor, what: str = "a relation") -> int:
        """Rows of a stored relation, from its files' Parquet footers (no data is read)."""
        if desc.dir not in self._counts:
            import pyarrow.parquet as pq

            total = 0
            for f in desc.files:
                path = self._path(f, what)
                try:
                    total += pq.read_metadata(path).num_rows
                except Exception as err:  # pyarrow raises several types for a damaged file
                    raise StoreError(f"{what}: file {path} cannot be read ({type(err).__name__}); it is damaged: "
                                     "`lipspark check` lists every damaged file") from None
            self._counts[desc.dir] = total
        return self._counts[desc.dir]

    def _read(self, path: str, what: str, rows: int | None = None) -> list[dict[str, Any]]:
        """The rows of one file, its visible columns only: all of them, or the first ``rows``
        (one batch of the first row group is read)."""
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
            cols = [c for c in pf.schema_arrow.names if not is_hidden(c)]
            if rows is None:
                out: list[dict[str, Any]] = pf.read(columns=cols).to_pylist()
                return out
            for batch in pf.iter_batches(batch_size=max(rows, 1), columns=cols):
                first: list[dict[str, Any]] = batch.to_pylist()[:rows]
                return first
            return []
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise StoreError(f"{what}: file {path} cannot be read ({type(err).__name__}); it is damaged: "
                             "`lipspark check` lists every damaged file") from None

    def rows(self, desc: RelationDescriptor, what: str = "a relation") -> list[dict[str, Any]]:
        """Every row of a stored relation, its visible columns only, in stored order."""
        if desc.dir not in self._rows:
            out: list[dict[str, Any]] = []
            for f in desc.files:
                out += self._read(self._path(f, what), what)
            self._rows[desc.dir] = out
        return self._rows[desc.dir]

    def _samples(self, s: BoundarySegment, k: int, view: GraphIndex) -> tuple[SampleRow, ...]:
        """The first ``k`` rows in stored order with their nodes' polynomials."""
        what = f"{_ROLE_KIND[s.role]} {s.relation!r} of {s.context.node} execution {s.context.execution}"
        picked: list[tuple[int, dict[str, Any]]] = []
        for i, f in enumerate(s.source.files):
            if len(picked) >= k:
                break
            rows = self._read(self._path(f, what), what, k - len(picked))
            picked += [(positional(s.seg, file_position(i, r)), row) for r, row in enumerate(rows)]
        out = []
        for node, row in picked:
            shown = view.contains(node)
            g = view if shown else self.base
            if not g.contains(node):
                raise StoreError(f"{what}: its row has no node {node} in the graph; the store and its graph disagree "
                                 "(`lipspark check`, then `lipspark reindex`)")
            out.append(SampleRow(row, node, str(polynomial(g, node)), shown))
        return tuple(out)

    # ------------------------------------------------------------------ the answer
    def edges(self, view: GraphIndex, invocations: Sequence[int] | np.ndarray, *, samples: int = SAMPLE_ROWS) -> list[EdgeData]:
        """The data on each relation the invocations (node ids) read or wrote: inputs, state,
        then outputs, per invocation in the order given, each kind in the order captured;
        ``samples`` rows each (0: none), their polynomials read in ``view``."""
        if samples < 0:
            raise QueryError(f"samples must be 0 or more, found {samples}")
        segs = self._of(int(i) for i in np.asarray(invocations, dtype=np.int64).tolist())
        order = {int(i): n for n, i in enumerate(np.asarray(invocations, dtype=np.int64).tolist())}
        segs.sort(key=lambda s: (order[s.invocation], KINDS.index(_ROLE_KIND[s.role]), s.seg))
        out = []
        for s in segs:
            kind = _ROLE_KIND[s.role]
            what = f"{kind} {s.relation!r} of {s.context.node} execution {s.context.execution}"
            rows = self.count(s.source, what)
            prev = self._previous(s)
            previous = added = removed = None
            if prev is not None:
                previous = self.count(prev.source, what)
                if prev.source.dir == s.source.dir and prev.source.files == s.source.files:  # the same files: unchanged
                    added = removed = 0
                else:
                    added, removed = row_changes(self.rows(prev.source, what), self.rows(s.source, what))
            out.append(EdgeData(kind, s.relation, str(s.context.module), str(s.context.node), int(s.context.execution or 0), s.invocation,
                                s.source.dir, s.role == "i" and s.source.p is not None and s.source.p.kind == "token",
                                rows, previous, added, removed, self._samples(s, samples, view) if samples else ()))
        return out


def _cut(s: str, n: int, more: str = "") -> str:
    return s if len(s) <= n else s[: n - 1] + "…" + more


def sample_text(values: Mapping[str, Any]) -> str:
    r"""A sample row's values as a line shows them: ``(B1, P1, null)``, control characters escaped.

    >>> sample_text({"BidId": "B1", "Dealer": None, "Note": "a\nb"})
    '(B1, null, a\\nb)'
    """
    return "(" + _cut(printable(", ".join("null" if v is None else str(v) for v in values.values())), _TUPLE_CHARS) + ")"


def edge_lines(edges: Sequence[EdgeData], *, limit: int | None = None, ids: bool = False) -> list[str]:
    """The data on the edges as lines of text: per invocation a heading, then each relation with
    its count and change, and under it its sample rows with their polynomials (cut; JSON has
    them whole). At most ``limit`` relations (None: all), then how many more there are.

    >>> e = EdgeData("output", "Bids1", "dealer1", "dealer1_bid", 2, 7, "executions/000002/outputs/dealer1_bid/Bids1", False,
    ...              rows=1, previous=1, added=1, removed=1, samples=(SampleRow({"BidId": "B2", "Amount": 19500.0}, 9, "M_dealer1[2]·dealer1(…)"),))
    >>> print("\\n".join(edge_lines([e])))
    the data on the edges of 1 invocation(s): rows stored, change since the previous execution (a multiset of rows), the first rows with their polynomials
    dealer1_bid (module dealer1), execution 2:
      output Bids1: 1 row (+1 −1 since execution 1)
        (B2, 19500.0)  M_dealer1[2]·dealer1(…)
    """
    shown = list(edges) if limit is None else list(edges)[:limit]
    heads = {(e.node, e.execution, e.invocation) for e in edges}
    lines = [f"the data on the edges of {len(heads)} invocation(s): rows stored, change since the previous execution "
             "(a multiset of rows), the first rows with their polynomials"]
    at = None
    for e in shown:
        if (e.node, e.execution, e.invocation) != at:
            at = (e.node, e.execution, e.invocation)
            module = f" (module {printable(e.module)})" if e.module != e.node else ""
            lines.append(f"{'[' + str(e.invocation) + '] ' if ids else ''}{printable(e.node)}{module}, execution {e.execution}:")
        hidden = "; its rows are hidden in this view: polynomials of the captured graph" if any(not r.in_view for r in e.samples) else ""
        lines.append(f"  {printable(e.name)}: {e.describe()}{hidden}")
        for r in e.samples:
            poly = _cut(printable(r.polynomial), POLYNOMIAL_CHARS, f" ({len(r.polynomial)} characters; --format json shows all)")
            lines.append(f"    {'[' + str(r.node) + '] ' if ids else ''}{sample_text(r.values)}  {poly}")
    if len(edges) > len(shown):
        lines.append(f"… and {len(edges) - len(shown)} more relation(s) (--all shows every one, --format json lists all)")
    return lines
