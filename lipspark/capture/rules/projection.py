"""Projection rules: select and everything PySpark expresses as a select.

A 1:1 projection keeps every row's annotation (the + of one row is the row): factors pass
through, v-nodes and bag members follow the columns that pass through unchanged (renamed or
not); a column computed from values with v-nodes (``total / n``) gets a v-node per row as a
black box would (:class:`Derived`: a what-if shows it unknown when its inputs change, never the
captured value), other computed columns have none. A value-level black box adds one v-node
per row (:func:`value_black_boxes`); a generator (``explode``) gives each output row its
parent's annotation, times the member's own p-node when it explodes a bag with member
provenance (:func:`generate`, Pig's FLATTEN).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout, check_visible
from lipspark.vocabulary.columns import PREFIX, bag_col, factor, is_hidden, value_col
from lipspark.capture.plan import Projection, ProjectionItem, WindowSelect, read_projection
from lipspark.capture.rules import window as _window
from lipspark.capture.rules._common import NO_VALUE, as_list
from lipspark.errors import AnnotationError, UnsupportedOperation
from lipspark.vocabulary import Op, RowNodeSegment
from lipspark.vocabulary.ids import node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.blackbox import KnownBlackBox
    from lipspark.frame import AnnotatedFrame

__all__ = [
    "select", "check_no_hidden", "plain_projection", "reroute", "value_black_boxes", "generate",
    "with_column", "with_columns", "with_column_renamed", "with_columns_renamed", "to_df", "drop", "select_expr",
    "fill_na", "replace_values",
]

_BlackBoxItem = tuple[ProjectionItem, "KnownBlackBox | Derived"]


@dataclass(frozen=True)
class Derived:
    """A column computed from values that have v-nodes (``total / n``, ``F.round(avg, 2)``): a
    what-if cannot recompute the expression, so it is recorded as a value-level black box
    named after the column — changed inputs show it unknown, never the captured value."""

    name: str


def select(frame: AnnotatedFrame, cols: Sequence[Any]) -> AnnotatedFrame:
    """Projection: read what Spark makes of ``cols``, then apply the matching rule."""
    columns = _expand_star(frame, as_list(cols))
    read = _read(frame, columns)
    if not isinstance(read, WindowSelect) and any(is_hidden(it.name) for it in read[0].items):
        columns = _expand_star(frame, columns, columns_too=True)  # a bare star given as a Column: expand it, analyze again
        read = _read(frame, columns)
    if isinstance(read, WindowSelect):  # window functions: their own rule, then this select over its result
        return select(*_window.stage(frame, columns, read))
    proj, fast = read
    check_no_hidden(proj.items)
    names = [it.name for it in proj.items]
    for n in names:
        check_visible(n)
    layout = frame.layout
    if len(set(names)) != len(names) and any(names.count(it.name) > 1 and (it.source in layout.values or it.source in layout.bags)
                                             for it in proj.items):  # a v-node or bag is kept by its column's name
        raise UnsupportedOperation("select producing duplicate column names", "alias the columns so each name is unique")
    boxes = _black_boxes(frame, proj)
    if proj.generator is not None:
        out = generate(frame, columns, proj)
    elif fast is not None and not boxes:
        out = plain_projection(frame, fast)
    else:
        out = reroute(frame, columns, proj, boxes)
    if any(it.nondeterministic for it in proj.items):  # the output and the graph must see the same rows
        out = out.derive(frame.tracker.compute_once(out.with_annotations()))
    return out


def check_no_hidden(items: Sequence[ProjectionItem]) -> None:
    """Refuse an expression that reads lipspark's hidden columns: a ``*`` inside an expression
    (``struct("*")``, ``hash("*")``, ``concat_ws(",", col("*"))``) expands to every column of
    the annotated frame, annotations included, and would compute other values than plain Spark."""
    for it in items:
        hidden = [r for r in it.references if is_hidden(r)]
        if hidden:
            raise UnsupportedOperation(
                f"column {it.name!r}: an expression over * (such as struct('*'), hash('*'), to_json(struct('*')) "
                "or concat_ws(',', col('*')))",
                "name the columns, e.g. F.struct(*[F.col(c) for c in df.columns]); a bare select('*') is fine")


_STAR = re.compile(r"^Column<'(?:([^*]+)\.)?\*(?:\.\*)?'>$")


def _expand_star(frame: AnnotatedFrame, cols: list[Any], columns_too: bool = False) -> list[Any]:
    """``"*"`` and ``"t.*"`` — with ``columns_too`` also ``F.col("*")`` and ``F.expr("*")``,
    whose text costs a JVM call each, so only asked for when the analyzed select shows a hidden
    column — as the frame's visible columns (Spark would expand them to the hidden annotation
    columns too)."""
    out: list[Any] = []
    for c in cols:
        if isinstance(c, str):
            m = re.fullmatch(r"(?:([^*]+)\.)?\*", c)
            if m is None:
                check_visible(c)
                out.append(c)
                continue
            qualifier = m.group(1)
        elif columns_too and isinstance(c, Column) and (m2 := _STAR.match(str(c))) is not None:
            qualifier = m2.group(1)
        else:
            out.append(c)
            continue
        if qualifier is None:
            visible = frame.columns
            if len(set(visible)) == len(visible):
                out.extend(visible)
            else:  # a name both sides of a condition join have: every column but the hidden ones, by position
                out.append(frame.with_annotations().colRegex(f"`(?!{re.escape(PREFIX)}).*`"))
        else:  # the visible columns of one side of a join, as Spark resolves `t.*`
            names = frame.with_annotations().select(f"{qualifier}.*").columns
            out.extend(F.col(f"{qualifier}.`{n}`") for n in names if not is_hidden(n))
    return out


def _read(frame: AnnotatedFrame, cols: list[Any]) -> tuple[Projection, DataFrame | None] | WindowSelect:
    """The projection Spark analyzed, and (when the frame has no value or bag annotation to
    re-route) the select carrying the factors, which then serves as the result too: Spark
    analyzes every select on the driver, costly for wide expressions. A select with window
    functions is the windows Spark analyzed (:mod:`~lipspark.capture.rules.window`)."""
    df, layout = frame.with_annotations(), frame.layout
    fast = None
    if not layout.values and not layout.bags:
        try:
            fast = df.select(*cols, *layout.factor_cols())
        except AnalysisException:  # e.g. an aggregate in select: analyze it alone, then report it
            fast = None
    proj = read_projection(df, fast if fast is not None else df.select(*cols))
    if proj is not None and fast is not None:
        proj = replace(proj, items=proj.items[: len(proj.items) - layout.k])
    if proj is None:
        try:
            windows = _window.windowed(df, df.select(*cols))
        except AnalysisException:
            windows = None
        if windows is not None:
            return windows
        raise UnsupportedOperation(
            "select with aggregate functions",
            "groupBy(...).agg(...) for aggregates, or a window function over Window.partitionBy(...) for a value per row",
        )
    return proj, fast


def _black_boxes(frame: AnnotatedFrame, proj: Projection) -> list[_BlackBoxItem]:
    """The items computed by a value-level black box of the frame's tracker (by identity), in
    order; a black box inside a larger expression is refused (its v-node would be lost). Items
    computed from values with v-nodes are black boxes too (:class:`Derived`)."""
    out: list[_BlackBoxItem] = []
    registry = frame.tracker.black_boxes
    for it in proj.items:
        found = [registry.find(f) for f in it.udf_functions]
        for bb in found:
            if bb is not None and (len(it.udfs) > 1 or it.source is not None):
                raise UnsupportedOperation(f"black box {bb.name} inside a larger expression",
                                           f"compute {bb.name}(...) in a column of its own, then use that column")
        if found and found[0] is not None:
            out.append((it, found[0]))
            if frame.tracker.observer is not None:  # a crash-culprit search guards this input row by row
                frame.tracker.observer(frame, found[0])
            continue
        valued = [r for r in it.references if r in frame.layout.values]
        if it.source is None and valued:  # computed from values with v-nodes
            out.append((replace(it, udf_args=(tuple(dict.fromkeys(valued)),)), Derived(it.name)))
    return out


def plain_projection(frame: AnnotatedFrame, projected: DataFrame) -> AnnotatedFrame:
    """No value or bag annotation to carry and no black box: the factors pass through."""
    return frame.derive(projected, frame.layout.with_(values=(), bags=()))


def reroute(frame: AnnotatedFrame, cols: list[Any], proj: Projection, boxes: Sequence[_BlackBoxItem] = ()) -> AnnotatedFrame:
    """Carry the v-nodes and bag members of the columns passed through (under their new
    names); then record the black boxes' v-nodes."""
    layout = frame.layout
    extra: list[Column] = layout.factor_cols()
    values: list[str] = []
    bags: list[str] = []
    for it in proj.items:
        if it.source is not None and it.source in layout.values:
            extra.append(F.col(value_col(it.source)).alias(value_col(it.name)))
            values.append(it.name)
        if it.source is not None and it.source in layout.bags:
            extra.append(F.col(bag_col(it.source)).alias(bag_col(it.name)))
            bags.append(it.name)
    if boxes:
        return value_black_boxes(frame, cols, extra, Layout(layout.k, tuple(values), tuple(bags)), boxes)
    return frame.derive(frame.with_annotations().select(*cols, *extra), Layout(layout.k, tuple(values), tuple(bags)))


