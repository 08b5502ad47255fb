"""Window functions: the data plain Spark gives (fidelity), each row's own annotation, aggregate
windows as ⊗ aggregates over the row's frame (checked by hand and against a re-run without the
deleted tuples: the deletion oracle), ranking and offset functions as black boxes a what-if
shows unknown, a filter on a window value (the latest row per key) that a what-if says is not
exact, and refusals that name the operation."""
from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import AggValue, BlackBox, COUNTING, evaluate, tokens
from tests.util import assert_fidelity

# ties on v within a key, a null v, a null key: frames with peers, null ordering, a null partition
ROWS = [(1, "a", 10), (2, "a", 20), (3, "a", 20), (4, "b", None), (5, "b", 5), (6, None, 7), (7, "a", 40)]
SCHEMA = "id int, k string, v int"


# windows need a session to be built: functions, called in the tests
def by_key():
    return Window.partitionBy("k")


def ordered():
    return Window.partitionBy("k").orderBy("v")


def by_id():
    return Window.partitionBy("k").orderBy("id")


#: aggregate windows whose frame a deletion only shrinks: ⊗ aggregates recomputed by a what-if
AGGREGATE_WINDOWS = {
    "sum_by_key": lambda: F.sum("v").over(by_key()),
    "count_all": lambda: F.count("*").over(Window.partitionBy()),
    "avg_by_key": lambda: F.avg("v").over(by_key()),
    "min_of_expression": lambda: F.min(F.col("v") * 2 + F.col("id")).over(by_key()),
    "running_count_range": lambda: F.count("v").over(ordered()),
    "running_max_range": lambda: F.max("v").over(ordered()),
    "running_sum_rows": lambda: F.sum("v").over(by_id().rowsBetween(Window.unboundedPreceding, Window.currentRow)),
    "sum_to_the_end_rows": lambda: F.sum("v").over(by_id().rowsBetween(Window.currentRow, Window.unboundedFollowing)),
    "sum_in_a_value_range": lambda: F.sum("id").over(ordered().rangeBetween(-10, 15)),
    "whole_frame_ordered": lambda: F.max("id").over(ordered().rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)),
}
#: windows without a ⊗ form: a black box per row over the partition's δ
BLACK_BOX_WINDOWS = {
    "row_number": (lambda: F.row_number().over(by_id()), "row_number"),
    "rank": (lambda: F.rank().over(ordered()), "rank"),
    "dense_rank": (lambda: F.dense_rank().over(ordered()), "dense_rank"),
    "percent_rank": (lambda: F.percent_rank().over(ordered()), "percent_rank"),
    "cume_dist": (lambda: F.cume_dist().over(ordered()), "cume_dist"),
    "ntile": (lambda: F.ntile(2).over(by_id()), "ntile"),
    "lag": (lambda: F.lag("v", 1, -1).over(by_id()), "lag"),
    "lead": (lambda: F.lead("v").over(by_id()), "lead"),
    "first": (lambda: F.first("v").over(by_id()), "first"),
    "last_ignorenulls": (lambda: F.last("v", True).over(by_key()), "last"),
    "stddev": (lambda: F.stddev("v").over(by_key()), "stddev"),
    "sliding_sum": (lambda: F.sum("v").over(by_id().rowsBetween(-1, 0)), "sum"),
    "collect_list": (lambda: F.collect_list("v").over(by_id()), "collect_list"),
}


def _frames(spark):
    t = Tracker(spark)
    plain = spark.createDataFrame(ROWS, SCHEMA)
    return t, plain, t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"])


def _normalized(v):
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, float):
        return round(v, 9)
    return v


def _by_id(rows):
    return {r.row.id: r for r in rows}


@pytest.mark.parametrize("name", sorted(AGGREGATE_WINDOWS))
def test_an_aggregate_window_is_a_tensor_aggregate_over_the_frame_and_a_what_if_equals_a_rerun(spark, name):
    window = AGGREGATE_WINDOWS[name]()
    t, plain, r = _frames(spark)
    out = r.withColumn("w", window)
    assert_fidelity(plain.withColumn("w", window), out)
    rows = out.collect_annotated()
    g = t.graph()
    for row in rows:
        assert [str(x) for x in row.annotation.factors] == [str(g.token_id(f"R:{row.row.id}"))]  # its own annotation
        value = g.value(row.annotation, "w")
        assert isinstance(value, AggValue)
        assert _normalized(evaluate(value, COUNTING, default=1)) == _normalized(row.row.w)  # Σ 1·v over the frame = Spark's
    # the deletion oracle: every single tuple, two peers of a tie, a whole partition, rows of two partitions
    for deleted in [*([x[0]] for x in ROWS), [2, 3], [4, 5], [1, 6]]:
        what_if = delete(g, [g.token_id(f"R:{i}") for i in deleted])
        assert what_if.exact
        changed = {c.node: c.after for c in what_if.values}
        predicted = Counter()
        for row in rows:
            if row.row.id in deleted:
                continue
            node = row.annotation.values["w"]
            predicted[(row.row.id, _normalized(changed.get(node, g.node(node)["value"])))] += 1
        kept = spark.createDataFrame([x for x in ROWS if x[0] not in deleted], SCHEMA)
        rerun = Counter((x.id, _normalized(x.w)) for x in kept.withColumn("w", window).collect())
        assert predicted == rerun, f"{name}: deleting {deleted}"


