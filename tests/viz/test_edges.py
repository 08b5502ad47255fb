"""The data on the edges of zoomed-out modules in a drawing (issue 18, item 3): labels carry each
output's rows and change, hover titles every relation with sample rows and polynomials, escaped."""
from __future__ import annotations

import html
import json
import re

import pytest

from lipspark.query import Session
from lipspark.query.edgedata import EdgeData, SampleRow
from lipspark.viz import render, repr_html, to_html

PAYLOAD = "<script>alert(1)</script>"

NOTES = '''
from lipspark.workflow import Module, Workflow, WorkflowDefinition

N = "Id string, Text string"


def build(p):
    echo = Module("echo", inputs={"Notes": N}, outputs={"Echoed": N}, keys={"Notes": ["Id"]}, logic=lambda Notes: {"Echoed": Notes})
    wf = Workflow("notes", [echo])
    return wf.node("echo", "echo", input=True, output=True)


def inputs(spark, n, p):
    rows = [("n1", "<script>alert(1)</script>"), ("n2", "<img src=x onerror=alert(2)>")]
    return {"echo": {"Notes": spark.createDataFrame(rows[: n], N)}}


DEFINITION = WorkflowDefinition("notes", build, lambda spark, p: {}, inputs, params={"numExec": 2})
'''


@pytest.fixture(scope="module")
def notes(spark, tmp_path_factory) -> str:
    """A one-module workflow whose data holds markup: one note in execution 1, two in execution 2."""
    from lipspark.workflow import run

    d = tmp_path_factory.mktemp("notes")
    (d / "notes.py").write_text(NOTES)
    run(str(d / "notes.py"), graph_dir=str(d / "store"), spark=spark, progress=False)
    return str(d / "store")


def _zoom_nodes(net) -> list[dict]:
    return [n for n in net.nodes if "[z]" in n["label"]]


def _tag_free(title: str) -> str:
    """A tooltip's text with our own markup taken out (what is left is escaped data)."""
    return re.sub(r"</?(div|b|br|i|code|span)\b[^>]*>", "", title)


def test_labels_and_titles_of_the_ledger(ledger_runs):
    s = Session(ledger_runs[0])
    r = s.run("zoomout ledger")[-1]
    net = render(r)
    by_execution = {int(re.search(r"execution: (\d)", n["title"]).group(1)): n for n in _zoom_nodes(net)}
    edges = {e.execution: e for e in s.edges("ledger") if e.kind == "output"}
    for n, node in by_execution.items():
        e = edges[n]
        assert node["label"] == f"ledger [z] Changed {e.rows} {'new' if n == 1 else f'+{e.added}−{e.removed}'}"
        for d in s.edges("ledger", n):  # every relation it read and wrote, with its samples
            assert html.escape(f"{d.name}: {d.describe()}") in node["title"]
            for x in d.samples:
                assert html.escape(x.polynomial[:300]) in node["title"]
    assert "state Seen: 5 rows (+2 −0 since execution 2)" in by_execution[3]["title"]
    assert "hidden in this view" in by_execution[3]["title"]
    assert "added−removed" in net.html  # the legend explains the label
    # the captured graph drawn whole has no zoom node; a graph without a store says nothing of edges
    assert "the data on its edges" not in to_html(s.run("reset; zoomout ledger")[-1].graph)


def test_markup_in_the_data_stays_text(notes):
    s = Session(notes)
    r = s.run("zoomout echo")[-1]
    assert [e.describe() for e in s.edges("echo", 2)] == ["2 rows (+1 −0 since execution 1)", "2 rows (+1 −0 since execution 1)"]
    page = to_html(r)
    assert PAYLOAD not in page and "<img src=x" not in page
    net = render(r)
    titles = [n["title"] for n in _zoom_nodes(net)]
    assert titles and all("&lt;script&gt;alert(1)&lt;/script&gt;" in t for t in titles)
    assert all("<script" not in _tag_free(t) and "<img" not in _tag_free(t) for t in titles)
    # the text and JSON of `show` carry the values as data
    show = s.run("show invocation echo execution 2")[0]
    assert PAYLOAD in show.to_text()
    assert [x["tuple"]["Text"] for x in show.to_dict()["edge_data"][0]["samples"]] == [PAYLOAD, "<img src=x onerror=alert(2)>"]
    # a notebook gets the page escaped into a sandboxed frame
    frame = repr_html(r)
    assert frame is not None and "<script" not in frame
    srcdoc = html.unescape(re.match(r'<iframe srcdoc="([^"]*)"', frame).group(1))
    assert PAYLOAD not in srcdoc and "\\u0026lt;script\\u0026gt;alert(1)" in srcdoc  # the title's escaped text, in JSON


class _Reader:
    """Edge data of any invocation, with markup in every field a drawing shows."""

    def edges(self, view, invocations, *, samples=3):
        return [EdgeData(kind, f"R{PAYLOAD}", "m", "m", 1, int(i), "d", False, rows=2,
                         samples=(SampleRow({"v": PAYLOAD}, 1, f"p{PAYLOAD}", in_view=False),))
                for i in invocations for kind in ("input", "output")]


def test_every_field_is_escaped(ledger_runs):
    r = Session(ledger_runs[0]).run("zoomout report")[-1]
    r.edge_reader = _Reader()  # type: ignore[assignment]
    net = render(r)
    (z, *_) = _zoom_nodes(net)
    assert z["label"].startswith("report [z] R<script>")  # a label is canvas text, never markup
    assert "<script" not in _tag_free(z["title"]) and _tag_free(z["title"]).count("&lt;script&gt;") >= 4
    page = net.html
    assert PAYLOAD not in page
    data = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    assert any("R<script>" in n["label"] for n in data)  # JSON in the page, decoded: the label as text
