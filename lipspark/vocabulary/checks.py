"""Integrity checks' verdicts, as an execution keeps them (``checks.json``).

A workflow declares checks on the relations its modules write (:class:`lipspark.workflow.Check`):
*row* predicates (every row must satisfy a boolean Column expression; a row where it is false
violates it, a null is not a violation, as in SQL's CHECK) and *table* predicates (a boolean
aggregate over the whole relation must be true). Every execution evaluates them — with provenance
on or off, in one Spark job — and keeps one :class:`CheckResult` per check and relation written
in its ``checks.json``: the verdict, the number of violating rows and their positions in the
stored file (what the query layer turns into node ids).

>>> r = CheckResult("dealer1_bid", "dealer1", "Bids1", "positive", "row", "warn", "Amount > 0", False, 2, (0, 5), "executions/000001/outputs/dealer1_bid/Bids1")
>>> CheckResult.from_json(r.to_json()) == r, r.verdict
(True, 'fails')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lipspark.errors import StoreError

__all__ = ["CheckResult", "CHECKS_FILE", "CHECKS_FORMAT", "CHECKS_VERSION", "LEVELS", "KINDS"]

#: The file each execution directory keeps its checks' verdicts in.
CHECKS_FILE = "checks.json"
CHECKS_FORMAT = "lipspark-checks"
CHECKS_VERSION = 1
#: ``warn``: the run goes on; ``fail``: the run stops after the execution (which is kept, so its
#: violations can be traced).
LEVELS = ("warn", "fail")
#: ``row``: a predicate each row must satisfy; ``table``: a boolean aggregate of the relation.
KINDS = ("row", "table")


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check on one relation written by one invocation."""

    node: str
    module: str
    relation: str
    name: str
    kind: str
    level: str
    #: the predicate as Spark prints it (what the check tests)
    predicate: str
    passed: bool
    #: violating rows (row checks); 0 or 1 for a table check (1: its predicate was false or null)
    violations: int
    #: the violating rows' positions in the stored relation's file (row checks), sorted
    positions: tuple[int, ...]
    #: the store-relative directory of the stored relation
    dir: str

    @property
    def verdict(self) -> str:
        return "holds" if self.passed else "fails"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "module": self.module, "relation": self.relation, "name": self.name, "kind": self.kind,
                "level": self.level, "predicate": self.predicate, "passed": self.passed, "violations": self.violations,
                "positions": list(self.positions), "dir": self.dir}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CheckResult":
        try:
            return cls(str(d["node"]), str(d["module"]), str(d["relation"]), str(d["name"]), str(d["kind"]), str(d["level"]),
                       str(d["predicate"]), bool(d["passed"]), int(d["violations"]), tuple(int(p) for p in d["positions"]), str(d["dir"]))
        except (KeyError, TypeError, ValueError) as err:
            raise StoreError(f"a check's verdict in {CHECKS_FILE} is malformed ({err}); the store is corrupt or from another lipspark version") from err
