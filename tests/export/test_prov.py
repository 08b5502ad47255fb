"""lipspark.export.prov (PROV-JSON, PROV-N) and the ``lipspark export`` command."""
from __future__ import annotations

import datetime
import decimal
import importlib.util
import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import prov
import pytest
from prov.model import (
    ProvActivity,
    ProvDerivation,
    ProvDocument,
    ProvEntity,
    ProvGeneration,
    ProvUsage,
)

from lipspark import cli
from lipspark.errors import LipsparkError
from lipspark.export import LPS_NAMESPACE, OPERATIONS, to_prov, write_prov
from lipspark.graph.index import GraphIndex
from lipspark.query.zoom import zoom_out
from tests.export import FIG_EDGES, FIG_NODES, figure2c

# ---------------------------------------------------------------------------------- helpers


def local(qn: Any) -> str:
    """``lps:n-21`` -> ``n-21`` (a QualifiedName or its text)."""
    return getattr(qn, "localpart", str(qn).split(":", 1)[-1])


def nid(qn: Any) -> int:
    return int(local(qn)[1:])


def attrs(record: Any) -> dict[str, Any]:
    """A record's extra attributes by local name (``prov:label`` as ``prov:label``)."""
    out = {}
    for k, v in record.extra_attributes:
        name = f"prov:{k.localpart}" if k.namespace.prefix == "prov" else k.localpart
        out[name] = v
    return out


def by_type(doc: ProvDocument, cls: type) -> list[Any]:
    return [r for r in doc.get_records() if isinstance(r, cls)]


def entities(doc: ProvDocument) -> dict[int, dict[str, Any]]:
    return {nid(r.identifier): attrs(r) for r in by_type(doc, ProvEntity)}


def ref(record: Any, name: str) -> int:
    """The node id a relation's formal attribute names (``get_attribute`` gives a set; prov 2
    gives the record's own, so read it without ``pop``)."""
    return nid(next(iter(record.get_attribute(name))))


def derivations(doc: ProvDocument) -> dict[tuple[int, int], dict[str, Any]]:
    """(derived, source) -> attributes."""
    out = {}
    for r in by_type(doc, ProvDerivation):
        key = (ref(r, "prov:generatedEntity"), ref(r, "prov:usedEntity"))
        assert key not in out, f"derivation {key} twice"
        out[key] = attrs(r)
    return out


def pairs(doc: ProvDocument, cls: type, first: str, second: str) -> set[tuple[int, int]]:
    return {(ref(r, first), ref(r, second)) for r in by_type(doc, cls)}


def summary(doc: ProvDocument) -> dict[str, Any]:
    """Every record as comparable data: kind, identifier, formal and extra attributes."""
    recs = []
    for r in doc.get_records():
        formal = tuple(sorted((str(k), str(v)) for k, v in r.formal_attributes if v is not None))
        extra = tuple(sorted((str(k), repr(v)) for k, v in r.extra_attributes))
        recs.append((type(r).__name__, str(r.identifier) if r.identifier and not str(r.identifier).startswith("_:") else None, formal, extra))
    return {"counts": Counter(type(r).__name__ for r in doc.get_records()), "records": sorted(recs, key=repr)}


# ---------------------------------------------------------------------------------- mapping


