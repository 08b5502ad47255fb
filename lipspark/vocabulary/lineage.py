"""Column lineage (schema-level where-provenance): which stored columns a written column comes from.

For every relation a module invocation writes (an output, or a state relation it returns), the
executor records once, from the Spark plan that computed it (:mod:`lipspark.capture.lineage`),
for each of its columns the columns of the relations the invocation read that the column was
*copied* or *computed* from (DIRECT), and for the relation as a whole the columns that decided
*which* rows it has (INDIRECT: filters, join keys, group keys, sorts). The kinds are
OpenLineage's transformation types:

========  ==================  ==========================================================
type      subtype             meaning
========  ==================  ==========================================================
DIRECT    IDENTITY            the value is copied (a column passed through or renamed)
DIRECT    TRANSFORMATION      computed by an expression or a black box from the column
DIRECT    AGGREGATION         computed by an aggregate over a group's values of it
INDIRECT  FILTER, JOIN,       the column is read by a filter, a join condition, a
          GROUP_BY, SORT      grouping (``groupBy``, ``distinct``) or a sort
========  ==================  ==========================================================

Relations are named by their store-relative directory (``executions/000001/outputs/and/Requests``),
which is what chains modules: an input of one invocation *is* the stored output of another, a
state relation the one its module's last invocation wrote (or the initial state). These records
are what the executor writes to each execution's ``lineage.json`` (docs/store-format.md) and
what :func:`trace_column` follows back to the base relations (workflow inputs, initial state).

>>> f = SourceField("initial/m/Cars", "Model", "DIRECT", "IDENTITY")
>>> SourceField.from_json(f.to_json()) == f
True
>>> compose("IDENTITY", "TRANSFORMATION"), compose("AGGREGATION", "IDENTITY")
('TRANSFORMATION', 'AGGREGATION')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "DIRECT_SUBTYPES",
    "INDIRECT_SUBTYPES",
    "LINEAGE_FILE",
    "LINEAGE_FORMAT",
    "LINEAGE_VERSION",
    "RelationLineage",
    "SourceField",
    "compose",
    "is_base_dir",
]

#: DIRECT subtypes from the weakest change of a value to the strongest (composition takes the max).
DIRECT_SUBTYPES = ("IDENTITY", "TRANSFORMATION", "AGGREGATION")
#: INDIRECT subtypes: what read the column to decide which rows exist.
INDIRECT_SUBTYPES = ("FILTER", "JOIN", "GROUP_BY", "SORT", "WINDOW")
#: The file, in each execution's directory, that holds the lineage of what the execution wrote.
LINEAGE_FILE = "lineage.json"
LINEAGE_FORMAT = "lipspark-lineage"
LINEAGE_VERSION = 1


def compose(first: str, then: str) -> str:
    """The DIRECT subtype of a value computed ``then`` from one computed ``first``: the stronger
    of the two (a copy of a sum is an aggregation, a sum of a copy too)."""
    return max(first, then, key=DIRECT_SUBTYPES.index)


def is_base_dir(directory: str) -> bool:
    """Whether a store-relative relation directory holds base tuples (tokens): a workflow input
    given to an input node, or a module's initial state.

    >>> is_base_dir("initial/dealer1/Cars"), is_base_dir("executions/000002/inputs/request/Requests")
    (True, True)
    >>> is_base_dir("executions/000002/outputs/and/Requests")
    False
    """
    parts = directory.split("/")
    return parts[0] == "initial" or (len(parts) > 2 and parts[0] == "executions" and parts[2] == "inputs")


@dataclass(frozen=True)
class SourceField:
    """One column a written column (or a whole written relation) depends on.

    ``relation`` is the store-relative directory of the relation read, ``column`` its column,
    ``type`` DIRECT or INDIRECT, ``subtype`` one of :data:`DIRECT_SUBTYPES` or
    :data:`INDIRECT_SUBTYPES`, ``description`` what computed it when the plan names it (a black
    box such as ``calcBid``, an aggregate such as ``min``), else empty.
    """

    relation: str
    column: str
    type: str
    subtype: str
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        d = {"relation": self.relation, "column": self.column, "type": self.type, "subtype": self.subtype}
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SourceField":
        return cls(str(d["relation"]), str(d["column"]), str(d["type"]), str(d["subtype"]), str(d.get("description", "")))


@dataclass(frozen=True)
class RelationLineage:
    """The column lineage of one relation an invocation wrote.

    ``dir`` is where it is stored, ``node`` the workflow node of the invocation, ``module`` its
    module, ``relation`` the relation's name, ``kind`` ``output`` or ``state``; ``reads`` names
    each relation the invocation read (directory → (``input`` or ``state``, its name));
    ``columns`` maps each column to the fields it comes from (DIRECT), ``dataset`` lists the
    fields that decided which rows exist (INDIRECT), and ``opaque`` what the plan walk could not
    see through (a relation computed once, e.g. after a ``limit``), so a column with no source
    is told apart from one that has none.
    """

    dir: str
    node: str
    module: str
    relation: str
    kind: str
    reads: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    columns: Mapping[str, tuple[SourceField, ...]] = field(default_factory=dict)
    dataset: tuple[SourceField, ...] = ()
    opaque: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.dir, "node": self.node, "module": self.module, "relation": self.relation, "kind": self.kind,
                "reads": {d: list(v) for d, v in self.reads.items()},
                "columns": {c: [f.to_json() for f in fs] for c, fs in self.columns.items()},
                "dataset": [f.to_json() for f in self.dataset], "opaque": list(self.opaque)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RelationLineage":
        return cls(str(d["dir"]), str(d["node"]), str(d["module"]), str(d["relation"]), str(d["kind"]),
                   {k: (str(v[0]), str(v[1])) for k, v in d.get("reads", {}).items()},
                   {c: tuple(SourceField.from_json(f) for f in fs) for c, fs in d.get("columns", {}).items()},
                   tuple(SourceField.from_json(f) for f in d.get("dataset", [])), tuple(d.get("opaque", [])))
