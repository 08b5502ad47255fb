"""Workflow-shaped provenance graphs for the query-layer tests, built without Spark.

* :func:`generate` (plain, seeded) and :func:`workflow_graphs` (a hypothesis strategy) make
  random graphs in the layout ``lipspark.graph.expand`` produces for workflow executions: a few
  modules in a DAG (a module may appear at two workflow nodes, like a dealer's bid and purchase
  phases), several executions, and per invocation an invocation node, input nodes (from
  workflow input tokens or upstream outputs), state nodes (from the module's initial state
  tokens, or from nodes an earlier invocation of the module wrote to its state), intermediate
  computation (``·``, ``+``, ``δ``, black boxes, aggregates with ``⊗`` members and constant value
  nodes), output nodes, and value nodes crossing module boundaries. Edges go from the node used
  to the node derived (``src → dst``) and form a multiset (``a·a``, a member counted twice).
* :func:`dealership` is a small hand-built car dealership (modules ``dealer1`` and ``agg``;
  relations ``Cars``, ``Requests``, ``Bids``, ``BestBid``) with names for its interesting nodes.
* :func:`naive_delete` is a deliberately plain reference implementation of Definition 4.2, and
  :func:`signature`/:func:`assert_same_graph` compare graphs node for node and edge for edge.

Every node has its operator (``op``, a :class:`~lipspark.vocabulary.Op`) next to its display
label. Ids follow the real scheme of :mod:`lipspark.vocabulary.ids`: positional ids, one segment
per operation, invocation nodes alone in their segment (so :func:`zoom_id` is free for a zoom
node), aggregate v-nodes by :func:`aggregate_ids`, ⊗ and member value nodes by slot, and 64-bit
hash-like (possibly negative) ids for some ``δ``/``·`` nodes, as xxhash gives. Aggregate values
are :func:`lipspark.vocabulary.aggregate` of the members.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
from hypothesis import strategies as st

from lipspark.graph.index import GraphIndex
from lipspark.vocabulary import AGGREGATE_OPS, Op, aggregate
from lipspark.vocabulary.ids import aggregate_ids, member_value_ids, ordinal_of, positional, tensor_ids, zoom_id

__all__ = [
    "AGG_OPS",
    "COLUMNS",
    "Generated",
    "Recorder",
    "assert_same_graph",
    "dealership",
    "generate",
    "naive_delete",
    "group_of",
    "nx_of",
    "signature",
    "workflow_graphs",
]

COLUMNS = ["id", "kind", "op", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]
#: The aggregate labels, in a fixed order (random choices must not depend on set order).
AGG_OPS = tuple(o.label for o in sorted(AGGREGATE_OPS))
_P_OPS = {"·": Op.TIMES, "+": Op.PLUS, "δ": Op.DELTA, "udf": Op.BLACK_BOX}


def _tensor(seg: int, slot: int) -> int:
    return int(tensor_ids(seg, np.array([slot]))[0])


def _member_value(seg: int, slot: int) -> int:
    return int(member_value_ids(seg, np.array([slot]))[0])


# ---------------------------------------------------------------------------------- graphs


@dataclass
class Generated:
    """A generated graph: node attribute rows, the edge multiset, and what it is made of."""

    rows: list[dict[str, Any]]
    edge_list: list[tuple[int, int]]
    modules: list[str]
    invocations: dict[str, list[int]]
    names: dict[str, int] = field(default_factory=dict)
    recipe: str = ""

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return self.recipe or f"<graph of {len(self.rows)} nodes, {len(self.edge_list)} edges>"

    def frames(self, shuffle: random.Random | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Node and edge frames as a store gives them (rows and edges in any order)."""
        rows, edges = list(self.rows), list(self.edge_list)
        if shuffle is not None:
            shuffle.shuffle(rows)
            shuffle.shuffle(edges)
        nodes = pd.DataFrame({c: pd.Series([r[c] for r in rows], dtype=object) for c in COLUMNS})
        nodes["id"] = nodes["id"].astype("int64")
        e = pd.DataFrame({"src": pd.Series([s for s, _ in edges], dtype="int64"),
                          "dst": pd.Series([d for _, d in edges], dtype="int64")})
        return nodes, e

    @cached_property
    def index(self) -> GraphIndex:
        return GraphIndex.build(*self.frames())

    def networkx(self) -> nx.MultiDiGraph:
        """The graph as networkx sees it, built from the rows (independently of GraphIndex)."""
        g = nx.MultiDiGraph()
        for r in self.rows:
            g.add_node(r["id"], **{k: v for k, v in r.items() if k != "id" and v is not None})
        g.add_edges_from(self.edge_list)
        return g

    def of_type(self, *types: str | None) -> list[int]:
        return [r["id"] for r in self.rows if r["type"] in types]

    def __len__(self) -> int:
        return len(self.rows)


