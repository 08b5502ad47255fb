"""The `shapley` and `banzhaf` statements: on the hand-built dealership (values computed by hand)
and on generated workflow graphs (values computed by brute force over every coalition, each
evaluated in the Boolean semiring on the graph itself)."""
from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from lipspark.errors import QueryError
from lipspark.graph.expression import evaluate, invocation_tokens, polynomial, token_name
from lipspark.query import Session
from lipspark.semiring import BOOLEAN, banzhaf, shapley, tokens
from lipspark.vocabulary import Op
from tests.query.graphs import dealership, workflow_graphs

B1 = "output Bids in dealer1 execution 1"


@pytest.fixture(scope="module")
def dealer():
    return dealership()


@pytest.fixture
def session(dealer):
    return Session(dealer.index)


def run(session, query):
    (r,) = session.run(query)
    text = r.to_text()
    assert text.splitlines()[0] == r.statement
    json.loads(json.dumps(r.to_dict()))
    return r


def values(r):
    return {row["token"]: row["value"] for row in r.rows}


# ---- by hand on the dealership --------------------------------------------------------------
# dealer 1's bid for B1 is in:B1 · δ(state:C2 · in:B1 + state:C3 · in:B1) · M, with
# in:B1 = Requests:B1 · M and state:C = Cars:C · M (M = M_dealer1[1]); as a Boolean formula
# B1 ∧ M ∧ (C2 ∨ C3). C1 (an Accord) is not in it.


def test_shapley_of_base_tuples(session):
    r = run(session, f"shapley {B1}")
    assert r.kind == "responsibility"
    # B1 ∧ (C2 ∨ C3), M present: B1 is decisive unless it arrives first (2/3), C2 only in
    # the order B1, C2, C3 of the six (1/6)
    assert values(r) == pytest.approx({"Requests:B1": 2 / 3, "Cars:C2": 1 / 6, "Cars:C3": 1 / 6}, abs=1e-12)
    assert [row["token"] for row in r.rows] == ["Requests:B1", "Cars:C2", "Cars:C3"]  # highest first, ties by name
    assert [row["kind"] for row in r.rows] == ["tuple"] * 3 and r.rows[1]["module"] == "dealer1"
    assert r.summary.splitlines() == [
        "shapley values of 3 base tuples for output Bids(B1, P1, Civic, 19500.0) in dealer1, execution 1: exact",
        "(invocations present as captured: exogenous)"]
    lines = r.to_text().splitlines()
    assert lines[3].split() == ["node", "module", "execution", "value"]  # no stderr column when exact
    assert lines[5].split() == ["Requests:B1", "dealer1", "1", "0.666666666667"]
    assert lines[6].split() == ["Cars:C2", "dealer1", "0.166666666667"]  # initial state: no execution


def test_banzhaf_of_base_tuples(session):
    r = run(session, f"banzhaf {B1}")
    # B1 decisive in 3 of the 4 coalitions of C2, C3; C2 only in {B1}
    assert values(r) == pytest.approx({"Requests:B1": 3 / 4, "Cars:C2": 1 / 4, "Cars:C3": 1 / 4}, abs=1e-12)


def test_over_invocations_and_both(session):
    r = run(session, f"shapley {B1} over invocations")
    assert values(r) == {"M_dealer1[1]": 1.0}
    assert r.rows[0]["name"] == "invocation dealer1" and r.rows[0]["kind"] == "invocation"
    assert "(base tuples present as captured: exogenous)" in r.summary
    assert r.summary.startswith("shapley values of 1 invocation for output Bids(B1,")
    # B1 ∧ M ∧ (C2 ∨ C3): C2 decisive iff B1 and M came before it and C3 after (2 of 24
    # orders); B1 and M share the rest
    r = run(session, f"shapley {B1} over invocations, tuples")
    assert r.statement == f"shapley {B1} over tuples, invocations"
    assert values(r) == pytest.approx({"Requests:B1": 5 / 12, "M_dealer1[1]": 5 / 12, "Cars:C2": 1 / 12, "Cars:C3": 1 / 12}, abs=1e-12)
    assert "exogenous" not in r.summary
    r = run(session, f"banzhaf {B1} over tuples, invocations")
    assert values(r) == pytest.approx({"Requests:B1": 3 / 8, "M_dealer1[1]": 3 / 8, "Cars:C2": 1 / 8, "Cars:C3": 1 / 8}, abs=1e-12)


def test_given_fixes_tokens(session):
    r = run(session, f'banzhaf {B1} given token "Cars:C2" = false')  # B1 ∧ C3
    assert values(r) == pytest.approx({"Requests:B1": 0.5, "Cars:C3": 0.5}, abs=1e-12)
    r = run(session, f'shapley {B1} given tuple Cars(CarId = "C2") = true')  # B1 alone; C3 a null player
    assert values(r) == {"Requests:B1": 1.0}
    assert [z["token"] for z in r.to_dict()["zero"]] == ["Cars:C3"]
    assert "1 of them 0, not listed" in r.summary
    r = run(session, f"shapley {B1} over invocations given invocation dealer1 execution 1 = false")
    assert r.rows == [] and "values of 0 invocations" in r.summary


def test_several_targets_say_which(session):
    r = run(session, "shapley output Bids in dealer1")
    assert r.columns[0] == "for"
    fors = [row["for"] for row in r.rows]
    assert fors == sorted(fors, key=fors.index) and len(set(fors)) == 3  # grouped by target
    assert all(row["value"] > 0 for row in r.rows)
    assert len(r.summary.splitlines()) == 4  # one line per target, then the exogenous note


