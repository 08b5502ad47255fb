"""The provenance graph in memory: p-nodes, v-nodes and edges, and the polynomials they encode.

>>> import pandas as pd
>>> nodes = pd.DataFrame({"id": [1, 2, 3], "kind": ["p", "p", "p"], "label": ["R:a", "R:b", "+"],
...                       "seg": 1, "value": None, "relation": ["R", "R", None], "tuple": None})
>>> edges = pd.DataFrame({"src": [1, 2], "dst": [3, 3]})
>>> str(ProvenanceGraph(nodes, edges).polynomial(3))
'R:a + R:b'
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import pandas as pd

from lipspark.errors import LipsparkError
from lipspark.graph.expand import expand_segments
from lipspark.semiring import AggValue, Token, black_box, delta, plus, times

__all__ = ["ProvenanceGraph", "AGGREGATE_LABELS"]

AGGREGATE_LABELS = frozenset({"Count", "Sum", "Min", "Max", "Avg"})


class ProvenanceGraph:
    """A provenance graph held in memory (for the store and index see :mod:`lipspark.graph`).

    Parameters
    ----------
    nodes
        One row per node: ``id``, ``kind`` (``p``/``v``), ``label``, ``seg``, ``value``,
        ``relation``, ``tuple``.
    edges
        One row per edge ``src`` → ``dst`` (a multiset).
    """

    def __init__(self, nodes: pd.DataFrame, edges: pd.DataFrame) -> None:
        self.nodes = nodes.set_index("id", drop=False)
        self.edges = edges
        self._children: dict[int, list[int]] | None = None

    @classmethod
    def from_segments(cls, segments: list[tuple[dict[str, Any], dict[str, Any]]], root: str | None = None) -> "ProvenanceGraph":
        nodes, edges = expand_segments(segments, root)
        return cls(nodes, edges)

    @classmethod
    def load(cls, path: str) -> "ProvenanceGraph":
        """Load a workflow store's graph, or a graph written by :meth:`Tracker.write`."""
        from lipspark.graph.load import load_graph

        return load_graph(path)

    # ------------------------------------------------------------------ structure
    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def num_edges(self) -> int:
        return len(self.edges)

    def children(self, node: int) -> list[int]:
        """Nodes with an edge into ``node`` (with multiplicity), in a deterministic order."""
        if self._children is None:
            ch: dict[int, list[int]] = defaultdict(list)
            for s, d in zip(self.edges["src"].tolist(), self.edges["dst"].tolist()):
                ch[d].append(s)
            for v in ch.values():
                v.sort()
            self._children = dict(ch)
        return self._children.get(int(node), [])

    def node(self, node: int) -> dict[str, Any]:
        """The node's attributes as a dict."""
        try:
            return self.nodes.loc[int(node)].to_dict()
        except KeyError as err:
            raise LipsparkError(f"no node with id {node} in this graph") from err

    def find(self, label: str | None = None, kind: str | None = None) -> list[int]:
        """Ids of nodes with the given label and/or kind."""
        sel = self.nodes
        if label is not None:
            sel = sel[sel["label"] == label]
        if kind is not None:
            sel = sel[sel["kind"] == kind]
        return sorted(int(i) for i in sel["id"])

    def token_id(self, label: str) -> int:
        """Id of the base tuple whose token is ``label`` (e.g. ``"Cars:C2"``)."""
        ids = self.find(label=label, kind="p")
        if len(ids) != 1:
            raise LipsparkError(f"expected one token {label!r}, found {len(ids)}")
        return ids[0]

    # ------------------------------------------------------------------ polynomials
    def polynomial(self, ref: Any) -> Any:
        """The provenance expression of a node id, or of a row's annotation (· of its factors)."""
        factors: Iterable[int] = getattr(ref, "factors", None) or ([ref] if isinstance(ref, int) else list(ref))
        return times(*[self._expr(int(f)) for f in factors])

    def value(self, ref: Any, column: str | None = None) -> Any:
        """The expression of a v-node (an :class:`~lipspark.semiring.AggValue` for aggregates).

        ``ref`` is a node id, or a row's annotation together with the column name.
        """
        node = ref.values[column] if column is not None else int(ref)
        return self._expr(int(node))

    def _expr(self, root: int) -> Any:
        memo: dict[int, Any] = {}
        stack = [root]
        while stack:
            n = stack[-1]
            if n in memo:
                stack.pop()
                continue
            kids = self.children(n)
            todo = [c for c in kids if c not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            memo[n] = self._build(n, [memo[c] for c in kids], kids)
        return memo[root]

    def _build(self, n: int, exprs: list[Any], kids: list[int]) -> Any:
        row = self.nodes.loc[n]
        label, kind = row["label"], row["kind"]
        if kind == "p":
            if row["relation"] is not None and not kids:
                return Token(label)
            if label in ("·", "+", "δ"):
                exprs = sorted(exprs, key=str)  # canonical display; · and + commute
            if label == "·":
                return times(*exprs)
            if label == "+":
                return plus(*exprs)
            if label == "δ":
                return delta(plus(*exprs))
            return black_box(label, *exprs)
        if label == "⊗":
            return ("⊗", exprs, kids)
        if label in AGGREGATE_LABELS:
            terms = []
            for t in exprs:
                _, parts, tk = t
                pk = [e for e, c in zip(parts, tk) if self.nodes.loc[c]["kind"] == "p"]
                vk = [c for c in tk if self.nodes.loc[c]["kind"] == "v"]
                terms.append((times(*pk), self.nodes.loc[vk[0]]["value"] if vk else None))
            return AggValue(label, tuple(terms))
        if not kids:
            return row["value"]
        return black_box(label, *[e for e, c in zip(exprs, kids) if self.nodes.loc[c]["kind"] == "p"])
