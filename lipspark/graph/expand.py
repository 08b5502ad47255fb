"""Expanding recorded segments into explicit p-nodes, v-nodes and edges.

The builder stores each operation compactly (see :mod:`lipspark.graph.builder`); this module
turns those tables into the graph of the paper: a node table (``id``, ``kind`` p/v, ``label``,
``seg``, ``value``, ``relation``, ``tuple``) and an edge table (``src`` → ``dst``, a multiset:
a group with the same row twice has two edges from it). Implied nodes (⊗ and the aggregated
values) are numbered after a canonical sort, so expansion is deterministic.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from lipspark.errors import StoreError
from lipspark.graph.builder import SEGMENT_SHIFT

__all__ = ["expand_segments", "NODE_COLUMNS"]

NODE_COLUMNS = ["id", "kind", "label", "seg", "value", "relation", "tuple"]


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def _base(seg: int, meta: dict[str, Any], t: pa.Table) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = t.to_pandas()
    cols = meta["columns"]
    rel = meta["relation"]
    vals = [tuple(r) for r in df[cols].itertuples(index=False, name=None)] if len(df) else []
    labels = [f"{rel}:{','.join(_fmt(x) for x in v)}" for v in vals]
    if not meta["key"] and labels:
        order = np.argsort(df["id"].to_numpy(), kind="stable")
        seen: dict[str, int] = {}
        for i in order:
            n = seen.get(labels[i], 0)
            seen[labels[i]] = n + 1
            if n:
                labels[i] = f"{labels[i]}#{n + 1}"
    nodes = pd.DataFrame(
        {
            "id": df["id"].astype("int64"),
            "kind": "p",
            "label": labels,
            "seg": seg,
            "value": None,
            "relation": rel,
            "tuple": [json.dumps(dict(zip(cols, v)), default=str) for v in vals],
        }
    )
    return nodes, _edges([], [])


def _edges(src: Any, dst: Any) -> pd.DataFrame:
    return pd.DataFrame({"src": np.asarray(src, dtype="int64"), "dst": np.asarray(dst, dtype="int64")})


def _nodes(ids: Any, kind: str, label: Any, seg: int, value: Any = None) -> pd.DataFrame:
    ids = np.asarray(ids, dtype="int64")
    return pd.DataFrame({"id": ids, "kind": kind, "label": label, "seg": seg, "value": value, "relation": None, "tuple": None})


def _group(seg: int, meta: dict[str, Any], tables: dict[str, pa.Table]) -> tuple[pd.DataFrame, pd.DataFrame]:
    m = tables["members"].to_pandas()
    k = int(meta["k"])
    aggs = list(meta.get("aggregates", []))
    fcols = [f"__lp_f{i}" for i in range(k)]
    vcols = [f"v{n}" for n in range(len(aggs))]
    m = m.sort_values(["g", "m", *fcols, *vcols], kind="stable", na_position="first").reset_index(drop=True)
    node_parts = [_nodes(np.unique(m["g"].to_numpy()), "p", meta["label"], seg)]
    edge_parts = [_edges(m["m"].to_numpy(), m["g"].to_numpy())]  # member -> δ (one per row)
    # · nodes for members with several non-zero factors
    if k > 1:
        f = m[fcols].to_numpy()
        multi = (f != 0).sum(axis=1) > 1
        if multi.any():
            dots = m.loc[multi, ["m", *fcols]].drop_duplicates("m")
            node_parts.append(_nodes(dots["m"].to_numpy(), "p", "·", seg))
            fd = dots[fcols].to_numpy()
            mids = np.repeat(dots["m"].to_numpy(), k)
            flat = fd.reshape(-1)
            keep = flat != 0
            edge_parts.append(_edges(flat[keep], mids[keep]))
    if aggs:
        groups = tables["groups"].to_pandas()
        for n, label in enumerate(aggs):
            node_parts.append(_nodes(groups[f"a{n}"].to_numpy(), "v", label, seg, list(groups[f"r{n}"])))
            gmap = dict(zip(groups["g"].to_numpy().tolist(), groups[f"a{n}"].to_numpy().tolist()))
            vals = m[f"v{n}"]
            present = vals.notna().to_numpy()
            rows = np.nonzero(present)[0]
            base = np.int64(seg) << np.int64(SEGMENT_SHIFT)
            slot = rows.astype("int64") * len(aggs) + n
            tensor_ids = base | (2 * slot)
            value_ids = base | (2 * slot + 1)
            vv = list(vals[present])
            node_parts.append(_nodes(tensor_ids, "v", "⊗", seg))
            node_parts.append(_nodes(value_ids, "v", [_fmt(x) for x in vv], seg, vv))
            agg_ids = np.array([gmap[g] for g in m["g"].to_numpy()[rows].tolist()], dtype="int64")
            edge_parts += [
                _edges(m["m"].to_numpy()[rows], tensor_ids),
                _edges(value_ids, tensor_ids),
                _edges(tensor_ids, agg_ids),
            ]
    return pd.concat(node_parts, ignore_index=True), pd.concat(edge_parts, ignore_index=True)


def _rownode(seg: int, meta: dict[str, Any], t: pa.Table) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = t.to_pandas().drop_duplicates("id").sort_values("id", kind="stable")
    values = [json.loads(v)["v"] if v is not None else None for v in df["value"]]
    nodes = _nodes(df["id"].to_numpy(), meta["kind"], meta["label"], seg, values)
    src, dst = [], []
    for nid, kids in zip(df["id"].tolist(), df["children"]):
        for c in kids if kids is not None else []:
            src.append(c)
            dst.append(nid)
    return nodes, _edges(src, dst)


def expand_segments(segments: list[tuple[dict[str, Any], dict[str, pa.Table]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Nodes and edges of a graph from ``[(header, tables)]`` as the builder collects them."""
    node_parts, edge_parts = [], []
    for header, tables in segments:
        seg, kind, meta = int(header["seg"]), header["kind"], header["meta"]
        if kind == "base":
            n, e = _base(seg, meta, tables["tuples"])
        elif kind == "group":
            n, e = _group(seg, meta, tables)
        elif kind == "rownode":
            n, e = _rownode(seg, meta, tables["nodes"])
        else:
            raise StoreError(f"unknown segment kind {kind!r} in segment {seg}; written by a newer lipspark?")
        node_parts.append(n)
        edge_parts.append(e)
    nodes = pd.concat(node_parts, ignore_index=True) if node_parts else pd.DataFrame(columns=NODE_COLUMNS)
    edges = pd.concat(edge_parts, ignore_index=True) if edge_parts else _edges([], [])
    nodes = nodes.drop_duplicates(["id", "kind", "label"]).reset_index(drop=True)
    dup = nodes["id"].duplicated(keep=False)
    if dup.any():
        clash = nodes.loc[dup].head(4).to_dict("records")
        raise StoreError(f"node id collision between different nodes: {clash}; please report this graph")
    return nodes, edges
