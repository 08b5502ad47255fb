"""The provenance polynomial of a node, and its evaluation in a semiring, from the index.

The expression is built bottom-up over the node's ancestors in topological order, one object
per node, so shared sub-graphs stay shared sub-expressions (a DAG); expand it only on request
(:func:`lipspark.semiring.normal_form`). Node labels map to the operations of the paper:

* a p-node without children is a token: a base tuple (``Cars:C2``) or a module invocation,
  written ``M_dealer1[2]`` (module, execution) and valued ``1`` unless a valuation says otherwise;
* ``·``, ``+``, ``δ`` p-nodes are products, sums and δ; any other p-node label is a black box
  (a relation-level UDF, or a zoomed-out module);
* a v-node labelled Count/Sum/Min/Max/Avg is an aggregate value Σ pᵢ ⊗ vᵢ over its ⊗ children;
  a v-node without children is a constant; a ``·`` v-node carrying a value across a module
  boundary is the expression of that value; other v-nodes (black-box results) are black boxes of
  the p-nodes they depend on.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> from lipspark.semiring import COUNTING
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "label": ["R:a", "R:b", "+", "δ"],
...                                    "relation": ["R", "R", None, None]}),
...                      pd.DataFrame({"src": [1, 2, 3], "dst": [3, 3, 4]}))
>>> str(polynomial(g, 4))
'δ(R:a + R:b)'
>>> evaluate(g, 3, COUNTING, {"R:a": 2}, default=1)
3
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from lipspark.graph.index import NODE_TYPES, GraphIndex
from lipspark.semiring import AggValue, Token, black_box, delta, plus, times
from lipspark.semiring import evaluate as evaluate_expr
from lipspark.semiring.semirings import Semiring

__all__ = ["polynomial", "evaluate", "token_name", "AGGREGATE_LABELS"]

AGGREGATE_LABELS = frozenset({"Count", "Sum", "Min", "Max", "Avg"})
_M = NODE_TYPES.index("m")


def token_name(g: GraphIndex, pos: int) -> str:
    """The token of a leaf p-node: its label, or ``M_<module>[<execution>]`` for an invocation."""
    if g.type_code[pos] == _M:
        ex = g.nodes["execution"].iat[int(pos)]
        return f"M_{g.label(pos)}[{'' if ex is None or ex is np.nan or str(ex) == '<NA>' else int(ex)}]"
    return g.label(pos)


def _is_relation(g: GraphIndex, pos: int) -> bool:
    r = g.nodes["relation"].iat[int(pos)]
    return r is not None and not (isinstance(r, float) and np.isnan(r))


def _exprs(g: GraphIndex, root: int) -> dict[int, Any]:
    order = g.topological(np.append(g.ancestors(root), root))
    memo: dict[int, Any] = {}
    for pos in order.tolist():
        kids = sorted(g.children(pos).tolist())
        label = g.label(pos)
        if not g.is_v[pos]:
            exprs = [memo[k] for k in kids if not g.is_v[k]]
            if not kids and (g.type_code[pos] == _M or _is_relation(g, pos)):
                memo[pos] = Token(token_name(g, pos))
            elif label == "·":
                memo[pos] = times(*sorted(exprs, key=str))
            elif label == "+":
                memo[pos] = plus(*sorted(exprs, key=str))
            elif label == "δ":
                memo[pos] = delta(plus(*sorted(exprs, key=str)))
            else:
                memo[pos] = black_box(label, *exprs)
        elif label == "⊗":
            memo[pos] = ("⊗", kids)
        elif label in AGGREGATE_LABELS:
            terms = []
            for t in kids:
                tk = memo[t][1]
                p = times(*[memo[c] for c in tk if not g.is_v[c]])
                vk = [c for c in tk if g.is_v[c]]
                terms.append((p, g.value(vk[0]) if vk else None))
            memo[pos] = AggValue(label, tuple(terms))
        elif not kids:
            memo[pos] = g.value(pos)
        elif label == "·" and any(g.is_v[k] for k in kids):  # a value carried across a module boundary
            memo[pos] = memo[next(k for k in kids if g.is_v[k])]
        else:
            memo[pos] = black_box(label, *[memo[k] for k in kids if not g.is_v[k]])
    return memo


def polynomial(g: GraphIndex, node: int) -> Any:
    """The provenance expression of the node with id ``node`` (an Expr, or an AggValue for an
    aggregate v-node, or a constant for a constant v-node)."""
    pos = g.position(node)
    return _exprs(g, pos)[pos]


def evaluate(g: GraphIndex, node: int, semiring: Semiring[Any], valuation: Mapping[str, Any] | Callable[[str], Any] | None = None,
             default: Any = None) -> Any:
    """Evaluate the node's provenance in ``semiring``.

    ``valuation`` maps token names to semiring values; tokens it does not name get ``default``
    (when given) or the semiring's own token value; invocation tokens get ``one`` unless named.
    """
    expr = polynomial(g, node)
    mapping = dict(valuation) if isinstance(valuation, Mapping) else None

    def look(name: str) -> Any:
        if mapping is not None and name in mapping:
            return mapping[name]
        if mapping is None and callable(valuation):
            return valuation(name)
        if name.startswith("M_") and name.endswith("]"):
            return semiring.one
        return semiring.token_value(name) if default is None else default

    return evaluate_expr(expr, semiring, look)
