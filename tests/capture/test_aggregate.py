"""Aggregations: a keyless aggregate's row over no input is annotated 1; refusals name the user's
function and say what to write instead; duplicate column names de-duplicate as in plain Spark;
aggregates of expressions, DISTINCT aggregates, black-box aggregates and expressions over
aggregates give the data plain Spark gives and the values the reference evaluator gives, and a
what-if recomputes them or says unknown, never keeps a stale value."""
from __future__ import annotations

import pytest
import sympy
from pyspark.sql import functions as F
from pyspark.sql import types as T

import math
from decimal import ROUND_HALF_UP, Decimal

from lipspark import Tracker, UnsupportedOperation
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import BOOLEAN, COUNTING, ONE, evaluate, normal_form
from lipspark.vocabulary import Op
from tests import reference as ref
from tests.test_frame import R, S, check, polys
from tests.util import graph_of, local_frame, reference_form, value_form


def test_a_keyless_aggregate_over_no_rows_is_one_row_annotated_1(spark):
    t, ann = check(spark, lambda R: R.filter(F.lit(False)).agg(F.count("*"), F.sum("v")), R=R)
    (row,) = ann.collect_annotated()
    assert tuple(row.row) == (0, None)  # what PySpark returns
    g = t.graph()
    assert g.polynomial(row.annotation) == ONE  # SQL returns the row whatever the input: 1, not δ(0) = 0
    count, total = (g.value(row.annotation, c) for c in row.row.asDict())
    assert evaluate(count, COUNTING) == 0 and g.node(row.annotation.values["count(1)"])["value"] == 0
    assert evaluate(total, COUNTING) is None
    # the reference evaluator agrees: one row, annotation 1, Count of nothing
    empty = ref.group_by(ref.filter_rows(ref.base("R", [{"id": 1, "v": 2}], ["id"]), lambda d: False), [],
                         [("n", "count", None), ("s", "sum", "v")])
    assert [(r.data, r.ann) for r in empty] == [({"n": 0, "s": None}, 1)]


def test_a_keyless_aggregate_over_no_rows_downstream(spark):
    # joined, unioned and de-duplicated like any row: a factor 1, a member 1 of the δ's sum
    fn = lambda R: R.crossJoin(R.filter(F.lit(False)).agg(F.count("*").alias("n"))).filter("id = 1").distinct()  # noqa: E731
    t, ann = check(spark, fn, R=R)
    _, p = polys(t, ann)
    assert [str(v[0]) for v in p.values()] == ["δ(R:1)"]
    t, ann = check(spark, lambda R: R.filter(F.lit(False)).agg(F.max("v").alias("m")).distinct(), R=R)
    (row,) = ann.collect_annotated()
    assert evaluate(t.graph().polynomial(row.annotation), COUNTING) == 1


