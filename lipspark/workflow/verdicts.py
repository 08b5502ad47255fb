"""Evaluating integrity checks (:mod:`lipspark.workflow.checks`): observed as relations are written,
and one Spark job for what that leaves open.

Most checks cost nothing but a few aggregates: :func:`observe` adds each check of a relation to
the job that writes it as an observed metric (Spark's ``Observation``: a row check's number of
violating rows, a table check's verdict), computed on the very rows written, so the verdicts are
the same with provenance on, off or deferred. The executor then gives :func:`evaluate` each
relation with checks (a :class:`Target`). What the writes did not settle — the positions of the
rows violating a row check (a row's position is known only in the written file), and checks Spark
cannot observe (an aggregate with DISTINCT, a predicate over ``*``) — is one union of small
frames over the *written files*, collected once; an execution whose checks all hold runs no job
for them at all.
"""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import reduce
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from lipspark.errors import WorkflowError
from lipspark.vocabulary.checks import CheckResult
from lipspark.workflow.checks import Check

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["Target", "Watch", "observe", "prepare", "evaluate"]


@dataclass(frozen=True)
class Watch:
    """The checks a relation's write observed: Spark's ``Observation`` and, for each observed
    check (its index among the relation's checks), the metric ``c<index>``."""

    observation: Any
    indices: tuple[int, ...]

    def metrics(self) -> dict[int, Any]:
        """Each observed check's metric; empty if the write did not report them (then the job
        over the written files decides)."""
        jo = self.observation._jo
        if jo is None or not jo.future().isCompleted():
            return {}
        got = self.observation.get
        return {i: got[f"c{i}"] for i in self.indices if f"c{i}" in got}


@dataclass(frozen=True)
class Target:
    """A relation an invocation wrote, the checks on it and what its write observed of them."""

    node: str
    module: str
    relation: str
    #: its stored descriptor (lipspark.vocabulary.RelationDescriptor) and absolute directory
    desc: Any
    path: str
    checks: tuple[Check, ...]
    watch: Watch | None = None


#: a ``*`` standing for columns (``struct(*)``, ``hash(*)``, ``t.*``), not a product nor ``count(*)``
_STAR = re.compile(r"(?<![\w)])\*(?=\s*[),]|\s*$)")


def _observable(check: Check, column: "Column") -> bool:
    """Whether ``check`` may be observed on the frame being written, whose hidden columns
    (provenance) it would see through a ``*``: such a predicate is left to the job, which reads
    the visible columns only."""
    from lipspark.vocabulary.columns import PREFIX

    text = (check.predicate if isinstance(check.predicate, str) else str(column)).replace("count(*)", "count(1)")
    return not _STAR.search(text) and PREFIX not in text


def _metric(check: Check, column: "Column", name: str) -> "Column":
    """The observed metric of ``check``: a row check's number of violating rows (false, not null,
    violates), a table check's verdict (null fails)."""
    from pyspark.sql import functions as F

    if check.on == "row":
        return F.count(F.when(~F.coalesce(column, F.lit(True)), F.lit(1))).alias(name)
    return F.coalesce(column, F.lit(False)).alias(name)


#: PySpark's loggers of an AnalysisException raised from a DataFrame call (a Column predicate)
#: or from SQL text (``F.expr``, a predicate given as text)
_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")
_QUIET_LOCK = threading.Lock()
_quiet_depth = 0


@contextmanager
def _quiet() -> Iterator[None]:
    """PySpark logs each AnalysisException with a query context before raising it; a check
    Spark cannot observe is expected here (it goes to the job), so not a line on stderr. (Writes
    run in threads: the logger is quiet while any of them is here.)"""
    global _quiet_depth
    from pyspark.logger import PySparkLogger

    # PySpark's own getLogger: a plain logging.getLogger would register plain Loggers under these
    # names, which PySpark later gets back and calls with its own keywords (TypeError)
    loggers = [PySparkLogger.getLogger(name) for name in _CONTEXT_LOGGERS]
    with _QUIET_LOCK:
        _quiet_depth += 1
        for logger in loggers:
            logger.disabled = True
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _quiet_depth -= 1
            if not _quiet_depth:
                for logger in loggers:
                    logger.disabled = False