def value_black_boxes(frame: AnnotatedFrame, cols: list[Any], extra: list[Column], layout: Layout,
                      boxes: Sequence[_BlackBoxItem]) -> AnnotatedFrame:
    """Each black-box column gets a v-node per row (segment ``rownode``) with edges from the
    row's p-node, its arguments' v-nodes and, for bag arguments, their members (and their
    members' v-nodes)."""
    source = frame.layout
    temp: dict[str, str] = {}  # the argument annotations the nodes need, carried then dropped
    for it, _ in boxes:
        for arg in it.udf_args[0]:
            for present, hid in ((arg in source.values, value_col(arg)), (arg in source.bags, bag_col(arg))):
                if present and hid not in temp:
                    temp[hid] = f"__lp_t{len(temp)}"
                    extra.append(F.col(hid).alias(temp[hid]))
    out = frame.with_annotations().select(*cols, *extra)
    values = list(layout.values)
    for it, bb in boxes:
        out = frame.tracker.share(out)
        out = _record_values(frame, out, it, bb, temp)
        values.append(it.name)
    return frame.derive(out.drop(*temp.values()), layout.with_(values=values))


def _record_values(frame: AnnotatedFrame, out: DataFrame, it: ProjectionItem, bb: "KnownBlackBox | Derived", temp: dict[str, str]) -> DataFrame:
    tracker = frame.tracker
    seg = tracker.builder.allocate()
    factors = frame.layout.factor_cols()
    children: list[Column] = [F.array(*factors)]
    for arg in it.udf_args[0]:
        if value_col(arg) in temp:
            children.append(F.array(F.col(temp[value_col(arg)])))
        if bag_col(arg) in temp:
            bag = F.col(temp[bag_col(arg)])
            children.append(F.transform(bag, lambda s: s["m"]))
            for name in _bag_value_fields(out.schema[temp[bag_col(arg)]].dataType):
                children.append(F.transform(bag, _field_getter(name)))
    kids = F.filter(F.flatten(F.array(*children)), lambda x: x.isNotNull() & (x != 0))
    out = out.withColumn(value_col(it.name), node_hash_col(seg, *factors, F.to_json(F.struct(F.col(it.name)))))
    nodes = out.select(
        F.col(value_col(it.name)).alias("id"),
        kids.alias("children"),
        F.to_json(F.struct(F.col(it.name).alias("v"))).alias("value"),
    )
    tracker.builder.record(RowNodeSegment(seg, tracker.context, label=bb.name, op=Op.BLACK_BOX), nodes=nodes)
    return out