def test_aggregate_windows_by_hand(spark):
    t, _, r = _frames(spark)
    out = r.select("id", F.sum("v").over(by_key()).alias("s"), F.count("*").over(ordered()).alias("c"),
                   F.sum("v").over(by_id().rowsBetween(Window.unboundedPreceding, 0)).alias("run"))
    g = t.graph()
    got = {row.row.id: {c: str(g.value(row.annotation, c)) for c in ("s", "c", "run")} for row in out.collect_annotated()}
    # one aggregate per partition, shared by its rows
    assert got[1]["s"] == got[2]["s"] == got[7]["s"] == "Sum(R:1 ⊗ 10 + R:2 ⊗ 20 + R:3 ⊗ 20 + R:7 ⊗ 40)"
    assert got[6]["s"] == "Sum(R:6 ⊗ 7)"  # the null key is a partition
    # RANGE frame (orderBy alone): the row's peers are in its frame; a null v comes first
    assert got[2]["c"] == got[3]["c"] == "Count(R:1 ⊗ 1 + R:2 ⊗ 1 + R:3 ⊗ 1)"
    assert got[4]["c"] == "Count(R:4 ⊗ 1)"
    # ROWS frame by id: the rows up to this one; a null v has no ⊗
    assert got[3]["run"].replace(".0", "") == "Sum(R:1 ⊗ 10 + R:2 ⊗ 20 + R:3 ⊗ 20)"
    assert got[5]["run"].replace(".0", "") == "Sum(R:5 ⊗ 5)"


@pytest.mark.parametrize("name", sorted(BLACK_BOX_WINDOWS))
def test_a_ranking_or_offset_window_is_a_black_box_a_what_if_shows_unknown(spark, name):
    make, label = BLACK_BOX_WINDOWS[name]
    window = make()
    t, plain, r = _frames(spark)
    out = r.withColumn("w", window)
    assert_fidelity(plain.withColumn("w", window), out)
    rows = out.collect_annotated()
    g = t.graph()
    for row in rows:
        value = g.value(row.annotation, "w")
        assert isinstance(value, BlackBox) and value.name == label
        partition = {f"R:{x[0]}" for x in ROWS if x[1] == row.row.k}
        assert tokens(value) == partition  # an edge from the δ of the row's partition
        recorded = g.node(row.annotation.values["w"])["value"]
        assert (sorted(recorded) if isinstance(row.row.w, list) else _normalized(recorded)) == \
            (sorted(row.row.w) if isinstance(row.row.w, list) else _normalized(row.row.w))
    what_if = delete(g, [g.token_id("R:2")])  # a member of partition "a"
    changed = {c.node: c.after for c in what_if.values}
    for row in rows:
        node = row.annotation.values["w"]
        if row.row.id == 2:
            continue
        if row.row.k == "a":
            assert changed.get(node) is UNKNOWN, (name, row.row)  # never a stale value
        else:
            assert node not in changed
    assert not what_if.exact


def test_the_latest_row_per_key_is_a_filter_on_a_black_box_the_what_if_says_not_exact(spark):
    t, plain, r = _frames(spark)

    def latest(df):
        return df.withColumn("rn", F.row_number().over(Window.partitionBy("k").orderBy(F.col("id").desc()))).filter("rn = 1").drop("rn")

    out = latest(r)
    assert_fidelity(latest(plain), out)
    g = t.graph()
    assert sorted(x.row.id for x in out.collect_annotated()) == [5, 6, 7]
    what_if = delete(g, [g.token_id("R:7")])  # a re-run keeps R:3 for key a: the graph cannot say so
    assert not what_if.exact
    assert {c.label for c in what_if.conditions} == {"filter (rn = 1)"}  # each row's test of its rank, unknown
    untouched = delete(g, [g.token_id("R:6")])  # partition of its own: the row goes, no other value read changed
    assert untouched.exact and not untouched.conditions


