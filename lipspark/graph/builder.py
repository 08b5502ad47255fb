"""Recording the provenance graph while module code runs: compact segments, expanded later.

Each rewritten operation that creates nodes allocates a *segment* (a small integer, in the
order operations are applied, so it is the same on every run of the same code) and registers
lazy Spark DataFrames describing its nodes in a compact form (Smoke-style id arrays rather than
a row per node):

``base``
    one row per base tuple: its token id and its key (or all) values. Token p-nodes.
``group``
    one row per *member* of a group-by, distinct, cogroup or relation-level black box: the group
    node id ``g`` (δ, or the black box's name), the member's p-node id ``m``, its factors
    ``f0..fK-1`` when it has several (then ``m`` is a · node over the non-zero ones), and the
    distinct arguments ``x0..`` of the aggregates. Everything else is implied: the id of the j-th
    aggregate v-node is ``g XOR aggregate_salt(j)``, its value is recomputed from the members,
    and the ⊗ v-nodes and value v-nodes get their ids when the graph is expanded.
``rownode``
    one row per node created row by row (a black box called in a projection): its id, the ids of
    its children and its value.

Nothing is computed until the graph is written or collected, so recording costs no Spark job.
Ids are deterministic: base tokens are numbered by position in their (ordered) source, group
and row nodes are 64-bit hashes of their segment and content (never of partitioning or timing),
and implied nodes are numbered after a canonical sort during expansion.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.errors import AnnotationError
from lipspark.vocabulary.ids import ROW_BITS, SEGMENT_SHIFT
from lipspark.vocabulary.segments import FORMAT_VERSION
from lipspark.vocabulary.segments import Segment as SegmentRecord

__all__ = ["Segment", "GraphBuilder", "SEGMENT_SHIFT", "FORMAT_VERSION", "BASE_ID", "ROW_BITS", "node_hash", "aggregate_salt", "aggregate_node_id"]

#: Column holding the token id in a base segment's table (never clashes with user columns).
BASE_ID = "__lp_id"


@dataclass
class Segment:
    """One operation's nodes in compact form (see the module docstring)."""

    seg: int
    kind: str
    meta: dict[str, Any]
    tables: dict[str, DataFrame] = field(default_factory=dict)


class GraphBuilder:
    """Collects :class:`Segment` s as module code runs.

    Examples
    --------
    >>> b = GraphBuilder()
    >>> b.allocate()
    1
    >>> b.allocate()
    2
    """

    def __init__(self, first_segment: int = 1) -> None:
        self._next = first_segment
        self.segments: list[Segment] = []
        #: merged into every segment's meta (the workflow layer sets module, invocation, execution)
        self.context: dict[str, Any] = {}

    @property
    def next_segment(self) -> int:
        """The number the next :meth:`allocate` will return."""
        return self._next

    def allocate(self) -> int:
        """A fresh segment number (deterministic: the n-th operation gets the n-th number)."""
        seg = self._next
        self._next += 1
        if seg >= 1 << (63 - SEGMENT_SHIFT - 1):
            raise AnnotationError(f"too many provenance operations in one graph ({seg}); split the workflow")
        return seg

    def add(self, seg: int, kind: str, meta: dict[str, Any], **tables: DataFrame) -> Segment:
        """Register a segment's tables (lazy DataFrames)."""
        segment = Segment(seg, kind, {**self.context, **meta}, dict(tables))
        self.segments.append(segment)
        return segment

    # ------------------------------------------------------------------ output
    def collect(self) -> list[tuple[SegmentRecord, dict[str, Any]]]:
        """Compute every segment into Arrow tables: ``[(segment record, {name: pyarrow.Table})]``."""
        out = []
        for s in self.segments:
            out.append((SegmentRecord.from_json(_header(s)), {name: df.toArrow() for name, df in s.tables.items()}))
        return out

    def write(self, path: str) -> dict[str, Any]:
        """Write every segment as Parquet under ``path`` plus a ``manifest.json``.

        Tables of the same name (all ``members``, all ``nodes``) are written together by one
        Spark job, partitioned by segment, so a graph costs one job per table kind rather than
        one per operation. Returns the manifest. ``path`` must not exist yet or be empty.
        """
        if os.path.exists(path) and os.listdir(path):
            raise AnnotationError(f"refusing to write a graph into non-empty directory {path!r}")
        manifest: dict[str, Any] = {"format": "lipspark-graph", "version": FORMAT_VERSION, "segments": []}
        headers = {s.seg: {**_header(s), "tables": {}} for s in self.segments}
        by_name: dict[str, list[tuple[int, DataFrame]]] = {}
        for s in self.segments:
            for name, df in s.tables.items():
                by_name.setdefault(name, []).append((s.seg, df))
        for name, parts in by_name.items():
            if name == "tuples":  # base relations copied into the graph: columns differ, one job each
                for seg, df in parts:
                    rel = f"seg-{seg:06d}/{name}"
                    df.write.mode("errorifexists").parquet(os.path.join(path, rel))
                    headers[seg]["tables"][name] = {"path": rel}
                continue
            frames = []
            for seg, df in parts:
                renamed = {c: f"{c}_{_type_code(df.schema[c].dataType)}" for c in df.columns if c.startswith("x")}
                cols = [F.col(c).alias(renamed.get(c, c)) for c in df.columns]
                frames.append(df.select(F.lit(seg).alias("seg"), *cols))
                headers[seg]["tables"][name] = {"path": f"{name}/seg={seg}", "columns": {v: k for k, v in renamed.items()}}
            if len(frames) == 1:  # one segment: no partitioned writer (it would sort every row)
                frames[0].drop("seg").write.mode("errorifexists").parquet(os.path.join(path, name, f"seg={parts[0][0]}"))
                continue
            union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
            union.write.mode("errorifexists").partitionBy("seg").parquet(os.path.join(path, name))
            for seg, _ in parts:  # a segment with no rows gets no partition directory
                os.makedirs(os.path.join(path, name, f"seg={seg}"), exist_ok=True)
        manifest["segments"] = [headers[s.seg] for s in self.segments]
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "manifest.json"), "w") as fh:
            json.dump(manifest, fh, indent=1)
        return manifest


def _type_code(dtype: Any) -> str:
    return "".join(ch for ch in dtype.simpleString() if ch.isalnum())


def _header(s: Segment) -> dict[str, Any]:
    return {"seg": s.seg, "kind": s.kind, "meta": s.meta}


def aggregate_salt(j: int) -> int:
    """The constant XORed into a δ node's id to get the id of its j-th aggregate v-node.

    >>> aggregate_salt(0) != aggregate_salt(1)
    True
    """
    z = (0x9E3779B97F4A7C15 * (j + 1)) & 0xFFFFFFFFFFFFFFFF  # splitmix64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z - (1 << 64) if z >= 1 << 63 else z


def aggregate_node_id(group_id: Column, j: int) -> Column:
    """Id of the j-th aggregate v-node of the group whose δ node is ``group_id``."""
    return group_id.bitwiseXOR(F.lit(aggregate_salt(j)))


def node_hash(seg: int, *cols: Column) -> Column:
    """Deterministic 64-bit id of a node from its segment and content columns.

    Null-safe (``(null, 1)`` and ``(1, null)`` differ) and insensitive to ``-0.0`` vs ``0.0``,
    like Spark's own grouping.
    """
    parts: list[Column] = [F.lit(seg).cast("long")]
    for c in cols:
        parts.append(c)
        parts.append(c.isNull())
    return F.xxhash64(*parts)
