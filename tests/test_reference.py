"""Unit tests of the reference K-relation evaluator (tests/reference.py) on hand-computed examples."""
from __future__ import annotations

import pytest
import sympy

from tests import reference as ref
from tests.reference import DELTA

S = sympy.Symbol


def test_reference_does_not_import_lipspark():
    import ast
    import pathlib

    tree = ast.parse(pathlib.Path(ref.__file__).read_text())
    mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not any(m and m.split(".")[0] == "lipspark" for m in mods)


# ---------------------------------------------------------------------- paper, Example 2.3
@pytest.fixture
def cars():
    return ref.base(
        "Cars",
        [{"CarId": "C1", "Model": "Accord"}, {"CarId": "C2", "Model": "Civic"}, {"CarId": "C3", "Model": "Civic"}],
        key=["CarId"],
    )


@pytest.fixture
def requests():
    return ref.base("Requests", [{"UserId": "P1", "BidId": "B1", "Model": "Civic"}], key=["BidId"])


def test_example_2_3_inventory_and_count(cars, requests):
    c2, c3, b1 = S("Cars:C2"), S("Cars:C3"), S("Requests:B1")
    req_model = ref.select(requests, ["Model"])
    inventory = ref.join(cars, req_model, on=["Model"])
    assert inventory.columns == ["Model", "CarId"]
    assert [(r.data, r.ann) for r in inventory] == [
        ({"Model": "Civic", "CarId": "C2"}, c2 * b1),
        ({"Model": "Civic", "CarId": "C3"}, c3 * b1),
    ]
    counted = ref.group_by(inventory, ["Model"], [("NumAvail", "count", None)])
    assert counted.columns == ["Model", "NumAvail"]
    (row,) = counted.rows
    assert row.data == {"Model": "Civic", "NumAvail": 2}
    assert ref.poly_normal_form(row.ann) == sympy.expand(DELTA(c2 * b1 + c3 * b1))
    agg = row.aggs["NumAvail"]
    assert agg.op == "Count" and agg.result == 2
    assert agg.normal_form() == ("Count", frozenset({(1, c2 * b1 + c3 * b1)}))
    assert set(agg.pairs) == {(c2 * b1, 1), (c3 * b1, 1)}


def test_example_2_3_accord_filtered_out(cars, requests):
    inv = ref.join(cars, ref.select(requests, ["Model"]), on=["Model"])
    assert all(r.data["Model"] == "Civic" for r in inv)
    assert S("Cars:C1") not in set().union(*[r.ann.free_symbols for r in inv])


# ---------------------------------------------------------------------- basic operators
def _r():
    return ref.base(
        "R",
        [{"id": 1, "a": 1, "v": 10}, {"id": 2, "a": 1, "v": None}, {"id": 3, "a": 2, "v": 5}, {"id": 4, "a": 1, "v": 10}],
        key=["id"],
    )


def test_base_tokens_and_pairs():
    r = _r()
    assert [ann for _, ann in r.as_pairs()] == [S("R:1"), S("R:2"), S("R:3"), S("R:4")]
    assert r.columns == ["id", "a", "v"]
    t = ref.base("T", [{"x": 1, "y": "b"}], key=["x", "y"])
    assert t.rows[0].ann == S("T:1,b")


def test_select_keeps_duplicates_and_sums_per_tuple():
    p = ref.select(_r(), ["a"])
    assert len(p) == 4
    assert ref.tuple_multiset(p) == {(1,): 3, (2,): 1}
    assert ref.tuple_polynomials(p) == {(1,): S("R:1") + S("R:2") + S("R:4"), (2,): S("R:3")}


def test_select_rename_and_computed():
    p = ref.select(_r(), {"b": "a", "w": lambda d: d["id"] * 2})
    assert p.columns == ["b", "w"]
    assert [r.data for r in p][:2] == [{"b": 1, "w": 2}, {"b": 1, "w": 4}]


def test_filter_drops_nulls_like_sql():
    f = ref.filter_rows(_r(), ref.compare("v", ">=", 5))
    assert [r.ann for r in f] == [S("R:1"), S("R:3"), S("R:4")]
    g = ref.filter_rows(_r(), ref.compare("v", "!=", 10))
    assert [r.ann for r in g] == [S("R:3")]


