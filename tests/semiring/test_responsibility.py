"""Tests of shapley() and banzhaf(): hand-computed cases, brute force over every coalition and
every order of arrival, the efficiency axiom, sampled values within their stated error, errors."""
from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import SemiringError
from lipspark.semiring import (
    BOOLEAN,
    ONE,
    ZERO,
    AggValue,
    Expr,
    Product,
    Responsibility,
    Sum,
    Token,
    banzhaf,
    black_box,
    delta,
    evaluate,
    plus,
    shapley,
    times,
    tokens,
)
from tests.semiring.test_probability import dag_exprs, dnf_exprs

A, B, C, D = Token("a"), Token("b"), Token("c"), Token("d")
X, Y, Z = Token("x"), Token("y"), Token("z")


# --- the definitions, computed independently ------------------------------------------


def game(expr: Expr, fixed: dict[str, bool]):  # type: ignore[no-untyped-def]
    """v(S): the Boolean semiring's value of expr with exactly S ∪ {fixed true} present."""
    def v(present: frozenset[str]) -> int:
        world = {t: (t in present) for t in tokens(expr)}
        world.update({t: b for t, b in fixed.items() if t in world})
        return int(evaluate(expr, BOOLEAN, world))
    return v


def brute_shapley(expr: Expr, players: list[str], fixed: dict[str, bool]) -> dict[str, Fraction]:
    """Σ_{S ⊆ P∖{x}} |S|!(n−|S|−1)!/n! (v(S∪{x}) − v(S)), over every subset (Deutch et al. 2022)."""
    v, n = game(expr, fixed), len(players)
    out = {}
    for x in players:
        others = [p for p in players if p != x]
        total = Fraction(0)
        for k in range(len(others) + 1):
            for s in itertools.combinations(others, k):
                weight = Fraction(math.factorial(k) * math.factorial(n - k - 1), math.factorial(n))
                total += weight * (v(frozenset(s) | {x}) - v(frozenset(s)))
        out[x] = total
    return out


def permutation_shapley(expr: Expr, players: list[str], fixed: dict[str, bool]) -> dict[str, Fraction]:
    """The marginal contribution averaged over every order of arrival (the other definition)."""
    v = game(expr, fixed)
    out = dict.fromkeys(players, Fraction(0))
    orders = list(itertools.permutations(players))
    for order in orders:
        before: frozenset[str] = frozenset()
        for p in order:
            out[p] += Fraction(v(before | {p}) - v(before), len(orders))
            before = before | {p}
    return out


def provsql_banzhaf(expr: Expr, players: list[str], fixed: dict[str, bool]) -> dict[str, int]:
    """ProvSQL's banzhaf(): Σ_{S ⊆ P∖{x}} (v(S∪{x}) − v(S)), not divided by 2^(n−1)."""
    v = game(expr, fixed)
    out = {}
    for x in players:
        others = [p for p in players if p != x]
        out[x] = sum(v(frozenset(s) | {x}) - v(frozenset(s))
                     for k in range(len(others) + 1) for s in itertools.combinations(others, k))
    return out


# --- by hand ---------------------------------------------------------------------------


def test_x_times_y_plus_z_by_hand() -> None:
    # x is decisive in an order unless it comes first (then nobody is yet): 2/3; y (or z) only
    # when it arrives after x and before the other: the order x, y, z of the six: 1/6.
    s = shapley(X * (Y + Z))
    assert s.method == "exact" and s.samples is None and s.stderr is None
    assert s.values == pytest.approx({"x": 2 / 3, "y": 1 / 6, "z": 1 / 6}, abs=1e-12)
    assert list(s.values) == ["x", "y", "z"]  # highest first
    # Banzhaf: x decisive in {y}, {z}, {y, z} of the 4 subsets of the others; y only in {x}
    b = banzhaf(X * (Y + Z))
    assert b.values == pytest.approx({"x": 3 / 4, "y": 1 / 4, "z": 1 / 4}, abs=1e-12)
    provsql = {p: round(v * 2 ** (b.players - 1)) for p, v in b.values.items()}
    assert provsql == {"x": 3, "y": 1, "z": 1}  # ProvSQL's banzhaf() counts the subsets


def test_car_dealership_bid_by_hand() -> None:
    # a bid from request B1 and any one of two cars: δ(C2·B1 + C3·B1), read as B1 ∧ (C2 ∨ C3)
    b1, c2, c3 = Token("Requests:B1"), Token("Cars:C2"), Token("Cars:C3")
    s = shapley(delta(c2 * b1 + c3 * b1))
    assert s.values == pytest.approx({"Requests:B1": 2 / 3, "Cars:C2": 1 / 6, "Cars:C3": 1 / 6}, abs=1e-12)


