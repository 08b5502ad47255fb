"""A class-data archive for the JVM lipspark starts: Spark to a first answer 1.6× faster.

Every command that runs Spark (``lipspark run``, a replay on demand, ``make test``) starts a JVM
that loads and verifies some 15,000 of Spark's classes before its first job: about 8 s of a
one-invocation replay's 45 on this project's 2-core machine. Java's class-data sharing (CDS,
JDK 13+) keeps those classes in a file mapped at start instead. ``python -m
lipspark.class_archive`` builds that file once (``make`` does it when it installs): it starts
Spark with ``-XX:ArchiveClassesAtExit``, runs a few small jobs of the kinds lipspark runs
(Parquet, joins, aggregates, windows, hashes), stops, and the JVM writes the classes it loaded
as it exits. :func:`~lipspark.session.get_spark` then starts its JVM with
``-XX:SharedArchiveFile`` when the file is there (docs/benchmarks.md, "Starting Spark").

The archive is an optimization, never a dependency: the JVM checks it against its own build and
class path and ignores one that does not match (another JDK, another pyspark: its warning is
silenced unless ``verbose``), and without it Spark starts as it always did. It lives beside the
environment's packages (``<prefix>/share/lipspark/``), named after the pyspark version;
``LIPSPARK_CLASS_ARCHIVE`` names another file, or ``off`` turns it off
(:func:`~lipspark.session.archive_path`).

>>> archive_path().endswith(".jsa") or archive_path() == ""
True
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

from lipspark.session import ARCHIVE_ENV, archive_path

__all__ = ["build", "main"]

def _workload(spark: Any) -> None:
    """Small jobs touching what lipspark's jobs touch, so their classes are archived."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with tempfile.TemporaryDirectory(prefix="lipspark-cds-") as tmp:
        s: Any = spark
        a = s.createDataFrame([(i, f"k{i % 7}", float(i) / 3) for i in range(200)], "id long, k string, v double")
        a.coalesce(1).sortWithinPartitions("id").write.parquet(os.path.join(tmp, "a"))
        b = s.read.parquet(os.path.join(tmp, "a")).select("*", F.input_file_name().alias("f"),
                                                          F.monotonically_increasing_id().alias("m"))
        j = b.join(a.withColumnRenamed("v", "w"), ["id", "k"]).withColumn("h", F.xxhash64("id", F.col("k").isNull()))
        g = j.groupBy("k").agg(F.count("*"), F.sum("v"), F.max("w"), F.avg("v"), F.collect_list("h"), F.countDistinct("id"))
        w = j.withColumn("r", F.row_number().over(Window.partitionBy("k").orderBy("id")))
        g.unionByName(g).distinct().write.parquet(os.path.join(tmp, "g"))
        w.filter(F.col("r") < 3).select(F.to_json(F.struct("k", "h"))).toPandas()
        s.read.parquet(os.path.join(tmp, "g")).cache().count()
        a.join(b, "id", "left_anti").collect()


def build(path: str | None = None, *, quiet: bool = False) -> str:
    """Build the archive at ``path`` (default :func:`archive_path`) in this process, which must
    not have started Spark yet; return the path. The file appears whole or not at all."""
    from pyspark import SparkContext

    from lipspark.session import default_conf, get_spark

    target = path or archive_path()
    if not target:
        raise ValueError(f"the class archive is turned off ({ARCHIVE_ENV}=off)")
    if SparkContext._active_spark_context is not None:
        raise RuntimeError("build the class archive in a process that has not started Spark (python -m lipspark.class_archive)")
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    start = time.perf_counter()
    quiet_log = default_conf(archive=False)["spark.driver.extraJavaOptions"]
    spark = get_spark(app_name="lipspark-class-archive",
                      conf={"spark.driver.extraJavaOptions": f"{quiet_log} -XX:ArchiveClassesAtExit={tmp} -Xlog:cds=off -Xlog:cds+dynamic=off"})
    try:
        _workload(spark)
    finally:
        spark.stop()
        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
        if proc is not None:  # the JVM exits at the end of its standard input, writing the archive
            proc.stdin.close()
            proc.wait(timeout=600)
    if not os.path.isfile(tmp):
        raise RuntimeError(f"the JVM wrote no class archive at {tmp}")
    os.replace(tmp, target)
    if not quiet:
        print(f"class archive for Spark's start: {target} ({os.path.getsize(target) / 2**20:.0f} MB, "
              f"{time.perf_counter() - start:.0f}s)")
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m lipspark.class_archive [--quiet]``: build the archive; an environment
    without Java or with the archive turned off gets a one-line note, not an error (Spark
    starts without it)."""
    args = sys.argv[1:] if argv is None else argv
    quiet = "--quiet" in args
    if not archive_path():
        print(f"class archive turned off ({ARCHIVE_ENV}=off): Spark starts without it")
        return 0
    try:
        build(quiet=quiet)
    except Exception as err:  # the archive is an optimization: say why there is none, go on
        print(f"no class archive for Spark's start ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); Spark starts without it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