def test_join_product_column_order_and_null_keys():
    r = _r()
    s = ref.base("S", [{"sid": 7, "v": 10, "c": 0}, {"sid": 8, "v": None, "c": 1}], key=["sid"])
    j = ref.join(r, s, on=["v"])
    assert j.columns == ["v", "id", "a", "sid", "c"]
    assert [(r_.data["id"], r_.ann) for r_ in j] == [(1, S("R:1") * S("S:7")), (4, S("R:4") * S("S:7"))]
    with pytest.raises(ValueError):
        ref.join(r, r, on=["a"])  # id, v on both sides


def test_self_join_squares():
    r = ref.select(_r(), ["id", "a"])
    j = ref.join(r, ref.select(_r(), ["a"]), on=["a"])
    polys = ref.tuple_polynomials(ref.select(j, ["a"]))
    r1, r2, r4, r3 = S("R:1"), S("R:2"), S("R:4"), S("R:3")
    assert polys[(1,)] == sympy.expand((r1 + r2 + r4) ** 2)
    assert polys[(2,)] == r3**2


def test_cross_join():
    a = ref.base("A", [{"x": 1}, {"x": 2}], key=["x"])
    b = ref.base("B", [{"y": 1}], key=["y"])
    c = ref.cross_join(a, b)
    assert c.columns == ["x", "y"]
    assert [r.ann for r in c] == [S("A:1") * S("B:1"), S("A:2") * S("B:1")]
    with pytest.raises(ValueError):
        ref.cross_join(a, a)


def test_union_positional_and_sum():
    a = ref.base("A", [{"x": 1}, {"x": 2}], key=["x"])
    b = ref.select(ref.base("B", [{"y": 1}], key=["y"]), ["y"])
    u = ref.union(a, b)
    assert u.columns == ["x"]
    assert ref.tuple_polynomials(u) == {(1,): S("A:1") + S("B:1"), (2,): S("A:2")}


def test_distinct_delta_of_sum_and_counting():
    d = ref.distinct(ref.select(_r(), ["a"]))
    polys = ref.tuple_polynomials(d)
    assert polys == {(1,): DELTA(S("R:1") + S("R:2") + S("R:4")), (2,): DELTA(S("R:3"))}
    # δ then union: 2·δ(..) for a tuple present twice
    u = ref.union(d, d)
    assert ref.tuple_polynomials(u)[(2,)] == 2 * DELTA(S("R:3"))


def test_distinct_expands_inside_delta():
    a = ref.base("A", [{"x": 1}], key=["x"])
    b = ref.base("B", [{"y": 1}, {"y": 2}], key=["y"])
    j = ref.select(ref.cross_join(a, b), ["x"])
    d = ref.distinct(j)
    assert ref.poly_normal_form(d.rows[0].ann) == DELTA(S("A:1") * S("B:1") + S("A:1") * S("B:2"))


def test_distinct_groups_nulls_together():
    r = ref.base("R", [{"id": 1, "v": None}, {"id": 2, "v": None}], key=["id"])
    d = ref.distinct(ref.select(r, ["v"]))
    assert len(d) == 1 and d.rows[0].ann == DELTA(S("R:1") + S("R:2"))


def test_group_by_all_aggregates_with_nulls():
    aggs = [
        ("cnt", "count", None),
        ("cnt_v", "count", "v"),
        ("sum_v", "sum", "v"),
        ("min_v", "min", "v"),
        ("max_v", "max", "v"),
        ("avg_v", "avg", "v"),
    ]
    g = ref.group_by(_r(), ["a"], aggs)
    assert g.columns == ["a", "cnt", "cnt_v", "sum_v", "min_v", "max_v", "avg_v"]
    rows = {r.data["a"]: r for r in g}
    one = rows[1]
    assert one.data == {"a": 1, "cnt": 3, "cnt_v": 2, "sum_v": 20, "min_v": 10, "max_v": 10, "avg_v": 10.0}
    r1, r2, r4 = S("R:1"), S("R:2"), S("R:4")
    assert one.ann == DELTA(r1 + r2 + r4)
    assert one.aggs["cnt"].normal_form() == ("Count", frozenset({(1, r1 + r2 + r4)}))
    assert one.aggs["cnt_v"].normal_form() == ("Count", frozenset({(1, r1 + r4)}))
    assert one.aggs["sum_v"].normal_form() == ("Sum", frozenset({(10, r1 + r4)}))
    assert one.aggs["avg_v"].normal_form() == ("Avg", frozenset({(10, r1 + r4)}))
    assert one.aggs["min_v"].pairs == ((r1, 10), (r4, 10))


