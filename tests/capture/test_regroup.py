"""A group-by on a value, recorded per member (lipspark/capture/rules/regroup.py): TPC-H Q13's
customers grouped by their number of orders.

On random relations: fidelity, each group's polynomial against the reference evaluator (the
membership's · is 1), and the deletion oracle — a what-if that deletes orders moves customers
between groups, and the frame's prediction (lipspark.query.prediction) equals re-running the
plain query without them: the groups left recompute or go, the groups joined recompute, a new
group appears. The graph alone says it cannot place a moved member (not exact)."""
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
from lipspark.vocabulary import Op, arithmetic
from lipspark.vocabulary.aggregates import UNKNOWN
from tests import reference as ref
from tests.util import local_frame

C_SCHEMA, O_SCHEMA = "c int, seg string", "o int, oc int, amount int"


def _plan(how: str):
    def run(c, o):
        per = (c.join(o, F.col("c") == F.col("oc"), how)
               .groupBy("c").agg(F.count("o").alias("n"), F.sum("amount").alias("total")))
        return (per.groupBy("n").agg(F.count("*").alias("d"), F.sum("c").alias("sc"), F.max("total").alias("top"),
                                     F.avg("c").alias("mean"))
                .orderBy("n"))
    return run


def _bag(rows):
    return Counter(tuple(ref.norm_value(v) for v in r) for r in rows)


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
orders_st = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 9)), min_size=1, max_size=9)


@settings(max_examples=4, **_SETTINGS)
@given(orders=orders_st, picks=st.lists(st.integers(0, 99), min_size=1, max_size=3))
def test_members_that_change_group_are_predicted_as_a_rerun_gives_them(spark, orders, picks):
    _check(spark, orders, picks, "inner")


@pytest.mark.slow
@settings(max_examples=8, **_SETTINGS)
@given(orders=orders_st, picks=st.lists(st.integers(0, 99), min_size=1, max_size=3),
       how=st.sampled_from(["inner", "left"]))
def test_many_regroupings_match_a_rerun(spark, orders, picks, how):
    _check(spark, orders, picks, how)


def _check(spark, orders, picks, how):
    customers = [(i, "s") for i in range(1, 6)]
    orows = [(10 + i, c, a) for i, (c, a) in enumerate(orders)]
    plan = _plan(how)
    t = Tracker(spark)
    out = plan(t.annotate(local_frame(spark, customers, C_SCHEMA), "C", key=["c"]),
               t.annotate(local_frame(spark, orows, O_SCHEMA), "O", key=["o"]))
    rows = out.collect_annotated()
    assert _bag(r.row for r in rows) == _bag(plan(local_frame(spark, customers, C_SCHEMA),
                                                  local_frame(spark, orows, O_SCHEMA)).collect())  # fidelity
    latent = out.collect_latent()
    assert latent is not None and latent.groups is not None and latent.groups.valued == "n"
    g = t.graph()
    assert not len(g.nodes_with(op=Op.CONDITION)) and len(g.nodes_with(op=Op.IN_GROUP))
    if how == "inner":  # the reference: each group δ(Σ its customers' δ(Σ their joined rows))
        cr = ref.base("C", [{"c": c, "seg": s} for c, s in customers], ["c"])
        orr = ref.base("O", [{"o": o, "oc": c, "amount": a} for o, c, a in orows], ["o"])
        per = ref.group_by(ref.theta_join(cr, orr, lambda l, r: l["c"] == r["oc"]), ["c"],
                           [("n", "count", "o"), ("total", "sum", "amount")])
        want = ref.tuple_polynomials(ref.select(ref.group_by(per, ["n"], [("d", "count", None)]), ["n"]))
        for r in rows:
            got = normal_form(g.polynomial(r.annotation))
            assert ref.poly_normal_form(got - want[(r.row.n,)]) == 0
    deleted = sorted({orows[p % len(orows)][0] for p in picks})
    labels = [f"O:{o}" for o in deleted]
    p = predict(g, delete(g, [g.token_id(x) for x in labels]), out.columns, rows, latent)
    rerun = plan(local_frame(spark, customers, C_SCHEMA), local_frame(spark, [r for r in orows if r[0] not in deleted], O_SCHEMA))
    if not p.exact:  # only a customer's last order deleted under a left join: its padded row appears (⊖)
        assert how == "left" and p.deletion.appeared, p.why
        return
    assert _bag(p.rows) == _bag(rerun.collect()), (orows, deleted, p.rows)


