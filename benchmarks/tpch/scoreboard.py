"""The TPC-H coverage scoreboard: for each query, does it run with provenance, is its result the
plain one, and does deletion propagation predict a re-run?

Columns (issue 13, item 2):

* **runs** — the query runs on annotated frames (``no: …`` quotes the refusal, which must name
  the operation; an ``error`` is any other exception, a bug);
* **fidelity** — its result (after the query's row limit) equals the plain result as a multiset;
* **oracle** — for 3 base tuples drawn with a fixed seed from the lineage of the result (from
  every base tuple the query read when no base tuple derives the result; one trial per relation, in the order lineitem, orders, customer, partsupp, part, supplier, nation,
  region, among the relations the lineage holds, round again when it holds fewer), the result
  lipspark's deletion propagation predicts — the surviving rows, with the recomputed aggregate
  values, the rows a filter over values dropped that appear, the groups a group-by on a value
  gives its moved members: :func:`lipspark.query.prediction.predict` over the result's rows and
  the rows it carries — equals re-running the plain query without that tuple. ``unknown`` means
  lipspark says its prediction is not exact (a value it cannot recompute, through a black box,
  or a condition over a value that changed, or a row an operation it cannot follow would add): a
  miss, not a pass — but not a wrong answer either. The oracle compares whole results: row limits are post-processing (Lipstick
  §3.2), applied for fidelity only.

``python -m benchmarks.tpch [--scale 0.01] [--queries 1,3,6] [--json PATH]`` prints the table.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any, Iterable

import numpy as np

from benchmarks.tpch.data import KEYS, TABLES, Tables, generate, load
from benchmarks.tpch.queries import LIMITS, QUERIES

__all__ = ["Outcome", "score", "score_all", "table"]

ORACLE_TRIALS = 3
ORDER = ("lineitem", "orders", "customer", "partsupp", "part", "supplier", "nation", "region")


@dataclass
class Outcome:
    """One query's row of the scoreboard."""

    query: int
    runs: str = "-"
    fidelity: str = "-"
    oracle: str = "-"
    rows: int = 0
    trials: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def green(self) -> bool:
        return self.runs == "yes" and self.fidelity == "yes" and self.oracle.startswith("yes")


