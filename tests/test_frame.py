"""One test (at least) per rewrite rule: data as plain PySpark, and the nodes the rule adds."""
from __future__ import annotations

import warnings

import pytest
from pyspark.sql import functions as F

from lipspark import UnsupportedOperation
from lipspark.errors import AnnotationError
from lipspark.semiring import Token, delta, equivalent, plus
from tests.util import assert_fidelity, graph_of, run_both

R = ([(1, "a", 10), (2, "a", 20), (3, "b", 30), (4, "b", None), (5, "c", 50)], "id int, k string, v int", ["id"])
S = ([(10, "a", "x"), (11, "b", "y"), (12, "b", "z"), (13, "d", "w")], "sid int, k string, w string", ["sid"])
D = ([("a", 1), ("a", 1), ("b", 2)], "k string, n int", None)


def polys(t, frame):
    g = graph_of(t)
    out = {}
    for r in frame.collect_annotated():
        out.setdefault(tuple(r.row), []).append(g.polynomial(r.annotation))
    return g, out


def check(spark, fn, **rels):
    plain, ann, t = run_both(spark, fn, rels)
    assert_fidelity(plain, ann)
    return t, ann


def test_select_and_with_column_keep_annotations(spark):
    t, ann = check(spark, lambda R: R.select("k", (F.col("v") * 2).alias("v2")).withColumn("one", F.lit(1)), R=R)
    g, p = polys(t, ann)
    assert {k: [str(x) for x in v] for k, v in p.items()} == {
        ("a", 20, 1): ["R:1"], ("a", 40, 1): ["R:2"], ("b", 60, 1): ["R:3"], ("b", None, 1): ["R:4"], ("c", 100, 1): ["R:5"],
    }
    assert g.num_edges == 0  # a 1:1 projection adds no node


def test_projection_duplicates_stay_separate_rows(spark):
    t, ann = check(spark, lambda R: R.select("k"), R=R)
    g, p = polys(t, ann)
    assert sorted(str(x) for x in p[("a",)]) == ["R:1", "R:2"]


def test_filter_where(spark):
    t, ann = check(spark, lambda R: R.filter(F.col("v") > 15).where("k != 'c'"), R=R)
    _, p = polys(t, ann)
    assert {k[0]: str(v[0]) for k, v in p.items()} == {2: "R:2", 3: "R:3"}


def test_join_is_product(spark):
    t, ann = check(spark, lambda R, S: R.join(S, "k"), R=R, S=S)
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:1·S:10", "R:2·S:10", "R:3·S:11", "R:3·S:12", "R:4·S:11", "R:4·S:12"]


def test_join_on_condition_and_cross_join(spark):
    t, ann = check(spark, lambda R, S: R.join(S, R["k"] == S["k"]).select(R["id"], S["sid"]), R=R, S=S)
    _, p = polys(t, ann)
    assert str(p[(1, 10)][0]) == "R:1·S:10"
    t, ann = check(spark, lambda R, S: R.crossJoin(S.select("sid")), R=R, S=S)
    assert len(ann.collect()) == 20


def test_union_rows_keep_annotations(spark):
    t, ann = check(spark, lambda R, S: R.select("k").union(S.select("k")), R=R, S=S)
    _, p = polys(t, ann)
    assert sorted(str(x) for x in p[("a",)]) == ["R:1", "R:2", "S:10"]
    t, ann = check(spark, lambda R, S: R.select("k").unionByName(S.select("k")), R=R, S=S)


def test_union_pads_factor_lists(spark):
    t, ann = check(spark, lambda R, S: R.join(S, "k").select("k").union(R.select("k")).distinct(), R=R, S=S)
    _, p = polys(t, ann)
    r1, r2, s10 = Token("R:1"), Token("R:2"), Token("S:10")
    assert equivalent(p[("a",)][0], delta(plus(r1 * s10, r2 * s10, r1, r2)))


def test_distinct_is_delta_of_sum(spark):
    t, ann = check(spark, lambda D: D.distinct(), D=D)
    g, p = polys(t, ann)
    assert str(p[("a", 1)][0]) == "δ(D:a,1 + D:a,1#2)"
    assert len(g.find(label="δ")) == 2
    t, ann = check(spark, lambda D: D.dropDuplicates(), D=D)


