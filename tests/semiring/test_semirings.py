"""Tests of the built-in semirings: laws, δ, black boxes, aggregation, registry."""
from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import SemiringError
from lipspark.semiring import semirings
from lipspark.semiring import (
    BOOLEAN,
    COUNTING,
    LINEAGE,
    SECURITY,
    TROPICAL,
    WHY,
    MaxMinSemiring,
    MinMaxSemiring,
    Semiring,
    get_semiring,
    register_semiring,
    semiring_names,
)

_names = st.sampled_from("abcd")
#: ProvSQL's intelligence-agency case study: its classification_level ENUM, lowest first
AGENCY = ("unclassified", "restricted", "confidential", "secret", "top_secret")
AGENCY_MINMAX = MinMaxSemiring(AGENCY)
AGENCY_MAXMIN = MaxMinSemiring(AGENCY)
ELEMENTS: dict[str, tuple[Semiring[Any], st.SearchStrategy[Any]]] = {
    "boolean": (BOOLEAN, st.booleans()),
    "counting": (COUNTING, st.integers(0, 10**6)),
    # integral costs keep float + exact (associativity) while still exercising ∞
    "tropical": (TROPICAL, st.integers(0, 10**6).map(float) | st.just(math.inf)),
    "why": (WHY, st.frozensets(st.frozensets(_names, max_size=3), max_size=3)),
    "lineage": (LINEAGE, st.none() | st.frozensets(_names, max_size=4)),
    "security": (SECURITY, st.sampled_from([*SECURITY.levels, None])),
    "minmax": (AGENCY_MINMAX, st.sampled_from([*AGENCY, None])),
    "maxmin": (AGENCY_MAXMIN, st.sampled_from([*AGENCY, None])),
    "minmax-one-level": (MinMaxSemiring(["only"]), st.sampled_from(["only", None])),
}


@pytest.mark.parametrize("name", sorted(ELEMENTS))
def test_semiring_laws(name: str) -> None:
    k, elems = ELEMENTS[name]

    @settings(max_examples=150, deadline=None)
    @given(elems, elems, elems)
    def laws(a: Any, b: Any, c: Any) -> None:
        assert k.plus(k.plus(a, b), c) == k.plus(a, k.plus(b, c))
        assert k.times(k.times(a, b), c) == k.times(a, k.times(b, c))
        assert k.plus(a, b) == k.plus(b, a)
        assert k.times(a, b) == k.times(b, a)
        assert k.times(a, k.plus(b, c)) == k.plus(k.times(a, b), k.times(a, c))
        assert k.times(k.plus(b, c), a) == k.plus(k.times(b, a), k.times(c, a))
        assert k.plus(a, k.zero) == a
        assert k.times(a, k.one) == a
        assert k.times(a, k.zero) == k.zero
        assert k.is_zero(k.zero) and not k.is_zero(k.one)

    laws()


@pytest.mark.parametrize("name", sorted(ELEMENTS))
def test_delta_fixes_zero_and_one(name: str) -> None:
    k, _ = ELEMENTS[name]
    assert k.delta(k.zero) == k.zero
    assert k.delta(k.one) == k.one


def test_counting_delta() -> None:
    assert [COUNTING.delta(n) for n in (0, 1, 5)] == [0, 1, 1]


@pytest.mark.parametrize("name", sorted(ELEMENTS))
def test_black_box_folds_plus(name: str) -> None:
    k, _ = ELEMENTS[name]
    assert k.black_box([]) == k.zero
    assert k.black_box([k.one, k.zero]) == k.one


def test_specific_values() -> None:
    assert BOOLEAN.black_box([False, True]) is True
    assert COUNTING.black_box([2, 3]) == 5
    assert TROPICAL.times(1.0, TROPICAL.zero) == math.inf
    assert WHY.times(WHY.token_value("a"), WHY.token_value("b")) == {frozenset({"a", "b"})}
    assert LINEAGE.plus(None, frozenset({"a"})) == {"a"}
    assert SECURITY.plus("secret", SECURITY.zero) == "secret"
    assert SECURITY.times("secret", "public") == "secret"
    assert SECURITY.levels == ("public", "confidential", "secret", "top_secret") and SECURITY.one == "public"


def test_ordered_levels_hand_computed() -> None:
    """The semiring shapes of ProvSQL's sr_minmax and sr_maxmin over the agency's ENUM."""
    k = AGENCY_MINMAX
    assert (k.zero, k.one) == (None, "unclassified")
    assert k.plus("secret", "restricted") == "restricted" and k.times("secret", "restricted") == "secret"
    assert k.plus("top_secret", None) == "top_secret" and k.times("top_secret", None) is None  # None: no derivation
    assert k.delta("secret") == "secret"  # a group keeps its members' level, as in ProvSQL
    d = AGENCY_MAXMIN
    assert (d.zero, d.one) == (None, "top_secret")
    assert d.plus("secret", "restricted") == "secret" and d.times("secret", "restricted") == "restricted"
    assert d.plus("unclassified", None) == "unclassified" and d.times("unclassified", None) is None
    # the highest level is a level like any other, not the zero (ProvSQL's zero is the top of the ENUM)
    assert not k.is_zero("top_secret") and k.plus("top_secret", "top_secret") == "top_secret"
    assert str(k) == "minmax(unclassified < restricted < confidential < secret < top_secret)" and str(SECURITY) == "security"


