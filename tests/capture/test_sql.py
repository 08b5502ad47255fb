"""spark.sql over annotated temporary views (lipspark/capture/sql.py).

For each construct translated: (a) fidelity — the same query with provenance off (plain views,
the SparkSession's own ``sql``) gives the same columns and rows, as multisets, nulls and
duplicates included; (b) one set of rules — every output row's annotation (polynomial and
values) is the one the equivalent DataFrame-method chain gives on the same annotated frames;
(c) a few compositions against the reference evaluator; (d) every construct without a
translation raises UnsupportedOperation naming it, in one line; and a module written with
``df.sparkSession.sql`` runs in a workflow with provenance on and off.
"""
from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.errors import AnalysisException
from pyspark.sql import Window
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.errors import AnnotationError
from lipspark.semiring import normal_form
from tests import reference as ref
from tests.capture.test_join import assert_reference, reference
from tests.util import freeze, graph_of, local_frame, multiset, value_form

R = ([(1, "a", 10), (2, "a", 20), (3, "b", None), (4, None, 5), (5, "a", 10), (6, "c", 30)], "id int, k string, v int", ["id"])
S = ([(10, "a", 1), (11, "c", 2), (12, None, 3), (13, "a", 4), (14, "d", 5)], "sid int, k string, w int", ["sid"])
D = ([("a", 1), ("a", 1), (None, 3), (None, 3), ("b", 2)], "k string, n int", None)  # duplicate rows and nulls, no key
RELS = {"R": R, "S": S, "D": D}


def annotations(t: Tracker, frame) -> Counter:
    """Each row's data, polynomial and values (normal forms: a sum's terms in no particular
    order), as a multiset."""
    g = graph_of(t)
    return Counter((tuple(freeze(x) for x in r.row), str(normal_form(g.polynomial(r.annotation))),
                    tuple(sorted(((c, value_form(g.value(r.annotation, c))) for c in r.annotation.values), key=lambda cv: cv[0])))
                   for r in frame.collect_annotated())


def both(spark, query: str, chain=None):
    """``query`` with provenance off and on (fidelity checked); with ``chain``, a function of the
    annotated frames, each output row's annotation is checked to be the chain's. (tracker, result)."""
    plain = {n: local_frame(spark, rows, schema) for n, (rows, schema, _) in RELS.items()}
    for n, df in plain.items():
        df.createOrReplaceTempView(n)
    plain_out = plain["R"].sparkSession.sql(query)
    plain_rows = plain_out.collect()
    t = Tracker(spark)
    ann = {n: t.annotate(local_frame(spark, rows, schema), n, key=key) for n, (rows, schema, key) in RELS.items()}
    for n, frame in ann.items():
        frame.createOrReplaceTempView(n)
    out = ann["R"].sparkSession.sql(query)
    assert out.columns == plain_out.columns
    assert multiset(out.collect()) == multiset(plain_rows)
    if chain is not None:
        want = chain(**ann)
        assert out.columns == want.columns
        assert annotations(t, out) == annotations(t, want)
    return t, out


