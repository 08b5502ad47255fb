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
