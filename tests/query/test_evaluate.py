"""`evaluate` on ProvSQL's intelligence-agency case study (hand-built, no Spark): ordered levels,
values from a column, δ-free counting, and the same answers from the language and the Python API.

Seven agents (ProvSQL doc/casestudy1) with a clearance; the cities with two agents come from a
self-join ``p1.city = p2.city and p1.id < p2.id`` grouped by city, so each city's tuple is
``δ(Σ pairs)`` — Paris has three pairs — output by one invocation of a module ``agency``.
Base tuples keep their key ``id`` and the columns ``classification``, ``probability`` and
``weight`` (not ``name`` or ``city``).
"""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from lipspark.errors import MissingValueError, QueryError, QuerySyntaxError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session, evaluate, provenance_mapping
from lipspark.semiring import COUNTING, SECURITY, TROPICAL, MaxMinSemiring, MinMaxSemiring, probability
from lipspark.query import polynomial

LEVELS = ("unclassified", "restricted", "confidential", "secret", "top_secret")
ORDER = " < ".join(LEVELS)
AGENTS = [  # id, name, city, classification
    (1, "Juma", "Nairobi", "unclassified"), (2, "Paul", "Nairobi", "restricted"), (3, "David", "Paris", "confidential"),
    (4, "Ellen", "Beijing", "secret"), (5, "Aaheli", "Paris", "top_secret"), (6, "Nancy", "Paris", "restricted"),
    (7, "Jing", "Beijing", "secret"),
]
CITIES = {"Nairobi": 31, "Paris": 32, "Beijing": 33}  # output node ids


def agency() -> GraphIndex:
    nodes: list[dict] = []
    edges: list[tuple[int, int]] = []
    for i, _name, _city, level in AGENTS:
        nodes.append({"id": i, "op": "token", "label": f"personnel:{i}", "relation": "personnel",
                      "tuple": json.dumps({"id": i, "classification": level, "probability": i / 10, "weight": i})})
    pair_id = 10
    for k, city in enumerate(CITIES):
        group = 21 + k
        nodes.append({"id": group, "op": "δ", "label": "δ"})
        members = [a[0] for a in AGENTS if a[2] == city]
        for x in members:
            for y in members:
                if x < y:
                    pair_id += 1
                    nodes.append({"id": pair_id, "op": "·", "label": "·"})
                    edges += [(x, pair_id), (y, pair_id), (pair_id, group)]
        out = CITIES[city]
        nodes.append({"id": out, "op": "output", "label": "·", "relation": "Cities", "type": "o", "module": "agency",
                      "execution": 1, "tuple": json.dumps({"city": city})})
        edges += [(group, out), (30, out)]
    nodes.append({"id": 30, "op": "invocation", "label": "agency", "type": "m", "module": "agency", "execution": 1})
    frame = pd.DataFrame(nodes)
    frame["kind"] = "p"
    return GraphIndex.build(frame, pd.DataFrame(edges, columns=["src", "dst"]))


@pytest.fixture(scope="module")
def graph() -> GraphIndex:
    return agency()


@pytest.fixture
def session(graph) -> Session:
    return Session(graph)


def by_city(session: Session, query: str) -> dict[str, object]:
    (r,) = session.run(query)
    assert r.to_text().splitlines()[0] == r.statement and json.dumps(r.to_dict())
    found = {row["name"].split("(")[1].rstrip(")"): row["value"] for row in r.rows}
    return {city: found[city] for city in CITIES}


def test_the_polynomials_are_the_paper_s(session):
    (r,) = session.run('polynomial output Cities(city = "Paris") in agency expanded')
    assert r.rows[0]["polynomial"] == "M_agency[1]·δ(personnel:3·personnel:5 + personnel:3·personnel:6 + personnel:5·personnel:6)"