def test_entities_and_activities():
    doc = to_prov(figure2c())
    ents = entities(doc)
    acts = {nid(r.identifier): attrs(r) for r in by_type(doc, ProvActivity)}
    assert set(acts) == {100}
    assert set(ents) == {r["id"] for r in FIG_NODES} - {100}
    assert acts[100] == {"prov:label": "dealer1", "prov:type": acts[100]["prov:type"], "type": "m",
                         "module": "dealer1", "node": "dealer1", "execution": 1}
    assert local(acts[100]["prov:type"]) == "Invocation"

    tok = ents[3]
    assert tok["prov:label"] == "Cars:C2" and tok["operation"] == "token" and tok["relation"] == "Cars" and tok["kind"] == "p"
    assert json.loads(tok["prov:value"]) == {"CarId": "C2"}
    assert "type" not in tok and "module" not in tok and "invocation" not in tok
    assert ents[10]["type"] == "i" and ents[11]["type"] == "s" and ents[50]["type"] == "o" and ents[51]["type"] == "o"
    assert ents[-21]["operation"] == "times" and ents[-21]["prov:label"] == "·"
    assert ents[-30]["operation"] == "delta" and ents[60]["operation"] == "plus"
    assert ents[70]["operation"] == "black_box"
    assert ents[32]["operation"] == "tensor" and ents[32]["kind"] == "v" and local(ents[32]["prov:type"]) == "VNode"
    assert ents[33]["operation"] == "constant" and ents[33]["value"] == 1 and ents[33]["prov:value"] == 1
    count = ents[31]
    assert (count["operation"], count["aggregate"], count["value"], count["prov:value"]) == ("aggregate", "Count", 2, 2)
    calc = ents[40]
    assert calc["operation"] == "black_box" and calc["value"] == 19500.0 and isinstance(calc["value"], float)
    assert ents[51]["operation"] == "times" and ents[51]["column"] == "Amount" and ents[51]["relation"] == "Bids"
    assert ents[-21]["module"] == "dealer1" and ents[-21]["execution"] == 1
    assert local(ents[-21]["invocation"]) == "n100"
    assert "value" not in ents[-30] and "prov:value" not in ents[-30]


def test_relations():
    g = figure2c()
    doc = to_prov(g)
    assert pairs(doc, ProvUsage, "prov:activity", "prov:entity") == {(100, 10), (100, 11), (100, 12), (100, 13)}
    fine = {r["id"] for r in FIG_NODES if r["type"] is None and r["invocation"] == 100}
    assert pairs(doc, ProvGeneration, "prov:entity", "prov:activity") == {(n, 100) for n in fine | {50, 51}}
    assert len(by_type(doc, ProvGeneration)) == len(fine) + 2  # outputs: once, though edge and attribute both say so
    data_edges = {(d, s) for s, d in FIG_EDGES if s != 100}
    der = derivations(doc)
    assert set(der) == data_edges
    ents = entities(doc)
    for (d, _s), a in der.items():
        assert a["operation"] == ents[d]["operation"]  # the derived node's operation labels the derivation
    assert der[(31, 32)]["aggregate"] == "Count"
    assert len(doc.get_records()) == len(ents) + 1 + 4 + len(fine) + 2 + len(data_edges)


def test_every_semiring_operation_labels_a_derivation():
    doc = to_prov(figure2c())
    derived = {a["operation"] for a in derivations(doc).values()}
    assert derived == {"times", "plus", "delta", "tensor", "aggregate", "black_box"}
    leaves = {a["operation"] for a in entities(doc).values()} - derived
    assert leaves == {"token", "constant"}  # leaves: never derived
    # figure 2c filters on no value, has no ⊖ and no formula over aggregates
    formulas = {"add", "multiply", "negate", "inverse", "positive", "zero", "and", "or", "not", "in_group"}
    assert derived | leaves | {"condition", "monus"} | formulas == set(OPERATIONS)


def test_a_condition_over_values_exports_as_condition():
    import pandas as pd

    from lipspark.export.prov import operations
    from lipspark.graph.index import GraphIndex

    g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": ["v", "v"], "op": ["sum", "condition"],
                                       "label": ["Sum", "filter (tot > 300)"]}),
                         pd.DataFrame({"src": [1], "dst": [2]}))
    assert operations(g) == ["aggregate", "condition"]


def test_multiplicity():
    der = derivations(to_prov(figure2c()))
    assert der[(60, 12)]["multiplicity"] == 2
    assert [k for k, a in der.items() if "multiplicity" in a] == [(60, 12)]
    # the multiset of edges comes back from derivations and their multiplicities
    back = Counter()
    for (d, s), a in der.items():
        back[(s, d)] += a.get("multiplicity", 1)
    assert back == Counter((s, d) for s, d in FIG_EDGES if s != 100)


