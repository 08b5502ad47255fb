"""Aggregation rules: ``groupBy().agg()`` and ``distinct`` (Lipstick §3.2, δ and ⊗).

Each group's output row derives from one δ node over the p-nodes of its members (the member
rule makes a · node of a member with several factors; a keyless aggregate, whose one row SQL
returns over any input, is annotated 1: its group node has no member edges, and its members
reach it through its aggregates). Each aggregate of the group is a v-node:

* Count, Sum, Min, Max and Avg — of a column or of any expression over the row
  (``sum(when(c, x).otherwise(0))``) — are ``Σ mᵢ ⊗ vᵢ``, whose ⊗ children pair each member
  with its argument's value (the argument's own v-node when it is a column that has one; a
  black box over the v-nodes an argument expression reads, so a what-if that changes them
  says unknown rather than keep a stale value);
* their DISTINCT forms (``countDistinct``, ``sum_distinct``) are ``Σ_v δ(Σ members with value
  v) ⊗ v``: a δ p-node per distinct value, so deleting every member with a value removes its
  term, and deleting some of them does not;
* ``first``, ``last``, ``collect_set``, ``stddev``/``variance`` and their ``_samp``/``_pop``
  forms have no ⊗ form here: a black-box v-node labelled with the function, fed by every
  member (and the v-nodes its argument reads), valued as Spark computed it;
* an expression over aggregates that is arithmetic over them and literals (``100 · sum(a) /
  sum(b)``, ``0.5 · sum(q)``, ``-avg(x) - 1``) is a formula: per group a tree of arithmetic
  v-nodes (add, multiply, negate, inverse; ``a − b`` is ``a + (−b)``, ``a / b`` is ``a × 1/b``)
  over the aggregates' v-nodes and CONSTANT v-nodes for the literals, its root fed by the
  group's δ too and valued as Spark computed it; a what-if recomputes it;
* any other expression over aggregates (``round(avg(x), 2)``, a ``CASE``) is a black-box
  v-node labelled with its column, fed by the group's δ and the v-nodes of the aggregates in
  it, which are recorded like any other (a what-if shows it unknown).

``collect_list`` keeps each member's p-node in the bag, so an ``explode`` later gets it back.

The rule has four steps: :func:`read_aggregation` (what Spark analyzed), :func:`members_table`
(one row per input row: group id, member id, aggregate arguments), :func:`group_output` (the
plain aggregation, with the bags rebuilt, plus the δ and aggregate v-node ids, and the values
only Spark computes) and recording the :class:`~lipspark.vocabulary.GroupSegment`. Distinct is
a group-by on every column with no aggregate.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout, check_visible
from lipspark.vocabulary.columns import bag_col, factor, is_hidden, value_col
from lipspark.capture.plan import AggregateItem, analyzed, read_aggregate
from lipspark.capture.plan import column_references
from lipspark.capture.rules import regroup
from lipspark.capture.rules._common import BLACK_BOX_HINT, normalized, value_json
from lipspark.capture.rules.condition import record_condition, valued_columns
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary import SPARK_AGGREGATES, AggregateSpec, GroupSegment, Op
from lipspark.vocabulary.ids import aggregate_id_col, node_hash_col, segment_node

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["Aggregation", "Planned", "BLACK_BOX_AGGREGATES", "aggregate", "distinct", "drop_duplicates", "read_aggregation",
           "members_table", "group_output"]

#: Spark's aggregate functions without a ⊗ form here: one black-box v-node per group (labelled
#: with the name module code calls them by). ``collect_list`` is one too inside an expression
#: (``size(collect_list(x))``); on its own it is a bag whose members keep their p-nodes.
BLACK_BOX_AGGREGATES = frozenset({"First", "Last", "CollectSet", "StddevSamp", "StddevPop", "VarianceSamp", "VariancePop"})
#: Those whose result depends on the order rows arrive in, which may differ from one Spark job
#: to the next: the aggregation is computed once, so the output and the graph agree.
_ORDER_DEPENDENT = frozenset({"First", "Last", "CollectList", "CollectSet"})
#: What to write instead of an aggregation lipspark has no rule for.
_SUPPORTED = ("count/sum/min/max/avg (of columns or expressions, DISTINCT too), first/last, collect_list/collect_set, "
              "stddev/variance (_samp/_pop) and expressions over them; for others compute the aggregate with "
              "distinct() or a join, or " + BLACK_BOX_HINT)


@dataclass(frozen=True)
class Planned:
    """One aggregate v-node per group: the item computing it, its operator (Count…Avg with a ⊗
    form, or BLACK_BOX), the output column showing it (``None`` for an aggregate inside an
    expression), the planned aggregates an expression over aggregates is computed from, the
    hidden output column holding a black-box part's value (Spark computes it alongside), and
    the position in the aggregation's output of the column holding its value (``None`` for an
    aggregate with a ⊗ form inside an expression: its value is computed from its members)."""

    op: Op
    item: AggregateItem
    column: str | None
    inputs: tuple[int, ...] = ()
    hidden: str | None = None
    position: int | None = None
    constant: Any = None


@dataclass(frozen=True)
class Aggregation:
    """What Spark analyzed: the plain result (its first ``width`` columns are the user's, then
    the hidden black-box parts), its key columns, per output column after the keys the
    aggregate item, the aggregate v-nodes to record (``planned``) and the positions of the
    ``collect_list`` bag columns among the items."""

    plain: DataFrame
    keys: tuple[Column, ...]
    items: tuple[AggregateItem, ...]
    planned: tuple[Planned, ...]
    bags: tuple[int, ...]
    width: int

    @property
    def key_names(self) -> list[str]:
        return self.plain.columns[: len(self.keys)]

    @property
    def key_types(self) -> list[T.DataType]:
        return [self.plain.schema[i].dataType for i in range(len(self.keys))]

    @property
    def order_dependent(self) -> bool:
        """Whether a black-box aggregate's value depends on the order of the rows."""
        return any(p.op is Op.BLACK_BOX and p.item.function in _ORDER_DEPENDENT for p in self.planned)


