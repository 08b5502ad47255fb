"""What one execution did, module by module: the table ``lipspark run`` ends with.

Row counts come from the Parquet footers of the relations the execution stored (no Spark job);
graph nodes from the query-ready index's block of that execution; times from the run. An output
that came out empty is explained by walking back through the workflow to the first invocation
that received rows and returned none, or to a workflow input that was empty.

>>> rows = [InvocationReport("request", "request", 1, 1, 0, 12, 0.4), InvocationReport("car", "car", 0, 0, 0, 3, 0.1)]
>>> print(module_table(rows))
node     rows in  rows out  state rows  graph nodes  time
-------  -------  --------  ----------  -----------  -----
request  1        1         0           12           0.40s
car      0        0         0           3            0.10s
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["InvocationReport", "invocation_reports", "module_table", "relation_rows", "why_empty"]


@dataclass(frozen=True)
class InvocationReport:
    """One invocation of an execution: its workflow node and module, the rows it read (inputs),
    returned (outputs) and its module's state rows after it, the graph nodes it added and its time."""

    node: str
    module: str
    rows_in: int
    rows_out: int
    state_rows: int
    graph_nodes: int | None
    seconds: float | None


def relation_rows(store: Any, desc: Mapping[str, Any] | None) -> int:
    """Rows of a stored relation, from its files' footers."""
    import pyarrow.parquet as pq

    if not desc:
        return 0
    return sum(pq.read_metadata(store.resolve(f["path"])).num_rows for f in desc.get("files", []))


def _inputs(workflow: Any, record: Mapping[str, Any], node: str) -> list[tuple[str, str | None, Mapping[str, Any] | None]]:
    """(relation, producing node or None for a workflow input, descriptor) of each input of ``node``."""
    if workflow.nodes[node].input:
        return [(r, None, d) for r, d in record["inputs"].get(node, {}).items()]
    return [(r, e.src, record["outputs"].get(e.src, {}).get(r)) for e in workflow.inputs_of(node) for r in e.relations]


def invocation_reports(store: Any, workflow: Any, record: Mapping[str, Any], seconds: Mapping[str, float],
                       graph_nodes: Mapping[str, int] | None) -> list[InvocationReport]:
    """The invocations of the execution ``record`` (as ``store.json`` keeps it), in the order they ran."""
    out = []
    for node in workflow.topological_order():
        module = workflow.nodes[node].module
        out.append(InvocationReport(
            node, module,
            sum(relation_rows(store, d) for _, _, d in _inputs(workflow, record, node)),
            sum(relation_rows(store, d) for d in record["outputs"].get(node, {}).values()),
            sum(relation_rows(store, d) for d in record["state"].get(module, {}).values()),
            None if graph_nodes is None else graph_nodes.get(node, 0),
            seconds.get(node)))
    return out


def module_table(rows: Sequence[InvocationReport]) -> str:
    """The invocations as an aligned table (graph nodes only when there is a graph)."""
    graph = any(r.graph_nodes is not None for r in rows)
    head = ["node", "rows in", "rows out", "state rows", *(["graph nodes"] if graph else []), "time"]
    cells = [[r.node, str(r.rows_in), str(r.rows_out), str(r.state_rows), *([str(r.graph_nodes)] if graph else []),
              "" if r.seconds is None else f"{r.seconds:.2f}s"] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def why_empty(store: Any, workflow: Any, record: Mapping[str, Any], node: str, relation: str) -> str:
    """Why output ``relation`` of ``node`` has no rows: walking back from it, every invocation that
    got no rows at all, down to the first that got rows and returned none (or the empty workflow
    input everything after it inherits)."""
    steps: list[str] = []
    seen: set[str] = set()
    while node not in seen:
        seen.add(node)
        inputs = _inputs(workflow, record, node)
        empty = [(r, src) for r, src, d in inputs if relation_rows(store, d) == 0]
        if not inputs or len(empty) < len(inputs):  # it had rows to work with, and returned none
            got = sum(relation_rows(store, d) for _, _, d in inputs)
            state = sum(relation_rows(store, d) for d in record["state"].get(workflow.nodes[node].module, {}).values())
            steps.append(f"{node} returned no {relation} rows from {got} input row(s)" + (f" and {state} state row(s)" if state else ""))
            break
        r, src = empty[0]
        if src is None:
            steps.append(f"{node}'s workflow input {r} was empty")
            break
        steps.append(f"{node} got no {r} rows from {src}")
        node, relation = src, r
    return "; ".join(steps)
