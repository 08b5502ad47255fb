"""Integrity checks in the query language: verdicts, violating rows, what a deletion does to them, blame.

The executions keep each check's verdict and the positions of its violating rows in the stored
relation (:mod:`lipspark.store.checks`); a stored row's node follows from its position and the
relation's descriptor — an output row's output node ``positional(seg, position)``, a state
row's p-node by the member rule over its stored factors — so this module reads the relation's
hidden columns and never runs Spark.

* :func:`select` — the verdicts a ``checks`` statement or a ``violations`` selector names;
* :func:`violation_ids` — the nodes of a check's violating rows;
* :func:`what_if` — after a deletion, whether the check would hold: a row check holds when no
  violating row survives and no surviving row's value changed (a changed value could make a
  row pass or fail: *unknown*); a table check keeps its verdict when no row of its relation was
  removed or changed, else is *unknown* (its aggregate predicate is not recomputed); when a
  condition (a filter or join over values) read a changed value, or a row appeared (its partners
  in an anti or outer join, or a set difference, deleted), the rows from that execution on may
  differ from a re-run's, so every verdict there is *unknown*;
* :func:`blame` — the base tuples behind a set of nodes, each with how many of them it is behind.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lipspark.errors import QueryError
from lipspark.graph.index import GraphIndex
from lipspark.store.checks import read_checks
from lipspark.store.lineage import relations_by_dir
from lipspark.store.store import Store
from lipspark.vocabulary import Op
from lipspark.vocabulary.checks import CheckResult
from lipspark.vocabulary.columns import factor, value_col
from lipspark.vocabulary.ids import ROW_BITS, member_ids, positional

__all__ = ["select", "violation_ids", "RelationRows", "relation_rows", "what_if", "blame"]


def select(store: Store, check: str | None = None, module: str | None = None, execution: int | None = None,
           what: str = "checks") -> list[tuple[int, CheckResult]]:
    """The verdicts naming ``check`` (all when None), of module or node ``module``, in ``execution``;
    a one-line :class:`QueryError` saying what the store has when none match."""
    every = read_checks(store)
    if not every:
        raise QueryError(f"{what}: the store at {store.root} keeps no integrity checks: its workflow declares none "
                         "(Module(checks=[Check(...)]) or Workflow.check(node, Check(...)); docs/debugging.md)")
    out = [(n, r) for n, r in every
           if (check is None or r.name == check) and (module is None or module in (r.module, r.node))
           and (execution is None or n == execution)]
    if not out:
        names = sorted({r.name for _, r in every})
        runs = sorted({n for n, _ in every})
        raise QueryError(f"{what}: no such check; the store has checks {', '.join(map(repr, names))} in executions "
                         f"{runs[0]}–{runs[-1]}, on modules {', '.join(sorted({r.module for _, r in every}))}")
    return out


@dataclass(frozen=True)
class RelationRows:
    """The rows of a stored relation as nodes: their positions, p-nodes and value nodes (ids; 0: none)."""

    positions: np.ndarray
    p: np.ndarray
    values: np.ndarray  # (rows, value columns)


def relation_rows(store: Store, directory: str) -> RelationRows:
    """Every row of the relation stored at ``directory`` (store-relative) as nodes."""
    import pyarrow.parquet as pq

    info = relations_by_dir(store).get(directory)
    if info is None:
        raise QueryError(f"the store at {store.root} has no relation stored at {directory}")
    d = info.descriptor
    p = d.get("p")
    if not p:
        raise QueryError(f"the relation at {directory} was stored without provenance: its rows have no nodes")
    k = int(p.get("k", 1)) if p["kind"] != "token" else 0
    values: dict[str, Any] = d.get("values", {})
    cols = [factor(i) for i in range(k)] + [value_col(c) for c in values]
    pos_parts, f_parts, v_parts = [], [], []
    for ordinal, f in enumerate(d.get("files", [])):
        t = pq.read_table(os.path.join(store.root, f["path"]), columns=cols)
        n = t.num_rows
        pos_parts.append((np.int64(ordinal) << np.int64(ROW_BITS)) | np.arange(n, dtype=np.int64))
        f_parts.append([t.column(c).fill_null(0).to_numpy().astype(np.int64) for c in cols[:k]])
        v_parts.append([t.column(value_col(c)).fill_null(0).to_numpy().astype(np.int64) for c in values])
    positions = np.concatenate(pos_parts) if pos_parts else np.zeros(0, dtype=np.int64)
    own = positional(int(p["seg"]), positions)
    if p["kind"] == "collapse" and k:
        fs = [np.concatenate([part[i] for part in f_parts]) for i in range(k)]
        pids = member_ids(fs, own)
    else:
        pids = own
    vals = np.zeros((len(positions), len(values)), dtype=np.int64)
    for j, (c, seg) in enumerate(values.items()):
        stored = np.concatenate([part[j] for part in v_parts]) if v_parts else np.zeros(0, dtype=np.int64)
        if seg is None:  # the stored v-node ids themselves
            vals[:, j] = stored
        else:  # the relation's own boundary v-nodes: on every row, or (written before) where one is stored
            vals[:, j] = positional(int(seg), positions) if d.get("value_rows") == "every" else np.where(stored != 0, positional(int(seg), positions), 0)
    return RelationRows(positions, pids, vals)


def violation_ids(store: Store, result: CheckResult) -> np.ndarray:
    """The nodes of ``result``'s violating rows (row checks; a table check has none)."""
    if not result.positions:
        return np.zeros(0, dtype=np.int64)
    rows = relation_rows(store, result.dir)
    at = np.searchsorted(rows.positions, np.asarray(result.positions, dtype=np.int64))
    return rows.p[np.minimum(at, len(rows.p) - 1)]


