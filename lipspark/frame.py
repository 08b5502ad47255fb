"""The annotated frame: PySpark's DataFrame API, rewritten so every row carries provenance.

Module code calls the same methods with the same arguments as on a plain DataFrame; each method
here is one rewrite rule (Lipstick §3.2) saying how data and annotation propagate and which graph
nodes the operation adds:

=====================  =================================================================
select / withColumn    annotation passes through (a 1:1 projection is the + of one row);
                       a value-level black box adds a v-node per row
filter / where         annotation passes through
join / crossJoin       · of both sides (factor lists concatenated, · node made lazily)
union / unionByName    rows keep their annotations (the + is taken per distinct tuple)
distinct               δ over the rows of each distinct tuple
groupBy().agg()        δ over each group's rows; Count/Sum/Min/Max/Avg v-node per aggregate
                       with a ⊗ v-node per member; collect_list keeps members' provenance
explode (in select)    rows inherit the parent's annotation (· the member's, for bags)
orderBy / limit        post-processing: annotations untouched
black_box              one node labelled with the function's name
=====================  =================================================================

Anything else raises :class:`~lipspark.errors.UnsupportedOperation`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.blackbox import registered_black_box
from lipspark.columns import bag_col, factor, is_hidden, value_col
from lipspark.errors import AnnotationError, UnsupportedOperation
from lipspark.graph.builder import SEGMENT_SHIFT, aggregate_node_id, node_hash
from lipspark.plan import read_aggregate, read_projection

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.tracker import Tracker

__all__ = ["AnnotatedFrame", "AnnotatedGroupedData", "AnnotatedRow", "Annotation"]

#: Spark aggregate functions the rewrite supports, with Lipstick's operation label.
AGGREGATES = {"Count": "Count", "Sum": "Sum", "Min": "Min", "Max": "Max", "Average": "Avg"}
_BLACK_BOX_HINT = "wrap the computation in lipspark.black_box(fn, frame, ...) to keep coarse provenance"


@dataclass(frozen=True)
class Annotation:
    """A row's reference into the provenance graph.

    ``factors`` are node ids whose product (·) is the row's provenance; ``values`` maps a column
    to the v-node of its value; ``bags`` maps a nested-bag column to its members' p-node ids.
    """

    factors: tuple[int, ...]
    values: dict[str, int] = field(default_factory=dict)
    bags: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class AnnotatedRow:
    """A data row (exactly what plain PySpark returns) and its annotation."""

    row: Any
    annotation: Annotation


def _as_list(cols: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for c in cols:
        if isinstance(c, (list, tuple)):
            out.extend(c)
        else:
            out.append(c)
    return out


def _normalized(col: Column, dtype: T.DataType) -> Column:
    """Key value as Spark groups it: -0.0 and 0.0 are one group."""
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return F.when(col == 0, F.lit(0.0).cast(dtype)).otherwise(col)
    return col


class AnnotatedFrame:
    """A DataFrame whose rows carry provenance annotations.

    Create one with :meth:`lipspark.Tracker.annotate`; then use it like a DataFrame.

    Examples
    --------
    >>> from lipspark import Tracker, get_spark
    >>> spark = get_spark()
    >>> t = Tracker(spark)
    >>> cars = t.annotate(spark.createDataFrame([("C1", "Accord"), ("C2", "Civic")], ["CarId", "Model"]),
    ...                   "Cars", key=["CarId"])
    >>> civic = cars.filter(cars.Model == "Civic").select("CarId")
    >>> [str(t.graph().polynomial(r.annotation)) for r in civic.collect_annotated()]
    ['Cars:C2']
    """

    def __init__(self, tracker: "Tracker", df: DataFrame, k: int, values: Sequence[str] = (), bags: Sequence[str] = ()) -> None:
        self._tracker = tracker
        self._k = k
        self._values = tuple(sorted(values))
        self._bags = tuple(sorted(bags))
        hidden = self._hidden()
        missing = [h for h in hidden if h not in df.columns]
        extra = [c for c in df.columns if is_hidden(c) and c not in hidden]
        if missing or extra:
            raise AnnotationError(f"internal: hidden columns {missing} missing or {extra} unexpected in {df.columns}")
        # visible columns keep their positions (names may repeat after a join on a condition)
        self._visible = [c for c in df.columns if not is_hidden(c)]
        self._df = df

    # ------------------------------------------------------------------ basics
    @property
    def tracker(self) -> "Tracker":
        return self._tracker

    @property
    def columns(self) -> list[str]:
        """The data columns (as on the plain DataFrame)."""
        return list(self._visible)

    @property
    def schema(self) -> T.StructType:
        return self.to_plain().schema

    @property
    def dtypes(self) -> list[tuple[str, str]]:
        return self.to_plain().dtypes

    def to_plain(self) -> DataFrame:
        """The data without annotations: what plain PySpark computes."""
        return self._df.drop(*self._hidden())

    def with_annotations(self) -> DataFrame:
        """The underlying DataFrame, hidden annotation columns included."""
        return self._df

    def collect(self) -> list[Any]:
        return self.to_plain().collect()

    def count(self) -> int:
        return self._df.count()

    def toPandas(self) -> Any:
        return self.to_plain().toPandas()

    def show(self, *args: Any, **kwargs: Any) -> None:
        self.to_plain().show(*args, **kwargs)

    def printSchema(self) -> None:
        self.to_plain().printSchema()

    def isEmpty(self) -> bool:
        return self._df.isEmpty()

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            self._check_visible(item)
            return self._df[item]
        if isinstance(item, Column):
            return self.filter(item)
        if isinstance(item, (list, tuple)):
            return self.select(*item)
        raise TypeError(f"unexpected item type: {type(item).__name__}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.__dict__.get("_visible", ()):
            return self._df[name]
        if hasattr(DataFrame, name):
            raise UnsupportedOperation(f"DataFrame.{name}", f"express it with select/filter/join/groupBy/union/distinct, or {_BLACK_BOX_HINT}")
        raise AttributeError(f"annotated frame has no column or method {name!r}; columns: {self._visible}")

    def __repr__(self) -> str:
        return f"AnnotatedFrame[{', '.join(self._visible)}] (k={self._k})"

    def collect_annotated(self) -> list[AnnotatedRow]:
        """Rows with their annotations (references into the graph, not expanded polynomials)."""
        from pyspark.sql import Row

        cols = self._df.columns
        data_pos = [i for i, c in enumerate(cols) if not is_hidden(c)]
        fpos = [cols.index(factor(i)) for i in range(self._k)]
        vpos = {c: cols.index(value_col(c)) for c in self._values}
        bpos = {c: cols.index(bag_col(c)) for c in self._bags}
        make = Row(*self._visible)
        out = []
        for r in self._df.collect():
            data = make(*[r[i] for i in data_pos])
            fs = tuple(int(r[i]) for i in fpos if r[i])
            values = {c: int(r[i]) for c, i in vpos.items() if r[i] is not None}
            bags = {c: tuple(int(m["m"]) for m in (r[i] or []) if m["m"]) for c, i in bpos.items()}
            out.append(AnnotatedRow(data, Annotation(fs, values, bags)))
        return out

    # ------------------------------------------------------------------ helpers
    def _check_visible(self, name: str) -> None:
        if is_hidden(name):
            raise AnnotationError(f"column names starting with '__lp_' are reserved for lipspark, got {name!r}")

    def _same_tracker(self, other: Any, op: str) -> "AnnotatedFrame":
        if isinstance(other, DataFrame):
            raise AnnotationError(
                f"{op}: the other relation is a plain DataFrame; annotate it first "
                "(tracker.annotate(df, 'Name', key=[...])) so its rows have provenance"
            )
        if not isinstance(other, AnnotatedFrame):
            raise TypeError(f"{op}: expected an annotated frame, got {type(other).__name__}")
        if other._tracker is not self._tracker:
            raise AnnotationError(f"{op}: the two frames belong to different trackers (different provenance graphs)")
        return other

    def _factor_cols(self) -> list[Column]:
        return [F.col(factor(i)) for i in range(self._k)]

    def _member_id(self, seg: int) -> Column:
        """The row's single p-node: its factor, or a · node over its non-zero factors."""
        fs = self._factor_cols()
        if self._k == 1:
            return fs[0]
        nonzero = reduce(lambda a, b: a + b, [F.when(f != 0, 1).otherwise(0) for f in fs])
        total = reduce(lambda a, b: a + b, fs)
        return F.when(nonzero == 1, total).otherwise(node_hash(seg, *fs))

    def _new(self, df: DataFrame, k: int | None = None, values: Iterable[str] | None = None, bags: Iterable[str] | None = None) -> "AnnotatedFrame":
        return AnnotatedFrame(
            self._tracker,
            df,
            self._k if k is None else k,
            self._values if values is None else tuple(values),
            self._bags if bags is None else tuple(bags),
        )

    def _hidden(self) -> list[str]:
        return [factor(i) for i in range(self._k)] + [value_col(c) for c in self._values] + [bag_col(c) for c in self._bags]

    # ------------------------------------------------------------------ projection
    def _expand_star(self, cols: list[Any]) -> list[Any]:
        out: list[Any] = []
        for c in cols:
            if isinstance(c, str) and c == "*":
                out.extend(self._visible)
            else:
                if isinstance(c, str):
                    self._check_visible(c)
                out.append(c)
        return out

    def select(self, *cols: Any) -> "AnnotatedFrame":
        """Projection (rows and annotations kept); black boxes and explode handled."""
        cols = self._expand_star(_as_list(cols))
        # Spark analyzes every select on the driver (costly for wide expressions): without value or
        # bag annotations to re-route, one select carrying the factors serves both the reading of
        # the projection and the result
        fast = not self._values and not self._bags
        plain = None
        if fast:
            try:
                plain = self._df.select(*cols, *self._factor_cols())
            except AnalysisException:  # e.g. an aggregate in select: analyze it alone, then report it
                fast = False
        if plain is None:
            plain = self._df.select(*cols)
        proj = read_projection(self._df, plain)
        if proj is not None and fast:
            proj = replace(proj, items=proj.items[: len(proj.items) - self._k])
        if proj is None:
            raise UnsupportedOperation(
                "select with aggregate or window functions",
                "groupBy(...).agg(...) for aggregates; for window functions " + _BLACK_BOX_HINT,
            )
        names = [it.name for it in proj.items]
        for n in names:
            self._check_visible(n)
        if len(set(names)) != len(names) and any(it.source in self._values or it.source in self._bags for it in proj.items):
            raise UnsupportedOperation("select producing duplicate column names", "alias the columns so each name is unique")
        for it in proj.items:
            for u in it.udfs:
                if registered_black_box(u) and (len(it.udfs) > 1 or it.source is not None):
                    raise UnsupportedOperation(f"black box {u} inside a larger expression", f"compute {u}(...) in a column of its own, then use that column")
        if proj.generator is not None:
            return self._select_generate(cols, proj)
        if fast and not any(it.udfs and registered_black_box(it.udfs[0]) for it in proj.items):
            return self._new(plain, values=(), bags=())
        extra: list[Column] = self._factor_cols()
        values, bags = [], []
        for it in proj.items:
            if it.source is not None and it.source in self._values:
                extra.append(F.col(value_col(it.source)).alias(value_col(it.name)))
                values.append(it.name)
            if it.source is not None and it.source in self._bags:
                extra.append(F.col(bag_col(it.source)).alias(bag_col(it.name)))
                bags.append(it.name)
        bb_items = [it for it in proj.items if it.udfs and registered_black_box(it.udfs[0])]
        if bb_items:
            # carry the argument annotations the black-box nodes need, then drop them
            temp: dict[str, str] = {}
            for it in bb_items:
                for arg in it.udf_args[0]:
                    for src, hid in ((arg in self._values, value_col(arg)), (arg in self._bags, bag_col(arg))):
                        if src and hid not in temp:
                            temp[hid] = f"__lp_t{len(temp)}"
                            extra.append(F.col(hid).alias(temp[hid]))
            out = self._df.select(*cols, *extra)
            for it in bb_items:
                out = self._tracker.share(out)
                out = self._record_black_box_values(out, it, temp)
                values.append(it.name)
            out = out.drop(*temp.values())
            return self._new(out, values=values, bags=bags)
        return self._new(self._df.select(*cols, *extra), values=values, bags=bags)

    def _record_black_box_values(self, out: DataFrame, it: Any, temp: dict[str, str]) -> DataFrame:
        name = it.udfs[0]
        seg = self._tracker.builder.allocate()
        children: list[Column] = [F.array(*[F.col(factor(i)) for i in range(self._k)])]
        for arg in it.udf_args[0]:
            if value_col(arg) in temp:
                children.append(F.array(F.col(temp[value_col(arg)])))
            if bag_col(arg) in temp:
                children.append(F.transform(F.col(temp[bag_col(arg)]), lambda s: s["m"]))
                for field_ in _bag_value_fields(out.schema[temp[bag_col(arg)]].dataType):
                    children.append(F.transform(F.col(temp[bag_col(arg)]), _field_getter(field_)))
        kids = F.filter(F.flatten(F.array(*children)), lambda x: x.isNotNull() & (x != 0))
        node_id = node_hash(seg, *self._factor_cols(), F.to_json(F.struct(F.col(it.name))))
        out = out.withColumn(value_col(it.name), node_id)
        nodes = out.select(
            F.col(value_col(it.name)).alias("id"),
            kids.alias("children"),
            F.to_json(F.struct(F.col(it.name).alias("v"))).alias("value"),
        )
        self._tracker.builder.add(seg, "rownode", {"label": name, "kind": "v"}, nodes=nodes)
        return out

    def _select_generate(self, cols: list[Any], proj: Any) -> "AnnotatedFrame":
        src = proj.generator_input
        if src is None or src not in self._bags:
            if proj.generator_input in self._bags:
                raise UnsupportedOperation("posexplode/inline of a nested bag", "use explode(bag) (FLATTEN)")
            out = self._df.select(*cols, *self._factor_cols())
            return self._new(out, values=(), bags=())
        if proj.generator not in ("Explode",) or len(proj.generator_outputs) != 1:
            raise UnsupportedOperation(f"{proj.generator} of nested bag {src!r}", f"explode({src!r}) (FLATTEN)")
        # FLATTEN of a bag whose members keep their own provenance: parent · member
        gen_name = proj.generator_outputs[0]
        explode = F.explode_outer if proj.generator_outer else F.explode
        staged = self._df.withColumn("__lp_z", explode(F.arrays_zip(F.col(src).alias("v"), F.col(bag_col(src)).alias("p"))))
        rebuilt: list[Any] = []
        for c, it in zip(cols, proj.items):
            rebuilt.append(F.col("__lp_z")["v"].alias(gen_name) if it.name == gen_name else c)
        member = F.coalesce(F.col("__lp_z")["p"]["m"], F.lit(0).cast("long"))
        out = staged.select(*rebuilt, *self._factor_cols(), member.alias(factor(self._k)))
        return self._new(out, k=self._k + 1, values=(), bags=())

    def withColumn(self, colName: str, col: Column) -> "AnnotatedFrame":
        self._check_visible(colName)
        cols: list[Any] = [c for c in self._visible if c != colName]
        if colName in self._visible:
            cols = [col.alias(colName) if c == colName else c for c in self._visible]
        else:
            cols = list(self._visible) + [col.alias(colName)]
        return self.select(*cols)

    def withColumns(self, colsMap: dict[str, Column]) -> "AnnotatedFrame":
        out = self
        for name, col in colsMap.items():
            out = out.withColumn(name, col)
        return out

    def withColumnRenamed(self, existing: str, new: str) -> "AnnotatedFrame":
        self._check_visible(new)
        if existing not in self._visible:
            return self
        return self.select(*[F.col(c).alias(new) if c == existing else c for c in self._visible])

    def withColumnsRenamed(self, colsMap: dict[str, str]) -> "AnnotatedFrame":
        out = self
        for a, b in colsMap.items():
            out = out.withColumnRenamed(a, b)
        return out

    def toDF(self, *cols: str) -> "AnnotatedFrame":
        if len(cols) != len(self._visible):
            raise AnnotationError(f"toDF: expected {len(self._visible)} names, got {len(cols)}")
        return self.select(*[F.col(a).alias(b) for a, b in zip(self._visible, cols)])

    def drop(self, *cols: Any) -> "AnnotatedFrame":
        names = {c for c in cols if isinstance(c, str)}
        if len(names) != len(cols):
            raise UnsupportedOperation("drop(Column)", "drop columns by name")
        return self.select(*[c for c in self._visible if c not in names])

    def selectExpr(self, *exprs: str) -> "AnnotatedFrame":
        return self.select(*[F.expr(e) for e in _as_list(exprs)])

    def alias(self, alias: str) -> "AnnotatedFrame":
        return self._new(self._df.alias(alias))

    # ------------------------------------------------------------------ selection & post-processing
    def filter(self, condition: "Column | str") -> "AnnotatedFrame":
        """Selection: kept rows keep their annotation."""
        return self._new(self._df.filter(condition))

    where = filter

    def orderBy(self, *cols: Any, **kwargs: Any) -> "AnnotatedFrame":
        """Post-processing (Lipstick §3.2): order is not part of provenance."""
        return self._new(self._df.orderBy(*cols, **kwargs))

    sort = orderBy

    def limit(self, num: int) -> "AnnotatedFrame":
        """Post-processing: the rows kept keep their annotations."""
        return self._new(self._df.limit(num))

    def cache(self) -> "AnnotatedFrame":
        self._df.cache()
        return self

    def persist(self, *args: Any) -> "AnnotatedFrame":
        self._df.persist(*args)
        return self

    def unpersist(self, blocking: bool = False) -> "AnnotatedFrame":
        self._df.unpersist(blocking)
        return self

    def repartition(self, *args: Any) -> "AnnotatedFrame":
        return self._new(self._df.repartition(*args))

    def coalesce(self, n: int) -> "AnnotatedFrame":
        return self._new(self._df.coalesce(n))

    # ------------------------------------------------------------------ join
    def join(self, other: "AnnotatedFrame", on: Any = None, how: str | None = None) -> "AnnotatedFrame":
        """Inner (or cross) join: each output row's provenance is the · of its two input rows."""
        other = self._same_tracker(other, "join")
        kind = (how or "inner").lower().replace("_", "")
        if kind == "cross" and on is None:
            return self.crossJoin(other)
        if kind not in ("inner", "cross"):
            raise UnsupportedOperation(
                f"join(how={how!r})",
                f"an inner join (outer, semi and anti joins have no provenance rule here); or {_BLACK_BOX_HINT}",
            )
        if on is None:
            raise UnsupportedOperation("join without a condition", "crossJoin(other) for a Cartesian product")
        keys = {on} if isinstance(on, str) else ({c for c in on if isinstance(c, str)} if isinstance(on, (list, tuple)) else set())
        right, values, bags = self._align_right(other, keys)
        joined = self._df.join(right, on, "inner")
        return self._new(joined, k=self._k + other._k, values=values, bags=bags)

    def crossJoin(self, other: "AnnotatedFrame") -> "AnnotatedFrame":
        other = self._same_tracker(other, "crossJoin")
        right, values, bags = self._align_right(other, set())
        return self._new(self._df.crossJoin(right), k=self._k + other._k, values=values, bags=bags)

    def _align_right(self, other: "AnnotatedFrame", keys: set[str]) -> tuple[DataFrame, list[str], list[str]]:
        """Rename the right side's hidden columns so they do not clash with the left's."""
        clash = (set(self._visible) & set(other._visible)) - keys
        left_vals = [v for v in self._values if v not in clash]
        left_bags = [b for b in self._bags if b not in clash]
        cols: list[Column] = [other._df[c] for c in other._visible]
        cols += [F.col(factor(i)).alias(factor(self._k + i)) for i in range(other._k)]
        values, bags = list(left_vals), list(left_bags)
        for v in other._values:
            if v not in clash and v not in keys:
                cols.append(F.col(value_col(v)).alias(value_col(v)))
                values.append(v)
        for b in other._bags:
            if b not in clash and b not in keys:
                cols.append(F.col(bag_col(b)).alias(bag_col(b)))
                bags.append(b)
        # drop the left's annotations of clashing columns: the name becomes ambiguous
        return other._df.select(*cols), values, bags

    # ------------------------------------------------------------------ union
    def union(self, other: "AnnotatedFrame") -> "AnnotatedFrame":
        """Bag union by position: every row keeps its annotation."""
        return self._union(other, by_name=False)

    unionAll = union

    def unionByName(self, other: "AnnotatedFrame", allowMissingColumns: bool = False) -> "AnnotatedFrame":
        """Bag union by column name: every row keeps its annotation."""
        if allowMissingColumns:
            raise UnsupportedOperation("unionByName(allowMissingColumns=True)", "select the same columns on both sides (F.lit(None) for missing ones)")
        return self._union(other, by_name=True)

    def _union(self, other: "AnnotatedFrame", *, by_name: bool) -> "AnnotatedFrame":
        other = self._same_tracker(other, "union")
        if len(other._visible) != len(self._visible):
            raise AnnotationError(f"union: {len(self._visible)} columns on the left, {len(other._visible)} on the right")
        if by_name:
            if set(other._visible) != set(self._visible):
                raise AnnotationError(f"unionByName: columns differ: {self._visible} vs {other._visible}")
            mapping = {c: c for c in self._visible}
        else:
            mapping = dict(zip(self._visible, other._visible))
        k = max(self._k, other._k)
        zero = F.lit(0).cast("long")

        def side(fr: "AnnotatedFrame", names: dict[str, str]) -> DataFrame:
            cols: list[Column] = [F.col(names[c]).alias(c) for c in self._visible]
            cols += [F.col(factor(i)) if i < fr._k else zero.alias(factor(i)) for i in range(k)]
            for v in values:
                cols.append(F.col(value_col(names[v])).alias(value_col(v)) if names[v] in fr._values else F.lit(None).cast("long").alias(value_col(v)))
            cols += [F.col(bag_col(names[b])).alias(bag_col(b)) for b in bags]
            return fr._df.select(*cols)

        values = sorted(set(self._values) | {c for c in self._visible if mapping[c] in other._values})
        bags = sorted(c for c in self._visible if c in self._bags and mapping[c] in other._bags)
        half = sorted({c for c in self._visible if (c in self._bags) != (mapping[c] in other._bags)})
        if half:
            raise UnsupportedOperation(
                f"union of nested bag column(s) {half} whose members have provenance on one side only",
                "build the bags on both sides the same way (collect_list or cogroup), or drop the column",
            )
        left = side(self, {c: c for c in self._visible})
        right = side(other, mapping)
        return self._new(left.union(right), k=k, values=values, bags=bags)

    # ------------------------------------------------------------------ δ
    def distinct(self) -> "AnnotatedFrame":
        """Duplicate elimination: each distinct tuple gets δ of the sum of its rows."""
        return AnnotatedGroupedData(self, list(self._visible))._run([], distinct=True)

    def dropDuplicates(self, subset: Sequence[str] | None = None) -> "AnnotatedFrame":
        if subset is None or set(subset) == set(self._visible):
            return self.distinct()
        raise UnsupportedOperation(
            "dropDuplicates(subset) (it keeps an arbitrary row per key)",
            "groupBy(subset).agg(...) with min/max for the other columns, or distinct() over a projection",
        )

    drop_duplicates = dropDuplicates

    def groupBy(self, *cols: Any) -> "AnnotatedGroupedData":
        """Group-by; follow with ``.agg(...)`` (δ per group, ⊗ per aggregated member)."""
        return AnnotatedGroupedData(self, _as_list(cols))

    groupby = groupBy

    def agg(self, *exprs: Any) -> "AnnotatedFrame":
        """Aggregate the whole relation (one group)."""
        return self.groupBy().agg(*exprs)

    # ------------------------------------------------------------------ black box
    @staticmethod
    def _black_box(fn: Callable[..., Any], label: str, frames: list["AnnotatedFrame"]) -> "AnnotatedFrame":
        tracker = frames[0]._tracker
        for f in frames[1:]:
            frames[0]._same_tracker(f, f"black box {label}")
        seg = tracker.builder.allocate()
        node = seg << SEGMENT_SHIFT
        result = fn(*[f.to_plain() for f in frames])
        if not isinstance(result, DataFrame):
            raise AnnotationError(f"black box {label!r} must return a DataFrame, returned {type(result).__name__}")
        hidden = [c for c in result.columns if is_hidden(c)]
        if hidden:
            raise AnnotationError(f"black box {label!r} returned reserved columns {hidden}")
        k = max(f._k for f in frames)
        members = []
        for f in frames:
            tracker.share(f._df)
            pad = [F.lit(0).cast("long").alias(factor(i)) for i in range(f._k, k)] if k > 1 else []
            fcols = f._factor_cols() if k > 1 else []
            members.append(f._df.select(F.lit(node).alias("g"), f._member_id(seg).alias("m"), *fcols, *pad))
        tracker.builder.add(seg, "group", {"label": label, "k": k, "aggregates": []}, members=reduce(DataFrame.union, members))
        return AnnotatedFrame(tracker, result.withColumn(factor(0), F.lit(node)), 1)


