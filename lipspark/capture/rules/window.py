"""Window functions: ``F.sum("v").over(Window.partitionBy("k"))``, ``F.row_number().over(w)``.

A window adds a column; it neither merges nor drops rows, so each output row keeps its own
annotation (Lipstick §3.2: a projection). The new column's value gets a v-node:

* **an aggregate window** (``count``, ``sum``, ``min``, ``max``, ``avg``) is a semimodule
  aggregate (Amsterdamer, Deutch and Tannen, PODS 2011) over the row's *frame*,
  ``Σ mᵢ ⊗ vᵢ`` with one ⊗ per frame member, as a ``groupBy`` builds it
  (:func:`~lipspark.capture.rules.aggregate.members_table`), so a what-if that deletes a member
  recomputes the value as a re-run does:

  - over the whole partition (no ``orderBy``, or a frame unbounded on both sides) every row of
    a partition sees one frame: one δ and one aggregate v-node per partition, shared by its rows
    (the ``groupBy`` of the partition joined back to each row);
  - over a frame that a deletion only shrinks — a RANGE frame around the row's order value
    (``orderBy`` alone: unbounded preceding to the current row's peers), a ROWS frame bounded
    by the current row or unbounded (a running total) — one δ and one aggregate v-node per
    distinct frame, its members the frame's rows as Spark itself collected them (a
    ``collect_list`` over the same window, which Spark evaluates beside the user's);

* **everything else** — ranking and offset functions (``row_number``, ``rank``, ``dense_rank``,
  ``percent_rank``, ``cume_dist``, ``ntile``, ``lag``, ``lead``, ``nth_value``), the aggregates
  without a ⊗ form (``first``, ``last``, ``collect_list``, ``collect_set``, ``stddev``…), and
  aggregates over a ROWS frame with an offset (``rowsBetween(-1, 0)``: deleting a row moves
  another into the frame) — is a black-box v-node per row labelled with the function as
  module code names it, valued as Spark computed it, with an edge from one δ over the row's
  partition: a what-if that deletes any member of the partition shows it unknown, never a
  stale value.

When the partition, the order or a black box's argument reads values with v-nodes (a window
over an aggregate's result), one CONDITION node over them is recorded too
(:mod:`~lipspark.capture.rules.condition`) and each black box has an edge from it. Windows whose
result may differ from one Spark job to the next (an order with ties, ranking, ``first``) are
computed once, so the output and the graph see the same values.

>>> "RowNumber" in RANKING, "Sum" in RANKING
(True, False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.capture.plan import WindowItem, WindowSelect, read_window_select
from lipspark.capture.rules._common import BLACK_BOX_HINT, normalized, unique_columns, value_json
from lipspark.capture.rules.aggregate import BLACK_BOX_AGGREGATES, Aggregation, Planned, members_table
from lipspark.capture.rules.condition import record_condition, valued_columns
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary import SPARK_AGGREGATES, GroupSegment, Op, RowNodeSegment
from lipspark.vocabulary.columns import factor, value_col
from lipspark.vocabulary.ids import aggregate_id_col, node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["RANKING", "stage", "windowed"]

#: Spark's ranking and offset window functions: a black-box v-node per row.
RANKING = frozenset({"RowNumber", "Rank", "DenseRank", "PercentRank", "CumeDist", "NTile", "Lag", "Lead", "NthValue"})

#: What to write instead of a window lipspark has no rule for.
_SUPPORTED = ("count/sum/min/max/avg, first/last, collect_list/collect_set, stddev/variance, row_number, rank, dense_rank, "
              "percent_rank, cume_dist, ntile, lag, lead or nth_value over Window.partitionBy(...).orderBy(...); or "
              + BLACK_BOX_HINT)


@dataclass(frozen=True)
class _Planned:
    """A window item, the rule it gets (``shared``, ``framed`` or ``black_box``), the hidden
    name of its value in the staged frame and its op."""

    item: WindowItem
    rule: str
    staged: str
    op: Op = Op.BLACK_BOX


def windowed(source: DataFrame, projected: DataFrame) -> WindowSelect | None:
    """The windows of ``projected``, a select over ``source`` (``None`` without any)."""
    return read_window_select(source, projected)


def stage(frame: AnnotatedFrame, columns: Sequence[Any], windows: WindowSelect) -> tuple[AnnotatedFrame, list[Any]]:
    """A select with window functions (``windows``, as :func:`windowed` read it), staged: each
    window column's value computed by Spark beside the row's annotation and its v-node recorded
    by its rule; returns the staged frame and the select to make of it (the windows replaced by
    their staged columns), a projection (:func:`lipspark.capture.rules.projection.select`)."""
    if windows.over_windows:
        name = windows.over_windows[0]
        raise UnsupportedOperation(
            f"column {name!r}: an expression over a window function's value",
            "compute the window in a column of its own, df.withColumn('w', F.sum('v').over(w)), then the expression "
            "over that column in a later select (its value is then a black box of the window's v-node)")
    if windows.width != len(columns):
        raise UnsupportedOperation("a select with window functions and '*' inside a column expression",
                                   "name the columns (df.select(*df.columns, F.row_number().over(w).alias('rn')))")
    unique_columns(frame, "a select with window functions")
    layout = frame.layout
    planned = [_plan(frame, it, f"lp_window_{i}") for i, it in enumerate(windows.windows.values())]
    planned = [_Planned(p.item, p.rule, _fresh(p.staged, frame.columns), p.op) for p in planned]
    df = frame.with_annotations()
    tracker = frame.tracker
    staged_cols: list[Column] = [columns[p.item.index].alias(p.staged) if isinstance(columns[p.item.index], Column)
                                 else F.col(columns[p.item.index]).alias(p.staged) for p in planned]
    framed = _framed_groups(planned)
    extra: list[Column] = []
    for n, group in enumerate(framed):
        extra += _frame_columns(frame, group, n)
    staged = df.select("*", *staged_cols, *extra)
    if any(p.rule == "black_box" or (p.rule == "framed" and p.item.frame.rows) or p.item.aggregate is None
           or (p.item.aggregate.function in ("First", "Last", "CollectList")) for p in planned):
        staged = tracker.compute_once(staged)  # the order of ties, first/last: one answer for output and graph
    else:
        staged = tracker.share(staged)

    condition = _record_condition(frame, planned)
    ids: dict[str, Column] = {}
    for group in _shared_groups(planned):
        ids.update(_record_shared(frame, staged, group))
    for n, group in enumerate(framed):
        ids.update(_record_framed(frame, staged, group, n))
    for group in _partition_groups([p for p in planned if p.rule == "black_box"]):
        ids.update(_record_black_boxes(frame, staged, group, condition))

    names = [p.staged for p in planned]
    kept = [c for c in staged.columns if not c.startswith("__lp_k") and not c.startswith("__lp_q")]
    out = staged.select(*[F.col(f"`{c}`") for c in kept], *[ids[n].alias(value_col(n)) for n in names])
    middle = frame.derive(out, layout.with_(values=[*layout.values, *names]))
    rewritten = [F.col(f"`{p.staged}`").alias(p.item.name) for p in planned]
    by_index = {p.item.index: c for p, c in zip(planned, rewritten)}
    return middle, [by_index.get(i, c) for i, c in enumerate(columns)]


def _fresh(name: str, taken: Sequence[str]) -> str:
    lowered = {t.lower() for t in taken}
    while name.lower() in lowered:
        name += "_"
    return name


def _plan(frame: AnnotatedFrame, it: WindowItem, staged: str) -> _Planned:
    """Which rule a window item gets, or an :class:`UnsupportedOperation` naming it."""
    bags = [c for c in (*it.references, *it.key_references) if c in frame.layout.bags]
    if bags:
        raise UnsupportedOperation(f"window function {it.sql_name} (column {it.name!r}) over the nested bag {bags[0]!r}",
                                   "explode the bag first, or drop its provenance with a select of its values")
    agg = it.aggregate
    if agg is not None:
        fn = agg.function or ""
        if agg.filtered or agg.distinct:
            raise UnsupportedOperation(f"window function {it.sql_name}{' DISTINCT' if agg.distinct else ' with FILTER'} "
                                       f"(column {it.name!r})", "filter the rows first, or " + _SUPPORTED)
        if fn in SPARK_AGGREGATES and agg.n_args == 1:
            if agg.opaque is not None:
                raise UnsupportedOperation(
                    f"window function {it.sql_name}(...) whose argument calls {agg.opaque} (column {it.name!r})",
                    f"compute the argument in a column first, df.withColumn('x', <the argument>), then "
                    f"F.{it.sql_name}('x').over(w)")
            if it.frame.whole_partition:
                return _Planned(it, "shared", staged, SPARK_AGGREGATES[fn])
            if it.frame.deletion_stable:
                keys = (*it.partition, *(o[0] for o in it.order))
                if any(k is None for k in keys):
                    raise UnsupportedOperation(
                        f"window function {it.sql_name} (column {it.name!r}) ordered or partitioned by an expression "
                        f"({', '.join(it.key_sql)})",
                        "compute the key in a column first, df.withColumn('key', <expression>), then "
                        "Window.partitionBy('key').orderBy(...)")
                return _Planned(it, "framed", staged, SPARK_AGGREGATES[fn])
            return _Planned(it, "black_box", staged)
        if fn in BLACK_BOX_AGGREGATES or fn == "CollectList":
            return _Planned(it, "black_box", staged)
        raise UnsupportedOperation(f"window function {it.sql_name} (column {it.name!r})", _SUPPORTED)
    if it.function in RANKING:
        return _Planned(it, "black_box", staged)
    raise UnsupportedOperation(f"window function {it.sql_name} (column {it.name!r})", _SUPPORTED)


# ---------------------------------------------------------------------------- keys and specs
def _partition_cols(it: WindowItem) -> list[Column]:
    n = len(it.partition)
    return [F.expr(s) for s in it.key_sql[:n]]


def _normalized_keys(df: DataFrame, cols: list[Column]) -> list[Column]:
    """Keys as Spark compares them (-0.0 is 0.0), for content ids."""
    if not cols:
        return []
    types = df.select(*cols).schema.fields
    return [normalized(c, f.dataType) for c, f in zip(cols, types)]


def _window_spec(it: WindowItem) -> Any:
    """The item's partition and order as a PySpark window over the frame's columns (names:
    only plain columns reach here), so Spark evaluates it beside the user's."""
    orders = []
    for name, ascending, nulls_first in it.order:
        c = F.col(f"`{name}`")
        if ascending:
            orders.append(c.asc_nulls_first() if nulls_first else c.asc_nulls_last())
        else:
            orders.append(c.desc_nulls_first() if nulls_first else c.desc_nulls_last())
    spec = Window.partitionBy(*[F.col(f"`{p}`") for p in it.partition])
    return spec.orderBy(*orders) if orders else spec


