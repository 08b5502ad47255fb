"""Crash culprits (Inspector Gadget, VLDB 2011, Table 1): which rows and which operation made an execution fail.

When module code fails during an execution — a value-level black box or Python UDF raising on
some rows, an ANSI-mode cast or arithmetic error, a ``raise`` in module code — the execution is
not committed and the executor keeps a :class:`CrashReport` instead: the execution, the workflow
node and module whose invocation failed, the operation (``file:line`` in module code), the
exception in one line, and the *culprit rows*: the rows whose processing raises, each with its
values and its provenance (a polynomial over the tuples the invocation read, and, where those
tuples are committed in the store, over the workflow's base tuples).

A report is one small JSON file in the store, outside every execution
(:mod:`lipspark.store.failures`); the query language reads it (``culprits execution N``).

>>> c = Culprit("Cars", {"CarId": "C17", "Model": "Golf"}, "Cars:C17·Requests:B4", ("Cars:C17", "Requests:B4"))
>>> r = CrashReport(3, "dealer1_bid", "dealer1", "price at w.py:40", "ValueError: bad car C17", (c,), "guard", 2)
>>> CrashReport.from_json(r.to_json()) == r
True
>>> print(r.text(limit=1, store="graphs/w"))
execution 3 failed in node dealer1_bid (module dealer1); the store keeps its 2 committed execution(s), unchanged
operation  price at w.py:40
exception  ValueError: bad car C17
culprits   1 row (each raises when processed alone: a guard per row of the operation's input)
  Cars(CarId=C17, Model=Golf)
    provenance  Cars:C17·Requests:B4
    base tuples Cars:C17, Requests:B4
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Culprit", "CrashReport", "REPORT_FORMAT", "REPORT_VERSION", "METHODS"]

REPORT_FORMAT = "lipspark-crash-report"
REPORT_VERSION = 1

#: How culprits were found, as the report says it.
METHODS = {
    "guard": "each raises when processed alone: a guard per row of the operation's input",
    "narrowing": "each makes the invocation fail with the other relations whole: narrowing passes over the rows it read",
    "plan": "none: the module raised while building its plan, before any row was read",
    "none": "none found: no single row of the invocation's inputs makes it fail on its own",
    "deferred": "not searched: provenance is off; `lipspark run --explain-failure` replays this invocation with provenance",
}


def _shown(v: Any, limit: int = 40) -> str:
    text = "null" if v is None else v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Culprit:
    """One culprit row: where it was (``relation``: the relation or operation input it is a row
    of), its visible values, its polynomial (as text) and the base tuples in it; ``stored``: for
    each tuple the invocation read, its polynomial over the workflow's base tuples when the store
    has it committed (``{"Cars:C17": "Cars:C17"}``)."""

    relation: str
    values: Mapping[str, Any]
    polynomial: str
    tokens: tuple[str, ...]
    stored: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"relation": self.relation, "values": dict(self.values), "polynomial": self.polynomial,
                "tokens": list(self.tokens), "stored": dict(self.stored)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Culprit":
        return cls(str(d["relation"]), dict(d["values"]), str(d["polynomial"]), tuple(d["tokens"]), dict(d.get("stored", {})))

    def lines(self) -> list[str]:
        values = ", ".join(f"{k}={_shown(v)}" for k, v in self.values.items())
        out = [f"  {self.relation}({values})", f"    provenance  {self.polynomial}", f"    base tuples {', '.join(self.tokens)}"]
        global_ = [f"{t} = {p}" for t, p in self.stored.items() if p != t]
        if global_:
            out.append(f"    in the store {'; '.join(global_)}")
        return out


@dataclass(frozen=True)
class CrashReport:
    """What made execution ``execution`` fail (see the module docstring).

    ``committed``: how many executions the store kept (the failed one is not among them);
    ``method``: how the culprits were found (a key of :data:`METHODS`); ``seconds``: the time
    the failing execution ran before it failed and the time finding the culprits took.
    """

    execution: int
    node: str
    module: str
    operation: str
    exception: str
    culprits: tuple[Culprit, ...]
    method: str
    committed: int
    seconds: Mapping[str, float] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "execution": self.execution, "node": self.node,
                "module": self.module, "operation": self.operation, "exception": self.exception, "method": self.method,
                "committed": self.committed, "seconds": dict(self.seconds), "culprits": [c.to_json() for c in self.culprits]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CrashReport":
        from lipspark.errors import StoreError

        if d.get("format") != REPORT_FORMAT or d.get("version") != REPORT_VERSION:
            raise StoreError(f"expected a {REPORT_FORMAT} version {REPORT_VERSION} file, found format {d.get('format')!r} "
                             f"version {d.get('version')!r}; run the workflow again with this lipspark to make a new report")
        return cls(int(d["execution"]), str(d["node"]), str(d["module"]), str(d["operation"]), str(d["exception"]),
                   tuple(Culprit.from_json(c) for c in d["culprits"]), str(d["method"]), int(d["committed"]),
                   {k: float(v) for k, v in d.get("seconds", {}).items()})

    @property
    def invocation(self) -> str:
        """The failing invocation as the query language names it."""
        return f"invocation {self.node} execution {self.execution}"

    def text(self, *, limit: int | None = 5, store: str | None = None) -> str:
        """The report for people: the first ``limit`` culprits (None: all) and how to see the rest."""
        invoked = f"node {self.node}" + (f" (module {self.module})" if self.module != self.node else "")
        lines = [f"execution {self.execution} failed in {invoked}; the store keeps its {self.committed} committed execution(s), unchanged",
                 f"operation  {self.operation}", f"exception  {self.exception}"]
        n = len(self.culprits)
        how = METHODS.get(self.method, self.method)
        lines.append(f"culprits   {n} row{'s' if n != 1 else ''} ({how})" if n else f"culprits   {how}")
        shown = self.culprits if limit is None else self.culprits[:limit]
        for c in shown:
            lines += c.lines()
        where = store or "GRAPH"
        if len(shown) < n:
            lines.append(f"  … and {n - len(shown)} more: lipspark query {where} \"culprits execution {self.execution}\" --all")
        if self.method == "deferred":
            lines.append(f"hint       lipspark run WORKFLOW --explain-failure --graph {where} names the culprits")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()
