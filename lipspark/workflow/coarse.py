"""The coarse graph of a deferred store: what a query can see with no replay (issue 12, item 3).

A deferred run writes no provenance, but every relation crossing a module boundary is stored,
segment numbers are fixed per invocation by the workflow's declarations
(:mod:`~lipspark.workflow.numbering`), and which columns carry v-nodes is known by probing
(:mod:`~lipspark.workflow.layouts`). That is all an invocation's *boundary* needs: its invocation
node, the tokens of the workflow inputs it is given, an input node per row it reads and an
output node per row it writes (with the v-nodes of their value columns) have the ids an eager
run gives them. What the store does not know before a replay is the fine computation between
them. So the coarse graph is Lipstick's ZoomOut (section 4.1) of every module of this boundary
graph (:func:`coarse_graph`, then :func:`lipspark.query.zoom.zoom_out`): per invocation
one zoom node with an edge from each of its input nodes and an edge to each of its output
nodes, the state hidden: node for node the view ``zoomout`` of all modules gives of the eager
graph, and edge for edge but one kind (``tests/workflow/test_replay.py``). An edge from an
input node straight to an output node of the same invocation (a row the module passes on
unchanged: its output node's factor is the input node) is in the eager graph and stays in its
ZoomOut, but only the fine computation — a replay — shows it. It adds no dependence the zoom
node does not already give (every input reaches every output through it), but an output's
polynomial in a zoomed-out view has the input as one more factor, so a query layer answering
from this graph must zoom out eager graphs without those edges too (docs/design.md, "Deferred
capture").
"""
from __future__ import annotations

from typing import Any

from lipspark.errors import StoreError
from lipspark.store import Store
from lipspark.vocabulary import BaseSegment, BoundarySegment, Context, InvocationSegment, PScheme, RelationDescriptor, Segment
from lipspark.vocabulary.ids import positional
from lipspark.workflow.layouts import Probed
from lipspark.workflow.numbering import Block, blocks, initial_segments
from lipspark.workflow.relations import descriptor, stored_files

__all__ = ["coarse_segments", "coarse_graph", "output_descriptor", "invocation_segments", "initial_state_segments", "state_read",
           "state_descriptor", "written_state"]

Layouts = list[dict[str, dict[str, dict[str, Probed]]]]


def output_descriptor(stored: RelationDescriptor, blk: Block, rname: str, probed: Probed) -> RelationDescriptor:
    """Output ``rname`` of a deferred store's invocation (its files ``stored``, its block
    ``blk``) described as the eager run describes it, with its ``probed`` layout."""
    return RelationDescriptor(stored.dir, stored.files, {c: blk.write_value(rname, c) for c in probed.values}, probed.bags,
                              PScheme("output", blk.write(rname), probed.k), every_row=True)


def initial_state_segments(store: Store, workflow: Any) -> list[tuple[Segment, dict[str, Any]]]:
    """The base segments of the deferred ``store``'s initial state, as an eager run records them
    (tokens tagged with their module, no node type)."""
    segs = initial_segments(workflow.modules, 1)  # a store numbers from 1 (Store.create)
    out: list[tuple[Segment, dict[str, Any]]] = []
    for mname, rels in (store.meta.get("initial") or {}).items():
        for rname, d in rels.items():
            rel = workflow.modules[mname].relation(rname)
            out.append((BaseSegment(segs[(mname, rname)], Context(module=mname), relation=rel.name, key=tuple(rel.key),
                                    columns=rel.token_columns, files=descriptor(d).files, type=None), {}))
    return out


def written_state(store: Store, e: int, node: str, rname: str) -> RelationDescriptor:
    """The state relation ``rname`` as node ``node`` wrote it in execution ``e`` of the deferred store."""
    rel_dir = f"{store.final_dir(e)}/state/{node}/{rname}"
    return RelationDescriptor(rel_dir, stored_files(store, rel_dir))


def state_descriptor(store: Store, workflow: Any, layouts: Layouts, e: int, node: str, rname: str) -> RelationDescriptor:
    """State ``rname`` as node ``node`` wrote it in execution ``e``, described as the eager run
    describes it (rows and values numbered by position in its block, the store's scheme)."""
    p = layouts[e - 1][node]["writes"][rname]
    blk = blocks(workflow, e, store.executions[e - 1]["segments"][0])[node]
    d = written_state(store, e, node, rname)
    scheme = store.state_scheme
    values = {c: None if scheme == "collapse" else blk.write_value(rname, c) for c in p.values}
    return RelationDescriptor(d.dir, d.files, values, p.bags, PScheme(scheme, blk.write(rname), p.k), every_row=True)


def state_read(store: Store, workflow: Any, layouts: Layouts, n: int, node: str, rname: str) -> RelationDescriptor:
    """The state relation ``rname`` of ``node``'s module as node ``node`` of execution ``n``
    read it, described as an eager run describes it: its writer's state (:func:`state_descriptor`),
    or the initial state's tokens."""
    module = workflow.nodes[node].module
    order = workflow.topological_order()
    # the last writer before (n, node): an earlier node of this execution, else of an earlier one
    for e in range(n, 0, -1):
        nodes = order[: order.index(node)] if e == n else order
        for w in reversed(nodes):
            if workflow.nodes[w].module == module and rname in layouts[e - 1][w]["writes"]:
                return state_descriptor(store, workflow, layouts, e, w, rname)
    d = descriptor(store.meta["initial"][module][rname])
    seg = initial_segments(workflow.modules, 1)[(module, rname)]  # a store numbers from 1 (Store.create)
    return RelationDescriptor(d.dir, d.files, p=PScheme("token", seg))


