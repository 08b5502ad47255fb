"""Evaluating integrity checks (:mod:`lipspark.workflow.checks`): every check of an execution in one Spark job.

The executor gives :func:`evaluate` each relation an execution wrote that has checks (a
:class:`Target`); one union of small frames over the *written files* — a row check's violating
rows with their positions, a table check's one-row verdict — is collected once, so the verdicts
are the same with provenance on, off or deferred, and cost one job beside the graph's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any, Sequence

from lipspark.errors import WorkflowError
from lipspark.vocabulary.checks import CheckResult
from lipspark.workflow.checks import Check

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["Target", "prepare", "evaluate"]


@dataclass(frozen=True)
class Target:
    """A relation an invocation wrote and the checks on it."""

    node: str
    module: str
    relation: str
    #: its stored descriptor (lipspark.vocabulary.RelationDescriptor) and absolute directory
    desc: Any
    path: str
    checks: tuple[Check, ...]


def prepare(spark: "SparkSession", targets: Sequence[Target]) -> "tuple[DataFrame | None, list[tuple[Target, Check]]]":
    """The one Spark frame computing every verdict (rows ``(check, position)``: a violating row of
    a row check, or ``-1``/``-2`` for a table check that failed/held), and the checks in order.
    Predicates are analyzed here: one a check kind does not allow is a :class:`WorkflowError`."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from lipspark.vocabulary.columns import is_hidden
    from lipspark.workflow.relations import position_col, read_stored

    parts: list[Any] = []
    order: list[tuple[Target, Check]] = []
    for t in targets:
        if not t.checks:
            continue
        df = read_stored(spark, t.path, t.desc.files)
        visible = [c for c in df.columns if not is_hidden(c)]
        src = df.select(*visible, position_col(t.desc).alias("__lp_pos"))
        pos = F.col("__lp_pos")
        for c in t.checks:
            i = len(order)
            try:
                if c.on == "row":
                    part = src.filter(~F.coalesce(c.predicate, F.lit(True))).select(F.lit(i).alias("c"), pos.alias("p"))
                else:
                    ok = src.select(*visible).agg(F.coalesce(c.predicate, F.lit(False)).alias("ok"))
                    part = ok.select(F.lit(i).alias("c"), F.when(F.col("ok"), F.lit(-2)).otherwise(F.lit(-1)).cast("long").alias("p"))
            except AnalysisException as err:
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                hint = ("a row check's predicate is a condition on one row; an aggregate needs on='table'" if c.on == "row"
                        else "a table check's predicate is a boolean aggregate of the relation (F.count('*') > 0); a condition on each row needs on='row'")
                raise WorkflowError(f"check {c.name!r} on {t.relation} of {t.node}: {hint} ({first})") from None
            order.append((t, c))
            parts.append(part)
    if not parts:
        return None, order
    return reduce(lambda a, b: a.unionAll(b), parts), order


def evaluate(spark: "SparkSession", targets: Sequence[Target]) -> list[CheckResult]:
    """Every check on ``targets``, in one Spark job; one :class:`CheckResult` each, in declaration order."""
    frame, order = prepare(spark, targets)
    if frame is None:
        return []
    hits: dict[int, list[int]] = {}
    for row in frame.collect():
        hits.setdefault(int(row["c"]), []).append(int(row["p"]))
    out = []
    for i, (t, c) in enumerate(order):
        got = hits.get(i, [])
        if c.on == "row":
            positions = tuple(sorted(got))
            passed, violations = not positions, len(positions)
        else:
            positions, passed = (), got == [-2]
            violations = 0 if passed else 1
        out.append(CheckResult(t.node, t.module, t.relation, c.name, c.on, c.level, _text(c.predicate), passed, violations, positions, t.desc.dir))
    return out


def _text(predicate: "Column") -> str:
    """The predicate as Spark prints it (``(Amount > 0)``)."""
    text = str(predicate)
    return text[len("Column<'"):-len("'>")] if text.startswith("Column<'") and text.endswith("'>") else text
