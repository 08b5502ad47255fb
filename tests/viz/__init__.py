"""Tests of :mod:`lipspark.viz`, and small hand-made graphs to draw (no Spark).

:func:`figure2c` is the fine-grained provenance of one bid of ``dealer1`` in the shape of the
Lipstick paper's Figure 2(c), followed by an ``agg`` invocation; ``evil=True`` adds a car whose
label, tuple and module carry HTML/JavaScript payloads that set ``window.__pwned``.
"""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from lipspark.graph.index import GraphIndex

__all__ = ["FIG", "PAYLOAD_IMG", "PAYLOAD_MODULE", "PAYLOAD_SCRIPT", "build", "figure2c"]

#: ids of the interesting nodes of :func:`figure2c` (an invocation id | 1 is free for ZoomOut); the two joins get ids past 2**53, which
#: JavaScript numbers cannot tell apart (the drawing must use string ids)
FIG = {
    "Cars:C2": 1, "Cars:C3": 2, "Requests:B1": 3, "evil": 4,
    "dealer1": 100, "in": 11, "state:C2": 12, "state:C3": 13, "join:C2": (1 << 62) + 1, "join:C3": (1 << 62) + 2,
    "group": 16, "state:evil": 17, "count": 20, "tensor:C2": 21, "tensor:C3": 22, "one:C2": 23, "one:C3": 24,
    "calcBid": 25, "bids": 30, "amount": 31, "agg": 200, "agg_in": 41, "best": 42,
}
PAYLOAD_SCRIPT = "<script>window.__pwned=1</script>"
PAYLOAD_IMG = '<img src=x onerror="window.__pwned=2">'
PAYLOAD_MODULE = "<img src=x onerror=window.__pwned=3>"


def _t(**kw: Any) -> str:
    return json.dumps(kw)


def build(rows: list[dict[str, Any]], edges: list[tuple[int, int]]) -> GraphIndex:
    """A GraphIndex from node rows (missing attributes None) and (src, dst) id pairs."""
    cols = ["id", "kind", "op", "label", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]
    nodes = pd.DataFrame({c: pd.Series([r.get(c) for r in rows], dtype=object) for c in cols})
    nodes["id"] = nodes["id"].astype("int64")
    e = pd.DataFrame({"src": pd.Series([s for s, _ in edges], dtype="int64"), "dst": pd.Series([d for _, d in edges], dtype="int64")})
    return GraphIndex.build(nodes, e)


