"""Query results as text a person reads: nodes named by what they are, not by their ids.

A node is named by its role and its data — ``output Bids1(B1, P1, 1, Civic, 19500.0)``,
``Cars:C2`` (a base tuple, by its token label), ``invocation dealer1``, ``δ (distinct/group)``,
``calcBid (black box)``, ``Amount of output Bids1(…)`` — beside its module and execution; the
numeric id is shown only when asked for (``--ids``; JSON always has it). Empty columns are left
out, requested nodes come first, changed values are grouped by the tuple they belong to and a
lineage lists one token per line. Control characters in values are escaped, so a value cannot
break a table's lines or reorder what a terminal shows.

>>> node_name({"op": "output", "relation": "Bids1", "tuple": {"BidId": "B1", "Amount": 19500.0}})
'output Bids1(B1, 19500.0)'
>>> node_name({"op": "token", "label": "Cars:C2"})
'Cars:C2'
>>> node_name({"op": "output", "relation": "Bids1", "column": "Amount", "tuple": {"BidId": "B1", "Amount": 19500.0}})
'Amount of output Bids1(B1, 19500.0)'
>>> print(table([{"node": "Cars:C2", "module": "dealer1", "value": None}], ["node", "module", "value"]))
node     module
-------  -------
Cars:C2  dealer1
"""
from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from lipspark.vocabulary import Op
from lipspark.vocabulary.ops import BOOLEAN_OPS

__all__ = ["node_name", "table", "printable", "cell", "token_lines", "reading_order", "located", "id_prefix", "node_table",
           "shown_value", "changed_by_tuple", "TEXT_LIMIT", "ROW_LIMIT"]

#: longest cell shown (longer ones are cut, saying how long they are)
TEXT_LIMIT = 2000
#: most rows of a table shown (``--all`` shows every row)
ROW_LIMIT = 50
#: the widest tuple shown inside a node's name
_TUPLE_LIMIT = 72

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

#: how each operator's node is named when it has no data of its own
_OPERATORS = {
    "times": "· (joint use)", "plus": "+ (alternative use)", "delta": "δ (distinct/group)",
    "zoom": "zoomed-out invocation", "tensor": "⊗ (value in an aggregate)", "constant": "constant",
    "monus": "⊖ (a row kept out by its partners)",
}
_ROLES = {"input": "input", "state": "state", "output": "output"}


def printable(s: str) -> str:
    r"""``s`` with control and format characters (newlines, right-to-left overrides…) escaped.

    >>> printable("a\nb\u202ec")
    'a\\nb\\u202ec'
    """
    return "".join(_ESCAPES.get(ch, f"\\u{ord(ch):04x}") if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in s)


def _values(t: dict[str, Any]) -> str:
    """A tuple's values in order, compact: ``B1, P1, 19500.0`` (cut when long)."""
    s = ", ".join("null" if v is None else str(v) for v in t.values())
    return s if len(s) <= _TUPLE_LIMIT else s[:_TUPLE_LIMIT - 1] + "…"


def node_name(row: dict[str, Any]) -> str:
    """What a node is, from its attributes (a row of :func:`lipspark.query.engine.node_rows`)."""
    op = row.get("op") or ""
    label = row.get("label") or ""
    t = row.get("tuple")
    if op == "token":
        return label
    if op == "invocation":
        return f"invocation {row.get('module') or label}"
    if op in _ROLES:
        what = f"{_ROLES[op]} {row.get('relation') or ''}".rstrip()
        if isinstance(t, dict) and t:
            what += f"({_values(t)})"
        return f"{row['column']} of {what}" if row.get("column") else what
    if op == "black_box":
        return f"{label} (black box)"
    if op == "condition":
        return f"{label} (condition over values)"
    if op in ("count", "sum", "min", "max", "avg"):
        return f"{label} (aggregate)"
    return _OPERATORS.get(op, label or op)


def cell(v: Any) -> str:
    """One table cell: empty for null, a dict as ``k=v, …``, long text cut."""
    if v is None:
        return ""
    if isinstance(v, dict):
        return printable(", ".join(f"{k}={v2}" for k, v2 in v.items()))
    s = printable(str(v))
    return s if len(s) <= TEXT_LIMIT else s[:TEXT_LIMIT] + f"… ({len(s)} characters; --format json shows all)"


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], *, limit: int | None = ROW_LIMIT) -> str:
    """Rows as an aligned table of ``columns``; a column empty in every shown row is left out.
    At most ``limit`` rows (None: all), then how many more there are and how to see them."""
    if not rows:
        return "(none)"
    shown = rows if limit is None else rows[:limit]
    cells = [[cell(r.get(c)) for c in columns] for r in shown]
    keep = [i for i in range(len(columns)) if any(row[i] for row in cells)] or [0]
    names = [columns[i] for i in keep]
    cells = [[row[i] for i in keep] for row in cells]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(names)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(names, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in cells]
    if len(rows) > len(shown):
        lines.append(f"… and {len(rows) - len(shown)} more (--all shows every row, --format json lists all)")
    return "\n".join(lines)


def token_lines(tokens: Sequence[str], first: Sequence[str] = (), *, limit: int | None = ROW_LIMIT) -> list[str]:
    """A lineage as lines, one token each: the tokens in ``first`` (those the query names), then
    the others by relation, the relations with the fewest tokens first (a request before the
    cars of a lot), then how many more there are.

    >>> token_lines(["Cars:C1", "Cars:C2", "Requests:B1"], limit=2)
    ['Requests:B1', 'Cars:C1', '… and 1 more (--all shows every token, --format json lists all)']
    """
    firsts = [t for t in first if t in set(tokens)]
    rest = [t for t in tokens if t not in set(firsts)]
    size: dict[str, int] = {}
    for t in rest:
        size[t.split(":", 1)[0]] = size.get(t.split(":", 1)[0], 0) + 1
    ordered = firsts + sorted(rest, key=lambda t: (size[t.split(":", 1)[0]], t.split(":", 1)[0], t))
    shown = ordered if limit is None else ordered[:limit]
    lines = [printable(t) for t in shown]
    if len(ordered) > len(shown):
        lines.append(f"… and {len(ordered) - len(shown)} more (--all shows every token, --format json lists all)")
    return lines


