"""Graph directories on disk: the shared tables of version 2 and the per-segment directories of
version 1 read as the same segments, each shared table read once; version 3 is written exactly
for graphs with the aggregates a version-2 reader would misread."""
from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lipspark.errors import StoreError
from lipspark.graph.stats import graph_stats
from lipspark.store.manifest import TableReader, read_manifest, read_segments
from lipspark.vocabulary import AggregateSpec, Context, GroupSegment, Op, RowNodeSegment
from lipspark.vocabulary.segments import FORMAT_VERSION
from tests.store.graphs import record

HERE = os.path.dirname(__file__)
#: A graph written by the version-1 writer (lipspark before the shared tables) from
#: :func:`tests.store.graphs.record` (how: that module's docstring).
FIXTURE_V1 = os.path.join(HERE, "..", "fixtures", "graph-v1")

def _counts(path):
    stats = graph_stats(path)
    return stats.nodes, stats.edges


def _parquet_files(path):
    return sorted(os.path.relpath(os.path.join(root, f), path) for root, _, files in os.walk(path) for f in files if f.endswith(".parquet"))


def test_a_graph_in_shared_tables_is_the_graph_of_version_1(spark, tmp_path):
    """The same operations written now and by the version-1 writer (the fixture) expand to the
    same nodes and edges, and both to the graph computed in memory; one file per table kind."""
    from lipspark import Tracker
    from lipspark.graph.index import GraphIndex

    t = Tracker(spark)
    record(spark, t)
    path = str(tmp_path / "g")
    manifest = t.write(path)
    # a copy: loading a graph indexes it, and the suite writes nothing into the source tree
    v1 = shutil.copytree(FIXTURE_V1, str(tmp_path / "v1"), ignore=shutil.ignore_patterns("index"))
    assert manifest["version"] == FORMAT_VERSION == 2
    files = _parquet_files(path)
    assert [os.path.dirname(f) for f in files if not f.startswith("seg-")] == ["members", "nodes"], files
    entries = [e for s in manifest["segments"] for n, e in s.get("tables", {}).items() if n != "tuples"]
    assert entries and all(e["seg_column"] == "seg" and e["path"] in ("members", "nodes") for e in entries)

    old = GraphIndex.load(v1)
    new = GraphIndex.load(path)
    assert read_manifest(v1)["version"] == 1
    assert new.same_as(old) and new.same_as(t.graph())
    assert len(new) > 40 and new.num_edges > 40
    assert _counts(path) == _counts(v1) == (len(new), new.num_edges)
    assert graph_stats(path).bytes < graph_stats(v1).bytes
    # the segments, table by table: the same rows; version 1 also carried the other segments'
    # (null) typed argument columns, version 2 only the segment's own
    for (s1, t1), (s2, t2) in zip(read_segments(v1, read_manifest(v1)), read_segments(path, manifest)):
        assert s1 == s2 and set(t1) == set(t2)
        for name in t1:
            a, b = t1[name], t2[name]
            if a.num_rows == 0:  # version 1 wrote no file: the columns are unknown
                assert b.num_rows == 0
                continue
            assert not [c for c in b.column_names if c not in a.column_names]
            assert a.select(b.column_names).schema == b.schema, (s1, name)
            # the same rows (their order within a segment can come from a shuffle); NaN equals NaN here
            key = [c for c in b.column_names if c != "children"]
            a_rows, b_rows = (x.to_pandas().sort_values(key, ignore_index=True) for x in (a.select(b.column_names), b))
            assert a_rows.equals(b_rows), (s1, name)


def _write(path, name, table):
    os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
    pq.write_table(table, os.path.join(path, name))


def _manifest(path, version, segments):
    with open(os.path.join(path, "manifest.json"), "w") as fh:
        json.dump({"format": "lipspark-graph", "version": version, "segments": segments}, fh)


SUM = GroupSegment(3, Context(), aggregates=(AggregateSpec(Op.SUM, 0, "t"),))
CNT = GroupSegment(5, Context(), aggregates=(AggregateSpec(Op.COUNT, 0, "n"),))
EMPTY = GroupSegment(7, Context(), aggregates=(AggregateSpec(Op.MAX, 0, "hi"),), group=99)
BOX = RowNodeSegment(9, Context(), label="f")