@pytest.mark.parametrize("op, name", [
    (lambda R: R.agg(F.percentile_approx("v", 0.5)), "aggregate percentile_approx"),
    (lambda R: R.groupBy("k").agg(F.approx_count_distinct("v").alias("n")), "aggregate approx_count_distinct"),
    (lambda R: R.groupBy("k").agg(F.kurtosis("v")), "aggregate kurtosis"),
    (lambda R: R.groupBy("k").agg((F.max_by("id", "v") + 1).alias("x")), "aggregate max_by"),
    (lambda R: R.groupBy("k").agg(F.expr("sum(v) FILTER (WHERE v > 10)")), "aggregate sum with FILTER"),
])
def test_a_refused_aggregate_names_the_users_function(spark, op, name):
    r = Tracker(spark).annotate(local_frame(spark, *R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        op(r)
    msg = str(err.value)
    assert name in msg and "Instead:" in msg and "\n" not in msg
    assert "HyperLogLogPlusPlus" not in msg and "MaxBy" not in msg and "Kurtosis" not in msg


def _my_udf(x):
    return str(x)


def _udf_and_lambda_cases():
    my_udf = F.udf(_my_udf, T.StringType())
    return [
        (lambda R: R.agg(F.sum(F.length(my_udf("id")))), "sum", "_my_udf"),
        (lambda R: R.groupBy("k").agg(F.max(my_udf("v")).alias("m")), "max", "_my_udf"),
        (lambda R: R.groupBy("k").agg(F.collect_list(my_udf("v"))), "collect_list", "_my_udf"),
        (lambda R: R.agg(F.sum(F.size(F.filter(F.array("id", "v"), lambda x: x > 1)))), "sum", "lambda"),
    ]


@pytest.mark.parametrize("op, fn, inner", _udf_and_lambda_cases())
def test_an_aggregate_over_a_udf_or_a_lambda_is_refused_in_one_line(spark, op, fn, inner):
    r = Tracker(spark).annotate(local_frame(spark, *R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        op(r)
    msg = str(err.value)
    assert "\n" not in msg and fn in msg and inner in msg
    assert "withColumn" in msg  # the alternative: compute the argument as a column, then aggregate it
    op(local_frame(spark, *R[:2])).collect()  # plain Spark runs it: the refusal is lipspark's


def test_the_alternative_to_a_udf_in_an_aggregate_works(spark):
    my_udf = F.udf(_my_udf, T.StringType())
    t, ann = check(spark, lambda R: R.withColumn("len", F.length(my_udf("id"))).groupBy("k").agg(F.sum("len").alias("s")), R=R)
    _, p = polys(t, ann)
    assert str(p[("a", 2)][0]) == "δ(R:1 + R:2)"


def test_distinct_after_a_condition_join_with_a_shared_column_name(spark):
    t, ann = check(spark, lambda R, S: R.select("id", "k").join(S.select("k", "w"), R["k"] == S["k"]).distinct(), R=R, S=S)
    assert ann.columns == ["id", "k", "k", "w"]
    _, p = polys(t, ann)
    assert str(p[(1, "a", "a", "x")][0]) == "δ(R:1·S:10)"



# ---------------------------------------------------------------------- checked against the reference evaluator
V = ([(1, "a", 10, 1.0), (2, "a", 10, None), (3, "a", 30, 2.5), (4, "b", None, 3.0), (5, "b", 50, 0.5), (6, "c", None, None)],
     "id int, k string, v int, x double", ["id"])


def _reference(rel, keys, aggs):
    rows, schema, key = rel
    names = [c.split()[0] for c in schema.split(", ")]
    return ref.group_by(ref.base("V", [dict(zip(names, r)) for r in rows], key=key), list(keys), aggs)


def against_reference(spark, fn, keys, aggs, rel=V):
    """Run ``fn`` with and without provenance (same data), and check each output row's
    annotation and aggregate values against the reference's; (tracker, graph, rows by key)."""
    t, ann = check(spark, fn, V=rel)
    g = graph_of(t)
    want = {tuple(r.data[k] for k in keys): r for r in _reference(rel, keys, aggs).rows}
    rows = {tuple(r.row[k] for k in keys): r for r in ann.collect_annotated()}
    assert set(rows) == set(want)
    for key, row in rows.items():
        w = want[key]
        assert ref.poly_normal_form(normal_form(g.polynomial(row.annotation)) - w.ann) == 0, key
        for alias, _, _ in aggs:
            assert value_form(g.value(row.annotation, alias)) == reference_form(w.aggs[alias]), (key, alias)
            assert ref.norm_value(g.node(row.annotation.values[alias])["value"]) == ref.norm_value(row.row[alias])
            assert ref.norm_value(row.row[alias]) == ref.norm_value(w.data[alias]), (key, alias)
    return t, g, rows


def _what_if(g, tokens):
    """{v-node id: value after deleting the tokens} for the v-nodes whose value changed."""
    return {c.node: c.after for c in delete(g, [g.token_id(tok) for tok in tokens]).values}


def _when_over_15(d):
    return d["v"] if d["v"] is not None and d["v"] > 15 else 0


EXPRESSION_ARGUMENTS = [
    (lambda: F.sum(F.col("v") * 2).alias("s2"), ("s2", "sum", lambda d: None if d["v"] is None else 2 * d["v"])),
    (lambda: F.sum(F.when(F.col("v") > 15, F.col("v")).otherwise(0)).alias("sw"), ("sw", "sum", _when_over_15)),
    (lambda: F.count(F.when(F.col("v") > 15, 1)).alias("cw"), ("cw", "count", lambda d: 1 if d["v"] is not None and d["v"] > 15 else None)),
    (lambda: F.avg(F.coalesce("x", F.lit(0.0))).alias("ac"), ("ac", "avg", lambda d: 0.0 if d["x"] is None else d["x"])),
    (lambda: F.max(F.col("x") + F.col("v")).alias("mx"), ("mx", "max", lambda d: None if None in (d["x"], d["v"]) else d["x"] + d["v"])),
]


@pytest.mark.parametrize("keys", [("k",), ()])
def test_aggregates_of_expressions_pair_each_member_with_the_expressions_value(spark, keys):
    cols = [c() for c, _ in EXPRESSION_ARGUMENTS]
    _, g, rows = against_reference(spark, lambda V: V.groupBy(*keys).agg(*cols), keys, [a for _, a in EXPRESSION_ARGUMENTS])
    if keys:
        v1, v2, v3, v5 = (sympy.Symbol(f"V:{i}") for i in (1, 2, 3, 5))
        assert value_form(g.value(rows[("a",)].annotation, "s2")) == ("Sum", frozenset({(20, v1 + v2), (60, v3)}))
        assert value_form(g.value(rows[("b",)].annotation, "cw")) == ("Count", frozenset({(1, v5)}))  # when(v > 15, 1) is null otherwise


def test_a_what_if_never_keeps_a_stale_value_of_an_expression_over_v_nodes(spark):
    # s sums the counts (recomputed by a what-if), s2 an expression of them: its member values are
    # black boxes over the counts' v-nodes, so a what-if that changes a count says unknown
    t, ann = check(spark, lambda V: V.groupBy("k").agg(F.count("*").alias("n"))
                   .agg(F.sum("n").alias("s"), F.sum(F.col("n") * 2).alias("s2"), F.count(F.when(F.col("n") > 1, 1)).alias("c")), V=V)
    (row,) = ann.collect_annotated()
    assert tuple(row.row) == (6, 12, 2)
    g = t.graph()
    after = _what_if(g, ["V:1"])
    ids = row.annotation.values
    assert after[ids["s"]] == 5 and after[ids["s2"]] is UNKNOWN and after[ids["c"]] is UNKNOWN
    assert value_form(g.value(row.annotation, "s2"))[0] == "Sum"  # still Σ member ⊗ value for the semirings
    assert evaluate(g.value(row.annotation, "s2"), COUNTING, default=1) == 12


def test_count_distinct_is_a_count_of_one_delta_per_distinct_value(spark):
    aggs = [("d", "count_distinct", "v"), ("d2", "count_distinct", ("v", "x")), ("sd", "sum_distinct", "v"), ("ad", "avg_distinct", "v")]
    fn = lambda V: V.groupBy("k").agg(F.countDistinct("v").alias("d"), F.count_distinct("v", "x").alias("d2"),  # noqa: E731
                                      F.sum_distinct("v").alias("sd"), F.expr("avg(DISTINCT v)").alias("ad"))
    t, g, rows = against_reference(spark, fn, ("k",), aggs)
    a = rows[("a",)].annotation.values
    assert str(g.value(rows[("a",)].annotation, "d")) == "Count(δ(V:1 + V:2) ⊗ 1 + δ(V:3) ⊗ 1)"
    # deleting one of two members with a value changes nothing; deleting both lowers the count by one
    assert a["d"] not in _what_if(g, ["V:1"]) and a["sd"] not in _what_if(g, ["V:2"])
    both = _what_if(g, ["V:1", "V:2"])
    assert (both[a["d"]], both[a["sd"]], both[a["ad"]]) == (1, 30, 30.0)
    assert both[a["d2"]] == 1  # (10, 1.0) gone; (10, null) never counted
    assert evaluate(g.value(rows[("a",)].annotation, "d"), BOOLEAN, {"V:1": False}, default=True) == 2
    assert evaluate(g.value(rows[("a",)].annotation, "d"), BOOLEAN, {"V:1": False, "V:2": False}, default=True) == 1
    c = rows[("c",)].annotation.values  # only nulls: no distinct value, a group all the same
    assert g.node(c["d"])["value"] == 0 and str(g.value(rows[("c",)].annotation, "d")) == "Count(0)"


def test_count_distinct_without_keys_and_over_no_rows(spark):
    against_reference(spark, lambda V: V.agg(F.countDistinct("v").alias("d")), (), [("d", "count_distinct", "v")])
    t, ann = check(spark, lambda V: V.filter("id > 99").agg(F.countDistinct("v").alias("d"), F.sum_distinct("v").alias("s")), V=V)
    (row,) = ann.collect_annotated()
    assert tuple(row.row) == (0, None)
    assert evaluate(t.graph().value(row.annotation, "d"), COUNTING) == 0


BLACK_BOXES = [
    (lambda: F.stddev("v").alias("sd"), ("sd", "stddev", "v")),
    (lambda: F.stddev_samp("x").alias("ss"), ("ss", "stddev_samp", "x")),
    (lambda: F.stddev_pop("v").alias("sp"), ("sp", "stddev_pop", "v")),
    (lambda: F.variance("x").alias("va"), ("va", "variance", "x")),
    (lambda: F.var_samp("v").alias("vs"), ("vs", "var_samp", "v")),
    (lambda: F.var_pop("x").alias("vp"), ("vp", "var_pop", "x")),
    (lambda: F.collect_set("v").alias("cs"), ("cs", "collect_set", "v")),
]


@pytest.mark.parametrize("keys", [("k",), ()])
def test_black_box_aggregates_depend_on_every_member(spark, keys):
    cols = [c() for c, _ in BLACK_BOXES]
    t, g, rows = against_reference(spark, lambda V: V.groupBy(*keys).agg(*cols), keys, [a for _, a in BLACK_BOXES])
    row = rows[("a",) if keys else ()]
    assert str(g.value(row.annotation, "sd")) == ("stddev(V:1, V:2, V:3)" if keys else "stddev(V:1, V:2, V:3, V:4, V:5, V:6)")
    assert g.node(row.annotation.values["sd"])["label"] == "stddev"  # the user's name, not Spark's StddevSamp
    # no ⊗ form: a what-if that deletes a member cannot recompute the value, and says so
    after = _what_if(g, ["V:2"])  # a member whose v is 10, like V:1's: the value would not even change
    assert all(after[row.annotation.values[c]] is UNKNOWN for c in row.annotation.values)
    if keys:
        untouched = rows[("b",)].annotation.values
        assert not set(untouched.values()) & set(after)


def test_first_and_last_are_black_boxes_valued_as_the_output_says(spark):
    rel = ([(1, "a", 7, 1.0), (2, "a", 7, 4.0), (3, "b", None, 2.0), (4, "b", 8, 3.0), (5, "c", None, None)],
           "id int, k string, v int, x double", ["id"])
    fn = lambda V: V.groupBy("k").agg(F.first("v", ignorenulls=True).alias("f"), F.last("v", True).alias("l"))  # noqa: E731
    t, g, rows = against_reference(spark, fn, ("k",), [("f", "first_ignorenulls", "v"), ("l", "last_ignorenulls", "v")], rel=rel)
    assert str(g.value(rows[("b",)].annotation, "f")) == "first(V:3, V:4)"
    # without ignorenulls the order decides: the aggregation is computed once, for the output and the graph
    t, ann = check(spark, lambda V: V.filter("k = 'a'").groupBy("k").agg(F.first("v"), F.last("v"), F.first("x")), V=rel)
    g = t.graph()
    (row,) = ann.collect_annotated()
    ids = [row.annotation.values[c] for c in ("first(v)", "last(v)", "first(x)")]
    assert [g.node(i)["label"] for i in ids] == ["first", "last", "first"]
    assert [g.node(i)["value"] for i in ids] == list(row.row)[1:]


def test_a_black_box_aggregate_of_nan_is_nan(spark):
    from lipspark.graph.expand import json_value

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, 1.0), (2, float("nan"))], "id int, x double"), "R", key=["id"])
    (row,) = r.agg(F.stddev("x").alias("sd"), F.var_pop("x").alias("vp")).collect_annotated()
    assert math.isnan(row.row["sd"])
    (values,) = [tables["values"] for _, tables in t.builder.collect() if "values" in tables]
    (recorded,) = values.to_pylist()
    assert math.isnan(json_value(recorded["y0"])) and math.isnan(json_value(recorded["y1"]))  # JSON has no NaN: kept as text


