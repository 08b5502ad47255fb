"""The graph builder records typed segments and writes exactly their JSON."""
from __future__ import annotations

import json

import pytest

from lipspark.capture.builder import GraphBuilder
from lipspark.errors import AnnotationError
from lipspark.vocabulary import Context, InvocationSegment, Segment
from lipspark.vocabulary.ids import MAX_SEGMENT, positional


def test_segments_are_numbered_in_order_and_recorded_once():
    b = GraphBuilder(5)
    seg = b.allocate()
    inv = InvocationSegment(seg, Context(module="m", node="n", execution=1, invocation=positional(5, 0)), label="m")
    assert b.record(inv) is inv and b.segments == [inv] and b.next_segment == 6
    with pytest.raises(AnnotationError, match="recorded twice"):
        b.record(inv)
    with pytest.raises(AnnotationError, match="carries tables"):
        b.record(InvocationSegment(b.allocate(), Context(), label="x"), members=None)  # type: ignore[arg-type]
    assert [s.seg for s in b.segments] == [5]


def test_too_many_segments_is_an_error():
    b = GraphBuilder(MAX_SEGMENT - 1)
    b.allocate()
    with pytest.raises(AnnotationError, match="too many provenance operations"):
        b.allocate()


def test_write_gives_each_segment_its_json_and_tables(tmp_path):
    b = GraphBuilder()
    segs = [InvocationSegment(b.allocate(), Context(module="m"), label=name) for name in ("m", "n")]
    for s in segs:
        b.record(s)
    manifest = b.write(str(tmp_path / "g"))
    on_disk = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert on_disk == manifest and manifest["format"] == "lipspark-graph"
    assert [{k: v for k, v in e.items() if k != "tables"} for e in manifest["segments"]] == [s.to_json() for s in segs]
    assert [Segment.from_json(e) for e in manifest["segments"]] == segs
    with pytest.raises(AnnotationError, match="non-empty"):
        b.write(str(tmp_path / "g"))


@pytest.mark.parametrize("split", [False, True])
def test_a_large_shared_table_is_written_by_every_partition_and_reads_back_the_same(spark, tmp_path, monkeypatch, split):
    import os

    from pyspark.sql import functions as F

    import lipspark.capture.builder as builder
    from lipspark import Tracker
    from lipspark.graph.index import GraphIndex

    if split:  # every shared table counts as large: one file per partition
        monkeypatch.setattr(builder, "SPLIT_BYTES", -1)
    t = Tracker(spark)
    r = t.annotate(spark.range(0, 400, numPartitions=4).select(F.col("id").alias("k"), (F.col("id") % 7).alias("g")), "R", key=["k"])
    out = r.groupBy("g").agg(F.sum("k").alias("s"), F.count("*").alias("n")).distinct()
    rows = sorted((tuple(x.row), x.annotation.factors) for x in out.collect_annotated())
    t.write(str(tmp_path / "g"))
    files = [f for f in os.listdir(tmp_path / "g" / "members") if f.endswith(".parquet")]
    assert (len(files) > 1) == split
    g, mem = GraphIndex.load(str(tmp_path / "g")), t.graph()
    assert sorted(g.ids.tolist()) == sorted(mem.ids.tolist()) and len(g.edge_frame()) == len(mem.edge_frame())
    assert all(str(g.polynomial(f[0])) == str(mem.polynomial(f[0])) for _, f in rows)


def test_the_size_estimate_counts_what_the_leaves_read_and_a_cache_once(spark, tmp_path):
    from functools import reduce

    from lipspark.capture.builder import _estimated_bytes

    path = str(tmp_path / "t")
    spark.range(0, 5000).selectExpr("id", "cast(id as string) s").write.parquet(path)
    scan = spark.read.parquet(path)
    on_disk = sum(f.stat().st_size for f in (tmp_path / "t").iterdir() if f.name.endswith(".parquet"))
    assert _estimated_bytes(scan) == on_disk  # a file scan: its files' bytes
    assert _estimated_bytes(scan.join(scan, "id")) == 2 * on_disk  # each scan of a plan counts (not the product)
    cached = scan.filter("id % 2 = 0").cache()
    try:
        union = reduce(lambda a, b: a.unionByName(b), [cached.select("id", "s") for _ in range(12)])
        assert _estimated_bytes(union) == on_disk  # a cache read by every branch: what it reads, once
    finally:
        cached.unpersist()
