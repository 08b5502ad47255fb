"""The diff of two executions (issue 14 item 6): which tuples appeared, disappeared or changed
value, and what only one side's provenance has.

The expected answers of the small graphs are written by hand from how each graph is built; the
ledger workflow's are computed from its output files and input formula (not from the graph), and
its lineages from a plain backward traversal (not from the polynomials the diff expands).
"""
from __future__ import annotations

import json
import os
import random
import re
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from lipspark.errors import QueryError, QuerySyntaxError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session, diff
from lipspark.query.diff import CHANGES
from lipspark.query.parser import parse
from lipspark.vocabulary import UNKNOWN, Op
from lipspark.vocabulary.ids import aggregate_ids, member_value_ids, positional, tensor_ids
from lipspark.workflow import Store
from tests.query.graphs import Generated, Recorder, dealership

# ---------------------------------------------------------------------------------- hand-made graphs

SALES = {1: [("s1", "north"), ("s2", "north"), ("s3", "south")], 2: [("s4", "north"), ("s5", "west")]}


def tally() -> Generated:
    """Module ``tally`` counts each execution's sales by region: ``Total(Region, N)``, N a Count
    (a v-node over one ⊗ per sale). Execution 1 sells s1, s2 (north) and s3 (south); execution 2
    s4 (north) and s5 (west). Module ``audit`` outputs ``Total(all)`` each time from nothing but
    its invocation (the same provenance in both executions)."""
    r = Recorder(random.Random(0))
    for e, sales in SALES.items():
        inv = r.invocation("tally", "tally", e)
        tseg, iseg = r.segment(), r.segment()
        by_region: dict[str, list[int]] = {}
        for k, (sale, region) in enumerate(sales):
            tok = r.node(positional(tseg, k), "p", Op.TOKEN, f"Sales:{sale}", tseg, type="i", relation="Sales", tuple=json.dumps({"SaleId": sale}))
            node = r.node(positional(iseg, k), "p", Op.INPUT, "·", iseg, type="i", relation="Sales",
                          tuple=json.dumps({"SaleId": sale, "Region": region}))
            r.edge(tok, node)
            r.edge(inv, node)
            by_region.setdefault(region, []).append(node)
        oseg, vseg = r.segment(), r.segment()
        for k, (region, members) in enumerate(sorted(by_region.items())):
            gseg = r.segment()
            group = r.node(positional(gseg, 0), "p", Op.DELTA, "δ", gseg)
            count = r.node(aggregate_ids(group, 0), "v", Op.COUNT, "Count", gseg, value=len(members))
            for slot, m in enumerate(members):
                r.edge(m, group)
                t = r.node(int(tensor_ids(gseg, np.array([slot]))[0]), "v", Op.TENSOR, "⊗", gseg)
                one = r.node(int(member_value_ids(gseg, np.array([slot]))[0]), "v", Op.CONSTANT, "1", gseg, value=1)
                r.edge(m, t)
                r.edge(one, t)
                r.edge(t, count)
            out = r.node(positional(oseg, k), "p", Op.OUTPUT, "·", oseg, type="o", relation="Total",
                         tuple=json.dumps({"Region": region, "N": len(members)}))
            r.edge(group, out)
            r.edge(inv, out)
            outv = r.node(positional(vseg, k), "v", Op.OUTPUT, "·", vseg, type="o", relation="Total", column="N", value=len(members))
            r.edge(count, outv)
            r.edge(inv, outv)
        audit = r.invocation("audit", "audit", e)
        aseg = r.segment()
        r.edge(audit, r.node(positional(aseg, 0), "p", Op.OUTPUT, "·", aseg, type="o", relation="Total", tuple=json.dumps({"Region": "all"})))
    return r.finish(["tally", "audit"])


@pytest.fixture(scope="module")
def sales() -> GraphIndex:
    return tally().index


@pytest.fixture(scope="module")
def dealer() -> GraphIndex:
    return dealership(executions=3).index


def summary(d) -> list[tuple]:
    return [(t.change, t.before, t.after, t.values) for t in d.tuples]