def test_query_answer_example_by_hand() -> None:
    # q() :- R(x), S(x, y) over R = {r1, r2}, S = {s11, s12, s2}: lineage r1·(s11 + s12) + r2·s2,
    # with r2 exogenous (a fact the user fixes): the game is r1·(s11 + s12) + s2, 24 orders.
    # s2 is decisive unless r1 and some s1j came before it: s2 last (6 orders) or third after
    # r1 and one s1j (2 pairs × 2 orders): 10, so Shapley(s2) = 14/24 = 7/12.
    # r1 is decisive iff some s1j and not s2 came before it: r1 second after one s1j (2 × 2
    # orders) or third after both (2): 6, so 1/4. s11 and s12 share the rest: (1 − 7/12 − 1/4)/2.
    r1, r2, s11, s12, s2 = (Token(n) for n in ("R:r1", "R:r2", "S:s11", "S:s12", "S:s2"))
    expr = r1 * (s11 + s12) + r2 * s2
    s = shapley(expr, fixed={"R:r2": True})
    assert s.values["S:s2"] == pytest.approx(7 / 12, abs=1e-12)
    assert s.values["R:r1"] == pytest.approx(1 / 4, abs=1e-12)
    assert s.values["S:s11"] == s.values["S:s12"] == pytest.approx(1 / 12, abs=1e-12)
    assert sum(s.values.values()) == pytest.approx(1.0, abs=1e-12)
    assert "R:r2" not in s.values  # exogenous: not a player


def test_symmetric_games_by_hand() -> None:
    majority = A * B + A * C + B * C
    assert shapley(majority).values == pytest.approx(dict.fromkeys("abc", 1 / 3), abs=1e-12)
    assert banzhaf(majority).values == pytest.approx(dict.fromkeys("abc", 1 / 2), abs=1e-12)
    two_pairs = A * B + C * D
    assert shapley(two_pairs).values == pytest.approx(dict.fromkeys("abcd", 1 / 4), abs=1e-12)
    # a is decisive iff b is present and not both c and d: 1/2 · 3/4
    assert banzhaf(two_pairs).values == pytest.approx(dict.fromkeys("abcd", 3 / 8), abs=1e-12)
    # a + b·c: a decisive unless b and c both came first (1/3 of the orders)
    assert shapley(A + B * C).values == pytest.approx({"a": 2 / 3, "b": 1 / 6, "c": 1 / 6}, abs=1e-12)
    assert banzhaf(A + B * C).values == pytest.approx({"a": 3 / 4, "b": 1 / 4, "c": 1 / 4}, abs=1e-12)


def test_exogenous_tokens() -> None:
    assert shapley(X * (Y + Z), fixed={"y": True}).values == {"x": 1.0, "z": 0.0}
    assert shapley(X * (Y + Z), fixed={"y": False}).values == pytest.approx({"x": 0.5, "z": 0.5}, abs=1e-12)
    # only x plays; y and z are fixed
    assert shapley(X * (Y + Z), players=["x"], fixed={"y": False, "z": True}).values == {"x": 1.0}
    assert shapley(X * (Y + Z), fixed={"x": False}).values == {"y": 0.0, "z": 0.0}
    assert shapley(X * (Y + Z), fixed={"elsewhere": True}).values["x"] == pytest.approx(2 / 3)


def test_null_players_and_constants() -> None:
    r = shapley(A + A * B)  # b is never decisive
    assert r.values == {"a": 1.0, "b": 0.0}
    assert banzhaf(Sum((Product((A, ZERO)), B))).values == {"b": 1.0, "a": 0.0}  # a is a token of it, absorbed
    assert shapley(ONE + A).values == {"a": 0.0}  # always true: nobody is decisive
    assert shapley(ZERO).values == {}
    assert shapley(black_box("f", A, B)).values == pytest.approx({"a": 0.5, "b": 0.5})


def test_invocation_tokens_as_players() -> None:
    # a tuple crossing two module boundaries: M1·M2·(t1 + t2); over the invocations, the base
    # tuples fixed present, both invocations are needed: 1/2 each
    m1, m2, t1, t2 = Token("M_a[1]"), Token("M_b[1]"), Token("R:1"), Token("R:2")
    expr = m1 * m2 * (m1 * t1 + m1 * t2)
    r = shapley(expr, players=["M_a[1]", "M_b[1]"], fixed={"R:1": True, "R:2": True})
    assert r.values == pytest.approx({"M_a[1]": 0.5, "M_b[1]": 0.5}, abs=1e-12)


# --- brute force -----------------------------------------------------------------------


@st.composite
def games(draw: st.DrawFn) -> tuple[Expr, list[str], dict[str, bool]]:
    expr = draw(st.one_of(dag_exprs(), dnf_exprs()))
    names = sorted(tokens(expr))
    roles = draw(st.lists(st.sampled_from(["player", "player", "true", "false"]), min_size=len(names), max_size=len(names)))
    fixed = {n: r == "true" for n, r in zip(names, roles) if r != "player"}
    return expr, [n for n in names if n not in fixed], fixed


