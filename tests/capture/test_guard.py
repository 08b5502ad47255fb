"""A filter's condition over values, decided per row (lipspark/capture/rules/guard.py).

On random relations and random conditions over aggregates (HAVING against a literal, a
threshold from a one-row aggregate, combined with a condition over a plain column): fidelity
(provenance on == off), each kept row's polynomial against the reference evaluator (the filter
keeps annotations: its test's · is 1), and the deletion oracle — for random deletions, a what-if
that says exact equals re-running the plain query without the deleted tuples (surviving rows,
recomputed values), and one that is not exact says why (a dropped row's test now passes, or a
test became unknown)."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from lipspark import Tracker
from lipspark.query.deletion import delete
from lipspark.query.prediction import predict, what_if
from lipspark.semiring import normal_form
from lipspark.vocabulary import Op
from tests import reference as ref
from tests.util import local_frame

SCHEMA = "id int, k string, q int"
_CMP = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_SPARK = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
          "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _plan(kind: str, cmp: str, c: int, plain_k: str | None):
    def run(df):
        totals = df.groupBy("k").agg(F.sum("q").alias("tot"), F.count("*").alias("n"))
        if kind == "having":
            cond = _SPARK[cmp](F.col("tot"), F.lit(c))
        elif kind == "threshold":  # against a one-row aggregate: sum vs c × avg
            totals = totals.crossJoin(df.agg(F.avg("q").alias("a")))
            cond = _SPARK[cmp](F.col("tot"), F.col("a") * c)
        else:  # a formula of the row's own aggregates
            cond = _SPARK[cmp](F.col("tot") - F.col("n") * c, F.lit(0))
        if plain_k is not None:
            cond = cond | (F.col("k") == plain_k)
        return totals.filter(cond).select("k", "tot", "n")
    return run


def _bag(rows):
    return Counter(tuple(ref.norm_value(v) for v in r) for r in rows)


rows_st = st.lists(st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(-5, 20))), min_size=1, max_size=7)


_CASES = dict(data=rows_st, kind=st.sampled_from(["having", "threshold", "formula"]), cmp=st.sampled_from(sorted(_CMP)),
              c=st.integers(-3, 12), plain_k=st.sampled_from([None, "c"]), picks=st.lists(st.integers(0, 99), min_size=1, max_size=2))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=4, **_SETTINGS)
@given(**_CASES)
def test_a_filter_over_values_is_decided_per_row_and_matches_a_rerun(spark, data, kind, cmp, c, plain_k, picks):
    _check(spark, data, kind, cmp, c, plain_k, picks)


@pytest.mark.slow
@settings(max_examples=20, **_SETTINGS)
@given(**_CASES)
def test_many_filters_over_values_match_a_rerun(spark, data, kind, cmp, c, plain_k, picks):
    _check(spark, data, kind, cmp, c, plain_k, picks)


def _check(spark, data, kind, cmp, c, plain_k, picks):
    rows = [(i + 1, k, q) for i, (k, q) in enumerate(data)]
    plan = _plan(kind, cmp, c, plain_k)
    t = Tracker(spark)
    out = plan(t.annotate(local_frame(spark, rows, SCHEMA), "R", key=["id"]))
    annotated = out.collect_annotated()
    assert _bag(r.row for r in annotated) == _bag(plan(local_frame(spark, rows, SCHEMA)).collect())  # fidelity
    latent = out.collect_latent()
    assert latent is not None
    g = t.graph()
    # the reference: the group's δ(Σ members), kept as it is by the filter
    members: dict[str, list] = {}
    for i, k, _ in rows:
        members.setdefault(k, []).append(ref.token("R", [i]))
    for r in annotated:
        want = ref.DELTA(sum(members[r.row.k]))
        assert ref.poly_normal_form(normal_form(g.polynomial(r.annotation)) - want) == 0
    assert not len(g.nodes_with(op=Op.CONDITION))  # decided per row, never one condition for all
    deleted = sorted({rows[p % len(rows)][0] for p in picks})
    what_if = delete(g, [g.token_id(f"R:{i}") for i in deleted])
    rerun = plan(local_frame(spark, [x for x in rows if x[0] not in deleted], SCHEMA)).collect()
    # the graph alone cannot follow a dropped row that would pass now; the frame, which carries
    # the rows the filter dropped through the select, always can
    if not what_if.exact:
        assert what_if.passed or what_if.conditions, "not exact: it says which test it could not decide"
    p = predict(g, what_if, out.columns, annotated, latent)
    assert p.exact, p.why
    assert _bag(p.rows) == _bag(rerun), (rows, deleted)


def test_a_condition_it_cannot_express_is_one_condition_node(spark):
    t = Tracker(spark)
    df = t.annotate(local_frame(spark, [(1, "a", 3), (2, "a", 4), (3, "b", 1)], SCHEMA), "R", key=["id"])
    out = df.groupBy("k").agg(F.sum("q").alias("tot")).filter(F.round(F.col("tot") / 2) > 1)
    assert [r.k for r in out.collect()] == ["a"]
    g = t.graph()
    assert len(g.nodes_with(op=Op.CONDITION)) == 1 and not len(g.nodes_with(op=Op.POSITIVE))
    r = delete(g, [g.token_id("R:1")])
    assert not r.exact and {c.label for c in r.conditions} == {"filter (round((CAST(tot AS DOUBLE) / 2), 0) > 1)"}


@pytest.mark.parametrize("how", ["join", "filter"])
def test_a_join_on_keys_and_a_value_is_the_join_then_a_filter(spark, how):
    rows = [(1, "a", 3), (2, "a", 4), (3, "b", 1), (4, "b", 1)]

    def plan(df):
        best = df.groupBy("k").agg(F.max("q").alias("best")).withColumnRenamed("k", "bk")
        if how == "join":
            return df.join(best, (F.col("k") == F.col("bk")) & (F.col("q") == F.col("best"))).select("id", "k", "q")
        return df.join(best, F.col("k") == F.col("bk")).filter(F.col("q") == F.col("best")).select("id", "k", "q")

    t = Tracker(spark)
    out = plan(t.annotate(local_frame(spark, rows, SCHEMA), "R", key=["id"]))
    assert _bag(out.collect()) == _bag(plan(local_frame(spark, rows, SCHEMA)).collect())
    g = t.graph()
    # every candidate pair's test; R:3 and R:4 are alike (q 1, b's best): one node, ids are content
    assert len(g.nodes_with(op=Op.ZERO)) == 3 and not len(g.nodes_with(op=Op.CONDITION))
    kept = out.collect_annotated()
    r = delete(g, [g.token_id("R:3")])  # b's best stays 1 (R:4): exact
    assert r.exact and [x.row.id for x in kept if not r.removed[g.positions(x.annotation.factors)].any()] == [2, 4]
    r = delete(g, [g.token_id("R:2")])  # a's best falls to 3: R:1, dropped, would pass now
    assert not r.exact and len(r.passed) == 1
    # the frame carries the pairs the test dropped through the select: R:1 appears, exactly
    p = what_if(out, ["R:2"])
    assert p.exact and sorted(p.rows) == [(1, "a", 3), (3, "b", 1), (4, "b", 1)] and p.appeared == [(1, "a", 3)]
    assert p.gone == 1  # R:2


def test_a_test_that_becomes_unknown_is_named_as_a_condition_by_every_api(spark):
    """A filter over a value the graph cannot recompute (a stddev): a what-if that changes the
    value leaves the row's test unknown — not exact, and the query's answer names the filter on
    its "not exact" line and in its conditions, as :attr:`DeletionResult.conditions` does."""
    from lipspark.query import Session

    t = Tracker(spark)
    df = t.annotate(local_frame(spark, [(1, "a", 3), (2, "a", 9), (3, "a", 4), (4, "b", 1)], SCHEMA), "R", key=["id"])
    out = df.groupBy("k").agg(F.stddev("q").alias("sd"), F.sum("q").alias("tot")).filter(F.col("tot") > F.col("sd"))
    assert sorted(r.k for r in out.collect()) == ["a"]
    g = t.graph()
    r = delete(g, [g.token_id("R:2")])
    assert not r.exact and {c.label for c in r.conditions} == {"filter (CAST(tot AS DOUBLE) > sd)"}
    (answer,) = Session(g).run('delete token "R:2"')
    assert answer.extra["exact"] is False
    rows, _ = answer.extra["_tables"]["conditions"]
    assert sorted(row["node"] for row in rows) == sorted(c.node for c in r.conditions)
    text = answer.to_text()
    assert "not exact: 1 condition(s) read a changed value" in text and "filter (CAST(tot AS DOUBLE) > sd)" in text, text
