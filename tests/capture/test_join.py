"""Joins: semi joins (``r · δ(Σ partners)``), self joins through aliases, joins on a condition and
cross joins; each against plain PySpark (fidelity) and the reference evaluator; outer and anti
joins refused in one line naming what to use instead."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.semiring import BOOLEAN, evaluate, normal_form, plus
from tests import reference as ref
from tests.test_frame import check, polys
from tests.util import graph_of, local_frame, run_both

L = ([(1, "a", 10), (2, "a", 10), (3, "b", 30), (4, None, 5), (5, "c", -1)], "id int, k string, x int", ["id"])
M = ([(10, "a", 15), (11, "a", 1), (12, "b", 100), (13, None, 7), (14, "d", 3)], "sid int, k string, y int", ["sid"])
EMPTY = ([], "sid int, k string, y int", ["sid"])
D = ([("a", 1), ("a", 1), (None, 3)], "k string, n int", None)  # duplicate rows, a null


def reference(name: str, rel: tuple) -> ref.KRelation:
    rows, schema, key = rel
    cols = [c.split()[0] for c in schema.split(",")]
    return ref.base(name, [dict(zip(cols, r)) for r in rows], key=key, columns=cols)


def assert_reference(t: Tracker, frame, want: ref.KRelation) -> None:
    """Per distinct tuple, the sum of the rows' polynomials is the reference's."""
    g = graph_of(t)
    got: dict[tuple, list] = {}
    for r in frame.collect_annotated():
        got.setdefault(tuple(ref.norm_value(v) for v in r.row), []).append(g.polynomial(r.annotation))
    expect = ref.tuple_polynomials(want)
    assert set(got) == set(expect)
    for k, e in expect.items():
        assert ref.poly_normal_form(normal_form(plus(*got[k])) - e) == 0, f"{k}: {plus(*got[k])} != {e}"


def strings(t: Tracker, frame) -> dict[tuple, list[str]]:
    _, p = polys(t, frame)
    return {k: sorted(str(x) for x in v) for k, v in p.items()}


# ---------------------------------------------------------------------- semi joins on column names
@pytest.mark.parametrize("how", ["semi", "leftsemi", "left_semi", "LEFT_SEMI"])
def test_semi_join_keeps_left_rows_times_delta_of_their_partners(spark, how):
    t, ann = check(spark, lambda L, M: L.join(M, "k", how), L=L, M=M)
    assert ann.columns == ["k", "id", "x"]  # as Spark orders a join on names
    assert strings(t, ann) == {
        ("a", 1, 10): ["L:1·δ(M:10 + M:11)"], ("a", 2, 10): ["L:2·δ(M:10 + M:11)"], ("b", 3, 30): ["L:3·δ(M:12)"],
    }  # the null key of L:4 and M:13 matches nothing
    g = t.graph()
    assert len(g.find(label="δ")) == 3  # one per distinct non-null key of the right side: a, b, d
    assert_reference(t, ann, ref.semi_join(reference("L", L), reference("M", M), ["k"]))


def test_semi_join_keeps_duplicates_and_empty_inputs(spark):
    t, ann = check(spark, lambda D, M: D.join(M.select("k"), ["k"], "left_semi"), D=D, M=M)
    assert strings(t, ann) == {("a", 1): ["D:a,1#2·δ(M:10 + M:11)", "D:a,1·δ(M:10 + M:11)"]}
    t, ann = check(spark, lambda L, E: L.join(E, "k", "semi"), L=L, E=EMPTY)
    assert ann.collect_annotated() == []
    t, ann = check(spark, lambda L, E: E.join(L, "k", "semi"), L=L, E=EMPTY)
    assert ann.collect_annotated() == []


def test_semi_join_of_products_and_aggregates(spark):
    """Left rows keep their factors and value columns; right members that are products are · nodes."""
    fn = lambda L, M: L.groupBy("k").agg(F.sum("x").alias("s")).join(M.join(L.select("k"), "k"), "k", "semi")  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    g = t.graph()
    rows = {r.row["k"]: r for r in ann.collect_annotated()}
    assert str(g.polynomial(rows["a"].annotation)) == "δ(L:1 + L:2)·δ(L:1·M:10 + L:1·M:11 + L:2·M:10 + L:2·M:11)"
    assert str(g.value(rows["a"].annotation, "s")) == "Sum(L:1 ⊗ 10 + L:2 ⊗ 10)"  # the value column is kept
    want = ref.semi_join(ref.group_by(reference("L", L), ["k"], [("s", "sum", "x")]),
                         ref.join(reference("M", M), ref.select(reference("L", L), ["k"]), ["k"]), ["k"])
    assert_reference(t, ann, want)


def test_semi_join_compares_keys_as_spark_does(spark):
    """An int key and a string key are compared as bigint: "1" and "01" are one key, one δ."""
    left = ([(1, 7), (2, 8), (3, 9)], "k int, a int", ["k"])
    right = ([("1", 0), ("01", 1), ("2", 2)], "K string, z int", ["z"])
    t, ann = check(spark, lambda A, B: A.join(B, ["K"], "semi"), A=left, B=right)
    assert strings(t, ann) == {(1, 7): ["A:1·δ(B:0 + B:1)"], (2, 8): ["A:2·δ(B:2)"]}
    t, ann = check(spark, lambda A, B: A.join(B, ["k"], "semi"), A=left, B=([(1, 0), (1, 1)], "k bigint, z int", ["z"]))
    assert strings(t, ann) == {(1, 7): ["A:1·δ(B:0 + B:1)"]}


def test_semi_join_on_a_floating_point_key_matches_minus_zero_and_nan(spark):
    """Spark's join takes -0.0 for 0.0 and NaN for NaN; so do the groups of the right side."""
    left = ([(0, 0.0), (1, float("nan"))], "id int, f double", ["id"])
    right = ([(5, -0.0), (6, 0.0), (7, float("nan"))], "sid int, f double", ["sid"])
    plain, ann, t = run_both(spark, lambda A, B: A.join(B, "f", "semi"), {"A": left, "B": right})
    assert sorted(map(str, ann.collect())) == sorted(map(str, plain.collect())) == ["Row(f=0.0, id=0)", "Row(f=nan, id=1)"]
    g = t.graph()
    assert {r.row["id"]: str(g.polynomial(r.annotation)) for r in ann.collect_annotated()} == {0: "A:0·δ(B:5 + B:6)", 1: "A:1·δ(B:7)"}


