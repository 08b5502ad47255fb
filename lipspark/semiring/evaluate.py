"""Evaluate provenance expressions and aggregate values in a semiring.

Evaluation is iterative (an explicit stack, so arbitrarily deep expressions are fine) and
memoized: each structurally distinct sub-expression is evaluated once.

>>> from lipspark.semiring import Token, delta, COUNTING, BOOLEAN
>>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
>>> e = delta(c2 * b1 + c3 * b1)
>>> evaluate(e, COUNTING, {"Cars:C2": 2, "Cars:C3": 1, "Req:B1": 1})
1
>>> evaluate(e, BOOLEAN, {"Cars:C2": False}, default=True)
True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lipspark.errors import SemiringError
from lipspark.semiring._nodes import BlackBox, Delta, Expr, Product, Sum, Token, _One, _Zero
from lipspark.semiring._traverse import fold_many
from lipspark.semiring.expr import AggValue
from lipspark.semiring.semirings import Semiring

__all__ = ["evaluate"]

K = TypeVar("K")

_MISSING: Any = object()

Valuation = Mapping[str, Any] | Callable[[str], Any] | None


def _lookup(semiring: Semiring[K], valuation: Valuation, default: Any) -> Callable[[str], K]:
    if valuation is None:
        return semiring.token_value
    if isinstance(valuation, Mapping):
        mapping = valuation

        def look(name: str) -> K:
            if name in mapping:
                return mapping[name]
            if default is _MISSING:
                raise SemiringError(
                    f"expected the valuation to give a value for token {name!r}; found none "
                    f"({len(mapping)} tokens mapped). Fix: add {name!r} to the mapping or "
                    f"pass default=..., e.g. default={semiring.one!r}."
                )
            return default

        return look
    if callable(valuation):
        return valuation
    raise SemiringError(
        f"expected a valuation that is a Mapping[str, K], a callable token -> K, or None; "
        f"found {type(valuation).__name__}. Fix: pass e.g. {{'Cars:C2': ...}}."
    )


def evaluate(
    expr: Expr | AggValue,
    semiring: Semiring[K],
    valuation: Valuation = None,
    *,
    default: Any = _MISSING,
) -> Any:
    """Evaluate ``expr`` in ``semiring`` under a valuation of its tokens.

    Parameters
    ----------
    expr : Expr or AggValue
        A provenance expression (result in K) or an aggregate value ``Σ tᵢ ⊗ vᵢ``
        (each ``tᵢ`` is evaluated, then ``semiring.aggregate(op, pairs)`` is returned).
    semiring : Semiring
        The semiring, e.g. :data:`~lipspark.semiring.COUNTING`.
    valuation : Mapping[str, K] or Callable[[str], K] or None
        Token name to annotation. ``None`` uses ``semiring.token_value`` (e.g. ``{{t}}``
        for Why, ``{t}`` for Lineage, ``one`` otherwise).
    default : K, optional
        Annotation of tokens missing from a mapping valuation. Without it a missing
        token raises :class:`~lipspark.errors.SemiringError` naming the token.

    Returns
    -------
    K or aggregate result

    Examples
    --------
    >>> from lipspark.semiring import Token, AggValue, COUNTING, BOOLEAN, LINEAGE
    >>> a, b = Token("a"), Token("b")
    >>> evaluate(a * (a + b), COUNTING, {"a": 2, "b": 3})
    10
    >>> sorted(evaluate(a * (a + b), LINEAGE))
    ['a', 'b']
    >>> evaluate(AggValue("Sum", ((a, 10), (b, 5))), BOOLEAN, lambda t: t == "a")
    10
    """
    if not isinstance(semiring, Semiring):
        raise SemiringError(
            f"expected a Semiring; found {type(semiring).__name__} {semiring!r}. "
            f"Fix: pass e.g. lipspark.semiring.COUNTING or get_semiring('counting')."
        )
    look = _lookup(semiring, valuation, default)

    def combine(node: Expr, kids: list[K]) -> K:
        if isinstance(node, Token):
            return look(node.name)
        if isinstance(node, _Zero):
            return semiring.zero
        if isinstance(node, _One):
            return semiring.one
        if isinstance(node, Sum):
            return _fold(semiring.plus, kids, semiring.zero)
        if isinstance(node, Product):
            return _fold(semiring.times, kids, semiring.one)
        if isinstance(node, Delta):
            return semiring.delta(kids[0])
        if isinstance(node, BlackBox):
            return semiring.black_box(kids)
        raise SemiringError(
            f"expected an Expr node (Token, ZERO, ONE, Sum, Product, Delta, BlackBox); found "
            f"{type(node).__name__}. Fix: build expressions with lipspark.semiring constructors."
        )

    if isinstance(expr, AggValue):
        values = fold_many([p for p, _ in expr.terms], combine)
        pairs = [(k, v) for k, (_, v) in zip(values, expr.terms)]
        return semiring.aggregate(expr.op, pairs)
    if not isinstance(expr, Expr):
        raise SemiringError(
            f"expected an Expr or AggValue; found {type(expr).__name__} {expr!r}. "
            f"Fix: wrap base tuples as Token('name')."
        )
    return fold_many([expr], combine)[0]


def _fold(op: Callable[[K, K], K], items: list[K], empty: K) -> K:
    if not items:
        return empty
    acc = items[0]
    for item in items[1:]:
        acc = op(acc, item)
    return acc