@settings(max_examples=150, deadline=None)
@given(games())
def test_exact_matches_brute_force(g: tuple[Expr, list[str], dict[str, bool]]) -> None:
    expr, players, fixed = g
    s = shapley(expr, fixed=fixed)
    b = banzhaf(expr, players=players, fixed=fixed)
    assert s.method == b.method == "exact"
    assert sorted(s.values) == sorted(b.values) == sorted(players)
    expected = brute_shapley(expr, players, fixed)
    for p in players:
        assert s.values[p] == pytest.approx(float(expected[p]), abs=1e-9)
    counts = provsql_banzhaf(expr, players, fixed)
    for p in players:
        assert b.values[p] * 2 ** (len(players) - 1) == pytest.approx(counts[p], abs=1e-7)
    # efficiency: the Shapley values share out v(P) − v(∅)
    v = game(expr, fixed)
    assert sum(s.values.values()) == pytest.approx(v(frozenset(players)) - v(frozenset()), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(games().filter(lambda g: len(g[1]) <= 5))
def test_exact_matches_orders_of_arrival(g: tuple[Expr, list[str], dict[str, bool]]) -> None:
    expr, players, fixed = g
    s = shapley(expr, fixed=fixed)
    for p, value in permutation_shapley(expr, players, fixed).items():
        assert s.values[p] == pytest.approx(float(value), abs=1e-9)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(games(), st.integers(0, 2**16))
def test_sampled_within_stated_error(g: tuple[Expr, list[str], dict[str, bool]], seed: int) -> None:
    expr, players, fixed = g
    for measure in (shapley, banzhaf):
        exact = measure(expr, fixed=fixed)
        est = measure(expr, fixed=fixed, method="monte-carlo", samples=3000, seed=seed)
        if est.method == "exact":  # a constant game: nobody is decisive, nothing to sample
            assert est == exact and not any(est.values.values())
            continue
        assert est.method == "monte-carlo" and est.samples == 3000 and est.stderr is not None
        assert est == measure(expr, fixed=fixed, method="monte-carlo", samples=3000, seed=seed)  # seeded
        for p in players:
            assert abs(est.values[p] - exact.values[p]) <= 5 * est.stderr[p] + 1e-12, (measure, p)
    # each sampled order has one decisive player (or none, when v(P) = v(∅)): efficiency holds exactly
    s = shapley(expr, fixed=fixed, method="monte-carlo", samples=500, seed=seed)
    v = game(expr, fixed)
    assert sum(s.values.values()) == pytest.approx(v(frozenset(players)) - v(frozenset()), abs=1e-9)


def test_sampled_converges() -> None:
    expr = A * B + A * C + B * D + C * D * Token("e")
    exact = shapley(expr)
    est = shapley(expr, method="monte-carlo", samples=200_000, seed=3)
    for p in exact.values:
        assert est.stderr is not None and est.stderr[p] < 0.0012
        assert abs(est.values[p] - exact.values[p]) < 5 * est.stderr[p]


# --- budget, fallback, scale -----------------------------------------------------------


def test_budget_falls_back_to_sampling_or_raises() -> None:
    expr = A * B + A * C + B * C
    r = shapley(expr, exact_limit=0)
    assert r.method == "monte-carlo" and r.samples == 10_000
    with pytest.raises(SemiringError, match=r"exact_limit=0 .* Fix: use method='monte-carlo'"):
        shapley(expr, method="exact", exact_limit=0)


def test_larger_formula_exact_in_seconds() -> None:
    # 60 players, repeated tokens (a chain of overlapping pairs): exact, efficient
    ts = [Token(f"t{i}") for i in range(60)]
    expr = plus(*[ts[i] * ts[i + 1] for i in range(59)])
    start = time.perf_counter()
    r = shapley(expr)
    assert r.method == "exact" and time.perf_counter() - start < 20
    assert sum(r.values.values()) == pytest.approx(1.0, abs=1e-9)
    assert r.values["t0"] == pytest.approx(r.values["t59"], abs=1e-12)  # the chain's symmetry


# --- errors ----------------------------------------------------------------------------


def test_errors_name_what_exists() -> None:
    expr = X * (Y + Z)
    with pytest.raises(SemiringError, match=r"does not mention: w.* Its tokens: x, y, z"):
        shapley(expr, players=["x", "w"], fixed={"y": True, "z": True})
    with pytest.raises(SemiringError, match=r"found 2 neither: y, z.*fixed as True"):
        shapley(expr, players=["x"])
    with pytest.raises(SemiringError, match=r"found 1 both: x"):
        shapley(expr, players=["x", "y", "z"], fixed={"x": True})
    with pytest.raises(SemiringError, match=r"True \(present\) or False \(absent\); found float 0.5"):
        shapley(expr, fixed={"x": 0.5})  # type: ignore[dict-item]
    with pytest.raises(SemiringError, match=r"found the string 'x'"):
        shapley(expr, players="x")
    with pytest.raises(SemiringError, match="AggValue"):
        banzhaf(AggValue("Sum", ((X, 3),)))  # type: ignore[arg-type]
    with pytest.raises(SemiringError, match="method"):
        shapley(expr, method="fast")
    with pytest.raises(SemiringError, match="samples"):
        banzhaf(expr, method="monte-carlo", samples=0)


def test_result_text() -> None:
    text = str(shapley(times(X, plus(Y, Z))))
    assert text.splitlines()[0] == "shapley (exact, 3 players)"
    r = Responsibility("shapley", {"x": 0.5}, "monte-carlo", 100, {"x": 0.05})
    assert str(r).splitlines()[1] == "x  0.5000 ± 0.0500"
