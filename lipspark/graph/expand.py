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
from lipspark.vocabulary import BASE_ID, Segment
from lipspark.vocabulary.ids import ROW_BITS, SEGMENT_SHIFT, aggregate_salt

__all__ = ["expand_segments", "NODE_COLUMNS"]

NODE_COLUMNS = ["id", "kind", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def _local(path: str, root: str | None) -> str:
    path = re.sub(r"^file:/+", "/", path)
    return path if os.path.isabs(path) or root is None else os.path.join(root, path)


def _read_files(files: list[dict[str, Any]], columns: list[str], what: str, root: str | None) -> pd.DataFrame:
    """Rows of ``files`` (checked unchanged) with ``__pos`` = file ordinal << ROW_BITS | row."""
    parts = []
    for i, f in enumerate(files):
        path = _local(f["path"], root)
        try:
            st = os.stat(path)
        except OSError as err:
            raise StoreError(f"{what}: its file {path} is gone; the graph refers to it") from err
        if st.st_size != f["size"] or st.st_mtime_ns != f["mtime_ns"]:
            raise StoreError(f"{what}: file {path} changed after the graph was captured (size or modification time differ)")
        t = pq.read_table(path, columns=columns).to_pandas(types_mapper=_NULLABLE.get)
        t["__pos"] = (np.int64(i) << np.int64(ROW_BITS)) | np.arange(len(t), dtype="int64")
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*columns, "__pos"])


def _read_source(seg: int, meta: dict[str, Any], root: str | None = None) -> pd.DataFrame:
    """Re-read a file-backed base relation; token ids are (file ordinal, row index)."""
    df = _read_files(meta["files"], list(meta["columns"]), f"base relation {meta['relation']!r}", root)
    df[BASE_ID] = (np.int64(seg) << np.int64(SEGMENT_SHIFT)) | df.pop("__pos").to_numpy(dtype="int64")
    return df


def _base(seg: int, meta: dict[str, Any], tables: dict[str, pa.Table], root: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = _read_source(seg, meta, root) if "files" in meta else tables["tuples"].to_pandas()
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
            "tuple": [json.dumps({c: _py(x) for c, x in zip(cols, v)}, default=str) for v in vals],
            "type": None,
        }
    )
    return nodes, _edges([], [])


def _edges(src: Any, dst: Any) -> pd.DataFrame:
    return pd.DataFrame({"src": np.asarray(src, dtype="int64"), "dst": np.asarray(dst, dtype="int64")})


