"""Provenance expressions multiplied out into sums of monomials, in the paper's notation.

``expand`` distributes · over + (deeply: inside δ and black boxes too) and collects equal
monomials, as N[X] does, and writes the result as the rest of lipspark writes expressions:
``·`` between factors, ``+`` between monomials, ``δ(…)`` and black boxes ``f(…)`` as factors,
``⊗`` between a member's provenance and its value inside an aggregate — never ``*`` or ``**``.
A coefficient is written in front, ``2·a·b``; a factor used twice is written twice, ``a·a``
(not ``a²``: token labels often end in a digit, ``Requests:B1``, and an exponent would blur
with it).

Tokens named in ``once`` are idempotent in a monomial: a workflow's invocation tokens
``M_<module>[<execution>]`` appear once per monomial however many module boundaries the
derivation crosses, as the paper writes them (each boundary node is the tuple's provenance ·
the invocation, so an output's raw product repeats the invocation once per boundary).

>>> from lipspark.semiring import Token, delta
>>> c2, c3, b1, m = Token("Cars:C2"), Token("Cars:C3"), Token("Requests:B1"), Token("M_dealer1[1]")
>>> bid = m * m * b1 * delta(c2 * m * m * b1 + c3 * m * m * b1)   # dealer 1's bid, as captured
>>> print(expand(bid))
M_dealer1[1]·M_dealer1[1]·Requests:B1·δ(Cars:C2·M_dealer1[1]·M_dealer1[1]·Requests:B1 + Cars:C3·M_dealer1[1]·M_dealer1[1]·Requests:B1)
>>> print(expand(bid, once={"M_dealer1[1]"}))
M_dealer1[1]·Requests:B1·δ(Cars:C2·M_dealer1[1]·Requests:B1 + Cars:C3·M_dealer1[1]·Requests:B1)
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from lipspark.errors import SemiringError
from lipspark.semiring._nodes import BlackBox, Delta, Expr, Monus, Product, Sum, Token, _coerce, _One, _Zero
from lipspark.semiring._traverse import fold_many
from lipspark.semiring.expr import AggValue

__all__ = ["MAX_MONOMIALS", "Monomial", "Expanded", "ExpandedAggregate", "expand"]

#: The most monomials an expansion may have (a product of sums grows as the product of their
#: sizes); beyond it :func:`expand` refuses, and the unexpanded expression is the answer.
MAX_MONOMIALS = 100_000

_Poly = dict[tuple[str, ...], int]  # factors (sorted, repeats kept) → coefficient


@dataclass(frozen=True)
class Monomial:
    """A coefficient times a product of factors (tokens, ``δ(…)`` and black boxes ``f(…)``).

    >>> str(Monomial(1, ("a", "b"))), str(Monomial(3, ("a",))), str(Monomial(2, ()))
    ('a·b', '3·a', '2')
    """

    coefficient: int
    factors: tuple[str, ...]

    def __str__(self) -> str:
        if not self.factors:
            return str(self.coefficient)
        product = "·".join(self.factors)
        return product if self.coefficient == 1 else f"{self.coefficient}·{product}"


@dataclass(frozen=True)
class Expanded:
    """An expression as a sum of monomials (``0`` when there are none).

    >>> from lipspark.semiring import Token
    >>> e = expand(Token("a") * (Token("b") + Token("c")))
    >>> len(e.monomials), str(e)
    (2, 'a·b + a·c')
    """

    monomials: tuple[Monomial, ...]

    def __str__(self) -> str:
        return " + ".join(map(str, self.monomials)) or "0"


@dataclass(frozen=True)
class ExpandedAggregate:
    """An aggregate value ``Σ mᵢ ⊗ vᵢ`` over the monomials ``mᵢ`` of its members' provenance.

    >>> from lipspark.semiring import AggValue, Token
    >>> a, b = Token("a"), Token("b")
    >>> print(expand(AggValue("Sum", ((a * (a + b), 5), (a * a, 5.0)))))
    Sum(2·a·a ⊗ 5 + a·b ⊗ 5)
    """

    op: str
    terms: tuple[tuple[Monomial, object], ...]

    def __str__(self) -> str:
        return f"{self.op}({' + '.join(f'{m} ⊗ {v!r}' for m, v in self.terms) or '0'})"


def _times(x: _Poly, y: _Poly, once: Collection[str]) -> _Poly:
    if len(x) * len(y) > MAX_MONOMIALS:
        raise SemiringError(
            f"expected an expansion of at most {MAX_MONOMIALS} monomials; found a product of "
            f"sums of {len(x)} and {len(y)} monomials. Fix: read the expression unexpanded "
            f"(it shares what the expansion repeats), or zoom out the modules inside."
        )
    out: _Poly = {}
    for fx, cx in x.items():
        for fy, cy in y.items():
            merged = sorted(fx + fy)
            if once:  # sorted: a repeated factor follows its first occurrence
                merged = [f for i, f in enumerate(merged) if not (i and f == merged[i - 1] and f in once)]
            key = tuple(merged)
            out[key] = out.get(key, 0) + cx * cy
    return out


def _text(poly: _Poly) -> str:
    return str(Expanded(_monomials(poly)))


def _monomials(poly: _Poly) -> tuple[Monomial, ...]:
    return tuple(Monomial(c, f) for f, c in sorted(poly.items()) if c)


def _atom(text: str) -> _Poly:
    return {(text,): 1}


def _polys(roots: list[Expr], once: Collection[str]) -> list[_Poly]:
    def combine(node: Expr, kids: list[_Poly]) -> _Poly:
        if isinstance(node, Token):
            return _atom(node.name)
        if isinstance(node, _Zero):
            return {}
        if isinstance(node, _One):
            return {(): 1}
        if isinstance(node, Sum):
            out: _Poly = {}
            for kid in kids:
                for f, c in kid.items():
                    out[f] = out.get(f, 0) + c
            if len(out) > MAX_MONOMIALS:
                raise SemiringError(
                    f"expected an expansion of at most {MAX_MONOMIALS} monomials; found a sum of "
                    f"{len(out)}. Fix: read the expression unexpanded, or zoom out the modules inside."
                )
            return out
        if isinstance(node, Product):
            acc: _Poly = {(): 1}
            for kid in kids:
                acc = _times(acc, kid, once)
            return acc
        if isinstance(node, Delta):
            (kid,) = kids
            if not kid or kid == {(): 1}:  # δ(0) = 0, δ(1) = 1
                return dict(kid)
            return _atom(f"δ({_text(kid)})")
        if isinstance(node, BlackBox):
            return _atom(f"{node.name}({', '.join(_text(k) for k in kids)})")
        if isinstance(node, Monus):  # · does not distribute over ⊖: the difference stays one factor
            left, right = kids
            if not left or not right:  # 0 ⊖ b = 0, a ⊖ 0 = a
                return dict(left)
            return _atom(f"({_text(left)} ⊖ {_text(right)})")
        raise SemiringError(
            f"expected an Expr node (Token, ZERO, ONE, Sum, Product, Delta, Monus, BlackBox); found "
            f"{type(node).__name__}. Fix: build expressions with lipspark.semiring constructors."
        )

    return fold_many(roots, combine)


def expand(expr: Expr | AggValue, *, once: Collection[str] = ()) -> Expanded | ExpandedAggregate:
    """Multiply ``expr`` out into a sum of monomials (see the module's notation).

    Parameters
    ----------
    expr : Expr or AggValue
        The expression; for an aggregate value each member's provenance is expanded and
        ``(k₁ + k₂) ⊗ v`` is written ``k₁ ⊗ v + k₂ ⊗ v``.
    once : collection of str
        Tokens written at most once per monomial (``x·x = x``), e.g. the invocation tokens of
        :func:`lipspark.graph.expression.invocation_tokens`.

    Returns
    -------
    Expanded or ExpandedAggregate

    Raises
    ------
    SemiringError
        If the expansion would have more than :data:`MAX_MONOMIALS` monomials.

    Examples
    --------
    >>> from lipspark.semiring import Token, black_box
    >>> a, b = Token("a"), Token("b")
    >>> print(expand((a + b) * (a + b)))
    a·a + 2·a·b + b·b
    >>> print(expand(black_box("calcBid", a * (a + b))))
    calcBid(a·a + a·b)
    """
    names = frozenset(once)
    if isinstance(expr, AggValue):
        polys = _polys([p for p, _ in expr.terms], names)
        collected: dict[tuple[tuple[str, ...], object], int] = {}
        for poly, (_, value) in zip(polys, expr.terms):
            for f, c in poly.items():
                collected[(f, value)] = collected.get((f, value), 0) + c
        ordered = sorted(collected.items(), key=lambda kv: (kv[0][0], repr(kv[0][1])))
        return ExpandedAggregate(expr.op, tuple((Monomial(c, f), v) for (f, v), c in ordered if c))
    return Expanded(_monomials(_polys([_coerce(expr)], names)[0]))
