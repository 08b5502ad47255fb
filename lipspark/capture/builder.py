"""Recording the provenance graph while module code runs: typed segments, expanded later.

Each rewritten operation that creates nodes allocates a *segment* number (in the order
operations are applied, so it is the same on every run of the same code) and records a typed
segment (:mod:`lipspark.vocabulary.segments`) with lazy Spark DataFrames describing its nodes
in compact form (Smoke-style id arrays rather than a row per node):

``base`` — ``tuples``
    one row per base tuple: its token id (column :data:`~lipspark.vocabulary.BASE_ID`) and its
    key (or all) values; absent when the tuples are read back from Parquet files.
``group`` — ``members`` (and ``values``)
    one row per *member* of a group-by, distinct, cogroup or relation-level black box: the group
    node id ``g``, the member's p-node id ``m``, its factors ``__lp_f0..`` when it has several
    (then ``m`` is a · node over the non-zero ones), the distinct aggregate arguments ``x0..``,
    the arguments' own v-nodes ``v0..`` (and ``w<j>_<n>``, the v-nodes an argument expression
    reads) and per DISTINCT aggregate the δ id of the member's value ``d<j>``. Everything else
    is implied by the id layout of :mod:`lipspark.vocabulary.ids`. ``values``: per group ``g``
    the JSON value ``y<j>`` of each black-box aggregate (``stddev``, ``first``, an expression
    over aggregates), which only Spark computed.
``rownode`` — ``nodes``
    one row per node created row by row (a value-level black box): its id, the ids of its
    children and its value.

Nothing is computed until the graph is written or collected, so recording costs no Spark job.

>>> from lipspark.vocabulary import Context, InvocationSegment
>>> b = GraphBuilder()
>>> seg = b.allocate()
>>> b.record(InvocationSegment(seg, Context(module="m"), label="m"))
InvocationSegment(seg=1, context=Context(module='m', node=None, execution=None, invocation=None), label='m')
>>> b.next_segment, [s.kind for s in b.segments]
(2, ['invocation'])
"""
from __future__ import annotations

import json
import os
from functools import reduce
from typing import TYPE_CHECKING, Any, Callable

from lipspark.errors import AnnotationError
from lipspark.session import run_concurrently
from lipspark.vocabulary.ids import check_segment, fine_segment
from lipspark.vocabulary.segments import FORMAT_VERSION, SEG_COLUMN, FileRef, Segment

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["GraphBuilder", "InvocationBuilder"]


