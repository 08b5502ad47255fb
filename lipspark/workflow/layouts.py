"""Layouts of stored relations, known without capturing provenance (deferred capture).

A consumer of a stored relation builds its input v-nodes from which of the relation's columns
carry them (:class:`~lipspark.capture.layout.Layout`: ``values``, nested ``bags``, and ``k``
factors), and, since boundary v-nodes are one per row (docs/design.md, "Deferred capture"), from
nothing else of its producer's provenance. A deferred run writes no provenance, so a replay
*probes* each invocation for that layout: it runs the module's code on empty annotated frames
of its inputs' layouts — planning only, over no rows — and reads the layouts of what it returns.
A layout follows from module code and the layouts it reads, not from data, so an invocation
whose inputs have the layouts of an earlier probe of its node reuses that probe's answer: after
the state's layouts settle (an execution or two) the probes repeat, and a store of any number of
executions costs a probe per node and distinct input layouts (the car dealership: about twenty).

Probing is not on the run's path (a deferred run costs what a plain one does): the first replay
of an invocation probes the store's executions up to its own (:func:`store_layouts`) and keeps
the probes in ``replays/layouts.json``, derived and rebuilt when missing or unreadable. The
replay checks that its own layouts agree (a module whose layout depends on its data cannot
have its provenance deferred).

>>> Probed.from_json({"values": ["b", "a"], "bags": [], "k": 2}).to_json()
{'values': ['a', 'b'], 'bags': [], 'k': 2}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from lipspark.errors import WorkflowError

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.capture.layout import Layout

__all__ = ["Probed", "BASE", "signature", "Probe", "store_layouts", "LAYOUTS_FILE", "REPLAYS_DIR"]

#: where a deferred store keeps its probes (under REPLAYS_DIR)
LAYOUTS_FILE = "layouts.json"
#: the directory of a deferred store that per-invocation replays keep their work in
REPLAYS_DIR = "replays"
#: Where a replayed invocation keeps the graph it recorded, under its directory (lipspark.workflow.replay).
GRAPH_DIR = "graph"
_FORMAT = "lipspark-layouts"
_VERSION = 1


@dataclass(frozen=True)
class Probed:
    """A stored relation's layout: value columns, bag columns, factors (a base relation: none, none, 1)."""

    values: tuple[str, ...] = ()
    bags: tuple[str, ...] = ()
    k: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(sorted(self.values)))
        object.__setattr__(self, "bags", tuple(sorted(self.bags)))

    @classmethod
    def of(cls, layout: "Layout") -> "Probed":
        return cls(tuple(layout.values), tuple(layout.bags), layout.k)

    def to_json(self) -> dict[str, Any]:
        return {"values": list(self.values), "bags": list(self.bags), "k": self.k}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Probed":
        return cls(tuple(d.get("values", ())), tuple(d.get("bags", ())), int(d.get("k", 1)))


#: the layout of a base relation (a workflow input, an initial state, an empty missing input)
BASE = Probed()


def signature(reads: Mapping[str, Probed]) -> str:
    """What an invocation's probe depends on besides module code: the layouts it reads."""
    return ";".join(f"{r}:{','.join(p.values)}|{','.join(p.bags)}" for r, p in sorted(reads.items()))