def _field_getter(name: str) -> Callable[[Column], Column]:
    return lambda s: s[name]


def _bag_value_fields(dtype: T.DataType) -> list[str]:
    if isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StructType):
        return [f.name for f in dtype.elementType.fields if f.name != "m"]
    return []


class AnnotatedGroupedData:
    """``groupBy`` on an annotated frame; mirrors :class:`pyspark.sql.GroupedData`."""

    def __init__(self, frame: AnnotatedFrame, keys: list[Any]) -> None:
        self._frame = frame
        self._keys = keys

    def agg(self, *exprs: Any) -> AnnotatedFrame:
        if len(exprs) == 1 and isinstance(exprs[0], dict):
            exprs = tuple(F.expr(f"{fn}({c})").alias(f"{fn}({c})") for c, fn in exprs[0].items())
        if not exprs:
            raise AnnotationError("agg() needs at least one aggregate expression")
        return self._run(_as_list(exprs))

    def count(self) -> AnnotatedFrame:
        return self._run([F.count(F.lit(1)).alias("count")])

    def _shortcut(self, fn: str, cols: Sequence[str]) -> AnnotatedFrame:
        if not cols:
            raise UnsupportedOperation(f"GroupedData.{fn}() without columns", f"name the columns: .{fn}('col')")
        return self._run([getattr(F, fn)(c).alias(f"{fn}({c})") for c in cols])

    def sum(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("sum", cols)

    def min(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("min", cols)

    def max(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("max", cols)

    def avg(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("avg", cols)

    mean = avg

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnsupportedOperation(f"GroupedData.{name}", f"groupBy(...).agg(count/sum/min/max/avg/collect_list), or {_BLACK_BOX_HINT}")

    def _run(self, exprs: list[Any], distinct: bool = False) -> AnnotatedFrame:
        fr = self._frame
        tracker = fr._tracker
        if fr._bags and (distinct or any(isinstance(k, str) and k in fr._bags for k in self._keys)):
            raise UnsupportedOperation(
                f"{'distinct' if distinct else 'groupBy'} over nested bag column(s) {list(fr._bags)} whose members have provenance",
                "explode the bag first, or drop the column before de-duplicating",
            )
        keys = [F.col(k) if isinstance(k, str) else k for k in self._keys]
        for k in self._keys:
            if isinstance(k, str):
                fr._check_visible(k)
        if distinct:
            plain = fr._df.select(*fr._visible).distinct()
            items: list[Any] = []
        else:
            plain = fr._df.groupBy(*keys).agg(*exprs)
            items = read_aggregate(plain) or []
            if not items:
                raise UnsupportedOperation("this aggregation", "groupBy(...).agg(count/sum/min/max/avg/collect_list)")
            items = items[len(keys) :]
        aggs: list[tuple[int, str, Any]] = []  # (index into exprs, label, item)
        bags: list[int] = []
        for j, it in enumerate(items):
            if it.function in AGGREGATES and not it.distinct and not it.filtered and it.n_args == 1:
                aggs.append((j, AGGREGATES[it.function], it))
            elif it.function == "CollectList" and not it.distinct and not it.filtered:
                bags.append(j)
            else:
                what = f"aggregate {it.function}" + (" DISTINCT" if it.distinct else "") + (" with FILTER" if it.filtered else "")
                if it.function and it.function.startswith("Expression:"):
                    what = f"aggregate expression {it.name!r} (an expression over aggregate results)"
                raise UnsupportedOperation(
                    what,
                    "count/sum/min/max/avg/collect_list over rows (use distinct() first for DISTINCT; "
                    "compute expressions over aggregates in a following select); or " + _BLACK_BOX_HINT,
                )
        seg = tracker.builder.allocate()
        tracker.share(fr._df)
        key_names = plain.columns[: len(keys)]
        key_types = [plain.schema[i].dataType for i in range(len(keys))]
        member = fr._member_id(seg)
        # members: one row per input row, with the distinct non-constant aggregate arguments
        in_keys = [_normalized(k, t) for k, t in zip(keys, key_types)]
        # a keyless aggregate has one group even over no rows: its id is static and recorded
        group_id = (lambda cols: node_hash(seg, *cols)) if keys else (lambda cols: F.lit(seg << SEGMENT_SHIFT))
        member_cols = [group_id(in_keys).alias("g"), member.alias("m")]
        if fr._k > 1:
            member_cols += fr._factor_cols()
        arguments: list[str] = []
        agg_meta = []
        for j, label, it in aggs:
            arg_index = None
            if not it.literal:
                if it.argument not in arguments:
                    arguments.append(it.argument)
                    member_cols.append(F.expr(it.argument).alias(f"x{len(arguments) - 1}"))
                arg_index = arguments.index(it.argument)
            entry = {"op": label, "arg": arg_index, "column": it.name}
            source = it.argument.strip("`") if not it.literal else None
            if source in fr._values:  # the argument has its own v-node: ⊗ pairs the member with it
                vname = f"v{len(agg_meta)}"
                member_cols.append(F.col(value_col(source)).alias(vname))
                entry["vnode"] = vname
            agg_meta.append(entry)
        members = fr._df.select(*member_cols)
        # output: exactly the plain aggregation (collect_list rebuilt to keep member provenance)
        if bags:
            staged = fr._df.withColumn("__lp_m", member)
            agg_exprs = list(exprs)
            for j in bags:
                arg = F.expr(items[j].argument)
                agg_exprs[j] = F.collect_list(F.when(arg.isNotNull(), F.struct(arg.alias("v"), F.col("__lp_m").alias("m")))).alias(items[j].name)
            grouped = staged.groupBy(*keys).agg(*agg_exprs)
            out_cols: list[Column] = []
            for c in plain.columns:
                j = plain.columns.index(c) - len(keys)
                if j in bags:
                    out_cols += [F.transform(F.col(c), lambda s: s["v"]).alias(c), F.transform(F.col(c), lambda s: F.struct(s["m"].alias("m"))).alias(bag_col(c))]
                else:
                    out_cols.append(F.col(c))
            out = grouped.select(*out_cols)
        else:
            out = plain
        out_keys = [_normalized(F.col(n), t) for n, t in zip(key_names, key_types)]
        gid = group_id(out_keys)
        value_names = [it.name for _, _, it in aggs]
        out = out.select(
            "*",
            gid.alias(factor(0)),
            *[aggregate_node_id(gid, n).alias(value_col(name)) for n, name in enumerate(value_names)],
        )
        meta = {"label": "δ", "k": fr._k, "aggregates": agg_meta}
        if not keys:
            meta["group"] = seg << SEGMENT_SHIFT
        tracker.builder.add(seg, "group", meta, members=members)
        return AnnotatedFrame(tracker, out, 1, values=value_names, bags=[items[j].name for j in bags])
