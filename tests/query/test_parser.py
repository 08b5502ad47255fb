"""The query language parser: every statement and selector, literals, errors, round trip."""
from __future__ import annotations

import math
import re
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.exceptions import UnexpectedEOF
from lark.lexer import PatternStr

from lipspark.errors import QueryError, QuerySyntaxError
from lipspark.query.ast import (
    KEYWORDS,
    NO_POS,
    Ancestors,
    Assignment,
    Condition,
    DefaultRef,
    Delete,
    Depends,
    Descendants,
    Evaluate,
    InvocationSel,
    NodeSel,
    Polynomial,
    Pos,
    RelationRef,
    Reset,
    Responsibility,
    Show,
    Subgraph,
    TokenSel,
    TupleColumn,
    TupleSel,
    ValueSel,
    ZoomIn,
    ZoomOut,
    format_literal,
    format_name,
)
from lipspark.query.parser import MAX_NODE_ID, _from_lark, _lark, parse

CARS = TupleSel("tuple", "Cars")
C2 = TupleSel("tuple", "Cars", (Condition("CarId", "=", "C2"),))


def one(text: str):
    statements = parse(text)
    assert len(statements) == 1, statements
    return statements[0]


def sel(text: str):
    return one(f"show {text}").target


def syntax_error(text: str, source: str = "<query>") -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as info:
        parse(text, source)
    return info.value


# ---- statements -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("zoomout dealer1", ZoomOut(("dealer1",))),
        ("zoomout dealer1, dealer2 ,dealer3", ZoomOut(("dealer1", "dealer2", "dealer3"))),
        ("zoomin agg, and", ZoomIn(("agg", "and"))),
        ("reset", Reset()),
        ("delete tuple Cars", Delete((CARS,))),
        ("delete tuple Cars, node 7", Delete((CARS, NodeSel(7)))),
        ("subgraph tuple Cars", Subgraph(CARS)),
        ("ancestors output SoldCars", Ancestors(TupleSel("output", "SoldCars"))),
        ("descendants tuple Cars", Descendants(CARS)),
        ("depends node 1 on tuple Cars", Depends(NodeSel(1), (CARS,))),
        ("depends node 1 on tuple Cars, node 2", Depends(NodeSel(1), (CARS, NodeSel(2)))),
        ("polynomial node 3", Polynomial(NodeSel(3))),
        ("polynomial node 3 expanded", Polynomial(NodeSel(3), True)),
        ("evaluate counting node 3", Evaluate("counting", NodeSel(3))),
        ("show invocation dealer1", Show(InvocationSel("dealer1"))),
    ],
)
def test_statement(text, expected):
    assert one(text) == expected


def test_polynomial_expand_defaults_to_false():
    assert one("polynomial node 3").expand is False


def test_evaluate_with_every_option():
    stmt = one('evaluate Probability output SoldCars given default = 0.9, '
               'tuple Cars(CarId = "C2") = 0.5, relation Requests = 1 samples 1000 seed 42')
    assert stmt == Evaluate(
        "probability",
        TupleSel("output", "SoldCars"),
        (Assignment(DefaultRef(), 0.9), Assignment(C2, 0.5), Assignment(RelationRef("Requests"), 1)),
        samples=1000,
        seed=42,
    )


@pytest.mark.parametrize(
    "options, samples, seed",
    [("", None, None), (" samples 5", 5, None), (" seed 0", None, 0), (" samples 5 seed 6", 5, 6)],
)
def test_evaluate_optional_samples_and_seed(options, samples, seed):
    stmt = one(f"evaluate probability node 1 given default = 0.5{options}")
    assert (stmt.samples, stmt.seed) == (samples, seed)
    assert one(f"evaluate probability node 1{options}").given == ()


