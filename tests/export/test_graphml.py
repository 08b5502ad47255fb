"""lipspark.export.graphml and ``lipspark export --format graphml``."""
from __future__ import annotations

import datetime
import os
from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from lipspark import cli
from lipspark.errors import LipsparkError
from lipspark.export import graphml_graph, operations, write_graphml
from lipspark.graph.index import GraphIndex
from lipspark.query.zoom import zoom_out
from tests.export import FIG_EDGES, figure2c


def no_edges() -> pd.DataFrame:
    return pd.DataFrame({"src": pd.Series([], dtype="int64"), "dst": pd.Series([], dtype="int64")})


def values_graph(values: list[Any]) -> GraphIndex:
    n = pd.DataFrame({"id": range(1, len(values) + 1), "kind": "v", "op": "constant", "label": [f"c{i}" for i in range(len(values))],
                      "value": pd.Series(values, dtype=object)})
    return GraphIndex.build(n, no_edges())


def edge_multiset(g: nx.MultiDiGraph) -> Counter[tuple[int, int]]:
    return Counter(list(g.edges()))  # a MultiDiGraph lists parallel edges once each


def test_round_trip(tmp_path: Path):
    g = figure2c()
    path = tmp_path / "g.graphml"
    assert write_graphml(g, path) == (len(g), len(FIG_EDGES))
    back = nx.read_graphml(path, node_type=int)
    assert isinstance(back, nx.MultiDiGraph)
    assert back.number_of_nodes() == len(g) and back.number_of_edges() == len(FIG_EDGES)
    assert edge_multiset(back) == Counter(FIG_EDGES)
    assert back.number_of_edges(12, 60) == 2  # the multi-edge stays two parallel edges
    assert sorted(k for _, _, k in back.edges(keys=True)) == sorted(f"e{i}" for i in range(len(FIG_EDGES)))
    # the attributes of GraphIndex.to_networkx, typed, plus the semiring operation
    ref = g.to_networkx()
    ops = dict(zip(g.ids.tolist(), operations(g)))
    for node, data in ref.nodes(data=True):
        expect = dict(data, op=data["op"].name.lower())  # the operator by name
        if ops[node] is not None:
            expect["operation"] = ops[node]
        assert back.nodes[node] == expect, node
    assert back.nodes[-30]["label"] == "δ" and back.nodes[32]["label"] == "⊗" and back.nodes[-21]["label"] == "·"
    assert back.nodes[31]["value"] == 2.0 and back.nodes[40]["value"] == 19500.0  # ints and floats: one double key
    assert back.nodes[100]["type"] == "m" and "operation" not in back.nodes[100]
    assert back.nodes[-30]["op"] == "delta" and back.nodes[40]["op"] == "black_box" and back.nodes[31]["op"] == "count"
    assert back.nodes[-21]["invocation"] == 100 and back.nodes[-21]["execution"] == 1
    assert "type" not in back.nodes[-21] and "value" not in back.nodes[-21]  # missing values are left out
    assert os.listdir(tmp_path) == ["g.graphml"]


def test_graphml_types(tmp_path: Path):
    write_graphml(figure2c(), tmp_path / "g.graphml")
    text = (tmp_path / "g.graphml").read_text(encoding="utf-8")
    for key in ['attr.name="value" attr.type="double"', 'attr.name="invocation" attr.type="long"',
                'attr.name="execution" attr.type="long"', 'attr.name="label" attr.type="string"',
                'attr.name="operation" attr.type="string"']:
        assert key in text, key
    assert text.count('attr.name="value"') == 1  # one key per attribute: every value has the same type


def test_mixed_values_become_text(tmp_path: Path):
    g = values_graph([1, "two", {"a": [1, 2]}, True, None, datetime.date(2012, 8, 27), "\x00bad", 2**70])
    h = graphml_graph(g)
    assert [h.nodes[i].get("value") for i in range(1, 9)] == ["1", "two", '{"a": [1, 2]}', "true", None, "2012-08-27", "\ufffdbad",
                                                              str(2**70)]
    write_graphml(g, tmp_path / "g.graphml")
    back = nx.read_graphml(tmp_path / "g.graphml", node_type=int)
    assert back.nodes[3]["value"] == '{"a": [1, 2]}' and "value" not in back.nodes[5]
    assert isinstance(back, nx.DiGraph) and back.number_of_edges() == 0