def _bounds(it: WindowItem) -> tuple[int, int]:
    lo = Window.unboundedPreceding if it.frame.lower is None else it.frame.lower
    hi = Window.unboundedFollowing if it.frame.upper is None else it.frame.upper
    return lo, hi


# ---------------------------------------------------------------------------- groups of items
def _shared_groups(planned: list[_Planned]) -> list[list[_Planned]]:
    """Whole-partition aggregates, by partition: one δ per partition serves them all."""
    out: dict[tuple[str, ...], list[_Planned]] = {}
    for p in planned:
        if p.rule == "shared":
            out.setdefault(p.item.key_sql[: len(p.item.partition)], []).append(p)
    return list(out.values())


def _framed_groups(planned: list[_Planned]) -> list[list[_Planned]]:
    """Aggregates over per-row frames, by window and frame: one collected frame serves them all."""
    out: dict[tuple[Any, ...], list[_Planned]] = {}
    for p in planned:
        if p.rule == "framed":
            out.setdefault((p.item.spec, p.item.frame), []).append(p)
    return list(out.values())


def _partition_groups(planned: list[_Planned]) -> list[list[_Planned]]:
    out: dict[tuple[str, ...], list[_Planned]] = {}
    for p in planned:
        out.setdefault(p.item.key_sql[: len(p.item.partition)], []).append(p)
    return list(out.values())