def distinct(frame: AnnotatedFrame) -> AnnotatedFrame:
    """Duplicate elimination: each distinct tuple gets δ of the sum of its rows.

    Columns with the same name (both sides' ``k`` after a join on a condition) are compared by
    position, as plain Spark does: under unique names for the grouping, then renamed back."""
    visible = frame.columns
    if len(set(visible)) == len(visible):
        return aggregate(frame, list(visible), [], distinct=True)
    taken = set(visible)
    unique = iter([_fresh(f"{c}_{i}", taken) for i, c in enumerate(visible)])
    df = frame.with_annotations()
    renamed = frame.derive(df.toDF(*[c if is_hidden(c) else next(unique) for c in df.columns]))
    return distinct(renamed).toDF(*visible)


def drop_duplicates(frame: AnnotatedFrame, subset: Sequence[str]) -> AnnotatedFrame:
    """``dropDuplicates(subset)``: one row per distinct value of the ``subset`` columns, annotated
    δ(Σ the rows of that value) as by :func:`distinct`.

    Spark plans it as an aggregate of ``first`` over the other columns, keeping an arbitrary row
    of each key; so each other column's value is a black-box ``first`` v-node with an edge from
    every row of the key (and from the v-nodes that column has on those rows, if any): a what-if
    that deletes a row of the key shows it unknown, one that deletes them all removes the row.
    The data is Spark's own ``dropDuplicates(subset)`` over the same rows, computed once, so the
    row kept is the one plain Spark keeps and the graph holds the values the output shows. An
    empty subset keeps one row of the whole relation (none of an empty one), as Spark does.

    >>> "drop_duplicates" in __all__
    True
    """
    # Spark's own errors first: a name it lacks, a subset that is not a list
    frame.to_plain().dropDuplicates(subset)  # type: ignore[arg-type]
    subset = list(subset)
    visible = frame.columns
    same: Callable[[str, str], bool] = ((lambda a, b: a == b) if frame.tracker.case_sensitive
                                        else (lambda a, b: a.lower() == b.lower()))
    if len(set(visible)) != len(visible):  # as distinct: a name's every column is a key (Spark's rule)
        taken = set(visible)
        unique = [_fresh(f"{c}_{i}", taken) for i, c in enumerate(visible)]
        names = iter(unique)
        df = frame.with_annotations()
        renamed = frame.derive(df.toDF(*[c if is_hidden(c) else next(names) for c in df.columns]))
        keys = [u for u, c in zip(unique, visible) if any(same(c, s) for s in subset)]
        return drop_duplicates(renamed, keys).toDF(*visible)
    keys = [c for c in visible if any(same(c, s) for s in subset)]
    if len(keys) == len(visible):
        return distinct(frame)
    if frame.layout.bags:
        raise UnsupportedOperation(
            f"dropDuplicates(subset) over nested bag column(s) {list(frame.layout.bags)} whose members have provenance",
            "explode the bag first, or drop the column before de-duplicating")
    others = [c for c in visible if c not in keys]
    constant = [] if keys else [F.lit(0).alias(_fresh("lp_all", set(visible)))]  # one group, absent over no rows
    key_cols: list[Any] = [F.col(f"`{k}`") for k in keys] + constant
    exprs = [F.first(F.col(f"`{c}`")).alias(c) for c in others]
    agg = read_aggregation(frame, key_cols, exprs)
    kept = frame.with_annotations().dropDuplicates(keys)  # the row plain Spark keeps: its own operation, same input
    agg = replace(agg, plain=kept.select(*key_cols, *[F.col(f"`{c}`") for c in others]))
    return _recorded(frame, key_cols, exprs, agg, what="dropDuplicates").select(*visible)


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def aggregate(frame: AnnotatedFrame, keys: Sequence[Any], exprs: Sequence[Any], *, distinct: bool = False) -> AnnotatedFrame:
    """``groupBy(*keys).agg(*exprs)`` (or ``distinct()``) with δ per group and ⊗ per member."""
    layout = frame.layout
    if layout.bags and (distinct or any(isinstance(k, str) and k in layout.bags for k in keys)):
        raise UnsupportedOperation(
            f"{'distinct' if distinct else 'groupBy'} over nested bag column(s) {list(layout.bags)} whose members have provenance",
            "explode the bag first, or drop the column before de-duplicating",
        )
    for k in keys:
        if isinstance(k, str):
            check_visible(k)
    key = None if distinct else regroup.valued_key(keys, layout.values)
    if key is None:
        return _recorded(frame, keys, exprs, read_aggregation(frame, keys, exprs, distinct=distinct), distinct=distinct)
    # a group-by on a value: each member's group is recorded per member (rules.regroup)
    pinned = regroup.pin(frame, key)
    out = _recorded(pinned, keys, exprs, read_aggregation(pinned, keys, exprs), pinned_key=key)
    return out.with_latent(regroup.Regrouping(regroup.GroupKeys(tuple(keys), key)))


