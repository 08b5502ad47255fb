"""Evaluate provenance expressions and aggregate values in a semiring.

Evaluation is iterative (an explicit stack, so arbitrarily deep expressions are fine) and
memoized: each structurally distinct sub-expression is evaluated once.

Every token needs a value: one the valuation gives, else ``default``; a token left without
either is an error naming it (:class:`~lipspark.errors.MissingValueError`), never a guess —
a security level that defaulted to the least restrictive one would fail open. Only a
:attr:`~lipspark.semiring.Semiring.symbolic` semiring (Why, Lineage), in which a token stands
for itself, needs no valuation.

>>> from lipspark.semiring import Token, delta, COUNTING, BOOLEAN
>>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
>>> e = delta(c2 * b1 + c3 * b1)
>>> evaluate(e, COUNTING, {"Cars:C2": 2, "Cars:C3": 1, "Req:B1": 1})
1
>>> evaluate(e, COUNTING, {}, default=1, without_delta=True)   # the number of derivations
2
>>> evaluate(e, BOOLEAN, {"Cars:C2": False}, default=True)
True
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from lipspark.errors import MissingValueError, SemiringError
from lipspark.semiring._nodes import BlackBox, Delta, Expr, Monus, Product, Sum, Token, _One, _Zero
from lipspark.semiring._traverse import fold_many
from lipspark.semiring.expr import AggValue, tokens
from lipspark.semiring.semirings import Semiring

__all__ = ["evaluate", "describe_tokens", "missing_tokens"]

K = TypeVar("K")

_MISSING: Any = object()

Valuation = Mapping[str, Any] | Callable[[str], Any] | None


def describe_tokens(names: Collection[str], limit: int = 5) -> str:
    """Tokens for a message: the first ``limit`` (sorted) and how many more.

    >>> describe_tokens(["c", "a", "b"]), describe_tokens([f"t{i}" for i in range(9)], 2)
    ('a, b, c', 't0, t1 and 7 more')
    """
    ordered = sorted(names)
    shown = ", ".join(ordered[:limit])
    return shown if len(ordered) <= limit else f"{shown} and {len(ordered) - limit} more"


def missing_tokens(expr: Expr | AggValue, known: Collection[str]) -> tuple[str, ...]:
    """The tokens of ``expr`` not in ``known``, sorted.

    >>> missing_tokens(Token("a") * Token("b") + Token("c"), {"b"})
    ('a', 'c')
    """
    return tuple(sorted(t for t in tokens(expr) if t not in known))


def _missing_error(semiring: Semiring[Any], names: tuple[str, ...]) -> MissingValueError:
    return MissingValueError(
        f"expected a value for every token in the {semiring} semiring; found none for "
        f"{len(names)} token(s): {describe_tokens(names)}. Fix: give them values in the "
        f"valuation, or pass default=... for every token the valuation does not name.",
        names,
    )


def _lookup(semiring: Semiring[K], valuation: Valuation, default: Any, expr: Expr | AggValue) -> Callable[[str], K]:
    coerce = semiring.coerce
    fallback: Callable[[str], K] | None = None
    if default is not _MISSING:
        given = coerce(default)
        fallback = lambda name: given  # noqa: E731
    elif semiring.symbolic:
        fallback = semiring.token_value
    if valuation is None:
        valuation = {}
    if isinstance(valuation, Mapping):
        mapping = valuation
        if fallback is None:
            missing = missing_tokens(expr, mapping)
            if missing:
                raise _missing_error(semiring, missing)

        def look(name: str) -> K:
            if name in mapping:
                return coerce(mapping[name])
            assert fallback is not None  # every token was checked above
            return fallback(name)

        return look
    if callable(valuation):
        func = valuation

        def call(name: str) -> K:
            return coerce(func(name))

        return call
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
    without_delta: bool = False,
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
        Token name to value; each value goes through ``semiring.coerce`` (a level must be one
        of the semiring's, a count a whole number >= 0, …). ``None`` is the empty mapping.
    default : K, optional
        The value of every token the mapping does not name. Without it such a token raises
        :class:`~lipspark.errors.MissingValueError` naming the tokens left without a value —
        except in a symbolic semiring (Why, Lineage), where a token stands for itself.
    without_delta : bool, default False
        Evaluate δ as the identity: in Counting the result is then the number of derivations
        (the δ of a group or a distinct counts each of its members' derivations, where δ
        makes it 1). δ is already the identity in every other built-in semiring.

    Returns
    -------
    K or aggregate result

    Examples
    --------
    >>> from lipspark.semiring import Token, AggValue, COUNTING, BOOLEAN, LINEAGE, SECURITY
    >>> a, b = Token("a"), Token("b")
    >>> evaluate(a * (a + b), COUNTING, {"a": 2, "b": 3})
    10
    >>> sorted(evaluate(a * (a + b), LINEAGE))
    ['a', 'b']
    >>> evaluate(AggValue("Sum", ((a, 10), (b, 5))), BOOLEAN, lambda t: t == "a")
    10
    >>> evaluate(a * b, SECURITY, {"a": "secret"})
    Traceback (most recent call last):
    ...
    lipspark.errors.MissingValueError: expected a value for every token in the security semiring; found none for 1 token(s): b. Fix: give them values in the valuation, or pass default=... for every token the valuation does not name.
    """
    if not isinstance(semiring, Semiring):
        raise SemiringError(
            f"expected a Semiring; found {type(semiring).__name__} {semiring!r}. "
            f"Fix: pass e.g. lipspark.semiring.COUNTING or get_semiring('counting')."
        )
    if not isinstance(expr, (Expr, AggValue)):
        raise SemiringError(
            f"expected an Expr or AggValue; found {type(expr).__name__} {expr!r}. "
            f"Fix: wrap base tuples as Token('name')."
        )
    look = _lookup(semiring, valuation, default, expr)

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
            return kids[0] if without_delta else semiring.delta(kids[0])
        if isinstance(node, Monus):
            return semiring.monus(kids[0], kids[1])
        if isinstance(node, BlackBox):
            return semiring.black_box(kids)
        raise SemiringError(
            f"expected an Expr node (Token, ZERO, ONE, Sum, Product, Delta, Monus, BlackBox); found "
            f"{type(node).__name__}. Fix: build expressions with lipspark.semiring constructors."
        )

    if isinstance(expr, AggValue):
        values = fold_many([p for p, _ in expr.terms], combine)
        pairs = [(k, v) for k, (_, v) in zip(values, expr.terms)]
        return semiring.aggregate(expr.op, pairs)
    return fold_many([expr], combine)[0]


def _fold(op: Callable[[K, K], K], items: list[K], empty: K) -> K:
    if not items:
        return empty
    acc = items[0]
    for item in items[1:]:
        acc = op(acc, item)
    return acc
