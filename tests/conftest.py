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


#: where the demo graph the suite makes is kept between runs and shared by its workers (git-ignored)
DEMO_CACHE = os.path.join(HERE, "..", ".test-cache")


def _demo_key() -> str:
    """What the demo graph depends on: the bytes of lipspark's and the workflows' sources, and
    the PySpark version; another key means another graph."""
    import hashlib

    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    root = os.path.abspath(os.path.join(HERE, ".."))
    for base in ("lipspark", "workflows"):
        for d, dirs, names in os.walk(os.path.join(root, base)):
            dirs.sort()
            for n in sorted(names):
                if n.endswith((".py", ".properties", ".lark")):
                    path = os.path.join(d, n)
                    h.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as fh:
                        h.update(fh.read())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def demo_graph(spark, tmp_path_factory) -> str:
    """The graph ``make demo`` writes, made here the same way (:func:`lipspark.demo.run_car_dealership`),
    for the examples (tests/test_examples.py), the notebooks (tests/viz/test_notebook.py) and the
    tests that copy it. It takes minutes to make, so it is made once for both workers (the
    other waits on a lock) and kept for later runs (`make test-slow` after `make test`) while
    lipspark's and the workflows' sources are unchanged (:func:`_demo_key`). Each worker gets a
    copy of its own, as it got a graph of its own when each made one: tests that read it may
    add to it (a partitioned copy, an index), and the kept graph stays as the demo wrote it."""
    import fcntl
    import shutil
    import tempfile

    from lipspark.demo import run_car_dealership

    os.makedirs(DEMO_CACHE, exist_ok=True)
    kept = os.path.join(DEMO_CACHE, f"demo-{_demo_key()}")
    out = os.path.join(kept, "car_dealership-demo")
    with open(os.path.join(DEMO_CACHE, "demo.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not os.path.isdir(kept):
            for old in os.listdir(DEMO_CACHE):  # graphs of other sources
                if old.startswith("demo-") or old.startswith("making-"):
                    shutil.rmtree(os.path.join(DEMO_CACHE, old), ignore_errors=True)
            making = tempfile.mkdtemp(prefix="making-", dir=DEMO_CACHE)
            run_car_dealership(spark, os.path.join(making, "car_dealership-demo"),
                               workflow=os.path.join(HERE, "..", "workflows", "car_dealership.py"))
            from tests.util import stores_failing_check

            problems = stores_failing_check(making)  # checked once, when made: no test changes it
            if problems:
                pytest.fail("the demo graph fails lipspark check:\n" + "\n".join(problems), pytrace=False)
            os.rename(making, kept)  # whole or not at all: a run killed while making leaves no graph
    return shutil.copytree(out, str(tmp_path_factory.mktemp("demo") / "car_dealership-demo"))


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
