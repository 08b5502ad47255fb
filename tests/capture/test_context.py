"""Every segment carries its context explicitly; trackers do not mix; frames are immutable."""
from __future__ import annotations

import os

import pytest

from lipspark import Tracker, get_spark
from lipspark.errors import AnnotationError
from lipspark.store import Store, read_json
from lipspark.vocabulary import BaseSegment, Context, InvocationSegment, Segment
from lipspark.vocabulary.ids import FINE_BASE, FINE_BITS, is_fine, positional

ROWS = ([(1, "a"), (2, "b")], "id int, k string")


def test_frames_of_different_trackers_do_not_mix(spark):
    a, b = Tracker(spark), Tracker(spark)
    ra = a.annotate(spark.createDataFrame(*ROWS), "R", key=["id"])
    rb = b.annotate(spark.createDataFrame(*ROWS), "S", key=["id"])
    with pytest.raises(AnnotationError, match="different trackers"):
        ra.join(rb, "id")
    with pytest.raises(AnnotationError, match="different trackers"):
        ra.union(rb)


def test_annotated_frames_are_immutable(spark):
    r = Tracker(spark).annotate(spark.createDataFrame(*ROWS), "R", key=["id"])
    with pytest.raises(AttributeError, match="immutable"):
        r._layout = None  # type: ignore[misc]
    assert r.select("k").layout.k == 1 and r.columns == ["id", "k"]


def test_each_invocation_records_in_its_own_context(ledger_runs):
    on, _ = ledger_runs
    store = Store.open(on)
    initial = [Segment.from_json(m) for m in read_json(os.path.join(on, "initial", "graph", "manifest.json"), "")["segments"]]
    assert initial and all(isinstance(s, BaseSegment) and s.context == Context(module="ledger") for s in initial)
    for e in store.executions:
        manifest = read_json(os.path.join(on, e["dir"], "graph", "manifest.json"), "")
        segs = [Segment.from_json(m) for m in manifest["segments"]]
        first, end = e["segments"]
        invocations = {s.context.node: s for s in segs if isinstance(s, InvocationSegment)}
        assert sorted(invocations) == ["intake", "ledger", "report"]
        fine_ranges = set()
        for s in segs:
            inv = invocations[s.context.node]
            assert s.context == Context(inv.label, inv.context.node, e["n"], positional(inv.seg, 0))
            if is_fine(s.seg):  # an operation of module code: numbered in its invocation's own range
                fine_ranges.add((s.context.node, (s.seg - FINE_BASE) >> FINE_BITS))
            else:  # the invocation's coarse segments: the execution's block
                assert first <= s.seg < end
        assert len(fine_ranges) == len({node for node, _ in fine_ranges}) == len({r for _, r in fine_ranges})


def test_get_spark_leaves_an_existing_sessions_log_level_alone(spark):
    root = spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    spark.sparkContext.setLogLevel("WARN")
    try:
        assert get_spark() is spark
        assert str(root.getLevel().toString()) == "WARN"
    finally:
        spark.sparkContext.setLogLevel("ERROR")
