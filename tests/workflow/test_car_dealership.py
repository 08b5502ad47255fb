"""The car dealership's crash variant (``--param faultyCar=CAR``, docs/debugging.md): the dealer
whose lot holds the car appraises every car of it with a black box that raises on that car."""
from __future__ import annotations

import doctest
import importlib.util
import os

import pytest

from lipspark.errors import ExecutionFailed, StoreError, WorkflowError
from lipspark.store import Store
from lipspark.workflow import load_definition, run
from lipspark.workflow.execution import relation_frame
from lipspark.workflow.run import _check_continues
from tests.util import multiset

HERE = os.path.dirname(__file__)
CARS = os.path.join(HERE, "..", "..", "workflows", "car_dealership.py")
#: 10 cars per dealer (D<k>C000000 … D<k>C000009), one execution, the buyer never buys
SMALL = {"numCars": 40, "numExec": 1, "seed": 0, "acceptance": 0.0}


def test_the_workflow_file_examples_run():
    spec = importlib.util.spec_from_file_location("car_dealership_doctest", CARS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed, tried = doctest.testmod(module)
    assert (failed, tried >= 2) == (0, True)


@pytest.mark.parametrize("car", ["X17", "D0C000001", "D5C000001", "D1C", "d1c000001", "D1C000001 "])
def test_a_car_id_no_dealer_has_is_refused_before_anything_is_written(tmp_path, car):
    root = tmp_path / "g"
    with pytest.raises(WorkflowError, match=r"parameter 'faultyCar' expects a car id D<dealer 1-4>C<number> .*found"):
        run(CARS, graph_dir=str(root), params={**SMALL, "faultyCar": car})
    assert not root.exists()


def test_only_the_dealer_holding_the_car_changes():
    definition = load_definition(CARS)
    plain = definition.build(definition.with_params(SMALL))
    assert not [m for m in plain.modules if _appraises(plain.modules[m])]
    for car, dealer in (("D3C000042", "dealer3"), ("D1C000017", "dealer1")):
        faulty = definition.build(definition.with_params({**SMALL, "faultyCar": car}))
        assert list(faulty.nodes) == list(plain.nodes) and faulty.edges == plain.edges
        changed = [m for m in plain.modules if _appraises(faulty.modules[m])]
        assert changed == [dealer]


def _appraises(module) -> bool:
    """Whether the module's code holds an ``appraise`` black box (the dealer logic's closure)."""
    cells = dict(zip(module.logic.__code__.co_freevars, module.logic.__closure__ or ()))
    return "appraise" in cells and cells["appraise"].cell_contents is not None


def test_a_store_made_before_the_parameter_existed_continues_at_its_default(tmp_path):
    definition = load_definition(CARS)
    old = {k: v for k, v in definition.with_params(SMALL).items() if k != "faultyCar"}
    store = Store.create(str(tmp_path / "old"), "car_dealership", True, old)
    try:
        _check_continues(store, definition, "old", True, "eager", definition.with_params(SMALL))
        with pytest.raises(StoreError, match=r"created with other parameters \(faultyCar\)"):
            _check_continues(store, definition, "old", True, "eager", definition.with_params({**SMALL, "faultyCar": "D1C000001"}))
    finally:
        store.unlock()


def _outputs(spark, root):
    store = Store.open(root)
    return {(e["n"], node, rel): multiset(relation_frame(spark, store, desc).collect())
            for e in store.executions for node, rels in e["outputs"].items() for rel, desc in rels.items()}


def test_the_faulty_car_fails_its_dealers_bid_and_is_the_one_culprit(spark, tmp_path):
    definition = load_definition(CARS)
    car = "D2C000003"
    lot = {r.CarId: r.Model for r in definition.initial_state(spark, definition.with_params(SMALL))["dealer2"]["Cars"].collect()}
    root = str(tmp_path / "crash")
    with pytest.raises(ExecutionFailed) as info:
        run(CARS, graph_dir=root, spark=spark, params={**SMALL, "faultyCar": car})
    r = info.value.report
    assert (r.execution, r.node, r.module, r.committed, r.method) == (1, "dealer2_bid", "dealer2", 0, "guard")
    assert r.exception == f"ValueError: cannot appraise car {car}"
    assert r.operation.startswith("appraise called at ") and "car_dealership.py" in r.operation
    (culprit,) = r.culprits
    assert (culprit.relation, dict(culprit.values), culprit.tokens) == ("Cars", {"CarId": car, "Model": lot[car]}, (f"Cars:{car}",))
    assert Store.open(root).executions == []


@pytest.mark.slow  # two runs of the workflow
def test_a_car_past_the_lot_is_appraised_and_changes_no_output(spark, tmp_path):
    plain, past = str(tmp_path / "plain"), str(tmp_path / "past")
    run(CARS, graph_dir=plain, spark=spark, params=SMALL, provenance=False)
    run(CARS, graph_dir=past, spark=spark, params={**SMALL, "faultyCar": "D1C000010"}, provenance=False)  # 10 cars: 0…9
    a, b = _outputs(spark, plain), _outputs(spark, past)
    assert a == b and a[(1, "dealer1_bid", "Bids1")], "dealer1 bid with every car appraised"