def _recorded(frame: AnnotatedFrame, keys: Sequence[Any], exprs: Sequence[Any], agg: Aggregation, *,
              distinct: bool = False, what: str | None = None, pinned_key: str | None = None) -> AnnotatedFrame:
    """The aggregation ``agg`` (as :func:`read_aggregation` read it, its data possibly computed
    otherwise) recorded: a δ per group, its aggregates' v-nodes, the output frame
    (``pinned_key``: the key whose groups the members' factors record, :mod:`~lipspark.capture.rules.regroup`)."""
    layout = frame.layout
    tracker = frame.tracker
    _record_grouping(frame, keys, distinct, what, pinned_key)
    seg = tracker.builder.allocate()
    tracker.share(frame.with_annotations())
    group_id = _group_id(seg, keyless=not agg.keys)
    if _collect_members(frame, agg, distinct, what):
        out, members, values, specs = _with_members_collected(frame, seg, agg, exprs, group_id)
    else:
        members, specs = members_table(frame, seg, agg, group_id)
        out, values = group_output(frame, seg, agg, exprs, group_id)
    segment = GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=layout.k, aggregates=specs,
                           group=segment_node(seg) if not agg.keys else None)
    tables = {"members": members, **({"values": values} if values is not None else {})}
    tracker.builder.record(segment, **tables)
    value_names = tuple(p.column for p in agg.planned if p.column is not None)
    return frame.derive(out, Layout(1, value_names, tuple(agg.items[j].name for j in agg.bags)))