def test_a_count_that_changed_a_region_that_appeared_one_that_disappeared(sales):
    d = diff(sales, "Total", 1, 2, module="tally")
    assert (d.matched_on, d.value_columns, d.by_columns) == (("Region",), ("N",), False)
    assert d.counts() == {"appeared": 1, "disappeared": 1, "changed": 1, "rederived": 0, "unchanged": 0}
    west, south, north = d.tuples
    assert summary(d) == [
        ("appeared", None, {"Region": "west", "N": 1}, ()),
        ("disappeared", {"Region": "south", "N": 1}, None, ()),
        ("changed", {"Region": "north", "N": 2}, {"Region": "north", "N": 1}, (("N", 2, 1),)),
    ]
    # north: two sales counted in execution 1, another one in execution 2
    assert north.only_before.tokens == ("Sales:s1", "Sales:s2") and north.only_after.tokens == ("Sales:s4",)
    assert north.only_before.terms == ("M_tally[e]·δ(M_tally[e]·Sales:s1 + M_tally[e]·Sales:s2)",
                                       "N: M_tally[e]·Sales:s1 ⊗ 1", "N: M_tally[e]·Sales:s2 ⊗ 1")
    assert north.only_after.terms == ("M_tally[e]·δ(M_tally[e]·Sales:s4)", "N: M_tally[e]·Sales:s4 ⊗ 1")
    # west and south: what their lineage has that the other execution's Totals lack
    assert (west.only_after.tokens, west.only_before) == (("Sales:s5",), type(west.only_before)())
    assert west.only_after.terms == ("M_tally[e]·δ(M_tally[e]·Sales:s5)", "N: M_tally[e]·Sales:s5 ⊗ 1")
    assert (south.only_before.tokens, south.only_after.tokens) == (("Sales:s3",), ())
    assert not any(t.only_before.state or t.only_after.state for t in d.tuples)  # tally keeps no state
    assert west.nodes_after and not west.nodes_before and south.nodes_before and not south.nodes_after


def test_the_other_direction_swaps_the_sides(sales):
    d, back = diff(sales, "Total", 1, 2, module="tally"), diff(sales, "Total", 2, 1, module="tally")
    swap = {"appeared": "disappeared", "disappeared": "appeared", "changed": "changed"}
    assert sorted((swap[t.change], t.after, t.before, tuple((c, a, b) for c, b, a in t.values), t.only_after, t.only_before)
                  for t in back.tuples) == sorted((t.change, t.before, t.after, t.values, t.only_before, t.only_after) for t in d.tuples)


def test_matching_on_named_columns_pairs_only_what_it_can(sales):
    # on N: N = 2 only in execution 1; N = 1 has one tuple in execution 1 (south) and two in 2 (north, west): no pairing
    d = diff(sales, "Total", 1, 2, module="tally", on=["N"])
    assert (d.matched_on, d.by_columns) == (("N",), True)
    assert sorted((t.change, (t.before or t.after)["Region"]) for t in d.tuples) == [
        ("appeared", "north"), ("appeared", "west"), ("disappeared", "north"), ("disappeared", "south")]


def test_same_provenance_is_unchanged_and_the_selection_narrows(sales):
    assert diff(sales, "Total", 1, 2, module="audit").counts() == dict.fromkeys(CHANGES, 0) | {"unchanged": 1}
    d = diff(sales, "Total", 1, 2, module="tally", conditions=parse('show output Total(Region = "north")')[0].target.conditions)
    assert [t.change for t in d.tuples] == ["changed"]