def figure2c(*, evil: bool = False) -> GraphIndex:
    """Figure 2(c): ``dealer1`` (execution 1) answers request B1 (Civic) with the cars C2 and C3,
    and ``agg`` takes its bid. 21 nodes (23 with ``evil``), 29 edges (31)."""
    f = FIG
    d1 = {"module": "dealer1", "node": "dealer1", "execution": 1, "invocation": f["dealer1"]}
    ag = {"module": "agg", "node": "agg", "execution": 1, "invocation": f["agg"]}
    rows = [
        {"id": f["Cars:C2"], "kind": "p", "op": "token", "label": "Cars:C2", "relation": "Cars", "tuple": _t(CarId="C2", Model="Civic")},
        {"id": f["Cars:C3"], "kind": "p", "op": "token", "label": "Cars:C3", "relation": "Cars", "tuple": _t(CarId="C3", Model="Civic")},
        {"id": f["Requests:B1"], "kind": "p", "op": "token", "label": "Requests:B1", "relation": "Requests", "tuple": _t(BidId="B1")},
        {"id": f["dealer1"], "kind": "p", "op": "invocation", "label": "dealer1", "type": "m", **d1},
        {"id": f["in"], "kind": "p", "op": "input", "label": "·", "type": "i", "relation": "Requests", "tuple": _t(UserId="P1", BidId="B1", Model="Civic"), **d1},
        {"id": f["state:C2"], "kind": "p", "op": "state", "label": "·", "type": "s", "relation": "Cars", "tuple": _t(CarId="C2", Model="Civic"), **d1},
        {"id": f["state:C3"], "kind": "p", "op": "state", "label": "·", "type": "s", "relation": "Cars", "tuple": _t(CarId="C3", Model="Civic"), **d1},
        {"id": f["join:C2"], "kind": "p", "op": "times", "label": "·", **d1},
        {"id": f["join:C3"], "kind": "p", "op": "times", "label": "·", **d1},
        {"id": f["group"], "kind": "p", "op": "delta", "label": "δ", **d1},
        {"id": f["count"], "kind": "v", "op": "count", "label": "Count", "value": 2, **d1},
        {"id": f["tensor:C2"], "kind": "v", "op": "tensor", "label": "⊗", **d1},
        {"id": f["tensor:C3"], "kind": "v", "op": "tensor", "label": "⊗", **d1},
        {"id": f["one:C2"], "kind": "v", "op": "constant", "label": "1", "value": 1, **d1},
        {"id": f["one:C3"], "kind": "v", "op": "constant", "label": "1", "value": 1, **d1},
        {"id": f["calcBid"], "kind": "v", "op": "black_box", "label": "calcBid", "value": 19500.0, **d1},
        {"id": f["bids"], "kind": "p", "op": "output", "label": "·", "type": "o", "relation": "Bids",
         "tuple": _t(BidId="B1", UserId="P1", Model="Civic", Amount=19500.0), **d1},
        {"id": f["amount"], "kind": "v", "op": "output", "label": "·", "type": "o", "relation": "Bids", "column": "Amount", "value": 19500.0, **d1},
        {"id": f["agg"], "kind": "p", "op": "invocation", "label": "agg", "type": "m", **ag},
        {"id": f["agg_in"], "kind": "p", "op": "input", "label": "·", "type": "i", "relation": "Bids", "tuple": _t(BidId="B1", Amount=19500.0), **ag},
        {"id": f["best"], "kind": "p", "op": "output", "label": "·", "type": "o", "relation": "BestBid", "tuple": _t(BidId="B1", Amount=19500.0), **ag},
    ]
    edges = [
        (f["Requests:B1"], f["in"]), (f["dealer1"], f["in"]),
        (f["Cars:C2"], f["state:C2"]), (f["dealer1"], f["state:C2"]),
        (f["Cars:C3"], f["state:C3"]), (f["dealer1"], f["state:C3"]),
        (f["state:C2"], f["join:C2"]), (f["in"], f["join:C2"]),
        (f["state:C3"], f["join:C3"]), (f["in"], f["join:C3"]),
        (f["join:C2"], f["group"]), (f["join:C3"], f["group"]),
        (f["join:C2"], f["tensor:C2"]), (f["one:C2"], f["tensor:C2"]),
        (f["join:C3"], f["tensor:C3"]), (f["one:C3"], f["tensor:C3"]),
        (f["tensor:C2"], f["count"]), (f["tensor:C3"], f["count"]),
        (f["group"], f["calcBid"]), (f["count"], f["calcBid"]),
        (f["in"], f["bids"]), (f["group"], f["bids"]), (f["dealer1"], f["bids"]),
        (f["calcBid"], f["amount"]), (f["dealer1"], f["amount"]),
        (f["bids"], f["agg_in"]), (f["agg"], f["agg_in"]),
        (f["agg_in"], f["best"]), (f["agg"], f["best"]),
    ]
    if evil:
        rows += [
            {"id": f["evil"], "kind": "p", "op": "token", "label": "Cars:" + PAYLOAD_IMG, "relation": "Cars" + PAYLOAD_SCRIPT,
             "tuple": _t(CarId=PAYLOAD_SCRIPT, Model=PAYLOAD_IMG), "module": PAYLOAD_MODULE},
            {"id": f["state:evil"], "kind": "p", "op": "state", "label": "·", "type": "s", "relation": "Cars",
             "tuple": _t(CarId=PAYLOAD_SCRIPT, Model=PAYLOAD_IMG), **d1},
        ]
        edges += [(f["evil"], f["state:evil"]), (f["dealer1"], f["state:evil"])]
    return build(rows, edges)