#: Plan nodes whose recomputation costs a shuffle: a graph's members table read over an input
#: holding one (a join, an earlier aggregation, a window) would run it again.
_SHUFFLING = ("Join", "Aggregate", "Window")
#: The hidden column of the aggregation that collects its members (:func:`_with_members_collected`).
_MEMBERS = "__lp_members"


def _collect_members(frame: AnnotatedFrame, agg: Aggregation, distinct: bool, what: str | None) -> bool:
    """Whether the members table is collected by the aggregation itself rather than read by a
    job of its own over the aggregation's input: for a ``groupBy`` by keys (a keyless one is one
    group: an array of every row) over an input whose recomputation shuffles (a join), outside
    workflows (whose module relations are small and cached, :meth:`Tracker.share`)."""
    if distinct or what is not None or agg.bags or not agg.keys or frame.tracker.share_breaker_inputs:
        return False
    try:
        plan = frame.with_annotations()._jdf.queryExecution().analyzed()
        stack = [plan]
        while stack:
            node = stack.pop()
            name = node.getClass().getSimpleName()
            if any(name.endswith(s) for s in _SHUFFLING):
                return True
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
    except Exception:  # noqa: BLE001 - no plan to read (e.g. Spark Connect): the members job
        return False
    return False


def _with_members_collected(frame: AnnotatedFrame, seg: int, agg: Aggregation, exprs: Sequence[Any],
                            group_id: Callable[[list[Column]], Column]) -> tuple[DataFrame, DataFrame, DataFrame | None,
                                                                                 tuple[AggregateSpec, ...]]:
    """The aggregation with each group's members collected beside its aggregates
    (``collect_list`` of the members table's row, less the group id), cached for the graph: the
    output, the members table (the groups' arrays exploded, ``g`` their δ id) and the values
    table all read that one computation, so the aggregation's input (a join) is computed once
    for the output and the graph alike, where a members table of its own would compute it
    again. The data is the plain aggregation's: the collected column is dropped from the output."""
    cols, specs = member_columns(frame, seg, agg, group_id)
    member = F.struct(*cols[1:])
    df = frame.with_annotations()
    hidden = [_black_box_column(p.item).alias(p.hidden) for p in agg.planned if p.hidden is not None]
    plain = frame.tracker.keep_for_graph(df.groupBy(*agg.keys).agg(*exprs, *hidden, F.collect_list(member).alias(_MEMBERS)))
    out, values = group_output(frame, seg, replace(agg, plain=plain), exprs, group_id, keep=_MEMBERS)
    members = out.select(F.col(factor(0)).alias("g"), F.inline(F.col(_MEMBERS)))
    return out.drop(_MEMBERS), members, values, specs


def _record_grouping(frame: AnnotatedFrame, keys: Sequence[Any], distinct: bool, what: str | None = None,
                     pinned_key: str | None = None) -> None:
    """Groups keyed by values with v-nodes (a group-by on a count, a distinct over an aggregate)
    depend on those values: a CONDITION node over them (:mod:`~lipspark.capture.rules.condition`),
    except the ``pinned_key``, recorded per member (:mod:`~lipspark.capture.rules.regroup`)."""
    if not frame.layout.values:
        return
    df = frame.with_annotations()
    read: set[str] = set(frame.columns) if distinct else set()
    for k in keys:
        read.update([k] if isinstance(k, str) else column_references(df, k))
    valued = [c for c in valued_columns(read, frame.layout.values) if c != pinned_key]
    if valued:
        what = what or ("distinct" if distinct else "groupBy")
        record_condition(frame.tracker, [(df, valued)], f"{what} on {', '.join(valued)}")