def test_the_dealer_bids_explained_by_requests_cars_and_state(dealer):
    d = diff(dealer, "Bids", 1, 2, module="dealer1")
    assert (d.matched_on, d.value_columns) == (("BidId", "UserId", "Model"), ("Amount",))
    b2, b3, b1 = d.tuples
    assert [(t.change, (t.before or t.after)["BidId"]) for t in d.tuples] == [("appeared", "B2"), ("appeared", "B3"), ("disappeared", "B1")]
    # execution 2 reads the cars through the state execution 1 wrote: M_dealer1[1] is in its lineage
    assert b2.only_after.tokens == ("Requests:B2", "M_dealer1[1]") and b2.only_after.state == ()
    group = "δ(Cars:C2·M_dealer1[1]·M_dealer1[e]·Requests:B2 + Cars:C3·M_dealer1[1]·M_dealer1[e]·Requests:B2)"
    assert b2.only_after.terms == (f"M_dealer1[e]·Requests:B2·{group}", f"Amount: calcBid({group})")
    # the Accord request joins car C1, which no bid of execution 1 used
    assert b3.only_after.tokens == ("Cars:C1", "Requests:B3", "M_dealer1[1]")
    assert b3.only_after.state == ("Cars(C1, Accord) in dealer1",)
    assert b3.only_after.terms == ("M_dealer1[e]·Requests:B3·δ(Cars:C1·M_dealer1[1]·M_dealer1[e]·Requests:B3)",
                                   "Amount: calcBid(δ(Cars:C1·M_dealer1[1]·M_dealer1[e]·Requests:B3))")
    group = "δ(Cars:C2·M_dealer1[e]·Requests:B1 + Cars:C3·M_dealer1[e]·Requests:B1)"
    assert (b1.only_before.tokens, b1.only_before.state) == (("Requests:B1",), ())
    assert b1.only_before.terms == (f"M_dealer1[e]·Requests:B1·{group}", f"Amount: calcBid({group})")


def test_state_read_again_is_rederived(dealer):
    d = diff(dealer, "Cars", 1, 2, kind="state", module="dealer1")
    assert d.counts() == {"appeared": 0, "disappeared": 0, "changed": 0, "rederived": 3, "unchanged": 0}
    for t, car in zip(d.tuples, ["C1", "C2", "C3"]):
        assert t.before == t.after and t.before["CarId"] == car and t.values == ()
        assert (t.only_before.tokens, t.only_after.tokens) == ((), ("M_dealer1[1]",))
        assert (t.only_before.terms, t.only_after.terms) == ((f"Cars:{car}·M_dealer1[e]",), (f"Cars:{car}·M_dealer1[1]·M_dealer1[e]",))
    later = diff(dealer, "Cars", 2, 3, kind="state", module="dealer1")
    assert [t.only_after.tokens for t in later.tuples] == [("M_dealer1[2]",)] * 3


def test_a_view_zoomed_out_or_after_a_delete(dealer):
    s = Session(dealer)
    s.run("zoomout dealer1")
    d = diff(s.view, "Bids", 1, 2, module="dealer1")
    b2 = d.tuples[0]
    # one p-node per invocation between all its inputs and its outputs (Definition 4.1): each bid of
    # execution 2 comes from both requests; the cars and the state are inside, the amounts leaves;
    # the edge from the request straight to the bid is cut by the zoom (the zoom node stands for it)
    assert b2.only_after.tokens == ("Requests:B2", "Requests:B3")
    assert b2.only_after.terms == ("M_dealer1[e]·dealer1(M_dealer1[e]·Requests:B2, M_dealer1[e]·Requests:B3)",)
    s.run('reset; delete token "Requests:B3"')
    assert [(t.change, (t.before or t.after)["BidId"]) for t in diff(s.view, "Bids", 1, 2, module="dealer1").tuples] == [
        ("appeared", "B2"), ("disappeared", "B1")]


def test_after_a_delete_values_are_the_what_if_ones(sales):
    """Without sale s1, north counts 1 sale in execution 1 (s2), as in execution 2 (s4): the
    pair stays (its provenance differs) but no value differs any more."""
    s = Session(sales)
    s.run('delete token "Sales:s1"')
    north = next(t for t in diff(s.view, "Total", 1, 2, module="tally").tuples if (t.before or t.after)["Region"] == "north")
    assert (north.change, north.values) == ("changed", ())
    assert north.only_before.tokens == ("Sales:s2",) and north.only_after.tokens == ("Sales:s4",)
    s.run('reset; delete token "Sales:s4"')  # execution 2 loses north's only sale: the group is gone
    assert [(t.change, (t.before or t.after)["Region"]) for t in diff(s.view, "Total", 1, 2, module="tally").tuples] == [
        ("appeared", "west"), ("disappeared", "north"), ("disappeared", "south")]


