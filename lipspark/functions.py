"""Helpers module code imports so it runs unchanged with provenance on or off.

The aggregate functions are PySpark's own (the rewrite recognises them in the analyzed plan);
``cogroup`` and ``black_box`` dispatch on whether they get plain DataFrames or annotated
frames.

>>> from lipspark import functions as lf
>>> lf.count is not None and callable(lf.cogroup)
True
"""
from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import DataFrame
from pyspark.sql.functions import avg, col, collect_list, count, explode, explode_outer, lit, max, mean, min, sum

from lipspark.blackbox import black_box
from lipspark.capture.rules.cogroup import cogroup_annotated, cogroup_plain
from lipspark.errors import AnnotationError
from lipspark.frame import AnnotatedFrame

__all__ = [
    "avg", "col", "collect_list", "count", "explode", "explode_outer", "lit", "max", "mean", "min", "sum",
    "black_box", "cogroup",
]


def cogroup(key: "str | Sequence[str]", **relations: Any) -> Any:
    """Pig's COGROUP: one row per key value with one nested bag per relation.

    Parameters
    ----------
    key
        Column name(s) present in every relation.
    **relations
        ``Name=frame``; the output has the key columns, then a column ``Name`` per relation
        holding the bag (array of row structs) of that relation's rows with the key value.

    With annotated frames, each output row's p-node is δ over every member of every bag, and
    the members keep their own provenance (they reappear when the bag is exploded).
    """
    keys = [key] if isinstance(key, str) else list(key)
    if not relations:
        raise AnnotationError("cogroup needs at least one relation: cogroup('Model', Requests=req, Cars=cars)")
    for name, df in relations.items():
        missing = [k for k in keys if k not in df.columns]
        if missing:
            raise AnnotationError(f"cogroup: relation {name!r} lacks key columns {missing}; it has {list(df.columns)}")
    frames = list(relations.values())
    if all(isinstance(f, DataFrame) for f in frames):
        return cogroup_plain(keys, relations)
    if not all(isinstance(f, AnnotatedFrame) for f in frames):
        raise AnnotationError("cogroup got a mix of plain DataFrames and annotated frames; annotate every input or none")
    return cogroup_annotated(keys, relations)
