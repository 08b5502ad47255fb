"""Results as text for people: names, not ids; what was asked for first; one token per line."""
from __future__ import annotations

import pytest

from lipspark.query import Session
from lipspark.query.text import node_name, table, token_lines
from tests.query.test_engine import B1, dealership


@pytest.mark.parametrize("row, name", [
    ({"op": "token", "label": "Cars:C2"}, "Cars:C2"),
    ({"op": "invocation", "module": "dealer1", "label": "dealer1"}, "invocation dealer1"),
    ({"op": "input", "relation": "Requests", "tuple": {"BidId": "B1", "Model": None}}, "input Requests(B1, null)"),
    ({"op": "state", "relation": "Cars", "tuple": None}, "state Cars"),
    ({"op": "output", "relation": "Bids", "column": "Amount", "tuple": {"BidId": "B1"}}, "Amount of output Bids(B1)"),
    ({"op": "times", "label": "·"}, "· (joint use)"),
    ({"op": "plus", "label": "+"}, "+ (alternative use)"),
    ({"op": "delta", "label": "δ"}, "δ (distinct/group)"),
    ({"op": "black_box", "label": "calcBid"}, "calcBid (black box)"),
    ({"op": "min", "label": "Min"}, "Min (aggregate)"),
    ({"op": "tensor", "label": "⊗"}, "⊗ (value in an aggregate)"),
    ({"op": "zoom", "label": "dealer1"}, "zoomed-out invocation"),
])
def test_every_kind_of_node_is_named_by_what_it_is(row, name):
    assert node_name(row) == name


def test_a_long_tuple_is_cut_in_a_name():
    name = node_name({"op": "output", "relation": "R", "tuple": {"a": "x" * 200}})
    assert name.startswith("output R(xxx") and name.endswith("…)") and len(name) < 90


def test_tables_leave_out_empty_columns_and_escape_what_would_break_lines():
    text = table([{"a": "x\ny\u202e", "b": None, "c": 1}, {"a": "z", "b": "", "c": None}], ["a", "b", "c"])
    assert text.splitlines()[0].split() == ["a", "c"] and "x\\ny\\u202e" in text and len(text.splitlines()) == 4


def test_a_lineage_lists_the_named_tokens_first_then_the_smallest_relations():
    tokens = [f"Cars:C{i}" for i in range(5)] + ["Requests:B1", "Users:U1", "Users:U2"]
    assert token_lines(tokens, ["Cars:C3"], limit=None) == ["Cars:C3", "Requests:B1", "Users:U1", "Users:U2", "Cars:C0", "Cars:C1", "Cars:C2", "Cars:C4"]
    assert token_lines(tokens, limit=3)[-1] == "… and 5 more (--all shows every token, --format json lists all)"


def test_session_text_names_nodes_puts_the_question_first_and_hides_ids():
    d = dealership()
    s = Session(d.index)
    n = d.names
    anc = s.run(f"ancestors {B1}")[0]
    text = anc.to_text()
    assert text.splitlines()[2] == "of output Bids(B1, P1, Civic, 19500.0) in dealer1, execution 1"
    assert str(n["bids:B1"]) not in text and f"[{n['bids:B1']}] output Bids" in anc.to_text(ids=True)
    body = text.splitlines()[5:]
    first_operator = min(i for i, line in enumerate(body) if line.startswith(("·", "δ", "+")))
    assert all(not line.startswith(("·", "δ", "+")) for line in body[first_operator:] if "Cars:" in line or "invocation" in line)
    sub = s.run(f"subgraph {B1}")[0].to_text()
    assert sub.splitlines()[5].startswith("output Bids(B1, P1, Civic, 19500.0)")  # the node asked about leads
    lineage = s.run(f"evaluate lineage {B1}")[0].to_text()
    assert lineage.splitlines()[2:] == ["output Bids(B1, P1, Civic, 19500.0): 3 token(s)", "  Requests:B1", "  Cars:C2", "  Cars:C3"]
    assert "\n  Cars:C2\n" in s.run(f'evaluate lineage {B1} given token "Cars:C3" = 0')[0].to_text()


def test_state_values_as_their_writer_leaves_them_are_counted_with_inputs_and_state():
    from lipspark.query.text import changed_by_tuple

    def value(op, label, before=3, after=2, **kw):
        return {"op": op, "label": label, "name": label, "module": "m", "execution": 1, "relation": "R", "column": "n",
                "tuple": {"k": 1}, "before": before, "after": after, **kw}
    rows, text = changed_by_tuple([value("output", "·"), value("state", "·"), value("times", "·"), value("count", "Count")])
    assert [r["change"] for r in rows] == ["n 3 → 2"]
    assert "2 value(s) of inputs and state that carry them" in text and "inside modules: Count 3 → 2" in text
    assert "·" not in text.split("inside modules:")[1]


def test_unknown_steps_of_formulas_and_tests_are_one_line_and_undecided_tests_are_conditions():
    from lipspark.query.text import changed_by_tuple

    def value(op, label, before, after, **kw):
        return {"op": op, "label": label, "name": label, "module": "agg", "execution": 1, "relation": None, "column": None,
                "tuple": None, "before": before, "after": after, **kw}
    steps = [value("add", "add", b, "unknown") for b in (0.0, 232.0, 406.0)] + [value("add", "add", 1.0, 2.0)]
    test = value("zero", "filter (Amount = Best)", False, "unknown", condition=True)
    bid = {**value("output", "·", 5.0, "unknown"), "relation": "Bids", "column": "Amount", "tuple": {"BidId": "B1"}}
    rows, text = changed_by_tuple([bid] + steps + [value("calcbid", "calcBid", 5.0, "unknown"), test])
    assert [r["change"] for r in rows] == ["Amount 5.0 → ?"]
    assert text.startswith("not exact: 1 condition(s) read a changed value") and "filter (Amount = Best) in agg" in text
    inside = text.split("inside modules: ")[1]
    assert inside.startswith("add → ? (×3), add 1.0 → 2.0, calcBid 5.0 → ?"), inside  # known steps keep their values
