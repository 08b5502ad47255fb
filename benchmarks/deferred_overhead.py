"""What deferred capture adds to a run: provenance off against ``--capture deferred``, interleaved.

Deferred capture runs module code on plain DataFrames, as provenance off does, but writes each
relation as one file sorted by its visible columns (so a replay numbers rows as an eager run
does: docs/design.md, "Deferred capture"). This measures what that costs on the run's path,
without the eager store :mod:`lipspark.bench` also runs (an hour for the four configurations).

Two stores run side by side, execution by execution, alternating which goes first; the first
``--warmup`` executions are run by both and not counted. Reports the median time per execution of
each, their ratio, and the median of the per-execution ratios (each pair ran back to back: the
steadier figure on a shared machine). Targets (docs/benchmarks.md): car dealership ≤ 1.25×,
Arctic stations ≤ 1.15×.

Usage: ``python benchmarks/deferred_overhead.py [--config car_dealership|arctic_dense|...] [--numExec 6] [--warmup 1]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.bench import CONFIGS, TARGETS, WORKFLOWS  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402

MODES = ("plain", "deferred")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="car_dealership", choices=[c["name"] for c in CONFIGS])
    ap.add_argument("--numExec", type=int, default=6, help="timed executions")
    ap.add_argument("--warmup", type=int, default=1, help="executions run first by both stores, not timed")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    config = next(c for c in CONFIGS if c["name"] == args.config)
    path = os.path.join(WORKFLOWS, config["workflow"])
    definition = load_definition(path)
    total = args.warmup + args.numExec
    params = definition.with_params({**config["params"], "numExec": total})
    spark = get_spark(app_name="lipspark-bench-deferred")
    root = tempfile.mkdtemp(prefix="lipspark-deferred-")
    try:
        runs = {}
        for mode in MODES:
            store = Store.create(os.path.join(root, mode), definition.name, mode != "plain", params,
                                 capture="deferred" if mode == "deferred" else "eager", definition=path)
            ex = Executor(spark, definition.build(params), store, provenance=mode != "plain")
            ex.initialize(definition.initial_state(spark, params))
            runs[mode] = ex
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for n in range(1, total + 1):
            took = {}
            for mode in (MODES if n % 2 else MODES[::-1]):
                t0 = time.perf_counter()
                runs[mode].execute(definition.inputs(spark, n, params))
                took[mode] = time.perf_counter() - t0
            warm = n <= args.warmup
            if not warm:
                for m in MODES:
                    times[m].append(took[m])
            print(f"execution {n}{' (warm-up)' if warm else ''}: plain {took['plain']:.1f}s, deferred {took['deferred']:.1f}s", flush=True)
        med = {m: statistics.median(times[m]) for m in MODES}
        result = {"config": args.config, "params": params, "numExec": args.numExec, "warmup": args.warmup,
                  "median_seconds": med, "ratio": med["deferred"] / med["plain"],
                  "median_pair_ratio": statistics.median(b / a for a, b in zip(times["plain"], times["deferred"])),
                  "target": TARGETS.get(args.config), "times": times}
        print(json.dumps({k: v for k, v in result.items() if k not in ("times", "params")}, indent=1))
        out = args.out or os.path.join(os.path.dirname(__file__), "results", f"deferred_overhead_{args.config}.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
