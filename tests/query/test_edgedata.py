"""The data on every dataflow edge (issue 18, item 3): row counts, changes since the previous
execution and sample rows with their polynomials, per invocation, checked against the ledger
fixture's input formula worked out by hand and against the store's files read independently."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import QueryError
from lipspark.query import Session
from lipspark.query.edgedata import EdgeData, SampleRow, edge_lines, row_changes
from lipspark.store import Store

PER_EXEC = 2  # tests/fixtures/ledger.py's perExec


# ---------------------------------------------------------------------------------- without a store


def _brute_changes(before: list[tuple], after: list[tuple]) -> tuple[int, int]:
    """Added and removed by pairing equal rows one by one (no Counter): the rows of ``after``
    left unpaired were added, those of ``before`` left unpaired removed."""
    left = list(before)
    added = 0
    for row in after:
        for i, old in enumerate(left):
            if old == row:
                del left[i]
                break
        else:
            added += 1
    return added, len(left)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2)), max_size=8),
       st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2)), max_size=8))
def test_changes_are_multiset_differences(before, after):
    rows = lambda ts: [{"k": k, "n": n} for k, n in ts]  # noqa: E731
    assert row_changes(rows(before), rows(after)) == _brute_changes(before, after)


def test_rows_compare_by_column_name_nan_equal_nested_by_members():
    nan = float("nan")
    assert row_changes([{"a": 1, "b": nan}], [{"b": float("nan"), "a": 1}]) == (0, 0)
    assert row_changes([{"a": [1, 2], "s": {"x": 1}}], [{"a": [1, 2], "s": {"x": 1}}]) == (0, 0)
    assert row_changes([{"a": [1, 2]}], [{"a": [2, 1]}]) == (1, 1)
    assert row_changes([{"a": None}], [{"a": None}, {"a": None}]) == (1, 0)
    assert row_changes([{"a": 1}], [{"a": 1, "b": None}]) == (1, 1)  # another schema: other rows


def test_what_a_line_says():
    e = EdgeData("state", "Seen", "ledger", "ledger", 5, 1, "d", False, rows=412, previous=410, added=3, removed=1)
    assert e.describe() == "412 rows (+3 −1 since execution 4)" and not e.new and e.change() == "+3 −1"
    first = EdgeData("input", "Deposits", "intake", "intake", 1, 1, "d", True, rows=1)
    assert first.describe() == "1 row (new: the first execution)" and first.new and first.name == "input Deposits (workflow input)"
    gone = EdgeData("output", "X", "m", "m", 3, 1, "d", False, rows=0)
    assert gone.describe() == "0 rows (new: none in execution 2)" and gone.change() == "new"
    d = e.to_dict()
    assert (d["data"], d["added"], d["removed"], d["new"], d["samples"]) == ("412 rows (+3 −1 since execution 4)", 3, 1, False, [])


def test_lines_are_bounded_and_escape_control_characters():
    es = [EdgeData("output", f"R{i}", "m", "m", 1, 1, "d", False, rows=1, samples=(SampleRow({"v": "a\nb\u202e"}, 5, "p" * 500),))
          for i in range(4)]
    lines = edge_lines(es, limit=2)
    assert lines[-1] == "… and 2 more relation(s) (--all shows every one, --format json lists all)"
    assert sum(1 for line in lines if line.startswith("  output R")) == 2
    sample = next(line for line in lines if line.startswith("    "))
    assert "\n" not in sample and "\u202e" not in sample and "a\\nb\\u202e" in sample
    assert "(500 characters; --format json shows all)" in sample
    assert len(edge_lines(es)) == 1 + 1 + 4 * 2  # heading, one invocation, each relation and its sample


def test_a_session_on_a_graph_in_memory_says_where_the_data_is():
    import pandas as pd

    from lipspark.graph.index import GraphIndex

    g = GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "op": "token", "label": ["R:a"]}), pd.DataFrame({"src": [], "dst": []}))
    with pytest.raises(QueryError, match="open it on the store's path"):
        Session(g).edges()


# ---------------------------------------------------------------------------------- the ledger, by hand


def _deposits(n: int) -> list[dict]:
    """tests/fixtures/ledger.py's inputs for execution ``n`` (0: its initial Seen)."""
    if n == 0:
        return [{"DepId": "D0-0", "Account": "A", "Amount": 10}]
    return [{"DepId": f"D{n}-{i}", "Account": "ABC"[(n + i) % 3], "Amount": 10 * n + i} for i in range(PER_EXEC)]


def _balances(seen: list[dict]) -> list[dict]:
    out: dict[str, dict] = {}
    for d in seen:
        b = out.setdefault(d["Account"], {"Account": d["Account"], "Balance": 0, "Deposits": 0})
        b["Balance"] += d["Amount"]
        b["Deposits"] += 1
    return list(out.values())


def _expected(n: int) -> dict[tuple[str, str, str], list[dict]]:
    """(workflow node, kind, relation) → the rows of execution ``n``, from the fixture's formula."""
    seen_before = list(itertools.chain.from_iterable(_deposits(k) for k in range(n)))  # read by execution n
    balances_before = _balances(seen_before) if n > 1 else []  # no initial Balances
    after = _balances(seen_before + _deposits(n))
    touched = {d["Account"] for d in _deposits(n)}
    changed = [b for b in after if b["Account"] in touched]
    return {
        ("intake", "input", "Deposits"): _deposits(n),
        ("intake", "output", "Incoming"): _deposits(n),
        ("ledger", "input", "Incoming"): _deposits(n),
        ("ledger", "state", "Balances"): balances_before,
        ("ledger", "state", "Seen"): seen_before,
        ("ledger", "output", "Changed"): changed,
        ("report", "input", "Changed"): changed,
        ("report", "output", "Summary"): [{"Accounts": len(changed), "Total": sum(b["Balance"] for b in changed)}],
    }