def test_group_by_aggregates(spark):
    fn = lambda R: R.groupBy("k").agg(  # noqa: E731
        F.count(F.lit(1)).alias("n"), F.count("v").alias("nv"), F.sum("v").alias("s"),
        F.min("v").alias("lo"), F.max("v").alias("hi"), F.avg("v").alias("mean"),
    )
    t, ann = check(spark, fn, R=R)
    g = t.graph()
    rows = {r.row["k"]: r for r in ann.collect_annotated()}
    b = rows["b"]
    assert str(g.polynomial(b.annotation)) == "δ(R:3 + R:4)"
    assert str(g.value(b.annotation, "n")) == "Count(R:3 ⊗ 1 + R:4 ⊗ 1)"
    assert str(g.value(b.annotation, "nv")) == "Count(R:3 ⊗ 1)"  # null v does not count
    assert str(g.value(b.annotation, "s")) == "Sum(R:3 ⊗ 30)"
    for col, label, value in [("n", "Count", 2), ("s", "Sum", 30), ("lo", "Min", 30), ("hi", "Max", 30), ("mean", "Avg", 30.0)]:
        node = g.node(b.annotation.values[col])
        assert (node["label"], node["value"]) == (label, value)


def test_group_by_expression_keys_and_shortcuts(spark):
    check(spark, lambda R: R.groupBy((F.col("id") % 2).alias("parity")).agg(F.sum("v").alias("s")), R=R)
    check(spark, lambda R: R.groupBy("k").count(), R=R)
    check(spark, lambda R: R.groupBy("k").sum("v"), R=R)
    check(spark, lambda R: R.groupBy("k").agg({"v": "max"}), R=R)
    t, ann = check(spark, lambda R: R.agg(F.sum("v").alias("total")), R=R)
    g = t.graph()
    (row,) = ann.collect_annotated()
    assert str(g.polynomial(row.annotation)) == "1"  # a keyless aggregate's row is there over any input, none included
    assert str(g.value(row.annotation, "total")) == "Sum(R:1 ⊗ 10 + R:2 ⊗ 20 + R:3 ⊗ 30 + R:5 ⊗ 50)"  # its members


def test_aggregate_over_a_join_members_are_products(spark):
    t, ann = check(spark, lambda R, S: R.join(S, "k").groupBy("k").agg(F.sum("v").alias("s")), R=R, S=S)
    g = t.graph()
    rows = {r.row["k"]: r for r in ann.collect_annotated()}
    assert str(g.polynomial(rows["a"].annotation)) == "δ(R:1·S:10 + R:2·S:10)"
    assert len(g.find(label="·")) == 6


def test_collect_list_members_keep_provenance_through_explode(spark):
    fn = lambda R: R.groupBy("k").agg(F.collect_list("id").alias("ids")).select("k", F.explode("ids").alias("id"))  # noqa: E731
    t, ann = check(spark, fn, R=R)
    g, p = polys(t, ann)
    assert str(p[("a", 1)][0]) == "δ(R:1 + R:2)·R:1"


def test_explode_of_plain_array_inherits_parent(spark):
    rel = ([(1, [1, 2]), (2, [3])], "id int, xs array<int>", ["id"])
    t, ann = check(spark, lambda A: A.select("id", F.explode("xs").alias("x")), A=rel)
    _, p = polys(t, ann)
    assert str(p[(1, 2)][0]) == "A:1"


