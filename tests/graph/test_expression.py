"""The one polynomial builder dispatches on a node's operator, never on its display label."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings

from lipspark.export import operations, to_prov
from lipspark.graph.expression import Tensor, evaluate, expressions, polynomial, token_name
from lipspark.graph.index import GraphIndex
from lipspark.query import Session
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import COUNTING, AggValue, BlackBox, Delta
from lipspark.viz import render

from tests.query.graphs import workflow_graphs

# R:a (1), R:b (2); a relation-level black box called "Sum" (3) over both; a black box called
# "δ" (4) over it; a value-level black box called "Max" (5) over R:a, R:b and the value 6; an
# invocation (7) and a module output (8 = R:a · the invocation), its value (9) carrying 5.
NODES = pd.DataFrame({
    "id": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "kind": ["p", "p", "p", "p", "v", "v", "p", "p", "v"],
    "op": ["token", "token", "black_box", "black_box", "black_box", "constant", "invocation", "output", "output"],
    "label": ["R:a", "R:b", "Sum", "δ", "Max", "6", "dealer1", "·", "·"],
    "relation": ["R", "R", None, None, None, None, None, "Out", "Out"],
    "value": pd.Series([None, None, None, None, 9, 6, None, None, 9], dtype=object),
    "type": [None, None, None, None, None, None, "m", "o", "o"],
    "module": [None, None, None, None, None, None, "dealer1", "dealer1", "dealer1"],
    "execution": [None, None, None, None, None, None, 3, 3, 3],
})
EDGES = pd.DataFrame({"src": [1, 2, 3, 1, 2, 6, 1, 7, 5, 7], "dst": [3, 3, 4, 5, 5, 5, 8, 8, 9, 9]})


def graph() -> GraphIndex:
    return GraphIndex.build(NODES, EDGES)


def test_black_boxes_named_like_operators_stay_black_boxes():
    g = graph()
    s, d, m = polynomial(g, 3), polynomial(g, 4), polynomial(g, 5)
    assert isinstance(s, BlackBox) and s.name == "Sum" and str(s) == "Sum(R:a, R:b)"
    assert isinstance(d, BlackBox) and not isinstance(d, Delta) and d.name == "δ"
    assert isinstance(m, BlackBox) and not isinstance(m, AggValue) and m.name == "Max"
    assert str(g.value(5)) == str(m)  # the value of a black-box v-node is its expression, as for ids
    assert evaluate(g, 4, COUNTING, {"R:a": 0}, default=1) == 1  # a black box survives while any input does


def test_invocations_are_tokens_and_boundary_values_pass_through():
    g = graph()
    assert token_name(g, g.position(7)) == "M_dealer1[3]"
    assert str(polynomial(g, 8)) == "M_dealer1[3]·R:a"  # the tuple's node · the invocation token
    assert str(polynomial(g, 9)) == str(polynomial(g, 5))  # a value crossing the boundary is the value's expression
    assert evaluate(g, 8, COUNTING, {"R:a": 2}) == 2  # an invocation is 1 unless a valuation names it
    assert evaluate(g, 8, COUNTING, {"R:a": 2, "M_dealer1[3]": 0}) == 0
    memo = expressions(g, g.position(9))
    assert not any(isinstance(e, Tensor) for e in memo.values())


def test_deletion_export_and_drawing_treat_them_as_black_boxes():
    g = graph()
    r = delete(g, [1])
    assert 3 not in r.removed_ids and 5 not in r.removed_ids  # not conjunctive: R:b still feeds them
    assert {c.node: c.after for c in r.values} == {5: UNKNOWN, 9: UNKNOWN}  # not recomputed as a Max
    ops = dict(zip(g.ids.tolist(), operations(g)))
    assert (ops[3], ops[4], ops[5], ops[8], ops[9], ops[7]) == ("black_box", "black_box", "black_box", "times", "times", None)
    assert 'lps:aggregate' not in to_prov(g).get_provn()
    tips = {n["id"]: n["title"] for n in render(g).nodes}
    assert "Max(R:a, R:b)" in tips["5"] and "unavailable" not in "".join(tips.values())
    rows = Session(g).run("polynomial node 5; polynomial node 4")
    assert [r.rows[0]["polynomial"] for r in rows] == ["Max(R:a, R:b)", "δ(Sum(R:a, R:b))"]


@settings(max_examples=25, deadline=None, database=None)
@given(workflow_graphs())
def test_the_python_api_and_the_language_give_one_expression(gen):
    """On generated workflows: GraphIndex.polynomial/value and `polynomial node N` agree for
    every output tuple and output value (both go through the one builder)."""
    g = gen.index
    s = Session(g)
    for node in gen.of_type("o"):
        pos = g.position(node)
        expr = g.value(node) if g.is_v[pos] else g.polynomial(node)
        assert s.run(f"polynomial node {node}")[0].rows[0]["polynomial"] == str(expr)


def test_a_token_without_a_value_is_named_not_guessed():
    import pytest

    from lipspark.errors import MissingValueError
    from lipspark.semiring import LINEAGE, SECURITY

    g = graph()
    with pytest.raises(MissingValueError) as err:
        evaluate(g, 3, SECURITY, {"R:a": "secret"})
    assert err.value.tokens == ("R:b",) and "provenance_mapping" in str(err.value)
    with pytest.raises(MissingValueError):
        evaluate(g, 3, COUNTING)
    assert evaluate(g, 8, SECURITY, {"R:a": "secret"}) == "secret"  # the invocation token is the semiring's one
    assert evaluate(g, 3, SECURITY, {"R:a": "secret"}, default="top_secret") == "secret"
    assert evaluate(g, 3, LINEAGE) == {"R:a", "R:b"}  # a token stands for itself in Lineage


def test_provenance_mapping_reads_the_columns_a_token_keeps():
    import pytest

    from lipspark.errors import QueryError

    nodes = pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "op": ["token", "token", "token", "+"],
                          "label": ["agents:1", "agents:2", "agents:3", "+"], "relation": ["agents", "agents", "agents", None],
                          "tuple": ['{"id": 1, "level": "secret", "p": 0.5}', '{"id": 2, "level": null, "p": 1}', '{"id": 3, "level": "restricted", "p": 0.25}', None]})
    g = GraphIndex.build(nodes, pd.DataFrame({"src": [1, 2, 3], "dst": [4, 4, 4]}))
    from lipspark.graph.expression import provenance_mapping

    assert provenance_mapping(g, "agents", "level") == {"agents:1": "secret", "agents:3": "restricted"}  # a null is no value
    assert provenance_mapping(g, "agents", "p") == {"agents:1": 0.5, "agents:2": 1, "agents:3": 0.25}
    with pytest.raises(QueryError, match=r"^the base tuples of agents keep no column 'name' \(they keep: id, level, p\); keep it with "
                                         r"Tracker.annotate\(\.\.\., keep=\['name'\]\) or, in a workflow, Module\(keep=\{'agents': \['name'\]\}\)"):
        provenance_mapping(g, "agents", "name")
    with pytest.raises(QueryError, match=r"no base tuples of relation 'spies' in this graph \(relations with base tuples: agents\)"):
        provenance_mapping(g, "spies", "level")


def test_expanded_writes_each_invocation_once():
    from lipspark.graph.expression import expanded

    nodes = NODES.copy()
    g = GraphIndex.build(nodes, EDGES)
    assert str(expanded(g, 8)) == "M_dealer1[3]·R:a"
    assert str(expanded(g, 3)) == "Sum(R:a, R:b)"