def _round(x, digits):
    """Spark's round: half up, on the decimal text of the double."""
    return None if x is None else float(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


EXPRESSIONS = [
    (lambda: (F.sum("v") / F.count("*")).alias("r"), ("r", "expr", ref.Expression(lambda s, n: None if s is None else s / n, (("sum", "v"), ("count", None))))),
    (lambda: F.round(F.avg("x"), 1).alias("q"), ("q", "expr", ref.Expression(lambda a: _round(a, 1), (("avg", "x"),)))),
    (lambda: (F.max("v") - F.min("v") + F.countDistinct("v")).alias("z"), ("z", "expr", ref.Expression(
        lambda hi, lo, d: None if hi is None else hi - lo + d, (("max", "v"), ("min", "v"), ("count_distinct", "v"))))),
    (lambda: F.size(F.collect_set("v")).alias("n"), ("n", "expr", ref.Expression(len, (("collect_set", "v"),)))),
    (lambda: F.round(F.stddev("v"), 2).alias("t"), ("t", "expr", ref.Expression(lambda s: _round(s, 2), (("stddev", "v"),)))),
]


@pytest.mark.parametrize("keys", [("k",), ()])
def test_an_expression_over_aggregates_is_a_formula_or_a_black_box_of_its_aggregates(spark, keys):
    cols = [c() for c, _ in EXPRESSIONS]
    aggs = [a for _, a in EXPRESSIONS] + [("s", "sum", "v")]
    t, g, rows = against_reference(spark, lambda V: V.groupBy(*keys).agg(*cols, F.sum("v").alias("s")), keys, aggs)
    row = rows[("a",) if keys else ()]
    ids = row.annotation.values
    r = g.node(ids["r"])
    assert r["label"] == "r" and r["value"] == row.row["r"] and r["op"] is Op.MULTIPLY
    kids = sorted(g.node(i)["label"] for i in g.child_ids(ids["r"]))
    # sum(v) / count(*) is Sum × 1/Count, and the formula's root also reads the group's node
    # (a keyless group is 1: its row is there over any input)
    assert kids == (["1/", "Sum", "δ"] if keys else ["1", "1/", "Sum"])
    assert g.node(ids["q"])["op"] is Op.BLACK_BOX  # round(avg(x), 1) is no arithmetic
    after = _what_if(g, ["V:2"])
    # the formulas (r, z) are recomputed: what the query gives without V:2; round (q), size
    # (n) and round of stddev (t) are black boxes: unknown where what they read changed. V:2's
    # x is null: avg(x) keeps its value; a group's δ loses V:2, so what reads the δ is
    # unknown, but a keyless group is 1 (no member edges), so its q reads an unchanged Avg only
    rows_, schema, key = V
    rerun = {tuple(r.data[k] for k in keys): r.data for r in _reference(([x for x in rows_ if x[0] != 2], schema, key), keys, aggs).rows}
    again = rerun[("a",) if keys else ()]
    for c in ("r", "z"):
        assert ref.norm_value(after.get(ids[c], row.row[c])) == ref.norm_value(again[c]), c
    assert after[ids["r"]] != row.row["r"] and ids["z"] not in after  # z = max − min + count(DISTINCT v): unchanged
    assert {c: after.get(ids[c]) for c in ("q", "n", "t", "s")} == {"q": UNKNOWN if keys else None, "n": UNKNOWN, "t": UNKNOWN,
                                                                    "s": 40 if keys else 90}


def test_an_expression_over_aggregates_without_keys_over_no_rows(spark):
    t, ann = check(spark, lambda V: V.filter("id > 99").agg((F.count("*") + 1).alias("n"), F.upper(F.lit("x")).alias("u")), V=V)
    (row,) = ann.collect_annotated()
    assert tuple(row.row) == (1, "X")
    g = t.graph()
    assert str(g.value(row.annotation, "n")) == "n(1)" and "u" not in row.annotation.values


def test_an_expression_over_the_keys_alone_is_their_value(spark):
    t, ann = check(spark, lambda V: V.groupBy("k").agg(F.upper("k").alias("ku"), F.sum("v").alias("s")), V=V)
    assert all(set(r.annotation.values) == {"s"} for r in ann.collect_annotated())


def _aggregation_over_a_join(spark, t):
    left = spark.createDataFrame([(1, "a", 10.0), (2, "a", float("nan")), (3, "b", None), (4, None, 5.0), (5, "b", -0.0)],
                                 "i int, k string, x double")
    right = spark.createDataFrame([(1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7)], "i int, y int")
    if t is not None:  # else plain Spark
        left, right = t.annotate(left, "L", key=["i"]), t.annotate(right, "Q")
    joined = left.join(right, "i")
    return joined.groupBy("k", F.col("x") > 1).agg(
        F.sum("y").alias("s"), F.avg(F.col("x") * F.col("y")).alias("a"), F.countDistinct("y").alias("d"),
        F.max("x").alias("mx"), F.stddev("y").alias("sd"), (F.sum("y") / F.count("*")).alias("r"), F.count("*").alias("n"))


def test_members_collected_by_an_aggregation_over_a_join_equal_a_members_job(spark, monkeypatch):
    """Over a join, the aggregation collects its members itself (its input is computed once for
    the output and the graph); the graph, the output and every what-if are those of the members
    table read by a job of its own."""
    import lipspark.capture.rules.aggregate as aggregate

    graphs = []
    decide = aggregate._collect_members
    for collected in (True, False):
        t = Tracker(spark)
        calls: list[bool] = []
        monkeypatch.setattr(aggregate, "_collect_members", lambda *a: calls.append(decide(*a)) or (collected and calls[-1]))
        out = _aggregation_over_a_join(spark, t)
        assert calls == [True]  # a join feeds it: collected, unless forced off
        rows = sorted(((tuple(r.row), r.annotation) for r in out.collect_annotated()), key=repr)
        g = t.graph()
        graphs.append(([row for row, _ in rows], sorted(g.ids.tolist()), sorted(map(tuple, g.edge_frame()[["src", "dst"]].values.tolist())),
                       [str(g.polynomial(a.factors[0])) for _, a in rows],
                       [sorted((c, str(g.value(a, c))) for c in a.values) for _, a in rows],
                       [_what_if(g, ["L:2"]).get(v) for _, a in rows for v in a.values.values()]))
    assert repr(graphs[0]) == repr(graphs[1])  # (NaN is not equal to itself)
    plain = _aggregation_over_a_join(spark, None)
    assert sorted(map(repr, graphs[0][0])) == sorted(repr(tuple(r)) for r in plain.collect())
