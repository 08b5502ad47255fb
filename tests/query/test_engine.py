"""The query language run by a Session on a hand-built car dealership (no Spark)."""
from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.errors import QueryError
from lipspark.query import Session
from lipspark.query.deletion import delete
from lipspark.query import polynomial
from lipspark.query.trace import ancestors, descendants, subgraph
from lipspark.query.zoom import zoom_out
from tests.query.graphs import dealership, workflow_graphs

B1 = "output Bids in dealer1 execution 1"


@pytest.fixture(scope="module")
def dealer():
    return dealership()


@pytest.fixture
def session(dealer):
    return Session(dealer.index)


def one(session, query):
    """Run a one-statement query; check it renders as text and as JSON."""
    results = session.run(query)
    assert len(results) == 1
    r = results[0]
    text = r.to_text()
    assert text.splitlines()[0] == r.statement and str(r) == text
    d = r.to_dict()
    assert d["statement"] == r.statement and d["kind"] == r.kind and d["rows"] == r.rows
    json.loads(json.dumps(d))
    return r


def ids(rows, key="id"):
    return sorted(r[key] for r in rows)


def fill(query, names):
    """Replace ``<name>`` by the id of the dealership's node of that name."""
    return re.sub(r"<([^<>]+)>", lambda m: str(names[m.group(1)]), query)


# ------------------------------------------------------------------ views: zoomout, zoomin, reset


def test_zoomout_zoomin_reset(session, dealer):
    g, n = dealer.index, dealer.names
    r = one(session, "zoomout dealer1")
    assert r.kind == "view" and r.extra["zoomed_out"] == ["dealer1"]
    assert session.view.same_as(zoom_out(g, ["dealer1"]))
    assert r.extra["nodes"] == len(session.view) and r.extra["edges"] == session.view.num_edges
    assert "zoomed out: dealer1" in r.summary and "zoomed out dealer1" in r.to_text()
    # later statements (and later calls) read the zoomed view
    poly = one(session, "polynomial output BestBid in agg execution 1").rows[0]["polynomial"]
    assert "dealer1(M_dealer1[1]·Requests:B1)" in poly and "Cars:" not in poly
    r = one(session, "zoomin dealer1")
    assert session.view.same_as(g) and r.extra["zoomed_out"] == [] and "zoomed out:" not in r.summary
    # several statements in one query, case-insensitive keywords
    results = session.run("ZOOMOUT dealer1, agg; ZoomIn agg;")
    assert [x.extra["zoomed_out"] for x in results] == [["dealer1", "agg"], ["dealer1"]]
    assert session.view.same_as(zoom_out(g, ["dealer1"]))
    r = one(session, "reset")
    assert session.view is session.base and r.extra["zoomed_out"] == [] and "back to the captured graph" in r.summary
    assert one(session, f"show node {n['Cars:C2']}").rows[0]["label"] == "Cars:C2"


# ------------------------------------------------------------------ delete


def test_delete_reports_outputs_and_values(session, dealer):
    g, n = dealer.index, dealer.names
    r = one(session, 'delete tuple Cars(CarId = "C2")')
    want = delete(g, [n["Cars:C2"]])
    assert r.kind == "delete" and session.view.same_as(want.view)
    d = r.to_dict()
    assert d["deleted"] == [n["Cars:C2"]] and d["removed"] == want.removed_ids.tolist()
    assert d["removed_outputs"] == []
    assert ids(d["surviving_outputs"]) == sorted(n[k] for k in ("bids:B1", "bids:B2", "bids:B3", "best[1]", "best[2]"))
    assert d["surviving_outputs"][0].keys() >= {"id", "module", "execution", "relation", "tuple"}
    changed = {c["node"]: {k: c[k] for k in ("node", "label", "before", "after")} for c in d["changed_values"]}
    assert changed[n["count:B1"]] == {"node": n["count:B1"], "label": "Count", "before": 2, "after": 1}
    assert changed[n["count:B2"]]["after"] == 1
    assert changed[n["calc:B1"]] == {"node": n["calc:B1"], "label": "calcBid", "before": 19500.0, "after": "unknown"}
    assert changed[n["min[2]"]]["after"] == "unknown"
    assert n["count:B3"] not in changed  # B3 is an Accord: car C2 is not in its group
    assert r.summary.startswith(f"deleted 1 node(s); {len(want.removed_ids)} removed in all; 0 output(s) removed, 5 survive")
    text = r.to_text()
    assert "removed outputs:\n(none)" in text and "changed values:" in text and "surviving outputs:" in text
    # grouped by output tuple, the values inside modules counted, ? for what the graph cannot tell
    assert re.search(r"\noutput Bids +dealer1 +1 +Amount 19500.0 → \?\n", text) and "(? : a value the graph cannot recompute" in text
    assert "inside modules: Count 2 → 1 (×2), " in text and "calcBid 19500.0 → ? (×2)" in text
    assert str(n["calc:B1"]) not in text and str(n["calc:B1"]) in r.to_text(ids=True)  # ids only when asked for
    # the view keeps the deletion: later statements see it
    assert one(session, f"depends node {n['count:B1']} on node {n['Cars:C3']}").rows[0]["depends"] is True
    with pytest.raises(QueryError, match=r'token "Cars:C2": .*removed by an earlier delete'):
        session.run('show token "Cars:C2"')