def test_an_unknown_what_if_value_is_never_equal_to_another(dealer):
    """Without car C2, dealer 1's Civic bids (calcBid of the count of Civics) cannot be
    recomputed in executions 1 and 2: matched on Model, their amounts are ? → ?, not equal."""
    s = Session(dealer)
    s.run('delete token "Cars:C2"')
    d = diff(s.view, "Bids", 1, 2, module="dealer1", on=["Model"])
    civic = next(t for t in d.tuples if t.change == "changed")
    assert civic.values == (("BidId", "B1", "B2"), ("UserId", "P1", "P2"), ("Amount", UNKNOWN, UNKNOWN))
    (r,) = s.run("diff output Bids of dealer1 execution 1, execution 2 on Model")
    assert 'changed  output Bids(B1, P1, Civic, 19500.0) → (B2, P2, Civic, 19500.0): BidId "B1" → "B2", UserId "P1" → "P2", Amount ? → ?' in r.to_text().splitlines()
    assert ("Amount", 19500.0, 19500.0) not in diff(dealer, "Bids", 1, 2, module="dealer1", on=["Model"]).tuples[-1].values  # captured: equal


# ---------------------------------------------------------------------------------- the statement


def test_the_statement_as_text_and_json(dealer):
    (r,) = Session(dealer).run("diff output Bids of dealer1 execution 1, execution 2")
    text = r.to_text().splitlines()
    assert text[:3] == [
        "diff output Bids of dealer1 execution 1, execution 2",
        "output Bids of dealer1, execution 1 → execution 2, matched on BidId, UserId, Model (the columns without values): "
        "2 appeared, 1 disappeared, 0 changed, 0 rederived, 0 unchanged",
        "(M_<module>[e]: the module's invocation in the execution compared; − only in execution 1, + only in execution 2)",
    ]
    assert text[3:5] == ["appeared  output Bids(B2, P2, Civic, 19500.0)", "  + only in execution 2: Requests:B2, M_dealer1[1]"]
    assert "  + only in execution 2: Cars:C1, Requests:B3, M_dealer1[1]; state Cars(C1, Accord) in dealer1" in text
    assert "disappeared  output Bids(B1, P1, Civic, 19500.0)" in text
    d = r.to_dict()
    assert (d["kind"], d["relation"], d["executions"], d["matched_on"], d["value_columns"]) == (
        "diff", {"kind": "output", "name": "Bids", "module": "dealer1"}, [1, 2], ["BidId", "UserId", "Model"], ["Amount"])
    assert d["counts"]["appeared"] == 2 and len(d["rows"]) == 3 and "_lines" not in d
    assert d["rows"][0]["only_after"]["tokens"] == ["Requests:B2", "M_dealer1[1]"]
    json.dumps(d)
    with_ids = r.to_text(ids=True)
    assert f"appeared  [{d['rows'][0]['nodes_after'][0]}] output Bids(B2" in with_ids


def test_long_answers_are_bounded_unless_all(dealer):
    (r,) = Session(dealer).run("diff output Bids of dealer1 execution 1, execution 2")
    one = r.extra["_lines"](ids=False, limit=1)
    assert one[-1] == "… and 2 more tuple(s) (--all shows every one, --format json lists all)"
    assert len(r.to_text(all_rows=True).splitlines()) > len(r.to_text().splitlines()) - 1


