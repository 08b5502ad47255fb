"""Reading PySpark's analyzed logical plans, so the rewrite knows what module code asked for.

Module code is ordinary PySpark: ``df.groupBy("k").agg(F.sum("v"))``. The rewrite does not
re-implement Spark's expression language; it lets Spark analyze the plain operation and reads
the analyzed plan (through the JVM) to learn which operator it is, which aggregate functions it
applies to which argument expressions, which columns a projection passes through unchanged, and
which black-box UDFs it calls. Anything it does not recognise is reported, never guessed.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from pyspark.sql import Column, DataFrame

__all__ = [
    "ProjectionItem",
    "Projection",
    "AggregateItem",
    "analyzed",
    "condition_sql",
    "join_references",
    "column_references",
    "expression_tree",
    "node_name",
    "read_projection",
    "read_aggregate",
    "read_condition",
    "read_join_key_types",
    "references",
    "nondeterministic",
    "NONDETERMINISTIC",
]


def analyzed(df: DataFrame) -> Any:
    """The JVM analyzed logical plan of a (classic) PySpark DataFrame."""
    return df._jdf.queryExecution().analyzed()


def node_name(jnode: Any) -> str:
    """Simple class name of a JVM plan or expression node (``Project``, ``Alias``, ...)."""
    return str(jnode.getClass().getSimpleName())


def _seq(jseq: Any) -> list[Any]:
    return [jseq.apply(i) for i in range(jseq.size())]


@dataclass
class _Node:
    """A Catalyst expression node read from its JSON form (one Py4J call per tree)."""

    cls: str
    fields: dict[str, Any]
    children: list["_Node"]

    def walk(self) -> Iterator["_Node"]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)


def _tree(jexpr: Any) -> _Node:
    return expression_tree(json.loads(jexpr.toJSON()))


def expression_tree(nodes: list[dict[str, Any]]) -> _Node:
    """An expression tree from Catalyst's JSON form (its nodes in pre-order, each with its
    ``num-children``), as one expression-valued field of a plan's JSON holds it."""
    pos = 0

    def build() -> _Node:
        nonlocal pos
        raw = nodes[pos]
        pos += 1
        kids = [build() for _ in range(int(raw["num-children"]))]
        return _Node(raw["class"].rsplit(".", 1)[-1], raw, kids)

    return build()


@dataclass(frozen=True)
class ProjectionItem:
    """One output column of a projection.

    ``source`` is the input column it passes through unchanged (a bare or renamed column
    reference), else ``None``. ``udfs`` names the Python UDFs the expression calls,
    ``udf_args`` the bare input columns each takes, ``udf_functions`` their JVM functions
    (``SimplePythonFunction``: what identifies a black box, never its name), and
    ``references`` the input columns the expression reads.
    """

    name: str
    source: str | None
    udfs: tuple[str, ...]
    references: tuple[str, ...]
    udf_args: tuple[tuple[str, ...], ...] = ()
    udf_functions: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    nondeterministic: str | None = None  # the first function whose value may differ job to job


@dataclass(frozen=True)
class Projection:
    """A projection, possibly over one generator (``explode``)."""

    items: tuple[ProjectionItem, ...]
    generator: str | None = None  # e.g. "Explode"
    generator_input: str | None = None  # the exploded column, when it is a bare column
    generator_outputs: tuple[str, ...] = ()
    generator_outer: bool = False


def _python_functions(jexpr: Any) -> tuple[Any, ...]:
    """The JVM functions of the PythonUDFs in ``jexpr``, in :meth:`_Node.walk` order."""
    out = []
    stack = [jexpr]
    while stack:
        node = stack.pop()
        if node_name(node) == "PythonUDF":
            out.append(node.func())
        stack.extend(_seq(node.children()))
    return tuple(out)


