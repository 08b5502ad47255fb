"""Token labels of base tuples, and the rule that a declared key identifies each row.

A base tuple's token is labelled ``Relation:v1,v2,…`` — its key values, or all its values when
the relation has no key — with ``#n`` after the n-th tuple (n ≥ 2) whose values repeat an earlier
one's, in row order. The labels of one relation are distinct, and a label names one tuple:

* null is ``null``; a value is written bare when that cannot be mistaken for anything else
  (``C1``, ``Audi A4``, ``nan``, ``None``, ``12:30``, ``2``), and as a JSON string otherwise:
  text containing ``,`` ``#`` ``"`` ``\\`` or a control character, with a space at either end,
  empty, or spelled ``null`` (``"a,b"``, ``"null"``, ``""``);
* so two tuples never share a label: ``(None, 3)`` is ``R:null,3``, ``('nan', 3)`` is ``R:nan,3``,
  ``('a,b', 'c')`` is ``R:"a,b",c`` and ``('a', 'b,c')`` is ``R:a,"b,c"``.

>>> token_labels("Cars", [("C1",), ("C2",)])
['Cars:C1', 'Cars:C2']
>>> token_labels("R", [(None, 3), ("nan", 3), ("null", 3), ("x", 1), ("x", 1)])
['R:null,3', 'R:nan,3', 'R:"null",3', 'R:x,1', 'R:x,1#2']
>>> token_labels("R", [("a,b", "c"), ("a", "b,c"), ("C#2", 1.0)])
['R:"a,b",c', 'R:a,"b,c"', 'R:"C#2",1']

A declared key must identify each row (no nulls, no value twice); :func:`key_violation` says
which value breaks it:

>>> print(key_violation("relation 'Cars'", ["CarId"], ("C1",), 2, "deduplicate the rows"))
relation 'Cars': key (CarId) must identify each row, but CarId = 'C1' is on 2 rows; deduplicate the rows
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

__all__ = ["NULL", "render_value", "token_labels", "key_violation"]

#: How a null value is written in a label.
NULL = "null"

#: Text written bare: no separator (``,``), duplicate mark (``#``), quote, backslash or control
#: character, and no space at either end.
_BARE = re.compile(r"[^\s,#\"\\\x00-\x1f\x7f-\x9f](?:[^,#\"\\\x00-\x1f\x7f-\x9f]*[^\s,#\"\\\x00-\x1f\x7f-\x9f])?")


def render_value(v: Any) -> str:
    """One value as a label writes it (see the module's rule).

    >>> [render_value(v) for v in (None, "C1", 2.0, 2.5, float("nan"), "", "null", " x", 'say "hi"')]
    ['null', 'C1', '2', '2.5', 'nan', '""', '"null"', '" x"', '"say \\\\"hi\\\\""']
    """
    if v is None:
        return NULL
    if isinstance(v, float) and v.is_integer():
        text = str(int(v)) if abs(v) < 1e15 else repr(v)
    else:
        text = str(v)
    if text == NULL or not _BARE.fullmatch(text):
        return json.dumps(text, ensure_ascii=False)
    return text


def token_labels(relation: str, rows: Iterable[Sequence[Any]]) -> list[str]:
    """The labels of a relation's tuples, given their label values in row order (tuples whose
    values repeat an earlier tuple's are numbered ``#2``, ``#3``, …)."""
    labels = [f"{relation}:{','.join(render_value(x) for x in row)}" for row in rows]
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        n = seen.get(label, 0) + 1
        seen[label] = n
        if n > 1:
            labels[i] = f"{label}#{n}"
    return labels


def _shown(v: Any, limit: int = 60) -> str:
    text = "null" if v is None else repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key_violation(what: str, key: Sequence[str], value: Sequence[Any], count: int, fix: str) -> str:
    """One line: ``what``'s key does not identify each row — ``value`` (the key's values on the
    offending rows, None for null) is on ``count`` rows (a key with a null is refused even on one
    row) — then ``fix``.

    >>> print(key_violation("relation 'R'", ["a", "b"], ("x", None), 1, "drop those rows"))
    relation 'R': key (a, b) must identify each row, but (a, b) = ('x', null) has a null, on 1 row; drop those rows
    """
    rows = f"{count} row{'s' if count != 1 else ''}"
    if len(key) == 1:
        found = f"{key[0]} is null on {rows}" if value[0] is None else f"{key[0]} = {_shown(value[0])} is on {rows}"
    else:
        shown = f"({', '.join(key)}) = ({', '.join(_shown(v) for v in value)})"
        found = f"{shown} has a null, on {rows}" if any(v is None for v in value) else f"{shown} is on {rows}"
    return f"{what}: key ({', '.join(key)}) must identify each row, but {found}; {fix}"
