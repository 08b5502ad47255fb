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
