"""The drawn page in a real browser: headless Chromium loads it offline, vis.js draws every node,
no payload from the data runs, and a screenshot is not blank.

Uses only the standard library and a Chromium binary (``chromium``, ``chromium-browser``,
``google-chrome``, or the path in ``LIPSPARK_CHROMIUM``); without one the tests are skipped.
A probe script is injected into a test-only copy of the page; once vis.js has drawn, it writes
what the network holds into a ``<pre id="lipspark-check">`` that ``--dump-dom`` shows.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from lipspark.viz import module_colours, render
from tests.viz import FIG, PAYLOAD_IMG, PAYLOAD_MODULE, PAYLOAD_SCRIPT, figure2c


def _chromium() -> str | None:
    env = os.environ.get("LIPSPARK_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary found (install the Debian package `chromium`, "
                                                          "or set LIPSPARK_CHROMIUM to a Chrome/Chromium executable)")

#: runs after pyvis's drawGraph() and the page's own scripts; `network` is pyvis's global
_PROBE = """
<script>
(function () {
  var done = false;
  var canvas = document.querySelector("#mynetwork canvas");
  function inked() {  // canvas pixels that are not (near) white: vis.js really drew something
    var c = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data, k = 0;
    for (var i = 0; i < c.length; i += 4) { if (c[i + 3] > 0 && (c[i] < 250 || c[i + 1] < 250 || c[i + 2] < 250)) { k++; } }
    return k;
  }
  function report(drawn) {
    if (done) { return; }
    done = true;
    setTimeout(function () {  // let any injected <img onerror> fire first
      var all = network.body.data.nodes.get();
      var tips = {};
      all.forEach(function (n) { tips[n.id] = n.title instanceof Element ? n.title.textContent : null; });
      var fits = network.body.data.nodes.getIds().every(function (id) {  // the whole drawing is in view
        var box = network.getBoundingBox(id);
        var tl = network.canvasToDOM({x: box.left, y: box.top}), br = network.canvasToDOM({x: box.right, y: box.bottom});
        return tl.x >= -1 && tl.y >= -1 && br.x <= canvas.clientWidth + 1 && br.y <= canvas.clientHeight + 1;
      });
      var out = document.createElement("pre");
      out.id = "lipspark-check";
      out.textContent = JSON.stringify({
        drawn: drawn, fits: fits, nodes: network.body.data.nodes.length, body_nodes: Object.keys(network.body.nodes).length,
        edges: network.body.data.edges.length, pwned: typeof window.__pwned !== "undefined",
        tips: tips, inked: inked(), legend: document.getElementById("lipspark-legend").textContent,
        text: window.__lastText ? Object.keys(window.__lastText) : null,
        remote: Array.prototype.filter.call(document.querySelectorAll("script[src],link[href]"),
                                            function (e) { return /^https?:/.test(e.src || e.href); }).length
      });
      document.body.appendChild(out);
    }, 500);
  }
  if (window.__drawnText) {  // the text of each drawing, from its start (initRedraw) to its end (afterDrawing)
    network.on("initRedraw", function () { window.__drawnText = {}; });
    network.on("afterDrawing", function () { window.__lastText = window.__drawnText; });
  }
  network.once("afterDrawing", function () { report(true); });
  network.redraw();  // the first drawing may have happened before this script ran
  setTimeout(function () { report(false); }, 4000);
})();
</script>
"""


#: in <head>, before vis.js draws anything: every string put on a canvas with fillText is recorded
#: (the probe keeps those of the last complete drawing)
_TEXT_SPY = """
<script>
window.__drawnText = {};
(function (fill) {
  CanvasRenderingContext2D.prototype.fillText = function (text) {
    window.__drawnText[String(text)] = (window.__drawnText[String(text)] || 0) + 1;
    return fill.apply(this, arguments);
  };
})(CanvasRenderingContext2D.prototype.fillText);
</script>
"""


def _inject(page: str, snippet: str) -> str:
    i = page.rindex("</body>")
    return page[:i] + snippet + page[i:]


def _inject_head(page: str, snippet: str) -> str:
    i = page.index("<head>") + len("<head>")
    return page[:i] + snippet + page[i:]


def _chrome(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-extensions", "--no-first-run",
           "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=6000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)  # type: ignore[list-item]


def _check(tmp: Path, page: str, name: str) -> dict[str, Any]:
    probe = tmp / name
    probe.write_text(_inject(_inject_head(page, _TEXT_SPY), _PROBE), encoding="utf-8")
    done = _chrome(tmp, "--dump-dom", probe.as_uri())
    m = re.search(r'<pre id="lipspark-check">(.*?)</pre>', done.stdout, re.DOTALL)
    assert m, f"the probe did not report (exit {done.returncode}); stderr tail: {done.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the RGB(A) pixels of an 8-bit RGB/RGBA, non-interlaced PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    height = depth = ctype = interlace = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unexpected PNG format depth={depth} colour type={ctype}"
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytearray] = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        prev = line
    pixels = [bytes(r[x:x + 3]) for r in rows for x in range(0, stride, bpp)]
    return width, height, pixels


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, str]:
    tmp = tmp_path_factory.mktemp("browser")
    g = figure2c(evil=True)
    path = tmp / "viz" / "figure2c.html"
    net = render(g, str(path), title="Figure 2(c) " + PAYLOAD_SCRIPT)
    return tmp, net, path.read_text(encoding="utf-8")


def test_page_is_self_contained(drawn: tuple[Path, Any, str]) -> None:
    _, _, page = drawn
    assert not re.search(r"<script[^>]*\bsrc=[\"']?https?:", page, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\bhref=[\"']?https?:", page, re.IGNORECASE)


def test_every_node_is_drawn_and_no_payload_runs(drawn: tuple[Path, Any, str]) -> None:
    tmp, net, page = drawn
    got = _check(tmp, page, "probe.html")
    expected = len(figure2c(evil=True))
    assert expected == 23 == len(net.nodes)
    assert got["drawn"] is True, "vis.js never finished a drawing"
    assert got["nodes"] == expected and got["body_nodes"] == expected  # ids past 2**53 stay distinct
    assert got["edges"] == len(net.edges) == 31
    assert got["inked"] > 2000, "the canvas is (nearly) blank"
    assert got["fits"] is True, "part of the drawing is out of view"
    assert got["remote"] == 0
    assert got["pwned"] is False, "a payload from the data ran in the page"
    # every tooltip became an element, and the payloads show as text (escaped once, not twice)
    assert all(t is not None for t in got["tips"].values())
    evil = got["tips"][str(FIG["evil"])]
    assert PAYLOAD_IMG in evil and PAYLOAD_SCRIPT in evil and "&lt;" not in evil
    assert str(FIG["join:C2"]) in got["tips"] and str(FIG["join:C3"]) in got["tips"]
    assert PAYLOAD_MODULE in got["legend"] and "dealer1" in got["legend"] and PAYLOAD_SCRIPT in got["legend"]


def test_probe_detects_a_payload_that_runs(drawn: tuple[Path, Any, str]) -> None:
    """Control: the same check on a copy with a raw payload does see it run."""
    tmp, _, page = drawn
    got = _check(tmp, _inject(page, '<img src=x onerror="window.__pwned=1">'), "control.html")
    assert got["pwned"] is True


def test_screenshot_is_not_blank(drawn: tuple[Path, Any, str]) -> None:
    tmp, _, page = drawn
    shot = Path(os.environ.get("LIPSPARK_SCREENSHOT", tmp / "shot.png"))  # set it to keep the picture
    copy = tmp / "shot.html"
    copy.write_text(page, encoding="utf-8")
    done = _chrome(tmp, f"--screenshot={shot}", "--window-size=1200,800", copy.as_uri())
    assert shot.exists(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 800)
    colours = set(pixels)
    assert len(colours) > 20, f"only {len(colours)} colours: the page looks blank"
    fill = bytes.fromhex(module_colours(figure2c(evil=True))["dealer1"][0][1:])
    assert pixels.count(fill) > 200, "no node in dealer1's colour on screen"


#: what figure2c's nodes say, written out by hand from its data (tests/viz/__init__.py) and the
#: paper's notation: tokens, operators, function=value, M_module[execution], [type] Relation(tuple)
FIGURE2C_LABELS = [
    "Cars:C2", "Cars:C3", "Requests:B1", "M_dealer1[1]", "M_agg[1]", "[i] Requests(P1, B1, Civic)",
    "[s] Cars(C2, Civic)", "[s] Cars(C3, Civic)", "·", "δ", "⊗", "Count=2", "calcBid=19500.0", "1",
    "[o] Bids(B1, P1, Civic, 19500…", "[o] Bids.Amount=19500.0", "[i] Bids(B1, 19500.0)", "[o] BestBid(B1, 19500.0)",
]


def _missing(got: dict[str, Any], wanted: list[str]) -> list[str]:
    drawn = set(got["text"] or ())
    return [w for w in wanted if w not in drawn]


def test_node_labels_and_frames_are_drawn_on_the_canvas(drawn: tuple[Path, Any, str]) -> None:
    """vis.js draws on a canvas, so the DOM holds no label: the page's fillText calls are
    recorded, and every label of the drawing must be among them (and the frame captions and the
    execution heading); the evil label is drawn as the text it is (cut), never as markup."""
    tmp, net, page = drawn
    got = _check(tmp, page, "labels.html")
    assert got["drawn"] is True and got["text"] is not None
    assert _missing(got, FIGURE2C_LABELS) == []
    assert _missing(got, [n["label"] for n in net.nodes]) == []  # all of them, the evil one too
    assert ("Cars:" + PAYLOAD_IMG)[:29] + "…" in got["text"]
    assert _missing(got, ["dealer1 · execution 1", "agg · execution 1", "execution 1"]) == []


def test_the_label_check_fails_when_labels_are_missing(drawn: tuple[Path, Any, str]) -> None:
    """Control: the same page with vis.js told to draw no label (as its default does for small
    text) leaves every label out, and the check sees it."""
    tmp, _, page = drawn
    hide = '<script>network.setOptions({nodes: {scaling: {label: {drawThreshold: 1000}}}});</script>'
    got = _check(tmp, _inject(page, hide), "no-labels.html")
    assert got["drawn"] is True
    assert set(_missing(got, FIGURE2C_LABELS)) == set(FIGURE2C_LABELS)