def _field_getter(name: str) -> Any:
    return lambda s: s[name]


def _bag_value_fields(dtype: T.DataType) -> list[str]:
    """The v-node fields of a bag's member structs (a cogroup bag carries its members' values)."""
    if isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StructType):
        return [f.name for f in dtype.elementType.fields if f.name != "m"]
    return []


def generate(frame: AnnotatedFrame, cols: list[Any], proj: Projection) -> AnnotatedFrame:
    """A generator in the projection: output rows inherit the parent's annotation; exploding a
    bag whose members keep their own provenance multiplies in the member (FLATTEN)."""
    layout, df = frame.layout, frame.with_annotations()
    src = proj.generator_input
    if src is None or src not in layout.bags:
        return frame.derive(df.select(*cols, *layout.factor_cols()), layout.with_(values=(), bags=()))
    if proj.generator not in ("Explode",) or len(proj.generator_outputs) != 1:
        raise UnsupportedOperation(f"{proj.generator} of nested bag {src!r}", f"explode({src!r}) (FLATTEN)")
    gen_name = proj.generator_outputs[0]
    explode = F.explode_outer if proj.generator_outer else F.explode
    staged = df.withColumn("__lp_z", explode(F.arrays_zip(F.col(src).alias("v"), F.col(bag_col(src)).alias("p"))))
    rebuilt = [F.col("__lp_z")["v"].alias(gen_name) if it.name == gen_name else c for c, it in zip(cols, proj.items)]
    member = F.coalesce(F.col("__lp_z")["p"]["m"], F.lit(0).cast("long"))
    out = staged.select(*rebuilt, *layout.factor_cols(), member.alias(factor(layout.k)))
    return frame.derive(out, Layout(layout.k + 1))


# ---------------------------------------------------------------------------- select in disguise
def _named(frame: AnnotatedFrame, name: str) -> str | None:
    """The visible column ``name`` refers to, matched as Spark matches names (case-insensitively
    unless ``spark.sql.caseSensitive``), or ``None``."""
    visible = frame.columns
    if name in visible:
        return name
    if not frame.tracker.case_sensitive:
        return next((c for c in visible if c.lower() == name.lower()), None)
    return None