def test_evaluate_ordered_levels_column_values_and_without_delta():
    """Issue 14: minmax/maxmin over the user's levels (ProvSQL's agency ENUM), `tuple REL.COLUMN`
    values, δ as the identity."""
    stmt = one('EVALUATE MinMax(unclassified < restricted < confidential < secret < top_secret) output Cities in agency '
               'given tuple personnel.classification, token "personnel:6" = top_secret, default = `secret` WITHOUT DELTA')
    assert stmt == Evaluate("minmax", TupleSel("output", "Cities", module="agency"),
                            (TupleColumn("personnel", "classification"), Assignment(TokenSel("personnel:6"), "top_secret"),
                             Assignment(DefaultRef(), "secret")),
                            without_delta=True, levels=("unclassified", "restricted", "confidential", "secret", "top_secret"))
    assert str(stmt) == ('evaluate minmax(unclassified < restricted < confidential < secret < top_secret) output Cities in agency '
                         'given tuple personnel.classification, token "personnel:6" = "top_secret", default = "secret" without delta')
    # levels may be strings or backquoted names, and keywords; one level is an order too
    assert one('evaluate maxmin("top secret" < `x y` < default) node 1').levels == ("top secret", "x y", "default")
    assert one("evaluate minmax(only) node 1").levels == ("only",)
    assert one("evaluate counting node 1").levels == () and one("evaluate counting node 1").without_delta is False
    # the clauses keep their order: given, without delta, samples, seed
    stmt = one("evaluate probability node 1 given tuple R.p without delta samples 10 seed 3")
    assert (stmt.given, stmt.without_delta, stmt.samples, stmt.seed) == ((TupleColumn("R", "p"),), True, 10, 3)
    # names that are keywords, written back in backquotes
    stmt = one("evaluate security node 1 given tuple `value`.`delta`")
    assert stmt.given == (TupleColumn("value", "delta"),) and str(stmt) == "evaluate security node 1 given tuple `value`.`delta`"
    assert one("show tuple delta in without").target == TupleSel("tuple", "delta", module="without")  # new keywords are still names where a name must follow


@pytest.mark.parametrize("text, line, column, detail", [
    ("evaluate security node 1 given state Cars.Model", 1, 32,
     "only base tuples take values from a column: write `tuple Cars.Model` (a state node is derived"),
    ("evaluate minmax() node 1", 1, 17, "unexpected ')'; expected a name or a string"),
    ("evaluate minmax(a <= b) node 1", 1, 19, "unexpected '<='; expected ')' or '<'"),
    ("evaluate minmax(a < b node 1", 1, 23, "unexpected 'node'; expected ')' or '<'"),
    ("evaluate counting node 1 without", 1, 33, "unexpected end of the query; expected 'delta'"),
    ("evaluate counting node 1 samples 3 without delta", 1, 36, "unexpected 'without'"),
    ("evaluate counting node 1 given tuple Cars.", 1, 43, "unexpected end of the query; expected a name"),
    ("show tuple Cars.Model", 1, 16, "unexpected '.'"),
])
def test_syntax_errors_of_the_new_evaluate_clauses(text, line, column, detail):
    err = syntax_error(text)
    assert (err.line, err.column) == (line, column), str(err)
    assert detail in str(err)


def test_shapley_and_banzhaf():
    stmt = one('SHAPLEY output BestBid of agg execution 1 over Invocations given token "Requests:B1" = false samples 500 seed 7')
    assert stmt == Responsibility("shapley", TupleSel("output", "BestBid", module="agg", execution=1), ("invocations",),
                                  (Assignment(TokenSel("Requests:B1"), False),), 500, 7)
    assert str(stmt) == 'shapley output BestBid of agg execution 1 over invocations given token "Requests:B1" = false samples 500 seed 7'
    assert one("banzhaf node 3").players == ("tuples",) and str(one("banzhaf node 3 over tuples")) == "banzhaf node 3"
    # both kinds, in one order however written (and once each)
    assert one("shapley node 3 over invocations, tuples, invocations").players == ("tuples", "invocations")
    # the new keywords stay names where only a name can follow
    assert one("shapley tuple over in tuples").target == TupleSel("tuple", "over", module="tuples")
    assert str(one("banzhaf output shapley")) == "banzhaf output `shapley`"


