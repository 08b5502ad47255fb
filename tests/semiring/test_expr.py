"""Tests of provenance expressions: constructors, display, sympy, AggValue normal form."""
from __future__ import annotations

import pickle

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import SemiringError
from lipspark.semiring import (
    ONE,
    ZERO,
    AggValue,
    BlackBox,
    Delta,
    Expr,
    Product,
    Sum,
    Token,
    black_box,
    delta,
    equivalent,
    normal_form,
    plus,
    times,
    to_sympy,
    tokens,
)
from lipspark.semiring.expr import _One, _Zero

A, B, C = Token("a"), Token("b"), Token("c")
C2, C3, B1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")


def test_tokens_are_values() -> None:
    assert Token("a") == A and hash(Token("a")) == hash(A)
    assert Token("a") != B
    assert {A, Token("a"), B} == {A, B}
    assert repr(A) == "Token(name='a')"


def test_zero_one_singletons() -> None:
    assert isinstance(ZERO, _Zero) and isinstance(ONE, _One)
    assert isinstance(ZERO, Expr) and ZERO != ONE
    assert pickle.loads(pickle.dumps(ZERO)) is ZERO
    assert pickle.loads(pickle.dumps(ONE)) is ONE


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        A.name = "b"  # type: ignore[misc]


def test_plus_flattens_and_drops_zero() -> None:
    assert plus(A, plus(B, C)) == Sum((A, B, C))
    assert plus(A, ZERO, B) == Sum((A, B))
    assert plus(Sum((A, Sum((B, C)))), A) == Sum((A, B, C, A))
    assert plus() is ZERO and plus(ZERO, ZERO) is ZERO
    assert plus(A) is A and plus(ZERO, A) is A


def test_times_flattens_drops_one_and_annihilates() -> None:
    assert times(A, times(B, C)) == Product((A, B, C))
    assert times(A, ONE, B) == Product((A, B))
    assert times(A, ZERO, B) is ZERO
    assert times() is ONE and times(A) is A


def test_no_other_simplification() -> None:
    assert A * (B + C) == Product((A, Sum((B, C))))
    assert delta(delta(A)) == Delta(Delta(A))
    assert A + A == Sum((A, A))
    assert delta(ZERO) is ZERO and delta(ONE) is ONE


def test_operators_and_sum_builtin() -> None:
    assert A + B == plus(A, B) and A * B == times(A, B)
    assert sum([A, B, C]) == Sum((A, B, C))
    assert 1 * A is A and A + 0 is A
    with pytest.raises(SemiringError, match="Token"):
        A + 2  # noqa: B018
    with pytest.raises(SemiringError):
        plus(A, "b")  # type: ignore[arg-type]


def test_constructor_validation() -> None:
    with pytest.raises(SemiringError, match="non-empty"):
        Token("")
    with pytest.raises(SemiringError, match="Expr"):
        Sum((A, "b"))  # type: ignore[arg-type]
    with pytest.raises(SemiringError):
        Delta("a")  # type: ignore[arg-type]
    with pytest.raises(SemiringError):
        BlackBox("", (A,))
    assert Sum([A, B]).terms == (A, B)  # type: ignore[arg-type]


def test_str() -> None:
    assert str(delta(C2 * B1 + C3 * B1)) == "δ(Cars:C2·Req:B1 + Cars:C3·Req:B1)"
    assert str(A * (B + C)) == "a·(b + c)"
    assert str(black_box("calcBid", A, B * C)) == "calcBid(a, b·c)"
    assert str(ZERO) == "0" and str(ONE) == "1"
    v = AggValue("Count", ((C2, 1), (C3, 1)))
    assert str(v) == "Count(Cars:C2 ⊗ 1 + Cars:C3 ⊗ 1)"
    assert str(AggValue("Sum", ((A + B, 5),))) == "Sum((a + b) ⊗ 5)"
    assert str(AggValue("Min", ())) == "Min(0)"