def test_minmax_over_the_agency_levels_from_the_classification_column(session):
    """ProvSQL's answers: Nairobi needs restricted, Paris confidential (David–Nancy), Beijing secret."""
    assert by_city(session, f"evaluate minmax({ORDER}) output Cities in agency given tuple personnel.classification") == {
        "Nairobi": "restricted", "Paris": "confidential", "Beijing": "secret"}
    assert by_city(session, f"evaluate maxmin({ORDER}) output Cities in agency given tuple personnel.classification") == {
        "Nairobi": "unclassified", "Paris": "confidential", "Beijing": "secret"}
    # later items win: Nancy re-classified, every Paris pair needs top_secret
    assert by_city(session, f'evaluate minmax({ORDER}) output Cities given tuple personnel.classification, '
                            f'token "personnel:6" = top_secret')["Paris"] == "top_secret"
    (r,) = session.run(f"evaluate minmax({ORDER}) output Cities given tuple personnel.classification")
    assert r.summary == f"in the minmax({ORDER}) semiring"


def test_counting_without_delta_counts_the_derivations(session):
    """δ makes every city 1; as the identity, Paris has its 3 pairs."""
    assert by_city(session, "evaluate counting output Cities given default = 1") == {"Nairobi": 1, "Paris": 1, "Beijing": 1}
    (r,) = session.run("evaluate counting output Cities given default = 1 without delta")
    assert [row["value"] for row in r.rows] == [1, 3, 1]
    assert r.summary == "in the counting semiring, δ as the identity (the number of derivations)"
    assert r.statement == "evaluate counting output Cities given default = 1 without delta"
    # δ is already the identity in the other semirings: the option changes nothing there
    q = f"evaluate minmax({ORDER}) output Cities given tuple personnel.classification"
    assert by_city(session, q + " without delta") == by_city(session, q)


def test_costs_and_probabilities_from_columns(session):
    assert by_city(session, "evaluate tropical output Cities given tuple personnel.weight") == {"Nairobi": 3.0, "Paris": 8.0, "Beijing": 11.0}
    found = by_city(session, "evaluate probability output Cities given tuple personnel.probability")
    assert found == pytest.approx({"Nairobi": 0.1 * 0.2, "Paris": 0.3 * 0.5 * 0.4 + 0.3 * 0.5 * 0.6 + 0.7 * 0.5 * 0.6 + 0.3 * 0.5 * 0.6,
                                   "Beijing": 0.4 * 0.7})


@pytest.mark.parametrize("query, semiring, column, default", [
    (f"evaluate minmax({ORDER}) output Cities given tuple personnel.classification", MinMaxSemiring(LEVELS), "classification", None),
    (f"evaluate maxmin({ORDER}) output Cities given tuple personnel.classification", MaxMinSemiring(LEVELS), "classification", None),
    ("evaluate tropical output Cities given tuple personnel.weight", TROPICAL, "weight", None),
    ("evaluate counting output Cities given default = 2", COUNTING, None, 2),
    ("evaluate counting output Cities given default = 2 without delta", COUNTING, None, 2),
    ('evaluate security output Cities given token "personnel:3" = secret, default = confidential', SECURITY, None, "confidential"),
])
def test_the_language_and_the_python_api_give_the_same_answers(session, graph, query, semiring, column, default):
    mapping = provenance_mapping(graph, "personnel", column) if column else {}
    if "token" in query:
        mapping["personnel:3"] = "secret"
    kwargs = {"default": default} if default is not None else {}
    want = [evaluate(graph, node, semiring, mapping, without_delta="without delta" in query, **kwargs) for node in CITIES.values()]
    assert [row["value"] for row in session.run(query)[0].rows] == want


def test_probability_the_language_and_the_python_api(session, graph):
    mapping = {**provenance_mapping(graph, "personnel", "probability"), "M_agency[1]": 1.0}
    want = [probability(polynomial(graph, node), mapping).value for node in CITIES.values()]
    assert [row["value"] for row in session.run("evaluate probability output Cities given tuple personnel.probability")[0].rows] == want


