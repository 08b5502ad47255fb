"""Stored relations are read with the schema Spark keeps in their files (no inference job)."""
from __future__ import annotations

import os
import threading

import pytest
from pyspark.sql import functions as F

from lipspark.session import run_concurrently
from lipspark.vocabulary import FileRef
from lipspark.workflow.relations import _spark_schema, read_stored


def _files(path: str) -> tuple[FileRef, ...]:
    return tuple(FileRef.of(os.path.join(path, n), n) for n in sorted(os.listdir(path)) if n.endswith(".parquet"))


def test_footer_schema_is_the_inferred_schema(spark, tmp_path):
    """Every kind of column a module or the rewrite writes: nested bags of structs, maps,
    decimals, timestamps, hidden annotation columns, nulls."""
    df = spark.createDataFrame([("a", 1, 2.5), ("b", None, None)], "k string, n int, x double").select(
        "k", "n", "x",
        F.array(F.struct(F.col("k").alias("d"), F.col("n").alias("p"))).alias("bag"),
        F.create_map(F.col("k"), F.col("n")).alias("m"),
        F.col("x").cast("decimal(12,3)").alias("dec"),
        F.to_timestamp(F.lit("2026-11-24 07:00:00")).alias("ts"),
        F.lit(7).cast("long").alias("__lp_f0"),
        F.lit(None).cast("long").alias("__lp_v_x"),
    )
    path = str(tmp_path / "rel")
    df.write.parquet(path)
    files = _files(path)
    assert _spark_schema(os.path.join(path, os.path.basename(files[0].path))) is not None
    read = read_stored(spark, path, files)
    inferred = spark.read.parquet(path)
    assert read.schema == inferred.schema
    assert sorted(read.collect()) == sorted(inferred.collect())
    assert read.select("_metadata.row_index").count() == 2  # file metadata still there for positions


def test_files_without_a_spark_schema_are_inferred(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "plain"
    path.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", None]}), str(path / "part-0.parquet"))
    files = _files(str(path))
    assert _spark_schema(str(path / "part-0.parquet")) is None
    assert sorted(read_stored(spark, str(path), files).collect()) == sorted(spark.read.parquet(str(path)).collect())


def test_run_concurrently_keeps_order_and_waits_for_every_action():
    gate, done = threading.Event(), []

    def slow() -> str:
        gate.wait(5)
        done.append("slow")
        return "slow"

    def failing() -> str:
        gate.set()
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_concurrently([slow, failing, lambda: "fast"])
    assert done == ["slow"]  # the error came after the slow action had finished
    assert run_concurrently([lambda: 1, lambda: 2, lambda: 3], workers=2) == [1, 2, 3]
