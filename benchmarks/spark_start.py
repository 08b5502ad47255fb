"""Starting Spark with and without the JVM class archive (:mod:`lipspark.class_archive`).

Whole processes, interleaved (archive on, then off, ``--repeat`` times; medians): a fresh
Python process imports lipspark, starts Spark with :func:`lipspark.get_spark` and runs one small
aggregate. Reported: seconds to the session, seconds of the first job, wall time of the process
and its peak memory (``/usr/bin/time -v``, which counts the Python process; the JVM is its child).

Usage: ``python benchmarks/spark_start.py [--repeat 5] [--out FILE]``
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from statistics import median
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
_CHILD = r"""
import time; t0 = time.perf_counter()
from lipspark import get_spark
s = get_spark(); t1 = time.perf_counter()
s.range(1000).selectExpr("id % 7 as k").groupBy("k").count().collect(); t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def _once(archive: bool) -> dict[str, float]:
    env = {**os.environ, **({} if archive else {"LIPSPARK_CLASS_ARCHIVE": "off"})}
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    start, job = (float(x) for x in p.stdout.split())
    rss = next((int(line.split()[-1]) for line in p.stderr.splitlines() if "Maximum resident set size" in line), 0)
    return {"session_s": start, "first_job_s": job, "wall_s": wall, "peak_mb": rss / 1024}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from lipspark.session import archive_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "spark_start.json"))
    args = ap.parse_args(argv)
    path = archive_path()
    if not path or not os.path.isfile(path):
        raise SystemExit(f"no class archive at {path or '(turned off)'}: build it with python -m lipspark.class_archive")
    runs: dict[str, list[dict[str, float]]] = {"archive": [], "no_archive": []}
    for _ in range(args.repeat):
        runs["archive"].append(_once(True))
        runs["no_archive"].append(_once(False))
    med = {k: {m: round(median(r[m] for r in v), 2) for m in v[0]} for k, v in runs.items()}
    out = {"repeat": args.repeat, "archive_mb": round(os.path.getsize(path) / 2**20), "median": med,
           "wall_ratio": round(med["no_archive"]["wall_s"] / med["archive"]["wall_s"], 2), "runs": runs}
    print(json.dumps({k: out[k] for k in ("archive_mb", "median", "wall_ratio")}, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    return out


if __name__ == "__main__":
    main()
