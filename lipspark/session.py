"""The SparkSession lipspark runs on: embedded local Spark by default, any cluster by URL.

>>> from lipspark.session import default_conf
>>> default_conf()["spark.ui.enabled"]
'false'
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["get_spark", "default_conf"]


def default_conf(shuffle_partitions: int = 4) -> dict[str, str]:
    """Settings for a small, quiet embedded Spark (local[2], UI off, few shuffle partitions)."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": "2",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": "4g",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.compression.codec": "zstd",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }


def get_spark(
    master: str | None = None,
    *,
    app_name: str = "lipspark",
    shuffle_partitions: int = 4,
    conf: dict[str, str] | None = None,
) -> "SparkSession":
    """Return (creating if needed) the SparkSession lipspark uses.

    Parameters
    ----------
    master
        Spark master URL; ``None`` means embedded ``local[2]`` (or ``$LIPSPARK_MASTER``).
    app_name
        Application name shown by the cluster manager.
    shuffle_partitions
        ``spark.sql.shuffle.partitions``; small values suit one machine.
    conf
        Extra Spark settings, applied last.

    A session that already exists (the user's own, say) is returned as it is: its log level is
    quieted to ``ERROR`` only when this call creates the session.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    existed = SparkContext._active_spark_context is not None  # someone else's Spark: leave its settings alone
    builder = SparkSession.builder.master(master or os.environ.get("LIPSPARK_MASTER", "local[2]"))
    builder = builder.appName(app_name)
    for key, value in {**default_conf(shuffle_partitions), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not existed:
        spark.sparkContext.setLogLevel("ERROR")
    return spark
