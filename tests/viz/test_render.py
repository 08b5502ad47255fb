"""lipspark.viz: Lipstick's notation, escaping, the size guard, query results, the CLI (no browser)."""
from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lipspark.cli import main
from lipspark.errors import LipsparkError
from lipspark.graph.index import GraphIndex
from lipspark.query import Session, delete
from lipspark.viz import levels, module_colours, render, repr_html, to_html
from lipspark.viz.labels import LABEL_CHARS
from tests.viz import FIG, PAYLOAD_IMG, PAYLOAD_SCRIPT, build, figure2c



vr = importlib.import_module("lipspark.viz.render")  # the module (lipspark.viz.render is the function)
vl = importlib.import_module("lipspark.viz.layout")


def _by_id(net: Any) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in net.nodes}


def _node(net: Any, name: str) -> dict[str, Any]:
    return _by_id(net)[str(FIG[name])]


@pytest.fixture(scope="module")
def fig() -> GraphIndex:
    return figure2c()


@pytest.fixture(scope="module")
def fig_net(fig: GraphIndex) -> Any:
    return render(fig, title="Figure 2(c)")


# ---------------------------------------------------------------------------------- notation


def test_shapes_follow_the_paper(fig_net: Any) -> None:
    assert _node(fig_net, "Cars:C2")["shape"] == "ellipse"  # p-nodes round
    assert _node(fig_net, "group")["shape"] == "ellipse"
    for v in ("count", "calcBid", "one:C2", "tensor:C2", "amount"):  # v-nodes square
        n = _node(fig_net, v)
        assert n["shape"] == "box" and n["shapeProperties"]["borderRadius"] == 0, v
    assert _node(fig_net, "dealer1")["shape"] == "diamond"  # invocations
    assert _node(fig_net, "agg")["shape"] == "diamond"


def test_zoomed_out_module_is_a_rounded_box_with_its_name(fig: GraphIndex) -> None:
    r = Session(fig).run("zoomout dealer1")[0]
    net = render(r)
    z = [n for n in net.nodes if n["label"].startswith("dealer1 [z]")]
    assert len(z) == 1
    assert z[0]["shape"] == "box" and z[0]["shapeProperties"]["borderRadius"] > 0
    assert len(net.nodes) == len(r.graph)


def test_labels_follow_the_papers_figures(fig_net: Any) -> None:
    """Every label written out by hand from figure2c's data (tests/viz/__init__.py)."""
    want = {
        "Cars:C2": "Cars:C2", "Cars:C3": "Cars:C3", "Requests:B1": "Requests:B1",  # tokens by name
        "dealer1": "M_dealer1[1]", "agg": "M_agg[1]",  # invocations: module and execution, the polynomials' token
        "in": "[i] Requests(P1, B1, Civic)",  # boundary nodes: type, relation, tuple
        "state:C2": "[s] Cars(C2, Civic)", "state:C3": "[s] Cars(C3, Civic)",
        "join:C2": "·", "join:C3": "·", "group": "δ", "tensor:C2": "⊗", "tensor:C3": "⊗",  # operators
        "count": "Count=2", "calcBid": "calcBid=19500.0",  # aggregates and black boxes: function=value
        "one:C2": "1", "one:C3": "1",  # constants: their value
        "bids": "[o] Bids(B1, P1, Civic, 19500…",  # cut at 30 characters
        "amount": "[o] Bids.Amount=19500.0",  # a value of one column
        "agg_in": "[i] Bids(B1, 19500.0)", "best": "[o] BestBid(B1, 19500.0)",
    }
    assert {name: _node(fig_net, name)["label"] for name in want} == want
    assert set(want) == {name for name in FIG if name not in ("evil", "state:evil")} and len(want) == len(fig_net.nodes)


