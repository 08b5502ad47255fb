"""dropDuplicates(subset): the rows plain Spark keeps (fidelity, where the pick is forced and where
it is not), each key's row annotated δ(Σ its rows) and every other column a black-box ``first``
of those rows (checked by hand and against the reference evaluator), and the deletion oracle: a
key's row survives a deletion iff a re-run keeps the key, and its other columns are unknown
when one of its rows went (never a stale value), unchanged otherwise."""
from __future__ import annotations

import math
from collections import Counter

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import BlackBox, normal_form, tokens
from tests import reference as ref
from tests.test_frame import check
from tests.util import assert_fidelity, graph_of, local_frame, reference_form, value_form

NAN = float("nan")
# every row of a key agrees on the other columns but id: the pick of p, x is forced; nulls, NaN,
# -0.0 and duplicates among the keys; id differs (its pick is not forced: only its provenance is checked)
FORCED = ([(1, "a", "x", 1.5), (2, "a", "x", 1.5), (3, None, "y", NAN), (4, None, "y", NAN), (5, "b", None, -0.0),
           (6, "b", None, -0.0), (7, "c", "z", None), (8, "a", "x", 1.5)], "id int, k string, p string, x double", ["id"])
NAMES = ["id", "k", "p", "x"]


def _plan(subset):
    return lambda R: R.dropDuplicates(subset).drop("id")  # id is Spark's arbitrary pick: not compared


def _reference(rows, subset):
    rel = ref.base("R", [dict(zip(NAMES, r)) for r in rows], key=["id"])
    return ref.drop_duplicates(rel, subset)


@pytest.mark.parametrize("subset", [["k"], ["k", "p"], ["p", "K"], ["x"]], ids=["k", "k-p", "case-insensitive", "nan-key"])
def test_drop_duplicates_keeps_one_row_per_key_annotated_delta_and_first(spark, subset):
    t, ann = check(spark, _plan(subset), R=FORCED)
    g = graph_of(t)
    keys = [{"K": "k"}.get(s, s) for s in subset]
    want = {tuple(ref.norm_value(r.data[c]) for c in NAMES[1:]): r for r in _reference(FORCED[0], keys).rows}
    got = ann.collect_annotated()
    assert len(got) == len(want)
    for row in got:
        w = want[tuple(ref.norm_value(v) for v in row.row)]
        assert ref.poly_normal_form(normal_form(g.polynomial(row.annotation)) - w.ann) == 0
        assert set(row.annotation.values) == {"k", "p", "x"} - set(keys)
        for c in row.annotation.values:  # every column but the keys is a black box `first` of the key's rows
            assert value_form(g.value(row.annotation, c)) == reference_form(w.aggs[c]), c
            if ref.norm_value(row.row[c]) != "NaN":  # a node's NaN value reads None (graph/attrs.py's _clean)
                assert ref.norm_value(g.node(row.annotation.values[c])["value"]) == ref.norm_value(row.row[c])


def test_drop_duplicates_by_hand(spark):
    t, ann = check(spark, lambda R: R.dropDuplicates(["k"]), R=FORCED)
    g = graph_of(t)
    rows = {r.row.k: r for r in ann.collect_annotated()}
    a = rows["a"].annotation
    assert str(g.polynomial(a)) == "δ(R:1 + R:2 + R:8)"
    assert str(g.value(a, "x")) == "first(R:1, R:2, R:8)"
    assert g.node(a.values["x"])["label"] == "first"
    assert rows["a"].row.id in (1, 2, 8) and g.node(a.values["id"])["value"] == rows["a"].row.id  # the graph shows the kept row
    assert str(g.polynomial(rows[None].annotation)) == "δ(R:3 + R:4)"  # the null key is a key
    assert math.isnan(rows[None].row.x)


def test_an_empty_subset_keeps_one_row_and_none_of_an_empty_input(spark):
    t, ann = check(spark, lambda R: R.dropDuplicates([]).drop("id"), R=FORCED)  # x of the kept row: not forced
    (row,) = ann.collect_annotated()
    assert str(graph_of(t).polynomial(row.annotation)) == "δ(R:1 + R:2 + R:3 + R:4 + R:5 + R:6 + R:7 + R:8)"
    t, ann = check(spark, lambda R: R.filter("id > 99").dropDuplicates([]), R=FORCED)
    assert ann.collect_annotated() == []  # Spark keeps no row of no rows (unlike a keyless agg)
    t, ann = check(spark, lambda R: R.filter("id > 99").dropDuplicates(["k"]), R=FORCED)
    assert ann.collect_annotated() == []


def test_the_whole_tuple_as_subset_is_distinct(spark):
    t, ann = check(spark, lambda R: R.select("k", "p").dropDuplicates(["p", "k"]), R=FORCED)
    assert all(not r.annotation.values for r in ann.collect_annotated())  # no column left to pick


def test_ties_keep_the_row_plain_spark_keeps_run_twice(spark):
    """Rows of a key differ on v: which one is kept is Spark's choice; lipspark runs Spark's own
    dropDuplicates over the same rows, so it keeps the same one, and the graph the value shown."""
    rows = [(i, "k" + str(i % 3), i * 10, f"s{i}") for i in range(1, 13)]
    schema = "id int, k string, v int, s string"
    for _ in range(2):
        plain = local_frame(spark, rows, schema)
        t = Tracker(spark)
        r = t.annotate(local_frame(spark, rows, schema), "R", key=["id"])
        out = r.dropDuplicates(["k"])
        assert_fidelity(plain.dropDuplicates(["k"]), out)
        g = t.graph()
        for row in out.collect_annotated():
            assert [g.node(row.annotation.values[c])["value"] for c in ("id", "v", "s")] == [row.row.id, row.row.v, row.row.s]
            assert row.row.v == row.row.id * 10 and row.row.s == f"s{row.row.id}"  # one row's values, not a mix