def test_delete_several_and_removed_outputs(session, dealer):
    n = dealer.names
    r = one(session, 'delete tuple Cars(CarId = "C2"), token "Cars:C3"')
    d = r.to_dict()
    assert d["deleted"] == sorted([n["Cars:C2"], n["Cars:C3"]])
    assert ids(d["removed_outputs"]) == sorted(n[k] for k in ("bids:B1", "bids:B2", "best[1]", "best[2]"))
    assert ids(d["surviving_outputs"]) == [n["bids:B3"]]
    # execution 1 lost its only bid; execution 2's minimum is now B3's (its BestBid tuple is gone, its value stays)
    assert sorted((c["node"], c["before"], c["after"]) for c in d["changed_values"]) == [
        (n["min[2]"], 19500.0, 20000.0), (n["best_amount[2]"], 19500.0, 20000.0)]
    one(session, "reset")
    d = one(session, 'delete token "Requests:B2"').to_dict()
    assert ids(d["removed_outputs"]) == sorted([n["bids:B2"], n["best[2]"]])
    assert [(c["node"], c["before"], c["after"]) for c in d["changed_values"] if c["label"] == "Min"] == [(n["min[2]"], 19500.0, 20000.0)]


@pytest.mark.parametrize("query, expected", [
    ('zoomout dealer1; delete token "Requests:B1"; zoomin dealer1', lambda g, n: delete(g, [n["Requests:B1"]]).view),
    ('zoomout agg; delete tuple Cars(CarId = "C2"); zoomin agg', lambda g, n: delete(g, [n["Cars:C2"]]).view),
    ('zoomout dealer1, agg; delete token "Requests:B2"; zoomin agg',
     lambda g, n: delete(zoom_out(g, ["dealer1"]), [n["Requests:B2"]]).view),
    ('zoomout dealer1; zoomout agg; delete token "Requests:B2"; zoomin dealer1',  # the delete ran with agg zoomed out: its
     lambda g, n: delete(zoom_out(g, ["agg"]), [n["Requests:B2"]]).view),           # Min is not recomputed (what-if values)
    ('zoomout agg; delete token "Requests:B1"; zoomout dealer1; zoomin agg',
     lambda g, n: zoom_out(delete(g, [n["Requests:B1"]]).view, ["dealer1"])),
    ('delete token "Requests:B1"; zoomout dealer1; zoomin dealer1', lambda g, n: delete(g, [n["Requests:B1"]]).view),
])
def test_zoomin_after_a_delete_reapplies_it_on_the_finer_view(session, dealer, query, expected):
    g, n = dealer.index, dealer.names
    results = session.run(query)
    assert session.view.same_as(expected(g, n))
    assert results[-1].extra["zoomed_out"] == list(session.view.zoom)
    # the deletion in the zoomed view removed the zoom node's outputs; zoomed in, the finer graph decides
    if "Cars" in query:
        assert session.view.contains(n["bids:B1"]) and not session.view.contains(n["join:B1:C2"])


def test_zoomin_after_deleting_a_zoom_node_is_refused(session, dealer):
    zid = dealer.names["dealer1[1]"] | 1
    session.run(f"zoomout dealer1; delete node {zid}")
    with pytest.raises(QueryError, match=rf"an earlier delete removed zoomed-out node\(s\) \[{zid}\]; use reset"):
        session.run("zoomin dealer1")


