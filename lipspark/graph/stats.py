"""Size of a written graph (nodes, edges, bytes) read from its compact tables, without expanding.

>>> from lipspark.graph.stats import GraphStats
>>> GraphStats(nodes=3, edges=2, bytes=48).bytes_per_edge
24.0
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lipspark.errors import StoreError
from lipspark.vocabulary import BASE_ID

__all__ = ["GraphStats", "graph_stats", "directory_bytes"]


@dataclass(frozen=True)
class GraphStats:
    nodes: int
    edges: int
    bytes: int

    @property
    def bytes_per_edge(self) -> float:
        return self.bytes / self.edges if self.edges else float("nan")


def directory_bytes(path: str) -> int:
    """Bytes of all data files under ``path`` (Spark's ``_SUCCESS``/checksum files excluded)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            if f.endswith(".crc") or f.startswith("_"):
                continue
            total += os.path.getsize(os.path.join(root, f))
    return total


def _has_rows(path: str) -> bool:
    """A segment with no rows is an empty directory (Spark wrote no file for it)."""
    return any(f.endswith(".parquet") for f in os.listdir(path)) if os.path.isdir(path) else False


def graph_stats(path: str) -> GraphStats:
    """Count the nodes and edges a graph written by :meth:`GraphBuilder.write` expands to."""
    with open(os.path.join(path, "manifest.json")) as fh:
        manifest = json.load(fh)
    nodes = edges = 0
    for seg in manifest["segments"]:
        tables = {n: os.path.join(path, e["path"]) for n, e in seg["tables"].items()}
        renames = {n: {v: k for k, v in e.get("columns", {}).items()} for n, e in seg["tables"].items()}
        meta = seg["meta"]
        if seg["kind"] == "base":
            if "files" in meta:
                nodes += sum(pq.ParquetFile(re.sub(r"^file:/+", "/", f["path"])).metadata.num_rows for f in meta["files"])
            else:
                nodes += pq.ParquetDataset(tables["tuples"]).read(columns=[BASE_ID]).num_rows
        elif seg["kind"] == "group" and not _has_rows(tables["members"]):
            nodes += 1 if meta.get("group") is not None else 0  # keyless aggregate over no rows
            nodes += len(meta.get("aggregates", [])) if meta.get("group") is not None else 0
        elif seg["kind"] == "group":
            k = int(meta["k"])
            aggs = meta.get("aggregates", [])
            fcols = [f"__lp_f{i}" for i in range(k)] if k > 1 else []
            xcols = sorted({f"x{a['arg']}" for a in aggs if a["arg"] is not None})
            xr = renames["members"]
            t = pq.ParquetDataset(tables["members"]).read(columns=["g", "m", *fcols, *[xr.get(c, c) for c in xcols]])
            t = t.rename_columns(["g", "m", *fcols, *xcols])
            groups = len(pc.unique(t["g"]))
            nodes += groups
            edges += t.num_rows
            if fcols:
                nz = sum(pc.cast(pc.not_equal(t[c], 0), "int64").to_numpy() for c in fcols)
                multi = nz > 1
                if multi.any():
                    m = t["m"].to_numpy()[multi]
                    _, first = np.unique(m, return_index=True)
                    nodes += len(first)
                    edges += int(nz[multi][first].sum())
            for a in aggs:
                present = t.num_rows - (t[f"x{a['arg']}"].null_count if a["arg"] is not None else 0)
                nodes += groups + 2 * present
                edges += 3 * present
        elif seg["kind"] == "rownode" and not _has_rows(tables["nodes"]):
            pass
        elif seg["kind"] == "rownode":
            t = pq.ParquetDataset(tables["nodes"]).read(columns=["id", "children"])
            nodes += len(pc.unique(t["id"]))
            edges += int(pc.sum(pc.list_value_length(t["children"])).as_py() or 0)
        else:
            raise StoreError(
                f"graph_stats counts graphs written by Tracker.write; segment kind {seg['kind']!r} "
                "belongs to a workflow store: use lipspark.graph.load.load_graph to count it"
            )
    return GraphStats(nodes, edges, directory_bytes(path))