class GraphBuilder:
    """Collects typed segments and their lazy tables as module code runs.

    Parameters
    ----------
    first_segment
        The number :meth:`allocate` returns first (a workflow store continues its numbering
        across executions).
    """

    def __init__(self, first_segment: int = 1) -> None:
        self._next = first_segment
        self._segments: list[Segment] = []
        self._tables: dict[int, dict[str, DataFrame]] = {}
        self._written: tuple[str | None, dict[int, dict[str, Any]]] = (None, {})  # write_tables: where, and each segment's tables

    @property
    def next_segment(self) -> int:
        """The number the next :meth:`allocate` will return."""
        return self._next

    @property
    def segments(self) -> list[Segment]:
        """The segments recorded so far, in recording order."""
        return list(self._segments)

    def tables(self, seg: int) -> dict[str, DataFrame]:
        """The lazy tables recorded with segment ``seg`` (empty for a segment without tables)."""
        return dict(self._tables.get(seg, {}))

    def allocate(self) -> int:
        """A fresh segment number (deterministic: the n-th operation gets the n-th number)."""
        seg = check_segment(self._next)
        self._next += 1
        return seg

    def skip_to(self, seg: int) -> None:
        """Continue numbering at ``seg``: the numbers before it are reserved (a workflow
        reserves each invocation's coarse segments from its module's declaration)."""
        if seg < self._next:
            raise AnnotationError(f"internal: segment numbering cannot go back from {self._next} to {seg}")
        self._next = check_segment(seg) if seg > 1 else seg

    def record(self, segment: Segment, **tables: DataFrame) -> Segment:
        """Record ``segment`` with its tables (lazy DataFrames); returns the segment.

        Raises
        ------
        AnnotationError
            If the segment was recorded already, or a table is not one its kind carries.
        """
        if segment.seg in self._tables:
            raise AnnotationError(f"internal: segment {segment.seg} recorded twice")
        unknown = sorted(set(tables) - set(segment.tables))
        if unknown:
            raise AnnotationError(f"internal: a {segment.kind} segment carries tables {list(segment.tables)}, got {unknown}")
        self._segments.append(segment)
        self._tables[segment.seg] = dict(tables)
        return segment

    # ------------------------------------------------------------------ output
    def collect(self) -> list[tuple[Segment, dict[str, pa.Table]]]:
        """Compute every segment's tables into Arrow: ``[(segment, {name: pyarrow.Table})]``."""
        return [(s, {name: df.toArrow() for name, df in self._tables[s.seg].items()}) for s in self._segments]

    def write(self, path: str) -> dict[str, Any]:
        """Write every segment as Parquet under ``path`` plus a ``manifest.json``.

        Tables of the same name (all ``members``, all ``nodes``) are written together by one
        Spark job into one file, ``path/<name>/part-*.parquet``, with the segment number as
        column ``seg`` and the rows in segment order: a graph costs one job and one file per
        table kind rather than one per operation (a Parquet file's footer and column metadata
        outweigh the few hundred rows of a typical segment). Returns the manifest. ``path``
        must not exist yet or be empty.
        """
        self.write_tables(path)
        return self.write_manifest(path)

    def write_tables(self, path: str) -> None:
        """The first half of :meth:`write`: the tables of the segments recorded so far. Segments
        recorded after it must carry no tables (a boundary, whose rows are its relation's file:
        it is recorded once the file is written, which may be while these jobs run)."""
        if os.path.exists(path) and os.listdir(path):
            raise AnnotationError(f"refusing to write a graph into non-empty directory {path!r}")
        entries: dict[int, dict[str, Any]] = {}
        by_name: dict[str, list[tuple[int, DataFrame]]] = {}
        for s in list(self._segments):
            entries[s.seg] = {}
            for name, df in self._tables[s.seg].items():
                by_name.setdefault(name, []).append((s.seg, df))
        jobs: list[Callable[[], None]] = []
        for name, parts in by_name.items():
            if name == "tuples":  # base relations copied into the graph: columns differ, one job each
                for seg, df in parts:
                    rel = f"seg-{seg:06d}/{name}"
                    jobs.append(_writer(df, os.path.join(path, rel)))
                    entries[seg][name] = {"path": rel}
            else:
                jobs.append(_combined(path, name, parts, entries))
        run_concurrently(jobs)  # one job per table kind, at once: they share the module's cached frames
        os.makedirs(path, exist_ok=True)
        self._written = (path, entries)

    def write_manifest(self, path: str) -> dict[str, Any]:
        """The second half of :meth:`write`: ``manifest.json`` of every segment recorded, once
        :meth:`write_tables` has written their tables under ``path``."""
        written_path, tables = self._written
        if written_path != path:
            raise AnnotationError(f"internal: the graph's tables were not written under {path!r}")
        late = [s.seg for s in self._segments if s.seg not in tables and self._tables[s.seg]]
        if late:
            raise AnnotationError(f"internal: segments {late} were recorded with tables after the graph's tables were written")
        entries = [{**s.to_json(), "tables": tables.get(s.seg, {})} for s in self._segments]
        version = max([FORMAT_VERSION, *(s.version for s in self._segments)])  # 3 only where a 2 reader would misread
        manifest: dict[str, Any] = {"format": "lipspark-graph", "version": version, "files": _table_files(path), "segments": entries}
        with open(os.path.join(path, "manifest.json"), "w") as fh:
            fh.write(_manifest_text(manifest))
        return manifest


class InvocationBuilder:
    """The builder one module invocation records into: segments go to the execution's
    :class:`GraphBuilder`, numbered in the invocation's own range
    (:func:`~lipspark.vocabulary.ids.fine_segment`), so its operations get the same numbers
    whatever earlier invocations did (a replay of this invocation alone makes the same ids).

    >>> b = GraphBuilder(5)
    >>> inv = InvocationBuilder(b, 2)
    >>> from lipspark.vocabulary.ids import fine_segment
    >>> inv.allocate() == fine_segment(2, 0), inv.allocate() == fine_segment(2, 1), b.next_segment
    (True, True, 5)
    """

    def __init__(self, builder: GraphBuilder, invocation: int) -> None:
        self.builder = builder
        self.invocation = invocation
        self._j = 0

    def allocate(self) -> int:
        """The number of the invocation's next operation."""
        seg = fine_segment(self.invocation, self._j)
        self._j += 1
        return seg

    def record(self, segment: Segment, **tables: "DataFrame") -> Segment:
        return self.builder.record(segment, **tables)

    def tables(self, seg: int) -> "dict[str, DataFrame]":
        return self.builder.tables(seg)

    @property
    def segments(self) -> list[Segment]:
        return self.builder.segments

    def collect(self) -> "list[tuple[Segment, dict[str, pa.Table]]]":
        return self.builder.collect()

    def write(self, path: str) -> dict[str, Any]:
        return self.builder.write(path)