@settings(max_examples=10, deadline=None, database=None)
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_zoomin_after_delete_on_generated_graphs(gen, rnd):
    g = gen.index
    m = rnd.choice(gen.modules)
    s = Session(g)
    s.run(f"zoomout {m}")
    victim = rnd.choice([int(i) for i in s.view.ids if g.contains(int(i)) and i >= 0])
    s.run(f"delete node {victim}; zoomin {m}")
    assert s.view.same_as(delete(g, [victim]).view)


# ------------------------------------------------------------------ reading statements


def test_traces_and_show(session, dealer):
    g, n = dealer.index, dealer.names
    r = one(session, f"subgraph {B1}")
    assert r.kind == "subgraph" and ids(r.rows) == subgraph(g, n["bids:B1"]).tolist()
    members = set(ids(r.rows))
    edges = [(s, d) for s, d in dealer.edge_list if s in members and d in members]
    assert sorted((e["src"], e["dst"]) for e in r.extra["edges"]) == sorted(edges)
    assert r.summary == f"{len(members)} node(s), {len(edges)} edge(s)"
    assert ids(one(session, f"ancestors {B1}").rows) == ancestors(g, n["bids:B1"]).tolist()
    assert ids(one(session, 'descendants tuple Cars(CarId = "C2")').rows) == descendants(g, n["Cars:C2"]).tolist()
    assert one(session, 'ancestors token "Cars:C2"').rows == []
    row = one(session, 'show state Cars(CarId = "C2") in dealer1 execution 2').rows[0]
    assert row == {"id": n["state:C2[2]"], "name": "state Cars(C2, Civic)", "kind": "p", "op": "state", "type": "s", "label": "·",
                   "module": "dealer1", "invoked_as": None, "execution": 2, "relation": "Cars", "column": None, "tuple": {"CarId": "C2", "Model": "Civic"},
                   "value": None}
    assert ids(one(session, "show invocation dealer1").rows) == [n["dealer1[1]"], n["dealer1[2]"]]
    assert ids(one(session, "show input Bids(Amount < 19999) of agg").rows) == sorted([n["agg_in:B1"], n["agg_in:B2"]])
    assert ids(one(session, 'show input Bids(Amount >= 19999.5, Model != "Civic") in agg execution 2').rows) == [n["agg_in:B3"]]
    text = one(session, 'show tuple Cars(CarId = "C2")').to_text()
    assert "Cars:C2" in text and str(n["Cars:C2"]) not in text


def test_long_tables_are_cut_in_text_but_not_in_json():
    s = Session(dealership(3).index)
    r = one(s, 'subgraph tuple Cars(CarId = "C2")')
    assert len(r.rows) > 50 and len(r.to_dict()["rows"]) == len(r.rows)
    assert f"… and {len(r.rows) - 50} more (--all shows every row, --format json lists all)" in r.to_text()
    assert "… and" not in r.to_text(all_rows=True) and r.to_text(all_rows=True).count("\n") == r.to_text().count("\n") + len(r.rows) - 51


def test_ipython_shows_a_result_as_its_text(session):
    """A notebook's text/plain output of a result (what a viewer without HTML shows) is its
    answer, not the dataclass with every row."""
    pretty = pytest.importorskip("IPython.lib.pretty")
    r = one(session, "show invocation dealer1")
    assert pretty.pretty(r) == r.to_text()


def test_depends(session, dealer):
    n = dealer.names
    r = one(session, 'depends output Bids in dealer1 on token "Requests:B1"')
    assert [{k: row[k] for k in ("node", "label", "depends")} for row in r.rows] == [
        {"node": n["bids:B1"], "label": "·", "depends": True}, {"node": n["bids:B2"], "label": "·", "depends": False},
        {"node": n["bids:B3"], "label": "·", "depends": False}]
    assert [row["name"] for row in r.rows] == ["output Bids(B1, P1, Civic, 19500.0)", "output Bids(B2, P2, Civic, 19500.0)",
                                              "output Bids(B3, P3, Accord, 20000.0)"]
    assert r.summary == "1 of 3 node(s) depend on it"
    # Example 4.5: the bid does not depend on car C2 alone, but on C2 and C3 together
    assert one(session, f'depends {B1} on tuple Cars(CarId = "C2")').rows[0]["depends"] is False
    assert one(session, f'depends {B1} on tuple Cars(CarId = "C2"), tuple Cars(CarId = "C3")').rows[0]["depends"] is True
    assert session.view is session.base  # hypothetical: the view is unchanged