@pytest.mark.parametrize("levels, message", [
    ([], "at least one"),
    ("abc", "at least one"),
    (["a", "b", "a"], "distinct levels; found 'a' twice in a < b < a"),
    (["a", None], "not None"),
    (["a", True], "not None or a boolean"),
])
def test_bad_levels(levels: Any, message: str) -> None:
    with pytest.raises(SemiringError, match=message):
        MinMaxSemiring(levels)


def test_coerce_checks_each_semirings_values() -> None:
    assert AGENCY_MINMAX.coerce("secret") == "secret" and SECURITY.coerce("top_secret") == "top_secret"
    for bad in ("Secret", "purple", 3, None):
        with pytest.raises(SemiringError, match=r"expected a level of minmax\(unclassified < .* < top_secret\); found"):
            AGENCY_MINMAX.coerce(bad)
    assert (BOOLEAN.coerce(1), BOOLEAN.coerce(False), COUNTING.coerce(4), TROPICAL.coerce("inf")) == (True, False, 4, math.inf)
    assert WHY.coerce(0) == WHY.zero and LINEAGE.coerce(False) is None
    for k, bad in ((BOOLEAN, "yes"), (BOOLEAN, 2), (COUNTING, -1), (COUNTING, 1.5), (COUNTING, True), (TROPICAL, True),
                   (TROPICAL, math.nan), (WHY, 1), (LINEAGE, "a")):
        with pytest.raises(SemiringError, match=f"expected a value of the {k.name} semiring"):
            k.coerce(bad)


def test_a_token_has_no_value_of_its_own_unless_the_semiring_is_symbolic() -> None:
    for k in (BOOLEAN, COUNTING, TROPICAL, SECURITY, AGENCY_MINMAX, AGENCY_MAXMIN):
        assert not k.symbolic
        with pytest.raises(SemiringError, match="has no value of its own"):
            k.token_value("a")
    assert WHY.symbolic and LINEAGE.symbolic and LINEAGE.token_value("a") == {"a"}


def test_boolean_aggregate() -> None:
    pairs = [(True, 3), (False, 100), (True, 5), (True, None)]
    assert BOOLEAN.aggregate("Count", pairs) == 2  # the null value does not count (count(col), as in Spark)
    assert BOOLEAN.aggregate("Count", pairs[:3]) == 2
    assert BOOLEAN.aggregate("Sum", pairs) == 8
    assert BOOLEAN.aggregate("Min", pairs) == 3
    assert BOOLEAN.aggregate("Max", pairs) == 5
    assert BOOLEAN.aggregate("Avg", pairs) == 4.0
    dead = [(False, 1)]
    assert BOOLEAN.aggregate("Count", dead) == 0
    assert [BOOLEAN.aggregate(op, dead) for op in ("Sum", "Min", "Max", "Avg")] == [None] * 4
    with pytest.raises(SemiringError, match="Median"):
        BOOLEAN.aggregate("Median", pairs)


def test_counting_aggregate_is_bag() -> None:
    pairs = [(2, 10), (0, 1), (1, 40)]
    assert COUNTING.aggregate("Count", pairs) == 3
    assert COUNTING.aggregate("Sum", pairs) == 60
    assert COUNTING.aggregate("Min", pairs) == 10
    assert COUNTING.aggregate("Max", pairs) == 40
    assert COUNTING.aggregate("Avg", pairs) == 20.0
    assert COUNTING.aggregate("Avg", [(0, 5)]) is None
    assert COUNTING.aggregate("Sum", [(0, 5)]) is None
    assert COUNTING.aggregate("Count", [(0, 5)]) == 0


def test_other_aggregates_use_nonzero_pairs() -> None:
    assert TROPICAL.aggregate("Sum", [(2.0, 1), (math.inf, 10), (0.0, 4)]) == 5
    assert WHY.aggregate("Max", [(WHY.zero, 9), (WHY.one, 3)]) == 3
    assert LINEAGE.aggregate("Count", [(None, 9), (frozenset(), 3), (frozenset("a"), 3)]) == 2
    assert SECURITY.aggregate("Min", [(SECURITY.zero, 1), ("secret", 7)]) == 7


def test_registry() -> None:
    assert semiring_names() == ("boolean", "counting", "lineage", "security", "tropical", "why")
    for name in semiring_names():
        assert get_semiring(name.upper()).name == name
    with pytest.raises(SemiringError, match="boolean, counting"):
        get_semiring("nope")
    with pytest.raises(SemiringError):
        register_semiring("boolean")  # type: ignore[arg-type]


def test_register_custom_semiring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semirings, "_REGISTRY", dict(semirings._REGISTRY))

    class Viterbi(Semiring[float]):
        name, zero, one = "viterbi-test", 0.0, 1.0

        def plus(self, a: float, b: float) -> float:
            return max(a, b)

        def times(self, a: float, b: float) -> float:
            return a * b

    v = Viterbi()
    register_semiring(v)
    assert get_semiring("Viterbi-Test") is v
    with pytest.raises(SemiringError, match="already registered"):
        register_semiring(Viterbi())
    register_semiring(Viterbi(), replace=True)
    assert get_semiring("viterbi-test") is not v
