"""lipspark.session: the Spark sessions lipspark starts and shares."""
from __future__ import annotations

from lipspark.session import session_like


def test_a_session_like_another_has_its_settings_and_views_of_its_own(spark):
    spark.conf.set("spark.sql.caseSensitive", "true")  # set at run time: newSession() alone would lose it
    spark.createDataFrame([(1,)], "n int").createOrReplaceTempView("session_like_view")
    try:
        other = session_like(spark)
        assert other.conf.get("spark.sql.caseSensitive") == "true"
        assert other.sparkContext is spark.sparkContext
        assert not other.catalog.tableExists("session_like_view")
        other.createDataFrame([(2,)], "n int").createOrReplaceTempView("session_like_view")
        other.conf.set("spark.sql.caseSensitive", "false")
        assert [r[0] for r in spark.table("session_like_view").collect()] == [1]
        assert spark.conf.get("spark.sql.caseSensitive") == "true"
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
        spark.catalog.dropTempView("session_like_view")


def _round_trips(spark, build) -> int:
    """Py4J commands ``build()`` sends."""
    from py4j import clientserver

    sent = [0]
    orig = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        sent[0] += 1
        return orig(self, command)

    clientserver.ClientServerConnection.send_command = counting
    try:
        build()
    finally:
        clientserver.ClientServerConnection.send_command = orig
    return sent[0]


def test_without_call_sites_saves_round_trips_in_its_own_thread_only(spark):
    import threading

    from pyspark.errors import utils as pyspark_utils
    from pyspark.sql import functions as F

    from lipspark.session import without_call_sites

    df = spark.createDataFrame([(1, "a")], "n int, s string")

    def build():
        df.select(F.upper(F.col("s")), F.col("n") + F.lit(1), F.coalesce(F.col("n"), F.lit(0))).columns

    build()
    assert pyspark_utils.is_debugging_enabled() is True  # pyspark's default: each column function first tells the JVM its call site
    with_sites = _round_trips(spark, build)
    with without_call_sites():
        assert pyspark_utils.is_debugging_enabled() is False
        without = _round_trips(spark, build)
        with without_call_sites():  # nested
            assert pyspark_utils.is_debugging_enabled() is False
        assert pyspark_utils.is_debugging_enabled() is False
    assert pyspark_utils.is_debugging_enabled() is True
    assert without < with_sites, (without, with_sites)

    # per thread: another thread inside keeps this one's call sites; an error inside gives them back
    inside, go, seen = threading.Event(), threading.Event(), []

    def other():
        with without_call_sites():
            inside.set()
            go.wait(10)
            seen.append(pyspark_utils.is_debugging_enabled())

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    assert pyspark_utils.is_debugging_enabled() is True  # a probe beside a run leaves the run's call sites alone
    try:
        with without_call_sites():
            raise ValueError("module code failed")
    except ValueError:
        pass
    assert pyspark_utils.is_debugging_enabled() is True
    go.set()
    t.join()
    assert seen == [False]


def test_a_replay_runs_module_code_without_call_sites(monkeypatch):
    from pyspark.errors import utils as pyspark_utils

    import lipspark.workflow.replay as replay

    seen = []

    def fake(*args, **kwargs):
        seen.append(pyspark_utils.is_debugging_enabled())
        raise RuntimeError("stop here")

    monkeypatch.setattr(replay, "_replay", fake)
    store = type("S", (), {"capture": "deferred", "executions": [{}], "root": "/nonexistent", "meta": {"workflow": "w"},
                           "resolve": staticmethod(lambda p: "/nonexistent/lipspark-test-replay")})()
    workflow = type("W", (), {"nodes": {"m": None}})()
    monkeypatch.setattr(replay, "_Replayer", lambda *a: type("E", (), {"_release": lambda self: None, "builder": None})())
    try:
        replay.replay_invocation(store, 1, "m", "t", spark=None, workflow=workflow, layouts=[{}])
    except RuntimeError:
        pass
    assert seen == [False]


def test_jvm_options_from_the_environment_are_added_to_the_drivers(monkeypatch):
    from lipspark.session import JVM_OPTIONS_ENV, default_conf

    monkeypatch.setenv(JVM_OPTIONS_ENV, " -XX:TieredStopAtLevel=1 ")
    options = default_conf()["spark.driver.extraJavaOptions"].split()
    assert options[-1] == "-XX:TieredStopAtLevel=1" and options[0].startswith("-Dlog4j2.configurationFile=")
    monkeypatch.delenv(JVM_OPTIONS_ENV)
    assert "-XX:TieredStopAtLevel=1" not in default_conf()["spark.driver.extraJavaOptions"]
