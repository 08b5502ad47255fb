"""Selections and post-processing: a condition over `*` is refused; rows that may differ from
one Spark job to the next are computed once, so the output and the graph agree."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from tests.test_frame import R


def test_a_condition_over_star_is_refused(spark):
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation, match=r"filter with a condition over \*.*Instead: name the columns"):
        r.filter(F.expr("pmod(hash(*), 2) = 0"))
    with pytest.raises(UnsupportedOperation, match=r"condition over \*"):
        r.where("pmod(xxhash64(*), 2) = 0")


def _every_row_in_the_graph(t, frame):
    g = t.graph()
    rows = frame.collect_annotated()
    for r in rows:
        g.polynomial(r.annotation)  # a KeyError if the output points to a node the graph lacks
    return g, rows


@pytest.mark.parametrize("op", [
    lambda R: R.withColumn("t", F.current_timestamp()).select("k", "t").distinct(),
    lambda R: R.withColumn("u", F.expr("uuid()")).groupBy("k", "u").count(),
    lambda R: R.filter(F.rand() > 0.3).select("k").distinct(),
    lambda R: R.repartition(3).limit(40).groupBy("k").count(),
])
def test_rows_that_may_change_between_jobs_are_computed_once(spark, op):
    rows = [(i, "abcde"[i % 5], i) for i in range(200)]
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(rows, R[1]), "R", key=["id"])
    out = op(r)
    g, got = _every_row_in_the_graph(t, out)
    assert len(got) == out.count() > 0
    assert sorted(map(tuple, out.collect())) == sorted(tuple(x.row) for x in got)  # one set of rows, however often read


def test_a_broadcast_hint_keeps_provenance_and_f_broadcast_names_it(spark):
    from tests.test_frame import S, check, polys

    t, ann = check(spark, lambda R, S: R.join(S.hint("broadcast"), "k"), R=R, S=S)
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:1·S:10", "R:2·S:10", "R:3·S:11", "R:3·S:12", "R:4·S:11", "R:4·S:12"]
    s = Tracker(spark).annotate(spark.createDataFrame(*S[:2]), "S", key=["sid"])
    with pytest.raises(UnsupportedOperation, match=r"F.broadcast\(df\).*Instead: df.hint\('broadcast'\)"):
        F.broadcast(s)