def test_group_by_all_null_group():
    r = ref.base("R", [{"id": 1, "a": 0, "v": None}], key=["id"])
    g = ref.group_by(r, ["a"], [("s", "sum", "v"), ("c", "count", "v"), ("n", "count", None), ("m", "avg", "v")])
    row = g.rows[0]
    assert row.data == {"a": 0, "s": None, "c": 0, "n": 1, "m": None}
    assert row.aggs["s"].normal_form() == ("Sum", frozenset())
    assert row.aggs["n"].normal_form() == ("Count", frozenset({(1, S("R:1"))}))


def test_group_by_null_key_is_a_group():
    r = ref.base("R", [{"id": 1, "a": None}, {"id": 2, "a": None}, {"id": 3, "a": 1}], key=["id"])
    g = ref.group_by(r, ["a"], [("n", "count", None)])
    assert {r_.data["a"]: r_.data["n"] for r_ in g} == {None: 2, 1: 1}


def test_global_aggregate_and_empty_input():
    g = ref.group_by(_r(), [], [("n", "count", None), ("s", "sum", "v")])
    assert g.columns == ["n", "s"] and g.rows[0].data == {"n": 4, "s": 25}
    empty = ref.filter_rows(_r(), lambda d: False)
    e = ref.group_by(empty, [], [("n", "count", None), ("s", "sum", "v")])
    assert e.rows[0].data == {"n": 0, "s": None} and e.rows[0].ann == 1  # no tuple derives it, none can delete it
    assert len(ref.group_by(empty, [], [("n", "count", None)], global_on_empty=False)) == 0
    assert len(ref.group_by(empty, ["a"], [("n", "count", None)])) == 0


def test_avg_is_exact():
    r = ref.base("R", [{"id": i, "v": v} for i, v in enumerate([1, 1, 2])], key=["id"])
    g = ref.group_by(r, [], [("m", "avg", "v")])
    assert g.rows[0].data["m"] == 4 / 3


def test_aggregate_after_aggregate_uses_plain_values():
    inner = ref.group_by(_r(), ["a"], [("cnt", "count", None)])
    outer = ref.group_by(inner, [], [("s", "sum", "cnt")])
    (row,) = outer.rows
    assert row.data["s"] == 4
    d1 = DELTA(S("R:1") + S("R:2") + S("R:4"))
    d2 = DELTA(S("R:3"))
    assert row.aggs["s"].normal_form() == ("Sum", frozenset({(3, d1), (1, d2)}))
    assert row.ann == 1  # a keyless aggregate's one row: SQL returns it over any input


def test_aggregate_values_follow_select_filter_join_union_but_not_distinct():
    g = ref.group_by(_r(), ["a"], [("cnt", "count", None)])
    sel = ref.select(ref.filter_rows(g, ref.compare("cnt", ">", 0)), {"k": "a", "n": "cnt"})
    assert all("n" in r.aggs for r in sel)
    j = ref.join(sel, ref.select(sel, ["k"]), on=["k"])
    assert all(set(r.aggs) == {"n"} for r in j)
    u = ref.union(sel, ref.select(_r(), ["a", "id"]))
    assert [("n" in r.aggs) for r in u] == [True, True, False, False, False, False]
    assert all(not r.aggs for r in ref.distinct(sel))


def test_agg_normal_form_groups_values_and_drops_zero():
    a, b = S("a"), S("b")
    assert ref.agg_normal_form("Sum", [(a, 5), (b, 5.0), (a * 0, 7)]) == ("Sum", frozenset({(5, a + b)}))
    assert ref.agg_normal_form("Min", [(a * (a + b), 2)]) == ("Min", frozenset({(2, a**2 + a * b)}))


