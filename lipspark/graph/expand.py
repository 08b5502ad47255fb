"""Expanding recorded segments into explicit p-nodes, v-nodes and edges.

Capture stores each operation compactly (a typed :class:`~lipspark.vocabulary.Segment` and its
Arrow tables, see ``docs/graph-format.md``); this module turns them into the graph of the paper:
a node table (``id``, ``kind`` p/v, ``op``, ``label``, ``seg``, ``value``, ``relation``,
``tuple``, ``type``, the recording context and ``column``) and an edge table (``src`` → ``dst``,
a multiset: a group with the same row twice has two edges from it). Every node's ``op`` (an
:class:`~lipspark.vocabulary.Op` code) says what it computes; its label is for display. Implied
nodes (⊗ and the aggregated values) are numbered after a canonical sort, so expansion is
deterministic, and aggregate values are :func:`lipspark.vocabulary.aggregate` of the members.

>>> import pyarrow as pa
>>> from lipspark.vocabulary import AggregateSpec, BaseSegment, Context, GroupSegment, Op
>>> from lipspark.vocabulary.ids import positional
>>> r = BaseSegment(1, Context(), relation="R", key=("k",), columns=("k",))
>>> tuples = pa.table({"__lp_id": [positional(1, 0), positional(1, 1)], "k": ["a", "b"]})
>>> grp = GroupSegment(2, Context(), op=Op.DELTA, label="δ", aggregates=(AggregateSpec(Op.SUM, 0, "s"),))
>>> members = pa.table({"g": [7, 7], "m": [positional(1, 0), positional(1, 1)], "x0": [2, None]})
>>> nodes, edges = expand_segments([(r, {"tuples": tuples}), (grp, {"members": members})])
>>> [(Op(o).name, lab, v) for o, lab, v in nodes[["op", "label", "value"]].itertuples(index=False)]
[('TOKEN', 'R:a', None), ('TOKEN', 'R:b', None), ('DELTA', 'δ', None), ('SUM', 'Sum', 2), ('TENSOR', '⊗', None), ('CONSTANT', '2', 2)]
>>> len(edges)
5
"""
from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from lipspark.vocabulary.columns import PREFIX, bag_col, factor, value_col
from lipspark.errors import StoreError
from lipspark.vocabulary import (
    AggregateSpec,
    BaseSegment,
    BoundarySegment,
    FileRef,
    GroupSegment,
    InvocationSegment,
    MonusSegment,
    Op,
    RelationDescriptor,
    RowNodeSegment,
    Segment,
    aggregate,
    arithmetic,
)
from lipspark.store.manifest import checked_path, local_path
from lipspark.vocabulary.tokens import token_labels
from lipspark.vocabulary.ids import MINUEND, SUBTRAHEND, aggregate_ids, file_position, member_ids, member_value_ids, monus_part_ids, positional, tensor_ids

__all__ = ["concat_frames", "expand_segments", "RelationReads", "tuple_json", "json_value", "local_path", "NODE_COLUMNS", "TOKEN_ID", "Tables", "Nodes"]


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate node or edge frames (positional index). Columns that are all null in some
    parts (a ``value`` column of None) take their dtype from the other parts, as pandas 2 and 3
    both do for these frames; pandas 2's notice that its rule changes in 3 is not for users."""
    kept = [f for f in frames if len(f)] or frames[:1]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA", category=FutureWarning)
        return pd.concat(kept, ignore_index=True)

#: The columns of an expanded node table, in order.
NODE_COLUMNS = ["id", "kind", "op", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]
#: Column holding the token id in a base segment's ``tuples`` table.
TOKEN_ID = f"{PREFIX}id"

#: A segment's Arrow tables by name (``tuples``, ``members``, ``nodes``).
Tables = Mapping[str, pa.Table]
#: Nodes and edges of one segment.
Nodes = tuple[pd.DataFrame, pd.DataFrame]

_NULLABLE = {
    pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(),
}


# ---------------------------------------------------------------------------------- helpers


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def _py(v: Any) -> Any:
    """A plain Python scalar (numpy and pandas scalars unwrapped, NA as None)."""
    if v is None or v is pd.NA:
        return None
    return v.item() if hasattr(v, "item") else v


def _edges(src: Any, dst: Any) -> pd.DataFrame:
    return pd.DataFrame({"src": np.asarray(src, dtype="int64"), "dst": np.asarray(dst, dtype="int64")})


def _nodes(ids: Any, kind: str, op: Op, label: Any, seg: int, value: Any = None) -> pd.DataFrame:
    ids = np.asarray(ids, dtype="int64")
    return pd.DataFrame({"id": ids, "kind": kind, "op": np.full(len(ids), int(op), dtype=np.int8), "label": label, "seg": seg,
                         "value": value, "relation": None, "tuple": None, "type": None})


