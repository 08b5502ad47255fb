"""Workflows (Lipstick Definition 2.2): a DAG of module invocations connected by relations.

>>> from lipspark.workflow.module import Module
>>> src = Module("src", inputs={"A": "x int"}, outputs={"B": "x int"}, logic=lambda A: {"B": A})
>>> dst = Module("dst", inputs={"B": "x int"}, outputs={"C": "x int"}, logic=lambda B: {"C": B})
>>> wf = Workflow("demo", [src, dst])
>>> wf.node("s", "src", input=True).node("d", "dst", output=True).edge("s", "d", ["B"])
Workflow('demo', nodes=2, edges=1)
>>> wf.validate().topological_order()
['s', 'd']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from lipspark.errors import WorkflowError
from lipspark.workflow.module import Module, check_checks, check_name

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.workflow.checks import Check

__all__ = ["Workflow", "Node", "Edge"]


@dataclass(frozen=True)
class Node:
    """A workflow node: one invocation per execution of the module it is labelled with."""

    id: str
    module: str
    input: bool = False
    output: bool = False


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    relations: tuple[str, ...]


class Workflow:
    """``W = (V, E, L_V, L_E, In, Out)``; build with :meth:`node` and :meth:`edge`, then :meth:`validate`."""

    def __init__(self, name: str, modules: Iterable[Module] = ()) -> None:
        check_name("workflow name", name, dash=True)
        self.name = name
        self.modules: dict[str, Module] = {}
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        #: node id → the integrity checks declared on that node alone (:meth:`check`)
        self.node_checks: dict[str, list["Check"]] = {}
        for m in modules:
            self.add_module(m)

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, nodes={len(self.nodes)}, edges={len(self.edges)})"

    def add_module(self, module: Module) -> "Workflow":
        if module.name in self.modules and self.modules[module.name] is not module:
            raise WorkflowError(f"two different modules are named {module.name!r}")
        self.modules[module.name] = module
        return self

    def node(self, node_id: str, module: str, *, input: bool = False, output: bool = False) -> "Workflow":
        check_name(f"workflow {self.name!r}: node id", node_id)
        if node_id in self.nodes:
            raise WorkflowError(f"workflow {self.name!r}: node {node_id!r} is defined twice")
        self.nodes[node_id] = Node(node_id, module, input, output)
        return self

    def check(self, node_id: str, *checks: "Check") -> "Workflow":
        """Declare integrity checks on relations the module of node ``node_id`` writes, for that
        node only (``Module(checks=...)`` declares them for every node running the module)."""
        if node_id not in self.nodes:
            raise WorkflowError(f"workflow {self.name!r}: no node {node_id!r} to check (nodes: {', '.join(self.nodes)})")
        module = self.modules.get(self.nodes[node_id].module)
        written = [*module.outputs, *module.state] if module is not None else []
        mine = self.node_checks.setdefault(node_id, [])
        check_checks(f"workflow {self.name!r}, node {node_id!r}", [*(module.checks if module else ()), *mine, *checks], written)
        mine.extend(checks)
        return self

    def checks_of(self, node_id: str, relation: str) -> tuple["Check", ...]:
        """Every check on ``relation`` as node ``node_id`` writes it: its module's and the node's own."""
        module = self.modules[self.nodes[node_id].module]
        return module.checks_on(relation) + tuple(c for c in self.node_checks.get(node_id, ()) if c.relation == relation)

    def edge(self, src: str, dst: str, relations: Sequence[str]) -> "Workflow":
        rels = (relations,) if isinstance(relations, str) else tuple(relations)
        if not rels:
            raise WorkflowError(f"edge {src} -> {dst} carries no relation")
        self.edges.append(Edge(src, dst, rels))
        return self

    # ------------------------------------------------------------------ validation
    def validate(self) -> "Workflow":
        """Check Definition 2.2; raise :class:`WorkflowError` naming the first problem found."""
        name = self.name
        if not self.nodes:
            raise WorkflowError(f"workflow {name!r} has no nodes")
        for n in self.nodes.values():
            if n.module not in self.modules:
                raise WorkflowError(f"workflow {name!r}: node {n.id!r} uses unknown module {n.module!r}; known: {sorted(self.modules)}")
        for e in self.edges:
            for end in (e.src, e.dst):
                if end not in self.nodes:
                    raise WorkflowError(f"workflow {name!r}: edge {e.src} -> {e.dst} names unknown node {end!r}")
            src_m, dst_m = self.modules[self.nodes[e.src].module], self.modules[self.nodes[e.dst].module]
            for r in e.relations:
                if r not in src_m.outputs:
                    raise WorkflowError(f"workflow {name!r}: edge {e.src} -> {e.dst} carries {r!r}, which is not an output of module {src_m.name!r} (outputs: {list(src_m.outputs)})")
                if r not in dst_m.inputs:
                    raise WorkflowError(f"workflow {name!r}: edge {e.src} -> {e.dst} carries {r!r}, which is not an input of module {dst_m.name!r} (inputs: {list(dst_m.inputs)})")
                if src_m.relation(r).columns != dst_m.relation(r).columns:
                    raise WorkflowError(f"workflow {name!r}: relation {r!r} on edge {e.src} -> {e.dst} has schema {src_m.relation(r).ddl} at the source but {dst_m.relation(r).ddl} at the destination")
        ins = [n for n in self.nodes.values() if n.input]
        outs = [n for n in self.nodes.values() if n.output]
        if not ins:
            raise WorkflowError(f"workflow {name!r} has no input node; mark one with node(..., input=True)")
        if not outs:
            raise WorkflowError(f"workflow {name!r} has no output node; mark one with node(..., output=True)")
        for n in self.nodes.values():
            incoming = [e for e in self.edges if e.dst == n.id]
            outgoing = [e for e in self.edges if e.src == n.id]
            if n.input and incoming:
                raise WorkflowError(f"workflow {name!r}: input node {n.id!r} has incoming edges from {[e.src for e in incoming]}")
            if n.output and outgoing:
                raise WorkflowError(f"workflow {name!r}: output node {n.id!r} has outgoing edges to {[e.dst for e in outgoing]}")
            seen: dict[str, str] = {}
            for e in incoming:
                for r in e.relations:
                    if r in seen:
                        raise WorkflowError(f"workflow {name!r}: node {n.id!r} receives relation {r!r} on two incoming edges (from {seen[r]!r} and {e.src!r}); relation names on incoming edges must be disjoint")
                    seen[r] = e.src
            # a module input no edge brings is an empty relation of its declared schema (Workflow.missing_inputs)
        self._check_acyclic()
        self._check_connected()
        return self

    def _check_acyclic(self) -> None:
        color = {n: 0 for n in self.nodes}
        succ = {n: [e.dst for e in self.edges if e.src == n] for n in self.nodes}
        for start in self.nodes:
            if color[start]:
                continue
            stack = [(start, iter(succ[start]))]
            path = [start]
            color[start] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[node] = 2
                    stack.pop()
                    path.pop()
                elif color[nxt] == 1:
                    cycle = path[path.index(nxt):] + [nxt]
                    raise WorkflowError(f"workflow {self.name!r} has a cycle: {' -> '.join(cycle)}; unfold bounded loops into a DAG")
                elif color[nxt] == 0:
                    color[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter(succ[nxt])))

    def _check_connected(self) -> None:
        adj: dict[str, set[str]] = {n: set() for n in self.nodes}
        for e in self.edges:
            adj[e.src].add(e.dst)
            adj[e.dst].add(e.src)
        start = next(iter(self.nodes))
        seen, todo = {start}, [start]
        while todo:
            for m in adj[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        if len(seen) != len(self.nodes):
            raise WorkflowError(f"workflow {self.name!r} is not connected: nodes {sorted(set(self.nodes) - seen)} are unreachable from {start!r}")

    def topological_order(self) -> list[str]:
        """A topological order; ties broken by the order nodes were added (deterministic)."""
        indeg = {n: 0 for n in self.nodes}
        for e in self.edges:
            indeg[e.dst] += 1
        order, ready = [], [n for n in self.nodes if indeg[n] == 0]
        rank = {n: i for i, n in enumerate(self.nodes)}
        while ready:
            ready.sort(key=rank.__getitem__)
            n = ready.pop(0)
            order.append(n)
            for e in self.edges:
                if e.src == n:
                    indeg[e.dst] -= 1
                    if indeg[e.dst] == 0:
                        ready.append(e.dst)
        return order

    def missing_inputs(self, node_id: str) -> list[str]:
        """The inputs of a (non-input) node's module that no incoming edge brings: the node
        reads each as an empty relation of its declared schema. A module used at several
        nodes need not receive every input at each (``stock`` at ``stock_reserve`` reads orders,
        at ``stock_ship`` shipments)."""
        if self.nodes[node_id].input:
            return []
        brought = {r for e in self.inputs_of(node_id) for r in e.relations}
        return [r for r in self.modules[self.nodes[node_id].module].inputs if r not in brought]

    def inputs_of(self, node_id: str) -> list[Edge]:
        return [e for e in self.edges if e.dst == node_id]

    def workflow_inputs(self) -> dict[str, list[str]]:
        """Input node → the relations it takes from outside (its module's inputs)."""
        return {n.id: list(self.modules[n.module].inputs) for n in self.nodes.values() if n.input}