def test_order_by_and_limit_are_post_processing(spark):
    t, ann = check(spark, lambda R: R.orderBy(F.col("id").desc()).limit(2), R=R)
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:4", "R:5"]


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda R, S: R.exceptAll(R), "DataFrame.exceptAll"),
        (lambda R, S: R.rollup("k").agg(F.grouping_id()), "grouping() or grouping_id()"),
        (lambda R, S: R.groupBy("k").agg(F.percentile_approx("v", 0.5)), "aggregate percentile_approx"),
        (lambda R, S: R.groupBy("k").agg((F.median("v") + 1).alias("x")), "aggregate median"),
        (lambda R, S: R.select(F.sum("v")), "select with aggregate functions"),
        (lambda R, S: R.groupingSets([[F.col("k")]], "k").count(), "groupingSets with the set member"),
        (lambda R, S: R.join(S, how="left_anti"), "join(how='left_anti') without a condition"),
        (lambda R, S: R.join(S, how="left"), "join(how='left') without a condition"),
    ],
)
def test_unsupported_operations_fail_loudly(spark, op, name):
    from lipspark import Tracker

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    s = t.annotate(spark.createDataFrame(*S[:2]), "S", key=["sid"])
    with pytest.raises(UnsupportedOperation) as err:
        op(r, s)
    assert name in str(err.value)
    assert "Instead:" in str(err.value)


def test_mixing_plain_and_annotated_is_an_error(spark):
    from lipspark import Tracker

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    with pytest.raises(AnnotationError, match="annotate it first"):
        r.join(spark.createDataFrame(*S[:2]), "k")
    with pytest.raises(AnnotationError, match="reserved"):
        r.withColumn("__lp_x", F.lit(1))


def test_bags_with_member_provenance_are_never_silently_dropped(spark):
    from lipspark import Tracker

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    bags = r.groupBy("k").agg(F.collect_list("id").alias("ids"))
    with pytest.raises(UnsupportedOperation, match="distinct over nested bag"):
        bags.distinct()
    with pytest.raises(UnsupportedOperation, match="one side only"):
        bags.union(r.select("k", F.array(F.col("id")).alias("ids")))
    # both sides with member provenance: carried through, explode still reaches the members
    both = bags.union(bags).select("k", F.explode("ids").alias("id"))
    g = t.graph()
    polys = sorted(str(g.polynomial(x.annotation)) for x in both.collect_annotated() if x.row["id"] == 3)
    assert polys == ["δ(R:3 + R:4)·R:3", "δ(R:3 + R:4)·R:3"]


# ---------------------------------------------------------------------- actions and other DataFrame methods
def _fresh(spark):
    from lipspark import Tracker

    t = Tracker(spark)
    return t, t.annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])


@pytest.mark.parametrize("action, expect", [
    ("collect", lambda p: p.collect()),
    ("count", lambda p: p.count()),
    ("first", lambda p: p.first()),
    ("head", lambda p: p.head()),
    ("take", lambda p: p.take(2)),
    ("tail", lambda p: p.tail(1)),
    ("toLocalIterator", lambda p: list(p.toLocalIterator())),
    ("toPandas", lambda p: p.toPandas().to_json()),
    ("isEmpty", lambda p: p.isEmpty()),
])
def test_actions_return_the_visible_data_and_warn_once(spark, action, expect):
    from lipspark.errors import ProvenanceWarning

    t, r = _fresh(spark)
    sorted_r = r.orderBy("id")
    call = {"take": lambda f: f.take(2), "tail": lambda f: f.tail(1), "toLocalIterator": lambda f: list(f.toLocalIterator()),
            "toPandas": lambda f: f.toPandas().to_json()}.get(action, lambda f: getattr(f, action)())
    with pytest.warns(ProvenanceWarning) as caught:
        got = call(sorted_r)
    assert got == expect(spark.createDataFrame(*R[:2]).orderBy("id"))  # no __lp_ column leaks
    (w,) = caught
    msg = str(w.message)
    assert f"{action}()" in msg and "literal" in msg and "crossJoin" in msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(sorted_r)  # once per tracker and action
        r.show(1)  # show returns nothing: silent
        r.collect_annotated()  # lipspark's own way to look at provenance: silent


def test_the_alternative_to_a_driver_literal_keeps_the_dependence_in_spark(spark):
    t, ann = check(spark, lambda R: R.crossJoin(R.agg(F.max("v").alias("mx"))).filter(F.col("v") == F.col("mx")).drop("mx"), R=R)
    g, p = polys(t, ann)
    assert [str(v[0]) for v in p.values()] == ["R:5"]  # the one-row max is there over any input (1)
    # the filter read the max: a CONDITION over its value, so a what-if that changes it is not exact
    from lipspark.query.deletion import delete

    assert not delete(g, [g.token_id("R:5")]).exact and delete(g, [g.token_id("R:4")]).exact