def _read_table(files: Sequence[FileRef], columns: list[str] | None, what: str, root: str | None) -> pa.Table | None:
    """Rows of ``files`` (checked unchanged) with ``__pos``, the row's ordinal (file, row);
    ``None`` for no files. ``columns``: ``None`` for all."""
    parts = []
    for i, f in enumerate(files):
        path = checked_path(f, what, root)
        try:
            t = pq.read_table(path, columns=columns)
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise StoreError(f"{what}: file {path} cannot be read ({type(err).__name__}); it is damaged: "
                             "`lipspark check` lists every damaged file") from None
        pos = file_position(np.full(t.num_rows, i, dtype=np.int64), np.arange(t.num_rows, dtype=np.int64))
        parts.append(t.append_column("__pos", pa.array(pos, pa.int64())))
    return pa.concat_tables(parts, promote_options="default") if parts else None


def _read_files(files: Sequence[FileRef], columns: list[str] | None, what: str, root: str | None) -> pd.DataFrame:
    """Rows of ``files`` (checked unchanged) with ``__pos``, the row's ordinal (file, row)."""
    t = _read_table(files, columns, what, root)
    return concat_frames([t.to_pandas(types_mapper=_NULLABLE.get)]) if t is not None else pd.DataFrame(columns=[*(columns or []), "__pos"])


# ---------------------------------------------------------------------------------- base and invocation


def _base_rows(s: BaseSegment, tables: Tables, root: str | None) -> pa.Table | None:
    """The base tuples with their token ids: re-read from their files, or the ``tuples`` table."""
    if s.files is None:
        return tables["tuples"]
    t = _read_table(s.files, list(s.columns), f"base relation {s.relation!r}", root)
    if t is None:
        return None
    ids = positional(s.seg, t.column("__pos").to_numpy())
    return t.drop_columns(["__pos"]).append_column(TOKEN_ID, pa.array(ids, pa.int64()))


def _base(s: BaseSegment, tables: Tables, root: str | None) -> Nodes:
    """One token per base tuple, labelled by :func:`~lipspark.vocabulary.tokens.token_labels` of
    its key (or, without one, all its values; nulls distinct from every value, repeated values
    numbered in token order), its ``tuple`` the columns it keeps (the key and those kept besides)."""
    t = _base_rows(s, tables, root)
    cols = list(s.columns)
    vals: list[tuple[Any, ...]] = []
    if t is None or not t.num_rows:
        ids = np.array([], dtype="int64")
    else:
        t = t.take(pa.array(np.argsort(t.column(TOKEN_ID).to_numpy(), kind="stable")))  # token order: row order
        ids = t.column(TOKEN_ID).to_numpy()
        vals = list(zip(*[t.column(c).to_pylist() for c in cols])) if cols else [()] * t.num_rows
    at = [cols.index(k) for k in s.key] if s.key else list(range(len(cols)))
    nodes = _nodes(ids, "p", Op.TOKEN, token_labels(s.relation, [tuple(v[i] for i in at) for v in vals]), s.seg)
    nodes["relation"] = s.relation
    nodes["tuple"] = [json.dumps(dict(zip(cols, v)), default=str) for v in vals]
    nodes["type"] = s.type
    return nodes, _edges([], [])


def _invocation(s: InvocationSegment) -> Nodes:
    nodes = _nodes([positional(s.seg, 0)], "p", Op.INVOCATION, s.label, s.seg)
    nodes["type"] = "m"
    return nodes, _edges([], [])


# ---------------------------------------------------------------------------------- groups


def _members(s: GroupSegment, table: pa.Table) -> pd.DataFrame:
    """The members table in canonical order, with ``__null_x<i>`` marking null arguments (from
    Arrow: NaN is a value, not a null, and pandas would not tell them apart)."""
    fcols = [factor(i) for i in range(s.k)] if s.k > 1 else []
    needed = {f"x{a.arg}" for a in s.aggregates if a.arg is not None}
    m = table.to_pandas(types_mapper=_NULLABLE.get)
    xcols = sorted(set(c for c in m.columns if re.fullmatch(r"x\d+", c)) | needed)
    for c in xcols:
        m[f"__null_{c}"] = table.column(c).is_null().to_numpy(zero_copy_only=False) if c in table.column_names else True
    # what version 3 added sorts last, so version-2 graphs keep their canonical order (and ids)
    later = sorted({c for a in s.aggregates for c in (*a.reads, a.distinct) if c is not None})
    own = sorted({a.vnode for a in s.aggregates if a.vnode is not None})
    for c in [*fcols, *xcols, *later, *own]:  # a segment with no rows was written without its columns
        if c not in m.columns:
            m[c] = pd.Series(pd.NA, index=m.index, dtype="Int64" if c in later or c in own else "object")
    keys = ["g", "m", *fcols, *xcols, *[f"__null_{c}" for c in xcols], *later]
    return m.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def _groups(s: GroupSegment, m: pd.DataFrame) -> np.ndarray:
    """The group node ids (a keyless aggregate has its group even over no rows)."""
    groups = np.unique(m["g"].to_numpy(dtype="int64"))
    if s.group is not None and s.group not in groups:
        groups = np.sort(np.append(groups, np.int64(s.group)))
    return groups