CASES = [
    # projection and selection
    ("SELECT id, v * 2 AS w FROM R WHERE v > 5", lambda R, **_: R.filter("v > 5").select("id", (F.col("v") * 2).alias("w"))),
    ("SELECT k, n FROM D WHERE n < 3", lambda D, **_: D.filter(F.col("n") < 3)),
    ("SELECT *, upper(k) AS u FROM R", lambda R, **_: R.select("*", F.upper("k").alias("u"))),
    ("SELECT id, nvl(v, 0) AS z, current_date() IS NOT NULL AS today FROM R",  # sqlglot writes nvl as COALESCE: one query to Spark
     lambda R, **_: R.select("id", F.coalesce("v", F.lit(0)).alias("z"), F.current_date().isNotNull().alias("today"))),
    # grouping, aggregates, HAVING
    ("SELECT k, count(*) AS n, sum(v) AS s FROM R WHERE v > 5 GROUP BY k HAVING count(*) > 1",
     lambda R, **_: R.filter("v > 5").groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")).filter("n > 1")),
    ("SELECT k, count(*) AS n FROM R GROUP BY k HAVING max(v) >= 20",
     lambda R, **_: R.groupBy("k").agg(F.count("*").alias("n"), F.max("v").alias("m")).filter("m >= 20").select("k", "n")),
    ("SELECT count(*) AS n, max(v) AS m FROM R", lambda R, **_: R.agg(F.count("*").alias("n"), F.max("v").alias("m"))),
    ("SELECT count(*) AS n FROM R HAVING count(*) > 3", lambda R, **_: R.agg(F.count("*").alias("n")).filter("n > 3")),
    ("SELECT k, sum(v) / count(v) AS mean FROM R GROUP BY k", lambda R, **_: R.groupBy("k").agg((F.sum("v") / F.count("v")).alias("mean"))),
    ("SELECT upper(k) AS u, count(*) AS n FROM R GROUP BY 1",
     lambda R, **_: R.groupBy(F.upper("k").alias("u")).agg(F.count("*").alias("n"))),
    ("SELECT n, count(*) AS c, count(DISTINCT k) AS dk FROM D GROUP BY n",
     lambda D, **_: D.groupBy("n").agg(F.count("*").alias("c"), F.count_distinct("k").alias("dk"))),
    ("SELECT DISTINCT k, n FROM D", lambda D, **_: D.distinct()),
    ("SELECT k FROM R GROUP BY k HAVING k <> 'a'", lambda R, **_: R.select("k").distinct().filter("k <> 'a'")),
    ("SELECT k, collect_list(v) AS vs FROM R GROUP BY k", lambda R, **_: R.groupBy("k").agg(F.collect_list("v").alias("vs"))),
    ("SELECT S.k, R.k, count(*) AS n FROM R JOIN S ON R.k = S.k GROUP BY R.k, S.k",  # two outputs named k
     lambda R, S, **_: R.alias("R").join(S.alias("S"), F.col("R.k") == F.col("S.k")).groupBy("S.k", "R.k").agg(F.count("*").alias("n"))),
    # joins
    ("SELECT R.id, S.sid, R.k FROM R JOIN S ON R.k = S.k",
     lambda R, S, **_: R.alias("R").join(S.alias("S"), F.col("R.k") == F.col("S.k")).select("R.id", "S.sid", "R.k")),
    ("SELECT * FROM R JOIN S USING (k)", lambda R, S, **_: R.join(S, ["k"])),
    ("SELECT * FROM R LEFT JOIN S USING (k)", lambda R, S, **_: R.join(S, ["k"], "left")),
    ("SELECT * FROM R RIGHT OUTER JOIN S ON R.k = S.k",
     lambda R, S, **_: R.alias("R").join(S.alias("S"), F.col("R.k") == F.col("S.k"), "right")),
    ("SELECT * FROM R FULL OUTER JOIN S ON R.k = S.k AND S.w > 1",
     lambda R, S, **_: R.alias("R").join(S.alias("S"), (F.col("R.k") == F.col("S.k")) & (F.col("S.w") > 1), "full")),
    ("SELECT * FROM R LEFT SEMI JOIN S ON R.k = S.k", lambda R, S, **_: R.join(S, "k", "left_semi").select("id", "k", "v")),
    ("SELECT * FROM R LEFT ANTI JOIN S USING (k)", lambda R, S, **_: R.join(S, ["k"], "left_anti")),
    ("SELECT R.id, S.sid FROM R, S WHERE R.k = S.k",
     lambda R, S, **_: R.alias("R").join(S.alias("S"), F.col("R.k") == F.col("S.k")).select("R.id", "S.sid")),
    ("SELECT R.id, S.sid FROM R CROSS JOIN S WHERE R.v < S.w * 10",
     lambda R, S, **_: R.alias("R").crossJoin(S.alias("S")).filter(F.col("R.v") < F.col("S.w") * 10).select("R.id", "S.sid")),
    ("SELECT a.id, b.id AS other FROM R a JOIN R b ON a.k = b.k AND a.id < b.id",
     lambda R, **_: R.alias("a").join(R.alias("b"), F.expr("a.k = b.k AND a.id < b.id")).select("a.id", F.col("b.id").alias("other"))),
    # subqueries in WHERE: semi and anti joins
    ("SELECT * FROM R WHERE k IN (SELECT k FROM S WHERE w > 1)",
     lambda R, S, **_: R.join(S.filter("w > 1").select("k"), "k", "left_semi").select("id", "k", "v")),
    ("SELECT * FROM R WHERE v > 5 AND EXISTS (SELECT 1 FROM S WHERE S.k = R.k)",
     lambda R, S, **_: R.filter("v > 5").join(S, "k", "left_semi").select("id", "k", "v")),
    ("SELECT * FROM R WHERE NOT EXISTS (SELECT * FROM S WHERE k = R.k)",
     lambda R, S, **_: R.join(S, "k", "left_anti").select("id", "k", "v")),
    ("SELECT * FROM R WHERE v IN (SELECT max(v) FROM R GROUP BY k)",
     lambda R, **_: R.alias("o").join(R.groupBy("k").agg(F.max("v").alias("m")).select("m").alias("i"),
                                      F.col("o.v") == F.col("i.m"), "left_semi")),
    ("SELECT * FROM R WHERE k IN (SELECT k FROM R WHERE v >= 20)",
     lambda R, **_: R.alias("o").join(R.filter("v >= 20").alias("i"), F.col("o.k") == F.col("i.k"), "left_semi")),
    # set operations
    ("SELECT k FROM R UNION ALL SELECT k FROM S", lambda R, S, **_: R.select("k").union(S.select("k"))),
    ("SELECT k FROM R UNION SELECT k FROM S", lambda R, S, **_: R.select("k").union(S.select("k")).distinct()),
    ("SELECT k FROM R EXCEPT SELECT k FROM S", lambda R, S, **_: R.select("k").subtract(S.select("k"))),
    ("SELECT k FROM R INTERSECT SELECT k FROM D", lambda R, D, **_: R.select("k").intersect(D.select("k"))),
    # CTEs and derived tables
    ("WITH big AS (SELECT * FROM R WHERE v >= 10) SELECT b.k, count(*) AS n FROM big b GROUP BY b.k",
     lambda R, **_: R.filter("v >= 10").groupBy("k").agg(F.count("*").alias("n"))),
    ("SELECT x.k, x.n, S.sid FROM (SELECT k, count(*) AS n FROM R GROUP BY k) AS x JOIN S ON x.k = S.k",
     lambda R, S, **_: R.groupBy("k").agg(F.count("*").alias("n")).alias("x").join(S.alias("S"), F.col("x.k") == F.col("S.k"))
     .select("x.k", "x.n", "S.sid")),
    # order and limit (ties broken: plain Spark's choice among ties is its own)
    ("SELECT id, v FROM R WHERE v IS NOT NULL ORDER BY v DESC, id LIMIT 3",
     lambda R, **_: R.filter("v IS NOT NULL").orderBy(F.desc("v"), "id").limit(3).select("id", "v")),
    ("SELECT id FROM R ORDER BY v NULLS LAST, id LIMIT 2", lambda R, **_: R.orderBy(F.asc_nulls_last("v"), "id").limit(2).select("id")),
    ("SELECT v AS id, id AS v FROM R ORDER BY id DESC, v LIMIT 3",  # ORDER BY reads the select's aliases first
     lambda R, **_: R.orderBy(F.desc("v"), "id").limit(3).select(F.col("v").alias("id"), F.col("id").alias("v"))),
    ("SELECT k FROM R GROUP BY k ORDER BY count(*) DESC, k LIMIT 2",
     lambda R, **_: R.groupBy("k").agg(F.count("*").alias("c")).orderBy(F.desc("c"), "k").limit(2).select("k")),
    ("SELECT k, n FROM D UNION ALL SELECT k, v FROM R ORDER BY 2 DESC, 1 LIMIT 4",
     lambda R, D, **_: D.union(R.select("k", "v")).orderBy(F.desc("n"), "k").limit(4)),
    # window functions, through the window rule
    ("SELECT id, k, sum(v) OVER (PARTITION BY k) AS tot FROM R",
     lambda R, **_: R.select("id", "k", F.sum("v").over(Window.partitionBy("k")).alias("tot"))),
]


#: The cases ``make test`` runs (one of each kind of translation); the others run in the slow suite.
FAST = {0, 4, 7, 10, 17, 19, 22, 26, 27, 32, 34, 35, 39, 41}


@pytest.mark.parametrize("query, chain", [pytest.param(q, c, id=q, marks=[] if i in FAST else [pytest.mark.slow])
                                          for i, (q, c) in enumerate(CASES)])
def test_sql_is_the_dataframe_chain(spark, query, chain):
    both(spark, query, chain)


def test_sql_against_the_reference_evaluator(spark):
    """Three compositions, each row's polynomial the reference evaluator's."""
    r, s = reference("R", R), reference("S", S)
    t, out = both(spark, "SELECT DISTINCT R.k FROM R JOIN S ON R.k = S.k WHERE R.v > 5")
    want = ref.distinct(ref.select(ref.join(ref.filter_rows(r, ref.compare("v", ">", 5)), ref.select(s, ["k", "sid"]), ["k"]), ["k"]))
    assert_reference(t, out, want)
    t, out = both(spark, "SELECT k FROM R WHERE NOT EXISTS (SELECT 1 FROM S WHERE S.k = R.k) UNION ALL SELECT k FROM S WHERE w > 2")
    want = ref.union(ref.select(ref.anti_join(r, ref.select(s, ["k"]), ["k"]), ["k"]),
                     ref.select(ref.filter_rows(s, ref.compare("w", ">", 2)), ["k"]))
    assert_reference(t, out, want)
    t, out = both(spark, "SELECT k FROM S INTERSECT SELECT k FROM R WHERE k IN (SELECT k FROM S WHERE w < 4)")
    inner = ref.select(ref.filter_rows(s, ref.compare("w", "<", 4)), ["k"])
    want = ref.intersect(ref.select(s, ["k"]), ref.select(ref.semi_join(r, inner, ["k"]), ["k"]))
    assert_reference(t, out, want)


# ---------------------------------------------------------------------- random compositions
LEAVES = [("SELECT k, v AS x FROM R", lambda f: f["R"].select("k", F.col("v").alias("x"))),
          ("SELECT k, w AS x FROM S", lambda f: f["S"].select("k", F.col("w").alias("x"))),
          ("SELECT k, n AS x FROM D", lambda f: f["D"].select("k", F.col("n").alias("x")))]


def _compose(draw, depth: int):
    """A random query over columns (k, x) and the DataFrame chain it stands for."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(LEAVES))
    q, c = _compose(draw, depth - 1)
    kind = draw(st.sampled_from(["filter", "distinct", "group", "having", "union all", "union", "except", "intersect", "join",
                                 "left join", "full join", "in", "exists", "not exists"]))
    if kind == "filter":
        bound = draw(st.integers(0, 12))
        return f"SELECT k, x FROM ({q}) t WHERE x > {bound}", lambda f: c(f).filter(F.col("x") > bound)
    if kind == "distinct":
        return f"SELECT DISTINCT k, x FROM ({q}) t", lambda f: c(f).distinct()
    if kind == "group":
        return f"SELECT k, count(x) AS x FROM ({q}) t GROUP BY k", lambda f: c(f).groupBy("k").agg(F.count("x").alias("x"))
    if kind == "having":
        return (f"SELECT k, sum(x) AS x FROM ({q}) t GROUP BY k HAVING count(*) > 1",
                lambda f: c(f).groupBy("k").agg(F.sum("x").alias("x"), F.count("*").alias("n")).filter("n > 1").select("k", "x"))
    q2, c2 = _compose(draw, depth - 1)
    if kind in ("union all", "union", "except", "intersect"):
        method = {"union all": lambda a, b: a.union(b), "union": lambda a, b: a.union(b).distinct(),
                  "except": lambda a, b: a.subtract(b), "intersect": lambda a, b: a.intersect(b)}[kind]
        return (f"SELECT k, x FROM ({q}) l {kind.upper()} SELECT k, x FROM ({q2}) r",
                lambda f: method(c(f), c2(f)))
    if kind == "join":
        return (f"SELECT a.k, a.x + b.x AS x FROM ({q}) a JOIN ({q2}) b ON a.k = b.k",
                lambda f: c(f).alias("a").join(c2(f).alias("b"), F.col("a.k") == F.col("b.k"))
                .select("a.k", (F.col("a.x") + F.col("b.x")).alias("x")))
    if kind == "left join":
        return (f"SELECT a.k, coalesce(b.x, a.x) AS x FROM ({q}) a LEFT JOIN ({q2}) b ON a.k = b.k",
                lambda f: c(f).alias("a").join(c2(f).alias("b"), F.col("a.k") == F.col("b.k"), "left")
                .select("a.k", F.coalesce("b.x", "a.x").alias("x")))
    if kind == "full join":
        return (f"SELECT coalesce(a.k, b.k) AS k, a.x FROM ({q}) a FULL OUTER JOIN ({q2}) b ON a.k = b.k",
                lambda f: c(f).alias("a").join(c2(f).alias("b"), F.col("a.k") == F.col("b.k"), "full")
                .select(F.coalesce("a.k", "b.k").alias("k"), F.col("a.x").alias("x")))
    if kind == "exists":
        return (f"SELECT k, x FROM ({q}) a WHERE EXISTS (SELECT 1 FROM ({q2}) b WHERE b.k = a.k AND b.x > a.x)",
                lambda f: c(f).alias("a").join(c2(f).alias("b"), (F.col("a.k") == F.col("b.k")) & (F.col("b.x") > F.col("a.x")),
                                               "left_semi"))
    if kind == "in":
        return (f"SELECT k, x FROM ({q}) a WHERE k IN (SELECT k FROM ({q2}) b)",
                lambda f: c(f).join(c2(f).select("k"), "k", "left_semi"))
    return (f"SELECT k, x FROM ({q}) a WHERE NOT EXISTS (SELECT 1 FROM ({q2}) b WHERE b.k = a.k)",
            lambda f: c(f).alias("a").join(c2(f).alias("b"), F.col("a.k") == F.col("b.k"), "left_anti"))


@pytest.mark.slow  # Spark jobs per example; CI's slow suite runs it
@settings(max_examples=int(os.environ.get("LIPSPARK_PROPERTY_EXAMPLES", "8")), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pick=st.data())
def test_random_sql_compositions_are_their_dataframe_chains(spark, pick):
    query, chain = pick.draw(st.composite(lambda draw: _compose(draw, 2))())
    both(spark, query, lambda **frames: chain(frames))


# ---------------------------------------------------------------------- TPC-H-style SQL
TPCH = {
    "lineitem": ([(1, 1, 17.0, 1700.0, 0.04, "N", "1996-03-13", "1996-02-12", "1996-03-22"),
                  (1, 2, 36.0, 3600.0, 0.09, "R", "1994-04-12", "1994-02-28", "1994-04-20"),
                  (2, 1, 38.0, 3800.0, 0.00, "A", "1997-01-28", "1997-01-14", "1997-02-02"),
                  (3, 1, 45.0, 4500.0, 0.06, "N", "1994-02-02", "1994-01-04", "1994-02-23")],
                 "l_orderkey int, l_linenumber int, l_quantity double, l_extendedprice double, l_discount double, "
                 "l_returnflag string, l_shipdate string, l_commitdate string, l_receiptdate string", ["l_orderkey", "l_linenumber"]),
    "orders": ([(1, 7, 5000.0, "1996-01-02", "5-LOW"), (2, 8, 3800.0, "1996-12-01", "1-URGENT"), (3, 7, 4500.0, "1993-10-14", "5-LOW"),
                (4, 9, 100.0, "1995-05-05", "2-HIGH")],
               "o_orderkey int, o_custkey int, o_totalprice double, o_orderdate string, o_orderpriority string", ["o_orderkey"]),
    "customer": ([(7, "Customer#7", "BUILDING"), (8, "Customer#8", "AUTOMOBILE"), (9, "Customer#9", "BUILDING"), (10, "Customer#10", None)],
                 "c_custkey int, c_name string, c_mktsegment string", ["c_custkey"]),
}
TPCH_QUERIES = [  # Q1, Q3, Q4, Q13 and Q18 of TPC-H, on string dates
    """SELECT l_returnflag, sum(l_quantity) AS sum_qty, sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       avg(l_quantity) AS avg_qty, count(*) AS count_order FROM lineitem
       WHERE to_date(l_shipdate) <= date '1998-12-01' - interval '90' day GROUP BY l_returnflag ORDER BY l_returnflag""",
    """SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate FROM customer, orders, lineitem
       WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate < '1996-03-15'
       GROUP BY l_orderkey, o_orderdate ORDER BY revenue DESC, o_orderdate LIMIT 10""",
    """SELECT o_orderpriority, count(*) AS order_count FROM orders WHERE o_orderdate >= '1993-07-01' AND EXISTS
       (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority""",
    """SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) FROM customer LEFT OUTER JOIN orders
       ON c_custkey = o_custkey AND o_orderpriority NOT LIKE '%URGENT%' GROUP BY c_custkey) AS c_orders (c_custkey, c_count)
       GROUP BY c_count ORDER BY custdist DESC, c_count DESC""",
    """SELECT c_name, c_custkey, o_orderkey, o_totalprice, sum(l_quantity) FROM customer, orders, lineitem WHERE o_orderkey IN
       (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 30) AND c_custkey = o_custkey
       AND o_orderkey = l_orderkey GROUP BY c_name, c_custkey, o_orderkey, o_totalprice ORDER BY o_totalprice DESC LIMIT 100""",
]


@pytest.mark.parametrize("query", [pytest.param(q, id=n, marks=[pytest.mark.slow] if n in ("Q1", "Q3", "Q13") else [])
                                   for q, n in zip(TPCH_QUERIES, ["Q1", "Q3", "Q4", "Q13", "Q18"])])
def test_tpch_style_queries_give_plain_sparks_rows(spark, query):
    plain = {n: local_frame(spark, rows, schema) for n, (rows, schema, _) in TPCH.items()}
    for n, df in plain.items():
        df.createOrReplaceTempView(n)
    want = plain["orders"].sparkSession.sql(query).collect()
    t = Tracker(spark)
    ann = {n: t.annotate(local_frame(spark, rows, schema), n, key=key) for n, (rows, schema, key) in TPCH.items()}
    for n, frame in ann.items():
        frame.createOrReplaceTempView(n)
    out = ann["orders"].sparkSession.sql(query)
    assert multiset(out.collect()) == multiset(want) and len(want) > 0
    g = graph_of(t)
    assert all(g.polynomial(r.annotation) is not None for r in out.collect_annotated())


# ---------------------------------------------------------------------- what already went through the rules
@pytest.mark.parametrize("text, columns", [
    (lambda R: R.selectExpr("id", "v * 2 AS w", "upper(k) AS u"),
     lambda R: R.select("id", (F.col("v") * 2).alias("w"), F.upper("k").alias("u"))),
    (lambda R: R.select(F.expr("coalesce(v, 0) + 1").alias("w")), lambda R: R.select((F.coalesce("v", F.lit(0)) + 1).alias("w"))),
    (lambda R: R.filter("v > 5 AND k = 'a'"), lambda R: R.filter((F.col("v") > 5) & (F.col("k") == "a"))),
    (lambda R: R.groupBy("k").agg(F.expr("count(*) AS n")).where("n > 1"),
     lambda R: R.groupBy("k").agg(F.count("*").alias("n")).where(F.col("n") > 1)),
    (lambda R: R.selectExpr("id", "sum(v) OVER (PARTITION BY k) AS tot"),
     lambda R: R.select("id", F.sum("v").over(Window.partitionBy("k")).alias("tot"))),
])
def test_sql_text_in_dataframe_methods_is_the_column_api(spark, text, columns):
    """selectExpr, F.expr and filter("...") are Column or string arguments of the rules: the
    same annotations as the Column API, and the same data as plain Spark."""
    t = Tracker(spark)
    ann = t.annotate(local_frame(spark, *R[:2]), "R", key=R[2])
    plain = local_frame(spark, *R[:2])
    out = text(ann)
    assert out.columns == text(plain).columns and multiset(out.collect()) == multiset(text(plain).collect())
    assert annotations(t, out) == annotations(t, columns(ann))


# ---------------------------------------------------------------------- views, sessions, names
def _tracker(spark):
    t = Tracker(spark)
    return t, {n: t.annotate(local_frame(spark, rows, schema), n, key=key) for n, (rows, schema, key) in RELS.items()}


def test_a_view_is_the_trackers_and_sparks_plain_data_too(spark):
    t, f = _tracker(spark)
    f["R"].createOrReplaceTempView("cars_sql")
    assert t.views == ["cars_sql"] and t.view("CARS_SQL") is f["R"]  # names as Spark compares them
    assert multiset(spark.table("cars_sql").collect()) == multiset(f["R"].to_plain().collect())  # what provenance off would see
    session = f["R"].sparkSession
    assert session.conf.get("spark.sql.caseSensitive") == spark.conf.get("spark.sql.caseSensitive")  # the rest is Spark's
    table = session.table("cars_sql")
    assert annotations(t, table) == annotations(t, f["R"])
    other = Tracker(spark)  # another module invocation: the view is not its own
    with pytest.raises(UnsupportedOperation, match="without annotations") as err:
        other.annotate(local_frame(spark, *S[:2]), "S", key=S[2]).sparkSession.sql("SELECT * FROM cars_sql")
    assert "\n" not in str(err.value) and "cars_sql" in str(err.value)
    with pytest.raises(AnalysisException):  # taken: Spark's own error, as plain createTempView gives
        f["S"].createTempView("cars_sql")


def test_a_plain_spark_view_is_refused_and_a_missing_one_is_sparks_error(spark):
    t, f = _tracker(spark)
    local_frame(spark, *S[:2]).createOrReplaceTempView("plain_only")
    assert len(spark.sql("SELECT * FROM plain_only").collect()) == 5  # provenance off: read as it is
    with pytest.raises(UnsupportedOperation, match=r"'plain_only', a Spark table or view that is not an annotated view"):
        f["R"].sparkSession.sql("SELECT * FROM plain_only")
    f["R"].createOrReplaceTempView("r_sql")
    with pytest.raises(UnsupportedOperation, match="without annotations"):
        f["R"].sparkSession.sql("SELECT r_sql.id FROM r_sql JOIN plain_only USING (k)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        f["R"].sparkSession.sql("SELECT * FROM no_such_view_anywhere")
    with pytest.raises(AnalysisException):  # an invalid query fails as plain Spark fails
        f["R"].sparkSession.sql("SELECT id, count(*) FROM r_sql GROUP BY k")


def test_a_plain_dataframe_from_the_sparksessions_sql_cannot_pass_as_annotated(spark):
    """spark.sql on the real SparkSession reads the plain views: its result is a plain DataFrame,
    which every rule taking another relation refuses, saying how to query with annotations."""
    t, f = _tracker(spark)
    f["S"].createOrReplaceTempView("s_plain_read")
    plain = spark.sql("SELECT * FROM s_plain_read")
    with pytest.raises(AnnotationError, match=r"sparkSession\.sql"):
        f["R"].join(plain, "k")


def test_create_temp_view_as_a_query_and_drop_view(spark):
    """CREATE [OR REPLACE] TEMP VIEW v AS query registers the query's annotated frame as v (the
    same as provenance off: Spark's statement over the plain views, then its rows); DROP VIEW
    forgets it."""
    steps = ["CREATE OR REPLACE TEMP VIEW big_sql AS SELECT k, v FROM R WHERE v >= 10",
             "CREATE OR REPLACE TEMP VIEW named_sql (key, value) AS SELECT k, count(*) FROM big_sql GROUP BY k"]
    plain = {n: local_frame(spark, rows, schema) for n, (rows, schema, _) in RELS.items()}
    for n, df in plain.items():
        df.createOrReplaceTempView(n)
    for q in steps:
        assert plain["R"].sparkSession.sql(q).columns == []
    want = plain["R"].sparkSession.sql("SELECT key, value FROM named_sql").collect()
    t, f = _tracker(spark)
    for n, frame in f.items():
        frame.createOrReplaceTempView(n)
    for q in steps:
        assert f["R"].sparkSession.sql(q).columns == []  # Spark's empty result, as plain
    assert t.views == ["big_sql", "d", "named_sql", "r", "s"]
    out = f["R"].sparkSession.sql("SELECT key, value FROM named_sql")
    assert out.columns == ["key", "value"] and multiset(out.collect()) == multiset(want)
    chain = f["R"].filter("v >= 10").select("k", "v").groupBy("k").agg(F.count("*").alias("value")).withColumnRenamed("k", "key")
    assert annotations(t, out) == annotations(t, chain)
    f["R"].sparkSession.sql("DROP VIEW named_sql")
    f["R"].sparkSession.sql("DROP VIEW IF EXISTS never_made_sql")
    assert "named_sql" not in t.views and not spark.catalog.tableExists("named_sql")
    with pytest.raises(AnalysisException):  # Spark's own error, as plain: dropped
        f["R"].sparkSession.sql("SELECT * FROM named_sql")


def test_a_refused_create_temp_view_leaves_no_annotated_view(spark):
    t, f = _tracker(spark)
    for n, frame in f.items():
        frame.createOrReplaceTempView(n)
    with pytest.raises(UnsupportedOperation, match="SQL EXCEPT ALL"):
        f["R"].sparkSession.sql("CREATE OR REPLACE TEMP VIEW bag_sql AS SELECT k FROM R EXCEPT ALL SELECT k FROM S")
    assert "bag_sql" not in t.views
    with pytest.raises(UnsupportedOperation, match="not an annotated view"):
        f["R"].sparkSession.sql("SELECT * FROM bag_sql")


def test_cte_names_shadow_views_and_a_view_is_replaced(spark):
    t, f = _tracker(spark)
    f["R"].createOrReplaceTempView("shadowed")
    f["S"].createOrReplaceTempView("other_sql")
    out = f["R"].sparkSession.sql("WITH shadowed AS (SELECT sid AS id FROM other_sql) SELECT id FROM shadowed")
    assert sorted(r.id for r in out.collect()) == [10, 11, 12, 13, 14]
    f["D"].createOrReplaceTempView("shadowed")
    assert f["R"].sparkSession.sql("SELECT * FROM shadowed").columns == ["k", "n"]


# ---------------------------------------------------------------------- refusals
REFUSED = [
    ("SELECT k FROM R EXCEPT ALL SELECT k FROM S", "SQL EXCEPT ALL", "subtract(other)"),
    ("SELECT k FROM R INTERSECT ALL SELECT k FROM S", "SQL INTERSECT ALL", "intersect(other)"),
    ("SELECT * FROM R NATURAL JOIN S", "SQL NATURAL JOIN", "USING"),
    ("SELECT * FROM R WHERE k NOT IN (SELECT k FROM S)", "SQL NOT IN (SELECT", "NOT EXISTS"),
    ("SELECT id, (SELECT max(w) FROM S) AS m FROM R", "SQL subquery in the select list", "crossJoin"),
    ("SELECT * FROM R WHERE v > (SELECT avg(w) FROM S)", "SQL subquery in WHERE", "crossJoin"),
    ("SELECT * FROM R WHERE k = 'a' OR EXISTS (SELECT 1 FROM S WHERE S.k = R.k)", "SQL subquery in WHERE", "joined by AND"),
    ("SELECT * FROM R WHERE EXISTS (SELECT k FROM S GROUP BY k)", "SQL EXISTS over a query selecting", "left semi join"),
    ("SELECT * FROM R WHERE EXISTS (SELECT max(w) FROM S WHERE S.k = R.k)", "SQL EXISTS over a query selecting more than",
     "left semi join"),  # one row whatever the WHERE keeps: not a semi join on it
    ("SELECT * FROM R WHERE EXISTS (SELECT try_sum(w) FROM S WHERE S.k = R.k)", "SQL EXISTS over a query selecting more than",
     "SELECT 1"),  # an aggregate sqlglot does not know is one: refused all the same
    ("SELECT k, sum(v) FROM R GROUP BY ROLLUP(k)", "SQL GROUP BY ROLLUP", "rollup"),
    ("SELECT k, sum(v) FROM R GROUP BY CUBE(k)", "SQL GROUP BY CUBE", "cube"),
    ("SELECT k, sum(v) FROM R GROUP BY GROUPING SETS ((k), ())", "SQL GROUP BY GROUPING SETS", "groupingSets"),
    ("SELECT id, x FROM R LATERAL VIEW explode(array(1, 2)) e AS x", "SQL LATERAL VIEW", "F.explode"),
    ("SELECT id FROM R QUALIFY row_number() OVER (ORDER BY id) = 1", "SQL QUALIFY", "derived table"),
    ("SELECT id FROM R ORDER BY id LIMIT 2 OFFSET 1", "SQL OFFSET", "row_number"),
    ("SELECT id FROM R SORT BY id", "SQL SORT BY", "sortWithinPartitions"),
    ("SELECT /*+ BROADCAST(S) */ R.id FROM R JOIN S USING (k)", "SQL a query hint", "df.hint"),
    ("SELECT k, rank() OVER (ORDER BY count(*)) AS r FROM R GROUP BY k", "SQL window function in a query with GROUP BY", "derived table"),
    ("SELECT 1 AS one", "SQL SELECT without FROM", "annotated view"),
    ("SELECT * FROM VALUES (1, 2) AS t(a, b)", "SQL VALUES", "tracker.annotate"),
    ("SELECT * FROM R PIVOT (sum(v) FOR k IN ('a', 'b'))", "SQL PIVOT", "pivot"),
    ("DROP TABLE R", "SQL statement DROP", "queries"),
    ("CREATE VIEW perm_sql AS SELECT * FROM R", "SQL CREATE VIEW other than CREATE [OR REPLACE] TEMP VIEW", "TEMP VIEW"),
    ("CREATE GLOBAL TEMPORARY VIEW glob_sql AS SELECT * FROM R", "SQL CREATE VIEW other than", "createOrReplaceTempView"),
    ("DROP VIEW plain_only", "SQL DROP VIEW plain_only (not a view this module invocation registered", "dropTempView"),
    ("INSERT INTO R VALUES (7, 'z', 1)", "SQL statement INSERT", "queries"),
    ("SELECT * FROM R; SELECT * FROM S", "SQL text of 2 statements", "one query"),
]


@pytest.mark.parametrize("query, name, instead", REFUSED, ids=[q for q, _, _ in REFUSED])
def test_an_untranslated_construct_names_itself_and_the_alternative(spark, query, name, instead):
    t, f = _tracker(spark)
    for n, frame in f.items():
        frame.createOrReplaceTempView(n)
    with pytest.raises(UnsupportedOperation) as err:
        f["R"].sparkSession.sql(query)
    message = str(err.value)
    assert name in message and instead in message and "Instead:" in message and "\n" not in message
    assert t.view("R") is f["R"] and spark.catalog.tableExists("R")  # a statement is refused, never run


@pytest.mark.parametrize("query", ["SELECT 'it''s' AS s, id FROM R", "SELECT id, log10(v) AS l FROM R", "SELECT id FROM R WHERE rand() < 0.5"])
def test_a_query_sqlglot_reads_otherwise_than_spark_is_refused(spark, query):
    """sqlglot reads 'it''s' as CONCAT('it', 's') and log10(x) as LOG(10, x), which Spark computes
    otherwise: the translation, made of sqlglot's text, would compute other values."""
    _, f = _tracker(spark)
    f["R"].createOrReplaceTempView("R")
    with pytest.raises(UnsupportedOperation, match="sqlglot reads otherwise than Spark") as err:
        f["R"].sparkSession.sql(query)
    assert "\n" not in str(err.value)


