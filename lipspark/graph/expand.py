"""Expanding recorded segments into explicit p-nodes, v-nodes and edges.

The builder stores each operation compactly (see :mod:`lipspark.graph.builder`); this module
turns those tables into the graph of the paper: a node table (``id``, ``kind`` p/v, ``label``,
``seg``, ``value``, ``relation``, ``tuple``) and an edge table (``src`` → ``dst``, a multiset:
a group with the same row twice has two edges from it). Implied nodes (⊗ and the aggregated
values) are numbered after a canonical sort, so expansion is deterministic.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from lipspark.errors import StoreError
from lipspark.graph.builder import BASE_ID, ROW_BITS, SEGMENT_SHIFT, aggregate_salt

__all__ = ["expand_segments", "NODE_COLUMNS"]

NODE_COLUMNS = ["id", "kind", "label", "seg", "value", "relation", "tuple"]


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def _read_source(seg: int, meta: dict[str, Any]) -> pd.DataFrame:
    """Re-read a file-backed base relation; ids are (file ordinal, row index)."""
    cols = meta["columns"]
    parts = []
    for i, f in enumerate(meta["files"]):
        path = re.sub(r"^file:/+", "/", f["path"])
        try:
            st = os.stat(path)
        except OSError as err:
            raise StoreError(f"base relation {meta['relation']!r}: its file {path} is gone; the graph refers to it") from err
        if st.st_size != f["size"] or st.st_mtime_ns != f["mtime_ns"]:
            raise StoreError(
                f"base relation {meta['relation']!r}: file {path} changed after the graph was captured "
                "(size or modification time differ); its tokens can no longer be read"
            )
        t = pq.read_table(path, columns=cols).to_pandas()
        t[BASE_ID] = (np.int64(seg) << np.int64(SEGMENT_SHIFT)) | (np.int64(i) << np.int64(ROW_BITS)) | np.arange(len(t), dtype="int64")
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[BASE_ID, *cols])


def _base(seg: int, meta: dict[str, Any], tables: dict[str, pa.Table]) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = _read_source(seg, meta) if "files" in meta else tables["tuples"].to_pandas()
    cols = meta["columns"]
    rel = meta["relation"]
    vals = [tuple(r) for r in df[cols].itertuples(index=False, name=None)] if len(df) else []
    labels = [f"{rel}:{','.join(_fmt(x) for x in v)}" for v in vals]
    if not meta["key"] and labels:
        order = np.argsort(df[BASE_ID].to_numpy(), kind="stable")
        seen: dict[str, int] = {}
        for i in order:
            n = seen.get(labels[i], 0)
            seen[labels[i]] = n + 1
            if n:
                labels[i] = f"{labels[i]}#{n + 1}"
    nodes = pd.DataFrame(
        {
            "id": df[BASE_ID].astype("int64"),
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


_NULLABLE = {
    pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(),
}


def _py(v: Any) -> Any:
    """A plain Python scalar (numpy and pandas scalars unwrapped, NA as None)."""
    if v is None or v is pd.NA:
        return None
    return v.item() if hasattr(v, "item") else v


def _aggregate(op: str, values: pd.Series, literal: bool) -> Any:
    vals = values.dropna()
    if op == "Count":
        return int(len(values) if literal else len(vals))
    if vals.empty:
        return None
    if op == "Sum":
        return _py(vals.sum())
    if op == "Min":
        return _py(vals.min())
    if op == "Max":
        return _py(vals.max())
    return float(vals.astype("float64").mean())


def _group(seg: int, meta: dict[str, Any], tables: dict[str, pa.Table]) -> tuple[pd.DataFrame, pd.DataFrame]:
    m = tables["members"].to_pandas(types_mapper=_NULLABLE.get)
    k = int(meta["k"])
    aggs = list(meta.get("aggregates", []))
    fcols = [f"__lp_f{i}" for i in range(k)] if k > 1 else []
    xcols = sorted(c for c in m.columns if re.fullmatch(r"x\d+", c))
    m = m.sort_values(["g", "m", *fcols, *xcols], kind="stable", na_position="first").reset_index(drop=True)
    groups = np.unique(m["g"].to_numpy())
    node_parts = [_nodes(groups, "p", meta["label"], seg)]
    edge_parts = [_edges(m["m"].to_numpy(), m["g"].to_numpy())]  # member -> δ (one per row)
    # · nodes for members with several non-zero factors
    if fcols:
        f = m[fcols].to_numpy()
        multi = (f != 0).sum(axis=1) > 1
        if multi.any():
            dots = m.loc[multi, ["m", *fcols]].drop_duplicates("m")
            node_parts.append(_nodes(dots["m"].to_numpy(), "p", "·", seg))
            fd = dots[fcols].to_numpy()
            mids = np.repeat(dots["m"].to_numpy(), len(fcols))
            flat = fd.reshape(-1)
            keep = flat != 0
            edge_parts.append(_edges(flat[keep], mids[keep]))
    base = np.int64(seg) << np.int64(SEGMENT_SHIFT)
    for n, agg in enumerate(aggs):
        op, arg = agg["op"], agg["arg"]
        literal = arg is None
        vals = pd.Series(1, index=m.index) if literal else m[f"x{arg}"]
        agg_ids = groups ^ np.int64(aggregate_salt(n))
        results = vals.groupby(m["g"], sort=True).apply(lambda v, op=op: _aggregate(op, v, literal)) if len(m) else pd.Series([], dtype=object)
        node_parts.append(_nodes(agg_ids, "v", op, seg, [results.get(g) for g in groups.tolist()]))
        present = vals.notna().to_numpy()
        rows = np.nonzero(present)[0].astype("int64")
        slot = rows * len(aggs) + n
        tensor_ids = base | (2 * slot)
        value_ids = base | (2 * slot + 1)
        member_vals = [1 if op == "Count" else _py(x) for x in vals[present].tolist()]
        node_parts.append(_nodes(tensor_ids, "v", "⊗", seg))
        node_parts.append(_nodes(value_ids, "v", [_fmt(x) for x in member_vals], seg, member_vals))
        edge_parts += [
            _edges(m["m"].to_numpy()[rows], tensor_ids),
            _edges(value_ids, tensor_ids),
            _edges(tensor_ids, m["g"].to_numpy()[rows] ^ np.int64(aggregate_salt(n))),
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
            n, e = _base(seg, meta, tables)
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
