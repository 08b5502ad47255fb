"""Tests of expand(): sums of monomials in the paper's notation (·, +, δ, ⊗; no * or **)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import SemiringError
from lipspark.semiring import COUNTING, ONE, ZERO, AggValue, Expr, Token, black_box, delta, evaluate, expand, plus, times
from lipspark.semiring import expanded as expanded_module

A, B, C = Token("a"), Token("b"), Token("c")
M = Token("M_dealer1[1]")


@pytest.mark.parametrize("expr, text", [
    (A * (B + C), "a·b + a·c"),
    ((A + B) * (A + B), "a·a + 2·a·b + b·b"),
    (A + A + A, "3·a"),
    (ZERO, "0"),
    (ONE, "1"),
    (ONE + ONE, "2"),
    (A * (ONE + B), "a + a·b"),
    (delta(A * (B + C)), "δ(a·b + a·c)"),
    (delta(A + A) * delta(A + A), "δ(2·a)·δ(2·a)"),
    (delta(A * ZERO) + B, "b"),  # δ(0) = 0
    (black_box("calcBid", A * (B + C), C), "calcBid(a·b + a·c, c)"),
    (Token("Requests:B1") * Token("Requests:B1"), "Requests:B1·Requests:B1"),
])
def test_notation(expr: Expr, text: str) -> None:
    got = str(expand(expr))
    assert got == text
    assert "*" not in got and "^" not in got and "²" not in got


def test_invocation_tokens_once_per_monomial() -> None:
    b1, c2, c3 = Token("Requests:B1"), Token("Cars:C2"), Token("Cars:C3")
    bid = M * M * b1 * delta(c2 * M * M * b1 + c3 * M * M * b1)  # dealer 1's bid as the graph builds it
    assert str(expand(bid)).count("M_dealer1[1]·M_dealer1[1]") == 3
    assert str(expand(bid, once={"M_dealer1[1]"})) == (
        "M_dealer1[1]·Requests:B1·δ(Cars:C2·M_dealer1[1]·Requests:B1 + Cars:C3·M_dealer1[1]·Requests:B1)")
    # only the named tokens are idempotent: a self-join's repeated tuple stays repeated
    assert str(expand(M * M * b1 * b1, once={"M_dealer1[1]"})) == "M_dealer1[1]·Requests:B1·Requests:B1"
    # monomials that become equal once the invocation is written once are collected
    assert str(expand(M * b1 + M * M * b1, once={"M_dealer1[1]"})) == "2·M_dealer1[1]·Requests:B1"


def test_aggregate_values() -> None:
    count = AggValue("Count", ((A * (B + C), 1), (B, 1), (A * C, 2)))
    assert str(expand(count)) == "Count(a·b ⊗ 1 + a·c ⊗ 1 + a·c ⊗ 2 + b ⊗ 1)"
    assert str(expand(AggValue("Sum", ((A, 5), (A, 5.0))))) == "Sum(2·a ⊗ 5)"
    assert str(expand(AggValue("Min", ()))) == "Min(0)"
    assert str(expand(AggValue("Max", ((A * M * M, "x"),)), once={"M_dealer1[1]"})) == "Max(M_dealer1[1]·a ⊗ 'x')"


def test_too_many_monomials_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expanded_module, "MAX_MONOMIALS", 8)
    sums = [plus(*(Token(f"t{i}{j}") for j in range(3))) for i in range(3)]
    with pytest.raises(SemiringError, match="at most 8 monomials.*read the expression unexpanded"):
        expand(times(*sums))


# --- the expansion is the same polynomial ---------------------------------------------

NAMES = ["a", "b", "c", "d"]
_leaves = st.sampled_from([Token(n) for n in NAMES] + [ZERO, ONE])


def _exprs() -> st.SearchStrategy[Expr]:
    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        lists = st.lists(children, min_size=0, max_size=3)
        return st.one_of(lists.map(lambda xs: plus(*xs)), lists.map(lambda xs: times(*xs)))

    return st.recursive(_leaves, extend, max_leaves=10)


@settings(max_examples=150, deadline=None)
@given(_exprs(), st.fixed_dictionaries({n: st.integers(0, 4) for n in NAMES}))
def test_expansion_has_the_expressions_value(e: Expr, val: dict[str, int]) -> None:
    monomials = expand(e).monomials  # type: ignore[union-attr]
    value = sum(m.coefficient * math.prod(val[f] for f in m.factors) for m in monomials)
    assert value == evaluate(e, COUNTING, val)
    assert len({m.factors for m in monomials}) == len(monomials) and all(list(m.factors) == sorted(m.factors) for m in monomials)