def test_a_window_over_aggregated_values(spark):
    """A window over a group-by's results: the ⊗ pairs each member with the aggregate's own
    v-node; ordering by such a value records a condition (which rows share a frame depends on it)."""
    t, plain, r = _frames(spark)

    def q(df):
        counted = df.groupBy("k").agg(F.sum("v").alias("tot"))
        return counted.withColumn("share", F.sum("tot").over(Window.partitionBy())).withColumn(
            "rk", F.rank().over(Window.orderBy(F.col("tot").desc())))

    out = q(r)
    assert_fidelity(q(plain), out)
    g = t.graph()
    rows = {x.row.k: x for x in out.collect_annotated()}
    share = g.value(rows["b"].annotation, "share")  # Σ δ(group) ⊗ its Sum's v-node, over the 3 groups
    assert sorted(str(p) for p, _ in share.terms) == ["δ(R:1 + R:2 + R:3 + R:7)", "δ(R:4 + R:5)", "δ(R:6)"]
    what_if = delete(g, [g.token_id("R:5")])
    changed = {c.node: c.after for c in what_if.values}
    assert changed[rows["a"].annotation.values["share"]] == 90 + 7  # b's total became null: the sum skips it
    assert changed[rows["a"].annotation.values["rk"]] is UNKNOWN
    assert any(c.label == "window over tot" for c in what_if.conditions)


def test_several_windows_and_plain_columns_in_one_select(spark):
    t, plain, r = _frames(spark)

    def q(df):
        return df.select((F.col("v") + 1).alias("v1"), F.sum("v").over(by_key()).alias("s"), "k",
                         F.lag("id").over(by_id()).alias("prev"), F.max("v").over(ordered()).alias("m"))

    out = q(r)
    assert_fidelity(q(plain), out)
    assert out.columns == ["v1", "s", "k", "prev", "m"]
    assert sorted(out.layout.values) == ["m", "prev", "s"]
    q(r).selectExpr("k", "row_number() OVER (PARTITION BY k ORDER BY v1) AS rn").collect_annotated()  # SQL text too


@pytest.mark.parametrize("op, name", [
    (lambda R: R.withColumn("x", F.col("v") / F.sum("v").over(by_key())), "an expression over a window function's value"),
    (lambda R: R.withColumn("x", F.percentile_approx("v", 0.5).over(by_key())), "window function percentile_approx"),
    (lambda R: R.withColumn("x", F.sum("v").over(Window.partitionBy(F.upper("k")).orderBy("v"))),
     "ordered or partitioned by an expression"),
    (lambda R: R.withColumn("x", F.sum(F.udf(lambda v: v, "int")("v")).over(by_key())), "whose argument calls the Python UDF"),
])
def test_an_unsupported_window_names_itself_and_the_alternative(spark, op, name):
    _, _, r = _frames(spark)
    with pytest.raises(UnsupportedOperation) as err:
        op(r)
    message = str(err.value)
    assert name in message and "Instead:" in message
    assert "\n" not in message


def test_a_rows_frame_over_ties_is_the_frame_spark_chose(spark):
    """Rows 2 and 3 tie on v: which comes first is Spark's choice, computed once, and each row's
    ⊗ members are the rows Spark summed for it (its collected frame is evaluated beside it)."""
    t, plain, r = _frames(spark)
    window = F.sum("id").over(ordered().rowsBetween(Window.unboundedPreceding, Window.currentRow))
    out = r.withColumn("w", window)
    assert_fidelity(plain.withColumn("w", window), out)
    g = t.graph()
    rows = out.collect_annotated()
    for row in rows:
        assert evaluate(g.value(row.annotation, "w"), COUNTING, default=1) == row.row.w
    tied = sorted((row.row.w, str(g.value(row.annotation, "w"))) for row in rows if row.row.id in (2, 3))
    assert [w for w, _ in tied] == [3, 6] or [w for w, _ in tied] == [4, 6]  # 1+2 then 1+2+3, or 1+3 then 1+3+2
    assert tied[1][1] == "Sum(R:1 ⊗ 1 + R:2 ⊗ 2 + R:3 ⊗ 3)"


def test_a_window_inside_agg_is_refused_with_the_alternative(spark):
    _, _, r = _frames(spark)
    with pytest.raises(UnsupportedOperation) as err:
        r.groupBy("k").agg(F.sum(F.sum("v")).over(Window.partitionBy()).alias("share"))
    assert "a window function inside agg(...)" in str(err.value) and ".withColumn(" in str(err.value)