def test_multiplicity_on_usage():
    n = pd.DataFrame({"id": [1, 2], "kind": "p", "op": ["invocation", "input"], "label": ["M", "·"], "type": ["m", "i"], "module": "M"})
    g = GraphIndex.build(n, pd.DataFrame({"src": [1, 1], "dst": [2, 2]}))
    (use,) = by_type(to_prov(g), ProvUsage)
    assert attrs(use) == {"multiplicity": 2}


def test_edges_the_capture_does_not_make():
    from prov.model import ProvCommunication

    n = pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "op": ["invocation", "invocation", "token", "·"], "label": ["M", "N", "R:a", "·"],
                      "type": ["m", "m", None, None]})
    g = GraphIndex.build(n, pd.DataFrame({"src": [1, 3, 1], "dst": [2, 2, 4]}))
    doc = to_prov(g)
    assert pairs(doc, ProvCommunication, "prov:informed", "prov:informant") == {(2, 1)}
    assert pairs(doc, ProvUsage, "prov:activity", "prov:entity") == {(2, 3)}
    assert pairs(doc, ProvGeneration, "prov:entity", "prov:activity") == {(4, 1)}
    assert not by_type(doc, ProvDerivation)


def test_negative_ids_are_qualified_names():
    doc = to_prov(figure2c())
    names = {str(r.identifier) for r in doc.get_records() if r.identifier is not None}
    assert {"lps:n-21", "lps:n-22", "lps:n-30"} <= names
    assert "lps:n-21" in doc.get_provn()


def test_deterministic_and_sorted_by_id():
    g = figure2c()
    a, b = to_prov(g), to_prov(g)
    assert a.serialize(format="json") == b.serialize(format="json")
    assert a.get_provn() == b.get_provn()
    ids = [nid(r.identifier) for r in by_type(a, ProvEntity)]
    assert ids == sorted(ids)
    keys = [(ref(r, "prov:generatedEntity"), ref(r, "prov:usedEntity")) for r in by_type(a, ProvDerivation)]
    assert keys == sorted(keys)


def test_empty_graph():
    g = GraphIndex.build(pd.DataFrame({"id": pd.Series([], dtype="int64"), "kind": [], "op": [], "label": []}),
                         pd.DataFrame({"src": pd.Series([], dtype="int64"), "dst": pd.Series([], dtype="int64")}))
    assert to_prov(g).get_records() == []


# ---------------------------------------------------------------------------------- views and selections


def test_zoomed_out_module_is_an_activity():
    g = zoom_out(figure2c(), ["dealer1"])
    doc = to_prov(g)
    acts = {nid(r.identifier): attrs(r) for r in by_type(doc, ProvActivity)}
    assert set(acts) == {100, 101}
    z = acts[101]
    assert z["zoomed"] is True and z["type"] == "z" and z["module"] == "dealer1" and z["execution"] == 1
    assert local(z["prov:type"]) == "ZoomedInvocation" and "zoomed" not in acts[100]
    assert (101, 10) in pairs(doc, ProvUsage, "prov:activity", "prov:entity")
    gen = pairs(doc, ProvGeneration, "prov:entity", "prov:activity")
    assert {(50, 101), (51, 101), (50, 100), (51, 100)} <= gen
    assert -30 not in entities(doc)  # hidden by the zoom