def read_aggregation(frame: AnnotatedFrame, keys: Sequence[Any], exprs: Sequence[Any], *, distinct: bool = False) -> Aggregation:
    """Let Spark analyze the plain aggregation and sort its columns into aggregates with a rule
    (the aggregates inside an expression too), ``collect_list`` bags and values of the keys
    alone; anything else is an :class:`UnsupportedOperation`."""
    df = frame.with_annotations()
    key_cols = tuple(F.col(k) if isinstance(k, str) else k for k in keys)
    items: list[AggregateItem] = []
    if distinct:
        plain = df.select(*frame.columns).distinct()
    else:
        plain = df.groupBy(*key_cols).agg(*exprs)
        items = read_aggregate(plain) or []
        if not items and "Window [" in str(analyzed(plain).toString()):
            raise UnsupportedOperation("a window function inside agg(...)", "aggregate first, groupBy(...).agg(...), then add "
                                       "the window to the result: .withColumn('w', F.sum('total').over(Window.partitionBy()))")
        if not items:
            raise UnsupportedOperation("this aggregation", "groupBy(...).agg(...) with " + _SUPPORTED)
        items = items[len(key_cols):]
    planned: list[Planned] = []
    hidden: list[Column] = []
    bags: list[int] = []
    for j, it in enumerate(items):
        if it.function is None:  # a grouping column: the key's value, no v-node
            continue
        if it.is_expression:
            parts: dict[str | None, int] = {}  # the same aggregate twice in one expression is one v-node
            for part in it.parts:
                if part.sql not in parts:
                    parts[part.sql] = _plan(part, None, planned, hidden, len(plain.columns) + len(hidden))
            if parts and not _plan_formula(it, [parts[p.sql] for p in it.parts], planned, len(key_cols) + j):
                # an expression over the keys alone is their value: no v-node
                planned.append(Planned(Op.BLACK_BOX, it, it.name, tuple(parts.values()), position=len(key_cols) + j))
        elif it.function == "CollectList" and not it.distinct and not it.filtered:
            _check_argument(it)
            bags.append(j)
        else:
            _plan(it, it.name, planned, hidden, len(key_cols) + j)
    width = len(plain.columns)
    if hidden:  # black-box aggregates inside expressions: Spark computes their values alongside
        plain = df.groupBy(*key_cols).agg(*exprs, *hidden)
    return Aggregation(plain, key_cols, tuple(items), tuple(planned), tuple(bags), width)


class _NotAFormula(Exception):
    """The expression reads one aggregate twice in one operation (``sum(x) * sum(x)``): an edge
    cannot say so twice, so it stays a black box."""


def _plan_formula(it: AggregateItem, parts: list[int], planned: list[Planned], position: int) -> bool:
    """Append the arithmetic v-nodes of expression ``it``'s formula (its aggregates planned at
    ``parts``), children first, its root shown in column ``it.name``; False (nothing appended)
    when it has no formula."""
    if it.formula is None:
        return False
    mark = len(planned)

    def node(f: Any) -> int:
        kind = f[0]
        if kind == "agg":
            return parts[f[1]]
        if kind == "lit":
            planned.append(Planned(Op.CONSTANT, it, None, constant=f[1]))
            return len(planned) - 1
        kids = [node(x) for x in f[1:]]
        if kind == "sub":
            planned.append(Planned(Op.NEGATE, it, None, (kids[1],)))
            kids[1] = len(planned) - 1
        elif kind == "div":
            planned.append(Planned(Op.INVERSE, it, None, (kids[1],)))
            kids[1] = len(planned) - 1
        if len(set(kids)) < len(kids):
            raise _NotAFormula
        op = {"add": Op.ADD, "sub": Op.ADD, "mul": Op.MULTIPLY, "div": Op.MULTIPLY, "neg": Op.NEGATE}[kind]
        planned.append(Planned(op, it, None, tuple(kids)))
        return len(planned) - 1

    try:
        root = node(it.formula)
    except _NotAFormula:
        del planned[mark:]
        return False
    if root < mark or planned[root].op is Op.CONSTANT:  # the expression is one aggregate (a cast of it): + of one
        planned.append(Planned(Op.ADD, it, None, (root,)))
        root = len(planned) - 1
    planned[root] = replace(planned[root], column=it.name, position=position)
    return True


