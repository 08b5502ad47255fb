"""Where-provenance (`where column C of SELECTOR`, lipspark.query.where) on the ledger workflow,
every expected row worked out by hand from tests/fixtures/ledger.py:

execution n deposits D{n}-i into account "ABC"[(n + i) % 3] with amount 10·n + i (i = 0, 1), the
initial state Seen holds D0-0 (A, 10), and ledger keeps Seen ∪ Incoming and the sum per account:

* execution 1: D1-0 (B, 10), D1-1 (C, 11) → balances A 10, B 10, C 11; Changed: B, C
* execution 2: D2-0 (C, 20), D2-1 (A, 21) → balances A 31, B 10, C 31; Changed: A, C;
  Summary Total = 31 + 31 = 62
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from lipspark.errors import QueryError, StoreError
from lipspark.query import Session
from lipspark.query.parser import parse


def _rows(result, *cols):
    return sorted(tuple(r[c] for c in cols) for r in result.rows)


def test_an_aggregate_comes_from_its_members_values(ledger_runs):
    on, _ = ledger_runs
    (r,) = Session(on).run('where column Balance of output Changed(Account = "A") of ledger execution 2')
    # A's balance in execution 2 is the sum of D0-0's 10 (initial Seen) and D2-1's 21
    assert _rows(r, "relation", "tuple", "column", "value", "how") == [
        ("Deposits", "Deposits:D2-1", "Amount", 21, "AGGREGATION"),
        ("Seen", "Seen:D0-0", "Amount", 10, "AGGREGATION"),
    ]
    assert {row["execution"] for row in r.rows if row["relation"] == "Deposits"} == {2}


def test_a_copied_column_comes_from_the_same_column(ledger_runs):
    on, _ = ledger_runs
    (r,) = Session(on).run('where column Account of output Changed(Account = "A") of ledger execution 2')
    assert _rows(r, "tuple", "column", "value", "how") == [
        ("Deposits:D2-1", "Account", "A", "IDENTITY"), ("Seen:D0-0", "Account", "A", "IDENTITY")]


def test_a_value_is_traced_through_two_modules(ledger_runs):
    on, _ = ledger_runs
    (r,) = Session(on).run("where column Total of output Summary of report execution 2")
    # Total = A's 31 (D0-0, D2-1) + C's 31 (D1-1, D2-0)
    assert _rows(r, "tuple", "value", "how") == [
        ("Deposits:D1-1", 11, "AGGREGATION"), ("Deposits:D2-0", 20, "AGGREGATION"),
        ("Deposits:D2-1", 21, "AGGREGATION"), ("Seen:D0-0", 10, "AGGREGATION")]
    assert sum(row["value"] for row in r.rows) == 62


def test_module_inputs_and_base_tuples(ledger_runs):
    on, _ = ledger_runs
    s = Session(on)
    (inputs,) = s.run("where column Balance of input Changed of report execution 2")
    assert _rows(inputs, "of", "tuple", "value") == [
        ("input Changed(A, 31, 2)", "Deposits:D2-1", 21), ("input Changed(A, 31, 2)", "Seen:D0-0", 10),
        ("input Changed(C, 31, 2)", "Deposits:D1-1", 11), ("input Changed(C, 31, 2)", "Deposits:D2-0", 20)]
    assert "of" in inputs.to_text().splitlines()[2]  # several tuples asked about: each row says which
    (base,) = s.run('where column Amount of tuple Deposits(DepId = "D2-1")')
    assert _rows(base, "tuple", "value", "how") == [("Deposits:D2-1", 21, "IDENTITY")]


def test_a_constant_comes_from_nothing_and_unknown_columns_are_named(ledger_runs):
    on, _ = ledger_runs
    s = Session(on)
    (r,) = s.run("where column Deposits of output Changed of ledger execution 1")  # count(1): no column is read
    assert r.rows == [] and "computed from no base column" in r.summary
    with pytest.raises(QueryError, match=r"has no column 'Nope'; its columns: Account, Balance, Deposits"):
        s.run("where column Nope of output Changed of ledger execution 1")
    with pytest.raises(QueryError, match=r"relation Deposits has no column 'Nope'; its columns: DepId, Account, Amount"):
        s.run('where column Nope of tuple Deposits(DepId = "D2-1")')


def test_where_needs_a_store_that_recorded_lineage(ledger_runs, tmp_path):
    on, _ = ledger_runs
    with pytest.raises(QueryError, match=r"open it on the store's path"):
        Session(Session(on).base).run("where column Total of output Summary of report execution 1")
    old = str(tmp_path / "old")
    shutil.copytree(on, old, ignore=shutil.ignore_patterns("index"))
    os.remove(os.path.join(old, "executions", "000001", "lineage.json"))  # as a store written before lineage
    with pytest.raises(QueryError, match=r"execution 1 was written before lipspark recorded it .*run the workflow again into a new store"):
        Session(old).run("where column Total of output Summary of report execution 1")


def test_the_statement_prints_back_as_written():
    (stmt,) = parse("WHERE COLUMN `where` of output Bids1 of dealer1 execution 1")
    assert str(stmt) == "where column `where` of output Bids1 of dealer1 execution 1"
    assert str(parse(str(stmt))[0]) == str(stmt)


def test_lineage_is_recorded_once_per_written_relation(ledger_runs):
    on, _ = ledger_runs
    with open(os.path.join(on, "executions", "000002", "lineage.json")) as fh:
        doc = json.load(fh)
    rels = {(r["node"], r["relation"], r["kind"]): r for r in doc["relations"]}
    assert sorted(rels) == [("intake", "Incoming", "output"), ("ledger", "Balances", "state"), ("ledger", "Changed", "output"),
                            ("ledger", "Seen", "state"), ("report", "Summary", "output")]
    changed = rels[("ledger", "Changed", "output")]
    seen1, incoming = "executions/000001/state/ledger/Seen", "executions/000002/outputs/intake/Incoming"
    # Balance = sum(Amount) over Seen ∪ Incoming; the group key Account and the join with Incoming's accounts decide the rows
    assert [(f["relation"], f["column"], f["subtype"]) for f in changed["columns"]["Balance"]] == [
        (seen1, "Amount", "AGGREGATION"), (incoming, "Amount", "AGGREGATION")]
    assert sorted((f["relation"], f["column"], f["subtype"]) for f in changed["dataset"]) == [
        (seen1, "Account", "GROUP_BY"), (seen1, "Account", "JOIN"), (incoming, "Account", "GROUP_BY"), (incoming, "Account", "JOIN")]
    assert changed["reads"] == {incoming: ["input", "Incoming"], seen1: ["state", "Seen"],
                                "executions/000001/state/ledger/Balances": ["state", "Balances"]}


def test_plain_and_annotated_runs_record_the_same_lineage(ledger_runs):
    """Provenance off (plain frames, as deferred capture runs modules) and on (annotated frames)
    write the same lineage.json for every execution: the walk skips the hidden columns."""
    on, off = ledger_runs
    for n in (1, 2, 3):
        docs = []
        for store in (on, off):
            with open(os.path.join(store, "executions", f"{n:06d}", "lineage.json")) as fh:
                docs.append(json.load(fh))
        assert docs[0] == docs[1]
        assert len(docs[0]["relations"]) == 5