def test_tokens() -> None:
    assert tokens(delta(C2 * B1 + C3 * B1)) == {"Cars:C2", "Cars:C3", "Req:B1"}
    assert tokens(ONE) == frozenset()
    assert tokens(AggValue("Sum", ((A, 1), (black_box("f", B), 2)))) == {"a", "b"}


def test_to_sympy() -> None:
    a, b = sympy.symbols("a b")
    assert to_sympy(A * B) == a * b
    assert to_sympy(ZERO) == 0 and to_sympy(ONE) == 1
    assert to_sympy(delta(A)) == sympy.Function("δ")(a)
    assert to_sympy(black_box("f", A, B)) == sympy.Function("f")(a, b)
    assert str(to_sympy(A + A)) == "a + a"  # unevaluated by default
    assert to_sympy(A + A, evaluate=True) == 2 * a
    agg = to_sympy(AggValue("Sum", ((A, 3), (B, "x"), (A, None))))
    tensor = sympy.Function("⊗")
    assert agg.func == sympy.Function("Sum")
    assert agg.args == (tensor(a, 3), tensor(b, sympy.Symbol("x")), tensor(a, sympy.Symbol("None")))


def test_normal_form_and_equivalent() -> None:
    a, b, c = sympy.symbols("a b c")
    assert normal_form(A * (B + C)) == a * b + a * c
    assert normal_form(delta(A * (B + C))) == sympy.Function("δ")(a * b + a * c)
    assert normal_form(Sum((A, ZERO))) == a
    assert equivalent(delta(C2 * B1 + C3 * B1), delta(B1 * (C3 + C2)))
    assert not equivalent(A + A, A)
    assert not equivalent(delta(A), A)
    assert not equivalent(A, AggValue("Count", ((A, 1),)))


def test_aggvalue_validation() -> None:
    assert AggValue("count", ()).op == "Count"
    with pytest.raises(SemiringError, match="Count, Sum, Min, Max, Avg"):
        AggValue("Median", ((A, 1),))
    with pytest.raises(SemiringError, match="pair"):
        AggValue("Sum", ((A,),))  # type: ignore[arg-type]
    with pytest.raises(SemiringError, match="hashable"):
        AggValue("Sum", ((A, [1]),))
    assert AggValue("Sum", [(A, 1)]).terms == ((A, 1),)  # type: ignore[arg-type]
    assert hash(AggValue("Sum", ((A, 1),))) == hash(AggValue("Sum", ((Token("a"), 1),)))


def test_aggvalue_normal_form() -> None:
    v1 = AggValue("Sum", ((C2, 10), (C3, 10), (B1, 7)))
    v2 = AggValue("Sum", ((C3 + C2, 10.0), (B1, 7), (A * ZERO, 99)))
    assert v1.normal_form() == v2.normal_form()
    assert equivalent(v1, v2)
    assert not equivalent(v1, AggValue("Max", v1.terms))
    assert not equivalent(v1, AggValue("Sum", ((C2, 10), (B1, 7))))
    assert (AggValue("Sum", ((A, 1),)) + AggValue("Sum", ((B, 1),))).terms == ((A, 1), (B, 1))
    with pytest.raises(SemiringError):
        AggValue("Sum", ()) + AggValue("Min", ())


def test_deep_chain_hash_eq_str() -> None:
    e1: Expr = Token("t0")
    e2: Expr = Token("t0")
    for i in range(1, 10_000):
        e1 = Sum((e1, Token(f"t{i}")))
        e2 = Sum((e2, Token(f"t{i}")))
    assert hash(e1) == hash(e2) and e1 == e2 and e1 is not e2
    assert e1 != Sum((e1, A))
    assert len(tokens(e1)) == 10_000
    assert str(e1).startswith("t0 + t1 + t2")
    assert len(plus(e1, A).terms) == 10_001  # type: ignore[attr-defined]


def test_pickle_roundtrip() -> None:
    e = delta(black_box("f", A * (B + C), ONE))
    assert pickle.loads(pickle.dumps(e)) == e
    v = AggValue("Avg", ((e, 1.5),))
    assert pickle.loads(pickle.dumps(v)) == v


