"""Abstract syntax of the provenance query language: statements and selectors.

Every node is a frozen dataclass carrying ``pos`` (1-based line and column of its first
token) for error messages. ``pos`` is excluded from equality, hashing and ``repr``, so
nodes built by hand compare equal to parsed ones. ``str(node)`` renders canonical query
text that :func:`lipspark.query.parser.parse` reads back to an equal node.

>>> sel = TupleSel("tuple", "Cars", (Condition("CarId", "=", "C2"),), module="dealer1")
>>> print(Delete((sel, NodeSel(42))))
delete tuple Cars(CarId = "C2") in dealer1, node 42
>>> print(ZoomOut(("dealer1", "my module", "state")))
zoomout dealer1, `my module`, `state`
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "KEYWORDS",
    "Pos",
    "NO_POS",
    "LiteralValue",
    "TupleKind",
    "Node",
    "Selector",
    "Statement",
    "Condition",
    "TupleSel",
    "InvocationSel",
    "NodeSel",
    "TokenSel",
    "ValueSel",
    "ViolationsSel",
    "IdsSel",
    "Checks",
    "Blame",
    "RelationRef",
    "DefaultRef",
    "Assignment",
    "TupleColumn",
    "ZoomOut",
    "ZoomIn",
    "Reset",
    "Delete",
    "Update",
    "Subgraph",
    "Ancestors",
    "Descendants",
    "Depends",
    "Polynomial",
    "Evaluate",
    "Show",
    "Diff",
    "Responsibility",
    "Where",
    "Culprits",
    "Sample",
    "format_name",
    "format_literal",
]

#: Every keyword of the language, lower-case. Names equal to one (in any case) are
#: rendered in backquotes. Must match the keyword terminals of ``grammar.lark``.
KEYWORDS: frozenset[str] = frozenset({
    "zoomout", "zoomin", "reset", "delete", "subgraph", "ancestors", "descendants", "depends",
    "on", "polynomial", "expanded", "evaluate", "given", "samples", "seed", "show", "tuple",
    "input", "state", "output", "invocation", "node", "token", "value", "of", "in", "execution",
    "relation", "default", "true", "false", "null", "without", "delta", "diff",
    "shapley", "banzhaf", "over", "tuples", "invocations",
    "where", "column",
    "culprits", "sample", "checks", "violations", "blame",
    "recompute", "update", "set",
})

LiteralValue: TypeAlias = str | int | float | bool | None
TupleKind: TypeAlias = Literal["tuple", "input", "state", "output"]

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


@dataclass(frozen=True)
class Pos:
    """A 1-based line and column in the query text; ``0:0`` means unknown.

    >>> str(Pos(2, 9))
    '2:9'
    """

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


#: Position of nodes built by hand rather than parsed.
NO_POS = Pos(0, 0)


def format_name(name: str) -> str:
    """Render a name: bare if it is an identifier and not a keyword, else in backquotes.

    >>> format_name("Cars"), format_name("Value"), format_name("two words")
    ('Cars', '`Value`', '`two words`')
    """
    if _BARE_NAME.fullmatch(name) and name.lower() not in KEYWORDS:
        return name
    if not name or "`" in name or "\n" in name:
        raise ValueError(f"the name {name!r} cannot be written in a query "
                         "(names may not be empty or contain a backquote or a newline)")
    return f"`{name}`"


def format_literal(value: LiteralValue) -> str:
    """Render a literal: strings double-quoted with escapes, ``true``/``false``/``null``.

    >>> print(format_literal('say "hi"'), format_literal(None), format_literal(-2.5e-07))
    "say \\"hi\\"" null -2.5e-07
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} cannot be written in a query (only finite numbers)")
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'
    raise TypeError(f"not a query literal: {value!r} (expected str, int, float, bool or None)")