def test_long_labels_are_cut_and_whole_in_the_title() -> None:
    long = "x" * 80
    g = build([{"id": 1, "kind": "p", "op": "token", "label": "Cars:" + long, "relation": "Cars"},
               {"id": 2, "kind": "p", "op": "state", "label": "·", "type": "s", "relation": "Cars", "tuple": json.dumps({"CarId": long}),
                "module": "m", "execution": 1, "invocation": 3},
               {"id": 3, "kind": "p", "op": "invocation", "label": "m", "type": "m", "module": "m", "execution": 1, "invocation": 3},
               {"id": 4, "kind": "v", "op": "sum", "label": "Sum", "value": 1.0 / 3, "module": "m", "execution": 1, "invocation": 3}],
              [(1, 2), (3, 2), (2, 4)])
    net = render(g)
    for i, full in (("1", "Cars:" + long), ("2", f"[s] Cars({long})"), ("4", f"Sum={str(1.0 / 3)[:15]}…")):
        n = _by_id(net)[i]
        assert len(n["label"]) <= LABEL_CHARS and n["label"].endswith("…"), n["label"]
        assert full.startswith(n["label"][:-1]) and f"<b>{full}</b>" in n["title"], (n["label"], n["title"][:120])


def test_control_characters_cannot_break_a_label() -> None:
    g = build([{"id": 1, "kind": "p", "op": "token", "label": "R:a\nb\u202ec", "relation": "R"}], [])
    assert render(g).nodes[0]["label"] == "R:a\\nb\\u202ec"


def test_one_colour_per_module(fig: GraphIndex, fig_net: Any) -> None:
    colours = module_colours(fig)
    assert list(colours) == ["agg", "dealer1"]  # sorted names, deterministic
    assert colours == module_colours(figure2c())
    d1 = {_node(fig_net, n)["color"]["background"] for n in ("dealer1", "in", "group", "count", "amount")}
    ag = {_node(fig_net, n)["color"]["background"] for n in ("agg", "agg_in", "best")}
    base = {_node(fig_net, n)["color"]["background"] for n in ("Cars:C2", "Requests:B1")}
    assert d1 == {colours["dealer1"][0]} and ag == {colours["agg"][0]} and base == {vr._NO_MODULE[0]}
    assert len(d1 | ag | base) == 3


def test_legend_explains_the_notation(fig: GraphIndex) -> None:
    page = to_html(fig, title="Figure 2(c)")
    legend = page[page.index('<div id="lipspark-legend">'):]
    for text in ("p-node", "v-node", "module invocation", "zoomed-out module", ">input<", ">state<", ">output<",
                 "[m]", "[z]", ">dealer1<", ">agg<", "no module", "21 nodes, 29 edges", "Figure 2(c)"):
        assert text in legend, text
    assert "removed by the deletion" not in legend  # nothing is marked
    assert "<title>Figure 2(c)</title>" in page


