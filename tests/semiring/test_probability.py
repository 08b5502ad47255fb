"""Tests of probability(): exactness against possible-world enumeration, Monte Carlo, errors."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import MissingValueError, SemiringError
from lipspark.semiring import (
    BOOLEAN,
    ONE,
    ZERO,
    AggValue,
    Expr,
    ProbabilityResult,
    Product,
    Sum,
    Token,
    black_box,
    delta,
    evaluate,
    plus,
    probability,
    times,
    tokens,
)

X, Y, Z = Token("x"), Token("y"), Token("z")
NAMES = [f"t{i}" for i in range(8)]


def brute_force(expr: Expr, probs: dict[str, float]) -> float:
    """Sum of P(world) over the possible worlds where the Boolean semiring says True."""
    names = sorted(tokens(expr))
    total = 0.0
    for bits in itertools.product((False, True), repeat=len(names)):
        world = dict(zip(names, bits))
        if evaluate(expr, BOOLEAN, world):
            total += math.prod(probs[n] if b else 1.0 - probs[n] for n, b in world.items())
    return total


# --- strategies -----------------------------------------------------------------------

_OPS = ["plus", "times", "delta", "black_box", "Sum", "Product"]


def _build(op: str, args: list[Expr]) -> Expr:
    if op == "plus":
        return plus(*args)
    if op == "times":
        return times(*args)
    if op == "delta":
        return delta(args[0]) if args else delta(ZERO)
    if op == "black_box":
        return black_box("f", *args)
    if op == "Sum":
        return Sum(tuple(args))  # raw: keeps constants and nesting, may be empty
    return Product(tuple(args))


@st.composite
def dag_exprs(draw: st.DrawFn) -> Expr:
    """Expressions over <= 8 tokens that share sub-expressions and repeat tokens."""
    n_tokens = draw(st.integers(1, 8))
    pool: list[Expr] = [Token(n) for n in NAMES[:n_tokens]]
    if draw(st.booleans()):
        pool += [ZERO, ONE]
    for _ in range(draw(st.integers(2, 12))):
        op = draw(st.sampled_from(_OPS))
        least = 0 if op in ("Sum", "Product") else 1
        args = draw(st.lists(st.sampled_from(pool), min_size=least, max_size=4))
        pool.append(_build(op, args))  # may reuse any earlier node: a DAG
    recent = pool[-4:]
    roots = draw(st.lists(st.sampled_from(recent + pool[:n_tokens]), min_size=2, max_size=4))
    return _build(draw(st.sampled_from(_OPS)), roots)


@st.composite
def dnf_exprs(draw: st.DrawFn) -> Expr:
    """Sums of products of tokens (possibly under δ / black boxes): mostly not read-once."""
    n_tokens = draw(st.integers(2, 8))
    terms = draw(
        st.lists(
            st.lists(st.sampled_from(NAMES[:n_tokens]), min_size=1, max_size=4),
            min_size=2,
            max_size=8,
        )
    )
    products = [times(*[Token(n) for n in term]) for term in terms]
    wrap = draw(st.sampled_from(["plus", "delta", "black_box", "times"]))
    if wrap == "plus":
        return plus(*products)
    if wrap == "delta":
        return delta(plus(*products))
    if wrap == "black_box":
        return black_box("f", *products)
    return times(plus(*products[: len(products) // 2]), plus(*products[len(products) // 2 :]))


@st.composite
def read_once_exprs(draw: st.DrawFn) -> Expr:
    """Expressions in which every token occurs exactly once (constants allowed)."""
    n_tokens = draw(st.integers(1, 8))
    items: list[Expr] = [Token(n) for n in NAMES[:n_tokens]]
    items = draw(st.permutations(items))
    items += draw(st.lists(st.sampled_from([ZERO, ONE]), max_size=2))
    items = list(items)
    while len(items) > 1:  # repeatedly combine a random run of neighbours
        i = draw(st.integers(0, len(items) - 1))
        j = draw(st.integers(i + 1, min(len(items), i + 4)))
        op = draw(st.sampled_from(_OPS))
        group = items[i:j]
        combined = _build(op, group) if op != "delta" else delta(plus(*group))
        items[i:j] = [combined]
    return items[0]


def probabilities_for(names: list[str]) -> st.SearchStrategy[dict[str, float]]:
    p = st.one_of(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]), st.floats(0.0, 1.0))
    return st.fixed_dictionaries({n: p for n in names})


_probs = probabilities_for(NAMES)


# --- exactness ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.one_of(dag_exprs(), dnf_exprs()), _probs)
def test_exact_matches_possible_worlds(expr: Expr, probs: dict[str, float]) -> None:
    result = probability(expr, probs, method="exact")
    assert result.method in ("read-once", "exact")
    assert result.samples is None and result.stderr is None
    assert result.value == pytest.approx(brute_force(expr, probs), abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(dag_exprs())
def test_every_world_agrees_with_boolean_evaluate(expr: Expr) -> None:
    names = sorted(tokens(expr))
    for bits in itertools.product((False, True), repeat=len(names)):
        world = dict(zip(names, bits))
        expected = float(evaluate(expr, BOOLEAN, world))
        as_probs = {n: float(b) for n, b in world.items()}
        assert probability(expr, as_probs).value == expected
        mc = probability(expr, as_probs, method="monte-carlo", samples=64)
        assert (mc.value, mc.stderr) == (expected, 0.0)


@settings(max_examples=200, deadline=None)
@given(read_once_exprs(), _probs)
def test_read_once_detected(expr: Expr, probs: dict[str, float]) -> None:
    result = probability(expr, probs, method="exact", exact_limit=0)
    assert result.method == "read-once"
    assert result.value == pytest.approx(brute_force(expr, probs), abs=1e-9)


def test_known_values_and_methods() -> None:
    p = {"x": 0.3, "y": 0.6, "z": 0.8}
    majority = X * Y + X * Z + Y * Z
    result = probability(majority, p)
    assert result.method == "exact"
    assert result.value == pytest.approx(0.3 * 0.6 + 0.3 * 0.8 + 0.6 * 0.8 - 2 * 0.3 * 0.6 * 0.8)
    assert probability(majority, {}, default=0.5).value == pytest.approx(0.5)
    # syntactically read-once (after dropping duplicates / constants)
    assert probability(X * (Y + Z), p).method == "read-once"
    assert probability(X + X, p) == ProbabilityResult(0.3, "read-once", None, None)
    assert probability(delta(X * X) * Sum((Y, ZERO)), p).value == pytest.approx(0.18)
    assert probability(X * Y + X * Z, p).method == "exact"  # not factored into x·(y + z)
    assert probability(X * Y + X * Z, p).value == pytest.approx(0.3 * (1 - 0.4 * 0.2))
    # shared sub-expression object, used twice
    shared = Y + Z
    assert probability(times(shared, plus(X, shared)), p).value == pytest.approx(1 - 0.4 * 0.2)


def test_constants() -> None:
    assert probability(ZERO, {}).value == 0.0
    assert probability(ONE, {}).value == 1.0
    assert probability(ZERO, {}).method == "read-once"
    assert probability(ONE, {}, method="monte-carlo", samples=10).value == 1.0
    assert probability(black_box("f"), {}).value == 0.0  # Boolean black box of nothing
    assert probability(Sum(()), {}).value == 0.0
    assert probability(Product(()), {}).value == 1.0
    assert probability(X * ZERO + ONE, {"x": 0.5}).value == 1.0


def test_black_box_and_delta_follow_boolean() -> None:
    p = {"x": 0.5, "y": 0.5, "z": 0.5}
    assert probability(black_box("f", X, Y), p).value == pytest.approx(0.75)
    assert probability(delta(X + Y) * Z, p).value == pytest.approx(0.375)
    assert probability(black_box("g", X * Y, X * Z), p).value == pytest.approx(0.375)


def test_probability_forms() -> None:
    e = X * (Y + Z)
    assert probability(e, lambda t: 0.5).value == pytest.approx(0.375)
    assert probability(e, {"x": 1.0}, default=0.5).value == pytest.approx(0.75)
    assert probability(e, {"x": 1, "y": 0, "z": 1}).value == 1.0  # ints are fine


# --- Monte Carlo ----------------------------------------------------------------------


def _within_4_sigma(result: ProbabilityResult, exact: float) -> bool:
    assert result.samples is not None
    sigma = math.sqrt(exact * (1.0 - exact) / result.samples)
    return abs(result.value - exact) <= 4 * sigma + 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monte_carlo_close_and_reproducible(seed: int) -> None:
    p = {"x": 0.3, "y": 0.6, "z": 0.8}
    e = delta(X * Y + X * Z + Y * Z) * black_box("f", X, Token("w"))
    probs = {**p, "w": 0.1}
    exact = brute_force(e, probs)
    r = probability(e, probs, method="monte-carlo", samples=50_000, seed=seed)
    assert r.method == "monte-carlo" and r.samples == 50_000
    assert r.stderr == pytest.approx(math.sqrt(r.value * (1 - r.value) / 50_000))
    assert abs(r.value - exact) <= 4 * r.stderr
    assert probability(e, probs, method="monte-carlo", samples=50_000, seed=seed) == r
    other = probability(e, probs, method="monte-carlo", samples=50_000, seed=seed + 10)
    assert other.value != r.value


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.one_of(dag_exprs(), dnf_exprs()), _probs)
def test_monte_carlo_within_4_stderr(expr: Expr, probs: dict[str, float]) -> None:
    exact = brute_force(expr, probs)
    r = probability(expr, probs, method="monte-carlo", samples=20_000, seed=7)
    assert _within_4_sigma(r, exact)


def test_auto_falls_back_to_monte_carlo() -> None:
    majority = X * Y + X * Z + Y * Z
    r = probability(majority, {}, default=0.5, exact_limit=1, samples=20_000)
    assert r.method == "monte-carlo" and r.samples == 20_000
    assert _within_4_sigma(r, 0.5)
    # read-once never needs the budget
    assert probability(X * (Y + Z), {}, default=0.5, exact_limit=0).method == "read-once"


def test_str() -> None:
    assert str(ProbabilityResult(0.42, "exact", None, None)) == "0.42 (exact)"
    assert str(ProbabilityResult(1.0, "read-once", None, None)) == "1.0 (read-once)"
    mc = ProbabilityResult(0.41873, "monte-carlo", 100_000, 0.00156)
    assert str(mc) == "0.4187 ± 0.0016 (monte-carlo, 100000 samples)"
    assert str(ProbabilityResult(1.0, "monte-carlo", 10, 0.0)) == (
        "1.0000 ± 0.0000 (monte-carlo, 10 samples)"
    )


# --- errors ---------------------------------------------------------------------------


def test_missing_token_is_named() -> None:
    with pytest.raises(MissingValueError, match=r"found none for 1 token\(s\): z\. Fix: .*default"):
        probability(X * (Y + Z), {"x": 0.5, "y": 0.5})
    with pytest.raises(MissingValueError) as err:
        probability(X * (Y + Z), {})
    assert err.value.tokens == ("x", "y", "z") and "\n" not in str(err.value)
    assert probability(X * (Y + Z), {}, default=1.0).value == 1.0


def test_probabilities_from_the_agency_case_study() -> None:
    """ProvSQL's agency with probability id/10: P(a city has two agents), by hand."""
    p = {i: Token(f"personnel:{i}") for i in range(1, 8)}
    probs = {f"personnel:{i}": i / 10 for i in p}
    paris = delta(p[3] * p[5] + p[3] * p[6] + p[5] * p[6])
    assert probability(delta(p[1] * p[2]), probs).value == pytest.approx(0.1 * 0.2)
    assert probability(paris, probs).value == pytest.approx(0.3 * 0.5 * 0.4 + 0.3 * 0.5 * 0.6 + 0.7 * 0.5 * 0.6 + 0.3 * 0.5 * 0.6)


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, "0.5", None, True])
def test_bad_probability(bad: object) -> None:
    with pytest.raises(SemiringError, match=r"\[0, 1\]"):
        probability(X * Y, {"x": 0.5, "y": bad})  # type: ignore[dict-item]
    with pytest.raises(SemiringError, match=r"\[0, 1\]"):
        probability(X * Y, lambda t: bad)  # type: ignore[arg-type,return-value]