def test_a_changed_tuple_reads_before_and_after(sales):
    (r,) = Session(sales).run("diff output Total of tally execution 1, execution 2")
    text = r.to_text().splitlines()
    i = text.index("changed  output Total(north, 2) → (north, 1): N 2 → 1")
    assert text[i + 1:i + 8] == [
        "  − only in execution 1: Sales:s1, Sales:s2",
        "  + only in execution 2: Sales:s4",
        "  − M_tally[e]·δ(M_tally[e]·Sales:s1 + M_tally[e]·Sales:s2)",
        "  − N: M_tally[e]·Sales:s1 ⊗ 1",
        "  − N: M_tally[e]·Sales:s2 ⊗ 1",
        "  + M_tally[e]·δ(M_tally[e]·Sales:s4)",
        "  + N: M_tally[e]·Sales:s4 ⊗ 1",
    ]
    (same,) = Session(sales).run("diff output Total of audit execution 1, execution 2")
    assert same.to_text().splitlines()[-1] == "(no difference)"


@pytest.mark.parametrize("query, message", [
    ("diff output Totals of tally execution 1, execution 2", "no relation 'Totals' in this graph (relations: Sales, Total)"),
    ("diff output Total of talley execution 1, execution 2", "no output of Total in module 'talley' (found in: audit, tally)"),
    ("diff output Total of tally execution 1, execution 1", "needs two different executions, found execution 1 twice"),
    ("diff output Total of tally execution 1, execution 3", "no execution 3 in this graph (executions: 1, 2)"),
    ("diff output Total execution 1, execution 2", "output Total is a relation of several modules (audit, tally); name one"),
    ("diff output Total of tally execution 1, execution 2 on Zone", "no column Zone to match on (its tuples show: Region, N)"),
    ("diff input Total of tally execution 1, execution 2", "no input node of relation Total in this view"),
])
def test_errors_name_what_exists(sales, query, message):
    with pytest.raises(QueryError) as err:
        Session(sales).run(query)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(query + " (line 1)")


def test_base_tuples_are_refused_when_parsed():
    with pytest.raises(QuerySyntaxError, match="diff compares a module's input, state or output tuples, not base tuples"):
        parse("diff tuple Sales execution 1, execution 2")


# ---------------------------------------------------------------------------------- a real workflow


def _outputs(root: str, relation: str) -> dict[int, dict[str, tuple]]:
    """Execution → Account → (Balance, Deposits) of ``relation``, read from the store's files."""
    store = Store.open(root)
    out: dict[int, dict[str, tuple]] = {}
    for e in store.executions:
        rows = out.setdefault(e["n"], {})
        desc = e["outputs"]["ledger"][relation]
        for f in desc["files"]:
            for row in pq.read_table(os.path.join(root, f["path"])).to_pylist():
                assert row["Account"] not in rows
                rows[row["Account"]] = (row["Balance"], row["Deposits"])
    return out


def _deposits(execution: int, per_exec: int = 2) -> list[tuple[str, str, int]]:
    """The ledger fixture's input formula (tests/fixtures/ledger.py ``inputs``)."""
    return [(f"D{execution}-{i}", "ABC"[(execution + i) % 3], 10 * execution + i) for i in range(per_exec)]


def _lineage_tokens(g: GraphIndex, positions: list[int], execution: int) -> set[str]:
    """Tokens of a plain backward traversal: base tuples by label, invocations as M_<module>[<n>],
    this execution's as M_<module>[e]."""
    up = np.union1d(g.ancestors(np.array(positions)), positions)
    found = set()
    for p in up.tolist():
        a = g.attrs(p)
        if a["op"] is Op.TOKEN:
            found.add(a["label"])
        elif a["op"] is Op.INVOCATION:
            found.add(f"M_{a['label']}[{'e' if a['execution'] == execution else a['execution']}]")
    return found