def test_norm_value():
    assert ref.norm_value(1.0) == 1 and ref.norm_value(-0.0) == 0
    assert ref.norm_value(1 / 3) == round(1 / 3, 9)
    assert ref.norm_value(None) is None and ref.norm_value("x") == "x"


# ---------------------------------------------------------------------- aggregates of expressions, DISTINCT, black boxes
def test_aggregate_of_an_expression_pairs_each_member_with_the_expressions_value():
    g = ref.group_by(_r(), ["a"], [("s", "sum", lambda d: None if d["v"] is None else d["v"] * 2),
                                   ("c", "count", lambda d: 1 if d["v"] is not None and d["v"] > 5 else None),
                                   ("z", "avg", lambda d: 0 if d["v"] is None else d["v"])])
    one = {r.data["a"]: r for r in g}[1]
    r1, r2, r4 = S("R:1"), S("R:2"), S("R:4")
    assert one.data == {"a": 1, "s": 40, "c": 2, "z": 20 / 3}
    assert one.aggs["s"].normal_form() == ("Sum", frozenset({(20, r1 + r4)}))
    assert one.aggs["c"].normal_form() == ("Count", frozenset({(1, r1 + r4)}))
    assert one.aggs["z"].normal_form() == ("Avg", frozenset({(10, r1 + r4), (0, r2)}))


def test_count_distinct_is_a_count_of_deltas_one_per_distinct_value():
    g = ref.group_by(_r(), ["a"], [("d", "count_distinct", "v"), ("s", "sum_distinct", "v"), ("m", "avg_distinct", "v")])
    rows = {r.data["a"]: r for r in g}
    r1, r4, r3 = S("R:1"), S("R:4"), S("R:3")
    assert rows[1].data == {"a": 1, "d": 1, "s": 10, "m": 10.0}  # 10 twice and a null: one distinct value
    assert rows[1].aggs["d"].normal_form() == ("Count", frozenset({(1, DELTA(r1 + r4))}))
    assert rows[1].aggs["s"].normal_form() == ("Sum", frozenset({(10, DELTA(r1 + r4))}))
    assert rows[2].aggs["d"].pairs == ((DELTA(r3), 1),)
    # several columns: a tuple counts when none of its values is null
    r = ref.base("R", [{"id": 1, "x": 1, "y": 1}, {"id": 2, "x": 1, "y": 2}, {"id": 3, "x": 1, "y": None},
                       {"id": 4, "x": 1, "y": 1}], key=["id"])
    (row,) = ref.group_by(r, [], [("d", "count_distinct", ("x", "y"))]).rows
    assert row.data["d"] == 2
    assert row.aggs["d"].normal_form() == ("Count", frozenset({(1, DELTA(S("R:1") + S("R:4")) + DELTA(S("R:2")))}))


def test_distinct_over_no_values_counts_zero():
    r = ref.base("R", [{"id": 1, "v": None}], key=["id"])
    (row,) = ref.group_by(r, [], [("d", "count_distinct", "v"), ("s", "sum_distinct", "v")]).rows
    assert row.data == {"d": 0, "s": None} and row.aggs["d"].pairs == ()


def test_black_box_aggregates_are_black_boxes_of_every_member():
    r = ref.base("R", [{"id": 1, "v": None}, {"id": 2, "v": 10}, {"id": 3, "v": 10}, {"id": 4, "v": 30}], key=["id"])
    aggs = [("f", "first", "v"), ("fi", "first_ignorenulls", "v"), ("l", "last", "v"), ("cs", "collect_set", "v"),
            ("sd", "stddev", "v"), ("sp", "stddev_pop", "v"), ("vs", "variance", "v"), ("vp", "var_pop", "v")]
    (row,) = ref.group_by(r, [], aggs).rows
    assert row.data["f"] is None and row.data["fi"] == 10 and row.data["l"] == 30
    assert row.data["cs"] == [10, 30]
    assert row.data["vs"] == pytest.approx(400 / 3) and row.data["sd"] == pytest.approx((400 / 3) ** 0.5)
    assert row.data["vp"] == pytest.approx(800 / 9) and row.data["sp"] == pytest.approx((800 / 9) ** 0.5)
    toks = tuple(sorted(f"R:{i}" for i in range(1, 5)))
    assert row.aggs["sd"].normal_form() == ("black box", "stddev", toks)
    assert row.aggs["fi"].normal_form() == ("black box", "first", toks)  # the user's name, with or without ignorenulls