@pytest.mark.parametrize("op", [
    lambda R: R.transform(lambda df: df.filter(F.col("v") > 15)),
    lambda R: R.transform(lambda df, n: df.limit(n), 10),
    lambda R: R.fillna(0),
    lambda R: R.fillna({"v": -1}),
    lambda R: R.na.fill(0, subset=["v"]),
    lambda R: R.dropna(),
    lambda R: R.na.drop(how="all", subset=["v"]),
    lambda R: R.replace("a", "z"),
    lambda R: R.na.replace(["a", "b"], ["x", "y"], subset=["k"]),
    lambda R: R.sortWithinPartitions("id"),
    lambda R: R.localCheckpoint(),
    lambda R: R.cache().persist().unpersist(),
    lambda R: R.repartition(2).coalesce(1),
])
def test_per_row_methods_keep_annotations(spark, op):
    t, ann = check(spark, op, R=R)
    _, p = polys(t, ann)
    assert all(str(v[0]) in {f"R:{i}" for i in range(1, 6)} for v in p.values())


def test_fillna_never_touches_the_hidden_columns(spark):
    t, r = _fresh(spark)
    agg = r.groupBy("k").agg(F.sum("v").alias("s")).union(r.select("k", F.lit(None).cast("bigint").alias("s")))
    filled = agg.fillna(0).replace(0, 7).dropna()
    assert filled.count() == agg.count() == 8
    g = t.graph()
    rows = filled.collect_annotated()
    assert sum("s" in x.annotation.values for x in rows) == 0  # the filled column's values were recomputed: no v-node
    assert all(g.polynomial(x.annotation) is not None for x in rows)


@pytest.mark.parametrize("name, says", [
    ("write", "the workflow writes"),
    ("writeTo", "the workflow writes"),
    ("createGlobalTempView", "createOrReplaceTempView"),
    ("registerTempTable", "createOrReplaceTempView"),
    ("exceptAll", "subtract(other)"),
    ("rdd", "black_box"),
])
def test_refusals_name_the_operation_and_a_fitting_alternative(spark, name, says):
    _, r = _fresh(spark)
    with pytest.raises(UnsupportedOperation) as err:
        getattr(r, name)
    msg = str(err.value)
    assert name in msg and says in msg and "\n" not in msg


def test_the_helpers_local_frames_hold_the_rows_createdataframe_makes(spark):
    """run_both builds its inputs with tests.util.local_frame: same schema, rows and row order
    (row-position tokens number rows in that order) as spark.createDataFrame, for the types the
    tests use and a few more; nulls, NaN, -0.0 and an empty relation included."""
    import datetime as dt
    from decimal import Decimal

    from tests.util import local_frame

    cases = [
        ([(1, "a", 10), (2, None, None), (3, "a", 10)], "id int, k string, x int"),
        ([(0, [0.0, -0.0, float("nan")]), (1, None), (2, [])], "id int, fs array<double>"),
        ([(1, -0.0), (2, float("nan")), (3, None), (4, 1e300)], "id int, x double"),
        ([(2**40, True, Decimal("1.25"), b"\x00\xff")], "k bigint, b boolean, d decimal(10,2), y binary"),
        ([(1, dt.date(2024, 2, 29), dt.datetime(2024, 1, 1, 12, 30, 5, 123456))], "id int, d date, ts timestamp"),
        ([(1, (2, "x"), {"a": 1, "b": None}), (2, None, {})], "id int, s struct<n: int, t: string>, m map<string, int>"),
        ([(1, [(1, "a"), None])], "id int, xs array<struct<n: int, t: string>>"),
        ([], "sid int, k string, y int"),
    ]
    for rows, schema in cases:
        want = spark.createDataFrame(rows, schema)
        got = local_frame(spark, rows, schema)
        assert got.schema == want.schema, schema
        assert repr(got.collect()) == repr(want.collect()), schema  # repr: NaN == NaN, -0.0 is not 0.0
