"""Column lineage from Spark's analyzed plan: one walk per relation a module writes.

Module code is PySpark; the plan Spark analyzed for a written relation already says, attribute
by attribute, what each column is computed from. :func:`column_lineage` reads that plan once
(its JSON form: one Py4J call, plus one per leaf to learn which stored relation it scans) and
follows each output attribute down to the columns of the stored relations the module read
(sqlglot's ``lineage`` walks SQL scopes the same way). Eager and deferred capture scan the same
stored files, so both give the same lineage; the rewrite's hidden columns (``__lp_*``) and
Spark's ``_metadata`` are not columns of a relation and never appear.

What each plan node contributes (types: :mod:`lipspark.vocabulary.lineage`):

* ``Project``, ``Aggregate``, ``Window``: an output column that is a bare column reference keeps
  its sources (IDENTITY stays IDENTITY: a rename copies); an expression over columns is a
  TRANSFORMATION of each column it reads (a Python UDF — a black box — named in the
  description); a column read inside an aggregate function an AGGREGATION;
* ``Generate`` (``explode``): the generated columns are a TRANSFORMATION of the exploded column;
* ``Union``: a column comes from the columns at its position in every branch;
* ``Filter``, ``Join``, ``Aggregate`` keys, ``Deduplicate``/``Distinct``, ``Sort``, ``Window``
  partitions: INDIRECT fields of the whole relation (FILTER, JOIN, GROUP_BY, SORT, WINDOW);
* anything else passes its child's columns through by id; a leaf that scans no stored relation
  the module read (a relation computed once — ``limit``, a non-deterministic expression —
  or built in module code) has no sources and is named in ``opaque``.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping

from pyspark.sql import DataFrame

from lipspark.capture.plan import analyzed, expression_tree, node_name
from lipspark.vocabulary.columns import is_hidden
from lipspark.vocabulary.lineage import DIRECT_SUBTYPES, SourceField, compose

__all__ = ["column_lineage", "leaf_ids", "normalize_path"]

#: (relation dir, column) → (DIRECT subtype, descriptions)
_Sources = dict[tuple[str, str], tuple[str, frozenset[str]]]
#: an expression's sources, and its fields' (by name) when it is a struct whose fields are known
_Shape = tuple[_Sources, "dict[str, _Shape] | None"]

_AGGREGATE_NAMES = {"Average": "avg", "CollectList": "collect_list", "CollectSet": "collect_set", "StddevSamp": "stddev",
                    "StddevPop": "stddev_pop", "VarianceSamp": "variance", "VariancePop": "var_pop"}


def normalize_path(path: str) -> str:
    """A directory as Spark's file index names it, made comparable: no ``file:`` scheme, normalized.

    >>> normalize_path("file:/tmp/s/executions/.pending-000001/outputs/a/R/")
    '/tmp/s/executions/.pending-000001/outputs/a/R'
    """
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif path.startswith("file:"):
        path = path[len("file:"):]
    return os.path.normpath(path)


def leaf_ids(df: DataFrame) -> list[int]:
    """The exprIds of the columns a DataFrame that scans one relation reads (its plan's leaf):
    :func:`column_lineage` knows such a leaf without asking the JVM for its files."""
    return [int(n["exprId"]["id"]) for n in _leaf_attributes(json.loads(analyzed(df).toJSON()))]


def _leaf_attributes(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    leaves = [n for n in nodes if int(n.get("num-children", 0)) == 0]
    out = leaves[0].get("output") if len(leaves) == 1 else None
    return [e[0] for e in out or [] if isinstance(e, list) and e and "exprId" in e[0]]


def _leaf_paths(top: Any, nodes: list[dict[str, Any]], known: Mapping[int, str]) -> list[list[str] | str | None]:
    """What each leaf of the plan scans, in pre-order: the name of a relation whose columns'
    exprIds are ``known``, else the root paths of its files, asked of the JVM (a relation read
    twice in a self join gets new exprIds), ``None`` if it is not a file scan."""
    out: list[list[str] | str | None] = []
    leaves = None
    for i, raw in enumerate(n for n in nodes if int(n.get("num-children", 0)) == 0):
        ids = [int(e[0]["exprId"]["id"]) for e in raw.get("output") or [] if isinstance(e, list) and e and "exprId" in e[0]]
        name = next((known[x] for x in ids if x in known), None)
        if name is not None:
            out.append(name)
            continue
        if leaves is None:
            leaves = top.collectLeaves()
        leaf = leaves.apply(i)
        try:
            paths = str(leaf.relation().location().rootPaths().mkString("\n")) if node_name(leaf) == "LogicalRelation" else None
        except Exception:  # not a file relation: no sources through it
            paths = None
        out.append([normalize_path(p) for p in paths.split("\n")] if paths else None)
    return out


class _Walk:
    """One bottom-up pass over a plan's JSON nodes, keeping each attribute's sources by exprId."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = {normalize_path(k): v for k, v in sources.items()}
        self.attrs: dict[int, _Sources] = {}
        #: the fields of struct-valued attributes (a cogroup's bags), where they are known
        self.fields: dict[int, dict[str, _Shape]] = {}
        self.indirect: dict[tuple[str, str, str], None] = {}
        self.opaque: dict[str, None] = {}

    # -------------------------------------------------------------- expressions
    @staticmethod
    def _exprs(value: Any) -> list[Any]:
        """The expression trees of a plan node's field: one (a flattened list) or a list of them."""
        if not isinstance(value, list) or not value:
            return []
        if isinstance(value[0], dict):
            return [expression_tree(value)]
        return [expression_tree(v) for v in value if isinstance(v, list) and v and isinstance(v[0], dict)]

    @staticmethod
    def _expr_id(node: Any) -> int | None:
        e = node.fields.get("exprId")
        return int(e["id"]) if isinstance(e, dict) and "id" in e else None

    def _refs(self, tree: Any, subtype: str, desc: frozenset[str] = frozenset()) -> _Sources:
        """The sources of an expression: those of each column it reads, at least ``subtype``;
        inside an aggregate function, AGGREGATION; a Python UDF names itself."""
        return self._shape(tree, subtype, desc)[0]

    def _shape(self, node: Any, st: str, ds: frozenset[str]) -> _Shape:
        """The sources of an expression, and of each field when it is a struct (or an array of
        structs) whose fields are known: a field taken out of it (``bag[0]["BidId"]`` after a
        ``cogroup``, whose bags are ``collect_list(struct(...))``) has that field's sources only."""
        cls = node.cls
        if cls in ("AttributeReference", "NamedLambdaVariable"):
            i = self._expr_id(node)
            i = i if i is not None else -1
            return _compose(self.attrs.get(i, {}), st, ds), _compose_fields(self.fields.get(i), st, ds)
        if cls == "GetStructField" and node.children:
            src, inner = self._shape(node.children[0], st, ds)
            name = node.fields.get("name")
            if inner is not None and name in inner:
                return inner[name]
            return _compose(src, "TRANSFORMATION", frozenset()), None
        if cls == "CreateNamedStruct":
            kids = node.children
            named = {str(kids[k].fields.get("value")): self._shape(kids[k + 1], st, ds) for k in range(0, len(kids) - 1, 2)}
            whole: _Sources = {}
            for src, _ in named.values():
                for key, (s, d) in src.items():
                    _merge(whole, key, compose(s, "TRANSFORMATION"), d)
            return whole, named
        if cls == "ArrayTransform" and len(node.children) == 2 and node.children[1].cls == "LambdaFunction":
            arr = self._shape(node.children[0], st, ds)
            body, *params = node.children[1].children
            for v in params[:1]:  # the element (a second parameter is the index)
                i = self._expr_id(v)
                if i is not None:
                    self.attrs[i] = arr[0]
                    if arr[1] is not None:
                        self.fields[i] = arr[1]
            return self._shape(body, st, ds)
        if cls == "AggregateExpression" and node.children:
            fn = node.children[0].cls
            st, ds = "AGGREGATION", ds | {_AGGREGATE_NAMES.get(fn, fn.lower())}
        elif cls in ("PythonUDF", "ScalaUDF"):
            st, ds = compose(st, "TRANSFORMATION"), ds | {str(node.fields.get("name") or node.fields.get("udfName") or "udf")}
        elif cls not in ("Alias", "GetArrayItem", "CollectList", "LambdaFunction"):
            st = compose(st, "TRANSFORMATION")
        out: _Sources = {}
        fields: dict[str, _Shape] | None = None
        for c in node.children:
            src, f = self._shape(c, st, ds)
            for key, (s, d) in src.items():
                _merge(out, key, s, d)
            if f is not None:  # an array item, a coalesce of bags, a collect_list of structs: the fields go through
                fields = f if fields is None else _merge_fields(fields, f)
        return out, fields

    def _named(self, trees: Iterable[Any], window: bool = False) -> list[tuple[int, str]]:
        """Register the named expressions of a projection/aggregation; their (exprId, name)."""
        out = []
        for t in trees:
            i = self._expr_id(t)
            if i is None:
                continue
            if t.cls == "Alias" and t.children:
                child = t.children[0]
                if child.cls == "AttributeReference":  # a rename: a copy
                    j = self._expr_id(child) or -1
                    self.attrs[i] = dict(self.attrs.get(j, {}))
                    if j in self.fields:
                        self.fields[i] = self.fields[j]
                else:
                    src, fields = self._shape(child, "AGGREGATION" if window else "TRANSFORMATION", frozenset())
                    self.attrs[i] = src
                    if fields is not None:
                        self.fields[i] = fields
            out.append((i, str(t.fields.get("name"))))
        return out

    def _read_by(self, trees: Iterable[Any], subtype: str) -> None:
        """Columns read by a condition, a key, an ordering: INDIRECT fields of the relation."""
        for t in trees:
            for (rel, col) in self._refs(t, "IDENTITY"):
                self.indirect[(rel, col, subtype)] = None

    # -------------------------------------------------------------- plan nodes
    def run(self, nodes: list[dict[str, Any]], paths: list[list[str] | str | None]) -> list[tuple[int, str]]:
        leaf_paths = iter(paths)
        pos = 0

        def visit() -> list[tuple[int, str]]:
            nonlocal pos
            raw = nodes[pos]
            pos += 1
            kids = [visit() for _ in range(int(raw["num-children"]))]
            return self._node(raw["class"].rsplit(".", 1)[-1], raw, kids, next(leaf_paths, None) if not kids else None)

        return visit()

    def _node(self, cls: str, raw: dict[str, Any], kids: list[list[tuple[int, str]]], paths: list[str] | str | None) -> list[tuple[int, str]]:
        f = self._exprs
        if not kids:  # a leaf: a scan of a stored relation, or something lineage cannot see through
            out = [(self._expr_id(a) or -1, str(a.fields.get("name"))) for a in f(raw.get("output"))]
            rel = paths if isinstance(paths, str) else next((self.sources[p] for p in paths or () if p in self.sources), None)
            if rel is None:
                if out and cls not in ("OneRowRelation",):
                    self.opaque[f"{cls} ({', '.join(n for _, n in out if not is_hidden(n))})"] = None
                return out
            for i, name in out:
                if not is_hidden(name) and not name.startswith("_metadata"):
                    self.attrs[i] = {(rel, name): ("IDENTITY", frozenset())}
            return out
        if cls == "Project":
            return self._named(f(raw.get("projectList")))
        if cls == "Aggregate":
            self._read_by(f(raw.get("groupingExpressions")), "GROUP_BY")
            return self._named(f(raw.get("aggregateExpressions")))
        if cls == "Window":
            self._read_by(f(raw.get("partitionSpec")) + f(raw.get("orderSpec")), "WINDOW")
            return kids[0] + self._named(f(raw.get("windowExpressions")), window=True)
        if cls == "Filter":
            self._read_by(f(raw.get("condition")), "FILTER")
            return kids[0]
        if cls == "Join":
            self._read_by(f(raw.get("condition")), "JOIN")
            jt = str((raw.get("joinType") or {}).get("object", ""))
            return kids[0] if ("LeftSemi" in jt or "LeftAnti" in jt or "Existence" in jt) else kids[0] + kids[1]
        if cls == "Sort":
            self._read_by(f(raw.get("order")), "SORT")
            return kids[0]
        if cls == "Deduplicate":
            self._read_by(f(raw.get("keys")), "GROUP_BY")
            return kids[0]
        if cls == "Distinct":
            for i, _ in kids[0]:
                for (rel, col) in self.attrs.get(i, {}):
                    self.indirect[(rel, col, "GROUP_BY")] = None
            return kids[0]
        if cls == "Generate":
            gen = f(raw.get("generator"))
            made: _Sources = {}
            for g in gen:
                made.update(self._refs(g, "TRANSFORMATION", frozenset({g.cls.lower()})))
            outs = [(self._expr_id(a) or -1, str(a.fields.get("name"))) for a in f(raw.get("generatorOutput"))]
            for i, _ in outs:
                self.attrs[i] = dict(made)
            return kids[0] + outs
        if cls == "Union":
            first = kids[0]
            for other in kids[1:]:
                for (i, _), (j, _) in zip(first, other):
                    merged = dict(self.attrs.get(i, {}))
                    for key, (s, d) in self.attrs.get(j, {}).items():
                        _merge(merged, key, s, d)
                    self.attrs[i] = merged
            return first
        named = f(raw.get("projectList")) or f(raw.get("aggregateExpressions"))
        if named:  # an unknown node that names columns: each from what it reads
            return self._named(named)
        return kids[0] if len(kids) == 1 else [a for k in kids for a in k]


def _compose(src: _Sources, st: str, ds: frozenset[str]) -> _Sources:
    return {key: (compose(s, st), d | ds) for key, (s, d) in src.items()}


def _compose_fields(fields: dict[str, _Shape] | None, st: str, ds: frozenset[str]) -> dict[str, _Shape] | None:
    if fields is None:
        return None
    return {k: (_compose(src, st, ds), _compose_fields(f, st, ds)) for k, (src, f) in fields.items()}


def _merge_fields(a: dict[str, _Shape], b: dict[str, _Shape]) -> dict[str, _Shape]:
    """The fields of a value that is one struct or another (a union's, a coalesce's)."""
    out = dict(a)
    for k, (src, f) in b.items():
        if k not in out:
            out[k] = (src, f)
            continue
        merged = dict(out[k][0])
        for key, (s, d) in src.items():
            _merge(merged, key, s, d)
        fa = out[k][1]
        out[k] = (merged, f if fa is None else fa if f is None else _merge_fields(fa, f))
    return out


def _merge(out: _Sources, key: tuple[str, str], subtype: str, desc: frozenset[str]) -> None:
    """Add one source, keeping the strongest subtype when a column is reached twice."""
    if key in out:
        s, d = out[key]
        out[key] = (compose(s, subtype), d | desc)
    else:
        out[key] = (subtype, desc)


def column_lineage(df: DataFrame, sources: Mapping[str, str], known: Mapping[int, str] | None = None) -> tuple[dict[str, tuple[SourceField, ...]], tuple[SourceField, ...], tuple[str, ...]]:
    """The column lineage of ``df``: for each of its visible columns the fields it is copied or
    computed from (DIRECT), the fields that decided which rows it has (INDIRECT), and the leaves
    the walk could not see through.

    ``sources`` maps the directory of each stored relation the module read (absolute, as Spark
    scans it) to the name lineage gives it (its store-relative directory); ``known`` maps the
    exprIds of the columns of the scans the module was given (:func:`leaf_ids`) to that name,
    which spares asking the JVM for their files.

    >>> from lipspark.session import get_spark
    >>> import tempfile, os
    >>> spark = get_spark(app_name="lineage-doctest")
    >>> d = os.path.join(tempfile.mkdtemp(), "R")
    >>> spark.createDataFrame([(1, "a", 2.0)], "k int, m string, v double").write.parquet(d)
    >>> from pyspark.sql import functions as F
    >>> r = spark.read.parquet(d)
    >>> out = r.filter(F.col("k") > 0).groupBy("m").agg(F.sum("v").alias("total"))
    >>> cols, rows, opaque = column_lineage(out, {d: "R"})
    >>> [(c, [(s.column, s.subtype, s.description) for s in fs]) for c, fs in cols.items()]
    [('m', [('m', 'IDENTITY', '')]), ('total', [('v', 'AGGREGATION', 'sum')])]
    >>> [(s.column, s.subtype) for s in rows]
    [('k', 'FILTER'), ('m', 'GROUP_BY')]
    """
    top = analyzed(df)
    walk = _Walk(sources)
    nodes = json.loads(top.toJSON())
    out = walk.run(nodes, _leaf_paths(top, nodes, known or {}))
    columns: dict[str, tuple[SourceField, ...]] = {}
    for i, name in out:
        if is_hidden(name) or name in columns:
            continue
        srcs = walk.attrs.get(i, {})
        columns[name] = tuple(SourceField(rel, col, "DIRECT", st, ", ".join(sorted(d)))
                              for (rel, col), (st, d) in sorted(srcs.items(), key=lambda kv: (kv[0], DIRECT_SUBTYPES.index(kv[1][0]))))
    dataset = tuple(SourceField(rel, col, "INDIRECT", st) for rel, col, st in sorted(walk.indirect))
    return columns, dataset, tuple(walk.opaque)