def test_the_graph_alone_says_a_member_moved_and_the_frame_places_it(spark):
    t = Tracker(spark)
    c = t.annotate(local_frame(spark, [(i, "s") for i in range(1, 5)], C_SCHEMA), "C", key=["c"])
    o = t.annotate(local_frame(spark, [(10, 1, 5), (11, 1, 5), (12, 2, 1), (13, 3, 2), (14, 3, 2), (15, 3, 2)], O_SCHEMA),
                   "O", key=["o"])
    out = _plan("left")(c, o)
    assert [(r.n, r.d, r.sc) for r in out.collect()] == [(0, 1, 4), (1, 1, 2), (2, 1, 1), (3, 1, 3)]
    g = t.graph()
    r = delete(g, [g.token_id("O:13")])  # customer 3: three orders → two
    assert not r.exact and len(r.moved) == 1
    assert [c.label for c in r.conditions] == ["groupBy on n"]
    p = what_if(out, ["O:13"])
    assert p.exact and sorted((x[0], x[1], x[2]) for x in p.rows) == [(0, 1, 4), (1, 1, 2), (2, 2, 4)]
    p = what_if(out, ["O:13", "O:14"])  # three → one: joins customer 2's group
    assert p.exact and sorted((x[0], x[1], x[2]) for x in p.rows) == [(0, 1, 4), (1, 2, 5), (2, 1, 1)]
    p = what_if(out.select("n", "d"), ["O:13"])  # a projection since: the frame has no groups to place it in
    assert not p.exact and any("group-by on a value" in w for w in p.why)


def test_a_grouping_on_two_values_stays_one_condition(spark):
    t = Tracker(spark)
    o = t.annotate(local_frame(spark, [(10, 1, 5), (11, 1, 5), (12, 2, 1)], O_SCHEMA), "O", key=["o"])
    per = o.groupBy("oc").agg(F.count("o").alias("n"), F.sum("amount").alias("total"))
    out = per.groupBy("n", "total").agg(F.count("*").alias("d"))
    assert out.latent is None
    g = t.graph()
    assert len(g.nodes_with(op=Op.CONDITION)) == 1 and not len(g.nodes_with(op=Op.IN_GROUP))


def test_in_group_is_equality_as_spark_groups():
    assert arithmetic(Op.IN_GROUP, [2, 2.0]) is True and arithmetic(Op.IN_GROUP, [2, 3]) is False
    assert arithmetic(Op.IN_GROUP, [None, None]) is True and arithmetic(Op.IN_GROUP, [None, 0]) is False
    assert arithmetic(Op.IN_GROUP, [float("nan"), float("nan")]) is True
    assert arithmetic(Op.IN_GROUP, [UNKNOWN, 1]) is UNKNOWN


def test_a_distinct_aggregate_of_the_regrouped_rows_is_not_predicted(spark):
    """Moving a member into a group's DISTINCT count would need its value's δ there: the frame
    says it cannot, rather than count it twice or not at all."""
    t = Tracker(spark)
    o = t.annotate(local_frame(spark, [(10, 1, 5), (11, 1, 5), (12, 2, 1), (13, 3, 2)], O_SCHEMA), "O", key=["o"])
    per = o.groupBy("oc").agg(F.count("o").alias("n"), F.max("amount").alias("top"))
    out = per.groupBy("n").agg(F.countDistinct("top").alias("tops"))
    assert sorted((r.n, r.tops) for r in out.collect()) == [(1, 2), (2, 1)]
    p = what_if(out, ["O:10"])  # customer 1: two orders → one, into n = 1
    assert not p.exact and any("DISTINCT" in w for w in p.why), p.why