@dataclass(frozen=True)
class Node:
    """Base of every syntax node: only the source position."""

    pos: Pos = field(default=NO_POS, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Selector(Node):
    """Base of the selectors, which denote a set of nodes of the provenance graph."""


@dataclass(frozen=True)
class Statement(Node):
    """Base of the statements; a query is a list of them, run in order."""


# ---- selectors and their parts ---------------------------------------------------------


@dataclass(frozen=True)
class Condition(Node):
    """``column op value`` on a tuple's column; ``op`` is one of = != < <= > >=."""

    column: str
    op: str
    value: LiteralValue

    def __str__(self) -> str:
        return f"{format_name(self.column)} {self.op} {format_literal(self.value)}"


@dataclass(frozen=True)
class TupleSel(Selector):
    """Tuples of a relation: base tuples (``tuple``), or a module's ``input``, ``state`` or
    ``output`` tuples, optionally filtered by conditions, module and execution."""

    kind: TupleKind
    relation: str
    conditions: tuple[Condition, ...] = ()
    module: str | None = None
    execution: int | None = None
    #: the synonym written before the module, ``in`` or ``of``: kept so that a statement is
    #: echoed as written; like ``pos``, not part of equality
    preposition: Literal["in", "of"] = field(default="in", compare=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        text = f"{self.kind} {format_name(self.relation)}"
        if self.conditions:
            text += "(" + ", ".join(map(str, self.conditions)) + ")"
        if self.module is not None:
            text += f" {self.preposition} {format_name(self.module)}"
        if self.execution is not None:
            text += f" execution {self.execution}"
        return text


@dataclass(frozen=True)
class InvocationSel(Selector):
    """The invocations (m-nodes) of a module, optionally of one execution."""

    module: str
    execution: int | None = None

    def __str__(self) -> str:
        text = f"invocation {format_name(self.module)}"
        return text if self.execution is None else f"{text} execution {self.execution}"


@dataclass(frozen=True)
class NodeSel(Selector):
    """One node by its 64-bit id."""

    id: int

    def __str__(self) -> str:
        return f"node {self.id}"


@dataclass(frozen=True)
class TokenSel(Selector):
    """The base-tuple node whose provenance token has this label, e.g. ``Cars:C2``."""

    label: str

    def __str__(self) -> str:
        return f"token {format_literal(self.label)}"


@dataclass(frozen=True)
class ViolationsSel(Selector):
    """The rows that violate an integrity check (``violations "positive amount" in dealer1 execution 3``):
    the output nodes (or, for a state relation, the p-nodes) of the violating rows of every
    relation the check is on, in the executions named."""

    check: str
    module: str | None = None
    execution: int | None = None

    def __str__(self) -> str:
        text = f"violations {format_literal(self.check)}"
        if self.module is not None:
            text += f" in {format_name(self.module)}"
        return text + (f" execution {self.execution}" if self.execution is not None else "")


@dataclass(frozen=True)
class IdsSel(Selector):
    """Nodes by id, as the engine resolved a selector that reads the store (``violations``); ``text``
    is that selector as written (for messages)."""

    ids: tuple[int, ...]
    text: str = ""

    def __str__(self) -> str:
        return self.text or "nodes " + ", ".join(map(str, self.ids))


@dataclass(frozen=True)
class ValueSel(Selector):
    """The v-nodes of one column of the tuples that ``of`` selects."""

    column: str
    of: Selector

    def __str__(self) -> str:
        return f"value {format_name(self.column)} of {self.of}"


@dataclass(frozen=True)
class RelationRef(Node):
    """``relation NAME`` in an assignment: every base tuple of a relation."""

    name: str

    def __str__(self) -> str:
        return f"relation {format_name(self.name)}"


@dataclass(frozen=True)
class DefaultRef(Node):
    """``default`` in an assignment: every token not otherwise assigned."""

    def __str__(self) -> str:
        return "default"


@dataclass(frozen=True)
class Assignment(Node):
    """``target = value`` in ``evaluate ... given``."""

    target: Selector | RelationRef | DefaultRef
    value: LiteralValue

    def __str__(self) -> str:
        return f"{self.target} = {format_literal(self.value)}"


@dataclass(frozen=True)
class TupleColumn(Node):
    """``tuple REL.COLUMN`` in ``evaluate ... given``: each base tuple of ``relation`` valued by
    its own ``column`` (ProvSQL's ``create_provenance_mapping``)."""

    relation: str
    column: str

    def __str__(self) -> str:
        return f"tuple {format_name(self.relation)}.{format_name(self.column)}"


# ---- statements ------------------------------------------------------------------------


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(map(format_name, names))


@dataclass(frozen=True)
class ZoomOut(Statement):
    """Replace every invocation of the modules by one p-node (Lipstick Def. 4.1)."""

    modules: tuple[str, ...]

    def __str__(self) -> str:
        return f"zoomout {_names(self.modules)}"


@dataclass(frozen=True)
class ZoomIn(Statement):
    """Undo :class:`ZoomOut` for the modules."""

    modules: tuple[str, ...]

    def __str__(self) -> str:
        return f"zoomin {_names(self.modules)}"


@dataclass(frozen=True)
class Reset(Statement):
    """Return the working view to the captured graph."""

    def __str__(self) -> str:
        return "reset"


@dataclass(frozen=True)
class Delete(Statement):
    """Propagate deletion of the targets (Lipstick Def. 4.2)."""

    targets: tuple[Selector, ...]
    #: ``recompute``: re-run the invocations whose values the graph cannot recompute
    recompute: bool = False
    #: ``recompute execution N``: only those of executions up to N
    until: int | None = None

    def __str__(self) -> str:
        text = "delete " + ", ".join(map(str, self.targets))
        if self.recompute:
            text += " recompute" + (f" execution {self.until}" if self.until is not None else "")
        return text


@dataclass(frozen=True)
class Update(Statement):
    """Change base tuples' values and re-run what they reach (a value what-if):
    ``update tuple Cars(CarId = "C2") in dealer1 set Model = "Civic"``.

    >>> sel = TupleSel("tuple", "Cars", (Condition("CarId", "=", "C2"),), module="dealer1")
    >>> print(Update(sel, (("Model", "Civic"),)))
    update tuple Cars(CarId = "C2") in dealer1 set Model = "Civic"
    """

    target: Selector
    assignments: tuple[tuple[str, LiteralValue], ...]
    #: the selector's module was written after the assignments (``… set Model = "Civic" in
    #: dealer1``): kept so that the statement is echoed as written; not part of equality
    module_last: bool = field(default=False, compare=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        sets = ", ".join(f"{format_name(c)} = {format_literal(v)}" for c, v in self.assignments)
        t = self.target
        if self.module_last and isinstance(t, TupleSel) and t.module is not None and t.execution is None:
            first = TupleSel(t.kind, t.relation, t.conditions)
            return f"update {first} set {sets} {t.preposition} {format_name(t.module)}"
        return f"update {t} set {sets}"


@dataclass(frozen=True)
class Subgraph(Statement):
    """Ancestors, descendants and siblings of descendants of the target."""

    target: Selector

    def __str__(self) -> str:
        return f"subgraph {self.target}"


@dataclass(frozen=True)
class Ancestors(Statement):
    """Backward trace of the target."""

    target: Selector

    def __str__(self) -> str:
        return f"ancestors {self.target}"


@dataclass(frozen=True)
class Descendants(Statement):
    """Forward trace of the target."""

    target: Selector

    def __str__(self) -> str:
        return f"descendants {self.target}"


@dataclass(frozen=True)
class Depends(Statement):
    """Whether the target is gone after deleting everything in ``on``."""

    target: Selector
    on: tuple[Selector, ...]

    def __str__(self) -> str:
        return f"depends {self.target} on " + ", ".join(map(str, self.on))


@dataclass(frozen=True)
class Polynomial(Statement):
    """The provenance expression of the target, optionally expanded to a sum of monomials."""

    target: Selector
    expand: bool = False

    def __str__(self) -> str:
        return f"polynomial {self.target}" + (" expanded" if self.expand else "")


@dataclass(frozen=True)
class Evaluate(Statement):
    """Evaluate the target's provenance in a semiring (name lower-cased; ``levels``, lowest
    first, for ``minmax(…)`` and ``maxmin(…)``), δ as the identity ``without_delta``."""

    semiring: str
    target: Selector
    given: tuple[Assignment | TupleColumn, ...] = ()
    samples: int | None = None
    seed: int | None = None
    without_delta: bool = False
    levels: tuple[str, ...] = ()

    def __str__(self) -> str:
        name = format_name(self.semiring)
        if self.levels:
            name += "(" + " < ".join(map(format_name, self.levels)) + ")"
        text = f"evaluate {name} {self.target}"
        if self.given:
            text += " given " + ", ".join(map(str, self.given))
        if self.without_delta:
            text += " without delta"
        if self.samples is not None:
            text += f" samples {self.samples}"
        if self.seed is not None:
            text += f" seed {self.seed}"
        return text


@dataclass(frozen=True)
class Show(Statement):
    """List the nodes the target matches."""

    target: Selector

    def __str__(self) -> str:
        return f"show {self.target}"


@dataclass(frozen=True)
class Diff(Statement):
    """The tuples of ``kind relation`` of a module that appeared, disappeared or changed from
    execution ``before`` to ``after``, matched on the columns ``on`` (default: those without
    v-nodes), with the provenance that explains each (:mod:`lipspark.query.diff`)."""

    kind: TupleKind
    relation: str
    before: int
    after: int
    conditions: tuple[Condition, ...] = ()
    module: str | None = None
    on: tuple[str, ...] = ()
    #: ``in`` or ``of`` before the module, as written (not part of equality)
    preposition: Literal["in", "of"] = field(default="of", compare=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        tuples = TupleSel(self.kind, self.relation, self.conditions, self.module, preposition=self.preposition)
        text = f"diff {tuples} execution {self.before}, execution {self.after}"
        return text + (f" on {_names(self.on)}" if self.on else "")


@dataclass(frozen=True)
class Responsibility(Statement):
    """The Shapley or Banzhaf value (``measure``) of each player for the existence of the
    target tuples: the players are their base tuples (``"tuples"``), their module invocations
    (``"invocations"``) or both; ``given`` fixes tokens present or absent (exogenous).

    >>> print(Responsibility("shapley", TupleSel("output", "BestBid", module="agg"), ("invocations",), seed=3))
    shapley output BestBid in agg over invocations seed 3
    """

    measure: Literal["shapley", "banzhaf"]
    target: Selector
    players: tuple[Literal["tuples", "invocations"], ...] = ("tuples",)
    given: tuple[Assignment | TupleColumn, ...] = ()
    samples: int | None = None
    seed: int | None = None

    def __str__(self) -> str:
        text = f"{self.measure} {self.target}"
        if self.players != ("tuples",):
            text += " over " + ", ".join(self.players)
        if self.given:
            text += " given " + ", ".join(map(str, self.given))
        if self.samples is not None:
            text += f" samples {self.samples}"
        if self.seed is not None:
            text += f" seed {self.seed}"
        return text


@dataclass(frozen=True)
class Checks(Statement):
    """The verdicts of the integrity checks the executions kept (``checks``, ``checks "name"``:
    since when does it fail?), and in a view after a deletion whether each would hold."""

    check: str | None = None
    module: str | None = None
    execution: int | None = None

    def __str__(self) -> str:
        text = "checks" + (f" {format_literal(self.check)}" if self.check is not None else "")
        if self.module is not None:
            text += f" in {format_name(self.module)}"
        return text + (f" execution {self.execution}" if self.execution is not None else "")


@dataclass(frozen=True)
class Blame(Statement):
    """The base tuples behind the tuples the target selects: each with how many of them it is
    behind, and the count per base relation (the lineage of a check's violations)."""

    target: Selector

    def __str__(self) -> str:
        return f"blame {self.target}"


@dataclass(frozen=True)
class Where(Statement):
    """Where-provenance: the base tuples and columns the value of ``column`` in each tuple the
    target matches was copied or computed from."""

    column: str
    target: Selector

    def __str__(self) -> str:
        return f"where column {format_name(self.column)} of {self.target}"


@dataclass(frozen=True)
class Culprits(Statement):
    """The crash report of failed execution ``execution`` (``None``: the latest the store
    keeps): the failing invocation, operation, exception and culprit rows
    (:mod:`lipspark.vocabulary.culprits`)."""

    execution: int | None = None

    def __str__(self) -> str:
        return "culprits" if self.execution is None else f"culprits execution {self.execution}"


#: how many tuples ``sample`` shows when the statement does not say
SAMPLE_SIZE = 5


@dataclass(frozen=True)
class Sample(Statement):
    """The first ``k`` tuples, by stored position, of relation ``relation`` of ``module`` in
    ``execution`` (its input, state or output tuples), with their polynomials: the data on one
    dataflow edge (Inspector Gadget's data samples)."""

    relation: str
    module: str
    execution: int
    k: int = SAMPLE_SIZE
    preposition: Literal["in", "of"] = field(default="of", compare=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        text = f"sample relation {format_name(self.relation)} {self.preposition} {format_name(self.module)} execution {self.execution}"
        return text if self.k == SAMPLE_SIZE else f"{text} {self.k}"
