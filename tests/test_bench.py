"""The benchmark's plots and configuration handling (the runs themselves: `lipspark bench --quick` in CI)."""
from __future__ import annotations

import struct

import pytest

from lipspark.bench import CONFIGS, plot, quick_configs
from lipspark.errors import LipsparkError


def fake(name: str, ratio: float, deferred: bool = True) -> dict:
    extra = {"deferred_s": [1.0, 1.05, 0.95], "deferred_ratio": 1.02} if deferred else {}
    return {"name": name, "ratio": ratio, "plain_s": [1.0, 1.1, 0.9], "tracked_s": [1.3, 1.4, 1.2], **extra,
            "queries": [{"execution": 1, "nodes": 1000, "edges": 1800, "zoomout_all_ms": 5.0, "zoomin_all_ms": 7.0,
                         "delete_state_tuple_ms": 0.5, "subgraph_output_ms": 0.3, "polynomial_output_ms": 2.0},
                        {"execution": 3, "nodes": 3000, "edges": 5400, "zoomout_all_ms": 12.0, "zoomin_all_ms": 20.0,
                         "delete_state_tuple_ms": 0.7, "subgraph_output_ms": 0.3, "polynomial_output_ms": 2.5}]}


def test_plots_are_pngs_with_content(tmp_path):
    paths = plot([fake("car_dealership", 1.3), fake("arctic_dense", 1.1, deferred=False)], str(tmp_path))
    assert [p.split("/")[-1] for p in paths] == ["workflowgen_time.png", "workflowgen_queries.png"]
    for p in paths:
        data = open(p, "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])
        assert width > 600 and height > 300 and len(data) > 10_000


def test_configurations_cover_the_issue_targets():
    names = {c["name"]: c for c in CONFIGS}
    assert names["car_dealership"]["params"]["numCars"] == 20000 and names["car_dealership"]["params"]["numExec"] == 10
    for topo in ("serial", "parallel", "dense"):
        p = names[f"arctic_{topo}"]["params"]
        assert p["stations"] == 24 and p["selectivity"] == "month" and p["numExec"] >= 5
    assert names["arctic_dense"]["params"]["fanout"] == 6
    assert all(int(c["params"]["numExec"]) <= 2 for c in quick_configs())


def test_unknown_configuration_is_refused(tmp_path):
    from lipspark.bench import main

    with pytest.raises(LipsparkError, match="unknown benchmark configuration"):
        main(quick=True, out=str(tmp_path), only=["nope"])


def test_the_after_run_benchmark_reads_the_runs_own_invocation_times():
    from benchmarks.after_run import _invocation_seconds
    from lipspark.workflow.report import InvocationReport, module_table

    rows = [InvocationReport("dealer1_bid", "dealer1", 1, 1, 5018, None, 2.43), InvocationReport("car", "car", 1, 0, 0, None, 0.29)]
    assert _invocation_seconds("run summary\n" + module_table(rows) + "\nreplay service pid 1 …") == {"dealer1_bid": 2.43, "car": 0.29}
    with_graph = [InvocationReport("agg", "agg", 4, 1, 0, 120, 1.57)]
    assert _invocation_seconds(module_table(with_graph)) == {"agg": 1.57}