def test_positions_export_a_part():
    g = figure2c()
    sel = np.append(g.ancestors(g.position(40)), g.position(40))
    doc = to_prov(g, sel)
    assert set(entities(doc)) == set(g.ids[sel].tolist()) - {100}
    assert [nid(r.identifier) for r in by_type(doc, ProvActivity)] == [100]
    assert pairs(doc, ProvUsage, "prov:activity", "prov:entity") == {(100, 10), (100, 12), (100, 13)}
    assert pairs(doc, ProvGeneration, "prov:entity", "prov:activity") == {(n, 100) for n in (-21, -22, -30, 31, 32, 33, 34, 35, 40)}
    # without the invocation: no activity, no usage or generation, only edges inside the selection
    sel = sel[g.ids[sel] != 100]
    doc = to_prov(g, sel)
    ents = entities(doc)
    assert set(ents) == set(g.ids[sel].tolist())
    assert not by_type(doc, ProvActivity) and not by_type(doc, ProvUsage) and not by_type(doc, ProvGeneration)
    assert set(derivations(doc)) == {(d, s) for s, d in FIG_EDGES if s in ents and d in ents}
    assert ents[1]["operation"] == "token" and ents[10]["operation"] == "times"  # operations of the whole graph
    assert local(ents[10]["invocation"]) == "n100"  # still says which invocation made it
    mask = np.zeros(len(g), dtype=bool)
    mask[sel] = True
    assert summary(to_prov(g, mask)) == summary(doc)
    with pytest.raises(LipsparkError, match="positions"):
        to_prov(g, [len(g)])
    with pytest.raises(LipsparkError, match="boolean"):
        to_prov(g, mask[:3])


def test_values_of_every_type():
    values = [float("nan"), float("inf"), decimal.Decimal("1.50"), datetime.date(2012, 8, 27),
              datetime.datetime(2012, 8, 27, 10, 0, 0), {"a": [1, 2]}, True, "text", 2**40]
    n = pd.DataFrame({"id": range(1, len(values) + 1), "kind": "v", "op": "constant", "label": [f"c{i}" for i in range(len(values))],
                      "value": pd.Series(values, dtype=object)})
    g = GraphIndex.build(n, pd.DataFrame({"src": pd.Series([], dtype="int64"), "dst": pd.Series([], dtype="int64")}))
    doc = to_prov(g)
    back = ProvDocument.deserialize(content=doc.serialize(format="json"), format="json")
    got = {k: a["value"] for k, a in entities(back).items() if "value" in a}
    assert 1 not in got  # NaN is a missing value in the node frame, as for GraphIndex.attrs
    assert float(got[2]) == math.inf
    assert getattr(got[3], "value", got[3]) == "1.50" and getattr(got[4], "value", got[4]) == "2012-08-27"
    assert got[5] == datetime.datetime(2012, 8, 27, 10, 0, 0)
    assert json.loads(got[6]) == {"a": [1, 2]}
    assert (got[7], got[8], got[9]) == (True, "text", 2**40)
    assert '"INF" %% xsd:double' in doc.get_provn() or '"inf" %% xsd:float' in doc.get_provn()  # prov 3 / prov 2


# ---------------------------------------------------------------------------------- files


def test_json_round_trip(tmp_path: Path):
    g = figure2c()
    path = tmp_path / "g.json"
    n = write_prov(g, path)
    doc = to_prov(g)
    assert n == len(doc.get_records())
    back = prov.read(str(path), format="json")
    assert back == doc
    assert summary(back) == summary(doc)
    assert entities(back) == entities(doc) and derivations(back) == derivations(doc)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["prefix"]["lps"] == LPS_NAMESPACE
    assert set(data) >= {"entity", "activity", "used", "wasGeneratedBy", "wasDerivedFrom"}
    assert os.listdir(tmp_path) == ["g.json"]


def test_zoomed_json_round_trip(tmp_path: Path):
    g = zoom_out(figure2c(), ["dealer1"])
    write_prov(g, tmp_path / "z.json")
    assert ProvDocument.deserialize(str(tmp_path / "z.json"), format="json") == to_prov(g)