def _aggregation(df: DataFrame, keys: list[Column], group: list[_Planned]) -> Aggregation:
    """The :class:`~lipspark.capture.rules.aggregate.Aggregation` the members table of a group
    of window aggregates is built from (a ``groupBy`` of the partition keys)."""
    items = []
    planned = []
    for p in group:
        assert p.item.aggregate is not None
        items.append(p.item.aggregate)
        planned.append(Planned(p.op, p.item.aggregate, p.item.name))
    return Aggregation(df.select(*keys) if keys else df.select(), tuple(keys), tuple(items), tuple(planned), (), 0)


# ---------------------------------------------------------------------------- recording
def _record_condition(frame: AnnotatedFrame, planned: list[_Planned]) -> int | None:
    """One CONDITION node over the v-nodes the windows' partitions and orders read (and the
    arguments of the black boxes): which rows share a frame, and in which order, depends on them."""
    if not frame.layout.values:
        return None
    read: set[str] = set()
    for p in planned:
        read.update(p.item.key_references)
        if p.rule == "black_box":
            read.update(p.item.references)
    valued = valued_columns(read, frame.layout.values)
    if not valued:
        return None
    return record_condition(frame.tracker, [(frame.with_annotations(), valued)], f"window over {', '.join(valued)}")


def _record_shared(frame: AnnotatedFrame, staged: DataFrame, group: list[_Planned]) -> dict[str, Column]:
    """A δ and an aggregate v-node per partition (the ``groupBy`` of the partition keys): the
    members table as a group-by's; each row's value is its partition's aggregate."""
    tracker = frame.tracker
    seg = tracker.builder.allocate()
    df = frame.with_annotations()
    keys = _partition_cols(group[0].item)
    agg = _aggregation(df, keys, group)
    members, specs = members_table(frame, seg, agg, lambda cols: node_hash_col(seg, *cols))
    tracker.builder.record(GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=frame.layout.k,
                                        aggregates=specs), members=members)
    gid = node_hash_col(seg, *_normalized_keys(staged, keys))
    return {p.staged: aggregate_id_col(gid, j) for j, p in enumerate(group)}