def _check_argument(it: AggregateItem) -> None:
    if it.opaque is not None:
        raise UnsupportedOperation(
            f"aggregate {it.sql_name}(...) whose argument calls {it.opaque} (column {it.name!r})",
            f"compute the argument in a column first, df.withColumn('x', <the argument>), then aggregate "
            f"that column: .agg(F.{it.sql_name}('x'))")


def _plan(it: AggregateItem, column: str | None, planned: list[Planned], hidden: list[Column], position: int) -> int:
    """Append the v-node aggregate ``it`` gets (shown in ``column`` at ``position``, or a part of
    an expression) to ``planned``; its index. A black-box part's value is computed by an extra
    hidden column, at ``position``."""
    _check_argument(it)
    fn = it.function or ""
    if it.filtered:
        raise UnsupportedOperation(_unsupported(it), "filter the rows first (df.filter(...).groupBy(...)), or aggregate "
                                   "F.when(<condition>, <argument>), which is null where the condition fails")
    if fn in SPARK_AGGREGATES and (it.n_args == 1 or (it.distinct and SPARK_AGGREGATES[fn] is Op.COUNT)):
        planned.append(Planned(SPARK_AGGREGATES[fn], it, column, position=position if column is not None else None))
    elif fn in BLACK_BOX_AGGREGATES or (column is None and fn == "CollectList"):
        name = None
        if column is None:
            name = f"__lp_y{len(planned)}"
            hidden.append(_black_box_column(it).alias(name))
        planned.append(Planned(Op.BLACK_BOX, it, column, hidden=name, position=position))
    else:
        raise UnsupportedOperation(_unsupported(it), _SUPPORTED)
    return len(planned) - 1


def _black_box_column(it: AggregateItem) -> Column:
    """The aggregate ``it`` as a column of its own (its SQL text, which drops the IGNORE NULLS
    of ``first``/``last``: those are rebuilt)."""
    if it.function in ("First", "Last") and it.argument is not None:
        fn = F.first if it.function == "First" else F.last
        return fn(F.expr(it.argument), it.ignore_nulls)
    assert it.sql is not None
    return F.expr(it.sql)


def _unsupported(it: AggregateItem) -> str:
    where = f"column {it.name!r}"
    return (f"aggregate {it.sql_name or it.function}" + (" DISTINCT" if it.distinct else "")
            + (" with FILTER" if it.filtered else "") + f" ({where})")


def _group_id(seg: int, *, keyless: bool) -> Callable[[list[Column]], Column]:
    """The δ id of a group from its (normalized) key values: a content id; a keyless aggregate
    has one group even over no rows, so its id is static (and recorded in the segment)."""
    if keyless:
        return lambda cols: F.lit(segment_node(seg))
    return lambda cols: node_hash_col(seg, *cols)


def members_table(frame: AnnotatedFrame, seg: int, agg: Aggregation,
                  group_id: Callable[[list[Column]], Column]) -> tuple[DataFrame, tuple[AggregateSpec, ...]]:
    """One row per input row: group ``g``, member ``m`` (its factors when it may be a product),
    the distinct non-constant aggregate arguments ``x<i>``, the v-nodes the arguments read
    (``v<j>``: a bare column's own; ``w<j>_<n>``: those an expression reads), the δ id of each
    DISTINCT aggregate's value ``d<j>``; and the segment's aggregate specs."""
    cols, specs = member_columns(frame, seg, agg, group_id)
    return frame.with_annotations().select(*cols), specs