#: nodes that only combine others (listed after the tuples, invocations and values they combine)
_OPERATOR_OPS = frozenset({"times", "plus", "delta", "tensor", "constant"})


def reading_order(row: dict[str, Any], first: set[int]) -> tuple[Any, ...]:
    """Where a node goes in a table for people: what was asked for first; then by execution
    (initial state first); within one, tuples, invocations and boundary nodes in the order the
    workflow made them (their ids), then values inside modules, then the operators between them."""
    op = row.get("op")
    group = 2 if op in _OPERATOR_OPS else 1 if op in ("black_box", "count", "sum", "min", "max", "avg", "zoom") else 0
    ex = row.get("execution")
    return (row.get("id") not in first, -1 if ex is None else ex, group)


def located(row: dict[str, Any]) -> str:
    """A node's name with its module and execution: ``output Bids1(…) in dealer1, execution 1``."""
    at = [f"in {row['module']}" if row.get("module") else "", f"execution {row['execution']}" if row.get("execution") is not None else ""]
    return row["name"] + (" " + ", ".join(a for a in at if a) if any(at) else "")


def id_prefix(row: dict[str, Any], ids: bool) -> str:
    return f"[{row.get('id', row.get('node'))}] " if ids else ""


def node_table(rows: list[dict[str, Any]], columns: list[str], ids: bool, limit: int | None) -> str:
    """``rows`` as text: a ``name`` column headed ``node``, the id first when ``ids``."""
    shown = [{**r, "id": r.get("id", r.get("node")), "node": r.get("name", r.get("node"))} for r in rows]
    cols = (["id"] if ids else []) + ["node" if c == "name" else c for c in columns]
    return table(shown, cols, limit=limit)


def shown_value(v: Any) -> str:
    """A value before or after a what-if: ``?`` when the graph cannot tell it."""
    return "?" if v == "unknown" else "null" if v is None else str(v)


#: the operators of formulas and of a filter's tests (:mod:`lipspark.vocabulary.ops`) whose unknown
#: values a what-if counts together, not one line per value before
_ARITHMETIC = frozenset(o.name.lower() for o in Op if o.is_arithmetic and o not in BOOLEAN_OPS)


def changed_by_tuple(values: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """A what-if's changed values for people: one row per output tuple (``Amount 19500.0 → ?``)
    and a line counting the others — the same values carried into inputs and state, and values
    inside modules (black boxes, aggregates), which ``--format json`` lists; first, the conditions
    over values (filters, joins, groupings) that read a changed value, whose rows may differ
    from a re-run's. A graph without module outputs (one annotated computation) lists the
    values inside instead."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    inside: dict[str, int] = {}
    inside_rows: list[dict[str, Any]] = []
    conditions: list[str] = []
    carried = 0
    for v in values:
        change = f"{shown_value(v['before'])} → {shown_value(v['after'])}"
        if "graph" in v and shown_value(v["graph"]) != shown_value(v["after"]):  # recomputed: the graph's own answer beside it
            change += f" (graph: {shown_value(v['graph'])})"
        if v["op"] == "output" and v["column"]:
            t = v["tuple"] or {}
            key = (v["module"], v["execution"], v["relation"], json.dumps(t, sort_keys=True, default=str))
            g = groups.setdefault(key, {"tuple": node_name({"op": "output", "relation": v["relation"], "tuple": t}),
                                        "module": v["module"], "execution": v["execution"], "change": []})
            g["change"].append(f"{v['column']} {change}")
        elif v["op"] in ("input", "state", "times"):  # a value-node "·" is a state value as its writer leaves it
            carried += 1
        elif v["op"] == "condition" or v.get("condition"):  # a CONDITION node, or a filter's test it cannot decide
            where = f" in {v['module']}" if v.get("module") else ""
            conditions.append(f"{v['label']}{where}")
        else:
            what = f"{v['label'] or v['op']} {change}"
            if v["op"] in _ARITHMETIC and shown_value(v["after"]) == "?":  # the steps of a formula or a filter's test: one line
                what = f"{v['label'] or v['op']} → ?"
            inside[what] = inside.get(what, 0) + 1
            inside_rows.append({"tuple": v["name"], "module": v["module"], "execution": v["execution"], "change": change})
    rows = [{**g, "change": "; ".join(g["change"])} for g in groups.values()]
    if not rows:  # no module outputs: the values inside are the answer
        rows, inside = inside_rows, {}
    rows.sort(key=lambda g: (g["execution"] if g["execution"] is not None else -1, str(g["module"]), g["tuple"]))
    also = []
    if carried:
        also.append(f"{carried} value(s) of inputs and state that carry them")
    if inside:
        kinds = sorted(inside.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{k}" + (f" (×{n})" if n > 1 else "") for k, n in kinds[:6])
        also.append(f"inside modules: {shown}" + (f" and {len(kinds) - 6} other change(s)" if len(kinds) > 6 else ""))
    text = ("also changed: " + "; ".join(also) + " (--format json lists every changed value)") if also else ""
    if conditions:
        names = sorted(set(conditions))
        text = (f"not exact: {len(names)} condition(s) read a changed value, so the rows they kept or dropped may differ "
                f"from a re-run's: " + "; ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
                + ("\n" + text if text else ""))
    return rows, text