def _member_products(s: "GroupSegment | MonusSegment", m: pd.DataFrame) -> Nodes:
    """· nodes for members with several non-zero factors (the member rule), with their edges."""
    fcols = [factor(i) for i in range(s.k)] if s.k > 1 else []
    if not fcols or not len(m):
        return _nodes([], "p", Op.TIMES, "·", s.seg), _edges([], [])
    f = m[fcols].to_numpy(dtype="int64", na_value=0)
    multi = (f != 0).sum(axis=1) > 1
    dots = m.loc[multi, ["m", *fcols]].drop_duplicates("m")
    fd = dots[fcols].to_numpy(dtype="int64", na_value=0)
    mids = np.repeat(dots["m"].to_numpy(dtype="int64"), len(fcols))
    flat = fd.reshape(-1)
    keep = flat != 0
    return _nodes(dots["m"].to_numpy(), "p", Op.TIMES, "·", s.seg), _edges(flat[keep], mids[keep])


def _argument(m: pd.DataFrame, spec: AggregateSpec) -> tuple[list[Any], np.ndarray]:
    """Each member's argument value (Python scalars, None for null) and which take part: not
    null, and for a DISTINCT aggregate with a δ id (null when any argument is null)."""
    if spec.arg is None:  # count(*), count(lit): every member takes part with 1
        values: list[Any] = [1] * len(m)
        present = np.ones(len(m), dtype=bool)
    else:
        col = f"x{spec.arg}"
        null = m[f"__null_{col}"].to_numpy(dtype=bool)
        raw = m[col].astype(object).tolist()
        values, present = [None if n else _py(v) for v, n in zip(raw, null)], ~null
    if spec.distinct is not None:
        present = present & m[spec.distinct].notna().to_numpy()
    return values, present


