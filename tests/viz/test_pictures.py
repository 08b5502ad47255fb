"""The pictures of docs/debugging.md (``make pictures``, scripts/pictures.py): committed, small,
embedded with their alt text, and still made by the script's queries on the demo graph."""
from __future__ import annotations

import importlib.util
import os
import re
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "docs", "debugging.md")
Image = pytest.importorskip("PIL.Image")


def _script():
    spec = importlib.util.spec_from_file_location("lipspark_pictures_script", os.path.join(ROOT, "scripts", "pictures.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def _doc() -> str:
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.parametrize("picture", SCRIPT.PICTURES, ids=lambda p: p.name)
def test_each_picture_is_committed_small_and_not_blank(picture):
    path = os.path.join(ROOT, "docs", "images", picture.name)
    assert os.path.getsize(path) < SCRIPT.MAX_BYTES <= 300_000
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size == picture.size
        colours = img.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is not None and len(colours) > 20, "the picture looks blank"
    white = max(colours)[1]  # the most frequent colour is the page's background
    drawn = sum(n for n, c in colours if c != white)
    assert drawn > 0.02 * picture.size[0] * picture.size[1], "too little is drawn"


@pytest.mark.parametrize("picture", SCRIPT.PICTURES, ids=lambda p: p.name)
def test_the_document_embeds_each_picture_with_its_alt_text(picture):
    shown = re.findall(r"!\[([^\]]+)\]\(images/([^)]+)\)", _doc())
    assert (picture.alt, picture.name) in shown


def test_the_pictures_queries_name_what_the_workflow_has_and_the_car_is_the_documents():
    from lipspark.query.parser import parse
    from tests.test_examples import _car_dealership, unknown_names

    wf = _car_dealership()
    for picture in SCRIPT.PICTURES:
        for stmt in parse(picture.query):
            assert unknown_names(stmt, wf) == [], picture.query
    doc = _doc()
    assert f"--param faultyCar={SCRIPT.FAULTY_CAR} " in doc
    for picture in SCRIPT.PICTURES:  # the document shows each query it draws
        assert re.sub(r"\s+", " ", picture.query) in re.sub(r";\s*\n", "; ", doc), picture.name


def test_without_a_graph_or_a_browser_the_script_says_what_to_do(tmp_path, monkeypatch, capsys):
    assert SCRIPT.main(["--graph", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "no graph at" in capsys.readouterr().err and os.listdir(tmp_path) == []
    from tests.util import damaged

    (tmp_path / "g").mkdir()
    damaged(tmp_path / "g")  # not a store: the script only looks for its store.json
    (tmp_path / "g" / "store.json").write_text("{}")
    monkeypatch.setenv("LIPSPARK_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert SCRIPT.main(["--graph", str(tmp_path / "g"), "--out", str(tmp_path / "out")]) == 2
    assert "no Chromium found" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.slow  # the demo graph (shared with the examples and the notebooks)
def test_the_script_draws_what_the_document_says(demo_graph, tmp_path):
    from lipspark.query import Session
    from lipspark.viz import render

    out, pages = tmp_path / "images", tmp_path / "pages"
    browser = SCRIPT.chromium()
    argv = ["--graph", demo_graph, "--out", str(out), "--html", str(pages)] + ([] if browser else ["--html-only"])
    assert SCRIPT.main(argv) == 0
    for picture in SCRIPT.PICTURES:
        assert (pages / picture.name.replace(".png", ".html")).exists()
        if browser:  # the screenshot itself: small and of the window's size
            with Image.open(out / picture.name) as img:
                assert img.size == picture.size and os.path.getsize(out / picture.name) < SCRIPT.MAX_BYTES
    s = Session(demo_graph)
    crash, check = SCRIPT.PICTURES
    # the failing check: the picture holds exactly the base tuples blame lists, as many cars as its alt text says
    (blamed,) = s.run('blame violations "discount at most 6%" execution 1')
    tokens = {r["token"] for r in blamed.rows}
    s.run("reset")
    labels = [n["label"] for n in render(s.run(check.query)[-1]).nodes]
    assert {x for x in labels if x.startswith(("Cars:", "Requests:"))} == tokens
    cars = sum(t.startswith("Cars:") for t in tokens)
    assert f"the {cars} cars" in check.alt
    # the crash culprit: its state tuple, the Count it is a member of (as many as the document says), the bid;
    # execution 1 only
    s.run("reset")
    shown = s.run('show state Cars(Model = "Audi A6") in dealer1 execution 1')[0].rows
    n_cars = len({r["tuple"]["CarId"] for r in shown})
    assert SCRIPT.FAULTY_CAR in {r["tuple"]["CarId"] for r in shown}
    net = SCRIPT.page(demo_graph, crash, str(tmp_path / "crash.html"))
    labels = [n["label"] for n in net.nodes]
    assert f"Count={n_cars}" in labels and f"the {n_cars} members of the Count" in _doc()
    assert f"[s] Cars({SCRIPT.FAULTY_CAR}, Audi A6)" in labels and any(x.startswith("calcBid=") for x in labels)
    assert any(x.startswith("[o] Bids1(B1,") for x in labels) and not any("B2" in x for x in labels)