@pytest.mark.parametrize("i, j", [(1, 2), (2, 3), (1, 3), (3, 1)])
def test_the_ledger_run_three_times_against_its_files(ledger_runs, i, j):
    root = ledger_runs[0]
    g = GraphIndex.load(root)
    data = _outputs(root, "Changed")
    d = diff(g, "Changed", i, j, module="ledger")
    assert (d.matched_on, d.value_columns) == (("Account",), ("Balance", "Deposits"))
    before, after = data[i], data[j]
    expected = sorted(
        [("appeared", a) for a in after if a not in before] + [("disappeared", a) for a in before if a not in after]
        + [("changed", a) for a in before if a in after and before[a] != after[a]])
    assert sorted((t.change, (t.before or t.after)["Account"]) for t in d.tuples) == expected
    assert d.unchanged + d.counts()["rederived"] == sum(1 for a in before if a in after and before[a] == after[a])
    # the other side's whole lineage (appeared and disappeared tuples are compared with it)
    side = {n: [p for p in np.flatnonzero(g.where("relation", ["Changed"])).tolist()
                if g.op[p] == Op.OUTPUT and not g.is_v[p] and g.attrs(p)["execution"] == n] for n in (i, j)}
    whole = {n: set().union(*(_lineage_tokens(g, [p], n) for p in side[n])) for n in (i, j)}
    for t in d.tuples:
        account = (t.before or t.after)["Account"]
        if t.change == "changed":
            assert t.values == tuple((c, b, a) for c, b, a in zip(("Balance", "Deposits"), before[account], after[account]) if b != a)
            mine = _lineage_tokens(g, list(g.positions(t.nodes_before)), i), _lineage_tokens(g, list(g.positions(t.nodes_after)), j)
            assert set(t.only_before.tokens) == mine[0] - mine[1] and set(t.only_after.tokens) == mine[1] - mine[0]
            # the terms that differ are exactly the change of the Sum: Σ only-after − Σ only-before = Balance_j − Balance_i
            assert _sum_of(t.only_after.terms, "Balance") - _sum_of(t.only_before.terms, "Balance") == after[account][0] - before[account][0]
        else:
            n, other = (j, i) if t.change == "appeared" else (i, j)
            nodes = t.nodes_after if t.change == "appeared" else t.nodes_before
            only = t.only_after if t.change == "appeared" else t.only_before
            assert set(only.tokens) == _lineage_tokens(g, list(g.positions(nodes)), n) - whole[other]
        if t.after is not None and i < j:  # the later execution's own deposits to the account explain it
            new = {f"Deposits:{dep}" for dep, acc, _ in _deposits(j) if acc == account}
            assert new and new <= set(t.only_after.tokens)


def _sum_of(terms: tuple[str, ...], column: str) -> int:
    total = 0
    for term in terms:
        m = re.fullmatch(rf"{column}: (?:(\d+)·)?.* ⊗ (-?\d+)", term)
        if m:
            total += int(m.group(1) or 1) * int(m.group(2))
    return total


def test_the_ledger_summary_has_only_values(ledger_runs):
    # Summary(Accounts, Total): every column an aggregate, so no column to match on: one tuple a side, changed or not
    g = GraphIndex.load(ledger_runs[0])
    d = diff(g, "Summary", 1, 2, module="report")
    assert d.matched_on == () and d.value_columns == ("Accounts", "Total")
    assert [t.change for t in d.tuples] == ["changed"]
    assert Counter(c for c, _, _ in d.tuples[0].values) == Counter(["Total"])


@pytest.mark.parametrize("text, expected", [
    ("diff output Bids1 of dealer1 execution 1, execution 2", ("output", "Bids1", 1, 2, (), "dealer1", ())),
    ('DIFF state Seen(Account = "A") IN ledger EXECUTION 3, execution 1 ON DepId, `Account`',
     ("state", "Seen", 3, 1, (("Account", "=", "A"),), "ledger", ("DepId", "Account"))),
    ("diff input `on` execution 2, execution 1", ("input", "on", 2, 1, (), None, ())),
])
def test_the_statement_parses_and_prints_back(text, expected):
    (stmt,) = parse(text)
    conds = tuple((c.column, c.op, c.value) for c in stmt.conditions)
    assert (stmt.kind, stmt.relation, stmt.before, stmt.after, conds, stmt.module, stmt.on) == expected
    assert parse(str(stmt)) == [stmt]
    assert str(stmt).startswith("diff ") and (" in ledger " in str(stmt)) == (" IN ledger " in text)
