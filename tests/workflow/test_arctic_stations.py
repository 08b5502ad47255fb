"""Arctic stations (workflows/arctic_stations.py): topologies, fidelity, the answer, provenance, errors."""
from __future__ import annotations

import os
import sys

import pytest

from lipspark.errors import WorkflowError
from lipspark.query import Session
from lipspark.workflow import Store, load_definition, run
from lipspark.workflow.execution import relation_frame
from tests.workflow.test_execution import stored

HERE = os.path.dirname(__file__)
ARCTIC = os.path.join(HERE, "..", "..", "workflows", "arctic_stations.py")
DEF = load_definition(ARCTIC)
A = sys.modules[DEF.build.__module__]  # the workflow file's functions

#: the small dense run shared by the fidelity and provenance tests: layers [sta1, sta2], [sta3]
DENSE = {"topology": "dense", "stations": 3, "fanout": 2, "years": 2, "numExec": 1}
SEASON = {12: "DJF", 1: "DJF", 2: "DJF", 3: "MAM", 4: "MAM", 5: "MAM", 6: "JJA", 7: "JJA", 8: "JJA", 9: "SON", 10: "SON", 11: "SON"}


def reference(params, executions):
    """Pure Python: each execution's {station node: MinTemp} and overall minimum."""
    p = {**DEF.params, **params}
    state = {node: list(rows) for node, rows in A.history(p).items()}
    climates = {f"sta{c.index}": c for c in A.climates(p)}
    layers = A.layers(p["topology"], p["stations"], p["fanout"])
    out = []
    for n in range(1, executions + 1):
        year, month, sel = A.request(p, n)
        keep = {
            "all": lambda r: True,
            "season": lambda r, m=month: SEASON[r[2]] == SEASON[m],
            "month": lambda r, m=month: r[2] == m,
            "year": lambda r, y=year: r[1] == y,
        }[sel]
        mins, prev = {}, []
        for layer in layers:
            for k in layer:
                node = f"sta{k}"
                state[node].append(A.measurement(climates[node], year, month, p["seed"]))
                local = min(r[3] for r in state[node] if keep(r) and r[3] is not None)
                mins[node] = min([local] + [mins[f"sta{j}"] for j in prev])
            prev = layer
        out.append((mins, min(mins[f"sta{k}"] for k in layers[-1])))
    return out


def outputs(spark, root):
    """{execution: ({station node: MinTemp}, Result)} of a stored run."""
    store = Store.open(root)
    res = {}
    for e in store.executions:
        rows = {node: relation_frame(spark, store, d).collect() for node, rels in e["outputs"].items() for d in rels.values()}
        (result,) = rows.pop("out")
        rows.pop("in")
        assert all(len(r) == 1 for r in rows.values())
        res[e["n"]] = ({node: r[0].MinTemp for node, r in rows.items()}, result.MinTemp)
    return res


def assert_matches_reference(spark, root, params, executions):
    got = outputs(spark, root)
    for n, (mins, result) in enumerate(reference(params, executions), start=1):
        assert got[n][0] == pytest.approx(mins, abs=1e-9)
        assert got[n][1] == pytest.approx(result, abs=1e-9)


# ---------------------------------------------------------------------------- topologies
def edges(wf):
    return sorted((e.src, e.dst, e.relations) for e in wf.edges)