def _item(jexpr: Any) -> ProjectionItem:
    top = _tree(jexpr)
    name = str(top.fields["name"])
    inner = top.children[0] if top.cls == "Alias" else top
    source = str(inner.fields["name"]) if inner.cls == "AttributeReference" else None
    udfs: list[str] = []
    udf_args: list[tuple[str, ...]] = []
    for node in inner.walk():
        if node.cls == "PythonUDF":
            udfs.append(str(node.fields["name"]))
            udf_args.append(tuple(str(c.fields["name"]) if c.cls == "AttributeReference" else "" for c in node.children))
    funcs: tuple[Any, ...] = ()
    if udfs:  # one Py4J walk, only for expressions that call Python
        funcs = _python_functions(jexpr.child() if top.cls == "Alias" else jexpr)
    return ProjectionItem(name, source, tuple(udfs), references(inner), tuple(udf_args), funcs, nondeterministic(inner))


#: Expressions whose value may differ from one Spark job to the next, although Spark calls some of
#: them deterministic within one query (the current time is fixed per query, not per plan).
NONDETERMINISTIC = frozenset({
    "Rand", "Randn", "Uniform", "RandStr", "Uuid", "Shuffle", "MonotonicallyIncreasingID", "SparkPartitionID",
    "InputFileName", "InputFileBlockStart", "InputFileBlockLength", "CurrentTimestamp", "CurrentDate", "Now",
    "LocalTimestamp", "CurrentBatchTimestamp", "CurrentTimeZone", "CurrentTime",
})


def references(tree: "_Node") -> tuple[str, ...]:
    """The input columns an expression tree reads."""
    return tuple(sorted({str(n.fields["name"]) for n in tree.walk() if n.cls == "AttributeReference"}))


def nondeterministic(tree: "_Node") -> str | None:
    """The first function of an expression tree whose value may differ from job to job (a
    :data:`NONDETERMINISTIC` one, or a Python UDF declared non-deterministic), else ``None``."""
    for n in tree.walk():
        if n.cls in NONDETERMINISTIC:
            return n.cls
        if n.cls == "PythonUDF" and n.fields.get("udfDeterministic") is False:
            return f"{n.fields.get('name')} (a non-deterministic UDF)"
    return None


def read_condition(filtered: DataFrame) -> "_Node | None":
    """The condition of a ``filter`` as an expression tree (``None`` if the plan is no Filter)."""
    top = analyzed(filtered)
    if node_name(top) != "Filter":
        return None
    return _tree(top.condition())


def join_references(joined: DataFrame) -> tuple[str, ...]:
    """The columns the condition of ``joined``'s top Join reads (names, either side)."""
    top = analyzed(joined)
    if node_name(top) == "Project" and node_name(top.child()) == "Join":
        top = top.child()
    if node_name(top) != "Join" or not top.condition().isDefined():
        return ()
    return references(_tree(top.condition().get()))


def column_references(df: DataFrame, col: Column) -> tuple[str, ...]:
    """The columns of ``df`` an expression reads."""
    top = analyzed(df.select(col))
    return tuple(sorted({r for e in _seq(top.projectList()) for r in references(_tree(e))}))


def condition_sql(df: DataFrame) -> str | None:
    """The SQL text of the condition of ``df``'s top Filter or Join (``None`` without one), as
    Spark prints it: ``(big_qty > 300)``."""
    top = analyzed(df)
    name = node_name(top)
    if name == "Filter":
        return _readable(str(top.condition().sql()))
    if name == "Project" and node_name(top.child()) == "Join":  # a join on names
        top = top.child()
        name = "Join"
    if name == "Join" and top.condition().isDefined():
        return _readable(str(top.condition().get().sql()))
    return None


def _readable(sql: str) -> str:
    """Spark's SQL text without the casts of numeric literals it adds: ``(n > 300)``.

    >>> _readable("(tot > CAST(300 AS BIGINT))")
    '(tot > 300)'
    """
    return re.sub(r"CAST\((-?[0-9.]+(?:E-?[0-9]+)?[LDSY]?) AS [A-Z]+(?:\([0-9, ]+\))?\)", r"\1", sql)


