"""Tests of lipspark.export, on small hand-built graphs (no Spark).

:func:`figure2c` is one execution of a car dealer in the shape of Lipstick's Figure 2(c): an
invocation ``dealer1`` (id 100) with the request token ``Requests:B1`` (1) feeding the input
node (10), the state tokens ``Cars:C1..C3`` (2, 3, 4) feeding the state nodes (11, 12, 13), the
joins of the request with the two Civic cars (``·``, ids -21 and -22, hash-like negative ids),
the group (``δ``, -30), its ``Count`` (31) over two ``⊗`` (32, 34) each pairing a join with a
constant ``1`` (33, 35), the ``calcBid`` black box (40), the output tuple (50) and the output
value (51). Beyond the figure, so that every semiring operation occurs: a ``+`` (60) using
state node 12 twice (a multi-edge) and 13 once, and a relation-level black box ``rankCars`` (70)
of it.
"""
from __future__ import annotations

import json

import pandas as pd

from lipspark.graph.index import GraphIndex
from lipspark.vocabulary import Op

__all__ = ["COLUMNS", "FIG_EDGES", "FIG_NODES", "figure2c"]

COLUMNS = ["id", "kind", "op", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]
_CTX = {"module": "dealer1", "node": "dealer1", "execution": 1, "invocation": 100}


def _n(nid: int, kind: str, op: Op, label: str, ctx: bool = True, **attrs: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(COLUMNS)
    if ctx:
        row.update(_CTX)
    row.update(id=nid, kind=kind, op=op, label=label, **attrs)
    return row


def _t(**cols: object) -> str:
    return json.dumps(cols)


FIG_NODES = [
    _n(100, "p", Op.INVOCATION, "dealer1", type="m"),
    _n(1, "p", Op.TOKEN, "Requests:B1", ctx=False, relation="Requests", tuple=_t(BidId="B1")),
    _n(2, "p", Op.TOKEN, "Cars:C1", ctx=False, relation="Cars", tuple=_t(CarId="C1")),
    _n(3, "p", Op.TOKEN, "Cars:C2", ctx=False, relation="Cars", tuple=_t(CarId="C2")),
    _n(4, "p", Op.TOKEN, "Cars:C3", ctx=False, relation="Cars", tuple=_t(CarId="C3")),
    _n(10, "p", Op.INPUT, "·", type="i", relation="Requests", tuple=_t(BidId="B1", UserId="P1", Model="Civic")),
    _n(11, "p", Op.STATE, "·", type="s", relation="Cars", tuple=_t(CarId="C1", Model="Accord")),
    _n(12, "p", Op.STATE, "·", type="s", relation="Cars", tuple=_t(CarId="C2", Model="Civic")),
    _n(13, "p", Op.STATE, "·", type="s", relation="Cars", tuple=_t(CarId="C3", Model="Civic")),
    _n(-21, "p", Op.TIMES, "·"),
    _n(-22, "p", Op.TIMES, "·"),
    _n(-30, "p", Op.DELTA, "δ"),
    _n(31, "v", Op.COUNT, "Count", value=2),
    _n(32, "v", Op.TENSOR, "⊗"),
    _n(33, "v", Op.CONSTANT, "1", value=1),
    _n(34, "v", Op.TENSOR, "⊗"),
    _n(35, "v", Op.CONSTANT, "1", value=1),
    _n(40, "v", Op.BLACK_BOX, "calcBid", value=19500.0),
    _n(50, "p", Op.OUTPUT, "·", type="o", relation="Bids", tuple=_t(BidId="B1", UserId="P1", Model="Civic", Amount=19500.0)),
    _n(51, "v", Op.OUTPUT, "·", type="o", relation="Bids", column="Amount", value=19500.0),
    _n(60, "p", Op.PLUS, "+"),
    _n(70, "p", Op.BLACK_BOX, "rankCars"),
]

FIG_EDGES = [
    (1, 10), (100, 10),
    (2, 11), (3, 12), (4, 13), (100, 11), (100, 12), (100, 13),
    (10, -21), (12, -21), (10, -22), (13, -22),
    (-21, -30), (-22, -30),
    (-21, 32), (33, 32), (-22, 34), (35, 34), (32, 31), (34, 31),
    (-30, 40), (31, 40),
    (10, 50), (-30, 50), (100, 50),
    (40, 51), (100, 51),
    (12, 60), (12, 60), (13, 60),
    (60, 70),
]


def figure2c() -> GraphIndex:
    """The graph described in the module docstring."""
    nodes = pd.DataFrame({c: pd.Series([r[c] for r in FIG_NODES], dtype=object) for c in COLUMNS})
    nodes["id"] = nodes["id"].astype("int64")
    edges = pd.DataFrame({"src": [s for s, _ in FIG_EDGES], "dst": [d for _, d in FIG_EDGES]}, dtype="int64")
    return GraphIndex.build(nodes, edges)