def test_polynomial(session, dealer):
    g, n = dealer.index, dealer.names
    row = one(session, f"polynomial {B1}").rows[0]
    m = "M_dealer1[1]"
    assert row == {"node": n["bids:B1"], "name": "output Bids(B1, P1, Civic, 19500.0)", "label": "·", "module": "dealer1", "execution": 1,
                   "value": None, "what_if": None, "polynomial": f"{m}·{m}·Requests:B1·δ(Cars:C2·{m}·{m}·Requests:B1 + Cars:C3·{m}·{m}·Requests:B1)"}
    assert row["polynomial"] == str(polynomial(g, n["bids:B1"]))
    expanded = one(session, f"polynomial {B1} expanded").rows[0]["polynomial"]
    # the paper's notation, each invocation token once per monomial (not sympy's M**2*…)
    assert expanded == f"{m}·Requests:B1·δ(Cars:C2·{m}·Requests:B1 + Cars:C3·{m}·Requests:B1)"
    count = one(session, f"polynomial node {n['count:B1']}").rows[0]["polynomial"]
    assert count == f"Count(Cars:C2·{m}·{m}·Requests:B1 ⊗ 1 + Cars:C3·{m}·{m}·Requests:B1 ⊗ 1)"
    rows = one(session, 'polynomial value Amount of output Bids(BidId = "B1") in dealer1').rows
    assert [r["node"] for r in rows] == [n["amount:B1"]]
    assert one(session, 'polynomial token "Cars:C2" expanded').rows[0]["polynomial"] == "Cars:C2"


def test_polynomial_of_an_aggregate_expanded(session, dealer):
    # not AggValue.normal_form()'s equivalence key ('Count', frozenset({...})): terms multiplied out, ⊗ kept
    text = one(session, f"polynomial node {dealer.names['count:B1']} expanded").rows[0]["polynomial"]
    assert text == "Count(Cars:C2·M_dealer1[1]·Requests:B1 ⊗ 1 + Cars:C3·M_dealer1[1]·Requests:B1 ⊗ 1)"
    text = one(session, "polynomial node <min[2]> expanded".replace("<min[2]>", str(dealer.names["min[2]"]))).rows[0]["polynomial"]
    assert text.startswith("Min(") and "⊗ 19500.0" in text and "⊗ 20000.0" in text


# ------------------------------------------------------------------ evaluate


EVALUATIONS = [
    (f'evaluate boolean {B1} given tuple Cars(CarId = "C2") = false, default = true', True),
    (f"evaluate boolean {B1} given relation Cars = false, default = true", False),
    (f"evaluate BOOLEAN {B1} given invocation dealer1 execution 1 = false, default = true", False),
    (f"evaluate boolean {B1} given relation Cars = 0, default = 1", False),
    (f"evaluate counting {B1} given default = 1", 1),
    ('evaluate counting state Cars(CarId = "C2") in dealer1 execution 1 given tuple Cars(CarId = "C2") = 3', 3),
    ('evaluate counting state Cars(CarId = "C2") in dealer1 execution 2 given tuple Cars(CarId = "C2") = 3', 3),
    ("evaluate counting node <count:B1> given default = 1", 2),
    ('evaluate counting node <count:B1> given token "Cars:C2" = 0, default = 1', 1),  # Example 4.3 in the counting semiring
    ('evaluate tropical state Cars(CarId = "C2") in dealer1 execution 1 given tuple Cars(CarId = "C2") = 2.5, default = 0', 2.5),
    (f'evaluate tropical {B1} given relation Cars = 1, token "Requests:B1" = 3, default = 0', 7.0),
    (f'evaluate tropical {B1} given relation Cars = "inf", default = 0', math.inf),
    (f"evaluate why {B1}", [["Cars:C2", "Requests:B1"], ["Cars:C3", "Requests:B1"]]),
    (f'evaluate why {B1} given tuple Cars(CarId = "C2") = 0', [["Cars:C3", "Requests:B1"]]),
    (f"evaluate lineage {B1}", ["Cars:C2", "Cars:C3", "Requests:B1"]),
    (f"evaluate lineage {B1} given relation Cars = false", None),
    (f"evaluate security {B1} given relation Cars = secret, default = public", "secret"),
    (f'evaluate security {B1} given relation Cars = secret, token "Cars:C3" = confidential, default = public', "confidential"),
    (f"evaluate security {B1} given default = top_secret", "top_secret"),
    (f'evaluate security {B1} given relation Cars = secret, token "Requests:B1" = "top_secret"', "top_secret"),
]