def test_sample_statistics_of_one_value_are_null():
    r = ref.base("R", [{"id": 1, "v": 5}], key=["id"])
    (row,) = ref.group_by(r, [], [("sd", "stddev", "v"), ("vs", "var_samp", "v"), ("vp", "var_pop", "v")]).rows
    assert row.data == {"sd": None, "vs": None, "vp": 0.0}


def test_an_expression_over_aggregates_is_a_black_box_of_the_group():
    expr = ref.Expression(lambda s, n: s / n, (("sum", "v"), ("count", None)))
    g = ref.group_by(_r(), ["a"], [("r", "expr", expr)])
    one = {r.data["a"]: r for r in g}[1]
    assert one.data["r"] == 20 / 3
    assert one.aggs["r"].normal_form() == ("black box", "r", (str(DELTA(S("R:1") + S("R:2") + S("R:4"))),))
    empty = ref.group_by(ref.filter_rows(_r(), lambda d: False), [], [("r", "expr", ref.Expression(lambda n: n + 1, (("count", None),)))])
    assert empty.rows[0].data == {"r": 1} and empty.rows[0].aggs["r"].normal_form() == ("black box", "r", ("1",))


def test_norm_value_of_a_set_ignores_order():
    assert ref.norm_value([3, 1.0]) == ref.norm_value([1, 3])


# ---------------------------------------------------------------------- semi join, theta join, intersect, unionByName
def test_semi_join_keeps_left_rows_times_delta_of_partners():
    r = _r()  # id, a, v: a = 1, 1, 2, 1
    s = ref.base("S", [{"sid": 7, "a": 1}, {"sid": 8, "a": 1}, {"sid": 9, "a": 3}, {"sid": 10, "a": None}], key=["sid"])
    j = ref.semi_join(r, s, on=["a"])
    assert j.columns == ["a", "id", "v"]  # as Spark orders a join on names
    d = DELTA(S("S:7") + S("S:8"))
    assert [(x.data["id"], x.ann) for x in j] == [(1, S("R:1") * d), (2, S("R:2") * d), (4, S("R:4") * d)]
    # a row keeps its multiplicity; a null key has no partner
    nulls = ref.base("N", [{"n": 1, "a": None}], key=["n"])
    assert len(ref.semi_join(nulls, ref.select(nulls, ["a"]), on=["a"])) == 0
    dup = ref.union(ref.select(r, ["a"]), ref.select(r, ["a"]))
    assert ref.tuple_polynomials(ref.semi_join(dup, s, on=["a"]))[(1,)] == sympy.expand(2 * (S("R:1") + S("R:2") + S("R:4")) * d)


def test_semi_join_where_and_theta_join():
    r = ref.select(_r(), ["id", "v"])  # v = 10, None, 5, 10
    s = ref.base("S", [{"sid": 7, "w": 6}, {"sid": 8, "w": 11}], key=["sid"])
    lt = ref.compare_columns("v", "<", "w")
    semi = ref.semi_join_where(r, s, lt)
    assert semi.columns == ["id", "v"]
    assert [(x.data["id"], x.ann) for x in semi] == [
        (1, S("R:1") * DELTA(S("S:8"))), (3, S("R:3") * DELTA(S("S:7") + S("S:8"))), (4, S("R:4") * DELTA(S("S:8")))]
    theta = ref.theta_join(r, s, lt)
    assert theta.columns == ["id", "v", "sid", "w"]
    assert [x.ann for x in theta] == [S("R:1") * S("S:8"), S("R:3") * S("S:7"), S("R:3") * S("S:8"), S("R:4") * S("S:8")]
    with pytest.raises(ValueError):
        ref.theta_join(r, r, lt)