def member_columns(frame: AnnotatedFrame, seg: int, agg: Aggregation,
                   group_id: Callable[[list[Column]], Column]) -> tuple[list[Column], tuple[AggregateSpec, ...]]:
    """The columns of :func:`members_table` over the frame's rows (``g`` first), and the specs."""
    layout = frame.layout
    df = frame.with_annotations()
    in_keys = [normalized(k, t) for k, t in zip(agg.keys, agg.key_types)]
    gid = group_id(in_keys)
    cols: list[Column] = [gid.alias("g"), layout.member_col(seg).alias("m")]
    if layout.k > 1:
        cols += layout.factor_cols()
    arguments: list[str] = []
    specs: list[AggregateSpec] = []
    for j, p in enumerate(agg.planned):
        it = p.item
        column = p.column if p.column is not None else f"{it.name}: {it.sql}"
        if p.op.is_arithmetic or p.op is Op.CONSTANT:  # a formula's node: nothing per member
            root = p.column is not None
            specs.append(AggregateSpec(p.op, None, column if root else f"{it.name}: {p.op.name.lower()}",
                                       label=it.name if root else (p.op.label if p.op.is_arithmetic else str(p.constant)),
                                       value=f"y{j}" if root else None, inputs=p.inputs, constant=p.constant))
            continue
        if p.inputs:  # an expression over aggregates: nothing per member
            specs.append(AggregateSpec(Op.BLACK_BOX, None, column, label=it.name, value=f"y{j}", inputs=p.inputs))
            continue
        vnode, reads = _argument_vnodes(layout, it, j, cols)
        if p.op is Op.BLACK_BOX:
            specs.append(AggregateSpec(Op.BLACK_BOX, None, column, vnode, reads, label=it.sql_name or it.function, value=f"y{j}"))
            continue
        arg_index = None
        if not it.literal and not (it.distinct and p.op is Op.COUNT):
            assert it.argument is not None
            if it.argument not in arguments:
                arguments.append(it.argument)
                cols.append(F.expr(it.argument).alias(f"x{len(arguments) - 1}"))
            arg_index = arguments.index(it.argument)
        distinct_col = None
        if it.distinct:
            distinct_col = f"d{j}"
            cols.append(_distinct_id(df, seg, gid, j, it).alias(distinct_col))
        label = it.argument if reads or (it.distinct and vnode is not None) else None
        specs.append(AggregateSpec(p.op, arg_index, column, vnode, reads, label, distinct_col))
    return cols, tuple(specs)


def _argument_vnodes(layout: Layout, it: AggregateItem, j: int, cols: list[Column]) -> tuple[str | None, tuple[str, ...]]:
    """The members-table columns of the v-nodes aggregate ``j``'s argument reads (appended to
    ``cols``): a bare column's own v-node (``v<j>``), or those an expression reads (``w<j>_<n>``)."""
    source = it.argument.strip("`") if not it.literal and it.argument is not None and it.n_args == 1 else None
    if source in layout.values:  # the argument has its own v-node: ⊗ pairs the member with it
        cols.append(F.col(value_col(source)).alias(f"v{j}"))
        return f"v{j}", ()
    reads = []
    for n, c in enumerate(r for r in it.references if r in layout.values):
        cols.append(F.col(value_col(c)).alias(f"w{j}_{n}"))
        reads.append(f"w{j}_{n}")
    return None, tuple(reads)