@pytest.mark.parametrize("query, value", EVALUATIONS)
def test_evaluate(session, dealer, query, value):
    r = one(session, fill(query, dealer.names))
    assert r.kind == "evaluate" and len(r.rows) == 1
    assert r.rows[0]["value"] == value
    assert "in the " in r.summary


def test_evaluate_probability(session, dealer):
    r = one(session, f"evaluate probability {B1} given relation Cars = 0.5, default = 1")
    row = r.rows[0]
    assert row["node"] == dealer.names["bids:B1"] and row["value"] == pytest.approx(0.75) and row["method"] == "exact"
    assert r.summary == "probability (independent tokens)"
    row = one(session, f'evaluate probability {B1} given token "Cars:C2" = 0.5, relation Cars = 0.2, default = 0.5 samples 1000 seed 3').rows[0]
    assert row["value"] == pytest.approx(0.5 * (1 - 0.8 * 0.8))  # relation Cars came after the token and wins
    rows = one(session, "evaluate probability output Bids in dealer1 given default = 0.5").rows
    assert [r["value"] for r in rows] == pytest.approx([0.5 * 0.75, 0.5 * 0.75, 0.25])


# ------------------------------------------------------------------ selectors


def test_value_selectors(session, dealer):
    n = dealer.names
    rows = one(session, 'show value Amount of output Bids(BidId = "B1") in dealer1').rows
    assert [(r["id"], r["kind"], r["value"]) for r in rows] == [(n["amount:B1"], "v", 19500.0)]
    rows = one(session, "show value Amount of input Bids in agg execution 2").rows
    assert ids(rows) == sorted([n["agg_amount:B2"], n["agg_amount:B3"]]) and {r["value"] for r in rows} == {19500.0, 20000.0}
    assert ids(one(session, "descendants value Amount of output BestBid in agg execution 1").rows) == []


# ------------------------------------------------------------------ semantic errors


ERRORS = [
    ("zoomout nope", r"no invocation of a module 'nope' in this graph; modules: agg, dealer1"),
    ("zoomout dealer1; zoomout dealer1", r"module 'dealer1' is already zoomed out; zoomin dealer1 first"),
    ("zoomin dealer1", r"zoomin dealer1 \(line 1\): module 'dealer1' is not zoomed out in this view \(zoomed out: none\)"),
    ("zoomout agg; zoomin dealer1", r"not zoomed out in this view \(zoomed out: agg\)"),
    ('show tuple Cars(CarId = "C9")', r'tuple Cars\(CarId = "C9"\) \(line 1, column 6\): no tuple has these values'),
    ('delete tuple Cars(CarId = "C9")', r"no tuple has these values"),
    ("show tuple Nope", r"no relation 'Nope' in this graph \(relations: BestBid, Bids, Cars, Requests\)"),
    ('show tuple Cars(Model = "Civic")', r"Cars has no column Model \(its tuples show: CarId\); base tuples show only their key columns"),
    ("show invocation nope", r"no module 'nope' \(modules: agg, dealer1\)"),
    ("show invocation dealer1 execution 5", r"module dealer1 was not invoked in execution 5"),
    ("show state Cars in nope", r"no state of Cars in module 'nope' \(found in: dealer1\)"),
    ('show token "Cars:C9"', r"no token labelled 'Cars:C9' in this view"),
    ("show node 123", r"no node 123 in this view"),
    ("show value Nope of input Bids in agg", r"no value nodes of a column 'Nope' in this view"),
    ("zoomout agg; show output BestBid(Amount = 1) in agg", r"no tuple has these values \(zoomed out: agg\)"),
    (f"evaluate counting {B1} given default = -1", r"expected a value of the counting semiring, a whole number >= 0; found int -1"),
    (f"evaluate counting {B1} given default = 1.5", r"expected a value of the counting semiring, a whole number >= 0; found float 1.5"),
    (f'evaluate boolean {B1} given default = "yes"', r"expected a value of the boolean semiring, true or false \(or 1, 0\); found str 'yes'"),
    (f"evaluate tropical {B1} given default = true", r"expected a value of the tropical semiring, a number \(a cost\), or \"inf\" for absent; found bool True"),
    (f"evaluate security {B1} given default = purple", r"expected a level of minmax\(public < confidential < secret < top_secret\); found str 'purple'"),
    (f"evaluate security {B1} given default = SECRET", r"found str 'SECRET'"),  # levels are names: case counts
    (f"evaluate why {B1} given default = 1", r"expected a value of the why semiring, 0 \(absent\): a token stands for itself otherwise"),
    (f"evaluate probability {B1} given default = 2", r"a probability is a number between 0 and 1, found 2"),
    (f"evaluate probability {B1} given relation Cars = 0.5", r"no probability for 1 token\(s\): Requests:B1; give them one with `given tuple REL.COLUMN`, `given relation REL = V` or `given token \"Requests:B1\" = V`, or give every token not named `default = V`"),
    ("evaluate probability node <count:B1> given default = 0.5", r"AggValue"),
    (f"evaluate nosuch {B1}", r"unknown semiring 'nosuch'; expected one of boolean, counting, lineage, security, tropical, why, minmax\(…\), maxmin\(…\), probability"),
    (f"evaluate counting {B1} given node <in:B1> = 2", r"`given` values base tuples and invocations; node \d+ \(·\) is derived"),
    (f"evaluate counting {B1} given relation Nope = 2", r"no base tuples of relation 'Nope' in this view"),
]


