"""Evaluating integrity checks (lipspark.workflow.verdicts): what a relation's write observes, what
is left to the job over the written files, and that an execution whose checks hold runs no job for
them (issue 18's cost target); the verdicts themselves are tested in test_checks.py."""
from __future__ import annotations

import os

from lipspark.workflow import Check, run
from lipspark.workflow import verdicts

HERE = os.path.dirname(__file__)
FIXTURE = os.path.join(HERE, "..", "fixtures", "checked.py")


def test_a_write_observes_the_checks_spark_can_and_leaves_the_others(spark, tmp_path):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(1, "x", 7), (-2, "y", 8), (3, None, 9)], "a int, b string, __lp_f0 int")
    checks = [Check("R", "positive", "a > 0"),                                    # 0: observed, 1 violation
              Check("R", "b known", lambda: F.col("b").isNotNull()),              # 1: observed, 1 violation
              Check("R", "rows", lambda: F.count("*") > 0, on="table"),           # 2: observed, holds
              Check("R", "unique", "count(DISTINCT a) = count(*)", on="table"),   # 3: DISTINCT: the job's
              Check("R", "all cols", lambda: F.length(F.to_json(F.struct("*"))) < 99),  # 4: sees columns through *
              Check("R", "hash", "hash(*) IS NOT NULL"),                          # 5: likewise
              Check("R", "wrong kind", "sum(a) > 0"),                             # 6: an aggregate as a row check
              Check("R", "product", "a * 2 < 100")]                               # 7: a product is no star
    observed, watch = verdicts.observe(df, checks)
    assert watch is not None and watch.indices == (0, 1, 2, 7)
    assert watch.metrics() == {}  # not written yet: nothing to read, the job would decide
    observed.write.parquet(str(tmp_path / "r"))
    assert watch.metrics() == {0: 1, 1: 1, 2: True, 7: 0}
    assert spark.read.parquet(str(tmp_path / "r")).count() == 3  # observing leaves the rows as they are


def test_no_check_spark_can_observe_gives_no_watch_and_no_line_on_stderr(spark, capfd):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(1,)], "a int")
    capfd.readouterr()
    text = Check("R", "u", "count(DISTINCT a) = 1", on="table")  # SQL text: PySpark's SQL context logger
    column = Check("R", "v", lambda: F.count_distinct("a") == 1, on="table")  # a Column: its DataFrame context logger
    assert verdicts.observe(df, [text, column]) == (df, None)
    assert "INVALID_OBSERVED_METRICS" not in capfd.readouterr().err  # expected here: the job evaluates them


def test_checks_that_hold_are_settled_by_the_write_and_the_job_gets_only_what_is_left(spark, tmp_path, monkeypatch):
    """The fixture's checks: 'some rows' and the row checks without violations never reach the job;
    'unique order' (DISTINCT) always does; a row check with violations does, for their positions."""
    sent: list[set[str]] = []
    prepare = verdicts.prepare

    def spy(spark, targets):
        sent.append({c.name for t in targets for c in t.checks})
        return prepare(spark, targets)

    monkeypatch.setattr(verdicts, "prepare", spy)
    run(FIXTURE, graph_dir=str(tmp_path / "s"), spark=spark, params={"bad": ["O1-3"]})
    # execution 1: O1-3's amount is negative, C3's region is '?' (in both executions)
    # execution 2: no bad amount, so 'positive amount' is settled by its count (0)
    assert sent[0] >= {"positive amount", "region known", "unique order"} and "some rows" not in sent[0]
    assert "positive amount" not in sent[1] and "some rows" not in sent[1] and "unique order" in sent[1]


def test_a_predicate_that_cannot_be_built_is_left_to_the_job_and_refusals_are_remembered(spark):
    df = spark.createDataFrame([(1,)], "a int")
    memo: dict = {}
    broken = Check("R", "broken", "a >>> 1")                            # SQL text that does not parse
    distinct = Check("R", "unique", "count(DISTINCT a) = 1", on="table")  # Spark refuses to observe it
    fine = Check("R", "positive", "a > 0")
    _, watch = verdicts.observe(df, [broken, distinct, fine], memo)
    assert watch is not None and watch.indices == (2,)
    assert memo[broken, 0] is None and memo[distinct, 1] is None  # the next write tries only the fine one


def test_quieting_the_context_loggers_leaves_pyspark_its_own_loggers(spark, monkeypatch):
    """Quieting must not register plain Loggers under PySpark's names: PySpark gets them back
    and calls them with its own keywords, so every later Spark error raised a TypeError instead
    (a crash culprit was reported as module code failing while it built its plan)."""
    import logging

    from pyspark.errors import AnalysisException
    from pyspark.logger import PySparkLogger
    from pyspark.sql import functions as F

    for name in verdicts._CONTEXT_LOGGERS:  # as in a fresh process, before PySpark logged anything
        monkeypatch.delitem(logging.Logger.manager.loggerDict, name, raising=False)
    with verdicts._quiet():
        pass
    assert all(isinstance(logging.getLogger(n), PySparkLogger) for n in verdicts._CONTEXT_LOGGERS)
    try:
        spark.range(1).select(F.col("nope")).collect()  # a DataFrame error PySpark logs with its query context
    except AnalysisException as err:
        assert "nope" in str(err)
