"""Tests of evaluate(): valuations, memoization, depth, and agreement with sympy."""
from __future__ import annotations

import math
from typing import Any

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import MissingValueError, SemiringError
from lipspark.semiring import (
    BOOLEAN,
    COUNTING,
    LINEAGE,
    ONE,
    SECURITY,
    TROPICAL,
    WHY,
    ZERO,
    AggValue,
    Expr,
    MaxMinSemiring,
    MinMaxSemiring,
    Semiring,
    Sum,
    Token,
    black_box,
    delta,
    evaluate,
    normal_form,
    plus,
    times,
)
from lipspark.semiring.semirings import CountingSemiring

A, B, C = Token("a"), Token("b"), Token("c")
NAMES = ["a", "b", "c", "d"]


def test_car_dealer_example() -> None:
    c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
    e = delta(c2 * b1 + c3 * b1)
    assert evaluate(e, COUNTING, {"Cars:C2": 1, "Cars:C3": 1, "Req:B1": 1}) == 1
    assert evaluate(e, BOOLEAN, {"Cars:C2": False}, default=True) is True
    assert evaluate(e, BOOLEAN, {"Req:B1": False}, default=True) is False
    count = AggValue("Count", ((c2, 1), (c3, 1)))
    assert evaluate(count, COUNTING, {"Cars:C2": 1, "Cars:C3": 1}) == 2
    assert evaluate(count, BOOLEAN, {"Cars:C2": False, "Cars:C3": True}) == 1


def test_constants_and_black_box() -> None:
    assert evaluate(ZERO, COUNTING, {}) == 0
    assert evaluate(ONE, WHY, {}) == WHY.one
    assert evaluate(black_box("f", A, B), COUNTING, {"a": 2, "b": 3}) == 5
    assert evaluate(black_box("f", A, B), BOOLEAN, {"a": False, "b": True}) is True
    assert evaluate(black_box("f"), BOOLEAN, {}) is False


def test_valuation_forms() -> None:
    e = A * (B + C)
    assert evaluate(e, COUNTING, lambda t: {"a": 2, "b": 1, "c": 4}[t]) == 10
    assert evaluate(e, COUNTING, {"a": 2}, default=1) == 4
    assert evaluate(e, LINEAGE) == {"a", "b", "c"}
    assert evaluate(e, WHY) == {frozenset("ab"), frozenset("ac")}
    assert evaluate(e, TROPICAL, {"a": 1.0, "b": 5.0, "c": 2.0}) == 3.0
    sec = {"a": "confidential", "b": "secret", "c": "top_secret"}
    assert evaluate(e, SECURITY, sec) == "secret"


def test_missing_token_is_named() -> None:
    with pytest.raises(MissingValueError, match="found none for 1 token"):
        evaluate(A * (B + C), COUNTING, {"a": 1, "b": 1})
    with pytest.raises(SemiringError, match="Semiring"):
        evaluate(A, "counting", {})  # type: ignore[arg-type]
    with pytest.raises(SemiringError, match="valuation"):
        evaluate(A, COUNTING, 3)  # type: ignore[arg-type]
    with pytest.raises(SemiringError):
        evaluate("a", COUNTING, {})  # type: ignore[arg-type]


# --- every token needs a value: never a guessed one -------------------------------------

AGENCY = ("unclassified", "restricted", "confidential", "secret", "top_secret")
#: semiring, a value to give, what a·(b + c) evaluates to when every token has that value
NEEDS_VALUES: list[tuple[Semiring[Any], Any, Any]] = [
    (BOOLEAN, True, True),
    (COUNTING, 2, 8),
    (TROPICAL, 1.5, 3.0),
    (SECURITY, "secret", "secret"),
    (MinMaxSemiring(AGENCY), "restricted", "restricted"),
    (MaxMinSemiring(AGENCY), "restricted", "restricted"),
]


@pytest.mark.parametrize("k, value, result", NEEDS_VALUES, ids=lambda x: getattr(x, "name", None))
def test_a_token_without_a_value_is_an_error_in_every_semiring(k: Semiring[Any], value: Any, result: Any) -> None:
    """Security must never fail open: an unvalued token is named, not given the least restrictive level."""
    e = A * (B + C)
    for valuation in ({"a": value}, None, {}):
        with pytest.raises(MissingValueError) as err:
            evaluate(e, k, valuation)
        missing = ("b", "c") if valuation else ("a", "b", "c")
        assert err.value.tokens == missing
        message = str(err.value)
        assert f"found none for {len(missing)} token(s): {', '.join(missing)}" in message and "default=" in message
        assert "\n" not in message
    assert evaluate(e, k, {"a": value}, default=value) == result
    assert evaluate(e, k, {}, default=value) == result
    agg = AggValue("Count", ((A, 1), (B, 1)))
    with pytest.raises(MissingValueError, match="token"):
        evaluate(agg, k, {"a": value})