def test_provn_statements(tmp_path: Path):
    path = tmp_path / "g.provn"
    write_prov(figure2c(), path, format="provn")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("document") and text.rstrip().endswith("endDocument")
    assert f"prefix lps <{LPS_NAMESPACE}>" in text
    for stmt in [
        'entity(lps:n3, [prov:label="Cars:C2", ',
        'entity(lps:n-30, [prov:label="δ", ',
        'lps:operation="aggregate", lps:aggregate="Count"',
        "activity(lps:n100, -, -, [prov:label=\"dealer1\", ",
        "used(lps:n100, lps:n10, -)",
        "used(lps:n100, lps:n12, -)",
        "wasGeneratedBy(lps:n50, lps:n100, -)",
        "wasGeneratedBy(lps:n-30, lps:n100, -)",
        'wasDerivedFrom(lps:n60, lps:n12, -, -, -, [lps:operation="plus", lps:multiplicity=2])',
        'wasDerivedFrom(lps:n-21, lps:n10, -, -, -, [lps:operation="times"])',
        'wasDerivedFrom(lps:n-30, lps:n-21, -, -, -, [lps:operation="delta"])',
        'wasDerivedFrom(lps:n32, lps:n33, -, -, -, [lps:operation="tensor"])',
        'wasDerivedFrom(lps:n31, lps:n32, -, -, -, [lps:operation="aggregate", lps:aggregate="Count"])',
        'wasDerivedFrom(lps:n40, lps:n31, -, -, -, [lps:operation="black_box"])',
    ]:
        assert stmt in text, stmt
    assert text.count("\n  entity(") == len(FIG_NODES) - 1
    assert text.count("\n  wasDerivedFrom(") == len({(s, d) for s, d in FIG_EDGES if s != 100})


@pytest.mark.skipif(importlib.util.find_spec("prov.serializers.provn_parser") is None, reason="this prov cannot read PROV-N")
def test_provn_round_trip(tmp_path: Path):
    g = figure2c()
    write_prov(g, tmp_path / "g.provn", format="provn")
    assert prov.read(str(tmp_path / "g.provn"), format="provn") == to_prov(g)


def test_size_guard(tmp_path: Path):
    g = figure2c()
    path = tmp_path / "g.json"
    with pytest.raises(LipsparkError, match=r"22 nodes, more than max_nodes=5 .*zoom.*subgraph"):
        write_prov(g, path, max_nodes=5)
    assert not path.exists() and os.listdir(tmp_path) == []
    with pytest.raises(LipsparkError, match="max_nodes"):
        to_prov(g, max_nodes=5)
    assert write_prov(g, path, max_nodes=None) > 0
    assert write_prov(g, path, max_nodes=len(g)) > 0
    sel = np.arange(5)
    assert write_prov(g, path, positions=sel, max_nodes=5) > 0  # the selection counts, not the graph


def test_errors_write_nothing(tmp_path: Path):
    g = figure2c()
    path = tmp_path / "g.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(LipsparkError, match="format"):
        write_prov(g, path, format="xml")  # type: ignore[arg-type]
    with pytest.raises(LipsparkError, match="max_nodes"):
        write_prov(g, path, max_nodes=1)
    assert path.read_text(encoding="utf-8") == "old" and os.listdir(tmp_path) == ["g.json"]
    with pytest.raises(LipsparkError, match="cannot write"):
        write_prov(g, tmp_path / "missing" / "g.json")
    with pytest.raises(LipsparkError, match="directory"):
        write_prov(g, tmp_path)


# ---------------------------------------------------------------------------------- the command line