def _table_files(path: str) -> list[dict[str, Any]]:
    """Every Parquet file of the graph at ``path`` (relative), with size and CRC-32: what
    ``lipspark check`` verifies and the query-ready index is checked against."""
    out = []
    for d, _, names in sorted(os.walk(path)):
        for n in sorted(names):
            if n.endswith(".parquet"):
                full = os.path.join(d, n)
                out.append(FileRef.of(full, os.path.relpath(full, path)).to_json())
    return out


def _writer(df: DataFrame, path: str) -> Callable[[], None]:
    return lambda: df.write.mode("errorifexists").parquet(path)


def _combined(path: str, name: str, parts: list[tuple[int, DataFrame]], entries: dict[int, dict[str, Any]]) -> Callable[[], None]:
    """The job that writes the tables called ``name`` of several segments into one file.

    The rows of all segments go into ``path/<name>/`` with their segment number in column
    :data:`SEG_COLUMN`, in segment order (a union coalesced into one partition keeps its
    children's order, and no sort is needed); the manifest entry of each segment says so with
    ``seg_column``. Argument columns ``x<i>`` are typed per segment, so each is stored as
    ``x<i>_<type>`` and the entry's ``columns`` maps it back."""
    from pyspark.sql import functions as F

    frames = []
    for seg, df in parts:
        renamed = {c: f"{c}_{_type_code(df.schema[c].dataType)}" for c in df.columns if c.startswith("x")}
        frames.append(df.select(F.lit(seg).alias(SEG_COLUMN), *[F.col(c).alias(renamed.get(c, c)) for c in df.columns]))
        entries[seg][name] = {"path": name, "seg_column": SEG_COLUMN, "columns": {v: k for k, v in renamed.items()}}
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    if _estimated_bytes(union) > SPLIT_BYTES:
        # a large table (a group-by over millions of rows: one member row each): written by
        # every core, a file per partition in partition order (hence segment order), rather
        # than funnelled into one task that would also compute its whole input alone
        return _writer(union, os.path.join(path, name))
    # one partition, hence one file (Spark writes it even without rows, so the columns are known)
    return _writer(union.coalesce(1), os.path.join(path, name))


#: A shared table whose inputs Spark estimates above this many bytes is written in parallel, a
#: file per partition; below it, as one file (workflows' many small segments: a file's footer
#: outweighs their rows).
SPLIT_BYTES = 64 << 20
#: spark.sql.defaultSizeInBytes: the estimate of a leaf Spark cannot size (a checkpoint)
_NO_ESTIMATE = (1 << 63) - 1


def _estimated_bytes(df: DataFrame) -> int:
    """The bytes ``df``'s optimized plan reads: the sum of Spark's size estimates of its leaves
    (the files a scan reads, an in-memory relation); 0 when the plan has no estimate. (Not the
    estimate of the plan itself: without statistics Spark estimates a join as the product of
    its sides, which makes small tables look huge.) A cached frame counts once, by what its
    plan reads, however many branches of a union read it: a graph table's union reads each
    invocation's cached frames dozens of times, and walking each again cost thousands of Py4J
    round trips per execution."""
    try:
        total, seen = 0, set()
        identity = df.sparkSession._jvm.java.lang.System.identityHashCode  # type: ignore[union-attr]
        plans = [df._jdf.queryExecution().optimizedPlan()]
        while plans:
            leaves = plans.pop().collectLeaves()
            for i in range(leaves.size()):
                leaf = leaves.apply(i)
                if leaf.nodeName() == "InMemoryRelation":  # a cache: what it caches reads
                    cache = leaf.cacheBuilder()
                    key = identity(cache)
                    if key not in seen:
                        seen.add(key)
                        plans.append(cache.logicalPlan())
                    continue
                size = int(str(leaf.stats().sizeInBytes()))  # a Scala BigInt (py4j may give an int)
                total += size if size < _NO_ESTIMATE else 0  # Spark's default for a leaf it cannot size
        return total
    except Exception:  # noqa: BLE001 - an estimate only decides how many files to write
        return 0


def _manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as JSON with one segment per line and no other white space: in the Arctic
    workflows the manifest is most of a graph's bytes (hundreds of boundary segments with their
    files), and indentation made it 40% larger.

    >>> print(_manifest_text({"format": "f", "version": 2, "segments": [{"seg": 1}, {"seg": 2, "meta": {}}]}), end="")
    {"format":"f","version":2,"segments":[
    {"seg":1},
    {"seg":2,"meta":{}}
    ]}
    """
    def dump(x: Any) -> str:
        return json.dumps(x, separators=(",", ":"))

    head = dump({k: v for k, v in manifest.items() if k != "segments"})[:-1]
    segments = ",\n".join(dump(s) for s in manifest["segments"])
    return f'{head},"segments":[\n{segments}\n]}}\n' if segments else f'{head},"segments":[]}}\n'


def _type_code(dtype: Any) -> str:
    return "".join(ch for ch in dtype.simpleString() if ch.isalnum())