def test_the_message_names_the_first_tokens_and_counts_the_rest() -> None:
    e = plus(*[Token(f"agents:{i:02d}") for i in range(12)])
    with pytest.raises(MissingValueError, match=r"none for 12 token\(s\): agents:00, agents:01, agents:02, agents:03, "
                                                r"agents:04 and 7 more\. Fix"):
        evaluate(e, SECURITY, {})


def test_symbolic_semirings_need_no_value() -> None:
    """In Why and Lineage a token stands for itself: that is not a guess."""
    assert evaluate(A * B, LINEAGE) == {"a", "b"} and evaluate(A * B, WHY, {"a": 0}) == WHY.zero


def test_given_values_are_checked() -> None:
    k = MinMaxSemiring(AGENCY)
    with pytest.raises(SemiringError, match=r"expected a level of minmax\(unclassified < restricted < confidential < "
                                            r"secret < top_secret\); found str 'Secret'"):
        evaluate(A, k, {"a": "Secret"})
    with pytest.raises(SemiringError, match="found str 'purple'"):
        evaluate(A, SECURITY, {}, default="purple")
    with pytest.raises(SemiringError, match="a whole number >= 0; found int -1"):
        evaluate(A, COUNTING, lambda t: -1)


def test_agency_case_study() -> None:
    """ProvSQL's intelligence agency (doc casestudy1): cities with two agents, by a self-join
    p1.city = p2.city and p1.id < p2.id grouped by city — δ of the sum of the pairs."""
    level = {1: "unclassified", 2: "restricted", 3: "confidential", 4: "secret", 5: "top_secret", 6: "restricted", 7: "secret"}
    p = {i: Token(f"personnel:{i}") for i in level}
    cities = {"Nairobi": delta(p[1] * p[2]), "Paris": delta(p[3] * p[5] + p[3] * p[6] + p[5] * p[6]), "Beijing": delta(p[4] * p[7])}
    levels = {f"personnel:{i}": v for i, v in level.items()}
    minmax, maxmin = MinMaxSemiring(AGENCY), MaxMinSemiring(AGENCY)
    assert {c: evaluate(e, minmax, levels) for c, e in cities.items()} == {
        "Nairobi": "restricted", "Paris": "confidential", "Beijing": "secret"}  # ProvSQL's answers
    assert {c: evaluate(e, maxmin, levels) for c, e in cities.items()} == {
        "Nairobi": "unclassified", "Paris": "confidential", "Beijing": "secret"}
    # how many pairs: δ makes each city 1; δ as identity counts the derivations (3 pairs in Paris)
    assert {c: evaluate(e, COUNTING, {}, default=1) for c, e in cities.items()} == {"Nairobi": 1, "Paris": 1, "Beijing": 1}
    assert {c: evaluate(e, COUNTING, {}, default=1, without_delta=True) for c, e in cities.items()} == {
        "Nairobi": 1, "Paris": 3, "Beijing": 1}


def test_without_delta() -> None:
    e = delta(A * B + A * C) * delta(B + B)
    assert evaluate(e, COUNTING, {"a": 2, "b": 3, "c": 1}) == 1
    assert evaluate(e, COUNTING, {"a": 2, "b": 3, "c": 1}, without_delta=True) == (2 * 3 + 2 * 1) * 6
    # δ is the identity in every other built-in semiring: the option changes nothing there
    for k, value in ((BOOLEAN, True), (TROPICAL, 1.0), (SECURITY, "secret")):
        assert evaluate(e, k, {}, default=value, without_delta=True) == evaluate(e, k, {}, default=value)
    agg = AggValue("Sum", ((delta(A + A), 10),))
    assert evaluate(agg, COUNTING, {"a": 1}) == 10 and evaluate(agg, COUNTING, {"a": 1}, without_delta=True) == 20


def test_deep_chain_does_not_recurse() -> None:
    e: Expr = Token("t0")
    for i in range(1, 10_000):
        e = Sum((e, Token(f"t{i}")))
    assert evaluate(e, COUNTING, {}, default=1) == 10_000
    assert evaluate(e, BOOLEAN, {}, default=False) is False
    d: Expr = A
    for _ in range(10_000):
        d = delta(times(d, B))
    assert evaluate(d, COUNTING, {"a": 3, "b": 2}) == 1


def test_memoizes_shared_and_equal_subexpressions() -> None:
    calls: list[str] = []

    class Counting(CountingSemiring):
        name = "counting-spy"

        def plus(self, a: int, b: int) -> int:
            calls.append("+")
            return a + b

    e: Expr = A
    for _ in range(200):  # tree size 2**200: only feasible when memoized
        e = Sum((e, e))
    assert evaluate(e, Counting(), {"a": 1}) == 2**200
    assert len(calls) == 200
    looked: list[str] = []
    twice = plus(times(A, B), times(Token("a"), Token("b")))  # equal, not identical
    evaluate(twice, COUNTING, lambda t: looked.append(t) or 1)
    assert sorted(looked) == ["a", "b"]


