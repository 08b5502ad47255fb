"""The hidden columns an annotated frame carries next to the user's data, and their layout.

A row's annotation is the product of its *factor* columns ``__lp_f0 .. __lp_fK-1``: node ids
of the graph (0 stands for the semiring's 1 and is skipped). A join concatenates the factors of
both sides instead of creating a · node per row; the · node is created only where a pipeline
breaker (group-by, distinct, cogroup, black box) needs the row as one p-node (the member rule,
:func:`lipspark.vocabulary.ids.member_col`). A value column whose value is a v-node of the graph
(an aggregate, a black box's result) carries that node's id in ``__lp_v_<column>``; a nested bag
(``collect_list``, ``cogroup``) carries its members' p-node ids in ``__lp_b_<column>``.

>>> Layout(2, ("b", "a")).hidden()
['__lp_f0', '__lp_f1', '__lp_v_a', '__lp_v_b']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from lipspark.errors import AnnotationError
from lipspark.vocabulary.columns import bag_col, factor, is_hidden, value_col
from lipspark.vocabulary.ids import member_col, node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["check_visible", "Layout"]

def check_visible(name: str) -> None:
    """Refuse a user column name in lipspark's namespace."""
    if is_hidden(name):
        raise AnnotationError(f"column names starting with '__lp_' are reserved for lipspark, got {name!r}")


@dataclass(frozen=True)
class Layout:
    """Which hidden columns a frame has: ``k`` factors, v-nodes of the ``values`` columns and
    member ids of the ``bags`` columns (both kept sorted, so equal layouts compare equal)."""

    k: int = 1
    values: tuple[str, ...] = ()
    bags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.k < 1:
            raise AnnotationError(f"internal: an annotated frame has at least one factor, got k={self.k}")
        object.__setattr__(self, "values", tuple(sorted(self.values)))
        object.__setattr__(self, "bags", tuple(sorted(self.bags)))

    def with_(self, *, k: int | None = None, values: Iterable[str] | None = None, bags: Iterable[str] | None = None) -> "Layout":
        """A copy with some parts replaced."""
        return Layout(self.k if k is None else k, self.values if values is None else tuple(values),
                      self.bags if bags is None else tuple(bags))

    def hidden(self) -> list[str]:
        """Every hidden column, factors first."""
        return self.factor_names() + [value_col(c) for c in self.values] + [bag_col(c) for c in self.bags]

    def factor_names(self) -> list[str]:
        """``__lp_f0 .. __lp_f<k-1>``."""
        return [factor(i) for i in range(self.k)]

    def factor_cols(self) -> list["Column"]:
        """The factor columns, as Spark columns."""
        from pyspark.sql import functions as F

        return [F.col(f) for f in self.factor_names()]

    def padded_factor_cols(self, k: int) -> list["Column"]:
        """The factor columns padded with zeros (the semiring's 1) to ``k`` of them, or none
        when ``k`` is 1 (a member table lists factors only when members may be products)."""
        from pyspark.sql import functions as F

        if k <= 1:
            return []
        return self.factor_cols() + [F.lit(0).cast("long").alias(factor(i)) for i in range(self.k, k)]

    def member_col(self, seg: int) -> "Column":
        """The row's single p-node: its factor, or a · node of segment ``seg`` over its
        non-zero factors (the member rule)."""
        fs = self.factor_cols()
        return member_col(fs, node_hash_col(seg, *fs))