@pytest.mark.parametrize("text, column, detail", [
    ("shapley node 3 over", 20, "expected 'invocations' or 'tuples'"),
    ("shapley node 3 over cars", 21, "unexpected 'cars'; expected 'invocations' or 'tuples'"),
    ("shapley node 3 samples 5 over tuples", 26, "unexpected 'over'"),
    ("banzhaf over tuples", 9, "unexpected 'over'; expected a selector"),
])
def test_syntax_errors_of_shapley_and_banzhaf(text, column, detail):
    err = syntax_error(text)
    assert (err.line, err.column) == (1, column), str(err)
    assert detail in str(err)


def test_evaluate_semiring_is_lower_cased_and_may_be_a_keyword():
    assert one("evaluate TROPICAL node 1").semiring == "tropical"
    assert one("evaluate lineage node 1").semiring == "lineage"
    assert one("evaluate `Why` node 1").semiring == "why"


def test_assignment_values_bare_names_and_literals():
    stmt = one("evaluate security output SoldCars given relation Cars = secret, "
               "token 'Cars:C2' = \"top secret\", node 4 = true, node 5 = null, default = public")
    assert [a.value for a in stmt.given] == ["secret", "top secret", True, None, "public"]
    assert stmt.given[1].target == TokenSel("Cars:C2")


def test_assignment_targets_may_be_any_selector():
    stmt = one("evaluate why node 1 given value Amount of tuple Bids = 3, invocation agg = 2")
    assert [a.target for a in stmt.given] == [ValueSel("Amount", TupleSel("tuple", "Bids")),
                                               InvocationSel("agg")]


# ---- selectors --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tuple", "input", "state", "output"])
def test_tuple_selector_kinds(kind):
    assert sel(f"{kind} Cars") == TupleSel(kind, "Cars")
    assert sel(f"{kind.upper()} Cars").kind == kind


def test_tuple_selector_with_everything():
    got = sel("output Bids(Dealer = 'dealer1', Amount >= 20000) in dealer1 execution 2")
    assert got == TupleSel("output", "Bids",
                           (Condition("Dealer", "=", "dealer1"), Condition("Amount", ">=", 20000)),
                           module="dealer1", execution=2)


def test_in_and_of_are_synonyms():
    assert sel("state InventoryBids of dealer3") == sel("state InventoryBids in dealer3")
    assert sel("state InventoryBids of dealer3").module == "dealer3"


def test_tuple_selector_execution_without_module():
    assert sel("input Requests execution 3") == TupleSel("input", "Requests", execution=3)


@pytest.mark.parametrize(
    "op, normal", [("=", "="), ("==", "="), ("!=", "!="), ("<>", "!="), ("<", "<"),
                   ("<=", "<="), (">", ">"), (">=", ">=")],
)
def test_comparison_operators_are_normalised(op, normal):
    assert sel(f"tuple Bids(Amount {op} 5)").conditions == (Condition("Amount", normal, 5),)
    assert sel(f"tuple Bids(Amount{op}5)").conditions[0].op == normal


def test_invocation_selector():
    assert sel("invocation dealer2") == InvocationSel("dealer2")
    assert sel("invocation dealer2 execution 4") == InvocationSel("dealer2", 4)


def test_node_selector_range():
    assert sel("node 0") == NodeSel(0)
    assert sel(f"node {MAX_NODE_ID}") == NodeSel(MAX_NODE_ID)
    err = syntax_error(f"show node {MAX_NODE_ID + 1}")
    assert "out of range" in str(err) and (err.line, err.column) == (1, 11)