@pytest.mark.parametrize("topology, n, fanout, minflow", [
    # the MinTemp flow drawn in Figure 4 (besides in -> first stations)
    ("serial", 4, 2, [(1, 2), (2, 3), (3, 4), (4, "out")]),
    ("parallel", 4, 2, [(k, "out") for k in range(1, 5)]),
    ("dense", 9, 3, [(j, k) for j in (1, 2, 3) for k in (4, 5, 6)] + [(j, k) for j in (4, 5, 6) for k in (7, 8, 9)]
     + [(k, "out") for k in (7, 8, 9)]),
    ("dense", 5, 2, [(j, k) for j in (1, 2) for k in (3, 4)] + [(j, 5) for j in (3, 4)] + [(5, "out")]),
    ("dense", 3, 1, [(1, 2), (2, 3), (3, "out")]),  # fan-out 1 is serial
    ("dense", 3, 7, [(k, "out") for k in (1, 2, 3)]),  # fan-out >= N is parallel
])
def test_topologies_build_and_validate(topology, n, fanout, minflow):
    wf = DEF.build(DEF.with_params({"topology": topology, "stations": n, "fanout": fanout})).validate()
    assert list(wf.nodes) == ["in", *[f"sta{k}" for k in range(1, n + 1)], "out"]
    assert wf.nodes["in"].input and wf.nodes["out"].output
    name = lambda k: k if k == "out" else f"sta{k}"
    expected = [("in", f"sta{k}", ("StationRequest",)) for k in range(1, n + 1)]
    expected += [(name(j), name(k), (f"MinTemp_sta{j}",)) for j, k in minflow]
    assert edges(wf) == sorted(expected)
    assert len(wf.edges) == n + len(minflow)
    # every station declares the request and one MinTemp input per predecessor
    for k in range(1, n + 1):
        preds = sorted(f"MinTemp_sta{j}" for j, d in minflow if d == k)
        assert sorted(wf.modules[f"sta{k}"].inputs) == sorted(["StationRequest", *preds])
        assert wf.modules[f"sta{k}"].state_names == ("Observations",)


def test_figure_4_edge_counts():
    count = lambda **p: len(DEF.build(DEF.with_params(p)).validate().edges)
    # Figure 4's edges plus one request edge from `in` to every station not in the first layer
    assert count(topology="serial", stations=24) == 25 + 23
    assert count(topology="parallel", stations=24) == 48 + 0
    assert count(topology="dense", stations=9, fanout=3) == 24 + 6
    assert count(topology="dense", stations=24, fanout=6) == 6 + 3 * 36 + 6 + 18
    wf = DEF.build(DEF.with_params({"topology": "dense", "stations": 9, "fanout": 3}))
    # M_sta5 gets three minTemp values, one from each of M_sta1, M_sta2 and M_sta3 (§5.2)
    assert sorted(r for e in wf.inputs_of("sta5") for r in e.relations) == ["MinTemp_sta1", "MinTemp_sta2", "MinTemp_sta3", "StationRequest"]


def test_bad_params():
    cases = [
        ({"topology": "ring"}, r"'topology' must be one of serial, parallel, dense; got 'ring'"),
        ({"stations": 1}, r"'stations' must be between 2 and 24; got 1"),
        ({"stations": "25"}, r"'stations' must be between 2 and 24; got 25"),
        ({"stations": "many"}, r"'stations' expects an integer, got 'many'"),
        ({"fanout": 0}, r"'fanout' must be at least 1; got 0"),
        ({"selectivity": "decade"}, r"'selectivity' must be one of all, season, month, year; got 'decade'"),
        ({"month": 13}, r"'month' must be between 1 and 12; got 13"),
        ({"years": 41}, r"'years' must be between 1 and 40; got 41"),
        ({"colour": "red"}, r"no parameters \['colour'\]"),
    ]
    for params, message in cases:
        with pytest.raises(WorkflowError, match=message):
            DEF.build(params)
    # strings from the command line are converted (by the definition, and by the workflow itself)
    assert len(DEF.build({"topology": "Dense", "stations": "9", "fanout": "3"}).edges) == 30
    with pytest.raises(WorkflowError, match=r"'stations' expects int, got 'x'"):
        DEF.with_params({"stations": "x"})
    # a station measures the current month: requests must come after the history
    with pytest.raises(WorkflowError, match=r"requests start at 1999-06 but the history of sta1 \(Ostrov Kotelnyj\) runs to 2000-12"):
        DEF.initial_state(None, {"year": 1999, "month": 6, "years": 2})


def test_requests_advance_one_month_per_execution():
    p = {"year": 2001, "month": 11, "selectivity": "season"}
    assert [A.request(p, n) for n in (1, 2, 3, 14)] == [(2001, 11, "season"), (2001, 12, "season"), (2002, 1, "season"), (2002, 12, "season")]