def test_deleting_every_partner_removes_the_row(spark):
    t, ann = check(spark, lambda L, M: L.join(M, "k", "semi"), L=L, M=M)
    g = t.graph()
    a1 = next(r for r in ann.collect_annotated() if r.row["id"] == 1)
    e = g.polynomial(a1.annotation)
    assert evaluate(e, BOOLEAN, {"M:10": False}, default=True) is True  # M:11 is still a partner
    assert evaluate(e, BOOLEAN, {"M:10": False, "M:11": False}, default=True) is False
    assert evaluate(e, BOOLEAN, {"L:1": False}, default=True) is False


# ---------------------------------------------------------------------- semi joins on a condition
def test_semi_join_on_a_condition(spark):
    t, ann = check(spark, lambda L, M: L.join(M, L.x < M.y, "leftsemi"), L=L, M=M)
    assert ann.columns == ["id", "k", "x"]
    assert strings(t, ann) == {
        (1, "a", 10): ["L:1·δ(M:10 + M:12)"], (2, "a", 10): ["L:2·δ(M:10 + M:12)"], (3, "b", 30): ["L:3·δ(M:12)"],
        (4, None, 5): ["L:4·δ(M:10 + M:12 + M:13)"], (5, "c", -1): ["L:5·δ(M:10 + M:11 + M:12 + M:13 + M:14)"],
    }
    want = ref.semi_join_where(reference("L", L), reference("M", M), ref.compare_columns("x", "<", "y"))
    assert_reference(t, ann, want)
    # a list of conditions is their conjunction; equal left rows share their δ node
    t, ann = check(spark, lambda L, M: L.join(M, [L.x < M.y, L.k == M.k], "semi"), L=L, M=M)
    assert strings(t, ann) == {(1, "a", 10): ["L:1·δ(M:10)"], (2, "a", 10): ["L:2·δ(M:10)"], (3, "b", 30): ["L:3·δ(M:12)"]}
    t, ann = check(spark, lambda D, M: D.union(D).join(M, F.col("n") < F.col("y"), "semi"), D=D, M=M)
    assert len(ann.collect_annotated()) == 6
    assert len(t.graph().find(label="δ")) == 3  # one per distinct left row (data and annotation)
    t, ann = check(spark, lambda L, E: L.join(E, L.x < E.y, "semi"), L=L, E=EMPTY)
    assert ann.collect_annotated() == []