def test_a_view_replaced_by_plain_code_is_refused(spark):
    _, f = _tracker(spark)
    f["R"].createOrReplaceTempView("replaced_sql")
    local_frame(spark, *S[:2]).createOrReplaceTempView("replaced_sql")  # provenance off would read these rows
    with pytest.raises(UnsupportedOperation, match="whose Spark view a plain DataFrame replaced"):
        f["R"].sparkSession.sql("SELECT * FROM replaced_sql")


def test_parameters_and_global_views_are_refused(spark):
    _, f = _tracker(spark)
    f["R"].createOrReplaceTempView("r_params")
    with pytest.raises(UnsupportedOperation, match="SQL parameters"):
        f["R"].sparkSession.sql("SELECT * FROM r_params WHERE id = :x", args={"x": 1})
    for name in ("createGlobalTempView", "createOrReplaceGlobalTempView", "registerTempTable"):
        with pytest.raises(UnsupportedOperation, match=name):
            getattr(f["R"], name)


# ---------------------------------------------------------------------- in a workflow
SQL_WORKFLOW = '''
from lipspark.workflow import Module, Workflow, WorkflowDefinition

CARS = "CarId string, Model string, Price int"


def counts(Cars, Sold):
    Cars.createOrReplaceTempView("cars")
    Sold.createOrReplaceTempView("sold")
    return {"Counts": Cars.sparkSession.sql(
        "SELECT Model, count(*) AS n FROM cars WHERE Price > 100 "
        "AND NOT EXISTS (SELECT 1 FROM sold WHERE sold.CarId = cars.CarId) GROUP BY Model HAVING count(*) > 1")}


def build(p):
    m = Module("counts", inputs={"Cars": CARS, "Sold": "CarId string"}, outputs={"Counts": "Model string, n bigint"},
               keys={"Cars": ["CarId"], "Sold": ["CarId"]}, logic=counts)
    return Workflow("sqlcars", [m]).node("counts", "counts", input=True, output=True)


def inputs(spark, n, p):
    cars = [("C1", "Accord", 90), ("C2", "Civic", 120), ("C3", "Civic", 130), ("C4", "Accord", 150), ("C5", "Fit", 200),
            ("C6", None, 300), ("C7", None, 110), ("C8", "Civic", 140)]
    return {"counts": {"Cars": spark.createDataFrame(cars, CARS), "Sold": spark.createDataFrame([("C8",)], "CarId string")}}


DEFINITION = WorkflowDefinition("sqlcars", build, lambda spark, p: {}, inputs, params={"numExec": 1})
'''