def test_token_selector():
    assert sel('token "Cars:C2"') == TokenSel("Cars:C2")
    assert sel("token 'Requests:B1'") == TokenSel("Requests:B1")


def test_value_selector_nests():
    assert sel("value Amount of output Bids in agg") == ValueSel(
        "Amount", TupleSel("output", "Bids", module="agg"))
    assert sel("value a of value b of node 1") == ValueSel("a", ValueSel("b", NodeSel(1)))


# ---- names and keywords -----------------------------------------------------------------


def test_keywords_are_case_insensitive_names_are_not():
    upper = parse("ZOOMOUT dealer1; ZoomIn dealer1; RESET; Delete TUPLE Cars(CarId = 'C2') IN dealer1 "
                  "EXECUTION 1; SHOW Value Amount OF Output Bids; PolyNomial node 1 EXPANDED")
    lower = parse("zoomout dealer1; zoomin dealer1; reset; delete tuple Cars(CarId = 'C2') in dealer1 "
                  "execution 1; show value Amount of output Bids; polynomial node 1 expanded")
    assert upper == lower
    assert sel("tuple cars") != sel("tuple Cars")


def test_keywords_as_names_where_only_a_name_can_follow():
    assert sel("tuple Value(state = 1, on = 2) in tuple execution 1") == TupleSel(
        "tuple", "Value", (Condition("state", "=", 1), Condition("on", "=", 2)), "tuple", 1)
    assert one("zoomout and, of, node") == ZoomOut(("and", "of", "node"))
    assert sel("value state of state state") == ValueSel("state", TupleSel("state", "state"))


def test_backquoted_names():
    assert sel("tuple `Sold Cars`(`car id` = 'C1') in `dealer 1`") == TupleSel(
        "tuple", "Sold Cars", (Condition("car id", "=", "C1"),), "dealer 1")
    assert one("zoomout `value`, `in`") == ZoomOut(("value", "in"))
    assert one("evaluate security node 1 given node 2 = `top secret`").given[0].value == "top secret"


def test_keyword_literals_need_quotes_to_be_strings():
    stmt = one("evaluate boolean node 1 given node 2 = true, node 3 = 'true', node 4 = `true`")
    assert [a.value for a in stmt.given] == [True, "true", "true"]


def test_keywords_match_grammar():
    lark = _lark()
    words = {t.pattern.value for t in lark.terminals
             if isinstance(t.pattern, PatternStr) and t.pattern.value.isalpha()}
    assert words == KEYWORDS


# ---- literals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [
        ("0", 0), ("42", 42), ("-7", -7), ("+7", 7), ("-0", 0),
        ("1.5", 1.5), ("-2.25", -2.25), (".5", 0.5), ("-.5", -0.5), ("3.", 3.0),
        ("1e3", 1000.0), ("1E-3", 0.001), ("-2.5e+2", -250.0), ("12345678901234567890", 12345678901234567890),
        ("true", True), ("FALSE", False), ("Null", None),
        ('"C2"', "C2"), ("'C2'", "C2"), ('""', ""), ("''", ""),
        ("'say \"hi\"'", 'say "hi"'), ('"it\'s"', "it's"),
    ],
)
def test_literals(text, value):
    got = sel(f"tuple R(x = {text})").conditions[0].value
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "escaped, value",
    [(r"\"", '"'), (r"\'", "'"), (r"\\", "\\"), (r"\n", "\n"), (r"\t", "\t"),
     (r"a\\nb", "a\\nb"), (r"\\\"", '\\"')],
)
def test_string_escapes(escaped, value):
    assert sel(f'token "{escaped}"') == TokenSel(value)
    assert sel(f"token '{escaped}'") == TokenSel(value)


@pytest.mark.parametrize("escape", [r"\q", r"\x41", r"\u0041", r"\0", r"\r"])
def test_unknown_escape_is_an_error_at_the_backslash(escape):
    err = syntax_error(f'show token "ab{escape}"')
    assert (err.line, err.column) == (1, 15)
    assert f"unknown escape '{escape[:2]}'" in str(err)