def observe(frame: "DataFrame", checks: Sequence[Check], memo: "dict[tuple[Check, int], Column | None] | None" = None
            ) -> "tuple[DataFrame, Watch | None]":
    """``frame`` with the checks Spark can observe added to the job that writes it, and what to
    read their metrics from once written (:meth:`Watch.metrics`); ``None`` if none can be.

    A check Spark refuses to observe (DISTINCT, a non-deterministic table predicate, a predicate
    of the wrong kind, whose one-line error the job gives) is left to :func:`evaluate`'s job.
    ``memo`` keeps each check's metric (a Column, or ``None`` when it cannot be observed) for the
    next execution of the same workflow and session: building them costs JVM calls."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import Observation

    memo = {} if memo is None else memo
    metrics = []
    for i, c in enumerate(checks):
        if (c, i) not in memo:
            try:  # SQL text that does not parse, a function returning no Column: the job says so in one line
                column = c.column()
                memo[c, i] = _metric(c, column, f"c{i}") if _observable(c, column) else None
            except (AnalysisException, WorkflowError):
                memo[c, i] = None
        metric = memo[c, i]
        if metric is not None:
            metrics.append((i, metric))
    with _quiet():
        for attempt in range(2):
            if not metrics:
                return frame, None
            obs = Observation()
            try:
                return frame.observe(obs, *[m for _, m in metrics]), Watch(obs, tuple(i for i, _ in metrics))
            except AnalysisException:
                if attempt:
                    raise
            # some check cannot be observed: keep those Spark takes one by one (analysis only)
            kept = []
            for i, m in metrics:
                try:
                    frame.observe(f"lipspark-check-{i}", m)
                    kept.append((i, m))
                except AnalysisException:
                    memo[checks[i], i] = None  # the relation's next write does not try it again
            metrics = kept
    return frame, None


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
    """Every check on ``targets``; one :class:`CheckResult` each, in declaration order.

    A check its write observed is settled by its metric, unless it is a row check with violating
    rows: their positions, and the checks not observed, come from one Spark job over the written
    files, which decide."""
    settled: dict[tuple[int, int], tuple[bool, int]] = {}
    left: list[Target] = []
    for ti, t in enumerate(targets):
        metrics = t.watch.metrics() if t.watch is not None else {}
        for k, c in enumerate(t.checks):
            if k in metrics and c.on == "table":
                settled[ti, k] = (bool(metrics[k]), 0 if metrics[k] else 1)
            elif k in metrics and metrics[k] == 0:
                settled[ti, k] = (True, 0)
        rest = tuple(c for k, c in enumerate(t.checks) if (ti, k) not in settled)
        if rest:
            left.append(replace(t, checks=rest, watch=None))
    hits: dict[int, list[int]] = {}
    frame, order = prepare(spark, left)
    if frame is not None:
        for row in frame.collect():
            hits.setdefault(int(row["c"]), []).append(int(row["p"]))
    found = {(t.node, t.relation, id(c)): hits.get(i, []) for i, (t, c) in enumerate(order)}
    out = []
    for ti, t in enumerate(targets):
        for k, c in enumerate(t.checks):
            positions: tuple[int, ...] = ()
            if (ti, k) in settled:
                passed, violations = settled[ti, k]
            elif c.on == "row":
                positions = tuple(sorted(found[t.node, t.relation, id(c)]))
                passed, violations = not positions, len(positions)
            else:
                passed = found[t.node, t.relation, id(c)] == [-2]
                violations = 0 if passed else 1
            out.append(CheckResult(t.node, t.module, t.relation, c.name, c.on, c.level, _text(c), passed, violations, positions, t.desc.dir))
    return out


def _text(check: Check) -> str:
    """What the check tests: its SQL text, or its Column as Spark prints it (``(Amount > 0)``)."""
    if isinstance(check.predicate, str):
        return check.predicate
    text = str(check.column())
    return text[len("Column<'"):-len("'>")] if text.startswith("Column<'") and text.endswith("'>") else text
