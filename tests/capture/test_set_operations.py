"""Set operations: ``intersect`` (δ of each side's rows per distinct tuple, nulls equal),
``unionByName`` with missing columns (null, no v-node); ``intersectAll`` and ``exceptAll`` refused
in one line naming what to use instead (``subtract``: tests/capture/test_monus.py)."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.semiring import BOOLEAN, evaluate
from tests import reference as ref
from tests.capture.test_join import EMPTY, L, M, assert_reference, reference, strings
from tests.test_frame import check
from tests.util import assert_fidelity, local_frame, run_both


# ---------------------------------------------------------------------- intersect
def test_intersect_is_delta_of_each_sides_rows(spark):
    t, ann = check(spark, lambda L, M: L.select("k").intersect(M.select("k")), L=L, M=M)
    assert ann.columns == ["k"]
    assert strings(t, ann) == {("a",): ["δ(L:1 + L:2)·δ(M:10 + M:11)"], ("b",): ["δ(L:3)·δ(M:12)"],
                               (None,): ["δ(L:4)·δ(M:13)"]}  # nulls are equal, as Spark's INTERSECT compares them
    assert_reference(t, ann, ref.intersect(ref.select(reference("L", L), ["k"]), ref.select(reference("M", M), ["k"])))
    g = t.graph()
    a = next(r for r in ann.collect_annotated() if r.row["k"] == "a")
    assert evaluate(g.polynomial(a.annotation), BOOLEAN, {"L:1": False, "M:11": False}, default=True) is True
    assert evaluate(g.polynomial(a.annotation), BOOLEAN, {"M:10": False, "M:11": False}, default=True) is False


def test_intersect_of_duplicates_products_and_empty_inputs(spark):
    fn = lambda L, M: L.select("k").union(L.select("k")).intersect(M.join(L.select("k"), "k").select("k"))  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    lr, mr = reference("L", L), reference("M", M)
    want = ref.intersect(ref.union(ref.select(lr, ["k"]), ref.select(lr, ["k"])),
                         ref.select(ref.join(mr, ref.select(lr, ["k"]), ["k"]), ["k"]))
    assert_reference(t, ann, want)
    assert strings(t, ann)[("b",)] == ["δ(L:3 + L:3)·δ(L:3·M:12)"]
    t, ann = check(spark, lambda L, E: L.select("k").intersect(E.select("k")), L=L, E=EMPTY)
    assert ann.collect_annotated() == []


def test_intersect_by_position_widens_types_and_keeps_repeated_names(spark):
    """By position, in the type Spark widens both sides to; after a join on a condition, two
    columns of one name are compared by position as plain Spark does."""
    fn = lambda L, M: L.select("id", "x").intersect(M.select((F.col("sid") - 9).cast("bigint"), F.lit(10.0)))  # noqa: E731
    plain, ann, t = run_both(spark, fn, {"L": L, "M": M})
    assert_fidelity(plain, ann)
    assert ann.dtypes == plain.dtypes == [("id", "bigint"), ("x", "double")]
    assert strings(t, ann) == {(1, 10): ["δ(L:1)·δ(M:10)"], (2, 10): ["δ(L:2)·δ(M:11)"]}
    fn = lambda L, M: L.join(M, L.k == M.k).select(L.k, M.k).intersect(M.select("k", "k"))  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert ann.columns == ["k", "k"]
    assert strings(t, ann)[("b", "b")] == ["δ(L:3·M:12)·δ(M:12)"]


def test_intersect_over_bags_with_member_provenance_is_refused(spark):
    t = Tracker(spark)
    l_ = t.annotate(local_frame(spark, *L[:2]), "L", key=["id"])
    bags = l_.groupBy("k").agg(F.collect_list("id").alias("ids"))
    with pytest.raises(UnsupportedOperation, match=r"intersect over nested bag column\(s\) \['ids'\]"):
        bags.intersect(bags)


# ---------------------------------------------------------------------- unionByName
def test_union_by_name_with_missing_columns(spark):
    fn = lambda L, M: L.unionByName(M, allowMissingColumns=True)  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert ann.columns == ["id", "k", "x", "sid", "y"]
    p = strings(t, ann)
    assert p[(1, "a", 10, None, None)] == ["L:1"] and p[(None, "d", None, 14, 3)] == ["M:14"]
    assert_reference(t, ann, ref.union_by_name(reference("L", L), reference("M", M), allow_missing=True))
    t, ann = check(spark, lambda L, E: E.unionByName(L.select("x", "k"), allowMissingColumns=True), L=L, E=EMPTY)
    assert ann.columns == ["sid", "k", "y", "x"] and len(ann.collect_annotated()) == 5


def test_union_by_name_a_missing_column_has_no_value_node(spark):
    """An aggregate keeps its v-node on its own rows; the other side's rows have null there, and no v-node."""
    fn = lambda L, M: L.groupBy("k").agg(F.sum("x").alias("s")).unionByName(M.select("k", "y"), allowMissingColumns=True)  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    g = t.graph()
    rows = ann.collect_annotated()
    assert ann.columns == ["k", "s", "y"]
    for r in rows:
        assert ("s" in r.annotation.values) == (r.row["y"] is None)
    a = next(r for r in rows if r.row["k"] == "a" and r.row["y"] is None)
    assert str(g.value(a.annotation, "s")) == "Sum(L:1 ⊗ 10 + L:2 ⊗ 10)"
    want = ref.union_by_name(ref.group_by(reference("L", L), ["k"], [("s", "sum", "x")]), ref.select(reference("M", M), ["k", "y"]),
                             allow_missing=True)
    assert_reference(t, ann, want)


def test_union_by_name_matches_names_as_spark_does(spark):
    """Case-insensitively (Spark's default); bags with member provenance survive a missing column."""
    t, ann = check(spark, lambda L, M: L.select("k", "x").unionByName(M.select(F.col("y").alias("X"), F.col("k").alias("K"))), L=L, M=M)
    assert ann.columns == ["k", "x"] and strings(t, ann)[("d", 3)] == ["M:14"]
    fn = lambda L, M: L.groupBy("k").agg(F.collect_list("id").alias("ids")).unionByName(M.select("k"), allowMissingColumns=True) \
        .select("k", F.explode("ids").alias("id"))  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert strings(t, ann)[("a", 1)] == ["δ(L:1 + L:2)·L:1"]


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize("name, why, instead", [
    ("intersectAll", "min(m, n) copies", "intersect(other) for the distinct tuples"),
    ("exceptAll", "no annotation per copy", "subtract(other) for the distinct tuples"),
])
def test_refused_set_operations_say_why_and_what_instead_in_one_line(spark, name, why, instead):
    r = Tracker(spark).annotate(local_frame(spark, *L[:2]), "L", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        getattr(r, name)(r)
    msg = str(err.value)
    assert f"DataFrame.{name} (" in msg and why in msg and instead in msg and "\n" not in msg
