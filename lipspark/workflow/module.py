"""Modules (Lipstick Definition 2.1): input, state and output schemas, and the logic between them.

A module's logic is one Python function over frames — plain DataFrames with provenance off,
annotated frames with it on — that receives every input and state relation by name and returns
every output relation and the state relations it changes.

>>> m = Module("echo", inputs={"In": "x int"}, outputs={"Out": "x int"},
...            logic=lambda In: {"Out": In})
>>> m.input_names, m.output_names, m.state_names
(('In',), ('Out',), ())
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from lipspark.errors import SchemaError, WorkflowError

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.workflow.checks import Check

__all__ = ["check_name", "Relation", "Module", "parse_schema"]


#: Names that become directories of a store: ASCII letters, digits and underscores (also names
#: the query language reads without quotes), at most 128 characters.
_NAME = re.compile(r"[A-Za-z0-9_]{1,128}")


def check_name(what: str, name: Any, *, dash: bool = False) -> None:
    """Refuse a name that cannot be a directory of the store (``../x``, ``/abs``, NUL, empty,
    too long): one line naming the rule. ``dash`` also allows ``-`` (workflow names).

    >>> check_name("node id", "dealer1")
    >>> check_name("node id", "../x")
    Traceback (most recent call last):
    ...
    lipspark.errors.WorkflowError: node id must be 1-128 ASCII letters, digits or underscores (it names a directory of the store), got '../x'
    """
    ok = isinstance(name, str) and _NAME.fullmatch(name.replace("-", "_") if dash else name) is not None
    if not ok:
        extra = ", digits, underscores or dashes" if dash else ", digits or underscores"
        raise WorkflowError(f"{what} must be 1-128 ASCII letters{extra} (it names a directory of the store), got {name!r}")


def parse_schema(ddl: "str | Mapping[str, str] | list[tuple[str, str]]") -> tuple[tuple[str, str], ...]:
    """``"CarId string, Model string"`` (or a mapping) → ``(("CarId", "string"), ("Model", "string"))``.

    >>> parse_schema("a int, b array<string>")
    (('a', 'int'), ('b', 'array<string>'))
    """
    if isinstance(ddl, Mapping):
        items = list(ddl.items())
    elif isinstance(ddl, str):
        items, depth, cur = [], 0, ""
        for ch in ddl + ",":
            if ch == "," and depth == 0:
                if cur.strip():
                    parts = cur.strip().split(None, 1)
                    if len(parts) != 2:
                        raise WorkflowError(f"schema entry {cur.strip()!r} should be 'name type' in {ddl!r}")
                    items.append((parts[0], parts[1].strip()))
                cur = ""
                continue
            depth += ch in "<(" and 1 or (-1 if ch in ">)" else 0)
            cur += ch
    else:
        items = list(ddl)
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise WorkflowError(f"schema {ddl!r} repeats a column name")
    return tuple((str(n), str(t).lower().replace(" ", "")) for n, t in items)


@dataclass(frozen=True)
class Relation:
    """A named relation schema with an optional key (used for readable tokens, e.g. ``Cars:C2``)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...] = ()
    #: columns its base tuples keep beside the key (for a security level, a probability, …)
    keep: tuple[str, ...] = ()

    @property
    def token_columns(self) -> tuple[str, ...]:
        """The columns a base tuple of this relation keeps: the key and ``keep``, or all without a key.

        >>> Relation("Cars", (("CarId", "string"), ("Model", "string"), ("Level", "string")), ("CarId",), ("Level",)).token_columns
        ('CarId', 'Level')
        """
        if not self.key:
            return self.column_names
        return self.key + tuple(k for k in dict.fromkeys(self.keep) if k not in self.key)

    @property
    def ddl(self) -> str:
        return ", ".join(f"`{n}` {t}" for n, t in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.columns)

    def check(self, module: str, found: list[tuple[str, str]]) -> None:
        """Raise :class:`SchemaError` unless ``found`` (name, type) pairs match this schema."""
        expected = [(n, t) for n, t in self.columns]
        got = [(n, t.lower().replace(" ", "")) for n, t in found]
        if expected != got:
            raise SchemaError(
                f"module {module!r}, relation {self.name!r}: expected columns "
                f"{', '.join(f'{n} {t}' for n, t in expected)}; found {', '.join(f'{n} {t}' for n, t in got) or 'none'}"
            )


