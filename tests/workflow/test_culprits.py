"""Crash culprits (issue 18): the rows and the operation that made an execution fail."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from lipspark import black_box
from lipspark.errors import ExecutionFailed
from lipspark.query.engine import Session
from lipspark.store import Store
from lipspark.vocabulary import FileRef, RelationDescriptor
from lipspark.workflow import Module
from lipspark.workflow.culprits import Read, explain_failure, find_culprits
from lipspark.workflow.definition import load_definition
from lipspark.workflow.execution import Executor

HERE = os.path.dirname(__file__)
CRASHING = os.path.join(HERE, "..", "fixtures", "crashing.py")


def _stored(root: str, ids: list[int], xs: list[int]) -> Read:
    """Relation R(id, x) stored as one Parquet file under ``root``."""
    d = os.path.join(root, "R")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "part-0.parquet")
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64())}), path)
    return Read("R", "input", RelationDescriptor("R", (FileRef.of(path, "R/part-0.parquet"),)), False)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(xs=st.lists(st.integers(-20, 20), min_size=1, max_size=25), m=st.integers(2, 5), r=st.integers(0, 4))
def test_the_culprits_are_exactly_the_rows_whose_guard_raises(spark, tmp_path_factory, xs, m, r):
    root = str(tmp_path_factory.mktemp("guard"))
    ids = list(range(len(xs)))
    read = _stored(root, ids, xs)

    def check(x):
        if x % m == r % m:
            raise ValueError(f"x={x}")
        return x * 2

    box = black_box(check, returnType=T.LongType(), name="check")
    module = Module("m", inputs={"R": "id bigint, x bigint"}, outputs={"Out": "id bigint, y bigint"}, keys={"R": ["id"]},
                    logic=lambda R: {"Out": R.select("id", box("x").alias("y"))})
    expected = {f"R:{i}" for i, x in zip(ids, xs) if x % m == r % m}  # by hand: the predicate on each row
    operation, exception, culprits, method = find_culprits(spark, module, [read], root, None)
    assert {c.polynomial for c in culprits} == expected
    if expected:
        assert method == "guard"
        assert operation.startswith("check called at") and "test_culprits.py" in operation
        assert exception.startswith("ValueError: x=")
        assert all(c.values["x"] % m == r % m for c in culprits)
    else:
        assert method == "none" and not culprits


def _executor(spark, root: str, params: dict, provenance: bool = True) -> tuple[Executor, object, dict]:
    definition = load_definition(CRASHING)
    p = definition.with_params(params)
    store = Store.create(root, definition.name, provenance, p, definition=CRASHING).lock()
    ex = Executor(spark, definition.build(p), store, provenance=provenance)
    ex.initialize(definition.initial_state(spark, p))
    return ex, definition, p


def test_a_failed_execution_keeps_a_report_leaves_the_store_unchanged_and_the_next_run_continues(spark, tmp_path):
    root = str(tmp_path / "g")
    ex, definition, p = _executor(spark, root, {"numOrders": 12, "failAt": 2})
    try:
        ex.execute(definition.inputs(spark, 1, p))
        before = open(os.path.join(root, "store.json")).read()
        with pytest.raises(ExecutionFailed) as info:
            ex.execute(definition.inputs(spark, 2, p))
        assert open(os.path.join(root, "store.json")).read() == before  # nothing committed
        assert not [n for n in os.listdir(os.path.join(root, "executions")) if n.startswith(".pending")]
        report = info.value.report
        assert (report.execution, report.node, report.committed, report.method) == (2, "price", 1, "guard")
        assert report.exception == "ValueError: no price rule for item I3"
        # execution 2's orders of item I3 (every 10th, from the 4th), each joined with Items:I3
        bad = [f"O2-{i}" for i in range(12) if i % 10 == 3]
        assert sorted(c.polynomial for c in report.culprits) == sorted(f"Orders:{o},I3,{1 + int(o[3:]) % 4}·Items:I3" for o in bad)
        assert all(c.stored.get("Items:I3") == "Items:I3" for c in report.culprits)  # committed: the store's own token
        assert "culprits   1 row" in str(info.value) and "cost called at" in str(info.value)
        # the next execution (without the bad item) continues the store as execution 2
        ex.execute(definition.inputs(spark, 3, p))
        assert len(Store.open(root).executions) == 2
    finally:
        ex.store.unlock()
    result = Session(root).run("culprits execution 2; culprits")
    assert result[0].rows == result[1].rows and [r["polynomial"] for r in result[0].rows] == [c.polynomial for c in report.culprits]
    assert "execution 2 failed in node price" in result[0].to_text()


def test_provenance_off_names_the_invocation_and_explain_failure_names_the_culprits(spark, tmp_path):
    root = str(tmp_path / "plain")
    ex, definition, p = _executor(spark, root, {"numOrders": 8, "failAt": 1}, provenance=False)
    try:
        with pytest.raises(ExecutionFailed) as info:
            ex.execute(definition.inputs(spark, 1, p))
    finally:
        ex.store.unlock()
    report = info.value.report
    assert (report.node, report.method, report.culprits) == ("price", "deferred", ())
    assert "--explain-failure" in str(info.value)
    explained = explain_failure(root, spark=spark)
    assert explained.method == "guard"
    assert [c.polynomial for c in explained.culprits] == ["Orders:O1-3,I3,4·Items:I3"]
    assert Store.open(root).executions == []


def test_a_raise_while_the_module_builds_its_plan_has_no_culprit_rows(spark, tmp_path):
    root = str(tmp_path / "plan")
    ex, definition, p = _executor(spark, root, {"numOrders": 4, "kind": "plan"})
    try:
        with pytest.raises(ExecutionFailed) as info:
            ex.execute(definition.inputs(spark, 1, p))
    finally:
        ex.store.unlock()
    report = info.value.report
    assert report.method == "plan" and report.culprits == ()
    assert report.exception == "ValueError: price: the pricing table is not configured"
    assert "crashing.py" in report.operation


@pytest.mark.slow
def test_an_ansi_cast_error_is_narrowed_to_the_rows_that_fail_alone(spark, tmp_path):
    root = str(tmp_path / "cast")
    ex, definition, p = _executor(spark, root, {"numOrders": 5, "kind": "cast", "failAt": 1})
    try:
        with pytest.raises(ExecutionFailed) as info:
            ex.execute(definition.inputs(spark, 1, p))
    finally:
        ex.store.unlock()
    report = info.value.report
    assert report.method == "narrowing" and report.exception.startswith("NumberFormatException: [CAST_INVALID_INPUT]")
    assert report.operation.startswith("cast at") and "crashing.py" in report.operation
    # the order of I3 (its quantity is "x") with every item whole, and item I3 with every order whole
    assert sorted(c.polynomial for c in report.culprits) == ["Items:I3", "Orders:O1-3,I3,x"]
