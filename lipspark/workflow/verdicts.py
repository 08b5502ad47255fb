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

    Per relation, one branch reads its files for all of its row checks (a column per check,
    exploded into the checks each row violates) and one computes all of its table checks (one
    aggregate): planning, not rows, is what checks cost on small relations. Predicates are
    analyzed here: one a check kind does not allow is a :class:`WorkflowError` naming it."""
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
        rows = [(len(order) + k, c) for k, c in enumerate(t.checks) if c.on == "row"]
        tables = [(len(order) + k, c) for k, c in enumerate(t.checks) if c.on == "table"]
        order += [(t, c) for c in t.checks]
        try:
            if rows:
                flags = [F.when(~F.coalesce(c.column(), F.lit(True)), F.lit(i)) for i, c in rows]
                parts.append(src.select(F.explode(F.filter(F.array(*flags), lambda x: x.isNotNull())).alias("c"),
                                        F.col("__lp_pos").alias("p")))
            if tables:
                oks = src.select(*visible).agg(*[F.coalesce(c.column(), F.lit(False)).alias(f"ok{i}") for i, c in tables])
                verdicts = F.array(*[F.struct(F.lit(i).alias("c"), F.when(F.col(f"ok{i}"), F.lit(-2)).otherwise(F.lit(-1)).cast("long").alias("p"))
                                     for i, _ in tables])
                parts.append(oks.select(F.explode(verdicts).alias("v")).select("v.c", "v.p"))
        except AnalysisException:
            _refuse(src, visible, t)
            raise
    if not parts:
        return None, order
    return reduce(lambda a, b: a.unionAll(b), parts), order


def _refuse(src: Any, visible: list[str], t: Target) -> None:
    """Find the check of ``t`` Spark cannot analyze as its kind, and say so in one line."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    for c in t.checks:
        try:
            if c.on == "row":
                src.filter(~F.coalesce(c.column(), F.lit(True)))
            else:
                src.select(*visible).agg(F.coalesce(c.column(), F.lit(False)))
        except AnalysisException as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            hint = ("a row check's predicate is a condition on one row; an aggregate needs on='table'" if c.on == "row"
                    else "a table check's predicate is a boolean aggregate of the relation (F.count('*') > 0); a condition on each row needs on='row'")
            raise WorkflowError(f"check {c.name!r} on {t.relation} of {t.node}: {hint} ({first})") from None


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
        out.append(CheckResult(t.node, t.module, t.relation, c.name, c.on, c.level, _text(c), passed, violations, positions, t.desc.dir))
    return out


def _text(check: Check) -> str:
    """What the check tests: its SQL text, or its Column as Spark prints it (``(Amount > 0)``)."""
    if isinstance(check.predicate, str):
        return check.predicate
    text = str(check.column())
    return text[len("Column<'"):-len("'>")] if text.startswith("Column<'") and text.endswith("'>") else text
