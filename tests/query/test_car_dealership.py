"""The query layer on a captured car dealership graph: the paper's examples and questions."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from lipspark.graph.index import NODE_TYPES, GraphIndex
from lipspark.query import Session, delete, intermediate, zoom_in, zoom_out
from lipspark.query.parser import parse

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
QUERIES = os.path.join(ROOT, "queries")


@pytest.fixture(scope="module")
def graph(car_runs):
    return GraphIndex.load(car_runs[0].store)


def modules(g):
    return sorted(set(g.nodes.loc[g.type_code == NODE_TYPES.index("m"), "module"].astype(str)))


def test_zoomout_all_modules_gives_the_coarse_graph_and_zoomin_restores_it(graph):
    coarse = zoom_out(graph, modules(graph))
    kept = {NODE_TYPES[c] for c in np.unique(coarse.type_code)}
    assert kept <= {"", "i", "o", "m", "z"}
    untyped = coarse.type_code == 0
    # the only untyped nodes left are base tuples of the workflow inputs (no incoming edges)
    assert (np.diff(coarse.in_ptr)[untyped] == 0).all()
    z = coarse.type_code == NODE_TYPES.index("z")
    assert z.sum() == (graph.type_code == NODE_TYPES.index("m")).sum()  # one per invocation
    assert zoom_in(coarse, modules(graph)).same_as(graph)


def test_intermediate_computation_is_what_each_invocation_created(graph):
    """Definition 4.1 (paths from inputs and state, no output on them) finds the fine nodes the
    capture tagged with the module's invocations, and besides them only the state nodes of the
    module's later invocations (reached through the state it wrote), which ZoomOut removes too."""
    typ = graph.type_code
    mod = graph.nodes["module"].astype(object).to_numpy()
    inv = graph.invocation_pos
    for m in modules(graph):
        found = set(intermediate(graph, m).tolist())
        tagged = set(np.flatnonzero((inv >= 0) & (typ == 0) & (mod == m)).tolist())
        assert tagged <= found, m
        extra = np.array(sorted(found - tagged), dtype=np.int64)
        assert (typ[extra] == NODE_TYPES.index("s")).all() and (mod[extra] == m).all(), m


def test_example_4_4_deleting_the_request_removes_all_it_started(graph):
    s = Session(graph)
    (r,) = s.run('delete tuple Requests(BidId = "B1") in request')
    removed = {row["relation"] for row in r.extra["_tables"]["removed outputs"][0]}
    assert removed >= {"BidRequests", "Requests", "Bids1", "Bids2", "Bids3", "Bids4", "BestBid", "Car"}
    survivors = r.extra["_tables"]["surviving outputs"][0]
    assert {row["module"] for row in survivors} == {"choice"}  # only the buyer's own decision
    view = s.view
    # state tuples and invocations survive (Example 4.4)
    for t in ("s", "m"):
        assert (view.type_code == NODE_TYPES.index(t)).sum() > 0
    assert (graph.type_code == NODE_TYPES.index("m")).sum() == (view.type_code == NODE_TYPES.index("m")).sum()


def test_example_4_5_the_bid_depends_on_the_request_not_on_one_car(graph):
    s = Session(graph)
    car = s.run("show tuple Cars in dealer1")[0].rows[0]["tuple"]["CarId"]
    (a, b) = s.run(f'depends output Bids1 of dealer1 on tuple Cars(CarId = "{car}") in dealer1;'
                   'depends output Bids1 of dealer1 on tuple Requests(BidId = "B1")')
    assert [r["depends"] for r in a.rows] == [False]
    assert [r["depends"] for r in b.rows] == [True]


def test_deletion_on_a_zoomed_view_and_zoomin_after_it(graph):
    s = Session(graph)
    s.run("zoomout dealer2, dealer3, dealer4")
    (r,) = s.run('delete tuple Requests(BidId = "B1")')
    coarse_removed = len(r.extra["removed"])
    s.run("zoomin dealer2")  # the deletion is re-propagated through dealer 2's fine graph
    assert "dealer2" not in s.view.zoom and set(s.view.zoom) == {"dealer3", "dealer4"}
    fine = delete(zoom_out(graph, ["dealer3", "dealer4"]), r.extra["deleted"])
    assert s.view.same_as(fine.view)
    assert coarse_removed < len(fine.removed_ids)


def test_saved_queries_run(graph):
    s = Session(graph)
    for name in sorted(os.listdir(QUERIES)):
        s.run("reset")
        with open(os.path.join(QUERIES, name), encoding="utf-8") as fh:
            results = s.run(fh.read(), name)
        assert results and all(r.to_text() for r in results)
        json.dumps([r.to_dict() for r in results], default=str)


def test_cli_query(car_runs, tmp_path):
    store = car_runs[0].store
    env = {**os.environ, "PYTHONPATH": os.path.abspath(ROOT)}
    before = sorted(os.listdir(store))
    out = subprocess.run([sys.executable, "-m", "lipspark.cli", "query", store, "-e",
                          "zoomout agg; polynomial output BestBid of agg", "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [d["kind"] for d in data] == ["view", "polynomial"] and "M_agg[1]" in data[1]["rows"][0]["polynomial"]
    bad = subprocess.run([sys.executable, "-m", "lipspark.cli", "query", store, "-e", "zoomout agg;\ndelete tuple"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2
    assert "<-e>:2:13: syntax error" in bad.stderr and "^" in bad.stderr
    assert sorted(os.listdir(store)) == before  # queries never write to the store
    lq = tmp_path / "q.lq"
    lq.write_text("show invocation nosuchmodule")
    missing = subprocess.run([sys.executable, "-m", "lipspark.cli", "query", store, str(lq)],
                             capture_output=True, text=True, env=env, timeout=300)
    assert missing.returncode == 2 and "no module 'nosuchmodule'" in missing.stderr


def test_saved_queries_parse():
    for name in os.listdir(QUERIES):
        with open(os.path.join(QUERIES, name), encoding="utf-8") as fh:
            assert parse(fh.read(), name)