def _nodes(ids: Any, kind: str, label: Any, seg: int, value: Any = None) -> pd.DataFrame:
    ids = np.asarray(ids, dtype="int64")
    return pd.DataFrame({"id": ids, "kind": kind, "label": label, "seg": seg, "value": value, "relation": None, "tuple": None, "type": None})


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
    needed = {f"x{a['arg']}" for a in aggs if a["arg"] is not None}
    for c in [*fcols, *sorted(needed)]:  # a segment with no rows was written without its columns
        if c not in m.columns:
            m[c] = pd.Series(pd.NA, index=m.index, dtype="object")
    xcols = sorted(c for c in m.columns if re.fullmatch(r"x\d+", c))
    m = m.sort_values(["g", "m", *fcols, *xcols], kind="stable", na_position="first").reset_index(drop=True)
    groups = np.unique(m["g"].to_numpy(dtype="int64"))
    if meta.get("group") is not None and meta["group"] not in groups:  # keyless aggregate over no rows
        groups = np.sort(np.append(groups, np.int64(meta["group"])))
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
        tensor_ids = base | (2 * slot + 2)  # ordinal 0 is the segment's own node (keyless group, black box)
        value_ids = base | (2 * slot + 3)
        member_vals = [1 if op == "Count" else _py(x) for x in vals[present].tolist()]
        node_parts.append(_nodes(tensor_ids, "v", "⊗", seg))
        vcol = agg.get("vnode")
        # a Count pairs each member with 1, never with its argument's value
        has_own = m[vcol].notna().to_numpy()[rows] if vcol in m.columns and op != "Count" else np.zeros(len(rows), dtype=bool)
        if has_own.any():  # the value is a v-node of its own (an aggregate, a black box's result)
            own_ids = m[vcol].to_numpy(dtype="int64", na_value=0)[rows][has_own]
            edge_parts.append(_edges(own_ids, tensor_ids[has_own]))
        fresh = ~has_own
        node_parts.append(_nodes(value_ids[fresh], "v", [_fmt(x) for x, f in zip(member_vals, fresh) if f], seg,
                                 [x for x, f in zip(member_vals, fresh) if f]))
        edge_parts += [
            _edges(m["m"].to_numpy()[rows], tensor_ids),
            _edges(value_ids[fresh], tensor_ids[fresh]),
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


def _fnz(df: pd.DataFrame, k: int) -> list[np.ndarray]:
    return [df[f"__lp_f{i}"].fillna(0).to_numpy(dtype="int64") for i in range(k)]


def _stored_p(desc: dict[str, Any], df: pd.DataFrame) -> np.ndarray:
    """The p-node of each stored tuple, by how its file was produced (see workflow.execution)."""
    scheme = desc["p"]
    base = np.int64(scheme["seg"]) << np.int64(SEGMENT_SHIFT)
    pos = df["__pos"].to_numpy(dtype="int64")
    if scheme["kind"] in ("token", "output"):
        return base | pos
    fs = _fnz(df, scheme["k"])
    if scheme["k"] == 1:
        return fs[0]
    nz = sum((f != 0).astype("int64") for f in fs)
    return np.where(nz == 1, sum(fs), base | pos)


def _with_tuples(nodes: pd.DataFrame, meta: dict[str, Any], df: pd.DataFrame, data_cols: list[str]) -> pd.DataFrame:
    """Tag input, state and output nodes with their relation and the tuple's values."""
    nodes["relation"] = meta.get("relation")
    if data_cols:
        rows = df[data_cols].astype(object).where(df[data_cols].notna(), None).to_dict("records")
        nodes["tuple"] = [json.dumps(r, default=str) for r in rows]
    return nodes


def _boundary(seg: int, meta: dict[str, Any], root: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Module input (i), state (s), output (o) and collapse (·) nodes of a stored relation."""
    desc, kind = meta["source"], meta["type"]
    k = desc["p"].get("k", 0)
    col = meta.get("column")
    cols = [f"__lp_f{i}" for i in range(k)] if desc["p"]["kind"] == "collapse" or kind in ("o", "collapse") else []
    if col is not None:
        cols += [f"__lp_v_{col}", col]
    data_cols: list[str] = []
    if desc["files"] and kind in ("i", "s", "o") and col is None:
        schema = pq.read_schema(_local(desc["files"][0]["path"], root))
        data_cols = [c for c in schema.names if not c.startswith("__lp_")]
    df = _read_files(desc["files"], [*cols, *[c for c in data_cols if c not in cols]], f"relation {meta.get('relation')!r}", root)
    ids = (np.int64(seg) << np.int64(SEGMENT_SHIFT)) | df["__pos"].to_numpy(dtype="int64")
    inv = np.int64(meta["invocation"])
    if col is not None:  # a value crossing the boundary: v-node · of the value's node and the invocation
        stored = df[f"__lp_v_{col}"]
        keep = stored.notna().to_numpy()
        if kind in ("i", "s"):
            vseg = desc["values"][col]
            child = (np.int64(vseg) << np.int64(SEGMENT_SHIFT)) | df["__pos"].to_numpy(dtype="int64") if vseg is not None else stored.fillna(0).to_numpy(dtype="int64")
        else:
            child = stored.fillna(0).to_numpy(dtype="int64")
        ids, child = ids[keep], child[keep]
        ntype = "o" if kind == "vo" else kind
        values = [_py(x) for x in df[col][keep].tolist()] if col in df.columns else None
        nodes = _nodes(ids, "v", "·", seg, values)
        nodes["relation"] = meta.get("relation")
        nodes["type"] = ntype
        nodes["column"] = col
        return nodes, pd.concat([_edges(child, ids), _edges(np.full(len(ids), inv), ids)], ignore_index=True)
    if kind in ("i", "s"):
        p = _stored_p(desc, df)
        nodes = _with_tuples(_nodes(ids, "p", "·", seg), meta, df, data_cols)
        nodes["type"] = kind
        return nodes, pd.concat([_edges(p, ids), _edges(np.full(len(ids), inv), ids)], ignore_index=True)
    fs = _fnz(df, k)
    if kind == "collapse":
        nz = sum((f != 0).astype("int64") for f in fs) if fs else np.zeros(len(df), dtype="int64")
        keep = nz > 1
        ids = ids[keep]
        fs = [f[keep] for f in fs]
        nodes = _nodes(ids, "p", "·", seg)
        inv_edges = _edges([], [])
    else:
        nodes = _with_tuples(_nodes(ids, "p", "·", seg), meta, df, data_cols)
        nodes["type"] = "o"
        inv_edges = _edges(np.full(len(ids), inv), ids)
    src = np.concatenate(fs) if fs else np.array([], dtype="int64")
    dst = np.concatenate([ids] * len(fs)) if fs else np.array([], dtype="int64")
    keep = src != 0
    return nodes, pd.concat([_edges(src[keep], dst[keep]), inv_edges], ignore_index=True)


def expand_segments(segments: list[tuple[dict[str, Any], dict[str, pa.Table]]], root: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Nodes and edges of a graph from ``[(header, tables)]`` as the builder collects them.

    ``root`` resolves relative file paths (a workflow store's directory).
    """
    node_parts, edge_parts = [], []
    for header, tables in segments:
        if isinstance(header, Segment):  # typed, as GraphBuilder.collect gives them
            header = header.to_json()
        seg, kind, meta = int(header["seg"]), header["kind"], header["meta"]
        if kind == "base":
            n, e = _base(seg, meta, tables, root)
            if meta.get("type"):
                n["type"] = meta["type"]
        elif kind == "boundary":
            n, e = _boundary(seg, meta, root)
        elif kind == "invocation":
            n, e = _nodes([np.int64(seg) << np.int64(SEGMENT_SHIFT)], "p", meta["label"], seg), _edges([], [])
            n["type"] = "m"
        elif kind == "group":
            n, e = _group(seg, meta, tables)
        elif kind == "rownode":
            n, e = _rownode(seg, meta, tables["nodes"])
        else:
            raise StoreError(f"unknown segment kind {kind!r} in segment {seg}; written by a newer lipspark?")
        for attr in ("module", "node", "execution", "invocation"):
            n[attr] = meta.get(attr)
        node_parts.append(n)
        edge_parts.append(e)
    nodes = pd.concat(node_parts, ignore_index=True) if node_parts else pd.DataFrame(columns=NODE_COLUMNS)
    nodes = nodes.reindex(columns=NODE_COLUMNS)
    edges = pd.concat(edge_parts, ignore_index=True) if edge_parts else _edges([], [])
    nodes = nodes.drop_duplicates(["id", "kind", "label"]).reset_index(drop=True)
    dup = nodes["id"].duplicated(keep=False)
    if dup.any():
        clash = nodes.loc[dup].head(4).to_dict("records")
        raise StoreError(f"node id collision between different nodes: {clash}; please report this graph")
    return nodes, edges