def test_bad_default() -> None:
    with pytest.raises(SemiringError, match="default"):
        probability(X, {}, default=2.0)


def test_agg_value_rejected() -> None:
    with pytest.raises(SemiringError, match="AggValue"):
        probability(AggValue("Count", ((X, 1),)), {"x": 0.5})  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    with pytest.raises(SemiringError, match="Expr"):
        probability("x", {})  # type: ignore[arg-type]
    with pytest.raises(SemiringError, match="method"):
        probability(X, {"x": 0.5}, method="sampling")
    with pytest.raises(SemiringError, match="samples"):
        probability(X, {"x": 0.5}, samples=0)
    with pytest.raises(SemiringError, match="Mapping"):
        probability(X, 0.5)  # type: ignore[arg-type]


def test_exact_over_limit_raises() -> None:
    majority = X * Y + X * Z + Y * Z
    with pytest.raises(SemiringError, match=r"exact_limit=2.*monte-carlo"):
        probability(majority, {}, default=0.5, method="exact", exact_limit=2)
    # a formula that really is too big for the default budget
    pairs = plus(*[Token(f"v{i}") * Token(f"v{i + 1}") for i in range(3000)])
    with pytest.raises(SemiringError, match="monte-carlo"):
        probability(pairs, {}, default=0.5, method="exact")
    assert probability(pairs, {}, default=0.5, samples=1000).method == "monte-carlo"


