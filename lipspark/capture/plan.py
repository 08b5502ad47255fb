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
from typing import Any, Callable, Iterator

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
    "WindowFrame",
    "WindowItem",
    "WindowSelect",
    "read_window_select",
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
    argument impossible to re-read as SQL text (a Python UDF, a lambda), else ``None``. An
    expression that is arithmetic over its aggregates and literals has a ``formula``
    (:func:`formula`), else ``None``.
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
    formula: Any = None

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


#: Casts a formula passes through: to a floating-point or decimal type (not to an integer,
#: which truncates).
_NUMERIC_CASTS = ("double", "float")
_INTEGRAL = ("integer", "long", "short", "byte")


def formula(tree: "_Node", parts: list["_Node"], jexpr: Any = None) -> Any:
    """An expression over aggregates as a formula, if it is one: nested tuples ``("add", a, b)``,
    ``("sub", a, b)``, ``("mul", a, b)``, ``("div", a, b)``, ``("neg", a)``, ``("lit", number)``
    and ``("agg", k)``, the aggregate ``parts[k]`` (the same node object); ``None`` when it
    computes anything else (``round``, a ``CASE``, a cast that may truncate). A cast to an
    integer type is one only when what it casts is an integer (its type read from ``jexpr``,
    the expression's JVM node, walked in step: without it, such a cast is no formula).

    >>> agg = _Node("AggregateExpression", {}, [])
    >>> lit = _Node("Literal", {"value": "100.0", "dataType": "double"}, [])
    >>> formula(_Node("Divide", {}, [_Node("Multiply", {}, [agg, lit]), agg]), [agg])
    ('div', ('mul', ('agg', 0), ('lit', 100.0)), ('agg', 0))
    >>> formula(_Node("Round", {}, [agg, lit]), [agg]) is None
    True
    """
    def leaf(n: "_Node") -> Any:
        if n.cls == "AggregateExpression":
            at = [k for k, p in enumerate(parts) if p is n]
            return ("agg", at[0]) if at else None
        return DESCEND

    return arithmetic_formula(tree, jexpr, leaf)


#: What a leaf rule of :func:`arithmetic_formula` returns for a node that is no leaf.
DESCEND: Any = object()
_BINARY = {"Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div"}


def arithmetic_formula(tree: "_Node", jexpr: Any, leaf: Callable[["_Node"], Any]) -> Any:
    """Arithmetic over ``tree`` as nested tuples (``("add", a, b)``, ``("sub", a, b)``,
    ``("mul", a, b)``, ``("div", a, b)``, ``("neg", a)``, ``("lit", number)``), ``leaf(node)``
    deciding each node first (a formula, ``None`` for none, or :data:`DESCEND`); ``None`` when
    a node is none of these or a cast may truncate (to an integer type from anything but an
    integer, whose type is read from ``jexpr``, the JVM node, walked in step)."""
    binary = _BINARY

    def walk(n: "_Node", j: Any) -> Any:
        got = leaf(n)
        if got is not DESCEND:
            return got
        jk = _seq(j.children()) if j is not None and n.children else []
        jk = jk if len(jk) == len(n.children) else [None] * len(n.children)
        if n.cls in binary and len(n.children) == 2:
            a, b = walk(n.children[0], jk[0]), walk(n.children[1], jk[1])
            return None if a is None or b is None else (binary[n.cls], a, b)
        if n.cls == "UnaryMinus" and len(n.children) == 1:
            a = walk(n.children[0], jk[0])
            return None if a is None else ("neg", a)
        if n.cls == "Cast" and len(n.children) == 1:
            to = str(n.fields.get("dataType", ""))
            whole = to in _INTEGRAL and jk[0] is not None and str(jk[0].dataType().typeName()) in _INTEGRAL
            return walk(n.children[0], jk[0]) if to in _NUMERIC_CASTS or to.startswith("decimal") or whole else None
        if n.cls == "Literal" and not n.children:
            return _literal(n.fields.get("value"), str(n.fields.get("dataType", "")))
        return None

    return walk(tree, jexpr)


def _literal(text: Any, dtype: str) -> Any:
    if text is None:
        return ("lit", None)
    try:
        if dtype in _INTEGRAL:
            return ("lit", int(text))
        if dtype in _NUMERIC_CASTS or dtype.startswith("decimal"):
            return ("lit", float(text))
    except (TypeError, ValueError):
        return None
    return None


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
                                     references=references(inner), parts=parts,
                                     formula=formula(inner, [node for node, _ in found], jinner()) if found else None))
    return out