@pytest.mark.parametrize("values, expected", [
    ([1, 2], [1, 2]),
    ([1, 2.5], [1.0, 2.5]),
    ([True, False], [True, False]),
    ([1.5, float("inf")], [1.5, float("inf")]),
])
def test_uniform_values_keep_their_type(tmp_path: Path, values: list[Any], expected: list[Any]):
    write_graphml(values_graph(values), tmp_path / "g.graphml")
    back = nx.read_graphml(tmp_path / "g.graphml", node_type=int)
    got = [back.nodes[i + 1]["value"] for i in range(len(values))]
    assert got == expected and [type(x) for x in got] == [type(x) for x in expected]


def test_negative_ids_and_selection(tmp_path: Path):
    g = figure2c()
    sel = np.append(g.ancestors(g.position(-30)), g.position(-30))
    ids = set(g.ids[sel].tolist())
    inside = [(s, d) for s, d in FIG_EDGES if s in ids and d in ids]
    assert write_graphml(g, tmp_path / "s.graphml", sel) == (len(sel), len(inside))
    back = nx.read_graphml(tmp_path / "s.graphml", node_type=int)
    assert set(back.nodes) == ids and {-21, -22, -30} <= ids
    assert edge_multiset(back) == Counter(inside)


def test_zoomed_view(tmp_path: Path):
    g = zoom_out(figure2c(), ["dealer1"])
    write_graphml(g, tmp_path / "z.graphml")
    back = nx.read_graphml(tmp_path / "z.graphml", node_type=int)
    assert back.graph["zoomed_out"] == "dealer1"
    assert back.nodes[101]["type"] == "z" and back.nodes[101]["label"] == "dealer1"
    assert back.number_of_nodes() == len(g) and back.number_of_edges() == g.num_edges


def test_size_guard_and_errors(tmp_path: Path):
    g = figure2c()
    path = tmp_path / "g.graphml"
    with pytest.raises(LipsparkError, match="more than max_nodes=3"):
        write_graphml(g, path, max_nodes=3)
    with pytest.raises(LipsparkError, match="cannot write"):
        write_graphml(g, tmp_path / "missing" / "g.graphml")
    assert os.listdir(tmp_path) == []
    assert write_graphml(g, path, max_nodes=len(g))[0] == len(g)


def test_cli_graphml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    d = tmp_path / "graph"
    d.mkdir()
    monkeypatch.setattr(GraphIndex, "load", classmethod(lambda cls, path: figure2c()))
    out = tmp_path / "g.xml"
    assert cli.main(["export", str(d), "--format", "graphml", "-o", str(out)]) == 0
    assert "GraphML" in capsys.readouterr().out
    back = nx.read_graphml(out, node_type=int)
    assert back.number_of_nodes() == len(figure2c()) and back.number_of_edges() == len(FIG_EDGES)
    out2 = tmp_path / "z.graphml"
    assert cli.main(["export", str(d), "-e", "zoomout dealer1; descendants node 10", "-o", str(out2)]) == 0
    assert set(nx.read_graphml(out2, node_type=int).nodes) == {10, 50, 51, 101}  # the input, the zoomed module, its outputs
    assert cli.main(["export", str(d), "-e", "zoomout dealer1", "--max-nodes", "2", "-o", str(tmp_path / "x.graphml")]) == 2
    assert not (tmp_path / "x.graphml").exists()
    assert sorted(os.listdir(tmp_path)) == ["g.xml", "graph", "z.graphml"]


def test_a_view_after_a_delete_writes_its_what_if_values(tmp_path: Path):
    """Deleting Cars:C2: Count (31) is written as 1, calcBid (40) as what_if="unknown" with no value."""
    from lipspark.query.deletion import delete
    write_graphml(delete(figure2c(), [3]).view, tmp_path / "d.graphml")
    back = nx.read_graphml(tmp_path / "d.graphml", node_type=int)
    assert float(back.nodes[31]["value"]) == 1
    assert back.nodes[40]["what_if"] == "unknown" and "value" not in back.nodes[40]
    assert "what_if" not in back.nodes[31]