def test_number_out_of_range():
    err = syntax_error("show tuple R(x = 1e999)")
    assert "out of range" in str(err) and err.column == 18


# ---- layout: separators, comments, positions --------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t ", ";", ";;;", "# only a comment", "-- only\n-- comments\n",
                                  "; # x\n ; -- y"])
def test_empty_queries(text):
    assert parse(text) == []


def test_multiple_statements_empty_statements_and_trailing_semicolon():
    text = "zoomout dealer1;; reset ;\n delete node 1;"
    assert parse(text) == [ZoomOut(("dealer1",)), Reset(), Delete((NodeSel(1),))]


def test_comments():
    text = """
    # zoom out the dealers
    zoomout dealer1, -- the first
            dealer2  # and the second
    ; show tuple Cars(CarId = "C#1 -- not a comment")  -- trailing
    """
    cars = TupleSel("tuple", "Cars", (Condition("CarId", "=", "C#1 -- not a comment"),))
    assert parse(text) == [ZoomOut(("dealer1", "dealer2")), Show(cars)]


def test_negative_number_is_not_a_comment():
    assert sel("tuple R(x = -1, y=-2)").conditions[1].value == -2


def test_positions():
    stmts = parse("reset;\n  delete tuple Cars(CarId = 'C2') in dealer1,\n     node 5")
    assert stmts[0].pos == Pos(1, 1)
    delete = stmts[1]
    assert delete.pos == Pos(2, 3)
    assert delete.targets[0].pos == Pos(2, 10)
    assert delete.targets[0].conditions[0].pos == Pos(2, 21)
    assert delete.targets[1].pos == Pos(3, 6)
    given = one("evaluate why node 1 given default = 1, relation Cars = 2").given
    assert [a.pos for a in given] == [Pos(1, 27), Pos(1, 40)]
    assert given[0].target.pos == Pos(1, 27) and given[1].target.pos == Pos(1, 40)


def test_positions_do_not_affect_equality():
    assert sel("node 1") == NodeSel(1) and NodeSel(1).pos == NO_POS
    assert hash(sel("  node 1")) == hash(NodeSel(1))
    assert "pos" not in repr(sel("node 1"))


# ---- rendering and round trip -----------------------------------------------------------

DEALERSHIP = """
zoomout dealer1, dealer2, dealer3, dealer4;
zoomin dealer2;
reset;
delete tuple Cars(CarId = "C2") in dealer1, token 'Requests:B1';
subgraph state SoldCars(Model == "Audi A4") execution 2;
ancestors value Amount of output Bids(Dealer <> 'dealer4') of agg;
descendants state InventoryBids of dealer3 execution 1;
depends state SoldCars on tuple Cars(Model = 'Audi A4'), input Requests(UserId = 7);
polynomial output Bids(BidId >= 2, Amount < 1.5e4) expanded;
polynomial invocation xor execution 3;
evaluate probability output SoldCars given default = 0.9, token "Cars:C2" = .5 samples 1000 seed 7;
evaluate security output SoldCars given relation Cars = secret, default = public;
evaluate minmax(public < `top secret`) output SoldCars given tuple Cars.Level, default = public without delta;
show node 123456789
"""


def test_round_trip_of_the_dealership_queries():
    stmts = parse(DEALERSHIP)
    assert len(stmts) == 14
    for stmt in stmts:
        assert parse(str(stmt)) == [stmt]
    assert parse(";\n".join(map(str, stmts))) == stmts


def test_canonical_rendering():
    assert str(one("ZoomOut A,B")) == "zoomout A, B"
    assert str(sel("state `my rel`(state == 'x', b <> -1) OF m EXECUTION 2")) == (
        'state `my rel`(`state` = "x", b != -1) of m execution 2')
    assert str(one("evaluate Security node 1 given node 2 = secret")) == (
        'evaluate security node 1 given node 2 = "secret"')
    assert str(sel("token 'a\"b\\\\c'")) == 'token "a\\"b\\\\c"'