def test_semi_join_on_a_condition_over_products(spark):
    fn = lambda L, M: L.join(M.join(L.select("k", F.col("x").alias("lx")), "k"), F.col("x") < F.col("lx") + F.col("y"), "semi")  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    lr, mr = reference("L", L), reference("M", M)
    right = ref.join(mr, ref.select(lr, {"k": "k", "lx": "x"}), ["k"])
    want = ref.semi_join_where(lr, ref.select(right, {"k2": "k", "sid": "sid", "y": "y", "lx": "lx"}),
                               lambda ld, rd: ld["x"] is not None and ld["x"] < rd["lx"] + rd["y"])
    assert_reference(t, ann, want)


def test_semi_join_on_a_condition_tells_minus_zero_from_zero(spark):
    """Rows with one annotation whose data differ only in the sign of a zero (Spark's grouping and
    hashing take them for one) may have different partners: each gets its own."""
    left = ([(0, [0.0, -0.0])], "id int, fs array<double>", ["id"])
    right = ([(5, "0.0"), (6, "-0.0")], "sid int, s string", ["sid"])
    fn = lambda A, B: A.select("id", F.explode("fs").alias("f")).join(B, F.col("f").cast("string") == F.col("s"), "semi")  # noqa: E731
    t, ann = check(spark, fn, A=left, B=right)
    g = t.graph()
    assert sorted(str(g.polynomial(r.annotation)) for r in ann.collect_annotated()) == ["A:0·δ(B:5)", "A:0·δ(B:6)"]


def test_semi_join_refusals_and_errors(spark):
    t = Tracker(spark)
    l_ = t.annotate(local_frame(spark, *L[:2]), "L", key=["id"])
    m = t.annotate(local_frame(spark, *M[:2]), "M", key=["sid"])
    with pytest.raises(UnsupportedOperation, match=r"join\(how='semi'\) without a condition.*Instead: name the key columns"):
        l_.join(m, how="semi")
    with pytest.raises(UnsupportedOperation, match="without a condition"):
        l_.join(m, [], "left_semi")
    twice = l_.join(m, l_.k == m.k)  # two columns named k
    other = l_.select(F.col("x").alias("z"))
    assert twice.to_plain().join(other.to_plain(), F.col("x") < F.col("z"), "semi").columns  # plain Spark accepts it
    with pytest.raises(UnsupportedOperation, match="two columns named 'k'.*rename one"):
        twice.join(other, F.col("x") < F.col("z"), "semi")
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):  # what plain Spark says of a missing key column
        l_.join(m, "nosuch", "semi")


def test_semi_joins_and_intersect_written_and_loaded_give_the_same_polynomials(spark, tmp_path):
    """The δ nodes and members these rules record survive Tracker.write and GraphIndex.load
    (members that are · nodes included)."""
    from lipspark.graph.index import GraphIndex

    for name, fn in {
        "names": lambda L, M: L.join(M.join(L.select("k", "id"), "k"), "k", "semi"),
        "condition": lambda L, M: L.join(M.join(L.select("k", F.col("x").alias("lx")), "k"), F.col("x") < F.col("y"), "semi"),
        "intersect": lambda L, M: L.select("k").intersect(M.join(L.select("k"), "k").select("k")),
    }.items():
        t, ann = check(spark, fn, L=L, M=M)
        memory = t.graph()
        t.write(str(tmp_path / name))
        loaded = GraphIndex.load(str(tmp_path / name))
        rows = ann.collect_annotated()
        assert rows and [str(loaded.polynomial(r.annotation)) for r in rows] == [str(memory.polynomial(r.annotation)) for r in rows]


# ---------------------------------------------------------------------- self joins, conditions, cross joins
def test_self_join_through_aliases(spark):
    fn = lambda L: L.alias("a").join(L.alias("b"), F.col("a.k") == F.col("b.k")).select("a.id", "b.id", "b.x")  # noqa: E731
    t, ann = check(spark, fn, L=L)
    assert strings(t, ann)[(1, 2, 10)] == ["L:1·L:2"]
    lr = reference("L", L)
    want = ref.select(ref.join(ref.select(lr, {"k": "k", "id": "id"}), ref.select(lr, {"k": "k", "id2": "id", "x": "x"}), ["k"]),
                      ["id", "id2", "x"])
    assert_reference(t, ann, want)
    # a de-duplication after it: δ over the products, a self product squared
    t, ann = check(spark, lambda L: L.alias("a").join(L.alias("b"), F.col("a.k") == F.col("b.k")).select("a.k").distinct(), L=L)
    assert strings(t, ann)[("b",)] == ["δ(L:3·L:3)"]