def test_synthetic_history_is_plausible():
    hist = A.history({"stations": 24, "seed": 1})
    assert len(hist) == 24 and all(len(rows) == 480 for rows in hist.values())
    rows = hist["sta2"]  # Mys Chelyuskin, 77.7°N
    assert {r[0] for r in rows} == {"Mys Chelyuskin"} and (rows[0][1], rows[-1][1]) == (1961, 2000)
    mean = lambda m, i=3: sum(r[i] for r in rows if r[2] == m) / 40
    assert -33 < mean(1) < -22 and -2 < mean(7) < 8
    for i, (lo, hi) in zip(range(4, 9), [(995, 1030), (75, 95), (3, 10), (5, 40), (0, 60)]):
        assert all(lo <= r[i] <= hi for r in rows), A.VARIABLES[i - 3]
    # a slight warming trend; deterministic in the seed
    assert sum(r[3] for r in rows if r[1] >= 1991) > sum(r[3] for r in rows if r[1] <= 1970)
    assert A.history({"stations": 2, "seed": 1})["sta2"] == rows and A.history({"stations": 2, "seed": 2})["sta2"] != rows
    assert len(A.history({"years": 2})["sta4"]) == 24


# ---------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def dense_runs(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("arctic")
    on, off = str(root / "on"), str(root / "off")
    run(DEF, graph_dir=on, spark=spark, params=DENSE, count_graph=False)
    run(DEF, graph_dir=off, spark=spark, params=DENSE, provenance=False)
    return on, off


@pytest.mark.slow  # an end-to-end run of a dense topology, on and off (CI; `make test` keeps the small ones below)
def test_fidelity_provenance_on_and_off(spark, dense_runs):
    on, off = dense_runs
    a, b = stored(spark, on), stored(spark, off)
    assert a.keys() == b.keys() and a == b
    assert_matches_reference(spark, on, DENSE, 1)
    # the new measurement, computed by column expressions from the request, is the Python model's
    store = Store.open(on)
    rows = relation_frame(spark, store, store.current_state()["sta3"]["Observations"]).collect()
    assert len(rows) == 2 * 12 + 1
    (new,) = [tuple(r) for r in rows if (r.Year, r.Month) == (2001, 1)]
    assert new == pytest.approx(A.measurement(A.climates(DENSE)[2], 2001, 1, 0), abs=1e-9)


@pytest.mark.slow
def test_provenance_of_the_result(dense_runs):
    on, _ = dense_runs
    s = Session(on)
    (poly,) = s.run("polynomial value MinTemp of output Result of out")[0].rows
    names = [c.name for c in A.climates(DENSE)]
    assert poly["polynomial"].startswith("Min(")
    # the Result row is a keyless aggregate: SQL returns it over any input, so its existence depends
    # on no base tuple (annotation 1: docs/design.md) — its value does, through every station's minimum
    (row,) = s.run("evaluate lineage output Result of out")[0].rows
    assert row["value"] == frozenset() or not row["value"]
    ancestors = s.run("ancestors value MinTemp of output Result of out")[0].rows
    tokens = {r["name"] for r in ancestors}  # a base tuple is named by its token, e.g. Observations:Dikson,2000,1
    # selectivity month: January observations of every station (the filter keeps the others out)
    for want in ["Request:2001,1"] + [f"Observations:{n},{y},1" for n in names for y in (1999, 2000)]:
        assert any(want in t for t in tokens), want
    # a what-if recomputes the value as a re-run does: without the request no observation is
    # relevant and SQL's minimum over no rows is null; without one January the others still give it
    changed = s.run("delete tuple Request(Year = 2001, Month = 1); show value MinTemp of output Result of out")[-1].rows
    assert changed[0]["what_if"] is not None and "null" in str(changed[0]["what_if"])
    s.run("reset")
    same = s.run(f'delete tuple Observations(Station = "{names[0]}", Year = 2000, Month = 1); '
                 "show value MinTemp of output Result of out")[-1].rows
    assert not same[0].get("what_if")


def selective(selectivity):
    """Requests for May 2001: the four selectivities give four different minima."""
    return {"topology": "parallel", "stations": 2, "years": 2, "numExec": 1, "selectivity": selectivity, "month": 5}


def test_selectivities_differ():
    assert len({reference(selective(s), 1)[0][1] for s in A.SELECTIVITIES}) == 4


