"""Latent rows: the rows a filter over values dropped, carried to the frame a what-if asks about.

A filter decided per row (:mod:`~lipspark.capture.rules.guard`) drops each row whose test is
false, and records that test. A what-if that makes the test true makes the row appear in a
re-run, and there it goes on through the operations after the filter. When those operations work
row by row — projections (``select``, ``withColumn``, ``drop``, renames), filters that read no
value with a v-node, ``orderBy``, ``alias`` — what they do with the row is known without the
others: the frame keeps the dropped rows as **latent rows**, and each such operation on the frame
is applied to them too, lazily, when they are asked for (:meth:`~lipspark.AnnotatedFrame.collect_latent`).
Any other operation (a join, an aggregation, a window, a union, a limit, an explode, another
filter over values) ends the carrying: its result has no latent rows, and a what-if where one
of those rows would pass stays *not exact*.

A latent row's annotation is its factors at the filter and one more, a · p-node over its test
(as a kept row's), recorded in a segment of its own the first time the rows are asked for. It
appears after a deletion when none of its factors goes and every test under a factor is true
(:func:`lipspark.query.prediction.predict`).

>>> sorted(ROW_BY_ROW)
['Filter', 'Project', 'ResolvedHint', 'Sort', 'SubqueryAlias']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql import DataFrame

from lipspark.capture.plan import _seq, _tree, analyzed, node_name, references
from lipspark.vocabulary import Op, RowNodeSegment
from lipspark.vocabulary.columns import is_hidden

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.capture.rules.regroup import GroupKeys
    from lipspark.frame import AnnotatedFrame, AnnotatedRow

__all__ = ["ROW_BY_ROW", "Latent", "LatentRows", "Parts", "row_by_row", "carry"]

#: The plan nodes an operation may add and still work row by row.
ROW_BY_ROW = frozenset({"Project", "Sort", "Filter", "SubqueryAlias", "ResolvedHint"})
_MAX_DEPTH = 64


@dataclass(frozen=True)
class LatentRows:
    """The rows a filter over values dropped, as the frame would hold them (``rows``), and the
    ids of the tests of every row that filter dropped (``tests``: a test that a what-if makes
    true is accounted for, whether its row reaches this frame or a later plain filter drops it);
    or, for the result of a group-by on a value, its keys (``groups``,
    :mod:`~lipspark.capture.rules.regroup`)."""

    rows: list["AnnotatedRow"]
    tests: frozenset[int]
    groups: "GroupKeys | None" = None


#: What a filter's dropped rows are made of when first asked for: a frame of them (with their ·
#: factor), the table of those · nodes, and a frame of their tests' ids (column ``t``).
Parts = tuple["AnnotatedFrame", DataFrame, DataFrame]


@dataclass
class _Source:
    """The rows one filter dropped: how to make their parts (nothing is planned before a
    what-if asks: a filter pays only a closure), made once, their · nodes recorded once."""

    segment: RowNodeSegment
    make: Callable[[], Parts]
    _parts: "Parts | None" = None

    def parts(self) -> Parts:
        """The parts, made and their · nodes recorded on first use."""
        if self._parts is None:
            self._parts = self.make()
            frame, nodes, _ = self._parts
            frame.tracker.builder.record(self.segment, nodes=nodes)
        return self._parts


@dataclass(frozen=True)
class Latent:
    """The latent rows a frame carries: one filter's dropped rows and the row-by-row operations
    applied since, replayed on them when asked for."""

    source: _Source
    steps: tuple[Callable[["AnnotatedFrame"], "AnnotatedFrame"], ...] = ()
    _cache: list["LatentRows"] = field(default_factory=list, compare=False)
    #: the plan nodes an operation may add and still be applied to the latent rows
    allowed: frozenset[str] = ROW_BY_ROW

    @staticmethod
    def of(segment: RowNodeSegment, make: Callable[[], Parts]) -> "Latent":
        """The latent rows of one filter, whose · nodes are ``segment``'s and whose parts
        ``make`` gives (:data:`Parts`)."""
        return Latent(_Source(segment, make))

    def then(self, step: Callable[["AnnotatedFrame"], "AnnotatedFrame"]) -> "Latent":
        """These latent rows after one more row-by-row operation."""
        return Latent(self.source, self.steps + (step,))

    def collect(self) -> LatentRows:
        """Replay the operations on the dropped rows (once) and collect them, annotated."""
        if not self._cache:
            frame, _, made_tests = self.source.parts()
            for step in self.steps:
                frame = step(frame)
            tests = frozenset(int(r[0]) for r in made_tests.collect())
            self._cache.append(LatentRows(frame.collect_annotated(), tests))
        return self._cache[0]


def row_by_row(before: "AnnotatedFrame", after: "AnnotatedFrame", allowed: frozenset[str] = ROW_BY_ROW) -> bool:
    """Whether ``after`` is ``before`` through plan nodes that work row by row (``allowed``, by
    default :data:`ROW_BY_ROW`): projections of deterministic expressions, and filters that read
    no value with a v-node."""
    base = analyzed(before.with_annotations())
    node = analyzed(after.with_annotations())
    valued = set(before.layout.values)
    for _ in range(_MAX_DEPTH):
        if node.equals(base):
            return True
        name = node_name(node)
        if name not in allowed or node.children().size() != 1:
            return False
        if not all(e.deterministic() for e in _seq(node.expressions())):
            return False
        if name == "Filter" and any(c in valued or is_hidden(c) for c in references(_tree(node.condition()))):
            return False
        node = node.children().apply(0)
    return False


def carry(before: "AnnotatedFrame", after: "AnnotatedFrame", step: Callable[["AnnotatedFrame"], "AnnotatedFrame"]) -> "AnnotatedFrame":
    """``after`` carrying ``before``'s latent rows through ``step`` (the same operation), when
    it works row by row; else ``after`` as it is (without latent rows)."""
    latent: Any = before.latent
    if latent is None or after is before or not row_by_row(before, after, latent.allowed):
        return after
    return after.with_latent(latent.then(step))

