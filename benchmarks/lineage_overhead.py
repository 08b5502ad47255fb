"""What the column lineage (lineage.json) adds to a run: executions with and without it, interleaved.

Four stores run side by side with the same parameters — provenance off and on, each with the
column lineage recorded as ``lipspark run`` does and with it skipped — execution by execution
(A/B interleaved), and the median time per execution of each is reported with the ratios
with/without and the seconds the lineage step itself spent (it runs beside the writes).

Usage: ``python benchmarks/lineage_overhead.py [--numCars 20000] [--numExec 5]``
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
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.vocabulary.lineage import RelationLineage  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402


class _NoLineage(Executor):
    """An executor that records an empty lineage for every relation (the step skipped)."""

    def _lineage_of(self, inv: Any, rname: str, df: Any, rel_dir: str, kind: str) -> Callable[[], tuple[RelationLineage, float]]:
        return lambda: (RelationLineage(rel_dir, inv.node, inv.module.name, rname, kind, {}, {}, (), ()), 0.0)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--numExec", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "lineage_overhead.json"))
    args = ap.parse_args(argv)
    definition = load_definition(os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py"))
    params = definition.with_params({"numCars": args.numCars, "numExec": args.numExec, "acceptance": 0.0, "seed": 0})
    spark = get_spark(app_name="lipspark-bench-lineage")
    root = tempfile.mkdtemp(prefix="lipspark-lineage-")
    modes = [(prov, lin) for prov in (False, True) for lin in (True, False)]
    try:
        runs = {}
        for prov, lin in modes:
            store = Store.create(os.path.join(root, f"{prov}-{lin}"), definition.name, prov, params)
            ex = (Executor if lin else _NoLineage)(spark, definition.build(params), store, provenance=prov)
            ex.initialize(definition.initial_state(spark, params))
            runs[prov, lin] = ex
        times: dict[tuple[bool, bool], list[float]] = {m: [] for m in modes}
        for n in range(1, args.numExec + 1):
            for m in modes:
                t0 = time.perf_counter()
                runs[m].execute(definition.inputs(spark, n, params))
                times[m].append(time.perf_counter() - t0)
            print(f"execution {n}: " + ", ".join(f"{'tracked' if p else 'plain'}{'' if lin else ' w/o lineage'} {times[p, lin][-1]:.1f}s"
                                                 for p, lin in modes), flush=True)
        med = {m: statistics.median(t) for m, t in times.items()}
        res = {
            "params": params,
            "times_s": {f"{'tracked' if p else 'plain'}_{'lineage' if lin else 'no_lineage'}": t for (p, lin), t in times.items()},
            "median_s": {f"{'tracked' if p else 'plain'}_{'lineage' if lin else 'no_lineage'}": v for (p, lin), v in med.items()},
            "ratio_plain": med[False, True] / med[False, False],
            "ratio_tracked": med[True, True] / med[True, False],
            "lineage_step_s_per_execution": {"plain": runs[False, True].lineage_seconds / args.numExec,
                                             "tracked": runs[True, True].lineage_seconds / args.numExec},
        }
        print(json.dumps({k: v for k, v in res.items() if k != "times_s"}, indent=1))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
