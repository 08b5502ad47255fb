"""Selection and post-processing rules: the rows kept keep their annotations.

Selection (``filter``/``where``) removes rows, never changes one; order, limits and physical
partitioning are post-processing (Lipstick §3.2): not part of provenance. Each rule applies the
operation to the annotated DataFrame and keeps the layout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lipspark.capture.plan import analyzed, condition_sql, nondeterministic, read_condition, references
from lipspark.capture.rules.guard import guarded_filter
from lipspark.capture.rules.condition import record_condition, valued_columns
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary.columns import is_hidden

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

    from lipspark.frame import AnnotatedFrame

__all__ = ["filter_rows", "drop_na", "order_by", "sort_within_partitions", "limit", "hint", "repartition", "coalesce",
           "checkpoint", "alias"]


def filter_rows(frame: AnnotatedFrame, condition: "Column | str") -> AnnotatedFrame:
    """Selection: kept rows keep their annotation. A condition over ``*`` (``hash(*)``) is
    refused (it would read the hidden columns); one whose value may differ from job to job
    (``rand()``) is computed once, for the output and the graph alike; one that reads values
    with v-nodes records its outcome per row when it compares arithmetic over them
    (:mod:`~lipspark.capture.rules.guard`), else a CONDITION node
    (:mod:`~lipspark.capture.rules.condition`)."""
    out = frame.with_annotations().filter(condition)
    cond = read_condition(out)
    if cond is not None:
        hidden = [r for r in references(cond) if is_hidden(r)]
        if hidden:
            raise UnsupportedOperation("filter with a condition over * (such as hash(*))",
                                       "name the columns, e.g. F.hash(*[F.col(c) for c in df.columns])")
        if nondeterministic(cond):
            out = frame.tracker.compute_once(out)
        valued = valued_columns(references(cond), frame.layout.values)
        if valued:  # HAVING-style: which rows pass depends on values a what-if may change
            if not nondeterministic(cond):  # per row, when the condition compares arithmetic over values
                guarded = guarded_filter(frame, out, cond, analyzed(out).condition(), valued, condition_sql(out) or "",
                                         condition)
                if guarded is not None:
                    return guarded
            record_condition(frame.tracker, [(frame.with_annotations(), valued)], f"filter {condition_sql(out)}")
    return frame.derive(out)


def drop_na(frame: AnnotatedFrame, how: str, thresh: int | None, subset: Any) -> AnnotatedFrame:
    """``dropna``: a selection over the data columns (by default all of them, never the hidden
    annotation columns, whose nulls mean "no v-node here")."""
    names = [subset] if isinstance(subset, str) else list(subset) if subset else list(dict.fromkeys(frame.columns))
    return frame.derive(frame.with_annotations().dropna(how, thresh, names))


def order_by(frame: AnnotatedFrame, cols: tuple[Any, ...], kwargs: dict[str, Any]) -> AnnotatedFrame:
    """Post-processing: order is not part of provenance."""
    return frame.derive(frame.with_annotations().orderBy(*cols, **kwargs))


def sort_within_partitions(frame: AnnotatedFrame, cols: tuple[Any, ...], kwargs: dict[str, Any]) -> AnnotatedFrame:
    """Post-processing: order is not part of provenance."""
    return frame.derive(frame.with_annotations().sortWithinPartitions(*cols, **kwargs))


def checkpoint(frame: AnnotatedFrame, eager: bool, *, local: bool, storage_level: Any = None) -> AnnotatedFrame:
    """The frame computed and kept, annotations included (the same rows for output and graph)."""
    df = frame.with_annotations()
    if not local:
        return frame.derive(df.checkpoint(eager))
    return frame.derive(df.localCheckpoint(eager) if storage_level is None else df.localCheckpoint(eager, storage_level))


def limit(frame: AnnotatedFrame, num: int) -> AnnotatedFrame:
    """Post-processing: the rows kept keep their annotations. Which rows a limit keeps may
    differ from one Spark job to the next (after a shuffle, or among ties of an ordering), so
    they are computed once, for the output and the graph alike."""
    return frame.derive(frame.tracker.compute_once(frame.with_annotations().limit(num)))


def hint(frame: AnnotatedFrame, name: str, parameters: tuple[Any, ...]) -> AnnotatedFrame:
    """Physical planning only."""
    return frame.derive(frame.with_annotations().hint(name, *parameters))


def repartition(frame: AnnotatedFrame, args: tuple[Any, ...]) -> AnnotatedFrame:
    """Physical layout only."""
    return frame.derive(frame.with_annotations().repartition(*args))


def coalesce(frame: AnnotatedFrame, n: int) -> AnnotatedFrame:
    """Physical layout only."""
    return frame.derive(frame.with_annotations().coalesce(n))


def alias(frame: AnnotatedFrame, name: str) -> AnnotatedFrame:
    """A name for column references in a later join condition."""
    return frame.derive(frame.with_annotations().alias(name))