def with_column(frame: AnnotatedFrame, name: str, col: Column) -> AnnotatedFrame:
    """``withColumn``: a select replacing (the column of that name, in any case unless names
    are case-sensitive) or appending one column."""
    check_visible(name)
    visible = frame.columns
    existing = _named(frame, name)
    if existing is not None:
        return select(frame, [col.alias(name) if c == existing else c for c in visible])
    return select(frame, [*visible, col.alias(name)])


def with_columns(frame: AnnotatedFrame, cols: dict[str, Column]) -> AnnotatedFrame:
    """``withColumns``: one ``withColumn`` after the other."""
    out = frame
    for name, col in cols.items():
        out = with_column(out, name, col)
    return out


def with_column_renamed(frame: AnnotatedFrame, existing: str, new: str) -> AnnotatedFrame:
    """A rename keeps annotations (a renamed column passes through unchanged)."""
    check_visible(new)
    found = _named(frame, existing)
    if found is None:
        return frame
    return select(frame, [F.col(c).alias(new) if c == found else c for c in frame.columns])


def with_columns_renamed(frame: AnnotatedFrame, names: dict[str, str]) -> AnnotatedFrame:
    """Several renames, in order."""
    out = frame
    for a, b in names.items():
        out = with_column_renamed(out, a, b)
    return out


def to_df(frame: AnnotatedFrame, names: Sequence[str]) -> AnnotatedFrame:
    """``toDF``: rename every column by position."""
    if len(names) != len(frame.columns):
        raise AnnotationError(f"toDF: expected {len(frame.columns)} names, got {len(names)}")
    return select(frame, [F.col(a).alias(b) for a, b in zip(frame.columns, names)])


def drop(frame: AnnotatedFrame, cols: Sequence[Any]) -> AnnotatedFrame:
    """``drop`` by name: a select of the other columns."""
    if not all(isinstance(c, str) for c in cols):
        raise UnsupportedOperation("drop(Column)", "drop columns by name")
    names = {_named(frame, c) for c in cols} - {None}
    return select(frame, [c for c in frame.columns if c not in names])


def select_expr(frame: AnnotatedFrame, exprs: Sequence[Any]) -> AnnotatedFrame:
    """``selectExpr``: SQL expressions, analyzed like any select."""
    return select(frame, [F.expr(e) for e in as_list(exprs)])


# ---------------------------------------------------------------------------- missing values
def _subset(frame: AnnotatedFrame, subset: Any) -> list[str]:
    """The data columns ``subset`` names (all of them by default: never the hidden ones)."""
    names = [subset] if isinstance(subset, str) else list(subset) if subset else frame.columns
    for n in names:
        check_visible(n)
    return list(dict.fromkeys(names))


def _forget_values(frame: AnnotatedFrame, df: DataFrame, columns: Sequence[str]) -> AnnotatedFrame:
    """``df`` (the frame with some columns recomputed) without the v-nodes of ``columns``."""
    touched = {_named(frame, c) for c in columns} - {None}
    gone = [v for v in frame.layout.values if v in touched]
    return frame.derive(df.drop(*[value_col(v) for v in gone]), frame.layout.with_(values=[v for v in frame.layout.values if v not in gone]))


def fill_na(frame: AnnotatedFrame, value: Any, subset: Any) -> AnnotatedFrame:
    """``fillna``: a projection (each row keeps its annotation); a value filled in has no v-node
    (the value node of a null aggregate result does not compute it), one that was there keeps its."""
    df = frame.with_annotations()
    names = list(value) if isinstance(value, dict) else _subset(frame, subset)
    for n in names:
        check_visible(n)
    kept = [v for v in frame.layout.values if v in {_named(frame, c) for c in names}]
    for v in kept:  # where the value was null the fill replaces it: no v-node there
        df = df.withColumn(value_col(v), F.when(F.col(v).isNotNull(), F.col(value_col(v))))
    out = df.fillna(value) if isinstance(value, dict) else df.fillna(value, names)
    return frame.derive(out)


def replace_values(frame: AnnotatedFrame, to_replace: Any, value: Any, subset: Any) -> AnnotatedFrame:
    """``replace``: a projection (each row keeps its annotation) of the data columns only; the
    replaced columns' values no longer have v-nodes."""
    names = _subset(frame, subset)
    df = frame.with_annotations()
    out = df.replace(to_replace, subset=names) if value is NO_VALUE else df.replace(to_replace, value, names)
    return _forget_values(frame, out, names)
