"""Rows kept because another is missing: anti joins, outer joins and ``subtract`` (⊖ nodes).

Fidelity (provenance on == off, as multisets) over null keys, duplicates and empty sides; the
polynomials of the rows present and of the rows kept out (``r ⊖ δ(Σ partners)``, the graph's ⊖
nodes) against the reference evaluator; and the deletion oracle: deleting base tuples and
re-running the plain query gives exactly the surviving rows plus the rows the what-if reports as
appearing."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.query.deletion import delete
from lipspark.vocabulary import Op
from tests import reference as ref
from tests.capture.test_join import D, EMPTY, L, M, assert_reference, reference, strings
from tests.test_frame import check
from tests.util import graph_of, local_frame


def absent(t: Tracker) -> dict[tuple, list[str]]:
    """The graph's ⊖ nodes: their row's data (sorted items) → polynomials, once per copy."""
    g = graph_of(t)
    out: dict[tuple, list[str]] = {}
    for pos in np.flatnonzero(np.asarray(g.op) == int(Op.MONUS)).tolist():
        row = g.node(int(g.ids[pos]))
        data = tuple(sorted(json.loads(row["tuple"]).items(), key=lambda kv: kv[0]))
        out.setdefault(data, []).extend([str(g.polynomial(int(g.ids[pos])))] * int(row["value"]))
    return {k: sorted(v) for k, v in out.items()}


def oracle(spark, fn, rels: dict[str, tuple], deleted: list[str]) -> Any:
    """Run ``fn`` annotated, delete ``deleted`` (``Rel:key``), and compare the surviving rows plus
    the appearing ones with a re-run of the plain query without those tuples."""
    t = Tracker(spark)
    frames = {n: t.annotate(local_frame(spark, rows, schema), n, key=key) for n, (rows, schema, key) in rels.items()}
    out = fn(**frames)
    rows = out.collect_annotated()
    g = t.graph()
    r = delete(g, [g.token_id(x) for x in deleted])
    got = Counter(tuple(x.row) for x in rows if not r.removed[g.positions(x.annotation.factors)].any())
    for a in r.appeared:
        got[tuple(a.row.get(c) for c in out.columns)] += a.copies
    kept = {}
    for n, (rows_, schema, key) in rels.items():
        cols = [c.split()[0] for c in schema.split(",")]
        kept[n] = local_frame(spark, [x for x in rows_ if key is None or f"{n}:{x[cols.index(key[0])]}" not in deleted], schema)
    want = Counter(tuple(x) for x in fn(**kept).collect())
    assert got == want, (got, want)
    return r


# ---------------------------------------------------------------------- anti joins
@pytest.mark.parametrize("how", ["left_anti", *[pytest.param(h, marks=pytest.mark.slow) for h in ("anti", "leftanti", "LEFT_ANTI")]])
def test_anti_join_on_names_keeps_rows_without_partners(spark, how):
    t, ann = check(spark, lambda L, M: L.join(M.select("k"), "k", how), L=L, M=M)
    assert ann.columns == ["k", "id", "x"]
    assert strings(t, ann) == {(None, 4, 5): ["L:4"], ("c", 5, -1): ["L:5"]}  # a null key has no partner
    assert absent(t) == {(("id", 1), ("k", "a"), ("x", 10)): ["L:1 ⊖ δ(M:10 + M:11)"],
                         (("id", 2), ("k", "a"), ("x", 10)): ["L:2 ⊖ δ(M:10 + M:11)"],
                         (("id", 3), ("k", "b"), ("x", 30)): ["L:3 ⊖ δ(M:12)"]}
    want = ref.anti_join(reference("L", L), ref.select(reference("M", M), ["k"]), ["k"])
    assert_reference(t, ann, want)
    assert len(want.absent) == 3


def test_anti_join_of_duplicates_counts_copies_and_empty_sides(spark):
    t, ann = check(spark, lambda D, M: D.join(M.select("k"), "k", "left_anti"), D=D, M=M)
    assert strings(t, ann) == {(None, 3): ["D:null,3"]}
    assert absent(t) == {(("k", "a"), ("n", 1)): ["D:a,1 ⊖ δ(M:10 + M:11)", "D:a,1#2 ⊖ δ(M:10 + M:11)"]}
    t, ann = check(spark, lambda L, E: L.join(E, "k", "left_anti"), L=L, E=EMPTY)
    assert len(ann.collect_annotated()) == 5 and absent(t) == {}
    t, ann = check(spark, lambda L, E: E.join(L, "k", "left_anti"), L=L, E=EMPTY)
    assert ann.collect_annotated() == [] and absent(t) == {}


def test_anti_join_on_a_condition_and_a_self_join(spark):
    fn = lambda L, M: L.join(M, (L.k == M.k) & (M.y > 10), "left_anti")  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert sorted(strings(t, ann)) == [(4, None, 5), (5, "c", -1)]  # a and b have partners with y > 10
    fn = lambda L: L.alias("a").join(L.alias("b"), (F.col("a.k") == F.col("b.k")) & (F.col("a.id") < F.col("b.id")), "left_anti")  # noqa: E731
    t, ann = check(spark, fn, L=L)
    assert absent(t) == {(("id", 1), ("k", "a"), ("x", 10)): ["L:1 ⊖ δ(L:2)"]}


def test_anti_join_deletion_makes_rows_appear(spark):
    fn = lambda L, M: L.join(M.select("k"), "k", "left_anti")  # noqa: E731
    r = oracle(spark, fn, {"L": L, "M": M}, ["M:12"])  # b's only partner: L:3 appears
    assert [a.row for a in r.appeared] == [{"id": 3, "k": "b", "x": 30}] and not r.exact
    r = oracle(spark, fn, {"L": L, "M": M}, ["M:10"])  # a keeps M:11: nothing appears
    assert r.appeared == [] and r.exact
    oracle(spark, fn, {"L": L, "M": M}, ["M:10", "M:11", "L:2"])  # L:1 appears, L:2 is gone with its minuend
    oracle(spark, lambda D, M: D.join(M.select("k"), "k", "left_anti"), {"D": D, "M": M}, ["M:10", "M:11"])  # two copies


# ---------------------------------------------------------------------- outer joins
@pytest.mark.parametrize("how, sides", [("left", "L"), ("right", "M"), ("full", "LM"),  # one spelling each in the fast suite
                                        *[pytest.param(h, sd, marks=pytest.mark.slow) for h, sd in
                                          (("left_outer", "L"), ("leftouter", "L"), ("right_outer", "M"), ("outer", "LM"),
                                           ("full_outer", "LM"), ("fullouter", "LM"))]])
def test_outer_joins_pad_rows_without_partners(spark, how, sides):
    t, ann = check(spark, lambda L, M: L.join(M, "k", how), L=L, M=M)
    p = strings(t, ann)
    assert p[("a", 1, 10, 10, 15)] == ["L:1·M:10"]
    if "L" in sides:
        assert p[("c", 5, -1, None, None)] == ["L:5"] and p[(None, 4, 5, None, None)] == ["L:4"]
    if "M" in sides:
        assert p[("d", None, None, 14, 3)] == ["M:14"] and p[(None, None, None, 13, 7)] == ["M:13"]
    kind = {"L": "left", "M": "right", "LM": "full"}[sides]
    want = ref.outer_join(reference("L", L), reference("M", M), ["k"], kind)
    assert_reference(t, ann, want)
    assert sum(len(v) for v in absent(t).values()) == len(want.absent) == {"L": 3, "M": 3, "LM": 6}[sides]


def test_outer_join_on_a_condition_and_value_columns(spark):
    fn = lambda L, M: L.groupBy("k").agg(F.sum("x").alias("s")).join(M, F.col("s") > F.col("y") + 10, "left")  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    rows = ann.collect_annotated()
    assert all("s" in r.annotation.values for r in rows)  # the left's value columns stay, padded or not
    assert sorted(str(r.row["k"]) for r in rows if r.row["sid"] is None) == ["None", "c"]  # sums -1 and 5: no partner
    g = t.graph()
    assert np.flatnonzero(np.asarray(g.op) == int(Op.CONDITION)).size == 1  # the condition read the sums: a CONDITION node


def test_outer_join_deletion_makes_padded_rows_appear(spark):
    fn = lambda L, M: L.join(M, "k", "left")  # noqa: E731
    r = oracle(spark, fn, {"L": L, "M": M}, ["M:12"])
    assert [a.row for a in r.appeared] == [{"id": 3, "k": "b", "x": 30, "sid": None, "y": None}]
    oracle(spark, lambda L, M: L.join(M, "k", "full"), {"L": L, "M": M}, ["M:10", "M:11", "L:3"])
    oracle(spark, lambda L, M: L.join(M, "k", "right"), {"L": L, "M": M}, ["L:1", "L:2"])
    oracle(spark, lambda D, M: D.join(M, "k", "full"), {"D": D, "M": M}, ["M:10", "M:11"])


# ---------------------------------------------------------------------- subtract
def test_subtract_is_delta_minus_delta_null_safe(spark):
    t, ann = check(spark, lambda L, M: L.select("k").subtract(M.select("k")), L=L, M=M)
    assert strings(t, ann) == {("c",): ["δ(L:5)"]}  # null is in both sides: equal, as Spark compares
    assert absent(t) == {(("k", "a"),): ["δ(L:1 + L:2) ⊖ δ(M:10 + M:11)"], (("k", "b"),): ["δ(L:3) ⊖ δ(M:12)"],
                         (("k", None),): ["δ(L:4) ⊖ δ(M:13)"]}
    assert_reference(t, ann, ref.subtract(ref.select(reference("L", L), ["k"]), ref.select(reference("M", M), ["k"])))
    t, ann = check(spark, lambda D, E: D.subtract(E.select("k", "y")), D=D, E=EMPTY)
    assert strings(t, ann) == {("a", 1): ["δ(D:a,1 + D:a,1#2)"], (None, 3): ["δ(D:null,3)"]}
    oracle(spark, lambda L, M: L.select("k").subtract(M.select("k")), {"L": L, "M": M}, ["M:12", "M:13", "L:5"])


def test_subtract_widens_types_and_keeps_repeated_names(spark):
    fn = lambda L, M: L.select("id", "x").subtract(M.select((F.col("sid") - 9).cast("bigint"), F.lit(10.0)))  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert ann.dtypes == [("id", "bigint"), ("x", "double")]
    fn = lambda L, M: L.join(M, L.k == M.k).select(L.k, M.k).subtract(M.select("k", "k").filter(F.col("y") > 50))  # noqa: E731
    t, ann = check(spark, fn, L=L, M=M)
    assert ann.columns == ["k", "k"] and sorted(strings(t, ann)) == [("a", "a")]


# ---------------------------------------------------------------------- refusals
def test_kinds_without_a_rule_fail_loudly_with_the_alternative(spark):
    r = Tracker(spark).annotate(local_frame(spark, *L[:2]), "L", key=["id"])
    for how in ("left_anti", "left", "full"):
        with pytest.raises(UnsupportedOperation, match=rf"join\(how='{how}'\) without a condition.*Instead: name the key") as err:
            r.join(r, how=how)
        assert "\n" not in str(err.value)
    with pytest.raises(UnsupportedOperation, match=r"DataFrame.exceptAll \(a bag difference.*Instead: subtract\(other\)"):
        r.exceptAll(r)
    bags = r.groupBy("k").agg(F.collect_list("id").alias("ids"))
    with pytest.raises(UnsupportedOperation, match=r"subtract over nested bag column\(s\) \['ids'\]"):
        bags.subtract(bags)