def what_if(view: GraphIndex, store: Store, result: CheckResult, exact: bool) -> str:
    """Whether ``result``'s check would hold in ``view`` (a view after a deletion; see the module docstring)."""
    if not exact:
        return "unknown: a condition over a changed value, or a row that appears, may make other rows than a re-run"
    rows = relation_rows(store, result.dir)
    changed_ids = np.fromiter(view.what_if, dtype=np.int64, count=len(view.what_if))
    changed = int(np.isin(rows.values, changed_ids).any(axis=1).sum()) if rows.values.size and len(changed_ids) else 0
    present = view.lookup(rows.p) >= 0
    if result.kind == "table":
        if present.all() and not changed:
            return result.verdict
        return f"unknown: {int((~present).sum())} row(s) removed, {changed} changed; a table predicate is not recomputed"
    if changed:
        return f"unknown: {changed} row(s) of {result.relation} changed values"
    surviving = int((view.lookup(violation_ids(store, result)) >= 0).sum())
    return "holds" if not surviving else f"fails: {surviving} violating row(s) survive"


def blame(view: GraphIndex, positions: Sequence[int]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The base tuples (tokens) behind the nodes at ``positions``: one row per token with the
    number of those nodes it is behind, most first; and the number of distinct tokens per relation."""
    counts: dict[int, int] = {}
    is_token = np.asarray(view.op) == Op.TOKEN
    for p in positions:
        anc = np.asarray(view.ancestors(np.array([p], dtype=np.int64)), dtype=np.int64)
        anc = np.concatenate([anc, np.array([p], dtype=np.int64)])
        for t in np.unique(anc[is_token[anc]]).tolist():
            counts[t] = counts.get(t, 0) + 1
    order = sorted(counts, key=lambda t: (-counts[t], int(view.ids[t])))
    at = np.array(order, dtype=np.int64)
    relation, execution = view.column("relation", at), view.column("execution", at)
    rows = [{"node": int(view.ids[t]), "token": view.label(t), "relation": relation[i],
             "execution": None if execution[i] is None else int(execution[i]), "behind": counts[t]} for i, t in enumerate(order)]
    per: dict[str, int] = {}
    for r in rows:
        per[str(r["relation"])] = per.get(str(r["relation"]), 0) + 1
    return rows, per