def test_page_is_self_contained(fig: GraphIndex) -> None:
    page = to_html(fig)
    assert not re.search(r"<script[^>]*\bsrc=[\"']?https?:", page, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\bhref=[\"']?https?:", page, re.IGNORECASE)
    assert "vis.Network" in page  # vis.js is inlined


# ---------------------------------------------------------------------------------- layout


def test_edges_point_from_input_to_derived_node(fig_net: Any) -> None:
    pairs = {(e["from"], e["to"]) for e in fig_net.edges}
    assert (str(FIG["Cars:C2"]), str(FIG["state:C2"])) in pairs
    assert (str(FIG["count"]), str(FIG["calcBid"])) in pairs
    assert (str(FIG["state:C2"]), str(FIG["Cars:C2"])) not in pairs
    assert all(e["arrows"] == "to" for e in fig_net.edges)
    # positions are computed: no vis.js layout, no physics to move them
    assert fig_net.options["layout"]["hierarchical"]["enabled"] is False
    assert fig_net.options["physics"]["enabled"] is False
    assert all(isinstance(n["x"], float) and isinstance(n["y"], float) for n in fig_net.nodes)


def _xy(net: Any) -> dict[str, tuple[float, float]]:
    return {n["id"]: (n["x"], n["y"]) for n in net.nodes}


def test_every_edge_points_right(fig_net: Any) -> None:
    xy = _xy(fig_net)
    assert fig_net.edges and all(xy[e["from"]][0] < xy[e["to"]][0] for e in fig_net.edges)
    x = {name: xy[str(FIG[name])][0] for name in FIG if str(FIG[name]) in xy}
    assert x["join:C2"] <= x["one:C2"] < x["tensor:C2"]  # a constant just left of its ⊗, not at the far left
    assert x["dealer1"] < min(x[n] for n in ("Cars:C2", "Cars:C3", "in"))  # the invocation leads its frame


def _frames(net: Any) -> list[dict[str, Any]]:
    m = re.search(r"var d = (\{.*?\});\n", net.html)
    assert m, "no frame data in the page"
    return json.loads(m.group(1))["frames"]


def _inside(xy: tuple[float, float], f: dict[str, Any]) -> bool:
    return f["left"] < xy[0] < f["right"] and f["top"] < xy[1] < f["bottom"]


def test_invocations_are_framed_in_workflow_order(fig_net: Any) -> None:
    """dealer1's nodes (and the base tuples it reads) inside its frame, agg's inside agg's, which is to the right."""
    xy = _xy(fig_net)
    frames = {f["caption"]: f for f in _frames(fig_net)}
    assert set(frames) == {"dealer1 · execution 1", "agg · execution 1"}
    d1, ag = frames["dealer1 · execution 1"], frames["agg · execution 1"]
    for name in ("dealer1", "Cars:C2", "Cars:C3", "Requests:B1", "in", "state:C2", "group", "count", "calcBid", "bids", "amount"):
        assert _inside(xy[str(FIG[name])], d1) and not _inside(xy[str(FIG[name])], ag), name
    for name in ("agg", "agg_in", "best"):
        assert _inside(xy[str(FIG[name])], ag), name
    assert d1["right"] < ag["left"]
    assert d1["fill"].startswith("rgba(") and d1["border"] == module_colours(figure2c())["dealer1"][1]


def _workflow(executions: int = 2) -> GraphIndex:
    """A workflow req → (d1 ‖ d2) → agg, run ``executions`` times; d1 and d2 read the state tuple S:s."""
    rows: list[dict[str, Any]] = [{"id": 1, "kind": "p", "op": "token", "label": "S:s", "relation": "S"}]
    edges: list[tuple[int, int]] = []
    for e in range(1, executions + 1):
        base = 1000 * e
        out_of: dict[str, int] = {}
        for k, m in enumerate(("req", "d2", "d1", "agg")):  # d2 recorded before d1: the rank, not the name, orders them
            inv = base + 100 * (k + 1)
            ctx = {"module": m, "node": m, "execution": e, "invocation": inv}
            rows.append({"id": inv, "kind": "p", "op": "invocation", "label": m, "type": "m", **ctx})
            ins = [] if m == "req" else [out_of["req"]] if m in ("d1", "d2") else [out_of["d1"], out_of["d2"]]
            last = []
            for j, src in enumerate(ins):
                rows.append({"id": inv + 1 + j, "kind": "p", "op": "input", "label": "·", "type": "i", "relation": "R", **ctx})
                edges += [(src, inv + 1 + j), (inv, inv + 1 + j)]
                last.append(inv + 1 + j)
            if m in ("d1", "d2"):
                rows.append({"id": inv + 10, "kind": "p", "op": "state", "label": "·", "type": "s", "relation": "S", **ctx})
                edges += [(1, inv + 10), (inv, inv + 10)]
                rows.append({"id": inv + 11, "kind": "p", "op": "times", "label": "·", **ctx})
                edges += [(inv + 10, inv + 11), (last[0], inv + 11)]
                last = [inv + 11]
            rows.append({"id": inv + 50, "kind": "p", "op": "output", "label": "·", "type": "o", "relation": "R", **ctx})
            edges += [(inv, inv + 50)] + [(x, inv + 50) for x in last]
            out_of[m] = inv + 50
    return build(rows, edges)


def test_workflow_ranks_come_from_the_graph() -> None:
    ranks = vl.workflow_ranks(_workflow())
    assert {m: r for m, (r, _) in ranks.items()} == {"req": 0, "d1": 1, "d2": 1, "agg": 2}
    assert ranks["d2"][1] < ranks["d1"][1]  # first invocation ids: d2 ran first


def test_one_execution_per_column_modules_in_dag_order() -> None:
    g = _workflow(executions=3)
    net = render(g)
    xy = _xy(net)
    ex = dict(zip((str(i) for i in g.ids.tolist()), g.column("execution").tolist()))
    mod = dict(zip((str(i) for i in g.ids.tolist()), g.column("module").tolist()))
    for e in (1, 2):  # every node of execution e left of every node of e + 1
        assert max(xy[i][0] for i in xy if ex[i] == e) < min(xy[i][0] for i in xy if ex[i] == e + 1)
    for e in (1, 2, 3):  # in one execution: req, then d1 and d2 side by side (stacked), then agg
        span = {m: [xy[i][0] for i in xy if ex[i] == e and mod[i] == m] for m in ("req", "d1", "d2", "agg")}
        assert max(span["req"]) < min(span["d1"] + span["d2"]) and max(span["d1"] + span["d2"]) < min(span["agg"])
        assert xy[str(1000 * e + 300)][0] == xy[str(1000 * e + 200)][0]  # the two dealers' invocations: one column
        d1 = [xy[i][1] for i in xy if ex[i] == e and mod[i] == "d1"]
        d2 = [xy[i][1] for i in xy if ex[i] == e and mod[i] == "d2"]
        assert max(d2) < min(d1)  # stacked in the order they ran (d2 first), not overlapping
    assert xy["1"][0] < xy["1210"][0]  # the state tuple sits left of its first use, in execution 1
    assert all(xy[e["from"]][0] < xy[e["to"]][0] for e in net.edges)
    captions = [f["caption"] for f in _frames(net)]
    assert len(captions) == 12 and "d1 · execution 3" in captions
    heads = json.loads(re.search(r"var d = (\{.*?\});\n", net.html).group(1))["executions"]  # type: ignore[union-attr]
    assert [h["caption"] for h in heads] == ["execution 1", "execution 2", "execution 3"]


def test_layout_is_deterministic() -> None:
    """The same graph gives the same positions, whatever order its rows were stored in."""
    g = _workflow()
    once, again = _xy(render(g)), _xy(render(g))
    assert once == again
    nodes, edges = g.frame(), g.edge_frame()
    shuffled = GraphIndex.build(nodes.sample(frac=1, random_state=7).reset_index(drop=True),
                                edges.sample(frac=1, random_state=3).reset_index(drop=True))
    assert _xy(render(shuffled)) == once
    assert len(set(once.values())) == len(once)  # no two nodes on one spot


def test_executions_read_left_to_right() -> None:
    rows = [{"id": 1, "kind": "p", "op": "token", "label": "Cars:C1", "relation": "Cars"}]
    edges = []
    for e in (1, 2, 3):
        inv, s, o = 10 * e, 10 * e + 1, 10 * e + 2
        rows += [{"id": inv, "kind": "p", "op": "invocation", "label": "dealer1", "type": "m", "module": "dealer1", "execution": e},
                 {"id": s, "kind": "p", "op": "state", "label": "·", "type": "s", "module": "dealer1", "execution": e},
                 {"id": o, "kind": "p", "op": "output", "label": "·", "type": "o", "module": "dealer1", "execution": e}]
        edges += [(inv, s), (1 if e == 1 else 10 * (e - 1) + 1, s), (s, o), (inv, o)]
    rows.append({"id": 99, "kind": "p", "op": "token", "label": "lonely", "module": "dealer1", "execution": 2})  # no edges at all
    g = build(rows, edges)
    lv = dict(zip(g.ids.tolist(), levels(g, np.arange(len(g))).tolist()))
    for e in (2, 3):
        before = [lv[i] for i in g.ids.tolist() if i != 1 and i // 10 == e - 1]
        now = [lv[i] for i in g.ids.tolist() if i // 10 == e or (e == 2 and i == 99)]
        assert min(now) > max(before), (e, before, now)
    net = render(g)
    by = {n["id"]: n["x"] for n in net.nodes}
    assert all(by[e["from"]] < by[e["to"]] for e in net.edges)


def test_big_ids_stay_distinct_strings(fig_net: Any) -> None:
    ids = [n["id"] for n in fig_net.nodes]
    assert all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids) == 21
    assert str((1 << 62) + 1) in ids and str((1 << 62) + 2) in ids


def test_parallel_edges_are_one_line_with_a_count() -> None:
    g = build([{"id": 1, "kind": "p", "op": "token", "label": "R:a", "relation": "R"}, {"id": 2, "kind": "p", "op": "·", "label": "·"}], [(1, 2), (1, 2)])
    net = render(g)
    assert net.edges == [{"from": "1", "to": "2", "arrows": "to", "label": "×2"}]
    assert (net.lipspark.edges, net.lipspark.edge_multiset) == (1, 2)


# ---------------------------------------------------------------------------------- tooltips


def test_tooltips_hold_attributes_and_polynomial(fig_net: Any) -> None:
    tip = _node(fig_net, "state:C2")["title"]
    for text in (f"id: {FIG['state:C2']}", "kind: p-node", "type: s (state)", "module: dealer1", "node: dealer1",
                 "execution: 1", "relation: Cars", "tuple: CarId = C2, Model = Civic", "polynomial: <code>"):
        assert text in tip, text
    assert re.search(r"polynomial: <code>(Cars:C2·M_dealer1\[1\]|M_dealer1\[1\]·Cars:C2)</code>", tip), tip
    count = _node(fig_net, "count")["title"]
    assert "kind: v-node" in count and "value: 2" in count and "Count(" in count
    assert "polynomial" not in _node(fig_net, "tensor:C2")["title"]  # a ⊗ has none of its own


def test_long_polynomials_are_shortened() -> None:
    n = 60
    rows = [{"id": i, "kind": "p", "op": "token", "label": f"Relation:{'x' * 20}{i}", "relation": "Relation"} for i in range(1, n + 1)]
    rows.append({"id": 1000, "kind": "p", "op": "+", "label": "+"})
    g = build(rows, [(i, 1000) for i in range(1, n + 1)])
    tip = _by_id(render(g))["1000"]["title"]
    m = re.search(r"polynomial: <code>(.*?)</code>", tip)
    assert m and m.group(1).endswith(" characters)") and "… (" in m.group(1)
    full = int(re.search(r"… \((\d+) characters\)", m.group(1)).group(1))  # type: ignore[union-attr]
    assert full > vr.TOOLTIP_POLYNOMIAL_CHARS and len(m.group(1)) < vr.TOOLTIP_POLYNOMIAL_CHARS + 40


def test_big_drawings_point_to_the_polynomial_statement(fig: GraphIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vr, "POLYNOMIAL_LIMIT", 5)
    net = render(fig)
    tip = _node(net, "group")["title"]
    assert f"polynomial: use <code>polynomial node {FIG['group']}</code>" in tip
    assert net.lipspark.polynomials is False


# ---------------------------------------------------------------------------------- escaping


@pytest.fixture(scope="module")
def evil_page() -> tuple[Any, str]:
    net = render(figure2c(evil=True), title="title " + PAYLOAD_SCRIPT)
    return net, net.html


def test_payloads_never_reach_the_page_as_markup(evil_page: tuple[Any, str]) -> None:
    _, page = evil_page
    assert "__pwned" in page  # the data is there ...
    for raw in ("<script>window", "<img src=x", "<img", "onerror=\"window", "</script>window"):  # ... never as markup
        assert raw not in page, raw
    clean = to_html(figure2c(), title="title")
    for tag in ("<script", "</script", "<img"):  # the payloads add no tag
        assert page.count(tag) == clean.count(tag), tag
    assert "&lt;img src=x onerror=window.__pwned=3&gt;" in page  # legend: the module name, escaped
    assert "<title>title &lt;script&gt;window.__pwned=1&lt;/script&gt;</title>" in page


def test_tooltips_escape_every_value(evil_page: tuple[Any, str]) -> None:
    net, _ = evil_page
    tip = _node(net, "evil")["title"]
    esc = {"&lt;script&gt;window.__pwned=1&lt;/script&gt;", "&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;"}
    assert all(e in tip for e in esc)
    assert "module: &lt;img src=x onerror=window.__pwned=3&gt;" in tip
    assert "relation: Cars&lt;script&gt;" in tip
    assert re.search(r"polynomial: <code>Cars:&lt;img", tip)
    for n in net.nodes:  # the only tags in a tooltip are ours
        tags = set(re.findall(r"</?([a-zA-Z]+)", n["title"]))
        assert tags <= {"div", "b", "br", "code", "span"}, (n["id"], tags)
    state = _node(net, "state:evil")["title"]
    assert "&lt;script&gt;" in state and "<script" not in state


def test_labels_are_plain_canvas_text(evil_page: tuple[Any, str]) -> None:
    """Labels are drawn with canvas fillText (no markup mode), so they are shown as they are;
    in the page they sit in JSON where < > & ' are \\u escapes."""
    net, page = evil_page
    assert _node(net, "evil")["label"] == ("Cars:" + PAYLOAD_IMG)[:LABEL_CHARS - 1] + "…"  # cut; whole (escaped) in the title
    assert "<b>Cars:&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;</b>" in _node(net, "evil")["title"]
    assert "multi" not in net.options["nodes"]["font"]
    assert "Cars:\\u003cimg src=x onerror=" in page


def test_nothing_in_the_data_can_close_the_script(evil_page: tuple[Any, str]) -> None:
    _, page = evil_page
    data = re.search(r"nodes = new vis\.DataSet\((.*?)\);\n", page, re.DOTALL)
    assert data
    assert "<" not in data.group(1) and ">" not in data.group(1)
    nodes = json.loads(data.group(1))
    assert len(nodes) == 23


# ---------------------------------------------------------------------------------- guard


def test_guard_refuses_big_drawings(fig: GraphIndex, tmp_path: Path) -> None:
    out = tmp_path / "viz" / "big.html"
    with pytest.raises(LipsparkError) as err:
        render(fig, str(out), max_nodes=20)
    msg = str(err.value)
    assert "21 nodes" in msg and "limit of 20" in msg
    assert "zoomout agg, dealer1" in msg and "subgraph SEL" in msg
    assert not out.exists() and not out.parent.exists()
    assert len(render(fig, max_nodes=21).nodes) == 21


# ---------------------------------------------------------------------------------- query results


def test_subgraph_result_draws_its_nodes_only(fig: GraphIndex) -> None:
    r = Session(fig).run(f"subgraph node {FIG['state:C3']}")[0]
    net = render(r)
    want = {str(i) for i in r.graph.ids[r.nodes]}
    assert {n["id"] for n in net.nodes} == want and len(want) < len(fig)
    assert all(e["from"] in want and e["to"] in want for e in net.edges)
    assert len(net.edges) == len(r.extra["edges"])  # no parallel edges here
    assert net.lipspark.title == f"subgraph node {FIG['state:C3']}"


def test_ancestors_result_includes_the_seed(fig: GraphIndex) -> None:
    r = Session(fig).run(f"ancestors node {FIG['count']}")[0]
    ids = {n["id"] for n in render(r).nodes}
    assert str(FIG["count"]) in ids and str(FIG["Cars:C2"]) in ids and str(FIG["calcBid"]) not in ids


def _marked(net: Any) -> set[str]:
    return {n["id"] for n in net.nodes if n.get("shapeProperties", {}).get("borderDashes")}


def test_delete_result_marks_the_removed_nodes(fig: GraphIndex) -> None:
    r = Session(fig).run('delete tuple Cars(CarId = "C2")')[0]
    net = render(r)
    removed = {str(i) for i in r.extra["removed"]}
    assert str(FIG["Cars:C2"]) in removed and str(FIG["join:C2"]) in removed and str(FIG["tensor:C2"]) in removed
    assert str(FIG["group"]) not in removed  # δ keeps the other car
    assert len(net.nodes) == len(fig)  # the whole graph it ran on
    assert _marked(net) == removed
    for n in net.nodes:
        if n["id"] in removed:
            assert n["color"]["border"] == "#e00000" and n["borderWidth"] == 3 and n["font"]["color"]
        else:
            assert n["color"]["border"] != "#e00000"
    dashed = {(e["from"], e["to"]) for e in net.edges if e.get("dashes")}
    assert dashed == {(e["from"], e["to"]) for e in net.edges if e["from"] in removed or e["to"] in removed}
    legend = net.html[net.html.index('id="lipspark-legend"'):]
    assert f"removed by the deletion (red dashed border, greyed): {len(removed)}" in legend


def test_deletion_result_marks_the_removed_nodes(fig: GraphIndex) -> None:
    d = delete(fig, [FIG["Cars:C2"]])
    net = render(d)
    assert _marked(net) == {str(i) for i in d.removed_ids}
    assert net.lipspark.marked == len(d.removed_ids) and net.lipspark.title.startswith("deletion:")


def test_results_without_a_graph_are_refused(fig: GraphIndex) -> None:
    r = Session(fig).run(f"polynomial node {FIG['group']}")[0]
    with pytest.raises(LipsparkError, match="no graph to draw"):
        render(r)
    with pytest.raises(TypeError):
        render("graphs/g")


# ---------------------------------------------------------------------------------- files and notebooks


def test_render_writes_atomically_and_to_html_matches(fig: GraphIndex, tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "fig.html"
    net = render(fig, str(out), title="t")
    assert out.read_text(encoding="utf-8") == net.html == to_html(fig, title="t")
    assert os.listdir(out.parent) == ["fig.html"]  # no temporary file left
    assert render(fig).html  # no path: nothing written, the page is on the network


def test_a_failed_write_leaves_nothing(fig: GraphIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "fig.html"

    def boom(*a: Any, **k: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(vr.os, "replace", boom)
    with pytest.raises(LipsparkError, match="cannot write"):
        render(fig, str(out))
    assert os.listdir(tmp_path) == []


def test_repr_html_is_an_escaped_sandboxed_iframe(fig: GraphIndex) -> None:
    frame = repr_html(figure2c(evil=True))
    assert frame is not None and frame.startswith("<iframe srcdoc=\"")
    assert 'sandbox="allow-scripts"' in frame
    inner = frame[len('<iframe srcdoc="'):frame.index('" sandbox=')]
    assert "<" not in inner and '"' not in inner  # all of the page is inside the attribute
    assert repr_html(Session(fig).run(f"polynomial node {FIG['group']}")[0]) is None
    small = repr_html(fig, max_nodes=3)
    assert small is not None and small.startswith('<pre class="lipspark-error">') and "21 nodes" in small
    assert "<img" not in (repr_html(figure2c(evil=True), max_nodes=3) or "")


# ---------------------------------------------------------------------------------- CLI


@pytest.fixture()
def cli_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    g = figure2c()
    monkeypatch.setattr("lipspark.query.engine.GraphIndex.load", staticmethod(lambda path: g))
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "graphs" / "fig"
    d.mkdir(parents=True)
    return d


def test_cli_draws_the_last_result_with_a_graph(cli_graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "viz" / "sub.html"
    q = f"subgraph node {FIG['state:C3']}; polynomial node {FIG['group']}"
    assert main(["viz", str(cli_graph), "-e", q, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert str(out) in printed and re.search(r": \d+ nodes, \d+ edges", printed) and "subgraph node" in printed
    page = out.read_text(encoding="utf-8")
    assert 'id="lipspark-legend"' in page and f"subgraph node {FIG['state:C3']}" in page


def test_cli_without_a_query_draws_the_graph(cli_graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["viz", str(cli_graph)]) == 0
    assert os.path.exists("viz/fig.html")
    assert "viz/fig.html: 21 nodes, 29 edges" in capsys.readouterr().out


def test_cli_query_file_and_delete(cli_graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lq = tmp_path / "q.lq"
    lq.write_text('delete tuple Cars(CarId = "C2")\n', encoding="utf-8")
    assert main(["viz", str(cli_graph), str(lq), "-o", "viz/del.html"]) == 0
    assert "marked as removed" in capsys.readouterr().out


def test_cli_view_when_no_result_has_a_graph(cli_graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["viz", str(cli_graph), "-e", f"polynomial node {FIG['group']}", "-o", "viz/v.html"]) == 0
    assert "21 nodes" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--max-nodes", "5"], "limit of 5"),
    (["-e", "zoomout"], ""),  # a syntax error
    (["-e", "zoomout nosuchmodule"], "nosuchmodule"),
    (["missing.lq"], "cannot read the query file"),
])
def test_cli_errors_exit_2_and_write_nothing(cli_graph: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["viz", str(cli_graph), *argv, "-o", "viz/x.html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lipspark: error:") and message in err
    assert not os.path.exists("viz")


def test_cli_no_graph_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["viz", str(tmp_path / "nope"), "-o", str(tmp_path / "x.html")]) == 2
    assert "no graph at" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


# ---------------------------------------------------------------------------------- what-if labels


def test_a_deletion_shows_values_before_and_after(fig: GraphIndex) -> None:
    """Deleting car C2 (by hand: one member of dealer1's group left): Count 2→1; calcBid, a black
    box of the count, and the bid it becomes cannot be recomputed: ?."""
    for drawn in (render(Session(fig).run('delete tuple Cars(CarId = "C2")')[0]), render(delete(fig, [FIG["Cars:C2"]]))):
        assert _node(drawn, "count")["label"] == "Count 2→1"
        assert _node(drawn, "calcBid")["label"] == "calcBid 19500.0→?"
        assert _node(drawn, "amount")["label"] == "[o] Bids.Amount 19500.0→?"
        assert "after the deletion: 1" in _node(drawn, "count")["title"]
        assert _node(drawn, "count")["borderWidth"] == 3
        assert _node(drawn, "one:C3")["label"] == "1" and _node(drawn, "group")["label"] == "δ"  # unchanged
    assert _node(render(fig), "count")["label"] == "Count=2"  # no deletion, no arrow


def test_a_view_after_a_deletion_shows_its_what_if_values(fig: GraphIndex) -> None:
    """What a session shows after the delete (the view, a trace in it) draws the same arrows."""
    session = Session(fig)
    session.run('delete tuple Cars(CarId = "C2")')
    for drawn in (render(session.view), render(delete(fig, [FIG["Cars:C2"]]).view), render(session.run("show node " + str(FIG["count"]))[0])):
        assert _node(drawn, "count")["label"] == "Count 2→1"
    drawn = render(session.view)
    assert _node(drawn, "calcBid")["label"] == "calcBid 19500.0→?"
    assert "Cars:C2" not in {n["label"] for n in drawn.nodes}  # deleted, so not in the view
    session.run("reset")
    assert _node(render(session.view), "count")["label"] == "Count=2"


def test_frame_data_cannot_close_the_script() -> None:
    evil = "</script><script>window.__pwned=4</script>&'"
    ctx = {"module": evil, "node": evil, "execution": 1, "invocation": 10}
    g = build([{"id": 10, "kind": "p", "op": "invocation", "label": evil, "type": "m", **ctx},
               {"id": 11, "kind": "p", "op": "output", "label": "·", "type": "o", "relation": "R", **ctx}], [(10, 11)])
    page = render(g).html
    m = re.search(r"var d = (\{.*?\});\n", page)
    assert m and not set("<>&'") & set(m.group(1))
    assert json.loads(m.group(1))["frames"][0]["caption"] == evil + " · execution 1"  # the caption is the name, as data
    assert page.count("</script>") == to_html(build([{"id": 1, "kind": "p", "op": "token", "label": "R:a"}], [])).count("</script>")


def test_a_data_value_unknown_is_not_a_what_if_unknown_and_a_condition_says_it_may_differ() -> None:
    from lipspark.viz.labels import node_label
    from lipspark.vocabulary import UNKNOWN
    g = build([{"id": 1, "kind": "v", "op": "black_box", "label": "f", "value": "unknown"},
               {"id": 2, "kind": "v", "op": "condition", "label": "filter (a > 1)"}], [(1, 2)])
    rows = g.frame().astype(object).to_dict("records")
    assert node_label(g, 0, rows[0]) == "f=unknown"  # the data says "unknown": shown as data
    assert node_label(g, 0, rows[0], ("unknown", UNKNOWN)) == "f unknown→?"
    assert node_label(g, 1, rows[1]) == "filter (a > 1)"
    assert node_label(g, 1, rows[1], (None, UNKNOWN)) == "filter (a > 1) ?"  # its outcome, not a value