def test_a_shared_table_is_read_once_and_split_by_segment(tmp_path, monkeypatch):
    """Rows of several segments in any order; a segment's typed argument column mapped back,
    the others' dropped; a segment without rows is empty with its columns."""
    path = str(tmp_path)
    _write(path, "members/part-0.parquet", pa.table({
        "seg": pa.array([5, 3, 5, 3, 5], pa.int32()),
        "g": pa.array([50, 30, 50, 31, 51], pa.int64()), "m": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "x0_double": pa.array([None, 1.5, None, None, None], pa.float64()),
        "x0_string": pa.array(["a", None, "b", None, None], pa.string()),
        "x0_bigint": pa.array([None, None, None, None, None], pa.int64())}))
    _write(path, "nodes/part-0.parquet", pa.table({
        "seg": pa.array([9], pa.int32()), "id": pa.array([90], pa.int64()),
        "children": pa.array([[1, 2]], pa.list_(pa.int64())), "value": pa.array(['{"v": 1}'])}))
    shared = {"path": "members", "seg_column": "seg"}
    _manifest(path, 2, [
        {**SUM.to_json(), "tables": {"members": {**shared, "columns": {"x0_double": "x0"}}}},
        {**CNT.to_json(), "tables": {"members": {**shared, "columns": {"x0_string": "x0"}}}},
        {**EMPTY.to_json(), "tables": {"members": {**shared, "columns": {"x0_bigint": "x0"}}}},
        {**BOX.to_json(), "tables": {"nodes": {"path": "nodes", "seg_column": "seg", "columns": {}}}},
    ])
    reads = []
    import pyarrow.parquet as pq  # imported by the reader when it reads (a query never does)

    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda f, *a, **k: reads.append(f) or real(f, *a, **k))
    segs = read_segments(path, read_manifest(path))
    assert sorted(os.path.relpath(f, path) for f in reads) == ["members/part-0.parquet", "nodes/part-0.parquet"]
    tables = {s.seg: t for s, t in segs}
    assert tables[3]["members"].to_pydict() == {"g": [30, 31], "m": [2, 4], "x0": [1.5, None]}
    assert tables[5]["members"].to_pydict() == {"g": [50, 50, 51], "m": [1, 3, 5], "x0": ["a", "b", None]}
    empty = tables[7]["members"]
    assert empty.num_rows == 0 and empty.schema == pa.schema([("g", pa.int64()), ("m", pa.int64()), ("x0", pa.int64())])
    assert tables[9]["nodes"].to_pydict() == {"id": [90], "children": [[1, 2]], "value": ['{"v": 1}']}
    # counted from the same tables: segment 3 (2 groups, a Sum, 1 member with an argument),
    # 5 (2 groups, a Count, 2 of 3 members with an argument), 7 (the keyless group and its Max), 9
    assert _counts(path) == (6 + 8 + 2 + 1, 5 + 9 + 0 + 2)


def test_a_version_1_graph_reads_segment_by_segment(tmp_path):
    """Version 1: a directory per segment, a segment without rows an empty directory."""
    path = str(tmp_path)
    _write(path, "members/seg=3/part-0.parquet", pa.table({
        "g": pa.array([30, 31], pa.int64()), "m": pa.array([2, 4], pa.int64()),
        "x0_double": pa.array([1.5, None], pa.float64()), "x0_bigint": pa.array([None, None], pa.int64())}))
    os.makedirs(os.path.join(path, "members", "seg=7"))
    _manifest(path, 1, [
        {**SUM.to_json(), "tables": {"members": {"path": "members/seg=3", "columns": {"x0_double": "x0"}}}},
        {**EMPTY.to_json(), "tables": {"members": {"path": "members/seg=7", "columns": {"x0_bigint": "x0"}}}},
    ])
    tables = {s.seg: t for s, t in read_segments(path, read_manifest(path))}
    assert tables[3]["members"].select(["g", "m", "x0"]).to_pydict() == {"g": [30, 31], "m": [2, 4], "x0": [1.5, None]}
    assert tables[7]["members"].num_rows == 0 and {"g", "m"} <= set(tables[7]["members"].column_names)
    assert TableReader(path).read(7, {"path": "members/seg=7"}) is None
    assert _counts(path) == (6 + 2, 5 + 0)


