"""Reading PySpark's analyzed logical plans, so the rewrite knows what module code asked for.

Module code is ordinary PySpark: ``df.groupBy("k").agg(F.sum("v"))``. The rewrite does not
re-implement Spark's expression language; it lets Spark analyze the plain operation and reads
the analyzed plan (through the JVM) to learn which operator it is, which aggregate functions it
applies to which argument expressions, which columns a projection passes through unchanged, and
which black-box UDFs it calls. Anything it does not recognise is reported, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

__all__ = [
    "ProjectionItem",
    "Projection",
    "AggregateItem",
    "analyzed",
    "node_name",
    "read_projection",
    "read_aggregate",
]


def analyzed(df: DataFrame) -> Any:
    """The JVM analyzed logical plan of a (classic) PySpark DataFrame."""
    return df._jdf.queryExecution().analyzed()


def node_name(jnode: Any) -> str:
    """Simple class name of a JVM plan or expression node (``Project``, ``Alias``, ...)."""
    return str(jnode.getClass().getSimpleName())


def _seq(jseq: Any) -> list[Any]:
    return [jseq.apply(i) for i in range(jseq.size())]


def _walk(jexpr: Any):
    stack = [jexpr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_seq(node.children()))


@dataclass(frozen=True)
class ProjectionItem:
    """One output column of a projection.

    ``source`` is the input column it passes through unchanged (a bare or renamed column
    reference), else ``None``. ``udfs`` names the Python UDFs the expression calls and
    ``references`` the input columns it reads.
    """

    name: str
    source: str | None
    udfs: tuple[str, ...]
    references: tuple[str, ...]
    udf_args: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Projection:
    """A projection, possibly over one generator (``explode``)."""

    items: tuple[ProjectionItem, ...]
    generator: str | None = None  # e.g. "Explode"
    generator_input: str | None = None  # the exploded column, when it is a bare column
    generator_outputs: tuple[str, ...] = ()
    generator_outer: bool = False


def _item(jexpr: Any) -> ProjectionItem:
    name = str(jexpr.name())
    inner = jexpr.child() if node_name(jexpr) == "Alias" else jexpr
    source = str(inner.name()) if node_name(inner) == "AttributeReference" else None
    udfs: list[str] = []
    udf_args: list[tuple[str, ...]] = []
    for node in _walk(inner):
        if node_name(node) == "PythonUDF":
            udfs.append(str(node.name()))
            args = []
            for child in _seq(node.children()):
                args.append(str(child.name()) if node_name(child) == "AttributeReference" else "")
            udf_args.append(tuple(args))
    refs = tuple(sorted({str(a.name()) for a in _seq(inner.references().toSeq())}))
    return ProjectionItem(name, source, tuple(udfs), refs, tuple(udf_args))


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
    """One output column of ``groupBy(...).agg(...)``.

    ``function`` is Spark's class name (``Count``, ``Sum``, ``Min``, ``Max``, ``Average``,
    ``CollectList``, ...) or ``None`` for a grouping column; ``argument`` is the SQL text of its
    argument, ``literal`` whether that argument is a constant (``count(*)``).
    """

    name: str
    function: str | None
    distinct: bool = False
    argument: str | None = None
    literal: bool = False
    n_args: int = 0
    filtered: bool = False


def read_aggregate(aggregated: DataFrame) -> list[AggregateItem] | None:
    """Describe the output columns of an aggregation, or ``None`` if it is not one."""
    top = analyzed(aggregated)
    if node_name(top) != "Aggregate":
        return None
    out: list[AggregateItem] = []
    for expr in _seq(top.aggregateExpressions()):
        name = str(expr.name())
        inner = expr.child() if node_name(expr) == "Alias" else expr
        if node_name(inner) == "AggregateExpression":
            fn = inner.aggregateFunction()
            args = _seq(fn.children())
            arg = args[0] if args else None
            out.append(
                AggregateItem(
                    name,
                    node_name(fn),
                    bool(inner.isDistinct()),
                    str(arg.sql()) if arg is not None else None,
                    arg is not None and node_name(arg) == "Literal",
                    len(args),
                    bool(inner.filter().isDefined()),
                )
            )
        elif node_name(inner) == "AttributeReference":
            out.append(AggregateItem(name, None))
        else:
            # an expression over aggregates or keys, e.g. sum(a) + 1
            kinds = {node_name(n) for n in _walk(inner)}
            out.append(AggregateItem(name, "Expression:" + ",".join(sorted(kinds))))
    return out