def test_duplicate_column_names_are_all_keys(spark):
    def q(R, S):
        return R.select("k", "p").join(S.select("k", "w"), R["k"] == S["k"]).dropDuplicates(["k"])

    S = ([(10, "a", "u"), (11, "a", "u"), (12, "b", "v")], "sid int, k string, w string", ["sid"])
    t, ann = check(spark, q, R=FORCED, S=S)
    assert ann.columns == ["k", "p", "k", "w"]
    g = graph_of(t)
    polys = sorted(str(g.polynomial(r.annotation)) for r in ann.collect_annotated())
    assert polys == ["δ(R:1·S:10 + R:1·S:11 + R:2·S:10 + R:2·S:11 + R:8·S:10 + R:8·S:11)", "δ(R:5·S:12 + R:6·S:12)"]


def _rerun(spark, deleted, subset):
    kept = [r for r in FORCED[0] if f"R:{r[0]}" not in deleted]
    return Counter(tuple(ref.norm_value(v) for v in row) for row in _plan(subset)(local_frame(spark, kept, FORCED[1])).collect())


@pytest.mark.parametrize("deleted", [["R:1"], ["R:7"], ["R:3", "R:4"], ["R:1", "R:2", "R:8"], ["R:5", "R:1"]])
def test_the_deletion_oracle(spark, deleted):
    subset = ["k"]
    t, ann = check(spark, _plan(subset), R=FORCED)
    g = graph_of(t)
    what_if = delete(g, [g.token_id(x) for x in deleted])
    changed = {c.node: c.after for c in what_if.values}
    survived: Counter = Counter()
    for row in ann.collect_annotated():
        if what_if.removed[g.positions(row.annotation.factors)].any():
            continue
        members = tokens(g.polynomial(row.annotation))
        for c, node in row.annotation.values.items():  # a row of the key went: unknown, never the stale value
            assert changed.get(node) is UNKNOWN if members & set(deleted) else node not in changed, (c, deleted)
        survived[tuple(ref.norm_value(v) for v in row.row)] += 1
    assert survived == _rerun(spark, deleted, subset)  # the forced picks: what survives is the re-run
    assert what_if.exact == (not any(c.after is UNKNOWN for c in what_if.values))


def test_a_column_with_v_nodes_is_a_first_of_them(spark):
    """A column that carries v-nodes (an aggregate's result): its `first` has an edge from each
    row of the key and from their v-nodes of it, so a what-if that changes one of those values
    shows it unknown though no row of the key went."""
    rows = ([(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "c", 4)], "id int, k string, v int", ["id"])

    def q(R):
        return R.groupBy("k").agg(F.sum("v").alias("s")).withColumn("one", F.lit(1)).dropDuplicates(["one"])

    check(spark, lambda R: q(R).drop("k", "s"), R=rows)  # k, s: the arbitrary pick
    t = Tracker(spark)
    (row,) = q(t.annotate(local_frame(spark, *rows[:2]), "R", key=["id"])).collect_annotated()
    g = t.graph()
    s = g.value(row.annotation, "s")
    assert isinstance(s, BlackBox) and s.name == "first"
    kids = sorted(g.node(i)["label"] for i in g.child_ids(row.annotation.values["s"]))
    assert kids == ["Sum", "Sum", "Sum", "δ", "δ", "δ"]  # each group's δ (its row) and its Sum (its value of s)
    what_if = delete(g, [g.token_id("R:2")])  # group a stays, its sum changes: the first over it is unknown
    changed = {c.node: c.after for c in what_if.values}
    assert changed[row.annotation.values["s"]] is UNKNOWN and not what_if.exact


def test_a_key_with_v_nodes_is_a_condition(spark):
    """Keys that are values with v-nodes (an aggregate's result): which rows share a key depends on
    them, so a what-if that changes one says it is not exact and names the operation."""
    rows = ([(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "c", 1)], "id int, k string, v int", ["id"])
    t, ann = check(spark, lambda R: R.groupBy("k").agg(F.count("v").alias("n")).dropDuplicates(["n"]).drop("k"), R=rows)
    g = graph_of(t)
    assert sorted(r.row.n for r in ann.collect_annotated()) == [1, 2]
    what_if = delete(g, [g.token_id("R:2")])  # a's count becomes 1: a re-run keeps one row for n = 1
    assert not what_if.exact and [c.label for c in what_if.conditions] == ["dropDuplicates on n"]


def test_a_nested_bag_is_refused_with_the_alternative(spark):
    r = Tracker(spark).annotate(local_frame(spark, *FORCED[:2]), "R", key=["id"])
    bagged = r.groupBy("k").agg(F.collect_list("x").alias("xs"), F.count("*").alias("n"))
    with pytest.raises(UnsupportedOperation) as err:
        bagged.dropDuplicates(["n"])
    assert "dropDuplicates(subset) over nested bag" in str(err.value) and "explode" in str(err.value)


def test_spark_errors_stay_sparks(spark):
    r = Tracker(spark).annotate(local_frame(spark, *FORCED[:2]), "R", key=["id"])
    with pytest.raises(Exception) as err:
        r.dropDuplicates(["nope"])
    assert "nope" in str(err.value)
    with pytest.raises(Exception):
        r.dropDuplicates("k")  # a string, not a list: PySpark's own type error
