"""The notebooks in viz/ (what-if; debugging, issue 18) are committed with their outputs, so that a
forge or nbviewer shows their answers and pictures (issue 19 item 1); ``make notebook``
(scripts/notebook.py) regenerates them and a fresh run must print the same."""
from __future__ import annotations

import difflib
import importlib.util
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NOTEBOOK = os.path.join(ROOT, "viz", "what_if.ipynb")
nbformat = pytest.importorskip("nbformat")


def _script():
    spec = importlib.util.spec_from_file_location("lipspark_notebook_script", os.path.join(ROOT, "scripts", "notebook.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_the_committed_notebook_shows_its_results_and_pictures():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code), "every code cell has its output saved (make notebook)"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run top to bottom, in one go"
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [o for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "deleting D1C" in text and "re-run without it" in text and "the best bid is still" in text
    assert any("image/png" in o.get("data", {}) for o in outputs), "a picture a forge can show"
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<iframe srcdoc=" in h for h in html), "the graph, drawn inline"
    assert _script().leaks(nb) == []
    for h in html:  # HTML outputs are escaped text and a sandboxed frame holding an escaped page
        tags = re.findall(r"<[^>]*>", re.sub(r'srcdoc="[^"]*"', 'srcdoc=""', h))
        assert {re.match(r"</?\w+", t).group() for t in tags} <= {"<pre", "</pre", "<iframe", "</iframe"}, tags
        assert all('sandbox="allow-scripts"' in t for t in tags if t.startswith("<iframe"))


def _first_difference(fresh, saved) -> str:
    for i, (a, b) in enumerate(zip(fresh, saved)):
        if a != b:
            lines = difflib.unified_diff(str(b).splitlines(), str(a).splitlines(), "saved", "fresh", lineterm="", n=1)
            return f"code cell {i + 1} differs (make notebook saves a fresh run):\n" + "\n".join(list(lines)[:40])
    return f"{len(fresh)} code cells run, {len(saved)} saved"


@pytest.mark.slow  # the demo graph (shared with the examples) and a re-run of the workflow without provenance
def test_a_fresh_run_prints_the_saved_outputs(demo_graph):
    script = _script()
    fresh = script.execute(NOTEBOOK, graph=demo_graph)
    assert not [o for o in _outputs(fresh) if o.get("output_type") == "error"]
    assert script.leaks(fresh) == []
    saved = script.comparable(nbformat.read(NOTEBOOK, as_version=4))
    now = script.comparable(fresh)
    assert now == saved, _first_difference(now, saved)


DEBUGGING = os.path.join(ROOT, "viz", "debugging.ipynb")


def test_the_committed_debugging_notebook_shows_a_crash_culprit_and_the_checks():
    """viz/debugging.ipynb (issue 18): the crash variant run from the Python API, its report,
    explain_failure with provenance off, the culprit in the demo graph, the checks' verdicts,
    violations, blame and a what-if, and a drawing; saved with its outputs by make notebook."""
    nb = nbformat.read(DEBUGGING, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code), "every code cell has its output saved (make notebook)"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run top to bottom, in one go"
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.get("output_type") in ("error",)]
    assert not [o for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    text = "".join(o.get("text", "") for o in outputs)
    for shown in ("execution 1 failed in node dealer1_bid (module dealer1)", "exception  ValueError: cannot appraise car D1C000004",
                  "  Cars(CarId=D1C000004, Model=Audi A6)", "culprits   not searched: provenance is off",
                  "failing invocation: invocation dealer1_bid execution 1", "Count 41 -> 40", "calcBid 54723.0 -> unknown",
                  "3 failing; fails since execution 1", "Cars 47, Requests 1",
                  "execution 1, dealer2_bid: captured fails; without the request: holds"):
        assert shown in text, shown
    assert text.count("raised at workflows/car_dealership.py") == 2, "the report, then the one explain_failure makes"
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(html) == 1 and "<iframe srcdoc=" in html[0], "the violation's ancestors, drawn inline"
    assert _script().leaks(nb) == []
    tags = re.findall(r"<[^>]*>", re.sub(r'srcdoc="[^"]*"', 'srcdoc=""', html[0]))
    assert {re.match(r"</?\w+", t).group() for t in tags} <= {"<pre", "</pre", "<iframe", "</iframe"}, tags
    assert all('sandbox="allow-scripts"' in t for t in tags if t.startswith("<iframe"))


@pytest.mark.slow  # the demo graph, and two runs of the crash variant (provenance on, off) with the culprit search
def test_a_fresh_run_of_the_debugging_notebook_prints_the_saved_outputs(demo_graph):
    script = _script()
    fresh = script.execute(DEBUGGING, graph=demo_graph)
    assert not [o for o in _outputs(fresh) if o.get("output_type") == "error"]
    assert script.leaks(fresh) == []
    saved = script.comparable(nbformat.read(DEBUGGING, as_version=4))
    now = script.comparable(fresh)
    assert now == saved, _first_difference(now, saved)