def _read_ids(m: pd.DataFrame, spec: AggregateSpec, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges (v-node → row index) from the v-nodes an argument reads (``vnode`` and ``reads``)
    of the members at ``rows``, skipping nulls (a member whose value has no v-node)."""
    src, dst = [], []
    for c in [c for c in (spec.vnode, *spec.reads) if c is not None and c in m.columns]:
        ids = m[c].to_numpy(dtype="int64", na_value=0)[rows]
        keep = m[c].notna().to_numpy()[rows]
        src.append(ids[keep])
        dst.append(np.flatnonzero(keep))
    if not src:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(src), np.concatenate(dst).astype(np.int64)


def _value_nodes(s: GroupSegment, spec: AggregateSpec, ids: np.ndarray, values: list[Any]) -> pd.DataFrame:
    """New member value nodes: constants, or for an argument expression that reads v-nodes a
    black box labelled with the expression (its value is no constant: a what-if that changes
    what it reads makes it unknown)."""
    if spec.reads:
        return _nodes(ids, "v", Op.BLACK_BOX, spec.argument or "value", s.seg, values)
    return _nodes(ids, "v", Op.CONSTANT, [_fmt(x) for x in values], s.seg, values)


def _per_group(groups: np.ndarray, owner: np.ndarray, values: list[Any], op: Op) -> list[Any]:
    """The aggregate ``op`` of each group's values (``owner``: the group of each value, sorted)."""
    lo, hi = np.searchsorted(owner, groups, side="left"), np.searchsorted(owner, groups, side="right")
    return [aggregate(op, values[a:b]) for a, b in zip(lo.tolist(), hi.tolist())]


def _aggregate_nodes(s: GroupSegment, j: int, spec: AggregateSpec, m: pd.DataFrame, groups: np.ndarray) -> Nodes:
    """The j-th aggregate: per group a v-node of the aggregate's op over its members, a ⊗ per
    member with a non-null argument, paired with the argument's own v-node or a value node."""
    if spec.distinct is not None:
        return _distinct_nodes(s, j, spec, m, groups)
    values, present = _argument(m, spec)
    g = m["g"].to_numpy(dtype="int64")
    results = _per_group(groups, g, values, spec.op)
    agg = aggregate_ids(groups, j)
    rows = np.flatnonzero(present).astype("int64")
    slots = rows * len(s.aggregates) + j
    tensors, value_ids = tensor_ids(s.seg, slots), member_value_ids(s.seg, slots)
    # a Count pairs each member with 1, never with its argument's own v-node
    member_vals = [1 if spec.op is Op.COUNT else values[r] for r in rows.tolist()]
    vcol = spec.vnode
    if vcol is not None and vcol in m.columns and spec.op is not Op.COUNT:
        has_own = m[vcol].notna().to_numpy()[rows]
    else:
        has_own = np.zeros(len(rows), dtype=bool)
    fresh = ~has_own
    fresh_vals = [x for x, f in zip(member_vals, fresh) if f]
    node_parts = [
        _nodes(agg, "v", spec.op, spec.op.label, s.seg, results),
        _nodes(tensors, "v", Op.TENSOR, "⊗", s.seg),
        _value_nodes(s, spec, value_ids[fresh], fresh_vals),
    ]
    edge_parts = []
    if has_own.any():  # the value is a v-node of its own (an aggregate, a black box's result)
        own_ids = m[vcol].to_numpy(dtype="int64", na_value=0)[rows][has_own]
        edge_parts.append(_edges(own_ids, tensors[has_own]))
    if spec.reads:  # what the argument expression reads -> its value node
        fresh_rows = rows[fresh]
        src, at = _read_ids(m, replace(spec, vnode=None), fresh_rows)
        edge_parts.append(_edges(src, value_ids[fresh][at]))
    edge_parts += [
        _edges(m["m"].to_numpy(dtype="int64")[rows], tensors),
        _edges(value_ids[fresh], tensors[fresh]),
        _edges(tensors, aggregate_ids(g[rows], j)),
    ]
    return concat_frames(node_parts), concat_frames(edge_parts)


def _distinct_nodes(s: GroupSegment, j: int, spec: AggregateSpec, m: pd.DataFrame, groups: np.ndarray) -> Nodes:
    """A DISTINCT aggregate ``Σ_v δ(Σ members with value v) ⊗ v``: per group and distinct
    value a δ p-node (id from the members table, an edge from each member with that value), a ⊗
    pairing it with the value (1 for a Count) and an edge to the aggregate. The ⊗ and value
    ids are those of the value's first member's slot. Deleting every member with a value
    removes its δ and so its ⊗; deleting some of them changes nothing."""
    assert spec.distinct is not None
    values, present = _argument(m, spec)
    rows = np.flatnonzero(present).astype("int64")
    d = m[spec.distinct].to_numpy(dtype="int64", na_value=0)[rows]
    deltas, first, run = np.unique(d, return_index=True, return_inverse=True)
    order = np.argsort(rows[first], kind="stable")  # runs in canonical member order
    deltas, first = deltas[order], first[order]
    run = np.argsort(order)[run]
    firsts = rows[first]
    g = m["g"].to_numpy(dtype="int64")
    slots = firsts * len(s.aggregates) + j
    tensors, value_ids = tensor_ids(s.seg, slots), member_value_ids(s.seg, slots)
    run_vals = [1 if spec.op is Op.COUNT else values[r] for r in firsts.tolist()]
    by_group = np.argsort(g[firsts], kind="stable")
    results = _per_group(groups, g[firsts][by_group], [run_vals[i] for i in by_group.tolist()], spec.op)
    if spec.vnode is not None or spec.reads:  # the values are themselves v-nodes: a black box over them
        values_part = _nodes(value_ids, "v", Op.BLACK_BOX, spec.argument or "value", s.seg, run_vals)
        src, at = _read_ids(m, spec, rows)
        read_edges = _edges(src, value_ids[run[at]])
    else:
        values_part, read_edges = _value_nodes(s, spec, value_ids, run_vals), _edges([], [])
    nodes = concat_frames([
        _nodes(aggregate_ids(groups, j), "v", spec.op, spec.op.label, s.seg, results),
        _nodes(deltas, "p", Op.DELTA, Op.DELTA.label, s.seg),
        _nodes(tensors, "v", Op.TENSOR, "⊗", s.seg),
        values_part,
    ])
    edges = concat_frames([
        _edges(m["m"].to_numpy(dtype="int64")[rows], d),  # member -> the δ of its value
        _edges(deltas, tensors),
        _edges(value_ids, tensors),
        _edges(tensors, aggregate_ids(g[firsts], j)),
        read_edges,
    ])
    return nodes, edges


def _black_box_nodes(s: GroupSegment, j: int, spec: AggregateSpec, m: pd.DataFrame, groups: np.ndarray,
                     values: Mapping[int, Mapping[str, Any]]) -> Nodes:
    """A black-box aggregate (no ⊗ form): per group a v-node labelled with the function, valued
    as Spark computed it, with an edge from every member and every v-node its argument reads;
    for an expression over aggregates, from the group's node and those aggregates' v-nodes."""
    assert spec.label is not None and spec.value is not None
    ids = aggregate_ids(groups, j)
    recorded = [values.get(int(gid), {}).get(spec.value) for gid in groups.tolist()]
    nodes = _nodes(ids, "v", Op.BLACK_BOX, spec.label, s.seg, recorded)
    if spec.inputs:
        kids = [groups, *(aggregate_ids(groups, i) for i in spec.inputs)]
        return nodes, concat_frames([_edges(k, ids) for k in kids])
    g = m["g"].to_numpy(dtype="int64")
    rows = np.arange(len(m), dtype=np.int64)
    src, at = _read_ids(m, spec, rows)
    return nodes, concat_frames([_edges(m["m"].to_numpy(dtype="int64"), aggregate_ids(g, j)),
                                 _edges(src, aggregate_ids(g[at], j))])


def _formula_nodes(s: GroupSegment, j: int, spec: AggregateSpec, groups: np.ndarray,
                   values: Mapping[int, Mapping[str, Any]], per_group: list[list[Any]]) -> Nodes:
    """A formula's node over aggregates (:class:`~lipspark.vocabulary.AggregateSpec`): per group
    an arithmetic v-node with an edge from each input's v-node (and, for the formula's root,
    from the group's node), or a CONSTANT v-node. The root is valued as Spark computed it, the
    others from their inputs' values (:func:`~lipspark.vocabulary.arithmetic`)."""
    ids = aggregate_ids(groups, j)
    if spec.op is Op.CONSTANT:
        return _nodes(ids, "v", Op.CONSTANT, spec.label or _fmt(spec.constant), s.seg, [spec.constant] * len(groups)), _edges([], [])
    if any(i >= j for i in spec.inputs):
        raise StoreError(f"formula node {spec.column!r} of segment {s.seg} reads aggregates {list(spec.inputs)}, not all "
                         "before it; the graph is corrupt")
    if spec.value:
        computed = [values.get(int(gid), {}).get(spec.value) for gid in groups.tolist()]
    else:
        computed = [arithmetic(spec.op, [per_group[i][n] for i in spec.inputs]) for n in range(len(groups))]
    kids = [aggregate_ids(groups, i) for i in spec.inputs] + ([groups] if spec.value else [])
    return (_nodes(ids, "v", spec.op, spec.label or spec.op.label, s.seg, computed),
            concat_frames([_edges(k, ids) for k in kids]))


def json_value(text: Any) -> Any:
    """A value stored as JSON by capture: ``{"v": value}`` (Spark's ``to_json`` leaves a null
    out: ``{}``), or for a floating-point value ``{"d": "<Spark's text of it>"}``, which keeps
    NaN and the infinities numbers (JSON has no spelling for them).

    >>> json_value('{"v": [1, 2]}'), json_value('{}'), json_value('{"d": "NaN"}'), json_value(None)
    ([1, 2], None, nan, None)
    """
    if text is None:
        return None
    obj = json.loads(text)
    if obj.get("d") is not None:
        return float(obj["d"])
    return obj.get("v")


def _values(table: pa.Table | None) -> dict[int, dict[str, Any]]:
    """The ``values`` table of a group segment: per group id, each black-box aggregate's value."""
    if table is None or not table.num_rows:
        return {}
    cols = [c for c in table.column_names if c != "g"]
    data = {c: table.column(c).to_pylist() for c in cols}
    return {int(gid): {c: json_value(data[c][i]) for c in cols} for i, gid in enumerate(table.column("g").to_pylist())}


def _group(s: GroupSegment, tables: Tables) -> Nodes:
    """A group-by, distinct, cogroup or relation-level black box (see :class:`GroupSegment`)."""
    m = _members(s, tables["members"])
    groups = _groups(s, m)
    if s.group is not None and s.op is Op.DELTA:
        # a keyless aggregate: SQL returns its one row over any input, no rows included, so no
        # deletion removes it: its annotation is 1 (an empty product), not δ(Σ members), and its
        # members reach it through its aggregates' ⊗ nodes, whose values a what-if recomputes
        node_parts = [_nodes(groups, "p", Op.TIMES, "1", s.seg)]
        edge_parts = [_edges([], [])]
    else:
        node_parts = [_nodes(groups, "p", s.op, s.label, s.seg)]
        edge_parts = [_edges(m["m"].to_numpy(dtype="int64"), m["g"].to_numpy(dtype="int64"))]  # member -> group, one per row
    if any(a.black_box or a.value for a in s.aggregates) and "values" not in tables:
        raise StoreError(f"group segment {s.seg} has black-box aggregates or formulas but no values table; the graph is corrupt")
    values = _values(tables.get("values"))
    parts = [_member_products(s, m)]
    per_group: list[list[Any]] = []  # each aggregate's value per group (in the order of `groups`): a formula's inputs
    formulas = any(a.op.is_arithmetic for a in s.aggregates)
    for j, spec in enumerate(s.aggregates):
        if spec.op.is_arithmetic or spec.op is Op.CONSTANT:
            parts.append(_formula_nodes(s, j, spec, groups, values, per_group))
        elif spec.black_box:
            parts.append(_black_box_nodes(s, j, spec, m, groups, values))
        else:
            parts.append(_aggregate_nodes(s, j, spec, m, groups))
        if formulas:  # its v-nodes come first, one per group
            per_group.append(parts[-1][0]["value"].iloc[: len(groups)].tolist())
    for n, e in parts:
        node_parts.append(n)
        edge_parts.append(e)
    return concat_frames(node_parts), concat_frames(edge_parts)


# ---------------------------------------------------------------------------------- row nodes


def _rownode(s: RowNodeSegment, tables: Tables) -> Nodes:
    """Nodes made per row (value-level black boxes, conditions, the nodes of a filter's condition
    over values and the · of the rows it kept), one per distinct id, with their children's edges."""
    df = tables["nodes"].to_pandas().drop_duplicates("id").sort_values("id", kind="stable")
    values = [json_value(v) for v in df["value"]]  # {"v": ...}; Spark's to_json leaves a null out: {}
    if s.op is Op.CONSTANT:  # a constant's label is its value
        nodes = _nodes(df["id"].to_numpy(), s.node_kind, s.op, [_fmt(v) for v in values], s.seg, values)
    else:
        nodes = _nodes(df["id"].to_numpy(), s.node_kind, s.op, s.label, s.seg, values if s.node_kind == "v" else None)
    src, dst = [], []
    for nid, kids in zip(df["id"].tolist(), df["children"]):
        for c in kids if kids is not None else []:
            src.append(c)
            dst.append(nid)
    return nodes, _edges(src, dst)


# ---------------------------------------------------------------------------------- monus


def _monus(s: MonusSegment, tables: Tables) -> Nodes:
    """Per row with partners a ⊖ node (tuple: the row's data; value: how many such rows), its δ
    subtrahend over the partners and, for a set difference, its δ minuend over the left rows
    (see :class:`~lipspark.vocabulary.MonusSegment`)."""
    fcols = [factor(i) for i in range(s.k)] if s.k > 1 else []
    m = tables["sides"].to_pandas(types_mapper=_NULLABLE.get)
    for c in fcols:
        if c not in m.columns:
            m[c] = pd.Series(pd.NA, index=m.index, dtype="Int64")
    m = m.sort_values(["g", "side", "m", *fcols], kind="stable").reset_index(drop=True)
    rows = tables["rows"].to_pandas().drop_duplicates("g").sort_values("g", kind="stable")
    gids = rows["g"].to_numpy(dtype="int64")
    node = _nodes(gids, "p", Op.MONUS, s.label, s.seg, [int(c) for c in rows["copies"]])
    node["tuple"] = rows["tuple"].to_numpy(dtype=object)
    g, mem, side = m["g"].to_numpy(dtype="int64"), m["m"].to_numpy(dtype="int64"), m["side"].to_numpy(dtype="int64")
    sub = monus_part_ids(gids, SUBTRAHEND)
    node_parts = [node, _nodes(sub, "p", Op.DELTA, Op.DELTA.label, s.seg)]
    right = side == SUBTRAHEND
    edge_parts = [_edges(mem[right], monus_part_ids(g[right], SUBTRAHEND)), _edges(sub, gids)]
    left = ~right
    if s.minuend == "delta":
        mins = monus_part_ids(gids, MINUEND)
        node_parts.append(_nodes(mins, "p", Op.DELTA, Op.DELTA.label, s.seg))
        edge_parts += [_edges(mem[left], monus_part_ids(g[left], MINUEND)), _edges(mins, gids)]
    else:  # the row itself, once (its copies share the node)
        once = m.loc[left, ["g", "m"]].drop_duplicates("g")
        edge_parts.append(_edges(once["m"].to_numpy(dtype="int64"), once["g"].to_numpy(dtype="int64")))
    dots, dot_edges = _member_products(s, m)
    return concat_frames([*node_parts, dots]), concat_frames([*edge_parts, dot_edges])


# ---------------------------------------------------------------------------------- boundaries


def _factors(df: pd.DataFrame, k: int) -> list[np.ndarray]:
    return [df[factor(i)].fillna(0).to_numpy(dtype="int64") for i in range(k)]


def _scheme_k(desc: RelationDescriptor) -> int:
    """How many stored factor columns the relation's p-node scheme reads (a token has none)."""
    if desc.p is None:
        raise StoreError(f"relation {desc.dir!r} was stored without provenance, yet the graph has a boundary over it")
    return 0 if desc.p.kind == "token" else desc.p.k


def _stored_p(desc: RelationDescriptor, df: pd.DataFrame) -> np.ndarray:
    """The p-node of each stored tuple, by how its file was produced (see :class:`PScheme`)."""
    assert desc.p is not None  # checked by _scheme_k
    pos = df["__pos"].to_numpy(dtype="int64")
    own = positional(desc.p.seg, pos)
    if desc.p.kind in ("token", "output", "state"):
        return own
    return member_ids(_factors(df, desc.p.k), own)


class RelationReads:
    """The stored relations one expansion reads, each read (and checked) once: a relation's
    output boundary, its value columns' v-nodes and each consumer's input boundary all read the
    same files (a deferred store's coarse graph: about three segments a relation, in the
    invocations that write and read it: one ``RelationReads`` may serve several expansions).
    ``root`` resolves relative file paths."""

    def __init__(self, root: str | None) -> None:
        self.root = root
        self._frames: dict[tuple[Any, ...], tuple[pd.DataFrame, list[str]]] = {}
        self._tuples: dict[tuple[Any, ...], np.ndarray] = {}

    def rows(self, desc: RelationDescriptor, cols: list[str], what: str) -> tuple[pd.DataFrame, list[str], tuple[Any, ...]]:
        """The rows of ``desc``'s files: ``cols``, the data columns and ``__pos``; the data
        columns; and the key the files are cached under."""
        key = tuple(desc.files or ())
        if not key:
            return pd.DataFrame(columns=[*cols, "__pos"]), [], key
        if key not in self._frames:
            schema = pq.read_schema(local_path(desc.files[0].path, self.root))
            data_cols = [c for c in schema.names if not c.startswith(PREFIX)]
            # every column a boundary may read (data, factors, value ids), not the bags' member lists
            wanted = [c for c in schema.names if not c.startswith(bag_col(""))]
            self._frames[key] = (_read_files(desc.files, wanted, what, self.root), data_cols)
        full, data_cols = self._frames[key]
        missing = [c for c in cols if c not in full.columns]
        if missing:
            raise StoreError(f"{what}: its files have no column {missing[0]!r}; they are damaged or were replaced: "
                             "`lipspark check` lists every damaged file")
        return full[[*dict.fromkeys([*cols, *data_cols]), "__pos"]], data_cols, key

    def tuples(self, key: tuple[Any, ...], df: pd.DataFrame, data_cols: list[str]) -> np.ndarray:
        """Each row's tuple, as JSON (``df``: the rows of the files cached under ``key``)."""
        if key not in self._tuples:
            self._tuples[key] = tuple_json(df, data_cols)
        return self._tuples[key]


def tuple_json(df: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Each row of ``df`` as the JSON object of its ``columns`` (null for a missing value), as
    ``json.dumps(row, default=str)`` writes it, built a column at a time: a string or integer
    value repeated down a column is encoded once.

    >>> list(tuple_json(pd.DataFrame({"k": ["a", "a", None], "n": [1.5, -0.0, float("nan")]}), ["k", "n"]))
    ['{"k": "a", "n": 1.5}', '{"k": "a", "n": -0.0}', '{"k": null, "n": null}']
    """
    n = len(df)
    out = np.full(n, "{", dtype=object)
    for j, c in enumerate(columns):
        col = df[c]
        enc = np.empty(n, dtype=object)
        memo: dict[Any, str] = {}
        for i, v in enumerate(col.astype(object).where(col.notna(), None).tolist()):
            t = type(v)
            if t is str or t is int:  # not float (-0.0 == 0.0), not bool (True == 1)
                e = memo.get(v)
                if e is None:
                    e = memo[v] = json.dumps(v)
                enc[i] = e
            else:
                enc[i] = json.dumps(v, default=str)
        out = out + f"{', ' if j else ''}{json.dumps(c)}: " + enc
    return out + "}" if n else np.array([], dtype=object)


def _boundary_rows(s: BoundarySegment, reads: RelationReads, fine: bool = True) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The stored relation's rows (the columns this role needs; without ``fine``, none of the
    hidden columns that point at the producer's fine nodes) and, where its nodes show the
    tuple, each row's tuple as JSON."""
    desc = s.source
    k = _scheme_k(desc) if fine else 0
    cols = [factor(i) for i in range(k)] if desc.p is not None and (desc.p.kind == "collapse" or s.role in ("o", "collapse")) else []
    if s.column is not None:
        cols += [value_col(s.column), s.column] if fine else [s.column]
    df, data_cols, key = reads.rows(desc, cols, f"relation {s.relation!r}")
    shown = bool(data_cols) and (s.role in ("i", "s", "o") or s.column is not None)  # a value is shown with its tuple
    return df, reads.tuples(key, df, data_cols) if shown else None


def _tag(nodes: pd.DataFrame, s: BoundarySegment, tuples: np.ndarray | None, ntype: str | None) -> pd.DataFrame:
    """Tag boundary nodes with their relation, type and (for tuples) the tuple's values."""
    nodes["relation"] = s.relation or None
    nodes["type"] = ntype
    if tuples is not None:
        nodes["tuple"] = tuples
    return nodes


def _boundary_values(s: BoundarySegment, df: pd.DataFrame, ids: np.ndarray, tuples: np.ndarray | None, fine: bool = True) -> Nodes:
    """A value crossing the boundary: a v-node over the value's own node and the invocation,
    tagged with the tuple it is a value of."""
    assert s.column is not None
    # without ``fine`` (the coarse graph), no stored ids of the fine v-nodes behind the values
    stored = df[value_col(s.column)] if fine else pd.Series([None] * len(df), dtype="Int64")
    has = stored.notna().to_numpy()
    keep = np.ones(len(df), dtype=bool) if s.every_row else has
    vseg = s.source.values.get(s.column) if s.role in ("i", "s") else None
    if vseg is not None:  # the producer's output v-node: on every row if it made them so
        child = positional(vseg, df["__pos"].to_numpy(dtype="int64"))
        has = np.ones(len(df), dtype=bool) if s.source.every_row else has
    else:  # the stored v-node, where the producer made one (else the v-node is a leaf)
        child = stored.fillna(0).to_numpy(dtype="int64")
    ids, child, has = ids[keep], child[keep], has[keep]
    values = [_py(x) for x in df[s.column][keep].tolist()] if s.column in df.columns else None
    ntype = {"vo": "o", "vs": None}.get(s.role, s.role)
    nodes = _tag(_nodes(ids, "v", s.op, "·", s.seg, values), s, tuples[keep] if tuples is not None else None, ntype)
    nodes["column"] = s.column
    if s.role == "vs":  # a new state row's value: its reader adds the invocation that reads it
        return nodes, _edges(child[has], ids[has])
    inv = np.full(len(ids), s.invocation, dtype=np.int64)
    return nodes, concat_frames([_edges(child[has], ids[has]), _edges(inv, ids)])


def _boundary_inputs(s: BoundarySegment, df: pd.DataFrame, ids: np.ndarray, tuples: np.ndarray | None) -> Nodes:
    """Input or state nodes: · of the stored tuple's p-node and the invocation."""
    nodes = _tag(_nodes(ids, "p", s.op, "·", s.seg), s, tuples, s.role)
    inv = np.full(len(ids), s.invocation, dtype=np.int64)
    return nodes, concat_frames([_edges(_stored_p(s.source, df), ids), _edges(inv, ids)])


def _boundary_products(s: BoundarySegment, df: pd.DataFrame, ids: np.ndarray, tuples: np.ndarray | None, fine: bool = True) -> Nodes:
    """Output nodes (· of the tuple's factors and the invocation), or the · nodes over a new
    state tuple's factors (``collapse``: on every row under the ``state`` scheme, where it has
    several factors under ``collapse``)."""
    fs = _factors(df, _scheme_k(s.source) if fine else 0)
    if s.role == "collapse":
        assert s.source.p is not None  # checked by _scheme_k
        if s.source.p.kind == "state":  # every row a · node of its own
            keep = np.ones(len(df), dtype=bool)
        else:
            nz = sum((f != 0).astype("int64") for f in fs) if fs else np.zeros(len(df), dtype="int64")
            keep = np.asarray(nz > 1)
        ids = ids[keep]
        fs = [f[keep] for f in fs]
        nodes = _nodes(ids, "p", s.op, "·", s.seg)
        inv_edges = _edges([], [])
    else:
        nodes = _tag(_nodes(ids, "p", s.op, "·", s.seg), s, tuples, "o")
        inv_edges = _edges(np.full(len(ids), s.invocation, dtype=np.int64), ids)
    src = np.concatenate(fs) if fs else np.array([], dtype="int64")
    dst = np.concatenate([ids] * len(fs)) if fs else np.array([], dtype="int64")
    keep = src != 0
    return nodes, concat_frames([_edges(src[keep], dst[keep]), inv_edges])


def _boundary(s: BoundarySegment, reads: RelationReads, fine: bool = True) -> Nodes:
    """Module input (i), state (s), output (o) and collapse (·) nodes of a stored relation, or
    the v-nodes of one of its value columns (``fine``: with their edges from the producer's
    fine nodes; without, as in the coarse graph of a deferred store, whose files have no
    hidden columns)."""
    df, tuples = _boundary_rows(s, reads, fine)
    ids = positional(s.seg, df["__pos"].to_numpy(dtype="int64"))
    if s.column is not None:
        return _boundary_values(s, df, ids, tuples, fine)
    if s.role in ("i", "s"):
        return _boundary_inputs(s, df, ids, tuples)
    return _boundary_products(s, df, ids, tuples, fine)


# ---------------------------------------------------------------------------------- all segments


def _expand_one(s: Segment, tables: Tables, reads: RelationReads, fine: bool = True) -> Nodes:
    root = reads.root
    if isinstance(s, BaseSegment):
        return _base(s, tables, root)
    if isinstance(s, BoundarySegment):
        return _boundary(s, reads, fine)
    if isinstance(s, InvocationSegment):
        return _invocation(s)
    if isinstance(s, GroupSegment):
        return _group(s, tables)
    if isinstance(s, RowNodeSegment):
        return _rownode(s, tables)
    if isinstance(s, MonusSegment):
        return _monus(s, tables)
    raise StoreError(f"unknown segment kind {type(s).__name__} in segment {s.seg}; written by a newer lipspark?")


def expand_segments(segments: Sequence[tuple[Segment, Tables]], root: str | None = None, *,
                    fine: bool | Callable[[Segment], bool] = True, reads: RelationReads | None = None) -> Nodes:
    """Nodes and edges of a graph from ``[(segment, tables)]`` (as :func:`lipspark.store.read_segments`
    reads them, or as capture collects them).

    ``root`` resolves relative file paths (a workflow store's directory). Two different nodes
    with the same id are a :class:`~lipspark.errors.StoreError`. ``fine=False``: boundary
    segments over files without hidden columns (a deferred store's coarse graph,
    :mod:`lipspark.workflow.coarse`), their nodes without the edges from the fine computation;
    a function of the segment says it per segment (a replayed invocation reads its producers'
    files, which have no hidden columns, but writes its own with them). ``reads``: the stored
    relations already read (for ``root``), shared with other expansions.
    """
    node_parts, edge_parts = [], []
    reads = reads if reads is not None else RelationReads(root)
    if reads.root != root:
        raise StoreError(f"internal: relations read for {reads.root!r} given to an expansion of {root!r}")
    for s, tables in segments:
        n, e = _expand_one(s, tables, reads, fine(s) if callable(fine) else fine)
        for attr in ("module", "node", "execution", "invocation"):
            n[attr] = getattr(s.context, attr)
        node_parts.append(n)
        edge_parts.append(e)
    nodes = concat_frames(node_parts) if node_parts else pd.DataFrame(columns=NODE_COLUMNS)
    nodes = nodes.reindex(columns=NODE_COLUMNS)
    nodes["op"] = nodes["op"].astype(np.int8)
    edges = concat_frames(edge_parts) if edge_parts else _edges([], [])
    nodes = nodes.drop_duplicates(["id", "kind", "op", "label"]).reset_index(drop=True)
    dup = nodes["id"].duplicated(keep=False)
    if dup.any():
        clash = nodes.loc[dup].head(4).to_dict("records")
        raise StoreError(f"node id collision between different nodes: {clash}; please report this graph")
    return nodes, edges