def _distinct_id(df: DataFrame, seg: int, gid: Column, j: int, it: AggregateItem) -> Column:
    """The δ id of a member's distinct value (content: group, aggregate, the values as Spark
    compares them), null when any argument is null (the member does not take part)."""
    texts = it.arguments or ((it.argument,) if it.argument is not None else ())
    xs = [F.expr(a) for a in texts]
    types = df.select(*xs).schema if xs else T.StructType([])
    keyed = [normalized(x, f.dataType) for x, f in zip(xs, types.fields)]
    present = reduce(lambda a, b: a & b, [x.isNotNull() for x in xs], F.lit(True))
    return F.when(present, node_hash_col(seg, gid, F.lit(j).cast("long"), *keyed))


def group_output(frame: AnnotatedFrame, seg: int, agg: Aggregation, exprs: Sequence[Any],
                 group_id: Callable[[list[Column]], Column], keep: str | None = None) -> tuple[DataFrame, DataFrame | None]:
    """Exactly the plain aggregation (``collect_list`` rebuilt to keep member provenance), with
    each group's δ id as its factor and each aggregate's v-node id; and the ``values`` table of
    the black-box aggregates (``None`` without any): per group ``g``, ``y<j>`` the value as JSON."""
    out = _with_bags(frame, seg, agg, exprs) if agg.bags else agg.plain
    if agg.order_dependent:  # the output and the graph must see the same values
        out = frame.tracker.compute_once(out)
    names = out.columns  # addressed by position: names may repeat (agg(F.sum("v"), F.sum("v")), k and K)
    out = out.toDF(*[f"__lp_c{i}" for i in range(len(names))])

    def col(i: int) -> Column:
        return F.col(f"__lp_c{i}")

    gid = group_id([normalized(col(i), t) for i, t in enumerate(agg.key_types)])
    ids = [aggregate_id_col(gid, j).alias(value_col(p.column)) for j, p in enumerate(agg.planned) if p.column is not None]
    boxes = [(j, p.position) for j, p in enumerate(agg.planned) if (p.op is Op.BLACK_BOX or p.op.is_arithmetic) and p.position is not None]
    values = None
    if boxes:
        values = out.select(gid.alias("g"), *[value_json(col(i), out.schema[i].dataType).alias(f"y{j}") for j, i in boxes])
    visible = [col(i).alias(names[i]) for i in range(agg.width)]
    members = [col(names.index(bag_col(agg.items[j].name))).alias(bag_col(agg.items[j].name)) for j in agg.bags]
    kept = [col(names.index(keep)).alias(keep)] if keep is not None else []  # a hidden column passed through, last
    return out.select(*visible, gid.alias(factor(0)), *ids, *members, *kept), values


def _with_bags(frame: AnnotatedFrame, seg: int, agg: Aggregation, exprs: Sequence[Any]) -> DataFrame:
    """The aggregation with every ``collect_list`` collecting (value, member p-node) pairs, split
    into the bag column and its hidden member column (after the others: the user's columns keep
    their positions)."""
    staged = frame.with_annotations().withColumn("__lp_m", frame.layout.member_col(seg))
    agg_exprs = list(exprs)
    for j in agg.bags:
        argument = agg.items[j].argument
        if argument is None:
            raise UnsupportedOperation("collect_list without an argument", "collect_list(column)")
        arg = F.expr(argument)
        agg_exprs[j] = F.collect_list(F.when(arg.isNotNull(), F.struct(arg.alias("v"), F.col("__lp_m").alias("m")))).alias(agg.items[j].name)
    hidden = [_black_box_column(p.item).alias(p.hidden) for p in agg.planned if p.hidden is not None]
    grouped = staged.groupBy(*agg.keys).agg(*agg_exprs, *hidden)
    nkeys = len(agg.keys)
    out: list[Column] = []
    members: list[Column] = []
    for pos, c in enumerate(grouped.columns):
        if pos - nkeys in agg.bags:
            out.append(F.transform(grouped[pos], lambda s: s["v"]).alias(c))
            members.append(F.transform(grouped[pos], lambda s: F.struct(s["m"].alias("m"))).alias(bag_col(c)))
        else:
            out.append(grouped[pos])
    return grouped.select(*out[: agg.width], *out[agg.width:], *members)
