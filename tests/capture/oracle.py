"""The deletion oracle for an aggregation's output (pivot, grouping sets): a what-if that deletes
base tuples predicts the rows that survive and their recomputed values; a re-run of the same
code without those tuples must give exactly those rows (a multiset: rows of a rollup's levels
may look alike)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from lipspark import Tracker
from lipspark.query.deletion import UNKNOWN, delete
from tests import reference as ref
from tests.util import local_frame


def predicted_and_rerun(spark, fn: Callable[[Any], Any], rel: tuple[list, str, list[str]], deleted: list[str]) -> tuple[Counter, Counter, Any]:
    """(the rows a what-if deleting ``deleted`` predicts, the rows a re-run without them gives, the
    deletion result) for ``fn`` over the relation ``rel`` (rows, DDL schema, key), as ``R``."""
    rows, schema, key = rel
    t = Tracker(spark)
    out = fn(t.annotate(local_frame(spark, rows, schema), "R", key=key))
    captured = out.collect_annotated()
    g = t.graph()
    what_if = delete(g, [g.token_id(x) for x in deleted])
    changed = {c.node: c.after for c in what_if.values}
    predicted: Counter = Counter()
    for row in captured:
        if what_if.removed[g.positions(row.annotation.factors)].any():
            continue
        data = []
        for c, v in zip(out.columns, row.row):
            node = row.annotation.values.get(c)
            after = changed.get(node, v) if node is not None else v  # unchanged: the value shown (the node's, tested apart)
            assert after is not UNKNOWN, f"{c}: unknown after deleting {deleted}"
            data.append(ref.norm_value(after))
        predicted[tuple(data)] += 1
    kept = [r for r in rows if f"R:{r[0]}" not in deleted]
    rerun = Counter(tuple(ref.norm_value(v) for v in r) for r in fn(local_frame(spark, kept, schema)).collect())
    return predicted, rerun, what_if
