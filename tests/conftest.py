"""One SparkSession for the whole suite (for each of its workers: `make test` runs two, pytest-xdist): local[2], UI off, few shuffle partitions."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
# a deferred `lipspark run` stays on as its store's replay service unless told not to: not in the
# suite, whose runs (and the examples' commands) would leave services behind; tests/workflow/test_service.py
# turns it on where it tests it
os.environ["LIPSPARK_SERVE"] = "off"
# the short processes the suite starts (each `lipspark` command an example runs, a notebook's
# kernel) compile with C1 only: a short process otherwise spends about half its JVM's CPU in the
# C2 compiler (docs/benchmarks.md, "Short processes"). The long-lived session each worker shares
# (below) keeps C2, which pays off over a whole suite.
os.environ.setdefault("LIPSPARK_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")


@pytest.fixture(scope="session", autouse=True)
def _every_store_passes_check(tmp_path_factory):
    """Every store the suite writes under its temporary directories passes `lipspark check` at
    the end of the session (those a test damages on purpose are declared with tests.util.damaged)."""
    yield
    from tests.util import stores_failing_check

    problems = stores_failing_check(tmp_path_factory.getbasetemp())
    if problems:
        pytest.fail(f"{len(problems)} problem(s) in stores the suite wrote:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def spark():
    from lipspark.session import JVM_OPTIONS_ENV, get_spark

    short = os.environ.pop(JVM_OPTIONS_ENV, None)
    try:
        session = get_spark(app_name="lipspark-tests")
    finally:
        if short is not None:
            os.environ[JVM_OPTIONS_ENV] = short
    yield session
    session.stop()


HERE = os.path.dirname(__file__)


@pytest.fixture(scope="session")
def demo_graph(spark, tmp_path_factory) -> str:
    """The graph ``make demo`` writes, made here the same way (:func:`lipspark.demo.run_car_dealership`),
    once for the examples (tests/test_examples.py) and the what-if notebook (tests/viz/test_notebook.py)."""
    from lipspark.demo import run_car_dealership

    out = str(tmp_path_factory.mktemp("demo") / "car_dealership-demo")
    run_car_dealership(spark, out, workflow=os.path.join(HERE, "..", "workflows", "car_dealership.py"))
    return out
LEDGER = os.path.join(HERE, "fixtures", "ledger.py")
CARS = os.path.join(HERE, "..", "workflows", "car_dealership.py")
#: the car dealership run shared by the workflow and the query tests (the buyer buys in execution 1)
CAR_PARAMS = {"numCars": 4800, "numExec": 1, "acceptance": 1.0, "seed": 3}


@pytest.fixture(scope="session")
def ledger_runs(spark, tmp_path_factory):
    """The ledger workflow, 3 executions, with provenance (run as 2 + 1) and without."""
    from lipspark.workflow import run

    root = tmp_path_factory.mktemp("ledger")
    on, off = str(root / "on"), str(root / "off")
    run(LEDGER, graph_dir=on, spark=spark, executions=2)
    run(LEDGER, graph_dir=on, spark=spark, executions=1)  # continue the sequence
    run(LEDGER, graph_dir=off, spark=spark, provenance=False, executions=3)
    return on, off


@pytest.fixture(scope="session")
def car_runs(spark, tmp_path_factory):
    """One car dealership execution with and without provenance: (summary on, summary off)."""
    from lipspark.workflow import run

    root = tmp_path_factory.mktemp("cars")
    on = run(CARS, graph_dir=str(root / "on"), spark=spark, params=CAR_PARAMS)
    off = run(CARS, graph_dir=str(root / "off"), spark=spark, params=CAR_PARAMS, provenance=False)
    return on, off
