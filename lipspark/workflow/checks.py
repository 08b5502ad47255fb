"""Integrity checks on the relations modules write, evaluated by every execution.

Inspector Gadget's interviews (VLDB 2011, Table 1) put row-level integrity alerts and table-level
alerts right after crash culprits among what dataflow programmers ask for. A :class:`Check` names
a relation a module writes (an output or a state relation), a predicate and a level:

* ``on="row"``: every row must satisfy the predicate, a boolean expression
  (``"Amount > 0"``, ``lambda: F.col("BidId").isNotNull()``); a row where it is false violates
  it; where it is null (a comparison with a null) it does not, as in SQL's CHECK — test
  ``isNotNull()`` explicitly;
* ``on="table"``: a boolean aggregate over the whole relation must be true
  (``F.count("*") > 0``, ``F.count_distinct("BidId") == F.count("*")``, ``F.sum("Amount") < 1e6``);
  false or null fails it.

A predicate is SQL text (``"Amount <= 60000"``, read by ``F.expr``), a function of no arguments
returning a Column (``lambda: F.col("Amount") <= list_price()``) or a Column. A workflow's
``build`` runs before Spark starts, where PySpark cannot make a Column yet: there, give text or
a function; either is turned into a Column when the checks are evaluated.

``level="warn"`` reports a failing check and goes on; ``level="fail"`` stops the run after the
execution — which is committed, so what violates the check can be traced (``violations`` in the
query language) — as a data-build tool stops after a failing test of a table it built.

Checks are declared on a module (``Module(checks=[...])``: every node running it) or on one node
of a workflow (``Workflow.check(node, check)``). Each execution evaluates all of them on the rows
it writes — as aggregates observed by the writes, then one Spark job over the written files for
the violating rows' positions (:mod:`lipspark.workflow.verdicts`), so provenance on, off or
deferred give the same verdicts — and keeps the verdicts and those positions in its
``checks.json`` (:mod:`lipspark.vocabulary.checks`).

>>> c = Check("Bids1", "positive amount", "Amount > 0")
>>> c.on, c.level
('row', 'warn')
>>> Check("Bids1", "x", "Amount > 0", level="stop")
Traceback (most recent call last):
    ...
lipspark.errors.WorkflowError: check 'x' on Bids1: level must be one of warn, fail; got 'stop'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence, Union

from lipspark.errors import WorkflowError
from lipspark.vocabulary.checks import KINDS, LEVELS, CheckResult

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["Check", "CheckFailed"]


@dataclass(frozen=True, eq=False)
class Check:
    """A predicate a written relation must satisfy (see the module docstring)."""

    relation: str
    name: str
    predicate: Union[str, "Column", Callable[[], "Column"]]
    on: str = "row"
    level: str = "warn"

    def __post_init__(self) -> None:
        what = f"check {self.name!r} on {self.relation}"
        if not isinstance(self.name, str) or not self.name.strip() or "\n" in self.name:
            raise WorkflowError(f"a check on {self.relation} needs a name (one line of text), got {self.name!r}")
        if self.on not in KINDS:
            raise WorkflowError(f"{what}: on must be one of {', '.join(KINDS)}; got {self.on!r}")
        if self.level not in LEVELS:
            raise WorkflowError(f"{what}: level must be one of {', '.join(LEVELS)}; got {self.level!r}")
        from pyspark.sql import Column

        if not (isinstance(self.predicate, (str, Column)) or callable(self.predicate)):
            raise WorkflowError(f"{what}: the predicate must be SQL text such as 'Amount > 0', a function returning a Column "
                                f"(lambda: F.col('Amount') > 0) or a Column; got {type(self.predicate).__name__}")

    def column(self) -> "Column":
        """The predicate as a Column (Spark must be running)."""
        from pyspark.sql import Column
        from pyspark.sql import functions as F

        p = self.predicate
        if isinstance(p, str):
            return F.expr(p)
        if isinstance(p, Column):
            return p
        out = p()
        if not isinstance(out, Column):
            raise WorkflowError(f"check {self.name!r} on {self.relation}: its predicate function returned "
                                f"{type(out).__name__}, not a Column")
        return out


class CheckFailed(WorkflowError):
    """A check of level ``fail`` failed: the run stopped after the execution, which is kept."""

    def __init__(self, execution: int, failed: Sequence[CheckResult]) -> None:
        names = "; ".join(f"{r.name!r} on {r.relation} of {r.node} ({r.violations} violating row(s))" if r.kind == "row"
                          else f"{r.name!r} on {r.relation} of {r.node} (table predicate false)" for r in failed)
        super().__init__(f"execution {execution} failed check(s) of level fail: {names}; the execution is kept: "
                         f"trace them with `violations \"NAME\" execution {execution}` in lipspark query")
        self.execution = execution
        self.failed = tuple(failed)
