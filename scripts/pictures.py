"""``make pictures``: the screenshots docs/debugging.md shows, taken by headless Chromium of lipspark's own drawings.

Each picture is a query on the demo graph (``make demo`` writes ``graphs/car_dealership-demo``),
drawn by :func:`lipspark.viz.render` into a self-contained HTML page, opened by a headless
Chromium and saved as a PNG under ``docs/images/`` (reduced to at most 256 colours, so each stays
well under 300 KB). The pages are kept beside them only with ``--html DIR``.

    python scripts/pictures.py                        # every picture, from graphs/car_dealership-demo
    python scripts/pictures.py --graph DIR --out DIR  # another graph, another folder
    python scripts/pictures.py --html-only --html DIR # the pages alone (no Chromium needed)

Chromium: ``chromium``, ``chromium-browser``, ``google-chrome`` on the PATH, or the path in
``LIPSPARK_CHROMIUM`` (the browser tests, tests/viz/test_browser.py, find it the same way).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)
DEMO_GRAPH = os.path.join(ROOT, "graphs", "car_dealership-demo")
IMAGES = os.path.join(ROOT, "docs", "images")
#: The car the crash walk-through of docs/debugging.md makes faulty (``--param faultyCar=...``):
#: one of dealer1's Audi A6, the model the demo's buyer asks for.
FAULTY_CAR = "D1C000004"
#: A PNG larger than this is refused (docs/debugging.md embeds them; a forge shows them inline).
MAX_BYTES = 300_000


@dataclass(frozen=True)
class Picture:
    """One screenshot: its file under ``docs/images/``, the statements drawn (the last one's
    answer is the picture), the legend's title, the browser window's size, and ``execution``:
    draw only the answer's nodes of that execution (and those of none: base tuples)."""

    name: str
    query: str
    title: str
    alt: str
    size: tuple[int, int] = (1400, 820)
    execution: int | None = None


#: The pictures; ``alt`` is the text docs/debugging.md gives each (tests/test_pictures.py checks it is there).
PICTURES = (
    Picture("crash-culprit.png",
            "zoomout request, and, dealer2, dealer3, dealer4, agg, choice, xor, car; "
            f'descendants state Cars(CarId = "{FAULTY_CAR}") in dealer1 execution 1',
            f"the crash culprit Cars:{FAULTY_CAR}: what dealer1_bid derives from it in execution 1 when it does not raise",
            f"The culprit car {FAULTY_CAR} as dealer1's state tuple in execution 1 of the demo graph, and what is derived "
            "from it: the Count of the requested model's cars, the calcBid black box, dealer 1's bid, then the zoomed-out "
            "agg and xor modules and dealer 1's purchase phase",
            size=(1900, 560), execution=1),
    Picture("failing-check.png",
            'zoomout request, and, agg, choice, xor, car; ancestors violations "discount at most 6%" execution 1',
            "the violation of \"discount at most 6%\" in execution 1 and the base tuples behind it",
            "The bid of dealer 2 in execution 1 that violates the check \"discount at most 6%\", and its ancestors: the "
            "47 cars of the requested model on dealer 2's lot, each joined with the request, and the buyer's request "
            "through the zoomed-out request and and modules"),
)


def chromium() -> str | None:
    """A Chromium executable: ``LIPSPARK_CHROMIUM`` (if it exists), else the first on the PATH."""
    env = os.environ.get("LIPSPARK_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def page(graph: str, picture: Picture, path: str) -> Any:
    """Draw ``picture``'s query on ``graph`` into the HTML page ``path``; the network drawn
    (:func:`lipspark.viz.render`)."""
    from lipspark.query import Session
    from lipspark.viz import render

    import numpy as np

    result = Session(graph).run(picture.query)[-1]
    if picture.execution is not None and result.graph is not None and result.nodes is not None:
        ex = result.graph.column("execution", result.nodes)
        keep = np.array([e is None or e != e or e == picture.execution for e in ex], dtype=bool)  # None/NaN: no execution
        result = dataclasses.replace(result, nodes=result.nodes[keep])
    return render(result, path, title=picture.title)


def screenshot(browser: str, html: str, png: str, size: tuple[int, int]) -> None:
    """Open the page ``html`` in headless Chromium and save what it shows as ``png``, reduced
    to at most 256 colours."""
    from PIL import Image

    with tempfile.TemporaryDirectory(prefix="lipspark-pictures-") as profile:
        shot = os.path.join(profile, "shot.png")
        cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-extensions", "--no-first-run",
               "--hide-scrollbars", f"--user-data-dir={os.path.join(profile, 'p')}", "--virtual-time-budget=6000",
               f"--window-size={size[0]},{size[1]}", f"--screenshot={shot}", "file://" + os.path.abspath(html)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
        if not os.path.exists(shot):
            raise RuntimeError(f"expected Chromium to write a screenshot of {html}, found none (exit {done.returncode}): "
                               f"{done.stderr.strip()[-500:]}; check that {browser} starts headless")
        with Image.open(shot) as img:
            reduced = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            tmp = png + ".tmp"
            reduced.save(tmp, format="PNG", optimize=True)
    os.replace(tmp, png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--graph", default=DEMO_GRAPH, help="the demo graph (default: graphs/car_dealership-demo; make demo writes it)")
    ap.add_argument("--out", default=IMAGES, help="where the PNGs go (default: docs/images)")
    ap.add_argument("--html", default=None, help="keep the drawn pages in this folder")
    ap.add_argument("--html-only", action="store_true", help="draw the pages, take no screenshot")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.graph, "store.json")):
        print(f"pictures: no graph at {args.graph}: run make demo first", file=sys.stderr)
        return 2
    browser = None if args.html_only else chromium()
    if not args.html_only and browser is None:
        print("pictures: no Chromium found: install the Debian package `chromium`, or set LIPSPARK_CHROMIUM "
              "to a Chrome/Chromium executable (--html-only draws the pages alone)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lipspark-pages-") as tmp:
        pages = args.html or tmp
        os.makedirs(args.out, exist_ok=True)
        for pic in PICTURES:
            html = os.path.join(pages, pic.name.removesuffix(".png") + ".html")
            nodes = len(page(args.graph, pic, html).nodes)
            if browser is None:
                print(f"{os.path.relpath(html)}: {nodes} nodes")
                continue
            png = os.path.join(args.out, pic.name)
            screenshot(browser, html, png, pic.size)
            size = os.path.getsize(png)
            if size > MAX_BYTES:
                print(f"pictures: {png} is {size:,} bytes, over {MAX_BYTES:,}: draw less (zoom out more modules)", file=sys.stderr)
                return 1
            print(f"{os.path.relpath(png)}: {nodes} nodes, {size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
