"""Integrity checks (issue 18, item 2): verdicts with provenance on, off and deferred; the violating
rows as nodes; their lineage (``blame``) against each row's own; what a deletion does to a verdict
against re-running without the deleted tuple; a check of level fail stops the run after its
execution; bad declarations and questions get one line."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from lipspark.errors import QueryError, WorkflowError
from lipspark.query import Session
from lipspark.workflow import Check, CheckFailed, Module, Store, materialize, run

HERE = os.path.dirname(__file__)
FIXTURE = os.path.join(HERE, "..", "fixtures", "checked.py")


def _fixture():
    spec = importlib.util.spec_from_file_location("checked_fixture", FIXTURE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PARAMS = _fixture().DEFINITION.params


def expected(n, params=PARAMS, drop=()):
    """Each check's violations in execution ``n``, computed here from the rows the workflow is given
    (without the order ids in ``drop``): {check name: sorted violating keys} (table checks: [] or ["fails"])."""
    orders, customers = _fixture().rows(n, params)
    region = dict(customers)
    big = [(oid, c, region[c], amount) for oid, c, amount in orders if c in region and oid not in drop]
    totals: dict[str, float] = {}
    for _, _, r, a in big:
        totals[r] = totals.get(r, 0.0) + a
    return {
        "positive amount": sorted(oid for oid, _, _, a in big if not a > 0),
        "region known": sorted(oid for oid, _, r, _ in big if r is None or r == "?"),
        "some rows": [] if big else ["fails"],
        "unique order": [] if len({b[0] for b in big}) == len(big) else ["fails"],
        "bounded total": sorted(r for r, t in totals.items() if not t < params["bound"]),
    }


@pytest.fixture(scope="module")
def stores(spark, tmp_path_factory):
    """The eager store (the other modes are made by the slow test that compares them)."""
    d = tmp_path_factory.mktemp("checked")
    paths = {"eager": str(d / "eager")}
    summary = run(FIXTURE, graph_dir=paths["eager"], spark=spark)
    return paths, summary


@pytest.fixture(scope="module")
def all_stores(spark, stores, tmp_path_factory):
    paths, summary = stores
    d = tmp_path_factory.mktemp("checked-modes")
    paths = {**paths, "off": str(d / "off"), "deferred": str(d / "deferred")}
    run(FIXTURE, graph_dir=paths["off"], spark=spark, provenance=False)
    run(FIXTURE, graph_dir=paths["deferred"], spark=spark, capture="deferred")
    materialize(paths["deferred"], spark=spark)
    return paths, summary


def _verdicts(path):
    out = {}
    for e in Store.open(path).executions:
        with open(os.path.join(path, e["dir"], "checks.json")) as fh:
            for r in json.load(fh)["checks"]:
                out[(e["n"], r["node"], r["relation"], r["name"])] = (r["passed"], r["violations"], r["level"], r["kind"])
    return out


def test_every_execution_keeps_each_checks_verdict(stores):
    paths, summary = stores
    eager = _verdicts(paths["eager"])
    for n in (1, 2):
        want = expected(n)
        for (m, _, _, name), (passed, violations, _, kind) in eager.items():
            if m == n:
                assert passed == (not want[name]) and violations == len(want[name]), (n, name)
    assert len(eager) == 10
    # the run says which checks failed, and how to see their rows
    text = str(summary)
    assert "check        'positive amount' on Big of orders fails in execution 1: 1 violating row(s)" in text
    assert "violations \"bounded total\" execution 2" in text


@pytest.mark.slow
def test_the_verdicts_are_the_same_with_provenance_on_off_and_deferred(all_stores):
    paths, _ = all_stores
    eager = _verdicts(paths["eager"])
    assert eager == _verdicts(paths["off"]) == _verdicts(paths["deferred"]) == _verdicts(os.path.join(paths["deferred"], "provenance"))
    s = Session(paths["deferred"])  # a deferred store's violations are its replay's rows
    for n in (1, 2):
        got = _tuples(s.run(f'show violations "positive amount" execution {n}'))
        assert [t["oid"] for t in got] == expected(n)["positive amount"]


def _tuples(results):
    rows = [r["tuple"] if isinstance(r["tuple"], dict) else json.loads(r["tuple"]) for r in results[-1].rows]
    return sorted(rows, key=lambda t: json.dumps(t, sort_keys=True))


def test_violations_select_the_violating_rows(stores):
    paths, _ = stores
    for path in (paths["eager"],):
        s = Session(path)
        for n in (1, 2):
            want = expected(n)
            got = _tuples(s.run(f'show violations "positive amount" execution {n}'))
            assert [t["oid"] for t in got] == want["positive amount"] and all(t["amount"] <= 0 for t in got)
            assert [t["oid"] for t in _tuples(s.run(f'show violations "region known" in orders execution {n}'))] == want["region known"]
        assert [t["region"] for t in _tuples(s.run('show violations "bounded total" execution 2'))] == expected(2)["bounded total"]


def test_blame_is_the_union_of_the_violating_rows_lineages(stores):
    paths, _ = stores
    s = Session(paths["eager"])
    shown = s.run('show violations "region known"')[-1].rows
    union: dict[tuple[str, int], int] = {}
    for row in shown:  # each row's own lineage: the tokens of its polynomial (a token's label repeats per execution)
        lineage = s.run(f"evaluate lineage node {row['id']}")[-1].rows[0]["value"]
        for token in lineage:
            union[(token, row["execution"])] = union.get((token, row["execution"]), 0) + 1
    blamed = s.run('blame violations "region known"')[-1]
    assert {(r["token"], r["execution"]): r["behind"] for r in blamed.rows} == union
    assert union[("Customers:C3", 1)] == union[("Customers:C3", 2)] == 2 == len(shown) / 2  # the unknown region, behind every violation
    assert blamed.extra["relations"] == {"Customers": 2, "Orders": 4}


def test_a_deletion_says_whether_a_check_would_hold_as_a_re_run_without_the_tuple_does(stores):
    paths, _ = stores
    s = Session(paths["eager"])
    s.run('delete token "Orders:O1-3"')
    rows = {(r["execution"], r["check"]): r["what_if"] for r in s.run("checks execution 1")[-1].rows}
    rerun = expected(1, drop=("O1-3",))
    assert rows[(1, "positive amount")] == "holds" and not rerun["positive amount"]
    assert rows[(1, "region known")] == "fails: 1 violating row(s) survive" and rerun["region known"] == ["O1-7"]
    assert rows[(1, "unique order")].startswith("unknown: 1 row(s) removed")  # an aggregate predicate is not recomputed
    assert rows[(1, "bounded total")].startswith("unknown: 1 row(s) of Totals changed values")
    s.run("reset")
    assert "what_if" not in s.run("checks execution 1")[-1].rows[0]


def test_since_when_a_check_fails(stores):
    paths, _ = stores
    r = Session(paths["eager"]).run('checks "bounded total"')[-1]
    assert [(row["execution"], row["verdict"]) for row in r.rows] == [(1, "holds"), (2, "fails")]
    assert r.summary.endswith("fails since execution 2")


@pytest.mark.slow
def test_a_check_of_level_fail_stops_the_run_after_its_execution(spark, tmp_path):
    d = str(tmp_path / "s")
    with pytest.raises(CheckFailed, match="execution 2 failed check.*'bounded total' on Totals of totals"):
        run(FIXTURE, graph_dir=d, spark=spark, params={"fail": True})
    assert len(Store.open(d).executions) == 2  # kept, so its violations can be traced
    assert Session(d).run('show violations "bounded total" execution 2')[-1].rows
    with pytest.raises(CheckFailed):  # the next run goes on, and execution 3 fails the check too
        run(FIXTURE, graph_dir=d, spark=spark, executions=1, params={"fail": True})
    assert len(Store.open(d).executions) == 3


@pytest.mark.slow
def test_bad_declarations_are_refused_in_one_line(spark, tmp_path):
    from pyspark.sql import functions as F

    logic = lambda R: {"O": R}  # noqa: E731
    with pytest.raises(WorkflowError, match="check 'c' is on 'R', which it does not write"):
        Module("m", inputs={"R": "a int"}, outputs={"O": "a int"}, logic=logic, checks=[Check("R", "c", F.col("a") > 0)])
    with pytest.raises(WorkflowError, match="two checks on O are named 'c'"):
        Module("m", inputs={"R": "a int"}, outputs={"O": "a int"}, logic=logic,
               checks=[Check("O", "c", F.col("a") > 0), Check("O", "c", F.col("a") < 9)])
    with pytest.raises(WorkflowError, match="on must be one of row, table"):
        Check("O", "c", F.col("a") > 0, on="column")
    with pytest.raises(WorkflowError, match="SQL text such as 'Amount > 0'"):
        Check("O", "c", 42)
    src = open(FIXTURE).read()
    cases = (('lambda: F.col("amount") > 0)', 'lambda: F.sum("amount") > 0)', "a row check's predicate is a condition on one row"),
             ('lambda: F.count("*") > 0, on="table"', '"amount > 0", on="table"', "a table check's predicate is a boolean aggregate"))
    for i, (right, wrong, hint) in enumerate(cases):
        wf = tmp_path / f"broken{i}.py"
        wf.write_text(src.replace(right, wrong, 1))
        d = str(tmp_path / f"b{i}")
        with pytest.raises(WorkflowError, match=hint) as err:
            run(str(wf), graph_dir=d, spark=spark, executions=1)
        assert "\n" not in str(err.value)
        assert Store.open(d).executions == []  # nothing committed


def test_questions_about_checks_that_are_not_there_get_one_line(stores, tmp_path):
    paths, _ = stores
    s = Session(paths["eager"])
    with pytest.raises(QueryError, match="no such check; the store has checks"):
        s.run('checks "nope"')
    with pytest.raises(QueryError, match="is a table check: it has no violating rows"):
        s.run('show violations "some rows"')
    with pytest.raises(QueryError, match="no row violates it"):
        s.run('show violations "bounded total" execution 1')