class Probe:
    """Layouts of the relations invocations write, probed once per node and input layouts.

    ``memo`` seeds it with earlier probes (as :meth:`to_json` gives them). ``spark``: a
    SparkSession, or a function giving one, called when a probe first has to run (so layouts
    all found in the memo start no JVM).
    """

    def __init__(self, spark: Any, memo: Sequence[Sequence[Any]] = ()) -> None:
        self.spark = spark
        self._memo: dict[tuple[str, str], dict[str, Probed]] = {}
        #: how many invocations were probed (a benchmark reports it)
        self.probes = 0
        self._empty: dict[tuple[str, str], Any] = {}  # an empty frame per relation and schema, made once (a probe reads one)
        for node, sig, writes in memo:
            self._memo[(str(node), str(sig))] = {r: Probed.from_json(d) for r, d in writes.items()}

    def to_json(self) -> list[list[Any]]:
        return [[node, sig, {r: p.to_json() for r, p in w.items()}] for (node, sig), w in sorted(self._memo.items())]

    def writes(self, node: str, module: Any, reads: Mapping[str, Probed], written: list[str], context: Any, ordinal: int) -> dict[str, Probed]:
        """The layouts of ``written`` when ``node`` (of ``module``) reads relations of layouts ``reads``."""
        key = (node, signature(reads))
        if key not in self._memo or any(r not in self._memo[key] for r in written):
            self._memo[key] = self._run(module, reads, written, context, ordinal)
            self.probes += 1
        return {r: self._memo[key][r] for r in written}

    def _run(self, module: Any, reads: Mapping[str, Probed], written: list[str], context: Any, ordinal: int) -> dict[str, Probed]:
        """Run ``module``'s code on empty annotated frames (Spark plans, no rows)."""
        from pyspark.sql import functions as F

        from lipspark.capture.builder import GraphBuilder, InvocationBuilder
        from lipspark.capture.layout import Layout
        from lipspark.frame import AnnotatedFrame
        from lipspark.session import without_call_sites
        from lipspark.tracker import Tracker
        from lipspark.vocabulary.columns import bag_col, factor, value_col

        if callable(self.spark):
            self.spark = self.spark()
        tracker = Tracker(self.spark, InvocationBuilder(GraphBuilder(), ordinal), context=context, planning_only=True)
        try:
            frames = {}
            for rname, p in reads.items():
                ddl = module.relation(rname).ddl
                empty = self._empty.get((rname, ddl))
                if empty is None:
                    empty = self._empty[(rname, ddl)] = self.spark.createDataFrame([], ddl)
                cols = [F.col(f"`{c}`") for c in empty.columns] + [F.lit(0).cast("long").alias(factor(0))]
                cols += [F.lit(0).cast("long").alias(value_col(c)) for c in p.values]
                cols += [F.array().cast("array<bigint>").alias(bag_col(b)) for b in p.bags]
                frames[rname] = AnnotatedFrame(tracker, empty.select(*cols), Layout(1, p.values, p.bags))
            with without_call_sites():  # planning only: no Python call sites for Spark's error context
                result = module.logic(**frames)
            out = {}
            for rname in written:
                frame = result.get(rname) if isinstance(result, dict) else None
                if not isinstance(frame, AnnotatedFrame):
                    raise WorkflowError(f"module {module.name!r} returned a plain DataFrame for {rname!r} when run with provenance "
                                        "(deferred capture plans each module with provenance once): build it from the module's inputs and state")
                out[rname] = Probed.of(frame.layout)
            return out
        finally:
            tracker.release()


def store_layouts(store: Any, workflow: Any, spark: Any, upto: int) -> list[dict[str, dict[str, dict[str, Probed]]]]:
    """What each node of executions 1..``upto`` of a deferred store read and wrote, as layouts
    (``[execution - 1][node]["reads" | "writes"][relation]``), probing what the store's
    ``replays/layouts.json`` does not already hold and keeping it there."""
    import json
    import os

    from lipspark.vocabulary import Context
    from lipspark.workflow.numbering import blocks

    path = os.path.join(store.root, REPLAYS_DIR, LAYOUTS_FILE)
    memo: list[Any] = []
    try:
        with open(path) as fh:
            doc = json.load(fh)
        if doc.get("format") == _FORMAT and doc.get("version") == _VERSION and doc.get("workflow") == store.meta["workflow"]:
            memo = doc["probes"]
    except (OSError, ValueError, KeyError, TypeError):
        memo = []  # derived: probed again
    probe = Probe(spark, memo)
    order = workflow.topological_order()
    state = {(m, r): BASE for m, module in workflow.modules.items() for r in module.state}
    out: list[dict[str, dict[str, dict[str, Probed]]]] = []
    for e in range(1, upto + 1):
        rec = store.executions[e - 1]
        blks = blocks(workflow, e, rec["segments"][0])
        lay: dict[str, dict[str, dict[str, Probed]]] = {}
        for node in order:
            module = workflow.modules[workflow.nodes[node].module]
            reads: dict[str, Probed] = {}
            if not workflow.nodes[node].input:
                for edge in workflow.inputs_of(node):
                    for r in edge.relations:
                        reads[r] = lay[edge.src]["writes"][r]
            for r in module.inputs:
                reads.setdefault(r, BASE)  # a workflow input, or one no edge brings (empty)
            for r in module.state:
                reads[r] = state[(module.name, r)]
            returned = [r for r in module.state if os.path.isdir(store.resolve(f"{store.final_dir(e)}/state/{node}/{r}"))]
            context = Context(module.name, node, e, None)
            writes = probe.writes(node, module, reads, [*module.outputs, *returned], context, blks[node].ordinal)
            for r in returned:
                state[(module.name, r)] = writes[r]
            lay[node] = {"reads": reads, "writes": writes}
        out.append(lay)
    if probe.probes:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            json.dump({"format": _FORMAT, "version": _VERSION, "workflow": store.meta["workflow"], "probes": probe.to_json()}, fh)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    return out
