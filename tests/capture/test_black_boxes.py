"""Black boxes are recognised by identity, never by name, and recorded with their own operator."""
from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import Tracker, black_box
from lipspark.vocabulary import Context, GroupSegment, Op, RowNodeSegment, Segment
from tests.util import multiset

ROWS = ([(1, "a", 10), (2, "a", 20), (3, "b", 30)], "id int, k string, v int")


def _rownodes(t: Tracker) -> list[RowNodeSegment]:
    return [s for s, _ in t.builder.collect() if isinstance(s, RowNodeSegment)]


def test_a_plain_udf_named_like_a_black_box_stays_a_plain_udf(spark):
    def score(v):
        return None if v is None else v * 3

    bb = black_box(lambda v: v + 1, returnType=T.IntegerType(), name="score")  # unrelated, same name
    plain_udf = F.udf(score, T.IntegerType())
    df = spark.createDataFrame(*ROWS)
    t = Tracker(spark)
    r = t.annotate(df, "R", key=["id"])
    out = r.select("id", plain_udf("v").alias("s"))
    assert multiset(out.collect()) == multiset(df.select("id", plain_udf("v").alias("s")).collect())
    assert out.layout.values == () and _rownodes(t) == []
    # the black box itself is one, whatever else is called "score"
    boxed = r.select("id", bb("v").alias("s"))
    assert boxed.layout.values == ("s",)
    (seg,) = _rownodes(t)
    assert (seg.op, seg.label) == (Op.BLACK_BOX, "score")


def test_black_boxes_named_like_aggregates_are_black_boxes(spark):
    df = spark.createDataFrame(*ROWS)
    t = Tracker(spark, context=Context(module="m"))
    r = t.annotate(df, "R", key=["id"])
    boxes = {name: black_box(lambda v: v, returnType=T.IntegerType(), name=name) for name in ("Max", "Count", "Sum")}
    out = r.select("id", *[bb("v").alias(name.lower()) for name, bb in boxes.items()])
    assert sorted(out.layout.values) == ["count", "max", "sum"]
    rel = black_box(lambda d: d.groupBy("k").count(), r, name="Count")
    assert rel.columns == ["k", "count"]
    summed = r.groupBy("k").agg(F.sum("v").alias("s"))
    collected = t.builder.collect()
    rownodes = [s for s, _ in collected if isinstance(s, RowNodeSegment)]
    assert sorted((s.label, s.op) for s in rownodes) == [("Count", Op.BLACK_BOX), ("Max", Op.BLACK_BOX), ("Sum", Op.BLACK_BOX)]
    groups = [s for s, _ in collected if isinstance(s, GroupSegment)]
    assert [(g.op, g.label) for g in groups] == [(Op.BLACK_BOX, "Count"), (Op.DELTA, "δ")]
    assert [(a.op, a.column) for a in groups[1].aggregates] == [(Op.SUM, "s")]
    # every segment carries the tracker's context, and reads back the same from its JSON
    assert all(s.context == Context(module="m") for s, _ in collected)
    assert all(Segment.from_json(s.to_json()) == s for s, _ in collected)
    assert [r.s for r in sorted(summed.collect())] == [30, 30]


def test_relation_black_box_and_delta_in_the_manifest(spark, tmp_path):
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*ROWS), "R", key=["id"])
    black_box(lambda d: d.select("k"), r, name="keys").distinct().collect()
    manifest = t.write(str(tmp_path / "g"))
    metas = [(s["kind"], s["meta"].get("op"), s["meta"].get("label")) for s in manifest["segments"]]
    assert metas == [("base", None, None), ("group", "black_box", "keys"), ("group", "delta", "δ")]


def test_a_black_box_made_inline_and_dropped_is_still_recognised(spark):
    import gc

    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*ROWS), "R", key=["id"])
    col = black_box(lambda v: v * 2, returnType=T.IntegerType(), name="double")("v").alias("d")
    gc.collect()  # the BlackBoxFunction is gone; its column is not
    out = r.select("id", col)
    assert out.layout.values == ("d",)
    assert [(s.label, s.op) for s in _rownodes(t)] == [("double", Op.BLACK_BOX)]
    assert sorted(x.d for x in out.collect()) == [20, 40, 60]