# ---------------------------------------------------------------------------- window functions
@dataclass(frozen=True)
class WindowFrame:
    """A window's frame: ``rows`` (ROWS, else RANGE) between ``lower`` and ``upper``, offsets from
    the current row (``None``: unbounded on that side). ``known`` is false for a bound that is no
    integer literal (an interval of a RANGE frame over dates)."""

    rows: bool
    lower: int | None
    upper: int | None
    known: bool = True

    @property
    def whole_partition(self) -> bool:
        """Every row of the partition is in the frame of every row."""
        return self.known and self.lower is None and self.upper is None

    @property
    def deletion_stable(self) -> bool:
        """A row's frame in a world without some rows is its frame now without them (and it
        contains the row itself): a RANGE frame around the current row's value, or a ROWS frame
        whose bounds are the current row or unbounded. A ROWS frame with an offset (``-1``)
        would take in another row when one goes.

        >>> WindowFrame(rows=True, lower=None, upper=0).deletion_stable, WindowFrame(rows=True, lower=-1, upper=0).deletion_stable
        (True, False)
        >>> WindowFrame(rows=False, lower=-5, upper=10).deletion_stable, WindowFrame(rows=False, lower=1, upper=3).deletion_stable
        (True, False)
        """
        if not self.known:
            return False
        lo_ok = self.lower is None or self.lower <= 0
        hi_ok = self.upper is None or self.upper >= 0
        if not self.rows:
            return lo_ok and hi_ok
        return self.lower in (None, 0) and self.upper in (None, 0)


@dataclass(frozen=True)
class WindowItem:
    """One window function in a select: the output column ``name`` at ``index`` of the select,
    Spark's class of the function (``Sum``, ``RowNumber``, ``Lag``) and the name module code
    calls it by (``sum``, ``row_number``), ``aggregate`` (for an aggregate function: its
    arguments as :class:`AggregateItem` reads them, through the expressions Spark computes
    beneath the window), ``partition`` and ``order`` (the columns; an order column with its
    direction and whether nulls come first; ``None`` for an expression), ``frame``, the input
    columns the function's arguments read (``references``) and those the partition and order
    read (``key_references``)."""

    name: str
    index: int
    function: str
    sql_name: str
    aggregate: AggregateItem | None
    partition: tuple[str | None, ...]
    order: tuple[tuple[str | None, bool, bool], ...]
    frame: WindowFrame
    references: tuple[str, ...]
    key_references: tuple[str, ...]
    key_sql: tuple[str, ...] = ()

    @property
    def spec(self) -> tuple[Any, ...]:
        """What two windows must share to be evaluated over the same sorted partitions."""
        return (self.partition, self.order)


@dataclass(frozen=True)
class WindowSelect:
    """A select with window functions: per position of the select its window (``windows``),
    the columns that are expressions over a window's value (``over_windows``) and the number of
    columns (``width``)."""

    windows: dict[int, WindowItem]
    over_windows: tuple[str, ...]
    width: int


def _expr_key(fields: dict[str, Any]) -> tuple[Any, Any] | None:
    e = fields.get("exprId")
    return (e.get("id"), e.get("jvmId")) if isinstance(e, dict) else None


def _jexpr_key(jexpr: Any) -> tuple[Any, Any]:
    e = jexpr.exprId()
    return (int(e.id()), str(e.jvmId()))


def _frame(tree: "_Node") -> WindowFrame:
    rows = "RowFrame" in str(tree.fields.get("frameType", {}).get("object", ""))

    def bound(node: "_Node", unbounded: str) -> tuple[int | None, bool]:
        while node.cls == "Cast" and node.children:
            node = node.children[0]
        if node.cls == unbounded:
            return None, True
        if node.cls == "CurrentRow$":
            return 0, True
        if node.cls == "Literal":
            try:
                return int(str(node.fields.get("value"))), True
            except ValueError:
                return None, False
        return None, False

    if tree.cls != "SpecifiedWindowFrame" or len(tree.children) != 2:
        return WindowFrame(rows, None, None, known=False)
    (lo, lo_ok), (hi, hi_ok) = bound(tree.children[0], "UnboundedPreceding$"), bound(tree.children[1], "UnboundedFollowing$")
    return WindowFrame(rows, lo, hi, lo_ok and hi_ok)