def test_intersect_is_delta_of_each_side_and_null_safe():
    a = ref.base("A", [{"id": 1, "x": 1}, {"id": 2, "x": 1}, {"id": 3, "x": None}, {"id": 4, "x": 2}], key=["id"])
    b = ref.base("B", [{"id": 5, "y": 1}, {"id": 6, "y": None}, {"id": 7, "y": 3}], key=["id"])
    i = ref.intersect(ref.select(a, ["x"]), ref.select(b, ["y"]))
    assert i.columns == ["x"]
    assert ref.tuple_polynomials(i) == {
        (1,): sympy.expand(DELTA(S("A:1") + S("A:2")) * DELTA(S("B:5"))),
        (None,): sympy.expand(DELTA(S("A:3")) * DELTA(S("B:6"))),
    }
    assert len(ref.intersect(ref.select(a, ["x"]), ref.filter_rows(ref.select(b, ["y"]), lambda d: False))) == 0


def test_union_by_name_fills_missing_columns_with_null():
    a = ref.base("A", [{"id": 1, "x": 1}], key=["id"])
    b = ref.base("B", [{"y": 2, "id": 5}], key=["id"])
    u = ref.union_by_name(a, b, allow_missing=True)
    assert u.columns == ["id", "x", "y"]
    assert [(x.data, x.ann) for x in u] == [({"id": 1, "x": 1, "y": None}, S("A:1")), ({"id": 5, "x": None, "y": 2}, S("B:5"))]
    with pytest.raises(ValueError):
        ref.union_by_name(a, b)
    g = ref.group_by(a, ["id"], [("n", "count", None)])
    assert ref.union_by_name(g, b, allow_missing=True).rows[0].aggs["n"].result == 1  # aggregate values travel by name


MONUS = ref.MONUS


def test_anti_join_keeps_rows_without_partners_and_lists_the_others_absent():
    # by hand: L:1 (k=1) has partners R:5, R:6; L:2 (k=2) has none; L:3 (k=None) never matches
    left = ref.base("L", [{"id": 1, "k": 1}, {"id": 2, "k": 2}, {"id": 3, "k": None}], key=["id"])
    right = ref.base("R", [{"id": 5, "k": 1}, {"id": 6, "k": 1}, {"id": 7, "k": None}], key=["id"])
    a = ref.anti_join(left, ref.select(right, ["k"]), ["k"])
    assert [(x.data, x.ann) for x in a] == [({"id": 2, "k": 2}, S("L:2")), ({"id": 3, "k": None}, S("L:3"))]
    assert [(x.data, x.ann) for x in a.absent] == [({"id": 1, "k": 1}, MONUS(S("L:1"), DELTA(S("R:5") + S("R:6"))))]
    w = ref.anti_join_where(left, right, lambda ld, rd: ld["k"] is not None and rd["k"] is not None and ld["k"] < rd["k"])
    assert [x.ann for x in w] == [S("L:1"), S("L:2"), S("L:3")]  # no k is below 1


def test_outer_joins_pad_rows_without_partners():
    left = ref.base("L", [{"id": 1, "k": 1}, {"id": 2, "k": 2}], key=["id"])
    right = ref.base("R", [{"sid": 5, "k": 1}, {"sid": 6, "k": 3}], key=["sid"])
    full = ref.outer_join(left, right, ["k"], "full")
    assert full.columns == ["k", "id", "sid"]
    assert [(x.data, x.ann) for x in full] == [
        ({"k": 1, "id": 1, "sid": 5}, S("L:1") * S("R:5")),
        ({"k": 2, "id": 2, "sid": None}, S("L:2")),
        ({"k": 3, "id": None, "sid": 6}, S("R:6")),
    ]
    assert [(x.data, x.ann) for x in full.absent] == [
        ({"k": 1, "id": 1, "sid": None}, MONUS(S("L:1"), DELTA(S("R:5")))),
        ({"k": 1, "id": None, "sid": 5}, MONUS(S("R:5"), DELTA(S("L:1")))),
    ]
    assert len(ref.outer_join(left, right, ["k"], "left")) == 2 and len(ref.outer_join(left, right, ["k"], "right")) == 2


