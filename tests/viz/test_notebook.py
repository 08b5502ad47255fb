"""The what-if notebook in viz/ runs from top to bottom (its own asserts check the deletion)."""
from __future__ import annotations

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.mark.slow
def test_what_if_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(os.path.join(ROOT, "viz", "what_if.ipynb"), as_version=4)
    env = {"LIPSPARK_ROOT": ROOT, "LIPSPARK_NB_CARS": "200", "LIPSPARK_NB_EXECS": "1", "LIPSPARK_NB_STORE": str(tmp_path / "store")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<iframe srcdoc=" in h for h in html), "the graph is shown inline"
    text = "".join(o.get("text", "") for o in outputs)
    assert "re-run without it" in text and "deleting D1C" in text