@pytest.mark.parametrize("query, semiring", [("counting", "1"), ("boolean", "true"), ("tropical", "0"), ("security", "public"),
                                             ("probability", "0.5")])
def test_a_token_without_a_value_is_an_error(session, query, semiring):
    """Never a guessed value (a security level that fails open): the tokens left without one are named."""
    name, value = query, semiring
    with pytest.raises(QueryError) as err:
        session.run(f'evaluate {name} {B1} given token "Cars:C2" = {value}')
    message = str(err.value)
    what = {"probability": "probability", "security": "level"}.get(name, "value")
    assert f"no {what} for 2 token(s): Cars:C3, Requests:B1; give them one with `given tuple REL.COLUMN`" in message
    assert "default = V" in message and "\n" not in message
    assert one(session, f'evaluate {name} {B1} given token "Cars:C2" = {value}, default = {value}').rows
    # invocation tokens are the one of the semiring (the invocation took place) unless given
    assert one(session, f"evaluate {name} {B1} given relation Cars = {value}, relation Requests = {value}").rows


@pytest.mark.parametrize("query, message", ERRORS)
def test_semantic_errors(session, dealer, query, message):
    with pytest.raises(QueryError, match=message):
        session.run(fill(query, dealer.names))


def test_subgraph_of_an_ambiguous_selector_is_an_error(session, dealer):
    n = dealer.names
    with pytest.raises(QueryError, match=rf"ambiguous for subgraph: it matches 2 nodes \(ids {n['state:C2[1]']}, {n['state:C2[2]']}"):
        session.run('subgraph state Cars(CarId = "C2") in dealer1')  # executions 1 and 2
    # the other reading statements take every match
    assert len(one(session, 'depends state Cars(CarId = "C2") in dealer1 on token "Cars:C2"').rows) == 2
    assert one(session, 'subgraph state Cars(CarId = "C2") in dealer1 execution 2').rows


def test_selecting_a_zoomed_out_relation_says_so(session):
    with pytest.raises(QueryError, match="hidden by zoomout dealer1"):
        session.run('zoomout dealer1; show state Cars(CarId = "C2") in dealer1')


def test_selecting_a_deleted_tuple_says_so(session):
    with pytest.raises(QueryError, match="removed by an earlier delete"):
        session.run('delete tuple Cars(CarId = "C2"); show state Cars(CarId = "C2") in dealer1')