# --- property tests against the sympy normal form ------------------------------------

_leaves = st.sampled_from([Token(n) for n in NAMES] + [ZERO, ONE])


def _exprs(with_delta: bool) -> st.SearchStrategy[Expr]:
    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        lists = st.lists(children, min_size=0, max_size=3)
        options = [
            lists.map(lambda xs: plus(*xs)),
            lists.map(lambda xs: times(*xs)),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: Sum(tuple(xs))),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: black_box("f", *xs)),
        ]
        if with_delta:
            options.append(children.map(delta))
        return st.one_of(options)

    return st.recursive(_leaves, extend, max_leaves=12)


def _interpret(e: sympy.Basic, val: dict[str, int]) -> int:
    """ℕ-value of a sympy expression: δ is (1 if >0 else 0), black box f sums its args."""
    if isinstance(e, sympy.Symbol):
        return val[e.name]
    if isinstance(e, sympy.Integer):
        return int(e)
    if isinstance(e, sympy.Add):
        return sum(_interpret(a, val) for a in e.args)
    if isinstance(e, sympy.Mul):
        return math.prod(_interpret(a, val) for a in e.args)
    if isinstance(e, sympy.Pow):
        return _interpret(e.base, val) ** int(e.exp)
    name = e.func.__name__
    if name == "δ":
        return 1 if _interpret(e.args[0], val) > 0 else 0
    if name == "f":
        return sum(_interpret(a, val) for a in e.args)
    raise AssertionError(f"unexpected sympy node {e!r}")


_nat_valuation = st.fixed_dictionaries({n: st.integers(0, 4) for n in NAMES})
_bool_valuation = st.fixed_dictionaries({n: st.booleans() for n in NAMES})


@settings(max_examples=150, deadline=None)
@given(_exprs(with_delta=True), _nat_valuation)
def test_counting_matches_sympy_normal_form(e: Expr, val: dict[str, int]) -> None:
    assert evaluate(e, COUNTING, val) == _interpret(normal_form(e), val)


@settings(max_examples=150, deadline=None)
@given(_exprs(with_delta=False), _bool_valuation)
def test_boolean_matches_polynomial_positivity(e: Expr, val: dict[str, bool]) -> None:
    as_int = {n: int(b) for n, b in val.items()}
    assert evaluate(e, BOOLEAN, val) == (_interpret(normal_form(e), as_int) > 0)


@settings(max_examples=100, deadline=None)
@given(_exprs(with_delta=True), _bool_valuation)
def test_boolean_matches_polynomial_positivity_with_delta(e: Expr, val: dict[str, bool]) -> None:
    as_int = {n: int(b) for n, b in val.items()}
    assert evaluate(e, BOOLEAN, val) == (_interpret(normal_form(e), as_int) > 0)


# --- aggregates -----------------------------------------------------------------------

_agg_rows = st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 20)), max_size=6)


def _bag_result(op: str, bag: list[int]) -> Any:
    if op == "Count":
        return len(bag)
    if not bag:
        return None
    return {"Sum": sum, "Min": min, "Max": max}.get(op, lambda b: sum(b) / len(b))(bag)


@settings(max_examples=150, deadline=None)
@given(_agg_rows, st.sampled_from(["Count", "Sum", "Min", "Max", "Avg"]))
def test_counting_aggregate_is_bag_result(rows: list[tuple[int, int]], op: str) -> None:
    terms = tuple((Token(f"r{i}"), v) for i, (_, v) in enumerate(rows))
    val = {f"r{i}": k for i, (k, _) in enumerate(rows)}
    bag = [v for k, v in rows for _ in range(k)]
    result = evaluate(AggValue(op, terms), COUNTING, val)
    expected = _bag_result(op, bag)
    if op == "Avg" and expected is not None:
        assert result == pytest.approx(expected)
    else:
        assert result == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(-20, 20)), max_size=6),
    st.sampled_from(["Count", "Sum", "Min", "Max", "Avg"]),
)
def test_boolean_aggregate_over_survivors(rows: list[tuple[bool, int]], op: str) -> None:
    # each term's polynomial is r_i · s (s always present), so survival is r_i
    terms = tuple((Token(f"r{i}") * Token("s"), v) for i, (_, v) in enumerate(rows))
    val = {f"r{i}": alive for i, (alive, _) in enumerate(rows)}
    survivors = [v for alive, v in rows if alive]
    result = evaluate(AggValue(op, terms), BOOLEAN, val, default=True)
    expected = _bag_result(op, survivors)
    if op == "Avg" and expected is not None:
        assert result == pytest.approx(expected)
    else:
        assert result == expected