def test_a_token_without_a_level_is_an_error_not_public(session, graph):
    with pytest.raises(QueryError) as err:
        session.run(f'evaluate minmax({ORDER}) output Cities(city = "Paris") given token "personnel:3" = secret')
    message = str(err.value)
    assert "no level for 2 token(s): personnel:5, personnel:6; give them one with `given tuple REL.COLUMN`" in message
    assert "default = V" in message and "\n" not in message
    with pytest.raises(MissingValueError, match=r"none for 2 token\(s\): personnel:5, personnel:6"):
        evaluate(graph, CITIES["Paris"], MinMaxSemiring(LEVELS), {"personnel:3": "secret"})
    for name, value in (("security", "secret"), ("counting", 1), ("boolean", "true"), ("tropical", 1), ("probability", 1)):
        with pytest.raises(QueryError, match=r"for 2 token\(s\): personnel:5, personnel:6;"):
            session.run(f'evaluate {name} output Cities(city = "Paris") given token "personnel:3" = {value}')


ERRORS = [
    # a column the base tuples do not keep: which they keep, and how to keep more
    (f"evaluate minmax({ORDER}) output Cities given tuple personnel.city",
     r"tuple personnel.city \(line 1\): the base tuples of personnel keep no column 'city' \(they keep: classification, id, "
     r"probability, weight\); keep it with Tracker.annotate\(\.\.\., keep=\['city'\]\) or, in a workflow, "
     r"Module\(keep=\{'personnel': \['city'\]\}\); a relation annotated without a key keeps all its columns$"),
    (f"evaluate minmax({ORDER}) output Cities given tuple spies.level",
     r"no base tuples of relation 'spies' in this graph \(relations with base tuples: personnel\)"),
    # a value not in the order, named with its token
    ("evaluate minmax(unclassified < restricted < confidential < secret) output Cities given tuple personnel.classification",
     r"token 'personnel:5' has classification = 'top_secret': expected a level of minmax\(unclassified < restricted < "
     r"confidential < secret\); found str 'top_secret'"),
    ("evaluate security output Cities given tuple personnel.classification",
     r"token 'personnel:1' has classification = 'unclassified': expected a level of minmax\(public < confidential < secret < top_secret\)"),
    ("evaluate probability output Cities given tuple personnel.weight",
     r"token 'personnel:2' has weight = 2: a probability is a number between 0 and 1, found 2$"),
    ("evaluate counting output Cities given tuple personnel.probability",
     r"token 'personnel:1' has probability = 0.1: expected a value of the counting semiring, a whole number >= 0; found float 0.1"),
    # selecting by a column to value tuples: the fix is `given tuple REL.COLUMN`
    ('evaluate security output Cities given tuple personnel(city = "Paris") = secret',
     r"personnel has no column city \(its tuples show: classification, id, probability, weight\); to give each base tuple the value "
     r"of one of its columns, write `given tuple personnel.COLUMN`"),
    ('evaluate security output Cities given output Cities(city = "Paris") = secret',
     r"node 32 \(·\) is derived; to give each base tuple the value of one of its columns, write `given tuple REL.COLUMN`"),
    # the levels
    ("evaluate minmax output Cities", r"minmax needs its levels, lowest first: minmax\(LEVEL < LEVEL < …\), e.g. minmax\(public < secret\)"),
    ("evaluate counting(a < b) output Cities", r"only minmax and maxmin take levels; counting does not"),
    ("evaluate maxmin(low < high < low) output Cities", r"expected distinct levels; found 'low' twice in low < high < low"),
    ('evaluate minmax(low < high) output Cities given default = "Low"', r"expected a level of minmax\(low < high\); found str 'Low'"),
]


@pytest.mark.parametrize("query, message", ERRORS)
def test_bad_input_is_one_line(session, query, message):
    with pytest.raises(QueryError) as err:
        session.run(query)
    assert "\n" not in str(err.value)
    assert not isinstance(err.value, QuerySyntaxError)
    assert re.search(message, str(err.value)), str(err.value)


def test_only_base_tuples_take_values_from_a_column(session):
    with pytest.raises(QuerySyntaxError, match=r"only base tuples take values from a column: write `tuple Cities.city`"):
        session.run("evaluate security output Cities given output Cities.city")