def _frame_columns(frame: AnnotatedFrame, group: list[_Planned], n: int) -> list[Column]:
    """The staged columns of a group of framed aggregates: each row's frame as Spark collects it
    (``__lp_k<n>``: the members' factors, argument columns and their v-nodes) and, for a ROWS
    frame, the row's position in its partition (``__lp_q<n>``)."""
    it = group[0].item
    layout = frame.layout
    read = sorted({r for p in group for r in p.item.references})
    fields = [F.col(f"`{c}`").alias(c) for c in read] + [F.col(f) for f in layout.factor_names()]
    fields += [F.col(value_col(c)) for c in read if c in layout.values]
    spec = _window_spec(it)
    lo, hi = _bounds(it)
    bounded = spec.rowsBetween(lo, hi) if it.frame.rows else spec.rangeBetween(lo, hi)
    out = [F.collect_list(F.struct(*fields)).over(bounded).alias(f"__lp_k{n}")]
    if it.frame.rows:
        out.append(F.row_number().over(spec).alias(f"__lp_q{n}"))
    return out


def _owner(staged: DataFrame, seg: int, it: WindowItem, n: int) -> Column:
    """The id of a row's frame: its partition and order values (a RANGE frame: peers share it)
    or its partition and position (a ROWS frame)."""
    keys = [F.col(f"`{p}`") for p in it.partition]
    if it.frame.rows:
        return node_hash_col(seg, *_normalized_keys(staged, keys), F.col(f"__lp_q{n}"))
    orders = [F.col(f"`{o[0]}`") for o in it.order]
    return node_hash_col(seg, *_normalized_keys(staged, keys + orders))


def _record_framed(frame: AnnotatedFrame, staged: DataFrame, group: list[_Planned], n: int) -> dict[str, Column]:
    """A δ and an aggregate v-node per distinct frame, its members the rows Spark collected
    into the frame (``__lp_k<n>``), exploded into a members table as a group-by's."""
    tracker = frame.tracker
    seg = tracker.builder.allocate()
    it = group[0].item
    layout = frame.layout
    owner = _owner(staged, seg, it, n)
    read = sorted({r for p in group for r in p.item.references})
    g = _fresh("lp_frame", read)
    frames = staged.select(owner.alias(g), F.col(f"__lp_k{n}").alias("__lp_e")).dropDuplicates([g])
    exploded = frames.select(g, F.explode("__lp_e").alias("__lp_e")).select(g, "__lp_e.*")
    valued = [c for c in read if c in layout.values]
    member_frame = frame.derive(exploded, Layout(layout.k, tuple(valued)))
    agg = _aggregation(exploded, [], group)
    group_id: Callable[[list[Column]], Column] = lambda cols: F.col(f"`{g}`")  # noqa: E731
    members, specs = members_table(member_frame, seg, agg, group_id)
    tracker.builder.record(GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=layout.k,
                                        aggregates=specs), members=members)
    return {p.staged: aggregate_id_col(owner, j) for j, p in enumerate(group)}


def _record_black_boxes(frame: AnnotatedFrame, staged: DataFrame, group: list[_Planned], condition: int | None) -> dict[str, Column]:
    """One δ per partition over its rows, and per item and row a black-box v-node labelled with
    the function, valued as Spark computed it, with an edge from the partition's δ (and from
    the condition node over the values the window read)."""
    tracker = frame.tracker
    seg = tracker.builder.allocate()
    df = frame.with_annotations()
    keys = _partition_cols(group[0].item)
    members, _ = members_table(frame, seg, Aggregation(df.select(*keys) if keys else df.select(), tuple(keys), (), (), (), 0),
                               lambda cols: node_hash_col(seg, *cols))
    tracker.builder.record(GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=frame.layout.k),
                           members=members)
    gid = node_hash_col(seg, *_normalized_keys(staged, keys))
    out: dict[str, Column] = {}
    for p in group:
        box = tracker.builder.allocate()
        value = value_json(F.col(f"`{p.staged}`"), staged.schema[p.staged].dataType)
        factors = [F.col(factor(i)) for i in range(frame.layout.k)]
        vid = node_hash_col(box, *factors, gid, value)
        kids = [gid] + ([F.lit(condition).cast("bigint")] if condition is not None else [])
        nodes = staged.select(vid.alias("id"), F.array(*kids).alias("children"), value.alias("value"))
        tracker.builder.record(RowNodeSegment(box, tracker.context, label=p.item.sql_name, op=Op.BLACK_BOX), nodes=nodes)
        out[p.staged] = vid
    return out