def read_join_key_types(joined: DataFrame) -> list[Any] | None:
    """The types in which a join on column names compares its keys, in the order of ``on``:
    Spark casts both sides of a key whose types differ to a common one (an ``int`` key and a
    ``string`` key are compared as ``bigint``, so ``"1"`` and ``"01"`` are the same key).
    ``None`` if the plan is not a join on column names (PySpark ``DataType`` objects otherwise)."""
    from pyspark.sql.types import _parse_datatype_json_string

    top = analyzed(joined)
    while node_name(top) == "Project":
        top = top.child()
    if node_name(top) != "Join" or top.condition().isEmpty():
        return None
    out: list[Any] = []
    stack = [top.condition().get()]
    while stack:  # the conjuncts left to right: the analyzer builds And(And(k1, k2), k3)
        node = stack.pop()
        if node_name(node) == "And":
            stack += [node.right(), node.left()]
        elif node_name(node) == "EqualTo":
            out.append(_parse_datatype_json_string(node.left().dataType().json()))
        else:
            return None
    return out


def read_projection(source: DataFrame, projected: DataFrame) -> Projection | None:
    """Describe ``projected`` if it is a plain projection (or one explode) of ``source``.

    Returns ``None`` when the analyzed plan is anything else (an aggregate, a window, ...),
    so the caller can raise :class:`~lipspark.errors.UnsupportedOperation`.
    """
    src = analyzed(source)
    top = analyzed(projected)
    if node_name(top) != "Project":
        return None
    child = top.child()
    items = tuple(_item(e) for e in _seq(top.projectList()))
    if child.fastEquals(src):
        return Projection(items)
    if node_name(child) == "Generate" and child.child().fastEquals(src):
        gen = child.generator()
        gin = gen.children().apply(0) if gen.children().size() == 1 else None
        return Projection(
            items,
            generator=node_name(gen),
            generator_input=str(gin.name()) if gin is not None and node_name(gin) == "AttributeReference" else None,
            generator_outputs=tuple(str(a.name()) for a in _seq(child.generatorOutput())),
            generator_outer=bool(child.outer()),
        )
    return None


@dataclass(frozen=True)
class AggregateItem:
    """One output column of ``groupBy(...).agg(...)``, or one aggregate inside such a column.

    ``function`` is Spark's class name (``Count``, ``Sum``, ``Min``, ``Max``, ``Average``,
    ``CollectList``, ...), ``None`` for a grouping column, or ``Expression:<classes>`` for an
    expression whose aggregates are ``parts`` (``sum(a) / count(b)``: a Sum and a Count; none
    for an expression over the keys only). ``sql_name`` is the name module code calls it by
    (``stddev``, not ``StddevSamp``); ``argument`` is the SQL text of its (first) argument and
    ``arguments`` that of each, ``literal`` whether the argument is a constant (``count(*)``),
    ``references`` the input columns the arguments read, ``ignore_nulls`` the option of
    ``first``/``last``, ``sql`` the aggregate's own SQL text, and ``opaque`` what makes the
    argument impossible to re-read as SQL text (a Python UDF, a lambda), else ``None``.
    """

    name: str
    function: str | None
    distinct: bool = False
    argument: str | None = None
    literal: bool = False
    n_args: int = 0
    filtered: bool = False
    sql_name: str | None = None
    opaque: str | None = None
    arguments: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    ignore_nulls: bool = False
    sql: str | None = None
    parts: tuple["AggregateItem", ...] = ()

    @property
    def is_expression(self) -> bool:
        """An expression over aggregates or keys rather than one aggregate."""
        return bool(self.function and self.function.startswith("Expression:"))


#: The SQL names of the aggregate functions lipspark has rules for (others are asked of the JVM).
_SQL_NAMES = {"Count": "count", "Sum": "sum", "Min": "min", "Max": "max", "Average": "avg", "CollectList": "collect_list"}