def invocation_segments(store: Store, workflow: Any, layouts: Layouts, n: int, node: str, *,
                        state: bool = True) -> list[tuple[Segment, dict[str, Any]]]:
    """The coarse segments an eager run records for node ``node`` of execution ``n`` of the
    deferred ``store``: its invocation, the tokens of the workflow inputs it is given, a read
    boundary (role i, and s for its state) per relation it reads, a write boundary (o, and the
    state's rows and values) per relation it writes. ``state=False``: without the state's."""
    rec = store.executions[n - 1]
    blks = blocks(workflow, n, rec["segments"][0])
    lay = layouts[n - 1]
    blk = blks[node]
    module = workflow.modules[workflow.nodes[node].module]
    inv_id = int(positional(blk.invocation, 0))
    ctx = Context(module.name, node, n, inv_id)
    out: list[tuple[Segment, dict[str, Any]]] = [(InvocationSegment(blk.invocation, ctx, label=module.name), {})]
    reads: list[tuple[str, str, RelationDescriptor]] = []
    if workflow.nodes[node].input:
        for rname in module.inputs:
            rel, d = module.relation(rname), descriptor(rec["inputs"][node][rname])
            seg = blk.token(rname)
            out.append((BaseSegment(seg, ctx, relation=rel.name, key=tuple(rel.key), columns=rel.token_columns,
                                    files=d.files, type="i"), {}))
            reads.append(("i", rname, RelationDescriptor(d.dir, d.files, p=PScheme("token", seg))))
    else:
        reads += [("i", rname, output_descriptor(descriptor(rec["outputs"][e.src][rname]), blks[e.src], rname, lay[e.src]["writes"][rname]))
                  for e in workflow.inputs_of(node) for rname in e.relations]
    if state:
        reads += [("s", rname, state_read(store, workflow, layouts, n, node, rname)) for rname in module.state]
    for role, rname, desc in reads:
        out.append((BoundarySegment(blk.read(rname), ctx, role=role, relation=rname, source=desc, invocation=inv_id), {}))
        out += [(BoundarySegment(blk.read_value(rname, c), ctx, role=role, relation=rname, source=desc, invocation=inv_id,
                                 column=c, every_row=True), {}) for c in desc.values]
    for rname in module.outputs:
        if rname not in rec["outputs"].get(node, {}):
            continue
        desc = output_descriptor(descriptor(rec["outputs"][node][rname]), blk, rname, lay[node]["writes"][rname])
        out.append((BoundarySegment(blk.write(rname), ctx, role="o", relation=rname, source=desc, invocation=inv_id), {}))
        out += [(BoundarySegment(blk.write_value(rname, c), ctx, role="vo", relation=rname, source=desc, invocation=inv_id,
                                 column=c, every_row=True), {}) for c in desc.values]
    if state:
        for rname in module.state:
            if rname not in lay[node]["writes"]:
                continue
            desc = state_descriptor(store, workflow, layouts, n, node, rname)
            out.append((BoundarySegment(blk.write(rname), ctx, role="collapse", relation=rname, source=desc, invocation=inv_id), {}))
            out += [(BoundarySegment(vseg, ctx, role="vs", relation=rname, source=desc, invocation=inv_id, column=c, every_row=True), {})
                    for c, vseg in desc.values.items() if vseg is not None]
    return out


def coarse_segments(store: Store, workflow: Any, layouts: Layouts) -> list[tuple[Segment, dict[str, Any]]]:
    """The invocation, workflow-input token and input/output boundary segments an eager run of
    the deferred ``store``'s executions records (state excepted), built from ``store.json``, the
    workflow's declarations and the probed ``layouts`` (:func:`~lipspark.workflow.layouts.store_layouts`)."""
    _check(store, layouts)
    return [seg for n in range(1, len(store.executions) + 1) for node in workflow.topological_order()
            for seg in invocation_segments(store, workflow, layouts, n, node, state=False)]


def _check(store: Store, layouts: Layouts) -> None:
    if store.capture != "deferred":
        raise StoreError(f"the store at {store.root} captured its provenance {store.capture or 'never'}; a coarse graph is a deferred store's")
    if len(layouts) < len(store.executions):
        raise StoreError(f"layouts of {len(layouts)} execution(s) for a store of {len(store.executions)}; probe them all first")


def coarse_graph(store: Store, workflow: Any, layouts: Layouts) -> Any:
    """The boundary graph of the deferred ``store`` (a :class:`~lipspark.graph.index.GraphIndex`):
    :func:`coarse_segments` expanded without the fine edges. Zooming out every module
    (:func:`lipspark.query.zoom.zoom_out`, a layer above) gives its coarse-grained view."""
    from lipspark.graph.expand import expand_segments
    from lipspark.graph.index import GraphIndex

    nodes, edges = expand_segments(coarse_segments(store, workflow, layouts), store.root, fine=False)
    return GraphIndex.build(nodes, edges)