def _multiset(rows: list[dict]) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in rows)


def test_every_edge_of_the_ledger_as_worked_out_by_hand(ledger_runs):
    s = Session(ledger_runs[0])
    s.run("zoomout intake, ledger, report")
    edges = s.edges()
    got = {(e.node, e.kind, e.relation, e.execution): e for e in edges}
    assert len(got) == len(edges) == 8 * 3
    for n in (1, 2, 3):
        for (node, kind, relation), rows in _expected(n).items():
            e = got[node, kind, relation, n]
            assert e.rows == len(rows), (node, kind, relation, n)
            assert e.workflow_input == (relation == "Deposits")
            if n == 1:
                assert (e.previous, e.added, e.removed) == (None, None, None) and e.new
                continue
            before, now = _multiset(_expected(n - 1)[node, kind, relation]), _multiset(rows)
            assert (e.previous, e.added, e.removed) == (len(_expected(n - 1)[node, kind, relation]),
                                                       sum((now - before).values()), sum((before - now).values())), (node, relation, n)
    # the figures the formula gives, spelled out for two of them
    assert got["ledger", "state", "Seen", 3].describe() == "5 rows (+2 −0 since execution 2)"
    assert got["intake", "input", "Deposits", 2].describe() == "2 rows (+2 −2 since execution 1)"


def _stored(root: str, source: str) -> list[dict]:
    """The rows of a stored relation, read whole with pyarrow, its hidden columns dropped."""
    store = Store.open(root)
    files = sorted(f for f in os.listdir(os.path.join(store.root, source)) if f.endswith(".parquet"))
    rows = []
    for f in files:
        t = pq.read_table(os.path.join(store.root, source, f))
        rows += t.select([c for c in t.column_names if not c.startswith("__lp_")]).to_pylist()
    return rows


def test_counts_and_samples_are_the_files_and_the_sample_statement(ledger_runs):
    root = ledger_runs[0]
    fine = Session(root)
    for e in fine.edges():
        rows = _stored(root, e.source)
        assert e.rows == len(rows)
        assert [dict(r.values) for r in e.samples] == rows[:3]
        assert all(r.in_view for r in e.samples)
        if e.samples:  # the rows `sample relation` lists, with the same polynomials
            (r,) = fine.run(f"sample relation {e.relation} of {e.node} execution {e.execution} 3")
            mine = [x for x in r.rows if x["op"] == e.kind]
            assert [x["polynomial"] for x in mine] == [x.polynomial for x in e.samples]
            assert [x["id"] for x in mine] == [x.node for x in e.samples]
    # zoomed out, a state row is hidden: its polynomial is the captured graph's
    zoomed = Session(root)
    zoomed.run("zoomout ledger")
    (seen,) = [e for e in zoomed.edges("ledger", 3) if e.relation == "Seen"]
    assert seen.samples and not any(r.in_view for r in seen.samples)
    from lipspark.graph.expression import polynomial

    assert [r.polynomial for r in seen.samples] == [str(polynomial(zoomed.base, r.node)) for r in seen.samples]
    (changed,) = [e for e in zoomed.edges("ledger", 3) if e.kind == "output"]
    assert all(r.in_view and "ledger(" in r.polynomial for r in changed.samples)  # through the zoomed-out step


def test_show_of_a_zoomed_out_invocation_lists_its_edges(ledger_runs):
    s = Session(ledger_runs[0])
    plain = s.run("show invocation ledger execution 2")[0]
    assert "edge_data" not in plain.to_dict() and "the data on the edges" not in plain.to_text()  # not zoomed out
    zoomout, show = s.run("zoomout ledger; show invocation ledger execution 2")
    text = show.to_text()
    data = show.to_dict()["edge_data"]
    assert [d["relation"] for d in data] == ["Incoming", "Balances", "Seen", "Changed"]
    assert data == [e.to_dict() for e in s.edges("ledger", 2)]
    assert "  state Seen: 3 rows (+2 −0 since execution 1); its rows are hidden in this view" in text
    assert "  input Incoming: 2 rows (+2 −2 since execution 1)" in text
    assert text.index("invocation ledger") < text.index("the data on the edges of 1 invocation(s)")
    # a module not zoomed out adds nothing; both add both
    assert "edge_data" not in s.run("show invocation report execution 2")[0].to_dict()
    json.dumps(show.to_dict(), default=str)


def test_errors_name_what_exists(ledger_runs):
    s = Session(ledger_runs[0])
    with pytest.raises(QueryError, match="no invocation of a module 'nope' in this view; modules: intake, ledger, report"):
        s.edges("nope")
    with pytest.raises(QueryError, match="no invocation of 'ledger' in execution 9"):
        s.edges("ledger", 9)
    with pytest.raises(QueryError, match="samples must be 0 or more"):
        s.edges(samples=-1)
    assert all(not e.samples for e in s.edges(samples=0))


def test_no_spark_for_any_of_it(ledger_runs):
    """A query process answers, shows and draws the data on the edges without importing pyspark."""
    code = ("import sys; from lipspark.query import Session; import lipspark.viz as viz; "
            f"s = Session({ledger_runs[0]!r}); s.edges(); r = s.run('zoomout intake, ledger, report; show invocation ledger')[-1]; "
            "r.to_text(); viz.to_html(s.run('reset; zoomout ledger')[-1]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