def test_a_module_written_with_spark_sql_runs_with_provenance_on_off_and_deferred(spark, tmp_path):
    """The same module code runs on plain DataFrames and on annotated frames (the same stored
    rows), its output rows' polynomials are the cars counted (C8, sold, is a ⊖ node kept out), and
    a deferred run replays into the eager graph."""
    from lipspark.graph.index import GraphIndex
    from lipspark.semiring import tokens
    from lipspark.workflow import materialize, run
    from tests.workflow.test_execution import stored
    from tests.workflow.test_materialize import same_graph

    definition = tmp_path / "sqlcars.py"
    definition.write_text(SQL_WORKFLOW)
    on, off, deferred = (str(tmp_path / n) for n in ("on", "off", "deferred"))
    run(str(definition), graph_dir=on, spark=spark)
    run(str(definition), graph_dir=off, spark=spark, provenance=False)
    a, b = stored(spark, on), stored(spark, off)
    assert a == b and a[(1, "outputs", "counts", "Counts")] == Counter({("Civic", 2): 1, (None, 2): 1})
    g = GraphIndex.load(on)
    outs = g.nodes[(g.nodes["type"] == "o") & (g.nodes["kind"] == "p")]["id"]
    assert sorted(sorted(t for t in tokens(g.polynomial(int(o))) if t.startswith(("Cars:", "Sold:"))) for o in outs) == [
        ["Cars:C2", "Cars:C3"], ["Cars:C6", "Cars:C7"]]
    (kept_out,) = g.find(label="⊖")
    assert str(g.polynomial(kept_out)) == "Cars:C8·M_counts[1] ⊖ δ(M_counts[1]·Sold:C8)"  # the inputs, each · the invocation
    run(str(definition), graph_dir=deferred, spark=spark, capture="deferred")
    materialize(deferred, spark=spark)
    same_graph(GraphIndex.load(deferred), g)


def test_a_module_returning_the_sparksessions_sql_is_refused_with_provenance_on(spark, tmp_path):
    """The SparkSession's own sql reads the plain views: with provenance on, its plain result
    cannot be a module's output, and the error says how to query with annotations."""
    from pyspark.sql import SparkSession

    from lipspark.errors import WorkflowError
    from lipspark.workflow import Module, Workflow, WorkflowDefinition, run

    def logic(In):
        In.createOrReplaceTempView("plain_read_in")
        return {"Out": SparkSession.getActiveSession().sql("SELECT x FROM plain_read_in")}

    wf = Workflow("plainsql", [Module("m", inputs={"In": "x int"}, outputs={"Out": "x int"}, logic=logic)]).node("m", "m", input=True, output=True)
    definition = WorkflowDefinition("plainsql", lambda p: wf, lambda s, p: {}, lambda s, n, p: {"m": {"In": s.createDataFrame([(1,)], "x int")}})
    run(definition, graph_dir=str(tmp_path / "off"), spark=spark, provenance=False)  # plain code, plain data: fine
    with pytest.raises(WorkflowError, match=r"returned a plain DataFrame for 'Out'.*df\.sparkSession\.sql"):
        run(definition, graph_dir=str(tmp_path / "on"), spark=spark)