def _opaque(tree: "_Node") -> str | None:
    """What in an aggregate's argument has no SQL text Spark parses back: a Python UDF (its
    ``sql()`` is ``<lambda>(x)`` or ``name(x)``, not a registered function) or a lambda of a
    higher-order function (``F.filter(col, lambda x: ...)``)."""
    for n in tree.walk():
        if n.cls == "PythonUDF":
            return f"the Python UDF {n.fields.get('name')!s}"
        if n.cls == "LambdaFunction":
            return "a Python lambda (in F.filter, F.transform, F.exists, F.aggregate, ...)"
    return None


def _aggregate_item(name: str, node: "_Node", jagg: Any) -> AggregateItem:
    """The item of one ``AggregateExpression`` (``node``, its JSON form; ``jagg()`` gives the JVM
    expression, asked only for what the JSON form lacks: names and SQL text)."""
    fn = node.children[0]
    arg = fn.children[0] if fn.children else None
    jfn = jagg().aggregateFunction()
    sql_name = _SQL_NAMES.get(fn.cls) or str(jfn.prettyName())
    opaque = next((o for c in fn.children if (o := _opaque(c)) is not None), None)
    arguments: tuple[str, ...] = ()
    argument = None
    if arg is not None and arg.cls != "Literal" and opaque is None:
        arguments = tuple(str(c.sql()) for c in _seq(jfn.children()))
        argument = arguments[0]
    elif arg is not None:
        argument = "1" if arg.cls == "Literal" else None
    return AggregateItem(
        name,
        fn.cls,
        bool(node.fields.get("isDistinct")),
        argument,
        arg is not None and arg.cls == "Literal",
        len(fn.children),
        len(node.children) > 1,  # the FILTER clause is the second child
        sql_name,
        opaque,
        arguments,
        references(fn),
        bool(fn.fields.get("ignoreNulls")),
        str(jagg().sql()),
    )


def _aggregates_in(tree: "_Node", jexpr: Any) -> list[tuple["_Node", Any]]:
    """The ``AggregateExpression`` nodes of an expression, outermost first, each with its JVM
    node (the JSON tree lists children in the JVM's order, so the two walks stay in step)."""
    out = []
    stack, jstack = [tree], [jexpr]
    while stack:
        node, jnode = stack.pop(), jstack.pop()
        if node.cls == "AggregateExpression":
            out.append((node, jnode))
            continue
        stack.extend(node.children)
        jstack.extend(_seq(jnode.children()))
    return out


def read_aggregate(aggregated: DataFrame) -> list[AggregateItem] | None:
    """Describe the output columns of an aggregation, or ``None`` if it is not one."""
    top = analyzed(aggregated)
    if node_name(top) != "Aggregate":
        return None
    out: list[AggregateItem] = []
    for jexpr in _seq(top.aggregateExpressions()):
        tree = _tree(jexpr)
        name = str(tree.fields["name"])
        inner = tree.children[0] if tree.cls == "Alias" else tree

        def jinner(jexpr: Any = jexpr, aliased: bool = tree.cls == "Alias") -> Any:
            return jexpr.child() if aliased else jexpr

        if inner.cls == "AggregateExpression":
            out.append(_aggregate_item(name, inner, jinner))
        elif inner.cls == "AttributeReference":
            out.append(AggregateItem(name, None))
        else:
            # an expression over aggregates or keys, e.g. sum(a) / count(b): its aggregates are parts
            found = _aggregates_in(inner, jinner()) if any(n.cls == "AggregateExpression" for n in inner.walk()) else []
            parts = tuple(_aggregate_item(name, node, (lambda j=j: j)) for node, j in found)
            out.append(AggregateItem(name, "Expression:" + ",".join(sorted({n.cls for n in inner.walk()})),
                                     references=references(inner), parts=parts))
    return out
