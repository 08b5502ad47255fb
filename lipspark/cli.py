"""``lipspark`` command line: run workflows with provenance (more subcommands follow the query layer).

>>> from lipspark.cli import build_parser
>>> build_parser().parse_args(["run", "workflows/car_dealership.py", "--executions", "2"]).executions
2
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
    except LipsparkError as err:
        print(f"lipspark: error: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