@pytest.fixture
def graph_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory that ``GraphIndex.load`` turns into :func:`figure2c` (no store, no Spark)."""
    d = tmp_path / "graph"
    d.mkdir()
    loaded = []

    def load(cls: type, path: str) -> GraphIndex:
        loaded.append(path)
        assert Path(path) == d
        return figure2c()

    monkeypatch.setattr(GraphIndex, "load", classmethod(load))
    return d


def run_cli(*args: str) -> int:
    return cli.main(["export", *args])


def test_cli_prov_json(graph_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "out" / "g.json"
    out.parent.mkdir()
    assert run_cli(str(graph_dir), "--format", "prov-json", "-o", str(out)) == 0
    assert prov.read(str(out), format="json") == to_prov(figure2c())
    assert "PROV-JSON" in capsys.readouterr().out
    assert os.listdir(out.parent) == ["g.json"]


def test_cli_prov_n_from_suffix(graph_dir: Path, tmp_path: Path):
    out = tmp_path / "g.provn"
    assert run_cli(str(graph_dir), "-o", str(out)) == 0
    assert out.read_text(encoding="utf-8") == to_prov(figure2c()).get_provn() + "\n"


def test_cli_query_view(graph_dir: Path, tmp_path: Path):
    out = tmp_path / "z.json"
    assert run_cli(str(graph_dir), "-e", "zoomout dealer1", "--format", "prov-json", "-o", str(out)) == 0
    assert prov.read(str(out), format="json") == to_prov(zoom_out(figure2c(), ["dealer1"]))


def test_cli_query_answer_and_file(graph_dir: Path, tmp_path: Path):
    out = tmp_path / "a.json"
    assert run_cli(str(graph_dir), "-e", "zoomout dealer1; reset; ancestors node 40", "--format", "prov-json", "-o", str(out)) == 0
    g = figure2c()
    sel = np.append(g.ancestors(g.position(40)), g.position(40))
    assert prov.read(str(out), format="json") == to_prov(g, sel)
    query = tmp_path / "q.lq"
    query.write_text("# the bid's value\nshow node 40;\n", encoding="utf-8")
    assert run_cli(str(graph_dir), str(query), "--format", "prov-n", "-o", str(out)) == 0
    assert out.read_text(encoding="utf-8") == to_prov(g, [g.position(40)]).get_provn() + "\n"


def test_cli_delete_exports_the_view(graph_dir: Path, tmp_path: Path):
    out = tmp_path / "d.json"
    assert run_cli(str(graph_dir), "-e", 'delete tuple Cars(CarId = "C1")', "--format", "prov-json", "-o", str(out)) == 0
    ents = entities(prov.read(str(out), format="json"))
    assert 2 not in ents and 11 not in ents and 3 in ents


@pytest.mark.parametrize("args, message", [
    (["-e", "zoomout nosuch"], "no invocation of a module 'nosuch'"),
    (["-e", "zoomout"], "syntax error"),
    (["--max-nodes", "3"], "more than max_nodes=3"),
    (["--max-nodes", "-1"], "--max-nodes"),
])
def test_cli_errors_write_nothing(graph_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str):
    out = tmp_path / "out.json"
    assert run_cli(str(graph_dir), *args, "--format", "prov-json", "-o", str(out)) == 2
    err = capsys.readouterr().err
    assert err.startswith("lipspark: error: ") and message in err
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["graph"]  # no temporary file left behind


def test_cli_error_keeps_existing_file(graph_dir: Path, tmp_path: Path):
    out = tmp_path / "out.json"
    out.write_text("previous", encoding="utf-8")
    assert run_cli(str(graph_dir), "-e", "zoomout nosuch", "-o", str(out)) == 2
    assert out.read_text(encoding="utf-8") == "previous"


def test_cli_bad_target(graph_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert run_cli(str(tmp_path / "nothing"), "-o", str(tmp_path / "g.json")) == 2
    assert "no graph at" in capsys.readouterr().err
    assert run_cli(str(graph_dir), "-o", str(tmp_path / "g.txt")) == 2
    assert "--format" in capsys.readouterr().err
    assert run_cli(str(graph_dir), "-o", str(tmp_path / "no" / "g.json")) == 2
    assert "cannot write" in capsys.readouterr().err
    assert not (tmp_path / "g.json").exists()


def test_a_view_after_a_delete_exports_its_what_if_values():
    """Deleting Cars:C2 leaves one Civic: the Count (31) says 1, not the captured 2, and the
    calcBid black box (40) over it cannot be recomputed, so it says unknown and has no value."""
    from lipspark.query.deletion import delete
    g = figure2c()
    view = delete(g, [3]).view
    ents = entities(to_prov(view))
    assert ents[31]["value"] == 1 and ents[31]["prov:value"] == 1
    assert ents[40]["whatIf"] == "unknown" and "value" not in ents[40] and "prov:value" not in ents[40]
    assert ents[33]["value"] == 1 and "whatIf" not in ents[33]
    captured = entities(to_prov(g))
    assert captured[31]["value"] == 2 and captured[40]["value"] == 19500.0 and "whatIf" not in captured[40]
