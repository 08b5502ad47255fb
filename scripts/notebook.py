"""``make notebook``: execute a notebook of ``viz/`` and save it with its outputs.

The notebooks (``viz/what_if.ipynb``; ``viz/debugging.ipynb``, which also runs the car
dealership's crash variant into a temporary store) read the graph ``make demo`` writes; they are
committed with their outputs so that a forge or nbviewer shows their answers and pictures. This
script executes one
from top to bottom (nbclient, the ``python3`` kernel of this environment), keeps only what a
fresh run reproduces (no timings, no interpreter version), refuses outputs that name this
machine's paths, and writes it back. ``tests/viz/test_notebook.py`` executes it again and
compares with :func:`comparable`.

    python scripts/notebook.py                      # viz/what_if.ipynb on graphs/car_dealership-demo
    python scripts/notebook.py viz/debugging.ipynb  # the debugging notebook
    python scripts/notebook.py --graph DIR --out F  # another graph, another file
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import sys
from typing import Any

import nbformat

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NOTEBOOK = os.path.join(ROOT, "viz", "what_if.ipynb")
DEMO_GRAPH = os.path.join(ROOT, "graphs", "car_dealership-demo")
#: The JVM's own line on start-up (Spark 4 asks for the vector module); not the notebook's output.
_JVM_NOTE = re.compile(r"^WARNING: Using incubator modules: [\w., ]+\n?", re.MULTILINE)


def execute(path: str = NOTEBOOK, *, graph: str = DEMO_GRAPH, timeout: int = 1800) -> Any:
    """The notebook at ``path`` executed on ``graph``, cleaned (:func:`clean`); the file is not changed."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    metadata = copy.deepcopy(nb.metadata)
    env = {"LIPSPARK_ROOT": ROOT, "LIPSPARK_NB_GRAPH": os.path.abspath(graph)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    nb.metadata = metadata  # not the kernel's language_info: its Python version is this machine's
    return clean(nb)


def clean(nb: Any) -> Any:
    """Drop what differs between runs of the same notebook: the JVM's start-up line on stderr
    (and a stream left empty by it) and per-cell execution metadata."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                out["text"] = _JVM_NOTE.sub("", out["text"])
                if not out["text"]:
                    continue
            kept.append(out)
        cell.outputs = kept
    return nb


def leaks(nb: Any, paths: list[str] | None = None) -> list[str]:
    """Outputs that name this machine: the checkout's, the home directory's or the environment's
    absolute paths, or the user's name in a path (none may be saved)."""
    found = []
    needles = [p for p in (paths or [ROOT, os.path.expanduser("~"), sys.prefix, os.path.realpath(ROOT)]) if p and p != "/"]
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") + "".join(str(v) for k, v in out.get("data", {}).items() if k != "image/png")
            text += "".join(out.get("traceback", []))
            found += [f"cell {i}: {n}" for n in needles if n in text]
    return found


def comparable(nb: Any) -> list[list[Any]]:
    """What a fresh run must reproduce, cell by cell: text on streams, errors, and every rich
    output but a picture's bytes (a PNG depends on the fonts and the matplotlib version; that
    there is one is compared)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":  # how a kernel splits a stream into outputs depends on timing: join them
                text = "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
                if outs and outs[-1][0] == "stream" and outs[-1][1] == out["name"]:
                    outs[-1] = ("stream", out["name"], outs[-1][2] + text)
                else:
                    outs.append(("stream", out["name"], text))
            elif kind == "error":
                outs.append(("error", out.get("ename"), out.get("evalue")))
            else:
                outs.append((kind, {k: ("<a picture>" if k.startswith("image/") else v) for k, v in out.get("data", {}).items()}))
        cells.append(outs)
    return cells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Execute a notebook of viz/ (default: the what-if notebook) and save it with its outputs.")
    ap.add_argument("notebook", nargs="?", default=NOTEBOOK)
    ap.add_argument("--graph", default=DEMO_GRAPH, help="the demo graph (default: graphs/car_dealership-demo; make demo writes it)")
    ap.add_argument("--out", default=None, help="where to save it (default: over the notebook)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.graph, "store.json")):
        print(f"notebook: no graph at {args.graph}: run make demo first", file=sys.stderr)
        return 2
    nb = execute(args.notebook, graph=args.graph)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        print(f"notebook: a cell failed: {errors[0].get('ename')}: {errors[0].get('evalue')}", file=sys.stderr)
        return 1
    bad = leaks(nb)
    if bad:
        print("notebook: outputs name this machine's paths, not saved:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    out = args.out or args.notebook
    nbformat.write(nb, out)
    print(f"wrote {os.path.relpath(out)}: {sum(len(c) for c in comparable(nb))} outputs in {len(comparable(nb))} code cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