def read_window_select(source: DataFrame, projected: DataFrame) -> WindowSelect | None:
    """Describe ``projected``, a select over ``source`` with window functions (``None`` if its
    plan has no Window): Spark's analyzed plan is a Project over Projects over one Window per
    (partition, order) over a Project computing the window functions' argument and key
    expressions (``_w0``) over ``source``."""
    top = analyzed(projected)
    if node_name(top) != "Project":
        return None
    node = top.child()
    mids: dict[Any, _Node] = {}  # the Projects between the select and the windows: exprId -> definition
    while node_name(node) == "Project":
        for e in _seq(node.projectList()):
            t = _tree(e)
            if t.cls == "Alias":
                mids[_expr_key(t.fields)] = t.children[0]
        node = node.child()
    windows: list[Any] = []
    while node_name(node) == "Window":
        windows.append(node)
        node = node.child()
    if not windows:
        return None
    below: dict[Any, tuple[_Node, Any]] = {}  # the expressions computed beneath the windows (_w0)
    if node_name(node) == "Project" and not node.fastEquals(analyzed(source)):
        for e in _seq(node.projectList()):
            if node_name(e) == "Alias":
                below[_jexpr_key(e)] = (_tree(e.child()), e.child())
    produced: dict[Any, tuple[Any, _Node]] = {}  # window alias exprId -> (its JVM alias, tree)
    for w in windows:
        for e in _seq(w.windowExpressions()):
            produced[_jexpr_key(e)] = (e, _tree(e))

    def resolved(tree: "_Node") -> "_Node":
        while tree.cls == "Alias":
            tree = tree.children[0]
        while tree.cls == "AttributeReference" and _expr_key(tree.fields) in mids:
            tree = mids[_expr_key(tree.fields)]
            while tree.cls == "Alias":
                tree = tree.children[0]
        return tree

    def reads_window(tree: "_Node") -> bool:
        for n in tree.walk():
            if n.cls == "AttributeReference":
                k = _expr_key(n.fields)
                if k in produced or (k in mids and reads_window(mids[k])):
                    return True
        return False

    out: dict[int, WindowItem] = {}
    over: list[str] = []
    items = _seq(top.projectList())
    for i, jexpr in enumerate(items):
        tree = _tree(jexpr)
        name = str(tree.fields["name"])
        inner = resolved(tree)
        key = _expr_key(inner.fields) if inner.cls == "AttributeReference" else None
        if key in produced:
            out[i] = _window_item(name, i, *produced[key], below)
        elif reads_window(inner):
            over.append(name)
    return WindowSelect(out, tuple(over), len(items))


def _window_item(name: str, index: int, jalias: Any, tree: "_Node", below: dict[Any, tuple["_Node", Any]]) -> WindowItem:
    wexpr = tree.children[0]  # Alias -> WindowExpression(function, spec)
    fn, spec = wexpr.children
    jfn = jalias.child().windowFunction()

    def source(node: "_Node") -> "_Node":
        if node.cls == "AttributeReference" and _expr_key(node.fields) in below:
            return below[_expr_key(node.fields)][0]
        return node

    def source_sql(jnode: Any) -> str:
        if node_name(jnode) == "AttributeReference" and _jexpr_key(jnode) in below:
            return str(below[_jexpr_key(jnode)][1].sql())
        return str(jnode.sql())

    n_part = len(spec.fields.get("partitionSpec", []))
    n_order = len(spec.fields.get("orderSpec", []))
    parts, orders = spec.children[:n_part], spec.children[n_part:n_part + n_order]
    frame = _frame(spec.children[n_part + n_order]) if len(spec.children) > n_part + n_order else WindowFrame(True, None, None, False)

    def column(node: "_Node") -> str | None:
        return str(node.fields["name"]) if node.cls == "AttributeReference" and _expr_key(node.fields) not in below else None

    partition = tuple(column(p) for p in parts)
    order = tuple((column(o.children[0]), "Ascending" in str(o.fields.get("direction")), "NullsFirst" in str(o.fields.get("nullOrdering")))
                  for o in orders)
    jspec = jalias.child().windowSpec()
    key_sql = tuple(source_sql(p) for p in _seq(jspec.partitionSpec())) + tuple(source_sql(o.child()) for o in _seq(jspec.orderSpec()))
    key_refs = sorted({r for node in (*parts, *(o.children[0] for o in orders)) for r in references(source(node))})
    aggregate = None
    if fn.cls == "AggregateExpression":
        agg_fn = fn.children[0]
        jagg = jfn.aggregateFunction()
        args = [source(c) for c in agg_fn.children]
        opaque = next((o for c in args if (o := _opaque(c)) is not None), None)
        texts = tuple(source_sql(c) for c in _seq(jagg.children()))
        first = args[0] if args else None
        argument = None
        if first is not None and first.cls != "Literal" and opaque is None:
            argument = texts[0]
        elif first is not None and first.cls == "Literal":
            argument = "1"
        refs = tuple(sorted({r for a in args for r in references(a)}))
        aggregate = AggregateItem(
            name, agg_fn.cls, bool(fn.fields.get("isDistinct")), argument, first is not None and first.cls == "Literal",
            len(agg_fn.children), len(fn.children) > 1, _SQL_NAMES.get(agg_fn.cls) or str(jagg.prettyName()), opaque,
            texts if opaque is None and first is not None and first.cls != "Literal" else (), refs,
            bool(agg_fn.fields.get("ignoreNulls")), None)
        sql_name = aggregate.sql_name or agg_fn.cls
        fn_refs = refs
    else:
        sql_name = str(jfn.prettyName())
        fn_refs = tuple(sorted({r for c in fn.children for r in references(source(c))}))
    return WindowItem(name, index, aggregate.function if aggregate is not None and aggregate.function else fn.cls, sql_name,
                      aggregate, partition, order, frame, fn_refs, tuple(key_refs), key_sql)
