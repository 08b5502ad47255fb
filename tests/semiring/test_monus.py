"""The monus ⊖ (m-semirings, Geerts and Poggi 2010), checked against its definitions by hand and
by brute force over possible worlds; the semirings and engines without one refuse."""
from __future__ import annotations

import itertools
import math

import pytest

from lipspark.errors import SemiringError
from lipspark.semiring import (BOOLEAN, COUNTING, LINEAGE, SECURITY, TROPICAL, WHY, MaxMinSemiring, Semiring, Token, ZERO,
                               delta, evaluate, expand, monus, probability, shapley, to_sympy)

a, b, c = Token("a"), Token("b"), Token("c")


def test_printing_and_the_laws_of_zero():
    assert str(monus(a * b, delta(b + c))) == "a·b ⊖ δ(b + c)"
    assert str(monus(a + b, c) * c) == "((a + b) ⊖ c)·c"
    assert str(monus(a, monus(b, c))) == "a ⊖ (b ⊖ c)"
    assert monus(a, ZERO) is a and monus(ZERO, a) is ZERO
    assert str(to_sympy(monus(a, b))) == "⊖(a, b)"
    assert str(expand(monus(a, b) * (a + c))) == "(a ⊖ b)·a + (a ⊖ b)·c"


def test_boolean_is_a_and_not_b_in_every_world():
    e = monus(a * (b + c), delta(b * c))
    for va, vb, vc in itertools.product([False, True], repeat=3):
        want = (va and (vb or vc)) and not (vb and vc)
        assert evaluate(e, BOOLEAN, {"a": va, "b": vb, "c": vc}) is want


def test_counting_is_truncated_difference():
    for na, nb in itertools.product(range(4), repeat=2):
        assert evaluate(monus(a, b), COUNTING, {"a": na, "b": nb}) == max(0, na - nb)
    # a row with two derivations, one partner: δ of the partners is 1, so one copy stays
    assert evaluate(monus(a + a, delta(b)), COUNTING, {"a": 1, "b": 3}) == 1


def test_why_and_lineage_as_provsql():
    assert evaluate(monus(a + b, b), WHY) == frozenset({frozenset({"a"})})
    assert evaluate(monus(a * b, b), WHY) == frozenset({frozenset({"a", "b"})})  # {a, b} is not a witness of b
    assert evaluate(monus(a * b, b), LINEAGE) == frozenset({"a"})
    assert evaluate(monus(a, a * b), LINEAGE) is None
    assert evaluate(monus(a, b), LINEAGE, {"b": 0}) == frozenset({"a"})


def test_ordered_semirings_drop_what_the_right_side_covers():
    levels = {"a": "secret", "b": "public"}
    assert evaluate(monus(a, b), SECURITY, levels) is None  # b is visible wherever a is
    assert evaluate(monus(b, a), SECURITY, levels) == "public"
    trust = MaxMinSemiring(["low", "high"])
    assert evaluate(monus(a, b), trust, {"a": "high", "b": "low"}) == "high"
    assert evaluate(monus(a, b), trust, {"a": "low", "b": "high"}) is None
    assert evaluate(monus(a, b), TROPICAL, {"a": 1.0, "b": 2.0}) == 1.0
    assert evaluate(monus(a, b), TROPICAL, {"a": 2.0, "b": 1.0}) == math.inf


def test_a_semiring_without_monus_refuses_naming_itself():
    class MaxTimes(Semiring[float]):
        name, zero, one = "maxtimes", 0.0, 1.0

        def plus(self, x: float, y: float) -> float:
            return max(x, y)

        def times(self, x: float, y: float) -> float:
            return x * y

    with pytest.raises(SemiringError, match="the maxtimes semiring has none") as err:
        evaluate(monus(a, b), MaxTimes(), {"a": 0.5, "b": 0.5})
    assert "\n" not in str(err.value)
    assert evaluate(a * b, MaxTimes(), {"a": 0.5, "b": 0.5}) == 0.25  # without ⊖ it evaluates


def test_probability_and_responsibility_refuse_a_monus():
    with pytest.raises(SemiringError, match="no negation"):
        probability(monus(a, b), {"a": 0.5, "b": 0.5})
    with pytest.raises(SemiringError, match="no negation"):
        shapley(monus(a, b), "a")
