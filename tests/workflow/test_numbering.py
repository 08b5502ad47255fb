"""An invocation's node ids follow from its place in the workflow alone (lipspark.workflow.numbering):
what earlier invocations ran does not change them, so replaying one invocation alone can make them."""
from __future__ import annotations

import numpy as np

from lipspark.graph.index import GraphIndex
from lipspark.vocabulary.ids import FINE_BASE, MAX_FINE_SEGMENT
from lipspark.workflow import run

DEFINITION = '''
from pyspark.sql import functions as F
from lipspark.workflow import Module, Workflow, WorkflowDefinition

EXTRA = {extra}

def first(Items):
    out = Items.filter(F.col("n") > 2)
    if EXTRA:  # more operations, the same data: distinct rows stay, n < 100 holds for all
        out = out.distinct().filter(F.col("n") < 100).groupBy("n", "w").agg(F.count("*").alias("c")).select("n", "w")
    return {{"Kept": out}}

def second(Kept, Seen):
    sums = Kept.groupBy((F.col("n") % 3).alias("r")).agg(F.sum("w").alias("s"), F.max("w").alias("m"))
    return {{"Sums": sums, "Seen": Seen.union(Kept.select("n"))}}

def build(params):
    wf = Workflow("numbering", [
        Module("first", inputs={{"Items": "n bigint, w double"}}, outputs={{"Kept": "n bigint, w double"}},
               keys={{"Items": ["n"]}}, logic=first),
        Module("second", inputs={{"Kept": "n bigint, w double"}}, state={{"Seen": "n bigint"}},
               outputs={{"Sums": "r bigint, s double, m double"}}, logic=second),
    ])
    return wf.node("first", "first", input=True).node("second", "second", output=True).edge("first", "second", ["Kept"])

DEFINITION = WorkflowDefinition(
    "numbering", build, lambda spark, p: {{}},
    lambda spark, n, p: {{"first": {{"Items": spark.createDataFrame([(10 * n + i, float(i)) for i in range(8)], "n bigint, w double")}}}},
    params={{"numExec": 2}})
'''


def _second(g: GraphIndex) -> tuple[set, set]:
    """The nodes the invocations of ``second`` made (id, op, label) and the edges into them (source id, target id)."""
    nodes = g.nodes
    mine = nodes[nodes["node"] == "second"]
    ids = set(mine["id"].tolist())
    edges = g.edge_frame()
    into = edges[edges["dst"].isin(ids)]
    return set(zip(mine["id"], mine["op"], mine["label"])), set(zip(into["src"], into["dst"]))


def test_an_invocations_ids_do_not_depend_on_what_earlier_invocations_ran(spark, tmp_path):
    graphs = []
    for extra in (False, True):
        wf = tmp_path / f"numbering_{extra}.py"
        wf.write_text(DEFINITION.format(extra=extra))
        d = str(tmp_path / f"store_{extra}")
        run(str(wf), graph_dir=d, spark=spark)
        graphs.append(GraphIndex.load(d))
    plain, extra = graphs
    # the upstream module did more in the second store...
    assert len(extra.nodes[extra.nodes["node"] == "first"]) > len(plain.nodes[plain.nodes["node"] == "first"])
    # ...and the downstream invocations made the very same nodes and edges, in both executions
    a, b = _second(plain), _second(extra)
    assert len(a[0]) > 20 and a == b
    # their fine nodes are numbered in their own range
    segs = plain.column("seg", np.flatnonzero(plain.column("node") == "second"))
    fine = segs[segs >= FINE_BASE]
    assert len(fine) and (fine < MAX_FINE_SEGMENT).all()
