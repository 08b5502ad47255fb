"""Where each node of a drawing goes: one execution per column, its modules in the workflow's order.

The drawing reads left to right. Executions are columns, in execution order. Inside one, each
module invocation is a *block* (drawn as a frame captioned ``dealer1 · execution 1``), and
blocks go left to right in the order of the workflow DAG: a module's *rank* is its longest path
from the workflow's first modules, found from the graph itself (a module output feeding another
module's input is a DAG edge), so modules that run side by side (``dealer1`` … ``dealer4``) share
a rank and stack top to bottom. Nodes without an execution or a module (base tuples, initial
state) sit in the block of their first use. Inside a block, a node's column is its longest path
from the block's first nodes, and a node used by nothing before it sits just left of its first
use (a constant next to its ``⊗``, an invocation next to its inputs); so every edge points
right. Top to bottom, each column is ordered by where its nodes' neighbours are (a few
barycenter sweeps), which keeps edges short and mostly uncrossed.

Nothing here is random: the same graph gives the same positions (vis.js then draws them with
physics off). :func:`layout` works on positions in a graph and widths (pixels) per node; it
takes well under a second for the 1,500 nodes a drawing may have.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({
...     "id": [1, 10, 11, 12, 20, 21], "kind": "p", "op": ["token", "invocation", "input", "output", "invocation", "input"],
...     "label": ["R:a", "f", "·", "·", "h", "·"], "type": [None, "m", "i", "o", "m", "i"],
...     "module": [None, "f", "f", "f", "h", "h"], "execution": [None, 1, 1, 1, 1, 1], "invocation": [None, 10, 10, 10, 20, 20]}),
...     pd.DataFrame({"src": [1, 10, 11, 10, 12, 20], "dst": [11, 11, 12, 12, 21, 21]}))
>>> lay = layout(g, np.arange(6), np.full(6, 40.0))
>>> [c.caption for c in lay.frames]
['f · execution 1', 'h · execution 1']
>>> bool((np.diff(lay.x[[0, 2, 3, 5]]) > 0).all())  # R:a → input of f → output of f → input of h
True
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.vocabulary import Op

__all__ = ["Frame", "Layout", "layout", "levels", "workflow_ranks", "CAPTION_CHAR_WIDTH", "COLUMN_GAP", "ROW"]

#: vertical distance between the centres of two nodes of one column (pixels)
ROW = 42.0
#: the width of one character of a frame's caption (bold, 13 pixels)
CAPTION_CHAR_WIDTH = 8.2
#: horizontal space between two columns of nodes
COLUMN_GAP = 46.0
_STAGE_GAP = 90.0  # between modules of different ranks
_EXECUTION_GAP = 150.0  # between executions
_BLOCK_GAP = 70.0  # between the frames of modules stacked in one rank (room for a caption)
_PAD = 14.0  # a frame's margin around its nodes
_HALF = 18.0  # half the height of the tallest node (a one-line ellipse)
_SWEEPS = 2  # barycenter sweeps (forward, backward) per block


@dataclass(frozen=True)
class Frame:
    """The box drawn behind the nodes of one module invocation: its module, workflow node and
    execution, its corners in drawing coordinates."""

    module: str | None
    node: str | None
    execution: int | None
    left: float
    top: float
    right: float
    bottom: float

    @property
    def caption(self) -> str:
        """``dealer1 · execution 1``; the workflow node's name where it differs from the module's
        (``dealer1_buy · execution 1``: the fill colour is the module's)."""
        what = self.node if self.node is not None else self.module
        if what is None:
            return "" if self.execution is None else f"execution {self.execution}"
        return what if self.execution is None else f"{what} · execution {self.execution}"


@dataclass(frozen=True)
class Layout:
    """Positions of the drawn nodes (``x``, ``y``: centres, in the order of the positions given)
    and the frames and execution columns drawn behind them (``executions``: number, left, right)."""

    x: np.ndarray
    y: np.ndarray
    frames: tuple[Frame, ...]
    executions: tuple[tuple[int, float, float], ...]


def _drawn_edges(g: GraphIndex, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges between drawn nodes as indices into ``pos`` (sorted) — src → dst, with multiplicity."""
    if not len(pos):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner, kids = g.gather_children(pos, owners=True)
    idx = np.minimum(np.searchsorted(pos, kids), len(pos) - 1)
    inside = pos[idx] == kids
    return idx[inside].astype(np.int64), owner[inside]


def _longest_paths(n: int, edges: list[tuple[int, int, int]]) -> np.ndarray | None:
    """Longest-path levels over nodes ``0..n-1`` and weighted edges; None on a cycle."""
    succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v, w in edges:
        succ[u].append((v, w))
        indeg[v] += 1
    level = [0] * n
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        u = stack.pop()
        seen += 1
        for v, w in succ[u]:
            level[v] = max(level[v], level[u] + w)
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    return np.asarray(level, dtype=np.int64) if seen == n else None


def levels(g: GraphIndex, positions: np.ndarray) -> np.ndarray:
    """Left-to-right levels of the nodes at ``positions`` (distinct), ignoring modules.

    A node's level is its longest path from the sources of the drawn subgraph, and every node of
    execution ``e`` lies right of every node of the executions before it (nodes without an
    execution, such as base tuples, are placed by their paths alone); then each source moves
    right to just before its first use (constants next to their ⊗, an invocation next to its
    first input). So levels strictly increase along every drawn edge. The drawing computes
    polynomials from the highest level down (sharing their sub-expressions).

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "op": ["token", "·", "·", "token"],
    ...                                    "label": ["R:a", "·", "·", "R:b"],
    ...                                    "execution": [None, 1, 2, None]}),
    ...                      pd.DataFrame({"src": [1, 1, 4], "dst": [2, 3, 3]}))
    >>> levels(g, np.arange(4)).tolist()
    [0, 1, 2, 1]
    >>> levels(g, np.array([2, 0])).tolist()  # in the order given: node 3, then R:a
    [1, 0]
    """
    positions = np.asarray(positions, dtype=np.int64)
    if len(positions) > 1 and not (np.diff(positions) > 0).all():
        order = np.argsort(positions, kind="stable")
        out = np.empty(len(positions), dtype=np.int64)
        out[order] = levels(g, positions[order])
        return out
    n = len(positions)
    s, d = _drawn_edges(g, positions)
    real = [(int(a), int(b), 1) for a, b in zip(s.tolist(), d.tolist())]
    ex = np.array([np.nan if e is None else float(e) for e in g.column("execution", positions).tolist()], dtype=np.float64)
    execs = sorted({float(e) for e in ex[~np.isnan(ex)]})
    barrier: list[tuple[int, int, int]] = []
    for k in range(1, len(execs)):  # node n+k-1 sits between execution k-1 and execution k
        b = n + k - 1
        barrier += [(int(u), b, 0) for u in np.flatnonzero(ex == execs[k - 1])]
        barrier += [(b, int(v), 1) for v in np.flatnonzero(ex == execs[k])]
    lv = _longest_paths(n + len(execs) - 1, real + barrier) if barrier else None
    if lv is None:
        lv = _longest_paths(n, real)  # (also when an edge goes back in time: order by paths alone)
        if lv is None:
            raise StoreError("the provenance graph has a cycle; it is corrupt")
    lv = lv[:n].copy()
    if len(s):  # sources sit just left of their first use (a constant next to its ⊗)
        first = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(first, s, lv[d])
        source = np.ones(n, dtype=bool)
        source[d] = False
        pull = source & (first < np.iinfo(np.int64).max)
        lv[pull] = first[pull] - 1
    return lv


def workflow_ranks(g: GraphIndex) -> dict[str, tuple[int, int]]:
    """Each workflow node's place in the workflow DAG as the graph records it: (rank, first invocation id).

    A workflow node is a module in the workflow (``dealer1_bid`` and ``dealer1_buy`` both run
    module ``dealer1``); its invocations carry its name (attribute ``node``; the module's name
    where that is missing). There is a DAG edge ``A → B`` when an output node of an invocation of
    ``A`` feeds an input node of an invocation of ``B``; a workflow node's rank is its longest
    path from the nodes without such an input. Nodes of one rank run side by side, ordered by
    their first invocation's id (invocations are recorded in the order the workflow runs them).
    A node the graph shows no data flowing into or out of (its invocations had empty inputs)
    has no edge to place it by: it goes right of the nodes with edges that first ran before it.
    Should the edges form a cycle (they cannot in a workflow's DAG), the edges against that
    order are left out. Reads the invocation, zoomed-out and output nodes and the outputs'
    consumers, not the whole graph.

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [10, 12, 20, 21, 22, 30, 31], "kind": "p",
    ...                                    "op": ["invocation", "output", "invocation", "input", "output", "invocation", "input"],
    ...                                    "label": ["req", "·", "dealer", "·", "·", "agg", "·"], "module": ["req"] * 2 + ["dealer"] * 3 + ["agg"] * 2,
    ...                                    "invocation": [10, 10, 20, 20, 20, 30, 30]}),
    ...                      pd.DataFrame({"src": [12, 22], "dst": [21, 31]}))
    >>> workflow_ranks(g)
    {'agg': (2, 30), 'dealer': (1, 20), 'req': (0, 10)}
    """
    heads = np.union1d(g.nodes_with(op=Op.INVOCATION), g.nodes_with(op=Op.ZOOM))
    inv_col = g.column("invocation", heads).tolist()
    names = [n if n is not None else m for n, m in zip(g.column("node", heads).tolist(), g.column("module", heads).tolist())]
    name_of: dict[int, str] = {}
    for i, name, p in zip(inv_col, names, heads.tolist()):
        i = int(g.ids[p]) if i is None else int(i)
        if name is not None:
            name_of.setdefault(i, str(name))
    first: dict[str, int] = {}
    for i, name in sorted(name_of.items()):
        first.setdefault(name, i)
    order = sorted(first, key=lambda m: (first[m], m))
    index = {m: k for k, m in enumerate(order)}
    inv = g.int_column("invocation")
    outs = g.nodes_with(op=Op.OUTPUT)
    owner, consumers = g.gather_parents(outs, owners=True)
    is_input = np.asarray(g.op[consumers], dtype=np.int64) == int(Op.INPUT)
    a, b = inv[outs[owner[is_input]]], inv[consumers[is_input]]
    ok = (a != -1) & (b != -1) & (a != b)
    pairs = np.unique(np.stack([a[ok], b[ok]], axis=1), axis=0).tolist() if ok.any() else []
    edges = sorted({(index[name_of[x]], index[name_of[y]]) for x, y in pairs if x in name_of and y in name_of} - {(k, k) for k in range(len(order))})
    lv = _longest_paths(len(order), [(u, v, 1) for u, v in edges])
    if lv is None:  # not a DAG: keep the edges that agree with the order the nodes first ran in
        lv = _longest_paths(len(order), [(u, v, 1) for u, v in edges if u < v])
        assert lv is not None
    linked = {u for e in edges for u in e}
    for k in range(len(order)):  # no data seen flowing in or out (an invocation on empty input): right of what ran before it
        if k not in linked:
            lv[k] = 1 + max((int(lv[j]) for j in linked if j < k), default=-1)
    return {m: (int(lv[index[m]]), first[m]) for m in sorted(order)}


def _int(v: Any) -> int | None:
    if v is None or (isinstance(v, float) and v != v) or str(v) == "<NA>":
        return None
    return int(v)


#: a block: ("inv", execution, invocation id) — one invocation; ("shared", execution, rank) — nodes
#: outside invocations used by several invocations of one stage; ("rest", execution, 0) — the others
_Block = tuple[str, Optional[int], Optional[float]]  # (an int for an invocation id: no float has 64 bits)


def layout(g: GraphIndex, positions: np.ndarray, widths: np.ndarray) -> Layout:
    """Positions for the nodes at ``positions`` (sorted, distinct) of ``g``; ``widths``: each
    node's drawn width in pixels, which spaces the columns. See the module's docstring."""
    pos = np.asarray(positions, dtype=np.int64)
    n = len(pos)
    if n == 0:
        return Layout(np.zeros(0), np.zeros(0), (), ())
    widths = np.asarray(widths, dtype=np.float64)
    ids = np.asarray(g.ids[pos], dtype=np.int64)
    s, d = _drawn_edges(g, pos)
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in sorted(set(zip(s.tolist(), d.tolist()))):
        succs[a].append(b)
        preds[b].append(a)
    module = [None if m is None else str(m) for m in g.column("module", pos).tolist()]
    wf_node = [str(w) if w is not None else m for w, m in zip(g.column("node", pos).tolist(), module)]
    execution = [_int(e) for e in g.column("execution", pos).tolist()]
    invocation = [_int(i) for i in g.column("invocation", pos).tolist()]
    ranks = workflow_ranks(g)
    about: dict[_Block, tuple[str | None, str | None]] = {}  # invocation block → (module, workflow node)
    for k in range(n):
        if invocation[k] is not None and execution[k] is not None:
            about.setdefault(("inv", execution[k], invocation[k]), (module[k], wf_node[k]))

    def stage_key(block: _Block) -> tuple[float, float, float, float]:
        kind, e, i = block
        ex = -1 if e is None else e
        if kind == "shared":  # just before the stage of its first use
            return (ex, (i or 0) - 0.5, 0, 0)
        name = about.get(block, (None, None))[1]
        rank, first = ranks.get(name, (-1, 0)) if name is not None else (-1, 0)
        return (ex, rank, first, -1 if i is None else i)

    # blocks: the invocations; a node outside one (a base tuple, initial state) joins its use, or
    # where several invocations of one stage use it, a block of its own just left of them
    block_of: list[_Block | None] = [("inv", execution[k], invocation[k]) if ("inv", execution[k], invocation[k]) in about else None
                                     for k in range(n)]
    lv = levels(g, pos)
    for k in sorted((k for k in range(n) if block_of[k] is None), key=lambda k: (-int(lv[k]), int(ids[k]))):
        used = sorted({b for b in (block_of[c] for c in succs[k]) if b is not None}, key=stage_key)
        if not used:
            block_of[k] = ("rest", execution[k], 0)
            continue
        first_stage = stage_key(used[0])[:2]
        same = [b for b in used if stage_key(b)[:2] == first_stage]
        block_of[k] = same[0] if len(same) == 1 else ("shared", None if first_stage[0] == -1 else int(first_stage[0]), first_stage[1])
    members: dict[_Block, list[int]] = defaultdict(list)
    for k in range(n):
        members[block_of[k]].append(k)  # type: ignore[index]

    # columns inside each block: longest paths over the block's own edges, sources next to their
    # first use, invocations in a column of their own at the left (their label sits under them)
    col = np.zeros(n, dtype=np.int64)
    for ks in members.values():
        local = {k: i for i, k in enumerate(ks)}
        edges = [(local[a], local[b], 1) for a in ks for b in succs[a] if b in local]
        lvl = _longest_paths(len(ks), edges)
        if lvl is None:
            raise StoreError("the provenance graph has a cycle; it is corrupt")
        has_pred = np.zeros(len(ks), dtype=bool)
        first = np.full(len(ks), np.iinfo(np.int64).max)
        for u, v, _ in edges:
            has_pred[v] = True
            first[u] = min(first[u], lvl[v])
        pull = ~has_pred & (first < np.iinfo(np.int64).max)
        lvl[pull] = first[pull] - 1
        head = np.array([int(g.op[pos[k]]) == int(Op.INVOCATION) for k in ks])
        if head.any() and not head.all():
            lvl = np.where(head, 0, lvl - lvl[~head].min() + 1)
        for k, i in local.items():
            col[k] = lvl[i]

    # stages (execution, rank) left to right; the blocks of a stage top to bottom
    stages: dict[tuple[float, float], list[_Block]] = defaultdict(list)
    for block in members:
        key = stage_key(block)
        stages[(key[0], key[1])].append(block)
    x = np.zeros(n)
    y = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    frames: list[Frame] = []
    spans: dict[int, list[float]] = {}
    left = 0.0
    previous: float | None = None
    for skey in sorted(stages):
        blocks = sorted(stages[skey], key=stage_key)
        if previous is not None:
            left += _EXECUTION_GAP if skey[0] != previous else _STAGE_GAP
        previous = skey[0]
        ncols = max(int(col[k]) for b in blocks for k in members[b]) + 1
        cw = np.zeros(ncols)
        for b in blocks:
            for k in members[b]:
                cw[col[k]] = max(cw[col[k]], widths[k])
        centres = left + np.concatenate([[0.0], np.cumsum(cw[:-1] + COLUMN_GAP)]) + cw / 2
        need = max([len(Frame(*about[b], b[1], 0, 0, 0, 0).caption) * CAPTION_CHAR_WIDTH - 2 * _PAD for b in blocks if b in about], default=0)
        if cw.sum() + COLUMN_GAP * (ncols - 1) < need:  # room for the widest caption
            cw[-1] += need - (cw.sum() + COLUMN_GAP * (ncols - 1))
        heights = [max(np.bincount(col[members[b]])) * ROW for b in blocks]
        top = -(sum(heights) + _BLOCK_GAP * (len(blocks) - 1)) / 2
        for b, h in zip(blocks, heights):
            ks = members[b]
            x[ks] = centres[col[ks]]
            _order_block(ks, col, preds, succs, y, done, top, h, ids)
            if b in about:  # a frame around each invocation
                half = widths[ks] / 2
                fl = float(np.min(x[ks] - half)) - _PAD
                fr = max(float(np.max(x[ks] + half)) + _PAD, fl + len(Frame(*about[b], b[1], 0, 0, 0, 0).caption) * CAPTION_CHAR_WIDTH)
                frames.append(Frame(*about[b], b[1], round(fl, 1), round(float(np.min(y[ks])) - _HALF - _PAD, 1),
                                    round(fr, 1), round(float(np.max(y[ks])) + _HALF + _PAD, 1)))
            top += h + _BLOCK_GAP
        right = left + float(cw.sum() + COLUMN_GAP * (ncols - 1))
        if skey[0] >= 0:
            spans.setdefault(int(skey[0]), [left, right])[1] = right
        left = right
    return Layout(np.round(x, 1), np.round(y, 1), tuple(frames), tuple((e, round(a, 1), round(b, 1)) for e, (a, b) in sorted(spans.items())))


def _order_block(ks: list[int], col: np.ndarray, preds: list[list[int]], succs: list[list[int]], y: np.ndarray,
                 done: np.ndarray, top: float, height: float, ids: np.ndarray) -> None:
    """Set ``y`` of the block's nodes ``ks``: each column centred in the block's height, ordered
    by the mean height of the nodes' placed neighbours (predecessors going right, successors
    inside the block going left), starting from id order; a node without placed neighbours
    keeps its place. ``done`` marks the nodes placed so far (this block's, once called)."""
    inside = set(ks)
    columns: dict[int, list[int]] = defaultdict(list)
    for k in sorted(ks, key=lambda k: int(ids[k])):
        columns[int(col[k])].append(k)

    def put(c: int) -> None:
        ks_c = columns[c]
        start = top + (height - len(ks_c) * ROW) / 2 + ROW / 2
        for i, k in enumerate(ks_c):
            y[k] = start + i * ROW
            done[k] = True

    def sweep(order: list[int], neighbours: dict[int, list[int]]) -> None:
        for c in order:
            keyed = []
            for i, k in enumerate(columns[c]):
                near = [y[j] for j in neighbours[k] if done[j]]
                keyed.append((sum(near) / len(near) if near else y[k], i, k))
            columns[c] = [k for _, _, k in sorted(keyed)]
            put(c)

    cols = sorted(columns)
    for c in cols:
        put(c)
    before = {k: preds[k] for k in ks}
    after = {k: [j for j in succs[k] if j in inside] for k in ks}
    for _ in range(_SWEEPS):
        sweep(cols, before)
        sweep(cols[::-1], after)
    sweep(cols, before)