class Recorder:
    """Collects nodes and edges with the real id scheme; ``ctx`` is merged into every node
    (the workflow layer tags nodes with module, workflow node, execution and invocation)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._seg = 1
        self.rows: dict[int, dict[str, Any]] = {}
        self.edges: list[tuple[int, int]] = []
        self.ctx: dict[str, Any] = {}
        self.invocations: dict[str, list[int]] = {}
        self.names: dict[str, int] = {}

    def segment(self) -> int:
        s = self._seg
        self._seg += 1
        return s

    def hash_id(self) -> int:
        """A 64-bit hash-like id (δ and · member nodes), possibly negative."""
        while True:
            h = self.rng.getrandbits(64) - (1 << 63)
            if h not in self.rows and ordinal_of(h) > 1:
                return h

    def node(self, nid: int, kind: str, op: Op, label: str, seg: int, name: str | None = None, **attrs: Any) -> int:
        assert nid not in self.rows, f"generator bug: id {nid} used twice"
        row = dict.fromkeys(COLUMNS)
        row.update(self.ctx)
        row.update(id=int(nid), kind=kind, op=op, label=label, seg=seg)
        row.update(attrs)
        self.rows[int(nid)] = row
        if name is not None:
            self.names[name] = int(nid)
        return int(nid)

    def edge(self, src: int, dst: int, times: int = 1) -> None:
        self.edges += [(int(src), int(dst))] * times

    def invocation(self, module: str, node: str, execution: int) -> int:
        seg = self.segment()
        inv = positional(seg, 0)
        self.ctx = {"module": module, "node": node, "execution": execution, "invocation": inv}
        self.node(inv, "p", Op.INVOCATION, module, seg, type="m")
        self.invocations.setdefault(module, []).append(inv)
        return inv

    def finish(self, modules: list[str]) -> Generated:
        ids = set(self.rows)
        for invs in self.invocations.values():
            for inv in invs:
                assert zoom_id(inv) not in ids, "generator bug: an invocation's zoom id is taken"
        for s, d in self.edges:
            assert s in ids and d in ids, "generator bug: dangling edge"
        return Generated(list(self.rows.values()), list(self.edges), modules, self.invocations, dict(self.names))


def _fmt(v: Any) -> str:
    return str(v)


def _tuple(**cols: Any) -> str:
    return json.dumps(cols)


@dataclass
class _Out:
    p: int
    v: int | None
    tup: str
    value: Any


def generate(rng: random.Random | int, *, modules: int | None = None, executions: int | None = None,
             max_ops: int = 5, max_tuples: int = 3) -> Generated:
    """A random workflow-shaped provenance graph (see the module docstring); the same seed and
    sizes give the same graph. ``rng`` is a seed or a :class:`random.Random`."""
    recipe = f"generate({rng!r}, modules={modules}, executions={executions}, max_ops={max_ops}, max_tuples={max_tuples})"
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    rec = Recorder(rng)
    mods = [f"mod{i}" for i in range(modules or rng.randint(1, 4))]
    n_exec = executions or rng.randint(1, 3)
    wnodes = [(f"{m}_a", m) for m in mods] + [(f"{m}_b", m) for m in mods if rng.random() < 0.25]
    rng.shuffle(wnodes)
    upstream = {w: rng.sample([u for u, _ in wnodes[:i]], rng.randint(0, min(2, i))) for i, (w, _) in enumerate(wnodes)}

    # initial state: base tuples tagged with the module, no execution, no invocation, no type
    state: dict[str, dict[str, list[tuple[int, str, int | None, Any]]]] = {}
    for m in mods:
        state[m] = {}
        for j in range(rng.randint(0, 2)):
            rel = f"S{j}_{m}"
            rec.ctx = {"module": m}
            seg = rec.segment()
            state[m][rel] = []
            for r in range(rng.randint(0, max_tuples)):
                tup = _tuple(K=f"k{r}")
                tok = rec.node(positional(seg, r), "p", Op.TOKEN, f"{rel}:k{r}", seg, relation=rel, tuple=tup)
                state[m][rel].append((tok, tup, None, None))

    values: dict[int, Any] = {}
    for e in range(1, n_exec + 1):
        outputs: dict[str, dict[str, list[_Out]]] = {}
        for w, m in wnodes:
            inv = rec.invocation(m, w, e)
            pool_p: list[int] = []
            pool_v: list[int] = []

            # ---- inputs
            if not upstream[w]:
                rel = f"In_{w}"
                tseg, bseg = rec.segment(), rec.segment()
                for r in range(rng.randint(1, max_tuples)):
                    key = f"e{e}r{r}"
                    tok = rec.node(positional(tseg, r), "p", Op.TOKEN, f"{rel}:{key}", tseg, type="i", relation=rel, tuple=_tuple(K=key))
                    nid = rec.node(positional(bseg, r), "p", Op.INPUT, "·", bseg, type="i", relation=rel, tuple=_tuple(K=key, X=r))
                    rec.edge(tok, nid)
                    rec.edge(inv, nid)
                    pool_p.append(nid)
            for u in upstream[w]:
                for rel, outs in outputs[u].items():
                    bseg = rec.segment()
                    vseg = rec.segment() if any(o.v is not None for o in outs) else None
                    for r, o in enumerate(outs):
                        nid = rec.node(positional(bseg, r), "p", Op.INPUT, "·", bseg, type="i", relation=rel, tuple=o.tup)
                        rec.edge(o.p, nid)
                        rec.edge(inv, nid)
                        pool_p.append(nid)
                        if o.v is not None:
                            vid = rec.node(positional(vseg, r), "v", Op.INPUT, "·", vseg, type="i", relation=rel, column="X", value=o.value)
                            rec.edge(o.v, vid)
                            rec.edge(inv, vid)
                            values[vid] = o.value
                            pool_v.append(vid)

            # ---- state
            read: dict[str, list[tuple[int, str, int | None, Any]]] = {}
            for rel, sources in state[m].items():
                sseg = rec.segment()
                vseg = rec.segment() if any(s[2] is not None for s in sources) else None
                read[rel] = []
                for r, (src, tup, vsrc, val) in enumerate(sources):
                    sid = rec.node(positional(sseg, r), "p", Op.STATE, "·", sseg, type="s", relation=rel, tuple=tup)
                    rec.edge(src, sid)
                    rec.edge(inv, sid)
                    pool_p.append(sid)
                    svid = None
                    if vsrc is not None:
                        svid = rec.node(positional(vseg, r), "v", Op.STATE, "·", vseg, type="s", relation=rel, column="V", value=val)
                        rec.edge(vsrc, svid)
                        rec.edge(inv, svid)
                        values[svid] = val
                        pool_v.append(svid)
                    read[rel].append((sid, tup, svid, val))

            # ---- intermediate computation
            for _ in range(rng.randint(0, max_ops) if pool_p else 0):
                op = rng.choice(["·", "·", "+", "δ", "udf", "agg", "agg", "calc"])
                seg = rec.segment()
                nid_p = rec.hash_id() if rng.random() < 0.5 else positional(seg, 0)
                if op in ("·", "+", "δ", "udf"):
                    lo = 1 if op in ("δ", "udf") else 2
                    kids = rng.choices(pool_p, k=rng.randint(lo, 3))  # with replacement: multi-edges
                    nid = rec.node(nid_p, "p", _P_OPS[op], op, seg)
                    for k in kids:
                        rec.edge(k, nid)
                    pool_p.append(nid)
                elif op == "agg":
                    members = rng.choices(pool_p, k=rng.randint(1, 3))
                    g = rec.node(nid_p, "p", Op.DELTA, "δ", seg)
                    for mem in members:
                        rec.edge(mem, g)
                    n_aggs = rng.randint(1, 2)
                    for j in range(n_aggs):
                        agg_op = rng.choice(sorted(AGGREGATE_OPS))
                        # a member's value: a new constant, or (not for Count) the argument's own v-node
                        own = [rng.choice(pool_v) if agg_op is not Op.COUNT and pool_v and rng.random() < 0.3 else None for _ in members]
                        vals = [1 if agg_op is Op.COUNT else values[o] if o is not None else rng.choice([rng.randint(-3, 12), rng.randint(0, 9) + 0.5])
                                for o in own]
                        a = rec.node(aggregate_ids(nid_p, j), "v", agg_op, agg_op.label, seg, value=aggregate(agg_op, vals))
                        values[a] = aggregate(agg_op, vals)
                        for slot, (mem, v, o) in enumerate(zip(members, vals, own)):
                            t = rec.node(_tensor(seg, (slot * n_aggs + j)), "v", Op.TENSOR, "⊗", seg)
                            c = o if o is not None else rec.node(_member_value(seg, (slot * n_aggs + j)), "v", Op.CONSTANT, _fmt(v), seg, value=v)
                            rec.edge(mem, t)
                            rec.edge(c, t)
                            rec.edge(t, a)
                        pool_v.append(a)
                    pool_p.append(g)
                else:  # a black box called row by row: a v-node over p-nodes (and maybe a value)
                    kids = rng.choices(pool_p, k=rng.randint(1, 2))
                    if pool_v and rng.random() < 0.5:
                        kids.append(rng.choice(pool_v))
                    val = rng.randint(0, 100)
                    nid = rec.node(rec.hash_id(), "v", Op.BLACK_BOX, "calc", seg, value=val)
                    for k in kids:
                        rec.edge(k, nid)
                    values[nid] = val
                    pool_v.append(nid)

            # ---- outputs (one relation; its values cross the boundary as v-nodes)
            rel = f"Out_{w}"
            n_out = rng.randint(0 if rng.random() < 0.15 else 1, max_tuples) if pool_p else 0
            oseg = rec.segment()
            vseg = rec.segment() if pool_v and rng.random() < 0.6 else None
            outs = []
            for r in range(n_out):
                tup = _tuple(K=f"{w}e{e}r{r}", X=r)
                oid = rec.node(positional(oseg, r), "p", Op.OUTPUT, "·", oseg, type="o", relation=rel, tuple=tup)
                for f in rng.choices(pool_p, k=rng.randint(1, 2)):
                    rec.edge(f, oid)
                rec.edge(inv, oid)
                vid, val = None, None
                if vseg is not None:
                    src = rng.choice(pool_v)
                    val = values[src]
                    vid = rec.node(positional(vseg, r), "v", Op.OUTPUT, "·", vseg, type="o", relation=rel, column="X", value=val)
                    rec.edge(src, vid)
                    rec.edge(inv, vid)
                    values[vid] = val
                outs.append(_Out(oid, vid, tup, val))
            outputs[w] = {rel: outs}

            # ---- state written for later invocations of the module
            for rel in state[m]:
                x = rng.random()
                if x < 0.35:
                    continue  # not rewritten: the next invocation reads the same nodes
                if x < 0.55:  # rewritten unchanged: the next invocation reads this one's state nodes
                    state[m][rel] = read[rel]
                    continue
                cseg = rec.segment()
                new = []
                for r in range(rng.randint(0, max_tuples) if pool_p else 0):
                    if rng.random() < 0.5:  # one factor: that node is the tuple's p-node
                        src = rng.choice(pool_p)
                    else:  # several factors: a · node of the written relation ("collapse")
                        src = rec.node(positional(cseg, r), "p", Op.TIMES, "·", cseg)
                        for f in rng.choices(pool_p, k=2):
                            rec.edge(f, src)
                    vsrc = rng.choice(pool_v) if pool_v and rng.random() < 0.3 else None
                    new.append((src, _tuple(K=f"w{e}{r}"), vsrc, values.get(vsrc)))
                state[m][rel] = new
    out = rec.finish(mods)
    out.recipe = recipe
    return out


@st.composite
def workflow_graphs(draw: Any, **fixed: Any) -> Generated:
    """Hypothesis strategy of :func:`generate` graphs: a seed and sizes (``fixed`` overrides them).

    Failures shrink fast and print as a call to paste: ``generate(1234, modules=2, ...)``.
    """
    params = {"modules": draw(st.integers(1, 4)), "executions": draw(st.integers(1, 3)),
              "max_ops": draw(st.integers(0, 5)), "max_tuples": draw(st.integers(1, 3))}
    params.update(fixed)
    return generate(draw(st.integers(0, 2**32 - 1)), **params)


# ---------------------------------------------------------------------------------- dealership


def dealership(executions: int = 2) -> Generated:
    """A hand-built car dealership in the shape of Lipstick's Figure 2(c).

    ``dealer1`` has state ``Cars(CarId, Model)`` (C1 Accord, C2 Civic, C3 Civic) and the workflow
    input ``Requests``; per request it joins the cars of the model (``·`` of the state node and
    the request), groups them (``δ``, ``Count`` over ``⊗`` members with constant ``1``), calls the
    ``calcBid`` black box and outputs ``Bids`` (value ``Amount``). ``agg`` takes the bids, computes
    ``Min`` of the amounts (each ``⊗`` pairs a bid with its ``Amount`` v-node) and outputs ``BestBid``. Execution 1 requests B1 (Civic); execution 2
    requests B2 (Civic) and B3 (Accord). The state is rewritten unchanged, so execution 2 reads
    execution 1's state nodes.

    ``names``: ``Cars:C2``, ``Requests:B1``, ``dealer1[1]``, ``agg[1]``, ``state:C2[1]``,
    ``in:B1``, ``join:B1:C2``, ``group:B1``, ``count:B1``, ``calc:B1``, ``bids:B1``, ``amount:B1``,
    ``agg_in:B1``, ``agg_amount:B1``, ``agg_tensor:B1``, ``agg_group[1]``, ``min[1]``, ``best[1]``, ``best_amount[1]``.
    """
    r = Recorder(random.Random(0))
    requests = {1: [("B1", "P1", "Civic")], 2: [("B2", "P2", "Civic"), ("B3", "P3", "Accord")], 3: [("B4", "P1", "Civic")]}
    cars = [("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")]
    r.ctx = {"module": "dealer1"}
    seg = r.segment()
    state = [(r.node(positional(seg, i), "p", Op.TOKEN, f"Cars:{c}", seg, name=f"Cars:{c}", relation="Cars", tuple=_tuple(CarId=c)),
              {"CarId": c, "Model": model}) for i, (c, model) in enumerate(cars)]
    for e in range(1, executions + 1):
        inv = r.invocation("dealer1", "dealer1", e)
        r.names[f"dealer1[{e}]"] = inv
        tseg, iseg = r.segment(), r.segment()
        reqs = []
        for i, (bid, user, model) in enumerate(requests[e]):
            tok = r.node(positional(tseg, i), "p", Op.TOKEN, f"Requests:{bid}", tseg, name=f"Requests:{bid}", type="i",
                         relation="Requests", tuple=_tuple(BidId=bid))
            node = r.node(positional(iseg, i), "p", Op.INPUT, "·", iseg, name=f"in:{bid}", type="i", relation="Requests",
                          tuple=_tuple(UserId=user, BidId=bid, Model=model))
            r.edge(tok, node)
            r.edge(inv, node)
            reqs.append((bid, user, model, node))
        sseg = r.segment()
        read = []
        for i, (src, tup) in enumerate(state):
            s = r.node(positional(sseg, i), "p", Op.STATE, "·", sseg, name=f"state:{tup['CarId']}[{e}]", type="s", relation="Cars", tuple=json.dumps(tup))
            r.edge(src, s)
            r.edge(inv, s)
            read.append((s, tup))
        oseg, vseg = r.segment(), r.segment()
        bids = []
        for i, (bid, user, model, node) in enumerate(reqs):
            jseg = r.segment()
            joins = []
            for j, (s, tup) in enumerate(read):
                if tup["Model"] == model:
                    jn = r.node(positional(jseg, j + 2), "p", Op.TIMES, "·", jseg, name=f"join:{bid}:{tup['CarId']}")
                    r.edge(s, jn)
                    r.edge(node, jn)
                    joins.append(jn)
            gseg = r.segment()
            g = r.node(positional(gseg, 0), "p", Op.DELTA, "δ", gseg, name=f"group:{bid}")
            for jn in joins:
                r.edge(jn, g)
            cnt = r.node(aggregate_ids(g, 0), "v", Op.COUNT, "Count", gseg, name=f"count:{bid}", value=len(joins))
            for slot, jn in enumerate(joins):
                t = r.node(_tensor(gseg, slot), "v", Op.TENSOR, "⊗", gseg)
                c = r.node(_member_value(gseg, slot), "v", Op.CONSTANT, "1", gseg, value=1)
                r.edge(jn, t)
                r.edge(c, t)
                r.edge(t, cnt)
            amount = 20000.0 - 500.0 * max(len(joins) - 1, 0)
            bseg = r.segment()
            calc = r.node(positional(bseg, 2), "v", Op.BLACK_BOX, "calcBid", bseg, name=f"calc:{bid}", value=amount)
            r.edge(g, calc)
            r.edge(cnt, calc)
            out = r.node(positional(oseg, i), "p", Op.OUTPUT, "·", oseg, name=f"bids:{bid}", type="o", relation="Bids",
                         tuple=_tuple(BidId=bid, UserId=user, Model=model, Amount=amount))
            r.edge(node, out)
            r.edge(g, out)
            r.edge(inv, out)
            outv = r.node(positional(vseg, i), "v", Op.OUTPUT, "·", vseg, name=f"amount:{bid}", type="o", relation="Bids", column="Amount", value=amount)
            r.edge(calc, outv)
            r.edge(inv, outv)
            bids.append((bid, user, model, amount, out, outv))
        state = read  # rewritten unchanged

        ainv = r.invocation("agg", "agg", e)
        r.names[f"agg[{e}]"] = ainv
        aseg, avseg, gseg = r.segment(), r.segment(), r.segment()
        g = r.node(positional(gseg, 0), "p", Op.DELTA, "δ", gseg, name=f"agg_group[{e}]")
        best = min(bids, key=lambda b: b[3])
        mn = r.node(aggregate_ids(g, 0), "v", Op.MIN, "Min", gseg, name=f"min[{e}]", value=best[3])
        ins = {}
        for i, (bid, user, model, amount, out, outv) in enumerate(bids):
            tup = _tuple(BidId=bid, UserId=user, Model=model, Amount=amount)
            ai = r.node(positional(aseg, i), "p", Op.INPUT, "·", aseg, name=f"agg_in:{bid}", type="i", relation="Bids", tuple=tup)
            r.edge(out, ai)
            r.edge(ainv, ai)
            av = r.node(positional(avseg, i), "v", Op.INPUT, "·", avseg, name=f"agg_amount:{bid}", type="i", relation="Bids", column="Amount", value=amount)
            r.edge(outv, av)
            r.edge(ainv, av)
            r.edge(ai, g)
            t = r.node(_tensor(gseg, i), "v", Op.TENSOR, "⊗", gseg, name=f"agg_tensor:{bid}")
            r.edge(ai, t)
            r.edge(av, t)  # Amount has a v-node of its own: the ⊗ pairs the member with it
            r.edge(t, mn)
            ins[bid] = ai
        oseg, vseg = r.segment(), r.segment()
        bo = r.node(positional(oseg, 0), "p", Op.OUTPUT, "·", oseg, name=f"best[{e}]", type="o", relation="BestBid",
                    tuple=_tuple(BidId=best[0], UserId=best[1], Model=best[2], Amount=best[3]))
        r.edge(ins[best[0]], bo)
        r.edge(g, bo)
        r.edge(ainv, bo)
        bv = r.node(positional(vseg, 0), "v", Op.OUTPUT, "·", vseg, name=f"best_amount[{e}]", type="o", relation="BestBid", column="Amount", value=best[3])
        r.edge(mn, bv)
        r.edge(ainv, bv)
    return r.finish(["dealer1", "agg"])


# ---------------------------------------------------------------------------------- references


def nx_of(g: GraphIndex) -> nx.MultiDiGraph:
    """``g`` as networkx (GraphIndex.to_networkx; test_index checks it against the rows)."""
    return g.to_networkx()


def naive_delete(g: nx.MultiDiGraph, deleted: Iterable[int]) -> set[int]:
    """Definition 4.2, literally: remove the nodes, then repeat until nothing changes: remove
    every node that had incoming edges and lost all of them, or that is conjunctive (·, ⊗ and
    the module boundary nodes, :attr:`Op.conjunctive`) and lost one — except an aggregate
    v-node whose group's δ survives: it belongs to the group (members with a null argument
    have no ⊗), so it stays, over no values. Edges are a multiset: each copy counts."""
    removed = set(deleted)
    changed = True
    while changed:
        changed = False
        for v in g.nodes:
            if v in removed:
                continue
            group = group_of(g, v)
            if group is not None and group not in removed:
                continue
            sources = [u for u, _ in g.in_edges(v)]
            lost = [u for u in sources if u in removed]
            if sources and (len(lost) == len(sources) or (lost and Op(g.nodes[v]["op"]).conjunctive)):
                removed.add(v)
                changed = True
    return removed


def group_of(g: nx.MultiDiGraph, v: int) -> int | None:
    """The δ node of aggregate v-node ``v`` (its id XOR ``aggregate_salt(j)``), None for others."""
    if not Op(g.nodes[v]["op"]).is_aggregate:
        return None
    for j in range(8):
        d = aggregate_ids(v, j)
        if d in g.nodes and Op(g.nodes[d]["op"]) is Op.DELTA:
            return d
    return None


def signature(g: nx.MultiDiGraph | GraphIndex) -> tuple[dict[int, dict[str, Any]], Counter]:
    """Nodes (id → attributes without None) and the edge multiset of a graph."""
    if isinstance(g, GraphIndex):  # straight from the index's arrays (to_networkx is checked in test_index)
        recs = g.nodes.astype(object).where(g.nodes.notna(), None).to_dict("records")
        nodes = {int(r["id"]): {k: _py(v) for k, v in r.items() if k != "id" and v is not None} for r in recs}
        return nodes, Counter(zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist()))
    return {int(n): dict(a) for n, a in g.nodes(data=True)}, Counter((int(s), int(d)) for s, d in g.edges())


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def assert_same_graph(got: nx.MultiDiGraph | GraphIndex, want: nx.MultiDiGraph | GraphIndex) -> None:
    """Assert equal nodes (with attributes) and edge multisets, saying what differs."""
    gn, ge = signature(got)
    wn, we = signature(want)
    missing, extra = sorted(set(wn) - set(gn)), sorted(set(gn) - set(wn))
    assert not missing and not extra, f"nodes missing: {missing[:10]} ({len(missing)}), unexpected: {extra[:10]} ({len(extra)})"
    wrong = [(n, gn[n], wn[n]) for n in wn if gn[n] != wn[n]]
    assert not wrong, f"{len(wrong)} node(s) with other attributes, e.g. {wrong[:3]}"
    assert ge == we, f"edges missing: {list((we - ge).items())[:10]}, unexpected: {list((ge - we).items())[:10]}"


def ids_array(xs: Iterable[int]) -> np.ndarray:
    return np.asarray(sorted(int(x) for x in xs), dtype=np.int64)