def test_a_missing_shared_table_or_another_version_is_refused(tmp_path):
    path = str(tmp_path)
    _manifest(path, 2, [{**SUM.to_json(), "tables": {"members": {"path": "members", "seg_column": "seg", "columns": {}}}}])
    with pytest.raises(StoreError, match="corrupt: table members cannot be read"):
        read_segments(path, read_manifest(path))
    _write(path, "members/part-0.parquet", pa.table({"g": pa.array([1], pa.int64()), "m": pa.array([1], pa.int64())}))
    with pytest.raises(StoreError, match="no column 'seg'"):
        read_segments(path, read_manifest(path))
    _manifest(path, 6, [])
    with pytest.raises(StoreError, match="format version 6; this lipspark reads 1, 2, 3, 4 and 5"):
        read_manifest(path)


def test_a_graph_is_version_4_exactly_when_it_has_a_formula_or_a_filters_tests(spark, tmp_path):
    """Formulas over aggregates and a filter's per-row tests (with the · p-nodes of the rows it
    kept) are what a version-3 reader would refuse or misread: 4 then, and read back the same."""
    from lipspark import Tracker
    from lipspark.graph.index import GraphIndex
    from pyspark.sql import functions as F

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, "a", 2), (2, "a", 5), (3, "b", None)], "id int, k string, v int"), "R", key=["id"])
    r.groupBy("k").agg(F.countDistinct("v").alias("d")).collect_annotated()
    assert t.write(str(tmp_path / "three"))["version"] == 3
    r.groupBy("k").agg((F.sum("v") / F.count("*")).alias("mean")).collect_annotated()
    path = str(tmp_path / "formula")
    assert t.write(path)["version"] == 4 and GraphIndex.load(path).same_as(t.graph())
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, "a", 2), (2, "a", 5), (3, "b", None)], "id int, k string, v int"), "R", key=["id"])
    r.groupBy("k").agg(F.sum("v").alias("s")).filter(F.col("s") > 3).collect_annotated()
    path = str(tmp_path / "filter")
    manifest = t.write(path)
    assert manifest["version"] == 4 and GraphIndex.load(path).same_as(t.graph())
    assert any(s["kind"] == "rownode" and s["meta"]["kind"] == "p" for s in manifest["segments"])


def test_a_graph_is_version_5_exactly_when_it_has_group_memberships_over_values(spark, tmp_path):
    """A group-by on a count records each member's ``in_group`` node, an operator a version-4
    reader does not know: 5 then, and read back the same."""
    from lipspark import Tracker
    from lipspark.graph.index import GraphIndex
    from pyspark.sql import functions as F

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, "a", 2), (2, "a", 5), (3, "b", None)], "id int, k string, v int"), "R", key=["id"])
    per = r.groupBy("k").agg(F.count("v").alias("n"))
    per.collect_annotated()
    assert t.write(str(tmp_path / "plain"))["version"] == 2
    per.groupBy("n").agg(F.count("*").alias("d")).collect_annotated()
    path = str(tmp_path / "regroup")
    manifest = t.write(path)
    assert manifest["version"] == 5 and GraphIndex.load(path).same_as(t.graph())
    assert any(s["kind"] == "rownode" and s["meta"]["op"] == "in_group" for s in manifest["segments"])


def test_a_graph_is_version_3_exactly_when_it_has_aggregates_a_version_2_reader_would_misread(spark, tmp_path):
    from lipspark import Tracker
    from lipspark.graph.index import GraphIndex
    from pyspark.sql import functions as F

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, "a", 2), (2, "a", 2), (3, "b", None)], "id int, k string, v int"), "R", key=["id"])
    r.groupBy("k").agg(F.sum("v").alias("s")).collect_annotated()
    assert t.write(str(tmp_path / "plain"))["version"] == 2
    r.groupBy("k").agg(F.countDistinct("v").alias("d")).collect_annotated()
    path = str(tmp_path / "distinct")
    manifest = t.write(path)
    assert manifest["version"] == 3 and GraphIndex.load(path).same_as(t.graph())
    assert [n for s in manifest["segments"] for n in s.get("tables", {})].count("values") == 0  # no black box
    r.agg(F.stddev("v").alias("sd")).collect_annotated()
    path = str(tmp_path / "black-box")
    assert "values" in t.write(path)["segments"][-1]["tables"] and GraphIndex.load(path).same_as(t.graph())
