"""``lipspark`` command line: run workflows with provenance, query their graphs.

>>> from lipspark.cli import build_parser
>>> build_parser().parse_args(["run", "workflows/car_dealership.py", "--executions", "2"]).executions
2
>>> build_parser().parse_args(["query", "graphs/g", "-e", "zoomout agg"]).expression
'zoomout agg'
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from lipspark.errors import LipsparkError

__all__ = ["main", "build_parser"]


def _param(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="lipspark", description="Semiring provenance for workflows of PySpark modules.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run (or continue) a workflow's executions, recording provenance")
    r.add_argument("workflow", help="workflow definition file, e.g. workflows/car_dealership.py")
    r.add_argument("--executions", type=int, default=None, help="executions to run now (default: the workflow's numExec)")
    r.add_argument("--graph", default=None, help="store directory (default graphs/<workflow>); an existing store is continued")
    r.add_argument("--no-provenance", action="store_true", help="run the same module code on plain DataFrames (no graph)")
    r.add_argument("--master", default=None, help="Spark master URL (default: embedded local[2])")
    r.add_argument("--seed", type=int, default=None, help="the workflow's random seed")
    r.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE", help="a workflow parameter")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    q = sub.add_parser("query", help="run provenance queries (zoom, delete, traces, polynomials) on a captured graph")
    q.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("file", nargs="?", help="a query file (.lq), e.g. queries/bid_without_car.lq")
    src.add_argument("-e", "--expression", help="query text, e.g. \"zoomout dealer2, dealer3; delete tuple Cars(CarId = 'C2')\"")
    q.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    return ap


def _run(args: Any) -> int:
    from lipspark.workflow import run

    params = dict(args.param)
    if args.seed is not None:
        params["seed"] = args.seed
    summary = run(
        args.workflow,
        graph_dir=args.graph,
        executions=args.executions,
        provenance=not args.no_provenance,
        master=args.master,
        params=params,
        progress=not args.quiet,
    )
    print(summary)
    return 0


def _query(args: Any) -> int:
    import json
    import os

    from lipspark.errors import QueryError
    from lipspark.query.engine import Session
    from lipspark.query.parser import parse

    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as fh:
                text, source = fh.read(), args.file
        except OSError as err:
            raise QueryError(f"cannot read the query file {args.file}: {err.strerror}") from err
    else:
        text, source = args.expression, "<-e>"
    statements = parse(text, source)  # syntax errors before the (slower) graph load
    if not os.path.isdir(args.graph):
        raise QueryError(f"no graph at {args.graph}: expected a workflow store (lipspark run ... --graph DIR) or a graph directory")
    session = Session(args.graph)
    results = []
    for stmt in statements:
        r = session.execute(stmt)
        results.append(r)
        if args.format == "table":
            print(r.to_text(), end="\n\n", flush=True)
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "query":
            return _query(args)
    except LipsparkError as err:
        print(f"lipspark: error: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
