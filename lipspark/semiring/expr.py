"""Immutable, hashable provenance expressions: N[X] with δ, black boxes and ⊗.

Expressions follow Amsterdamer, Deutch and Tannen, "Provenance for aggregate queries"
(PODS 2011) and Lipstick (VLDB 2012, section 2.3): tokens of base tuples combined with
``+`` (alternative derivation), ``·`` (joint derivation), ``δ`` (duplicate elimination),
black-box function nodes and aggregate values ``Σ tᵢ ⊗ vᵢ``.

The smart constructors (:func:`plus`, :func:`times`, :func:`delta`, :func:`black_box`, and
the ``+`` / ``*`` operators) only flatten and drop neutral elements; any other
simplification happens in sympy on request (:func:`normal_form`, :func:`equivalent`).

>>> from lipspark.semiring.expr import Token, delta
>>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
>>> print(delta(c2 * b1 + c3 * b1))
δ(Cars:C2·Req:B1 + Cars:C3·Req:B1)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import sympy

from lipspark.errors import SemiringError
from lipspark.semiring._nodes import (
    AGG_OPS,
    MAX_TEXT,
    Prefixes,
    check_text_length,
    ONE,
    ZERO,
    BlackBox,
    Delta,
    Expr,
    Monus,
    Product,
    Sum,
    Token,
    _coerce,
    _One,
    _paren,
    _str_node,
    _Zero,
    black_box,
    canonical_op,
    delta,
    monus,
    plus,
    times,
)
from lipspark.semiring._traverse import fold_many

__all__ = [
    "MAX_TEXT",
    "Prefixes",
    "Expr",
    "Token",
    "ZERO",
    "ONE",
    "Sum",
    "Product",
    "Delta",
    "BlackBox",
    "Monus",
    "AggValue",
    "AGG_OPS",
    "plus",
    "times",
    "delta",
    "black_box",
    "monus",
    "to_sympy",
    "normal_form",
    "equivalent",
    "tokens",
    "canonical_op",
    "rename",
    "rename_all",
]


@dataclass(frozen=True, slots=True)
class AggValue:
    """An aggregate value ``Σ tᵢ ⊗ vᵢ`` of operator ``op`` (Count, Sum, Min, Max, Avg).

    Parameters
    ----------
    op : str
        One of :data:`AGG_OPS` (case-insensitive; stored canonically).
    terms : tuple[tuple[Expr, object], ...]
        Pairs of provenance polynomial and hashable value (int, float, str, None).

    Examples
    --------
    >>> c2, c3 = Token("Cars:C2"), Token("Cars:C3")
    >>> v = AggValue("Count", ((c2, 1), (c3, 1)))
    >>> print(v)
    Count(Cars:C2 ⊗ 1 + Cars:C3 ⊗ 1)
    >>> v.normal_form() == AggValue("Count", ((c2 + c3, 1),)).normal_form()
    True
    """

    op: str
    terms: tuple[tuple[Expr, object], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", canonical_op(self.op))
        if not isinstance(self.terms, (tuple, list)):
            raise SemiringError(
                f"expected AggValue.terms to be a tuple of (Expr, value) pairs; found "
                f"{type(self.terms).__name__}. Fix: AggValue('Sum', ((Token('a'), 3),))."
            )
        checked: list[tuple[Expr, object]] = []
        for pair in self.terms:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Expr)):
                raise SemiringError(
                    f"expected each AggValue term to be a pair (Expr, value); found {pair!r}. "
                    f"Fix: write terms as (Token('a'), 3)."
                )
            try:
                hash(pair[1])
            except TypeError:
                raise SemiringError(
                    f"expected a hashable aggregate value (int, float, str, None); found "
                    f"{type(pair[1]).__name__} {pair[1]!r}. Fix: convert it to a scalar."
                ) from None
            checked.append((pair[0], pair[1]))
        object.__setattr__(self, "terms", tuple(checked))

    def __add__(self, other: AggValue) -> AggValue:
        """Semimodule sum of two aggregate values of the same operator."""
        if not isinstance(other, AggValue) or other.op != self.op:
            raise SemiringError(
                f"expected an AggValue with op {self.op!r}; found {other!r}. "
                f"Fix: only add aggregate values of the same operator."
            )
        return AggValue(self.op, self.terms + other.terms)

    def normal_form(self) -> tuple[str, frozenset[tuple[object, sympy.Expr]]]:
        """Canonical form modulo (k1 ⊗ v) + (k2 ⊗ v) = (k1 + k2) ⊗ v and 0 ⊗ v = 0.

        Terms are grouped by value (1 and 1.0 are the same value), each group's
        polynomial is summed and expanded, and groups whose polynomial is 0 are dropped.

        >>> a, b = Token("a"), Token("b")
        >>> AggValue("Sum", ((a, 5), (b, 5.0), (a * ZERO, 7))).normal_form()
        ('Sum', frozenset({(5, a + b)}))
        """
        groups: dict[object, list[Expr]] = {}
        for poly, value in self.terms:
            groups.setdefault(value, []).append(poly)
        polys = fold_many(
            [plus(*ps) for ps in groups.values()], lambda n, k: _sympy_node(n, k, True)
        )
        out = set()
        for value, poly in zip(groups, polys):
            expanded = _sympy().expand(poly)
            if expanded != 0:
                out.add((value, expanded))
        return (self.op, frozenset(out))

    def __str__(self) -> str:
        check_text_length([p for p, _ in self.terms], extra=sum(len(repr(v)) + 5 for _, v in self.terms))
        polys = fold_many([p for p, _ in self.terms], _str_node)
        parts = [
            f"{_paren(s, p, (Sum,))} ⊗ {v!r}" for s, (p, v) in zip(polys, self.terms)
        ]
        return f"{self.op}({' + '.join(parts) if parts else '0'})"


@cache
def _sympy() -> Any:
    """sympy, imported on first use: building and evaluating expressions never needs it, only
    normal forms and equivalence do (it takes a second to import)."""
    import sympy

    return sympy


def _sympy_node(node: Expr, kids: list[sympy.Expr], evaluate: bool) -> sympy.Expr:
    sympy = _sympy()
    if isinstance(node, Token):
        return sympy.Symbol(node.name)
    if isinstance(node, _Zero):
        return sympy.Integer(0)
    if isinstance(node, _One):
        return sympy.Integer(1)
    if isinstance(node, Sum):
        return sympy.Add(*kids, evaluate=evaluate)
    if isinstance(node, Product):
        return sympy.Mul(*kids, evaluate=evaluate)
    if isinstance(node, Delta):
        return sympy.Function("δ")(kids[0], evaluate=evaluate)
    if isinstance(node, Monus):  # opaque: · does not distribute over ⊖ in every m-semiring
        return sympy.Function("⊖")(kids[0], kids[1], evaluate=evaluate)
    assert isinstance(node, BlackBox)
    return sympy.Function(node.name)(*kids, evaluate=evaluate)


def _sympy_value(value: object) -> sympy.Basic:
    sympy = _sympy()
    if value is None:
        return sympy.Symbol("None")
    if isinstance(value, str):
        return sympy.Symbol(value)
    try:
        return sympy.sympify(value)
    except (sympy.SympifyError, TypeError, ValueError):
        return sympy.Symbol(repr(value))


def to_sympy(expr: Expr | AggValue, *, evaluate: bool = False) -> sympy.Basic:
    """Translate to sympy: tokens are Symbols, δ/black boxes/⊗/ops are Functions.

    Parameters
    ----------
    expr : Expr or AggValue
        The expression.
    evaluate : bool, default False
        If False the sympy tree mirrors ``expr`` exactly (``a + a`` stays ``a + a``);
        if True sympy's automatic evaluation (flattening, collecting) applies. Neither
        distributes products over sums: use :func:`normal_form` for that.

    Returns
    -------
    sympy.Basic

    Examples
    --------
    >>> a = Token("a")
    >>> to_sympy(a + a), to_sympy(a + a, evaluate=True)
    (a + a, 2*a)
    >>> to_sympy(AggValue("Sum", ((a, 3),)))
    Sum(⊗(a, 3))
    """
    if isinstance(expr, AggValue):
        polys = fold_many([p for p, _ in expr.terms], lambda n, k: _sympy_node(n, k, evaluate))
        args = [
            _sympy().Function("⊗")(p, _sympy_value(v), evaluate=evaluate) for p, (_, v) in zip(polys, expr.terms)
        ]
        return _sympy().Function(expr.op)(*args, evaluate=evaluate)
    _coerce(expr)
    return fold_many([expr], lambda n, k: _sympy_node(n, k, evaluate))[0]


def normal_form(
    expr: Expr | AggValue,
) -> sympy.Expr | tuple[str, frozenset[tuple[object, sympy.Expr]]]:
    """Expanded sympy normal form of an Expr (for an AggValue, ``expr.normal_form()``).

    Expansion is deep, so arguments of δ and black boxes are expanded too.

    >>> a, b, c = Token("a"), Token("b"), Token("c")
    >>> normal_form(delta(a * (b + c)))
    δ(a*b + a*c)
    """
    if isinstance(expr, AggValue):
        return expr.normal_form()
    return _sympy().expand(to_sympy(expr, evaluate=True))


def equivalent(a: Expr | AggValue, b: Expr | AggValue) -> bool:
    """True iff ``a`` and ``b`` have equal normal forms (an Expr never equals an AggValue).

    >>> x, y, z = Token("x"), Token("y"), Token("z")
    >>> equivalent(x * (y + z), x * y + z * x), equivalent(x + x, x)
    (True, False)
    """
    if isinstance(a, AggValue) or isinstance(b, AggValue):
        if not (isinstance(a, AggValue) and isinstance(b, AggValue)):
            return False
        return a.normal_form() == b.normal_form()
    return bool(normal_form(a) == normal_form(b))


def tokens(expr: Expr | AggValue) -> frozenset[str]:
    """The names of all tokens occurring in ``expr``.

    >>> sorted(tokens(delta(Token("a") * Token("b") + Token("a"))))
    ['a', 'b']
    """
    roots = [p for p, _ in expr.terms] if isinstance(expr, AggValue) else [_coerce(expr)]
    found: set[str] = set()

    def visit(node: Expr, kids: list[None]) -> None:
        if isinstance(node, Token):
            found.add(node.name)

    fold_many(roots, visit)
    return frozenset(found)


def rename(expr: Expr | AggValue, names: Mapping[str, str]) -> Expr | AggValue:
    """``expr`` with each token named in ``names`` renamed (the others kept), rebuilt with the
    smart constructors; an aggregate value's members are renamed, its values kept.

    Two tokens renamed to one name become one token: the diff of two executions writes a
    module's invocation in either execution as the same token (``M_dealer1[1]`` and
    ``M_dealer1[2]`` as ``M_dealer1[e]``).

    >>> a, m1 = Token("a"), Token("M_dealer1[1]")
    >>> print(rename(delta(a * m1 + Token("b")), {"M_dealer1[1]": "M_dealer1[e]"}))
    δ(a·M_dealer1[e] + b)
    >>> print(rename(AggValue("Sum", ((a * m1, 5),)), {"a": "c"}))
    Sum(c·M_dealer1[1] ⊗ 5)
    """
    if isinstance(expr, AggValue):
        kids = rename_all([p for p, _ in expr.terms], names)
        return AggValue(expr.op, tuple((k, v) for k, (_, v) in zip(kids, expr.terms)))
    return rename_all([_coerce(expr)], names)[0]


def rename_all(exprs: Sequence[Expr], names: Mapping[str, str]) -> list[Expr]:
    """:func:`rename` of several expressions with one shared memo (shared parts renamed once)."""

    def visit(node: Expr, kids: list[Expr]) -> Expr:
        if isinstance(node, Token):
            new = names.get(node.name)
            return node if new is None or new == node.name else Token(new)
        if isinstance(node, Sum):
            return plus(*kids)
        if isinstance(node, Product):
            return times(*kids)
        if isinstance(node, Delta):
            return delta(kids[0])
        if isinstance(node, Monus):
            return monus(kids[0], kids[1])
        if isinstance(node, BlackBox):
            return black_box(node.name, *kids)
        return node  # ZERO, ONE

    return fold_many(exprs, visit)