def test_sampled_values_state_their_error(session, monkeypatch):
    monkeypatch.setitem(shapley.__kwdefaults__, "exact_limit", 0)  # force sampling
    monkeypatch.setitem(banzhaf.__kwdefaults__, "exact_limit", 0)
    r = run(session, f"shapley {B1} over tuples, invocations samples 4000 seed 7")
    exact = {"Requests:B1": 5 / 12, "M_dealer1[1]": 5 / 12, "Cars:C2": 1 / 12, "Cars:C3": 1 / 12}
    assert "sampled, 4000 orders (value ± stderr)" in r.summary and "stderr" in r.to_text().splitlines()[2]
    for row in r.rows:
        assert row["stderr"] > 0 and abs(row["value"] - exact[row["token"]]) <= 5 * row["stderr"]
    assert sum(row["value"] for row in r.rows) == pytest.approx(1.0)  # one decisive player per order
    assert run(session, f"shapley {B1} over tuples, invocations samples 4000 seed 7").rows == r.rows  # seeded
    r = run(session, f"banzhaf {B1} samples 4000 seed 7")
    assert "sampled, 4000 worlds" in r.summary
    exact = {"Requests:B1": 3 / 4, "Cars:C2": 1 / 4, "Cars:C3": 1 / 4}
    for row in r.rows:
        assert abs(row["value"] - exact[row["token"]]) <= 5 * row["stderr"]


@pytest.mark.parametrize("query, message", [
    ("shapley output Nope in dealer1", r"no relation 'Nope' in this graph \(relations: BestBid, Bids, Cars, Requests\)"),
    ("shapley output Bids in nope", r"no output of Bids in module 'nope' \(found in: dealer1\)"),
    ("shapley invocation nope", r"no module 'nope' \(modules: agg, dealer1\)"),
    (f"shapley value Amount of {B1}", r"is a value, not a tuple; shapley values say who is responsible"),
    (f"banzhaf {B1} given default = true", r"`given default = …` would fix every token, leaving no players"),
    (f"shapley {B1} given relation Cars = 0.5", r"true or false \(or 1, 0\); found float 0.5"),
    (f"shapley {B1} given relation Nope = true", r"no base tuples of relation 'Nope'"),
    (f"shapley {B1} samples 0", r"samples to be an integer >= 1; found int 0"),  # not the default
])
def test_errors_name_what_exists(session, query, message):
    with pytest.raises(QueryError, match=message):
        session.run(query)


# ---- brute force on generated graphs --------------------------------------------------------


def brute(g, node, players, measure):
    """Each player's value, from the Boolean semiring on the graph for every coalition (the other
    tokens present); Shapley by the subset formula, Banzhaf normalized by 2^(n-1)."""
    n = len(players)

    def v(present):
        world = {t: t in present for t in players}
        return int(bool(evaluate(g, node, BOOLEAN, world, default=True)))

    out = {}
    for x in players:
        others = [p for p in players if p != x]
        total = Fraction(0)
        for k in range(n):
            for s in itertools.combinations(others, k):
                weight = (Fraction(math.factorial(k) * math.factorial(n - k - 1), math.factorial(n)) if measure == "shapley"
                          else Fraction(1, 2 ** (n - 1)))
                total += weight * (v(set(s) | {x}) - v(set(s)))
        out[x] = float(total)
    return out


@settings(max_examples=30, deadline=None, database=None)
@given(workflow_graphs(max_tuples=3), st.sampled_from(["shapley", "banzhaf"]),
       st.sampled_from([("tuples",), ("invocations",), ("tuples", "invocations")]), st.randoms(use_true_random=False))
def test_statement_matches_brute_force_on_generated_graphs(gen, measure, over, rnd):
    g = gen.index
    outputs = np.flatnonzero((np.asarray(g.op) == int(Op.OUTPUT)) & ~np.asarray(g.is_v))
    if not len(outputs):
        return
    # the output with the most players brute force can enumerate (a random one mostly has one or two)
    candidates = []
    for pos in outputs.tolist():
        expr = polynomial(g, int(g.ids[pos]))
        inv = invocation_tokens(g, int(g.ids[pos]))
        players = sorted(t for k in over for t in ({"tuples": tokens(expr) - inv, "invocations": inv}[k]))
        if len(players) <= 9:
            candidates.append((len(players), rnd.random(), pos, players))
    if not candidates:
        return
    *_, pos, players = max(candidates)
    node = int(g.ids[pos])
    r = Session(g).run(f"{measure} node {node}" + ("" if over == ("tuples",) else " over " + ", ".join(over)))[0]
    got = {row["token"]: row["value"] for row in r.rows + r.to_dict()["zero"]}
    assert sorted(got) == players
    event(f"{len(players)} players")
    for t, value in brute(g, node, players, measure).items():
        assert got[t] == pytest.approx(value, abs=1e-9)
    if measure == "shapley":  # efficiency: the values add up to v(every player) − v(none)
        v_all, v_none = (bool(evaluate(g, node, BOOLEAN, {t: b for t in players}, default=True)) for b in (True, False))
        assert sum(got.values()) == pytest.approx(int(v_all) - int(v_none), abs=1e-9)
    leaves = {token_name(g, p) for p in g.ancestors(pos).tolist() if g.op[p] in (int(Op.TOKEN), int(Op.INVOCATION))}
    assert set(players) <= leaves  # the players are the graph's own tokens