@dataclass(frozen=True)
class Module:
    """A module: ``(S_in, S_state, S_out, Q_state, Q_out)`` with Q given as one function.

    Parameters
    ----------
    name
        Unique module name (also the label of its invocation nodes).
    inputs, state, outputs
        Relation name → schema (DDL string such as ``"CarId string, Model string"``).
    logic
        ``logic(**inputs, **state) -> {relation: frame}`` returning every output relation and any
        state relation it replaces (state relations it does not return stay as they were).
    keys
        Relation name → key columns, for readable tokens of state and input tuples (``Cars:C2``).
        A key must identify each row: with provenance on (eager or deferred), a workflow input
        or initial state relation whose key has a null or a repeated value stops the run before
        anything is committed, naming the value. Without a key, tokens show every column and
        repeated rows are numbered.
    keep
        Relation name → columns its base tuples keep beside the key (a relation without a key
        keeps them all), for queries that read them: ``evaluate … given tuple Cars.Level``.
    checks
        Integrity checks (:class:`lipspark.workflow.Check`) on the outputs and state relations
        the module writes, evaluated by every execution (docs/debugging.md).
    """

    name: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    outputs: Mapping[str, Any] = field(default_factory=dict)
    logic: Callable[..., Mapping[str, Any]] | None = None
    keys: Mapping[str, Any] = field(default_factory=dict)
    keep: Mapping[str, Any] = field(default_factory=dict)
    checks: Sequence["Check"] = ()

    def __post_init__(self) -> None:
        check_name("module name", self.name)
        if self.logic is None or not callable(self.logic):
            raise WorkflowError(f"module {self.name!r} needs a logic function")
        rels: dict[str, Relation] = {}
        for group in ("inputs", "state", "outputs"):
            for rname, ddl in getattr(self, group).items():
                check_name(f"module {self.name!r}: relation name", rname)
                if rname in rels:
                    raise WorkflowError(f"module {self.name!r}: relation {rname!r} appears in more than one of inputs/state/outputs (they must be disjoint)")
                key = tuple(self.keys.get(rname, ()))
                kept = self.keep.get(rname, ())
                rel = Relation(rname, parse_schema(ddl), key, (kept,) if isinstance(kept, str) else tuple(kept))
                missing = [k for k in key if k not in rel.column_names]
                if missing:
                    raise WorkflowError(f"module {self.name!r}, relation {rname!r}: key columns {missing} are not columns")
                missing = [k for k in rel.keep if k not in rel.column_names]
                if missing:
                    raise WorkflowError(f"module {self.name!r}, relation {rname!r}: columns to keep {missing} are not columns "
                                        f"(its columns: {', '.join(rel.column_names)})")
                rels[rname] = rel
        unknown = [k for k in self.keys if k not in rels]
        if unknown:
            raise WorkflowError(f"module {self.name!r}: keys given for unknown relations {unknown}")
        unknown = [k for k in self.keep if k not in rels]
        if unknown:
            raise WorkflowError(f"module {self.name!r}: columns to keep given for unknown relations {unknown}")
        object.__setattr__(self, "_relations", rels)
        object.__setattr__(self, "checks", tuple(self.checks))
        check_checks(f"module {self.name!r}", self.checks, [*self.outputs, *self.state])

    def checks_on(self, relation: str) -> tuple["Check", ...]:
        """The checks the module declares on ``relation``."""
        return tuple(c for c in self.checks if c.relation == relation)

    def relation(self, name: str) -> Relation:
        return self._relations[name]  # type: ignore[attr-defined]

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(self.inputs)

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(self.state)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(self.outputs)


def check_checks(owner: str, checks: Sequence[Any], written: Sequence[str]) -> None:
    """Refuse checks that are not :class:`~lipspark.workflow.Check`, that name a relation ``owner``
    does not write, or two checks of one name on one relation."""
    from lipspark.workflow.checks import Check

    seen: set[tuple[str, str]] = set()
    for c in checks:
        if not isinstance(c, Check):
            raise WorkflowError(f"{owner}: checks must be lipspark.workflow.Check objects, got {type(c).__name__}")
        if c.relation not in written:
            raise WorkflowError(f"{owner}: check {c.name!r} is on {c.relation!r}, which it does not write "
                                f"(checks go on outputs and state: {', '.join(written) or 'none'})")
        if (c.relation, c.name) in seen:
            raise WorkflowError(f"{owner}: two checks on {c.relation} are named {c.name!r}; give each its own name")
        seen.add((c.relation, c.name))