def test_subtract_is_delta_minus_delta_and_null_safe():
    a = ref.base("A", [{"id": 1, "x": 1}, {"id": 2, "x": 1}, {"id": 3, "x": None}, {"id": 4, "x": 2}], key=["id"])
    b = ref.base("B", [{"id": 5, "y": 1}, {"id": 6, "y": None}], key=["id"])
    d = ref.subtract(ref.select(a, ["x"]), ref.select(b, ["y"]))
    assert [(x.data, x.ann) for x in d] == [({"x": 2}, DELTA(S("A:4")))]
    assert [(x.data, x.ann) for x in d.absent] == [
        ({"x": 1}, MONUS(DELTA(S("A:1") + S("A:2")), DELTA(S("B:5")))),
        ({"x": None}, MONUS(DELTA(S("A:3")), DELTA(S("B:6")))),
    ]


def test_monus_laws():
    assert ref.monus(S("a"), 0) == S("a") and ref.monus(0, S("a")) == 0
    assert ref.monus(S("a"), S("b")) == MONUS(S("a"), S("b"))


def test_drop_duplicates_is_delta_per_key_and_first_of_the_other_columns():
    rel = ref.base("R", [{"id": 1, "k": "a", "v": 5}, {"id": 2, "k": "a", "v": 5}, {"id": 3, "k": None, "v": 7}], key=["id"])
    out = ref.drop_duplicates(rel, ["k"])
    got = {r.data["k"]: r for r in out.rows}
    assert got["a"].ann == DELTA(S("R:1") + S("R:2")) and got[None].ann == DELTA(S("R:3"))
    assert got["a"].aggs["v"] == ref.BlackBoxVal("first", (S("R:1"), S("R:2")), 5)
    assert got["a"].data == {"id": 1, "k": "a", "v": 5}  # the first row of the key
    assert len(ref.drop_duplicates(rel, [])) == 1 and len(ref.drop_duplicates(ref.filter_rows(rel, lambda d: False), [])) == 0


def test_grouping_sets_are_a_union_of_group_bys_with_the_grand_total_a_group():
    rel = ref.base("R", [{"id": 1, "k": "a", "p": "x", "v": 5}, {"id": 2, "k": "a", "p": "y", "v": 3}], key=["id"])
    out = ref.grouping_sets(rel, ["k", "p"], [["k", "p"], ["k"], []], [("s", "sum", "v")])
    got = sorted((str(tuple(r.data.values())), str(r.ann)) for r in out.rows)
    assert got == sorted([(str(("a", "x", 5)), "δ(R:1)"), (str(("a", "y", 3)), "δ(R:2)"), (str(("a", None, 8)), "δ(R:1 + R:2)"),
                          (str((None, None, 8)), "δ(R:1 + R:2)")])
    assert len(ref.grouping_sets(ref.filter_rows(rel, lambda d: False), ["k"], [["k"], []], [("s", "sum", "v")])) == 0


def test_pivot_aggregates_each_value_over_its_rows():
    rel = ref.base("R", [{"id": 1, "k": "a", "p": "x", "v": 5}, {"id": 2, "k": "a", "p": None, "v": None},
                         {"id": 3, "k": "b", "p": "x", "v": 2}], key=["id"])
    one_step = {r.data["k"]: r for r in ref.pivot(rel, ["k"], "p", ["x", None], [("n", "count", "v")]).rows}
    assert one_step["a"].data == {"k": "a", "x": 1, "null": 0} and one_step["b"].data == {"k": "b", "x": 1, "null": 0}
    assert one_step["a"].aggs["x"].pairs == ((S("R:1"), 1),) and one_step["a"].ann == DELTA(S("R:1") + S("R:2"))
    two_step = {r.data["k"]: r for r in ref.pivot(rel, ["k"], "p", ["x", None], [("n", "count", "v")], null_without_rows=True).rows}
    assert two_step["a"].data == {"k": "a", "x": 1, "null": 0} and two_step["b"].data == {"k": "b", "x": 1, "null": None}
    assert two_step["a"].aggs["null"] == ref.AggVal("Sum", ((S("R:2"), 0),), 0)  # a row for null whose v is null: 0
