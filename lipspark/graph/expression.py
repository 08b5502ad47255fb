"""The provenance expression of a node, and its evaluation in a semiring: the one builder.

The expression is built bottom-up over the node's ancestors in topological order, one object
per node, so shared sub-graphs stay shared sub-expressions (a DAG); expand it only on request
(:func:`lipspark.semiring.normal_form`). What a node contributes is decided by its operator
(``g.op``, a :class:`~lipspark.vocabulary.Op`), never by its display label:

* TOKEN p-nodes are tokens named by their label (``Cars:C2``); INVOCATION p-nodes are the token
  ``M_<module>[<execution>]``, valued ``1`` unless a valuation names them (:func:`token_name`);
* TIMES, PLUS and DELTA p-nodes are products, sums and δ of their p-children; INPUT, STATE and
  OUTPUT p-nodes (a tuple crossing a module boundary) are the product of their p-children — the
  tuple's node · the invocation token;
* BLACK_BOX and ZOOM p-nodes are black boxes (named by their label) of their p-children;
* a MONUS p-node is ``a ⊖ b``: ``b`` is its child whose id is its subtrahend's
  (:func:`~lipspark.vocabulary.ids.monus_part_ids`), ``a`` the product of the others;
* an aggregate v-node (COUNT … AVG) is Σ pᵢ ⊗ vᵢ (:class:`~lipspark.semiring.AggValue`) over its
  TENSOR children, each pairing a member's p-node with a value node's recorded value;
* a CONSTANT v-node is its value; an INPUT/STATE/OUTPUT v-node passes the expression of the
  value it carries across the boundary through; a BLACK_BOX v-node (a value-level UDF) is a black
  box of the p-nodes it depends on (a black-box aggregate, ``stddev(R:1, R:2)``: of the group's
  members; an expression over aggregates: of the group's δ); the root of a formula over
  aggregates (ADD … INVERSE) likewise, a black box of its group's δ named by its column (its
  value is what a what-if recomputes), and its inner nodes their values; a CONDITION v-node (a
  window's black box depends on one) is its value.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> from lipspark.semiring import COUNTING
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "op": ["token", "token", "+", "δ"],
...                                    "label": ["R:a", "R:b", "+", "δ"]}),
...                      pd.DataFrame({"src": [1, 2, 3], "dst": [3, 3, 4]}))
>>> str(polynomial(g, 4))
'δ(R:a + R:b)'
>>> evaluate(g, 3, COUNTING, {"R:a": 2}, default=1)
3
>>> evaluate(g, 4, COUNTING, {"R:a": 2}, default=1, without_delta=True)   # derivations: δ as identity
3
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple

import numpy as np

from lipspark.errors import MissingValueError, QueryError, StoreError
from lipspark.semiring import ZERO, AggValue, Expr, Prefixes, Token, black_box, delta, expand, monus, plus, times
from lipspark.semiring import evaluate as evaluate_expr
from lipspark.semiring.evaluate import describe_tokens, missing_tokens
from lipspark.semiring.expanded import Expanded, ExpandedAggregate
from lipspark.semiring.semirings import Semiring
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import SUBTRAHEND, monus_part_ids

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.graph.index import GraphIndex

__all__ = ["polynomial", "expanded", "evaluate", "provenance_mapping", "KEEP_HINT", "token_name", "invocation_tokens", "expressions",
           "product", "Tensor"]

_MISSING: Any = object()

#: How a base tuple keeps a column beside its key (the fix an error about a column not kept names).
KEEP_HINT = ("keep it with Tracker.annotate(..., keep=[COLUMN]) or, in a workflow, Module(keep={RELATION: [COLUMN]}); "
             "a relation annotated without a key keeps all its columns")

_TOKEN, _INVOCATION, _CONSTANT, _TENSOR = int(Op.TOKEN), int(Op.INVOCATION), int(Op.CONSTANT), int(Op.TENSOR)
_CONDITION = int(Op.CONDITION)
_PRODUCTS = frozenset(int(o) for o in (Op.TIMES, Op.INPUT, Op.STATE, Op.OUTPUT))
#: v-nodes that carry their one v-child's value (module boundaries, a new state row's value)
_BOUNDARY = frozenset(int(o) for o in Op if o.carries_value)
_BLACK_BOXES = frozenset(int(o) for o in (Op.BLACK_BOX, Op.ZOOM))
_AGGREGATES = frozenset(int(o) for o in Op if o.is_aggregate)
_ARITHMETIC = frozenset(int(o) for o in Op if o.is_arithmetic)


class Tensor(NamedTuple):
    """What a ⊗ v-node stands for inside an aggregate: a member's provenance and its value.
    It has no polynomial of its own (an :class:`~lipspark.semiring.AggValue` is made of them)."""

    p: Any
    value: Any


def token_name(g: "GraphIndex", pos: int) -> str:
    """The token of a leaf p-node: its label, or ``M_<module>[<execution>]`` for an invocation.

    >>> import pandas as pd
    >>> from lipspark.graph.index import GraphIndex
    >>> g = GraphIndex.build(pd.DataFrame({"id": [8], "kind": "p", "op": "invocation", "label": "dealer1",
    ...                                    "execution": [2]}), pd.DataFrame({"src": [], "dst": []}))
    >>> token_name(g, 0)
    'M_dealer1[2]'
    """
    return _Shown(g, np.array([int(pos)], dtype=np.int64)).token(int(pos))


class _Shown:
    """Labels and values of the nodes an expression is built over, read in one batch."""

    def __init__(self, g: "GraphIndex", positions: np.ndarray) -> None:
        pos = positions.tolist()
        self.label = dict(zip(pos, g.column("label", positions).tolist()))
        self.value = dict(zip(pos, g.column("value", positions).tolist()))
        inv = positions[g.op[positions] == _INVOCATION]
        self.execution = dict(zip(inv.tolist(), g.column("execution", inv).tolist()))

    def token(self, pos: int) -> str:
        """The token of a leaf p-node (see :func:`token_name`)."""
        label = self.label.get(pos)
        label = "" if label is None else str(label)
        if pos in self.execution:
            ex = self.execution[pos]
            return f"M_{label}[{'' if ex is None else int(ex)}]"
        return label


def _p_expr(g: "GraphIndex", shown: _Shown, pos: int, op: int, exprs: list[Any], key: Prefixes) -> Any:
    # canonical display: · and + commute, so their terms are written in the order of their texts
    # (of the first few thousand characters: the whole text of a shared sub-expression can be
    # exponentially long; ties keep the children's order, by node id)
    if op == _TOKEN or op == _INVOCATION:
        return Token(shown.token(pos))
    if op in _PRODUCTS:
        return times(*sorted(exprs, key=key))
    if op == int(Op.PLUS):
        return plus(*sorted(exprs, key=key))
    if op == int(Op.DELTA):
        return delta(plus(*sorted(exprs, key=key)))
    if op in _BLACK_BOXES:
        return black_box(str(shown.label[pos]), *exprs)
    raise StoreError(f"p-node {int(g.ids[pos])} has operator {Op(op).name.lower()}, which only v-nodes have; the graph is corrupt")


def _v_expr(g: "GraphIndex", shown: _Shown, pos: int, op: int, kids: list[int], memo: dict[int, Any], key: Prefixes) -> Any:
    if op == _TENSOR:
        p = times(*[memo[c] for c in kids if not g.is_v[c]])
        vk = [c for c in kids if g.is_v[c]]
        return Tensor(p, shown.value[vk[0]] if vk else None)
    if op in _AGGREGATES:
        return AggValue(Op(op).label, tuple((memo[t].p, memo[t].value) for t in kids if isinstance(memo[t], Tensor)))
    if op == _CONSTANT or op == _CONDITION:  # a condition: a black box's v-child (a window over values), its value
        return shown.value[pos]
    if op in _BOUNDARY:  # a value carried across a module boundary: the value's own expression
        vk = [c for c in kids if g.is_v[c]]
        return memo[vk[0]] if vk else shown.value[pos]
    if op in _ARITHMETIC:  # a formula over aggregates: its root stands for its group (as a black box
        # of the group's δ, named by its column); its inner nodes are their values
        ps = [memo[c] for c in kids if not g.is_v[c]]
        return black_box(str(shown.label[pos]), *sorted(ps, key=key)) if ps else shown.value[pos]
    if op == int(Op.BLACK_BOX):
        if not kids:
            return shown.value[pos]
        # its p-children are a bag (a row and its bags' members, a group's members): canonical order
        return black_box(str(shown.label[pos]), *sorted([memo[c] for c in kids if not g.is_v[c]], key=key))
    raise StoreError(f"v-node {int(g.ids[pos])} has operator {Op(op).name.lower()}, which only p-nodes have; the graph is corrupt")


def expressions(g: "GraphIndex", root: int | np.ndarray) -> dict[int, Any]:
    """The expression of the node at position ``root`` (or of each of several positions) and of
    all their ancestors, by position (a :class:`Tensor` for ⊗ nodes): one pass over them, so
    the parts several roots share are built once."""
    order = g.topological(np.append(g.ancestors(root), root))
    shown = _Shown(g, order)
    memo: dict[int, Any] = {}
    key = Prefixes()
    for pos in order.tolist():
        kids = sorted(g.children(pos).tolist())
        op = int(g.op[pos])
        if g.is_v[pos]:
            memo[pos] = _v_expr(g, shown, pos, op, kids, memo, key)
        elif op == int(Op.MONUS):
            sub = monus_part_ids(int(g.ids[pos]), SUBTRAHEND)
            right = [k for k in kids if int(g.ids[k]) == sub]
            left = [memo[k] for k in kids if int(g.ids[k]) != sub and not g.is_v[k]]
            # a subtrahend removed (a view after a deletion) is δ(0) = 0: the row is there
            memo[pos] = monus(times(*sorted(left, key=key)), memo[right[0]] if right else ZERO)
        else:
            memo[pos] = _p_expr(g, shown, pos, op, [memo[k] for k in kids if not g.is_v[k]], key)
    return memo


def polynomial(g: "GraphIndex", node: int) -> Any:
    """The provenance expression of the node with id ``node``: an Expr for a p-node, an
    :class:`~lipspark.semiring.AggValue` for an aggregate v-node, a constant for a constant."""
    pos = g.position(node)
    return expressions(g, pos)[pos]


def product(g: "GraphIndex", nodes: Iterable[int]) -> Any:
    """The · of the expressions of the nodes with ids ``nodes`` (a row's annotation)."""
    return times(*[polynomial(g, n) for n in nodes])


def invocation_tokens(g: "GraphIndex", node: int) -> set[str]:
    """The invocation tokens (``M_<module>[<execution>]``) the node's expression mentions."""
    pos = g.position(node)
    up = np.append(g.ancestors(pos), pos)
    inv = up[g.op[up] == _INVOCATION]
    return set(_Shown(g, inv).token(p) for p in inv.tolist())


def expanded(g: "GraphIndex", node: int) -> Expanded | ExpandedAggregate | Any:
    """The node's provenance multiplied out into monomials (:func:`lipspark.semiring.expand`),
    each invocation token once per monomial, as the paper writes them; a constant stays itself."""
    expr = polynomial(g, node)
    if isinstance(expr, (Expr, AggValue)):
        return expand(expr, once=invocation_tokens(g, node))
    return expr


def evaluate(g: "GraphIndex", node: int, semiring: Semiring[Any], valuation: Mapping[str, Any] | Callable[[str], Any] | None = None,
             default: Any = _MISSING, *, without_delta: bool = False) -> Any:
    """Evaluate the node's provenance in ``semiring``.

    ``valuation`` maps token names to semiring values (each through ``semiring.coerce``); an
    invocation token it does not name is ``one`` (the invocation took place), any other token
    it does not name gets ``default``. Without a default, the tokens left without a value raise
    :class:`~lipspark.errors.MissingValueError` naming them — never a guessed value — except in
    a symbolic semiring (Why, Lineage), where a token stands for itself. ``without_delta``
    evaluates δ as the identity (Counting then counts derivations).
    """
    expr = polynomial(g, node)
    invocations = invocation_tokens(g, node)
    if callable(valuation) and not isinstance(valuation, Mapping):  # it values every token, invocations too
        return evaluate_expr(expr, semiring, valuation, without_delta=without_delta)
    mapping = dict(valuation or {})
    for name in invocations:
        mapping.setdefault(name, semiring.one)
    if default is _MISSING and not semiring.symbolic and isinstance(expr, (Expr, AggValue)):
        missing = missing_tokens(expr, mapping)
        if missing:
            raise MissingValueError(
                f"expected a value for every token in the {semiring} semiring; found none for {len(missing)} token(s): "
                f"{describe_tokens(missing)}. Fix: give them values in the valuation (provenance_mapping(g, relation, "
                f"column) gives a relation's tokens the values of a column), or pass default=...", missing)
    if default is _MISSING:
        return evaluate_expr(expr, semiring, mapping, without_delta=without_delta)
    return evaluate_expr(expr, semiring, mapping, default=default, without_delta=without_delta)


def provenance_mapping(g: "GraphIndex", relation: str, column: str) -> dict[str, Any]:
    """Each base tuple (token) of ``relation`` → the value of its ``column``: ProvSQL's
    ``create_provenance_mapping(name, relation, column)``, a valuation for :func:`evaluate`.

    A token keeps its key columns (or, for a relation annotated without a key, all of them)
    and the columns it was asked to keep (``Tracker.annotate(..., keep=[...])``,
    ``Module(keep={...})``). A token whose column is null is left out: it needs a value another
    way, or a default. Raises :class:`~lipspark.errors.QueryError` in one line when the graph
    has no base tuple of ``relation`` or its tuples do not keep ``column`` (naming the columns
    they keep and how to keep more).

    >>> import pandas as pd
    >>> from lipspark.graph.index import GraphIndex
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": "token", "label": ["A:1", "A:2"], "relation": "A",
    ...                                    "tuple": ['{"id": 1, "level": "secret"}', '{"id": 2, "level": null}']}),
    ...                      pd.DataFrame({"src": [], "dst": []}))
    >>> provenance_mapping(g, "A", "level")
    {'A:1': 'secret'}
    >>> provenance_mapping(g, "A", "name")
    Traceback (most recent call last):
    ...
    lipspark.errors.QueryError: the base tuples of A keep no column 'name' (they keep: id, level); keep it with Tracker.annotate(..., keep=['name']) or, in a workflow, Module(keep={'A': ['name']}); a relation annotated without a key keeps all its columns
    """
    tokens = np.flatnonzero(g.where("relation", [relation]) & (np.asarray(g.op) == _TOKEN))
    if not len(tokens):
        known = sorted({str(r) for r in g.distinct("relation", np.flatnonzero(np.asarray(g.op) == _TOKEN)) if isinstance(r, str)})
        raise QueryError(f"no base tuples of relation {relation!r} in this graph (relations with base tuples: {', '.join(known) or 'none'})")
    shown = _Shown(g, tokens)
    out: dict[str, Any] = {}
    kept: set[str] = set()
    lacking = 0
    for pos, text in zip(tokens.tolist(), g.column("tuple", tokens).tolist()):
        row = json.loads(text) if isinstance(text, str) else {}
        kept.update(row)
        if column not in row:
            lacking += 1
        elif row[column] is not None:
            out[shown.token(pos)] = row[column]
    if lacking:
        hint = KEEP_HINT.replace("[COLUMN]", repr([column])).replace("{RELATION: ", "{" + repr(relation) + ": ")
        some = f"{lacking} of the {len(tokens)} base tuples" if lacking < len(tokens) else "the base tuples"
        raise QueryError(f"{some} of {relation} keep no column {column!r} (they keep: {', '.join(sorted(kept)) or 'nothing'}); {hint}")
    return out