def test_self_join_on_an_inequality_through_aliases(spark):
    fn = lambda L: L.alias("a").join(L.alias("b"), F.col("a.x") < F.col("b.x")).select(F.col("a.id").alias("i"), F.col("b.id").alias("j"))  # noqa: E731
    t, ann = check(spark, fn, L=L)
    lr = reference("L", L)
    want = ref.select(ref.theta_join(ref.select(lr, {"i": "id", "x": "x"}), ref.select(lr, {"j": "id", "x2": "x"}),
                                     ref.compare_columns("x", "<", "x2")), ["i", "j"])
    assert_reference(t, ann, want)
    assert strings(t, ann)[(5, 3)] == ["L:5·L:3"]
    # aggregated: each group's members are · nodes of both sides
    t, ann = check(spark, lambda L: L.alias("a").join(L.alias("b"), F.col("a.x") < F.col("b.x")).groupBy("a.id").agg(F.count("*").alias("n")), L=L)
    assert_reference(t, ann, ref.group_by(ref.theta_join(ref.select(lr, {"id": "id", "x": "x"}), ref.select(lr, {"x2": "x"}),
                                                         ref.compare_columns("x", "<", "x2")), ["id"], [("n", "count", None)]))


def test_an_ambiguous_self_join_fails_as_in_plain_spark(spark):
    """``a.x < b.x`` with ``a``, ``b`` aliases of one frame: Spark cannot tell the sides apart
    (its columns name one Dataset); lipspark raises the same error, not a guess."""
    from pyspark.errors import AnalysisException

    fn = lambda L: (lambda a, b: a.join(b, a.x < b.x))(L.alias("a"), L.alias("b"))  # noqa: E731
    plain = local_frame(spark, *L[:2])
    with pytest.raises(AnalysisException, match="AMBIGUOUS|ambiguous"):
        fn(plain)
    with pytest.raises(AnalysisException, match="AMBIGUOUS|ambiguous"):
        fn(Tracker(spark).annotate(plain, "L", key=["id"]))


def test_join_on_a_condition_between_two_frames(spark):
    t, ann = check(spark, lambda L, M: L.join(M, (L.x < M.y) & (L.k != M.k)), L=L, M=M)
    want = ref.theta_join(reference("L", L), ref.select(reference("M", M), {"sid": "sid", "k2": "k", "y": "y"}),
                          lambda ld, rd: None not in (ld["x"], rd["y"], ld["k"], rd["k2"]) and ld["x"] < rd["y"] and ld["k"] != rd["k2"])
    assert_reference(t, ann, want)


def test_cross_join_of_a_frame_with_itself(spark):
    t, ann = check(spark, lambda L: L.alias("a").crossJoin(L.alias("b")).select("a.id", F.col("b.id").alias("j")), L=L)
    assert len(ann.collect_annotated()) == 25
    lr = reference("L", L)
    assert_reference(t, ann, ref.cross_join(ref.select(lr, ["id"]), ref.select(lr, {"j": "id"})))
    t, ann = check(spark, lambda L: L.crossJoin(L.select(F.col("id").alias("j"))).filter("id = j"), L=L)
    assert strings(t, ann)[(3, "b", 30, 3)] == ["L:3·L:3"]


# ---------------------------------------------------------------------- refusals
# outer and anti joins have rules now (tests/capture/test_monus.py, which checks the kinds refused)


def test_an_unknown_join_type_gets_sparks_own_error(spark):
    from pyspark.errors import AnalysisException

    t = Tracker(spark)
    l_ = t.annotate(local_frame(spark, *L[:2]), "L", key=["id"])
    with pytest.raises(AnalysisException, match="UNSUPPORTED_JOIN_TYPE"):
        l_.join(l_, "k", "sideways")


@pytest.mark.parametrize("how", ["inner", "left", "cross"])
def test_a_join_whose_sides_share_a_valued_column_name(spark, how):
    """The left's aggregate column ``x`` and the right's ``x``: the name is ambiguous, so neither
    keeps a v-node — and the left's hidden column of it goes too (it was left in, an internal error)."""
    def q(L, M):
        agg = L.groupBy("k").agg(F.count("x").alias("x"))
        right = M.withColumnRenamed("y", "x")
        if how == "cross":
            return agg.crossJoin(right)
        return agg.alias("a").join(right.alias("b"), F.col("a.k") == F.col("b.k"), how)

    t, ann = check(spark, q, L=L, M=M)
    assert ann.layout.values == () and len(ann.collect_annotated()) == len(q(local_frame(spark, *L[:2]), local_frame(spark, *M[:2])).collect())