def test_in_and_of_are_synonyms_echoed_as_written():
    """Issue 19: a statement is printed back with the word its author chose."""
    written_of, written_in = sel("output Bids1 of dealer1"), sel("output Bids1 in dealer1")
    assert written_of == written_in
    assert (str(written_of), str(written_in)) == ("output Bids1 of dealer1", "output Bids1 in dealer1")
    assert str(one("show value Amount of output Bids1 Of dealer1")) == "show value Amount of output Bids1 of dealer1"


def test_format_name_and_literal_reject_what_cannot_be_written():
    with pytest.raises(ValueError):
        format_name("a`b")
    with pytest.raises(ValueError):
        format_name("")
    with pytest.raises(ValueError):
        format_literal(math.inf)
    with pytest.raises(TypeError):
        format_literal([1])  # type: ignore[arg-type]


_names = st.one_of(
    st.sampled_from(sorted(KEYWORDS) + ["Cars", "dealer1", "and", "_x9", "Value", "two words"]),
    st.text(min_size=1, max_size=8).filter(lambda s: "`" not in s and "\n" not in s),
)
_literals = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10),
)
_ids = st.integers(min_value=0, max_value=MAX_NODE_ID)
_opt_ids = st.none() | _ids
_conditions = st.lists(st.builds(Condition, _names, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
                                 _literals), max_size=3).map(tuple)
_selectors = st.recursive(
    st.one_of(
        st.builds(TupleSel, st.sampled_from(["tuple", "input", "state", "output"]), _names,
                  _conditions, st.none() | _names, _opt_ids),
        st.builds(InvocationSel, _names, _opt_ids),
        st.builds(NodeSel, _ids),
        st.builds(TokenSel, st.text(max_size=10)),
    ),
    lambda inner: st.builds(ValueSel, _names, inner),
    max_leaves=3,
)
_selector_tuples = st.lists(_selectors, min_size=1, max_size=3).map(tuple)
_assignments = st.builds(
    Assignment, st.one_of(_selectors, st.builds(RelationRef, _names), st.just(DefaultRef())), _literals)
_statements = st.one_of(
    st.builds(ZoomOut, st.lists(_names, min_size=1, max_size=3).map(tuple)),
    st.builds(ZoomIn, st.lists(_names, min_size=1, max_size=3).map(tuple)),
    st.just(Reset()),
    st.builds(Delete, _selector_tuples),
    st.builds(Subgraph, _selectors),
    st.builds(Ancestors, _selectors),
    st.builds(Descendants, _selectors),
    st.builds(Depends, _selectors, _selector_tuples),
    st.builds(Polynomial, _selectors, st.booleans()),
    st.builds(Evaluate, _names.map(str.lower), _selectors,
              st.lists(_assignments, max_size=3).map(tuple), _opt_ids, _opt_ids),
    st.builds(Show, _selectors),
    st.builds(Responsibility, st.sampled_from(["shapley", "banzhaf"]), _selectors,
              st.sampled_from([("tuples",), ("invocations",), ("tuples", "invocations")]),
              st.lists(_assignments, max_size=2).map(tuple), _opt_ids, _opt_ids),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_statements, max_size=4))
def test_round_trip_property(statements):
    assert parse(";\n".join(map(str, statements))) == statements


# ---- syntax errors ----------------------------------------------------------------------


def test_error_message_format():
    err = syntax_error("reset;\nzoomout dealer1 foo")
    assert str(err) == (
        "<query>:2:17: syntax error: unexpected 'foo'; expected ',', ';' or the end of the query\n"
        "  zoomout dealer1 foo\n"
        "                  ^"
    )
    assert (err.line, err.column) == (2, 17)
    assert isinstance(err, QueryError)