def test_negative_node_ids_can_be_selected():
    """δ, · member and black-box nodes have 64-bit hash ids, negative half the time."""
    import pandas as pd

    from lipspark.graph.index import GraphIndex

    g = GraphIndex.build(pd.DataFrame({"id": [-3990714268694853957, 7], "kind": "p", "op": ["δ", "token"], "label": ["δ", "R:a"],
                                       "relation": [None, "R"]}),
                         pd.DataFrame({"src": [7], "dst": [-3990714268694853957]}))
    s = Session(g)
    listed = one(s, "descendants node 7").rows[0]["id"]
    assert listed == -3990714268694853957
    assert one(s, f"show node {listed}").rows[0]["label"] == "δ"


def test_an_unknown_semiring_lists_every_choice_probability_included(session):
    with pytest.raises(QueryError) as err:
        session.run(f"evaluate sparkles {B1}")
    message = str(err.value)
    assert "unknown semiring 'sparkles'" in message and "probability" in message and "counting" in message
    assert "\n" not in message


def test_tables_escape_control_and_direction_characters():
    import pandas as pd

    from lipspark.graph.index import GraphIndex

    g = GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "op": "token", "label": ["R:x\u202egnp.exe\nfake row"],
                                       "relation": ["R"], "tuple": ['{"k": "x\\u202egnp.exe\\nfake row"}']}),
                         pd.DataFrame({"src": [], "dst": []}))
    result = Session(g).run("show node 1")[0]
    text = result.to_text()
    assert "\u202e" not in text and "fake row" in text
    assert len(text.splitlines()) == len(result.to_text().splitlines())
    assert "\\u202e" in text and "\\n" in text
    assert "\u202e" in json.dumps(result.to_dict(), ensure_ascii=False)  # JSON keeps the data as it is


def test_token_and_tuple_selectors_find_quoted_and_null_labels():
    """Labels that quote a value or show a null (lipspark.vocabulary.tokens) are found by
    `token "…"` as written, and `tuple R(col = null)` finds the tuple with the null."""
    import pyarrow as pa

    from lipspark.graph.index import GraphIndex
    from lipspark.vocabulary import BaseSegment, Context
    from lipspark.vocabulary.ids import positional

    rows = [("a,b", "c"), ("a", "b,c"), (None, "c"), ("null", "c"), ("x", "c"), ("x", "c")]
    seg = BaseSegment(1, Context(), relation="R", columns=("s", "t"))
    table = pa.table({"__lp_id": [positional(1, i) for i in range(len(rows))],
                      "s": [r[0] for r in rows], "t": [r[1] for r in rows]})
    s = Session(GraphIndex.from_segments([(seg, {"tuples": table})]))
    found = {q: [r["label"] for r in one(s, f"show {q}").rows] for q in [
        """token 'R:"a,b",c'""", """token 'R:a,"b,c"'""", 'token "R:null,c"', """token 'R:"null",c'""",
        'token "R:x,c#2"', "tuple R(s = null)", 'tuple R(s = "null")', 'tuple R(s = "a,b")']}
    assert found == {
        """token 'R:"a,b",c'""": ['R:"a,b",c'], """token 'R:a,"b,c"'""": ['R:a,"b,c"'], 'token "R:null,c"': ["R:null,c"],
        """token 'R:"null",c'""": ['R:"null",c'], 'token "R:x,c#2"': ["R:x,c#2"], "tuple R(s = null)": ["R:null,c"],
        'tuple R(s = "null")': ['R:"null",c'], 'tuple R(s = "a,b")': ['R:"a,b",c']}


def test_show_after_a_delete_says_what_changed_on_each_output():
    """Without car C2 dealer 1's Civic bids (executions 1, 2, 3) have an amount the graph cannot
    recompute (calcBid is a black box); the Accord bid (B3) read no Civic: unchanged."""
    s = Session(dealership(executions=3).index)
    s.run('delete token "Cars:C2"')
    rows = {row["name"]: row.get("what_if") for row in s.run("show output Bids of dealer1")[0].rows}
    assert rows == {"output Bids(B1, P1, Civic, 19500.0)": "Amount 19500.0 → ?", "output Bids(B2, P2, Civic, 19500.0)": "Amount 19500.0 → ?",
                    "output Bids(B3, P3, Accord, 20000.0)": None, "output Bids(B4, P1, Civic, 19500.0)": "Amount 19500.0 → ?"}


def test_samples_0_is_an_error_not_the_default(session):
    with pytest.raises(QueryError, match="samples to be an integer >= 1; found int 0"):
        session.run(f"evaluate probability {B1} given default = 0.5 samples 0")