# --- property: AggValue normal form is invariant under permuting and splitting -------

_TOKS = [Token(n) for n in "abcd"]
_polys = st.lists(st.sampled_from(_TOKS + [ONE]), min_size=1, max_size=3).map(
    lambda fs: times(*fs)
)
_values = st.sampled_from([1, 2, 2.0, "x", None, 3.5])
_terms = st.lists(st.tuples(_polys, _values), max_size=6)


@settings(max_examples=60, deadline=None)
@given(_terms, st.randoms(use_true_random=False), st.sampled_from(["Count", "Sum", "Min"]))
def test_aggvalue_normal_form_permute_and_split(terms, rnd, op) -> None:  # type: ignore[no-untyped-def]
    base = AggValue(op, tuple(terms))
    shuffled = list(terms)
    rnd.shuffle(shuffled)
    assert AggValue(op, tuple(shuffled)).normal_form() == base.normal_form()
    # merging same-valued terms into one sum is the semimodule law read backwards
    merged: dict[object, list[Expr]] = {}
    for p, v in terms:
        merged.setdefault(v, []).append(p)
    merged_v = AggValue(op, tuple((plus(*ps), v) for v, ps in merged.items()))
    assert merged_v.normal_form() == base.normal_form()
    # splitting a term (p + q) ⊗ v into p ⊗ v + q ⊗ v, and distributing, changes nothing
    split = []
    for p, v in terms:
        split.extend([(times(p, Token("s")), v), (times(p, Token("u")), v)])
    joined = AggValue(op, tuple((times(p, Token("s") + Token("u")), v) for p, v in terms))
    assert AggValue(op, tuple(split)).normal_form() == joined.normal_form()
    # adding a term with a fresh token changes the normal form
    assert AggValue(op, tuple(terms) + ((Token("fresh"), 1),)).normal_form() != base.normal_form()


# --- text: its length over the DAG, its prefixes, and the cap ------------------------

def _exprs() -> st.SearchStrategy[Expr]:
    from lipspark.semiring import monus

    leaves = st.sampled_from([A, B, C, ZERO, ONE, Token("long:token")])
    return st.recursive(leaves, lambda kids: st.one_of(
        st.lists(kids, min_size=1, max_size=4).map(lambda xs: plus(*xs)),
        st.lists(kids, min_size=1, max_size=4).map(lambda xs: times(*xs)),
        kids.map(delta),
        st.tuples(kids, kids).map(lambda ab: monus(*ab)),
        st.lists(kids, max_size=3).map(lambda xs: black_box("f", *xs))), max_leaves=14)


@settings(max_examples=200, deadline=None)
@given(_exprs(), st.integers(min_value=1, max_value=40))
def test_text_length_and_prefixes_agree_with_str(e: Expr, k: int) -> None:
    from lipspark.semiring import Prefixes
    from lipspark.semiring._nodes import check_text_length

    text = str(e)
    assert check_text_length([e]) == len(text)
    pre = Prefixes(k)
    for sub in (e, *e._children()):  # memoized across calls: the children are read from the memo
        assert pre(sub) == str(sub)[:k]


def test_a_shared_expression_too_long_to_write_is_refused_in_one_line() -> None:
    from lipspark.semiring import MAX_TEXT, Prefixes

    e: Expr = A
    for i in range(40):  # 81 nodes; its text doubles at each level
        s = plus(e, Token(f"t{i}"))
        e = times(s, s)
    with pytest.raises(SemiringError, match=f"at most {MAX_TEXT} characters; this one would have \\d+") as err:
        str(e)
    assert "\n" not in str(err.value)
    with pytest.raises(SemiringError, match="at most"):
        str(AggValue("Sum", ((e, 1),)))
    assert Prefixes(10)(e) == "((((((((((" and len(Prefixes()(e)) == 4096  # a sort key stays cheap