def test_error_names_the_source():
    assert str(syntax_error("zoomout", source="dealers.lq")).startswith("dealers.lq:1:8: syntax error: ")


@pytest.mark.parametrize(
    "text, line, column, detail",
    [
        ("delete", 1, 7, ("unexpected end of the query; expected a selector (tuple, input, state, "
                         "output, invocation, node, token, value or violations)")),
        ("frobnicate x", 1, 1, ("unexpected 'frobnicate'; expected ';', a statement (zoomout, zoomin, "
                               "reset, delete, update, subgraph, ancestors, descendants, depends, polynomial, "
                               "evaluate, shapley, banzhaf, diff, show, where, culprits, sample, checks or blame) or the end of the query")),
        ("show tuple Cars(CarId = )", 1, 25, ("unexpected ')'; expected a literal (a string, a number, "
                                             "true, false or null)")),
        ("show tuple Cars(CarId 'C2')", 1, 23, ("unexpected \"'C2'\"; expected a comparison operator "
                                               "(=, ==, !=, <>, <, <=, > or >=)")),
        ("show tuple Cars(CarId = 1", 1, 26, "unexpected end of the query; expected ')' or ','"),
        ("show tuple Cars @", 1, 17, ("unexpected '@'; expected '(', ';', 'execution', 'in', 'of' or "
                                     "the end of the query")),
        ("delete tuple Cars @", 1, 19, ("unexpected '@'; expected '(', ',', ';', 'execution', 'in', 'of', 'recompute' "
                                       "or the end of the query")),
        ("show tuple Cars in", 1, 19, "unexpected end of the query; expected a name"),
        ("show node 1.5", 1, 11, "unexpected '1.5'; expected a node id (an integer)"),
        ("show node -", 1, 11, "unexpected '-'; expected a node id (an integer)"),
        ("show invocation agg execution x", 1, 31, "unexpected 'x'; expected a non-negative integer"),
        ("depends node 1", 1, 15, "unexpected end of the query; expected 'on'"),
        ("polynomial node 1 expanded expanded", 1, 28, ("unexpected 'expanded'; expected ';' or the end "
                                                       "of the query")),
        ("evaluate probability node 1 given", 1, 34, ("unexpected end of the query; expected 'default', "
                                                     "'relation' or a selector (tuple, input, state, "
                                                     "output, invocation, node, token, value or violations)")),
        ("evaluate probability node 1 seed 1 samples 2", 1, 36, ("unexpected 'samples'; expected ';' or "
                                                                "the end of the query")),
        ("evaluate probability node 1 given default 1", 1, 43, "unexpected '1'; expected '='"),
        ("show token Cars", 1, 12, "unexpected 'Cars'; expected a string"),
        ("zoomout dealer1 zoomout dealer2", 1, 17, ("unexpected 'zoomout'; expected ',', ';' or the end "
                                                   "of the query")),
        ("show node 1 # comment\n", 1, 12, None),
    ],
)
def test_syntax_errors(text, line, column, detail):
    if detail is None:
        assert parse(text) == [Show(NodeSel(1))]
        return
    err = syntax_error(text)
    assert (err.line, err.column) == (line, column)
    first = str(err).splitlines()[0]
    assert first == f"<query>:{line}:{column}: syntax error: {detail}"


def test_caret_is_under_the_column_and_keeps_tabs():
    err = syntax_error("reset;\n\tshow\tnode x")
    lines = str(err).splitlines()
    assert lines[1] == "  \tshow\tnode x"
    assert lines[2] == "  \t    \t     ^"
    assert (err.line, err.column) == (2, 12)


def test_unexpected_end_points_after_the_last_token():
    err = syntax_error("zoomout\n  -- nothing to zoom\n")
    assert (err.line, err.column) == (1, 8)
    assert str(err).endswith("  zoomout\n         ^")


