"""Segment numbers of a workflow store, fixed per invocation by the workflow's declarations.

Node ids contain segment numbers (:mod:`lipspark.vocabulary.ids`), so an invocation's ids are
reproducible by a replay of that invocation alone only if its numbers depend on nothing else.
They do not depend on what earlier invocations ran:

* the *coarse* segments of an invocation — its invocation node, the tokens of the workflow
  inputs it is given, one segment per relation it reads or writes and one per column of each
  (for v-nodes of values crossing the boundary) — are reserved in one block whose size follows
  from its module's declaration, blocks laid out in workflow order, execution after execution;
* its *fine* segments (each rewritten operation of module code) are numbered in the
  invocation's own range, :func:`~lipspark.vocabulary.ids.fine_segment` of its ordinal.

>>> from lipspark.workflow.module import Module
>>> m = Module("m", inputs={"R": "a int, b int"}, state={"S": "a int"}, outputs={"O": "a int"}, logic=lambda R, S: {"O": R})
>>> block = Block(m, first=10, ordinal=3, input_node=False)
>>> block.invocation, block.read("R"), block.read_value("R", "b"), block.read("S"), block.write("O"), block.write("S"), block.end
(10, 11, 13, 14, 16, 18, 20)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lipspark.errors import WorkflowError
from lipspark.workflow.module import Module

__all__ = ["Block", "block_size", "blocks", "initial_segments"]


def block_size(module: Module, input_node: bool) -> int:
    """How many coarse segments one invocation of ``module`` reserves."""
    def cols(names: tuple[str, ...] | list[str]) -> int:
        return sum(1 + len(module.relation(r).columns) for r in names)

    inputs = list(module.inputs)
    return 1 + (len(inputs) if input_node else 0) + cols(inputs) + 2 * cols(list(module.state)) + cols(list(module.outputs))


@dataclass(frozen=True)
class Block:
    """The coarse segments of one invocation: ``first`` is its invocation segment, ``ordinal``
    its place among the store's invocations (it numbers the fine segments)."""

    module: Module
    first: int
    ordinal: int
    input_node: bool

    @property
    def end(self) -> int:
        """The first segment after the block."""
        return self.first + block_size(self.module, self.input_node)

    @property
    def invocation(self) -> int:
        return self.first

    def _slots(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        at = self.first + 1
        m = self.module
        for role, names, token in (("read", list(m.inputs), self.input_node), ("read", list(m.state), False),
                                   ("write", list(m.outputs), False), ("write", list(m.state), False)):
            for r in names:
                if token:
                    out[("token", r)] = at
                    at += 1
                out[(role, r)] = at
                at += 1
                for c, _ in m.relation(r).columns:
                    out[(f"{role}:{c.lower()}", r)] = at
                    at += 1
        return out

    def _get(self, key: tuple[str, str], what: str) -> int:
        slots = self._slots()
        if key not in slots:
            raise WorkflowError(f"module {self.module.name!r} has no {what}; its declaration names inputs {list(self.module.inputs)}, "
                                f"state {list(self.module.state)} and outputs {list(self.module.outputs)}")
        return slots[key]

    def token(self, relation: str) -> int:
        """The segment of the tokens of a workflow input given to this invocation."""
        return self._get(("token", relation), f"workflow input {relation!r}")

    def read(self, relation: str) -> int:
        """The segment of the input (or state) nodes of a relation the invocation reads."""
        return self._get(("read", relation), f"input or state {relation!r}")

    def read_value(self, relation: str, column: str) -> int:
        """The segment of the v-nodes of column ``column`` of a relation the invocation reads."""
        return self._get((f"read:{column.lower()}", relation), f"column {column!r} in relation {relation!r}")

    def write(self, relation: str) -> int:
        """The segment of the output (or new state) nodes of a relation the invocation writes."""
        return self._get(("write", relation), f"output or state {relation!r}")

    def write_value(self, relation: str, column: str) -> int:
        """The segment of the v-nodes of column ``column`` of a relation the invocation writes."""
        return self._get((f"write:{column.lower()}", relation), f"column {column!r} in relation {relation!r}")


def initial_segments(modules: "dict[str, Module]", first: int) -> dict[tuple[str, str], int]:
    """The token segment of each module's initial state relation, numbered from ``first`` in
    declaration order (modules, then their state): the same in eager and deferred stores.

    >>> m = Module("m", inputs={"R": "a int"}, state={"S": "a int", "T": "b int"}, outputs={"O": "a int"}, logic=lambda R, S, T: {"O": R})
    >>> initial_segments({"m": m}, 1)
    {('m', 'S'): 1, ('m', 'T'): 2}
    """
    out: dict[tuple[str, str], int] = {}
    for mname, module in modules.items():
        for rname in module.state:
            out[(mname, rname)] = first + len(out)
    return out


def blocks(workflow: Any, n: int, first: int) -> "dict[str, Block]":
    """The coarse segments of each invocation of execution ``n`` (a :class:`Block` per node),
    laid out in the workflow's topological order from segment ``first`` on."""
    order = workflow.topological_order()
    out: dict[str, Block] = {}
    at = first
    for i, node_id in enumerate(order):
        node = workflow.nodes[node_id]
        out[node_id] = Block(workflow.modules[node.module], at, (n - 1) * len(order) + i, node.input)
        at = out[node_id].end
    return out
