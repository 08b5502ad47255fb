"""Selection and post-processing rules: the rows kept keep their annotations.

Selection (``filter``/``where``) removes rows, never changes one; order, limits and physical
partitioning are post-processing (Lipstick §3.2): not part of provenance. Each rule applies the
operation to the annotated DataFrame and keeps the layout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

    from lipspark.frame import AnnotatedFrame

__all__ = ["filter_rows", "order_by", "limit", "repartition", "coalesce", "alias"]


def filter_rows(frame: AnnotatedFrame, condition: "Column | str") -> AnnotatedFrame:
    """Selection: kept rows keep their annotation."""
    return frame.derive(frame.with_annotations().filter(condition))


def order_by(frame: AnnotatedFrame, cols: tuple[Any, ...], kwargs: dict[str, Any]) -> AnnotatedFrame:
    """Post-processing: order is not part of provenance."""
    return frame.derive(frame.with_annotations().orderBy(*cols, **kwargs))


def limit(frame: AnnotatedFrame, num: int) -> AnnotatedFrame:
    """Post-processing: the rows kept keep their annotations."""
    return frame.derive(frame.with_annotations().limit(num))


def repartition(frame: AnnotatedFrame, args: tuple[Any, ...]) -> AnnotatedFrame:
    """Physical layout only."""
    return frame.derive(frame.with_annotations().repartition(*args))


def coalesce(frame: AnnotatedFrame, n: int) -> AnnotatedFrame:
    """Physical layout only."""
    return frame.derive(frame.with_annotations().coalesce(n))


def alias(frame: AnnotatedFrame, name: str) -> AnnotatedFrame:
    """A name for column references in a later join condition."""
    return frame.derive(frame.with_annotations().alias(name))