@pytest.mark.parametrize("quote", ['"', "'"])
def test_unterminated_string(quote):
    err = syntax_error(f"show token {quote}Cars:C2\n;reset")
    assert (err.line, err.column) == (1, 12)
    assert f"unterminated string; close it with {quote} before the end of the line" in str(err)


def test_strings_do_not_span_lines():
    err = syntax_error('show token "a\nb"')
    assert "unterminated string" in str(err) and (err.line, err.column) == (1, 12)


def test_unterminated_and_empty_backquoted_name():
    err = syntax_error("zoomout `dealer 1")
    assert "unterminated backquoted name" in str(err) and err.column == 9
    err = syntax_error("zoomout ``")
    assert "empty backquoted name" in str(err) and err.column == 9


def test_windows_line_endings_and_control_characters():
    assert parse("zoomout a,\r\n  b;\r\nreset\r\n") == [ZoomOut(("a", "b")), Reset()]
    err = syntax_error("reset;\r\nzoomout a b\r\n")
    assert str(err).splitlines()[1:] == ["  zoomout a b", "            ^"]
    assert "unexpected '\\x00'" in str(syntax_error("show node 1 \x00"))


def test_unexpected_eof_from_lark_is_translated():
    err = _from_lark(UnexpectedEOF(["NAME", "_COMMA"]), "zoomout a,\n", "q.lq")
    assert str(err) == "q.lq:2:1: syntax error: unexpected end of the query; expected ',' or a name\n  \n  ^"
    assert (err.line, err.column) == (2, 1)


def test_long_unexpected_tokens_are_shortened():
    err = syntax_error("show node 1 " + "x" * 100)
    assert re.search(r"unexpected 'x{29}…'", str(err))


# ---- packaging --------------------------------------------------------------------------


def test_grammar_ships_as_package_data():
    assert files("lipspark.query").joinpath("grammar.lark").is_file()
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "query/*.lark" in pyproject["tool"]["setuptools"]["package-data"]["lipspark"]


def test_parser_is_built_once():
    assert _lark() is _lark()


def test_the_analysed_grammar_is_cached_privately(tmp_path, monkeypatch):
    """lark's cache is a pickle: kept in the user's own 0700 directory, refused anywhere others
    can write; a parser loaded from it reports errors exactly as a fresh one."""
    import os

    from lipspark.query import parser as p

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    grammar = "start: \"x\""
    path = p._cache_file(grammar)
    assert isinstance(path, str) and os.path.dirname(path) == str(tmp_path / "lipspark")
    assert os.stat(tmp_path / "lipspark").st_mode & 0o777 == 0o700
    os.chmod(tmp_path / "lipspark", 0o777)
    assert p._cache_file(grammar) is False
    os.chmod(tmp_path / "lipspark", 0o700)
    p._lark.cache_clear()
    try:
        first = syntax_error("zoomout dealer1 foo")
        p._lark.cache_clear()  # the second build loads the cache file the first wrote
        assert [f for f in os.listdir(tmp_path / "lipspark") if f.startswith("query-grammar-")]
        assert str(syntax_error("zoomout dealer1 foo")) == str(first)
    finally:
        p._lark.cache_clear()


def test_culprits_and_sample_statements_parse_and_echo():
    from lipspark.query.ast import Culprits, Sample

    stmts = parse("culprits; culprits execution 3; sample relation Cars of dealer1 execution 1; sample relation Cars in dealer1 execution 2 3")
    assert stmts == [Culprits(None), Culprits(3), Sample("Cars", "dealer1", 1), Sample("Cars", "dealer1", 2, 3)]
    assert [str(s) for s in stmts] == ["culprits", "culprits execution 3", "sample relation Cars of dealer1 execution 1",
                                       "sample relation Cars in dealer1 execution 2 3"]
    with pytest.raises(QuerySyntaxError):
        parse("sample relation Cars of dealer1 execution 1 0")
