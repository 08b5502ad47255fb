"""Helpers shared by the tests: multiset comparison of plain vs annotated results."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from lipspark import Tracker


def freeze(v: Any) -> Any:
    """A hashable, order-insensitive-for-bags form of a value (collect_list order is arbitrary)."""
    if hasattr(v, "asDict"):
        return tuple((k, freeze(x)) for k, x in v.asDict().items())
    if isinstance(v, (list, tuple)):
        return ("bag", tuple(sorted((freeze(x) for x in v), key=repr)))
    if isinstance(v, float):
        return round(v, 9)
    return v


def multiset(rows: list[Any]) -> Counter:
    return Counter(tuple(freeze(x) for x in r) for r in rows)


def run_both(spark, fn: Callable[..., Any], relations: dict[str, tuple[list[tuple], str, list[str] | None]]):
    """Run ``fn`` on plain DataFrames and on annotated frames; return (plain rows, annotated, tracker).

    ``relations`` maps a name to (rows, DDL schema, key).
    """
    plain = {n: spark.createDataFrame(rows, schema) for n, (rows, schema, _) in relations.items()}
    t = Tracker(spark)
    annotated = {n: t.annotate(spark.createDataFrame(rows, schema), n, key=key) for n, (rows, schema, key) in relations.items()}
    plain_out = fn(**plain)
    ann_out = fn(**annotated)
    return plain_out, ann_out, t


def assert_fidelity(plain_out, ann_out) -> None:
    assert ann_out.columns == plain_out.columns
    assert multiset(ann_out.collect()) == multiset(plain_out.collect())
