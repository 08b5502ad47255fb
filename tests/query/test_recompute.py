"""What-if with numbers (``delete … recompute``, ``update … set``) against the replay oracle.

The answer of a recompute — the graph's deletion with the values the re-run invocations wrote,
and the rows they wrote that the run did not — must be exactly what re-running the whole
workflow with the changed input gives: every output relation of every execution, as a multiset
of rows. It is checked on the ledger workflow (no black box: a deletion needs no re-run, an
update of a deposit re-runs what read it) and on the car dealership (the calcBid black box).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from lipspark.errors import QueryError, StoreError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session
from lipspark.query.ast import Condition, TupleSel
from lipspark.query.deletion import UNKNOWN
from lipspark.query.recompute import readers, recompute
from lipspark.query.selector import resolve
from lipspark.workflow import Store, WorkflowDefinition, run
from lipspark.workflow.definition import load_definition
from lipspark.workflow.rerun import Rerunner, compare
from tests.conftest import CAR_PARAMS
from tests.query.test_replay import CARS, LEDGER, _canon, definition_module, predicted_outputs, rerun_outputs, without


def changed(definition: WorkflowDefinition, relation: str, key: str, value: Any, sets: dict[str, Any]) -> WorkflowDefinition:
    """The same workflow with the tuples ``relation.key == value`` given the values ``sets``."""

    def change(frames: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        def one(df: Any) -> Any:
            hit = F.col(key) == F.lit(value)
            return df.select(*[(F.when(hit, F.lit(sets[c]).cast(t)).otherwise(F.col(c)) if c in sets else F.col(c)).alias(c)
                               for c, t in df.dtypes])
        return {m: {r: (one(df) if r == relation else df) for r, df in rels.items()} for m, rels in frames.items()}

    return WorkflowDefinition(
        definition.name, definition.build,
        lambda spark, params: change(definition.initial_state(spark, params)),
        lambda spark, n, params: change(definition.inputs(spark, n, params)),
        params=dict(definition.params), stop=definition.stop,
    )


def predicted(store: Store, before: GraphIndex, rc: Any) -> Counter:
    """Every output relation's rows as the recompute says: the surviving output tuples with
    their values after it, and the rows re-runs wrote that the run did not. Fails on a value
    left unknown."""
    out, unknown = predicted_outputs(before, rc.result)
    assert not unknown, f"left unknown: {sorted(unknown)[:3]}"
    for n, node, rel, row in rc.appeared:
        if rel in store.executions[n - 1]["outputs"].get(node, {}):
            out[(n, rel, tuple(sorted((k, _canon(v)) for k, v in row.items())))] += 1
    return out


@pytest.fixture(scope="module")
def ledger(ledger_runs, spark):
    root = ledger_runs[0]
    return root, GraphIndex.load(root), Rerunner(root, spark=spark)


def test_a_deletion_the_graph_recomputes_re_runs_nothing(ledger):
    root, graph, rerunner = ledger
    s = Session(graph, rerun=rerunner)
    (r,) = s.run('delete tuple Deposits(DepId = "D1-1") recompute')
    assert r.extra["reruns"] == [] and r.extra["exact"]
    (plain,) = Session(graph).run('delete tuple Deposits(DepId = "D1-1")')
    assert r.extra["_changed"] == plain.extra["_changed"] and r.extra["removed"] == plain.extra["removed"]


def test_an_update_re_runs_its_readers_and_matches_a_full_re_run(ledger, spark, tmp_path):
    root, graph, rerunner = ledger
    s = Session(graph, rerun=rerunner)
    before = s.view
    (r,) = s.run('update tuple Deposits(DepId = "D1-0") set Amount = 500')
    assert r.extra["exact"] and r.extra["reruns"][0] == {"execution": 1, "node": "intake", "seconds": r.extra["reruns"][0]["seconds"]}
    rc = recompute(before, [], rerunner, updates=_updates(before, "Deposits", "DepId", "D1-0", {"Amount": 500}))
    full = str(tmp_path / "full")
    run(changed(load_definition(LEDGER), "Deposits", "DepId", "D1-0", {"Amount": 500}), graph_dir=full, spark=spark, executions=3,
        provenance=False)
    assert predicted(Store.open(root), before, rc) == rerun_outputs(spark, full)
    assert s.run("reset")[0].summary.startswith("back to the captured graph")


def _updates(g: GraphIndex, relation: str, key: str, value: Any, sets: dict[str, Any], module: str | None = None) -> Any:
    """What an update statement gives recompute: the new values where each reader of the tuple
    ``relation.key == value`` reads it."""
    (tok,) = g.ids[resolve(g, TupleSel("tuple", relation, (Condition(key, "=", value),), module))].tolist()
    out: dict[tuple[int, str], dict[str, dict[int, dict[str, Any]]]] = {}
    for n, node, rel, p in readers(g, int(tok)):
        out.setdefault((n, node), {}).setdefault(rel, {})[p] = dict(sets)
    return out


@pytest.mark.slow  # a full ledger re-run per example
@settings(max_examples=3, deadline=None, database=None)
@given(dep=st.sampled_from(["D1-0", "D2-1", "D3-0", "D0-0"]), amount=st.integers(-50, 500), account=st.sampled_from(["A", "B", "C", "Z"]))
def test_updates_agree_with_a_full_re_run(ledger, spark, tmp_path_factory, dep, amount, account):
    root, graph, rerunner = ledger
    relation = "Seen" if dep == "D0-0" else "Deposits"
    sets = {"Amount": amount, "Account": account}
    rc = recompute(graph, [], rerunner, updates=_updates(graph, relation, "DepId", dep, sets))
    assert rc.exact
    full = str(tmp_path_factory.mktemp("full") / "run")
    run(changed(load_definition(LEDGER), relation, "DepId", dep, sets), graph_dir=full, spark=spark, executions=3, provenance=False)
    assert predicted(Store.open(root), graph, rc) == rerun_outputs(spark, full)


@pytest.mark.slow  # car dealership re-runs: with the slow cases (make test-slow, CI)
def test_car_dealership_recompute_matches_a_full_re_run(spark, car_runs, tmp_path):
    definition = load_definition(CARS)
    params = {**definition.params, **CAR_PARAMS}
    root = car_runs[0].store
    store = Store.open(root)
    graph = GraphIndex.load(root)
    rerunner = Rerunner(store, spark=spark)
    model = definition_module(definition)._buyer(params)[0]
    cars = definition.initial_state(spark, params)["dealer1"]["Cars"].collect()
    car = next(c.CarId for c in cars if c.Model == model)
    s = Session(graph, rerun=rerunner)
    (r,) = s.run(f'delete tuple Cars(CarId = "{car}") in dealer1 recompute')
    assert r.extra["exact"] and ("dealer1_bid" in {x["node"] for x in r.extra["reruns"]})
    rc = recompute(graph, r.extra["deleted"], rerunner)
    assert any(c.after is UNKNOWN for c in rc.graph.values)  # the graph alone cannot tell the bid
    assert not any(c.after is UNKNOWN and c.label != "calcBid" and "filter" not in c.label for c in rc.result.values)
    full = str(tmp_path / "without")
    run(without(definition, "Cars", "CarId", car), graph_dir=full, spark=spark, params=params, provenance=False)
    assert predicted(store, graph, rc) == rerun_outputs(spark, full)
    # the same car of another model: a value what-if
    other = next(m for m in sorted(definition_module(definition).MODELS) if m != model)
    rc = recompute(graph, [], rerunner, updates=_updates(graph, "Cars", "CarId", car, {"Model": other}, "dealer1"))
    assert rc.exact
    full = str(tmp_path / "changed")
    run(changed(definition, "Cars", "CarId", car, {"Model": other}), graph_dir=full, spark=spark, params=params, provenance=False)
    assert predicted(store, graph, rc) == rerun_outputs(spark, full)


def test_a_zoomed_out_module_is_re_run_all_the_same(ledger):
    """Zooming changes the view, not what ran: the ledger, zoomed out, still runs again."""
    _, graph, rerunner = ledger
    s = Session(graph, rerun=rerunner)
    zoomed = s.run('zoomout ledger; update tuple Deposits(DepId = "D2-0") set Amount = 1')[-1]
    plain = Session(graph, rerun=rerunner).run('update tuple Deposits(DepId = "D2-0") set Amount = 1')[0]
    assert [x["node"] for x in zoomed.extra["reruns"]] == [x["node"] for x in plain.extra["reruns"]]
    assert "ledger" in {x["node"] for x in zoomed.extra["reruns"]} and zoomed.extra["exact"]
    assert "ledger" in s.view.zoom  # the answer is shown on the zoomed view


def test_re_runs_start_from_the_captured_graph(ledger):
    _, graph, rerunner = ledger
    s = Session(graph, rerun=rerunner)
    s.run('delete tuple Deposits(DepId = "D1-1")')
    with pytest.raises(QueryError, match="re-runs start from the captured graph, and this view holds an earlier delete") as err:
        s.run('update tuple Deposits(DepId = "D2-0") set Amount = 1')
    assert "\n" not in str(err.value)


def test_without_a_store_recompute_says_how_to_get_one(ledger):
    _, graph, _ = ledger
    for q in ('delete tuple Deposits(DepId = "D1-1") recompute', 'update tuple Deposits(DepId = "D1-1") set Amount = 3'):
        with pytest.raises(QueryError, match="re-runs module code, which needs the workflow store") as err:
            Session(graph).run(q)
        assert "\n" not in str(err.value)


def test_update_refuses_what_is_not_a_base_tuple(ledger):
    _, graph, rerunner = ledger
    with pytest.raises(QueryError, match="update changes base tuples"):
        Session(graph, rerun=rerunner).run("update output Changed of ledger set Balance = 3")
    with pytest.raises(QueryError, match="belongs to a tuple selector without a module"):
        Session(graph, rerun=rerunner).run('update tuple Deposits(DepId = "D1-1") in intake set Amount = 3 in ledger')


def test_a_store_of_the_collapse_scheme_is_refused(tmp_path, spark):
    root = str(tmp_path / "old")
    run(LEDGER, graph_dir=root, spark=spark, executions=1)
    store = Store.open(root)
    store.meta["state_scheme"] = "collapse"
    with pytest.raises(StoreError, match="state scheme 'collapse'"):
        Rerunner(store)


def test_compare_matches_rows_by_their_plain_columns():
    old = [(0, {"k": "a", "v": 1.0}), (1, {"k": "b", "v": 2.0}), (2, {"k": "b", "v": 2.0}), (3, {"k": "c", "v": 3.0}), (4, {"k": "c", "v": 4.0})]
    w = compare(old, [{"k": "a", "v": 1.0}, {"k": "b", "v": 7.0}, {"k": "b", "v": 7.0}, {"k": "c", "v": 5.0}, {"k": "c", "v": 6.0}], None, ["v"])
    assert w.values == {0: {"v": 1.0}, 1: {"v": 7.0}, 2: {"v": 7.0}} and w.changed == {1: {"v": 7.0}, 2: {"v": 7.0}}
    assert w.ambiguous == [3, 4] and not w.gone and not w.appeared  # two c rows, two new values: which is which is not known
    w = compare(old, [{"k": "a", "v": float("nan")}, {"k": "d", "v": 1.0}], {0, 1}, ["v"])
    assert w.gone == [1] and w.appeared == [{"k": "d", "v": 1.0}] and 0 in w.changed


@pytest.mark.slow  # a deferred ledger run and its replays
def test_a_deferred_store_recomputes_what_the_eager_one_does(ledger, spark, tmp_path):
    from lipspark.cli import _open_session

    root, _, _ = ledger
    deferred = str(tmp_path / "deferred")
    run(LEDGER, graph_dir=deferred, spark=spark, executions=2, capture="deferred")
    run(LEDGER, graph_dir=deferred, spark=spark, executions=1, capture="deferred")
    for q in ('update tuple Deposits(DepId = "D1-0") set Account = "Z", Amount = 7', 'zoomout ledger; update tuple Deposits(DepId = "D2-0") set Amount = 1'):
        eager, lazy = _open_session(root), _open_session(deferred)
        assert lazy._demand is not None  # answered from the coarse graph, replaying what the answer reaches
        a, b = eager.run(q)[-1], lazy.run(q)[-1]
        assert b.to_text() == a.to_text()
        assert [x["node"] for x in b.extra["reruns"]] == [x["node"] for x in a.extra["reruns"]]


def test_an_update_names_a_wrong_column_or_value_in_one_line(ledger):
    _, graph, rerunner = ledger
    for q, msg in (('update tuple Deposits(DepId = "D1-0") set Amont = 5', r"relation Deposits has no column 'Amont'; its columns: DepId, Account, Amount"),
                   ('update tuple Deposits(DepId = "D1-0") set Amount = "lots"', r"column Amount of Deposits is bigint: 'lots' is not one"),
                   ('update tuple Deposits(DepId = "D1-0") set Amount = 2.5', r"is bigint: 2.5 is not one")):
        with pytest.raises(StoreError, match=msg) as err:
            Session(graph, rerun=rerunner).run(q)
        assert "\n" not in str(err.value)


def test_a_drawing_of_a_recompute_shows_its_values(ledger):
    """The drawing of an answer and its text give one answer: the values the re-runs told."""
    from lipspark.viz.render import _changes

    _, graph, rerunner = ledger
    (r,) = Session(graph, rerun=rerunner).run('update tuple Deposits(DepId = "D1-0") set Amount = 500')
    drawn = _changes(r)
    listed = {row["node"]: row["after"] for row in r.to_dict()["changed_values"]}
    assert listed and all(drawn[n][1] == v for n, v in listed.items())