# --- depth ----------------------------------------------------------------------------

DEPTH = 50_000


def test_deep_read_once_chain() -> None:
    e: Expr = Token("t0")
    expected = 0.5
    for i in range(1, DEPTH):  # raw constructors: nothing is flattened away
        if i % 2:
            e = Product((e, Token(f"t{i}")))
            expected *= 0.5
        else:
            e = Sum((e, Token(f"t{i}")))
            expected = 1 - (1 - expected) * 0.5
    r = probability(e, {}, default=0.5)
    assert r.method == "read-once"
    assert r.value == pytest.approx(expected)
    mc = probability(e, {}, default=0.5, method="monte-carlo", samples=500)
    assert mc.samples == 500 and 0.0 <= mc.value <= 1.0


def test_deep_chain_with_repeated_tokens() -> None:
    e: Expr = X * Y + X * Z + Y * Z
    expected = 0.5
    for i in range(DEPTH):
        e = delta(plus(times(e, Token(f"a{i}")), Token(f"b{i}")))
        expected = 1 - (1 - expected * 0.99) * (1 - 1e-5)

    def probs(name: str) -> float:
        return 0.5 if name in "xyz" else 0.99 if name.startswith("a") else 1e-5

    r = probability(e, probs)
    assert r.method == "exact"
    assert r.value == pytest.approx(expected)