def _norm(v: Any) -> Any:
    """A value as compared across engines: numbers to 7 significant digits (a what-if recomputes
    aggregates in Python, Spark in decimal or double arithmetic)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, Decimal)):
        f = float(v)
        if math.isnan(f) or f == 0:
            return 0.0 if f == 0 else "nan"
        return float(f"{f:.7g}")
    return v


def _bag(rows: Iterable[Iterable[Any]]) -> Counter:
    return Counter(tuple(_norm(v) for v in r) for r in rows)


def _without(plain: dict[str, Any], relation: str, key_values: tuple[int, ...]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    cond = None
    for col, val in zip(KEYS[relation], key_values):
        c = F.col(col) == F.lit(val)
        cond = c if cond is None else cond & c
    out = dict(plain)
    out[relation] = plain[relation].filter(~cond)
    return out


def _tables(frames: dict[str, Any], sf: float) -> Tables:
    return Tables(sf=sf, **{t: frames[t] for t in TABLES})


class _Annotated:
    """The relations a query reads, annotated on first use (each annotation checks its key, a
    Spark job: the relations a query does not read cost nothing)."""

    def __init__(self, tracker: Any, plain: dict[str, Any], sf: float) -> None:
        self._tracker, self._plain, self._frames, self.sf = tracker, plain, {}, sf

    def __getattr__(self, name: str) -> Any:
        if name not in KEYS:
            raise AttributeError(name)
        if name not in self._frames:
            self._frames[name] = self._tracker.annotate(self._plain[name], name, key=list(KEYS[name]))
        return self._frames[name]


def _diff(a: Counter, b: Counter) -> str:
    extra, missing = a - b, b - a
    parts = []
    if extra:
        parts.append(f"predicted but not re-run: {list(extra.elements())[:2]}")
    if missing:
        parts.append(f"re-run but not predicted: {list(missing.elements())[:2]}")
    return "; ".join(parts)


def score(spark: Any, plain: dict[str, Any], n: int, sf: float, *, seed: int = 0) -> Outcome:
    """Run query ``n`` plain and annotated, check fidelity and the deletion oracle."""
    from lipspark import Tracker
    from lipspark.errors import ProvenanceWarning, UnsupportedOperation
    from lipspark.query.deletion import delete
    from lipspark.query.prediction import predict
    from lipspark.vocabulary import Op

    out = Outcome(n)
    start = time.perf_counter()
    warnings.simplefilter("ignore", ProvenanceWarning)  # the scoreboard collects results on purpose
    query, limit = QUERIES[n], LIMITS.get(n)
    plain_df = query(_tables(plain, sf))
    expected = _bag((plain_df.limit(limit) if limit else plain_df).collect())
    tracker = Tracker(spark)
    try:
        try:
            result = query(_Annotated(tracker, plain, sf))
            got = _bag((result.limit(limit) if limit else result).collect())
        except UnsupportedOperation as err:
            out.runs = "no: " + str(err).splitlines()[0]
            return out
        except Exception as err:  # any other failure is a bug of the rewrite: say so
            out.runs = f"error: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
            return out
        out.runs = "yes"
        out.fidelity = "yes" if got == expected else "NO: " + _diff(got, expected)
        rows = result.collect_annotated()
        latent = result.collect_latent()  # the rows a filter over values dropped, as the result would hold them
        out.rows = len(rows)
        g = tracker.graph()
        # the lineage of the whole result (its rows and their values), by relation
        seeds = sorted({f for r in rows for f in (*r.annotation.factors, *r.annotation.values.values())})
        lineage = g.ancestors(g.positions(seeds)) if seeds else []
        if not any(g.op[p] == int(Op.TOKEN) for p in lineage):
            # no base tuple derives the result (Q17 at a small scale: no row passes its filter):
            # any base tuple the query read may make one pass, so the trials draw among them all
            lineage = np.flatnonzero(np.asarray(g.op) == int(Op.TOKEN))
        tokens: dict[str, list[str]] = {}
        for p in lineage:
            if g.op[p] == int(Op.TOKEN):
                label = g.label(int(p))
                tokens.setdefault(label.split(":", 1)[0], []).append(label)
        rng = random.Random(seed * 1000 + n)
        present = [r for r in ORDER if tokens.get(r)]
        relations = [present[i % len(present)] for i in range(ORACLE_TRIALS)] if present else []
        if not relations:
            out.oracle = "n/a: no base tuple derives the result (nothing to delete)"
            return out
        verdicts = []
        for rel in relations:
            label = rng.choice(sorted(tokens[rel]))
            pred = predict(g, delete(g, [g.token_id(label)]), result.columns, rows, latent)
            key = tuple(int(x) for x in label.split(":", 1)[1].split(","))
            rerun = _bag(query(_tables(_without(plain, rel, key), sf)).collect())
            got_bag = _bag(pred.rows)
            if not pred.exact:  # a black box, a condition over a changed value, a row it cannot follow: not a prediction
                verdicts.append(f"{label}: unknown")
            elif got_bag == rerun:
                verdicts.append(f"{label}: yes")
            else:
                verdicts.append(f"{label}: NO ({_diff(got_bag, rerun)})")
        out.trials = verdicts
        good = sum(v.endswith(": yes") for v in verdicts)
        wrong = [v for v in verdicts if ": NO" in v]
        unknown = [v for v in verdicts if v.endswith(": unknown")]
        if wrong:
            out.oracle = f"NO ({good}/{len(verdicts)}): " + wrong[0]
        elif unknown:
            out.oracle = f"not exact ({good}/{len(verdicts)}): " + unknown[0]
        else:
            out.oracle = f"yes ({good}/{len(verdicts)})"
        return out
    finally:
        tracker.release()
        out.seconds = round(time.perf_counter() - start, 1)


def score_all(spark: Any, sf: float, queries: Iterable[int], root: str | None = None, *,
              progress: bool = False) -> list[Outcome]:
    """The outcomes of ``queries`` at scale factor ``sf`` (``progress``: a line per query on
    standard error as it finishes)."""
    plain = load(spark, generate(sf, root), sf)
    out = []
    for n in queries:
        o = score(spark, plain, n, sf)
        out.append(o)
        if progress:
            print(f"Q{n}: runs {o.runs[:80]} | fidelity {o.fidelity[:60]} | oracle {o.oracle[:100]} ({o.seconds:g} s)",
                  file=sys.stderr, flush=True)
    return out


def table(outcomes: list[Outcome]) -> str:
    """The scoreboard as a Markdown table, with the count of fully green queries."""
    lines = ["| query | runs | fidelity | oracle | rows | s |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        cells = [f"Q{o.query}", o.runs, o.fidelity, o.oracle, str(o.rows), f"{o.seconds:g}"]
        lines.append("| " + " | ".join(c.replace("|", "\\|")[:160] for c in cells) + " |")
    n, green = len(outcomes), sum(o.green for o in outcomes)
    ran = [o for o in outcomes if o.runs == "yes"]
    same = sum(o.fidelity == "yes" for o in ran)
    inexact = sum(o.oracle.startswith("not exact") for o in ran)
    wrong = sum(o.oracle.startswith("NO") for o in ran)
    lines.append(f"\n{green}/{n} queries run with provenance, match the plain result and pass the oracle; "
                 f"{len(ran)}/{n} run, {same}/{len(ran)} match the plain result, {inexact} say a what-if is not exact, "
                 f"{wrong} predict a wrong result.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tpch", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    ap.add_argument("--queries", default="", help="comma-separated query numbers (default: all 22)")
    ap.add_argument("--data", default=None, help="where the generated Parquet files are cached")
    ap.add_argument("--json", default=None, help="also write the outcomes as JSON here")
    args = ap.parse_args(argv)
    queries = [int(q) for q in args.queries.split(",") if q] or list(QUERIES)
    from lipspark.session import get_spark

    spark = get_spark(app_name="lipspark-tpch")
    outcomes = score_all(spark, args.scale, queries, args.data, progress=True)
    print(table(outcomes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"scale": args.scale, "outcomes": [asdict(o) for o in outcomes]}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