@pytest.mark.parametrize("selectivity", ["all", *(pytest.param(s, marks=pytest.mark.slow) for s in ("season", "month", "year"))])
def test_result_is_the_lowest_temperature(spark, tmp_path, selectivity):
    params = selective(selectivity)
    run(DEF, graph_dir=str(tmp_path / "g"), spark=spark, params=params, provenance=False)
    assert_matches_reference(spark, str(tmp_path / "g"), params, 1)


# ---------------------------------------------------------------------------- real observations
HEADER = "station,year,month,air_temp,pressure,humidity,wind_speed,precipitation,snow_depth,source\n"


def write_csv(path, text):
    path.write_text(text)
    return str(path)


def test_observations_csv_is_loaded_and_used(spark, tmp_path):
    lines = [HEADER]
    for name, base in (("Ostrov Vize", -25.0), ("Dikson", -22.0), ("Tiksi", -30.0)):
        for year in (1999, 2000):
            for month in range(1, 13):
                t = base - 2 * abs(month - 7) + (year - 1999)
                snow = "" if month == 8 else "20"
                lines.append(f"{name},{year},{month},{t},1010.5,85,6.2,{15 + month},{snow},nsidc\n")
    path = write_csv(tmp_path / "obs.csv", "".join(lines))
    rows = A.load_observations_csv(path)
    assert len(rows) == 72 and rows[0] == ("Ostrov Vize", 1999, 1, -37.0, 1010.5, 85.0, 6.2, 16.0, 20.0)
    assert rows[7][-1] is None  # missing snow depth in August
    params = {"topology": "serial", "stations": 2, "numExec": 1, "selectivity": "all", "observations": path}
    assert [c.name for c in A.climates(params)] == ["Ostrov Vize", "Dikson"]
    root = str(tmp_path / "g")
    run(DEF, graph_dir=root, spark=spark, params=params, provenance=False)
    assert_matches_reference(spark, root, params, 1)
    store = Store.open(root)
    state = relation_frame(spark, store, store.current_state()["sta2"]["Observations"]).collect()
    assert len(state) == 25 and {r.Station for r in state} == {"Dikson"}
    with pytest.raises(WorkflowError, match=r"has 3 stations \(Ostrov Vize, Dikson, Tiksi\); the workflow needs stations=4"):
        DEF.build({**params, "stations": 4})
    with pytest.raises(WorkflowError, match=r"history of sta1 \(Ostrov Vize\) runs to 2000-12"):
        DEF.initial_state(None, {**params, "year": 2000})


def test_observations_csv_errors(tmp_path):
    with pytest.raises(WorkflowError, match=r"observations file .*nope.csv does not exist"):
        A.load_observations_csv(str(tmp_path / "nope.csv"))
    with pytest.raises(WorkflowError, match=r"is empty; it needs a header row"):
        A.load_observations_csv(write_csv(tmp_path / "empty.csv", ""))
    bad = write_csv(tmp_path / "cols.csv", "Station,Year,Month,AirTemp,Pressure,Humidity\nDikson,2000,1,-20,1010,80\n")
    with pytest.raises(WorkflowError, match=r"lacks columns WindSpeed, Precipitation, SnowDepth \(its header: Station, Year, Month, AirTemp, Pressure, Humidity\)"):
        A.load_observations_csv(bad)
    with pytest.raises(WorkflowError, match=r"lacks columns WindSpeed"):
        DEF.build({"observations": bad})
    cases = [
        ("Dikson,2000,1,-20,1010,80,5,10,20,x\nDikson,2000,2,cold,1010,80,5,10,20,x\n", r"line 3: AirTemp must be a number, got 'cold'"),
        ("Dikson,2000,13,-20,1010,80,5,10,20,x\n", r"line 2: Month must be 1–12, got 13"),
        ("Dikson,2000.5,1,-20,1010,80,5,10,20,x\n", r"line 2: Year and Month must be integers"),
        ("Dikson,2000,1,-20,1010,80,5,10,20,x\nDikson,2000,1,-21,1010,80,5,10,20,x\n", r"line 3: Dikson 2000-01 is already on line 2"),
        ("Dikson,2000,1,-20\n", r"line 2: 4 fields, the header has 10"),
        ("\n", r"has a header but no observations"),
    ]
    for body, message in cases:
        with pytest.raises(WorkflowError, match=message):
            A.load_observations_csv(write_csv(tmp_path / "bad.csv", HEADER + body))
