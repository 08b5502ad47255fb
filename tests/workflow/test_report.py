"""The table a run ends with: every figure checked against the store it describes."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lipspark.graph.index import GraphIndex
from lipspark.store import Store
from lipspark.workflow import Module, Workflow
from lipspark.workflow.execution import relation_frame
from lipspark.workflow.report import invocation_reports, module_table, why_empty
from tests.conftest import CAR_PARAMS, CARS


def _workflow():
    w = Workflow("w", [Module("a", inputs={"X": "x int"}, outputs={"Y": "x int"}, logic=lambda X: {"Y": X}),
                       Module("b", inputs={"Y": "x int"}, outputs={"Z": "x int"}, state={"S": "x int"}, logic=lambda Y, S: {"Z": Y}),
                       Module("c", inputs={"Z": "x int"}, outputs={"R": "x int"}, logic=lambda Z: {"R": Z})])
    return w.node("a", "a", input=True).node("b", "b").node("c", "c", output=True).edge("a", "b", "Y").edge("b", "c", "Z").validate()


class _Store:
    def __init__(self, root):
        self.root = root

    def resolve(self, rel):
        return os.path.join(self.root, rel)


def _desc(root, name, rows):
    path = f"{name}.parquet"
    pq.write_table(pa.table({"x": pa.array(range(rows), pa.int32())}), os.path.join(root, path))
    return {"files": [{"path": path}]}


def test_an_empty_output_is_traced_back_to_the_invocation_that_returned_nothing(tmp_path):
    root, w = str(tmp_path), _workflow()
    record = {"inputs": {"a": {"X": _desc(root, "x", 3)}}, "state": {"b": {"S": _desc(root, "s", 2)}},
              "outputs": {"a": {"Y": _desc(root, "y", 3)}, "b": {"Z": _desc(root, "z", 0)}, "c": {"R": _desc(root, "r", 0)}}}
    assert why_empty(_Store(root), w, record, "c", "R") == "c got no Z rows from b; b returned no Z rows from 3 input row(s) and 2 state row(s)"
    record["inputs"]["a"]["X"] = _desc(root, "x0", 0)
    record["outputs"]["a"]["Y"] = _desc(root, "y0", 0)
    assert why_empty(_Store(root), w, record, "c", "R") == "c got no Z rows from b; b got no Y rows from a; a's workflow input X was empty"
    rows = invocation_reports(_Store(root), w, record, {"a": 0.5}, None)
    assert [(r.node, r.rows_in, r.rows_out, r.state_rows, r.graph_nodes, r.seconds) for r in rows] == [
        ("a", 0, 0, 0, None, 0.5), ("b", 0, 0, 2, None, None), ("c", 0, 0, 0, None, None)]
    assert module_table(rows).splitlines()[0].split() == ["node", "rows", "in", "rows", "out", "state", "rows", "time"]  # no graph: no column


def test_the_run_summary_has_every_invocation_with_figures_from_its_store(car_runs, spark):
    on, off = car_runs
    for summary in (on, off):
        store = Store.open(summary.store)
        record = store.executions[-1]
        from lipspark.workflow import load_definition

        d = load_definition(CARS)
        w = d.build(d.with_params(CAR_PARAMS))
        assert [r.node for r in summary.invocations] == w.topological_order()
        for r in summary.invocations:
            assert r.rows_out == sum(relation_frame(spark, store, x).count() for x in record["outputs"][r.node].values())
            assert r.seconds is not None and r.seconds > 0
        text = str(summary)
        assert f"execution {len(store.executions)}, module by module:" in text
        assert all(f"\n{r.node} " in text for r in summary.invocations)
    g = GraphIndex.load(on.store)
    last = np.arange(int(g.blocks[-2]), int(g.blocks[-1]))
    assert sum(r.graph_nodes or 0 for r in on.invocations) == len(last)  # every node of the execution, each counted once
    assert all(r.graph_nodes is None for r in off.invocations) and "graph nodes" not in str(off)
    for name, why in on.empty.items():  # an empty output says why
        assert on.outputs[name.split(".")[0]][name.split(".")[1]] == 0 and f"{name}: 0 rows ({why})" in str(on)
