"""Helpers shared by the tests: multiset comparison of plain vs annotated results; the stores the
suite damages on purpose (every other store it writes must pass `lipspark check`)."""
from __future__ import annotations

import math
import os
import weakref
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
        return "NaN" if math.isnan(v) else round(v, 9)  # NaN != NaN: two rows of NaN are alike
    return v


def multiset(rows: list[Any]) -> Counter:
    return Counter(tuple(freeze(x) for x in r) for r in rows)


def local_frame(spark, rows: list, schema: str):
    """``rows`` (tuples in the order of the DDL ``schema``) as a DataFrame over a local relation
    (Spark Connect's and Scala's ``Seq(...).toDF``'s way), which the JVM reads by itself.

    ``spark.createDataFrame(rows, schema)`` makes a Python RDD: every Spark job over it starts
    Python workers to unpickle the rows, two to four times the cost of the job itself for the
    few rows a test has. Rows and types are the same (test_frame.py checks it).
    """
    from pyspark.sql.conversion import LocalDataToArrowConversion
    from pyspark.sql.pandas.types import to_arrow_schema

    struct = spark.createDataFrame([], schema).schema  # the DDL parsed as Spark does (no job)
    table = LocalDataToArrowConversion.convert(rows, struct, False) if rows else to_arrow_schema(struct).empty_table()
    return spark.createDataFrame(table, struct)


def run_both(spark, fn: Callable[..., Any], relations: dict[str, tuple[list[tuple], str, list[str] | None]]):
    """Run ``fn`` on plain DataFrames and on annotated frames; return (plain rows, annotated, tracker).

    ``relations`` maps a name to (rows, DDL schema, key).
    """
    plain = {n: local_frame(spark, rows, schema) for n, (rows, schema, _) in relations.items()}
    t = Tracker(spark)
    annotated = {n: t.annotate(local_frame(spark, rows, schema), n, key=key) for n, (rows, schema, key) in relations.items()}
    plain_out = fn(**plain)
    ann_out = fn(**annotated)
    return plain_out, ann_out, t


_GRAPHS: "weakref.WeakKeyDictionary[Tracker, tuple[int, Any]]" = weakref.WeakKeyDictionary()


def graph_of(t: Tracker) -> Any:
    """``t.graph()`` computed once per tracker and number of recorded segments (a tracker's graph
    changes only by recording segments): the helpers that read one tracker's graph several times
    in a test (strings, assert_reference, absent…) share one computation, a Spark job per table."""
    n = len(t.builder.segments)
    hit = _GRAPHS.get(t)
    if hit is None or hit[0] != n:
        hit = _GRAPHS[t] = (n, t.graph())
    return hit[1]


def assert_fidelity(plain_out, ann_out) -> None:
    assert ann_out.columns == plain_out.columns
    assert multiset(ann_out.collect()) == multiset(plain_out.collect())


#: Stores a test damaged on purpose (real paths): the session's final `lipspark check` skips them.
DAMAGED: set[str] = set()


def damaged(path: Any) -> str:
    """Declare the store at ``path`` damaged on purpose (returns the path as a string)."""
    DAMAGED.add(os.path.realpath(str(path)))
    return str(path)


def stores_failing_check(base: Any) -> list[str]:
    """`lipspark check` on every store under ``base`` (a directory with a ``store.json``; a deferred
    store's ``provenance/`` is checked with it) but those in :data:`DAMAGED`: every problem found."""
    from lipspark.store.check import check_store

    problems: list[str] = []
    for d, dirs, files in os.walk(str(base)):
        if "store.json" not in files:
            continue
        dirs[:] = []  # nothing nests in a store but its replay, which check_store checks
        if os.path.realpath(d) not in DAMAGED:
            problems += check_store(d).problems
    return problems


def value_form(value: Any) -> Any:
    """A comparable form of a v-node's expression (``GraphIndex.value``), in the reference
    evaluator's terms: an aggregate's normal form regrouped by the reference's values, a black box
    as its name and its arguments' expanded forms (a bag: sorted), a constant as its value."""
    from lipspark.semiring import AggValue, BlackBox, normal_form
    from tests import reference as ref

    if isinstance(value, AggValue):
        op, terms = value.normal_form()
        return ref.agg_normal_form(op, [(poly, v) for v, poly in terms])
    if isinstance(value, BlackBox):
        return ("black box", value.name, tuple(sorted(str(normal_form(a)) for a in value.args)))
    return ("constant", ref.norm_value(value))


def reference_form(value: Any) -> Any:
    """The reference's counterpart of :func:`value_form` (a black box of no members — an
    aggregate over no rows — is the constant it computes, as the graph has it)."""
    from tests import reference as ref

    if isinstance(value, ref.BlackBoxVal) and not value.args:
        return ("constant", ref.norm_value(value.result))
    return value.normal_form()


def predicted_rows(g: Any, rows: list[Any], what_if: Any) -> list[list[Any]]:
    """The rows a what-if predicts: the annotated ``rows`` it does not remove, each with the
    recomputed values of its valued columns (what a re-run without the deleted tuples gives,
    when the what-if says it is exact)."""
    changed = {c.node: c.after for c in what_if.values}
    out = []
    for row in rows:
        if what_if.removed[g.positions(row.annotation.factors)].any():
            continue
        values = list(row.row)
        for col, vid in row.annotation.values.items():
            if vid in changed:
                values[row.row.__fields__.index(col)] = changed[vid]
        out.append(values)
    return out
