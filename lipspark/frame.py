"""The annotated frame: PySpark's DataFrame API, rewritten so every row carries provenance.

Module code calls the same methods with the same arguments as on a plain DataFrame; each method
delegates to one rewrite rule of :mod:`lipspark.capture.rules` (Lipstick §3.2) saying how data
and annotation propagate and which graph nodes the operation adds:

=====================  ==========================================  =========================
select / withColumn    annotation passes through; a value-level    ``rules.projection``
                       black box adds a v-node per row; explode
                       inherits the parent's (· a bag member's)
filter / orderBy /     annotation passes through (post-            ``rules.selection``
limit / repartition /  processing is not provenance)
dropna / checkpoint
fillna / replace       annotation passes through; filled values     ``rules.projection``
                       lose their v-node
join / crossJoin       · of both sides (factor lists concatenated)  ``rules.join``
join(how="left_semi")  the left row · δ(Σ its partners)             ``rules.semijoin``
intersect              δ(Σ left rows) · δ(Σ right rows) per tuple   ``rules.intersect``
union / unionByName    rows keep their annotations (a missing       ``rules.union``
                       column is null, with no v-node)
distinct, groupBy.agg  δ per group; Count/Sum/Min/Max/Avg v-node     ``rules.aggregate``
                       per aggregate with a ⊗ per member;
                       collect_list keeps members' provenance
dropDuplicates(subset) δ per key; other columns a black-box          ``rules.aggregate``
                       ``first`` of the key's rows
groupBy.pivot.agg      a group-by with an aggregate per value over   ``rules.pivot``
                       that value's rows (Spark's own rewrite)
rollup / cube /        a union of group-bys, one per grouping set    ``rules.grouping_sets``
groupingSets .agg
F.xxx(...).over(w)     annotation passes through; an aggregate         ``rules.window``
(in select)            window a ⊗ aggregate over the row's frame,
                       a ranking/offset function a black box over
                       the partition's δ
black_box              one node labelled with the function's name   ``rules.black_box``
cogroup                δ per key over both bags' members            ``rules.cogroup``
createOrReplaceTemp-   the query translated into the methods above  ``capture.sql``
View + sparkSession.   (FROM/JOIN/WHERE/GROUP BY/HAVING/DISTINCT/
sql                    set operations/ORDER BY/LIMIT)
=====================  ==========================================  =========================

Anything else raises :class:`~lipspark.errors.UnsupportedOperation` naming what to do instead.
Actions (``collect``, ``count``, ``first``, ``take``, ``toPandas``, ...) return the plain data and
warn once (:class:`~lipspark.errors.ProvenanceWarning`): a value brought to the driver and used
as a literal carries no provenance. An annotated frame is immutable: every operation returns a
new one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout, check_visible
from lipspark.vocabulary.columns import bag_col, is_hidden, value_col
from lipspark.capture.rules import aggregate as _aggregate
from lipspark.capture.rules import difference as _difference
from lipspark.capture.rules import grouping_sets as _grouping_sets
from lipspark.capture.rules import intersect as _intersect
from lipspark.capture.rules import join as _join
from lipspark.capture.rules import latent as _latent
from lipspark.capture.rules import pivot as _pivot
from lipspark.capture.rules import projection as _projection
from lipspark.capture.rules import selection as _selection
from lipspark.capture.rules import union as _union
from lipspark.capture.rules._common import BLACK_BOX_HINT, NO_VALUE, as_list
from lipspark.errors import AnnotationError, UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.capture.rules.regroup import Regrouping
    from lipspark.capture.sql import AnnotatedSession
    from lipspark.tracker import Tracker

__all__ = ["AnnotatedFrame", "AnnotatedGroupedData", "AnnotatedNaFunctions", "AnnotatedRow", "Annotation", "DRIVER_WARNING"]

#: What an action bringing annotated data to the driver warns (once per tracker and action).
DRIVER_WARNING = (
    "{action}() brings annotated data to the driver: a value computed from it and used later as a literal "
    "(df.filter(df.n == value)) carries no provenance, so the graph and what-if queries miss that dependence. "
    "Instead keep the value in Spark: join with the aggregate, or crossJoin a one-row aggregate, e.g. "
    "df.crossJoin(df.agg(F.max('n').alias('mx'))).filter('n = mx')"
)

_WRITTEN_BY_THE_WORKFLOW = ("return the frame from the module: the workflow writes its outputs, with their provenance "
                            "(docs/store-format.md)")
_GLOBAL_VIEW = ("df.createOrReplaceTempView(name) and df.sparkSession.sql(...): a temporary view of the module invocation, read "
                "with its annotations (a global view outlives the invocation, and another module would read it without them)")

#: DataFrame methods without a rule, and what to do instead (any other: the generic advice).
REFUSALS = {
    "write": _WRITTEN_BY_THE_WORKFLOW, "writeTo": _WRITTEN_BY_THE_WORKFLOW, "writeStream": _WRITTEN_BY_THE_WORKFLOW,
    "createGlobalTempView": _GLOBAL_VIEW, "createOrReplaceGlobalTempView": _GLOBAL_VIEW,
    "registerTempTable": "createOrReplaceTempView(name), which registerTempTable is a deprecated name of",
    "exceptAll": _difference.EXCEPT_ALL_INSTEAD,
    "intersectAll": _intersect.INTERSECT_ALL_INSTEAD,
    "sample": "filter(F.rand(seed) < fraction): a selection, computed once", "sampleBy": "filter(...) with F.rand(seed)",
    "randomSplit": "filter(F.rand(seed) < w) and its complement", "rdd": BLACK_BOX_HINT, "foreach": BLACK_BOX_HINT,
    "foreachPartition": BLACK_BOX_HINT, "mapInPandas": BLACK_BOX_HINT, "mapInArrow": BLACK_BOX_HINT,
}

#: Why a refused method has no rule, where the method's name does not say it.
_WHY = {
    "exceptAll": _difference.EXCEPT_ALL_WHY,
    "intersectAll": _intersect.INTERSECT_ALL_WHY,
}


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


class AnnotatedFrame:
    """A DataFrame whose rows carry provenance annotations (immutable).

    Create one with :meth:`lipspark.Tracker.annotate`; then use it like a DataFrame.

    Parameters
    ----------
    tracker
        The tracker whose graph the annotations refer to.
    df
        The data with the hidden annotation columns of ``layout``.
    layout
        Which hidden columns ``df`` has (default: one factor).

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
    >>> civic.layout
    Layout(k=1, values=(), bags=())
    """

    __slots__ = ("_tracker", "_df", "_layout", "_visible", "_latent")

    def __init__(self, tracker: Tracker, df: DataFrame, layout: Layout = Layout()) -> None:
        hidden = layout.hidden()
        missing = [h for h in hidden if h not in df.columns]
        extra = [c for c in df.columns if is_hidden(c) and c not in hidden]
        if missing or extra:
            raise AnnotationError(f"internal: hidden columns {missing} missing or {extra} unexpected in {df.columns}")
        object.__setattr__(self, "_tracker", tracker)
        object.__setattr__(self, "_df", df)
        object.__setattr__(self, "_layout", layout)
        # visible columns keep their positions (names may repeat after a join on a condition)
        object.__setattr__(self, "_visible", tuple(c for c in df.columns if not is_hidden(c)))
        object.__setattr__(self, "_latent", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"annotated frames are immutable; {name!r} cannot be set")

    # ------------------------------------------------------------------ the public read-only API
    @property
    def tracker(self) -> Tracker:
        """The tracker whose graph this frame's annotations refer to."""
        return self._tracker

    @property
    def layout(self) -> Layout:
        """The hidden columns: number of factors, columns with v-nodes, bags with members."""
        return self._layout

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
        return self._df.drop(*self._layout.hidden())

    def with_annotations(self) -> DataFrame:
        """The underlying DataFrame, hidden annotation columns included."""
        return self._df

    def member_id(self, seg: int) -> Column:
        """The row's single p-node: its factor, or a · node of segment ``seg`` over its
        non-zero factors (the member rule)."""
        return self._layout.member_col(seg)

    def derive(self, df: DataFrame, layout: Layout | None = None) -> AnnotatedFrame:
        """A frame of the same tracker over ``df`` (with ``layout``, default this one's), without
        latent rows (an operation that works row by row carries them: :meth:`_row_by_row`)."""
        return AnnotatedFrame(self._tracker, df, self._layout if layout is None else layout)

    @property
    def latent(self) -> "_latent.Latent | Regrouping | None":
        """What this frame carries for a what-if beside its rows: the rows a filter over values
        dropped, unreplayed (:mod:`lipspark.capture.rules.latent`), or the grouping of a group-by
        on a value whose result it is (:mod:`lipspark.capture.rules.regroup`); ``None``: neither."""
        return self._latent

    def with_latent(self, latent: "_latent.Latent | Regrouping | None") -> AnnotatedFrame:
        """The same frame carrying ``latent`` rows."""
        out = AnnotatedFrame(self._tracker, self._df, self._layout)
        object.__setattr__(out, "_latent", latent)
        return out

    def _row_by_row(self, out: AnnotatedFrame, step: Callable[[AnnotatedFrame], AnnotatedFrame]) -> AnnotatedFrame:
        """``out`` (this frame after ``step``) carrying this frame's latent rows, if it has any
        and ``step`` works row by row."""
        return out if self._latent is None else _latent.carry(self, out, step)

    # ------------------------------------------------------------------ actions
    def _to_driver(self, action: str) -> DataFrame:
        """The plain data, for an action that brings it to the driver (warned about once)."""
        self._tracker.warn_once(f"action:{action}", DRIVER_WARNING.format(action=action), stacklevel=3)
        return self.to_plain()

    def collect(self) -> list[Any]:
        return self._to_driver("collect").collect()

    def count(self) -> int:
        return self._to_driver("count").count()

    def first(self) -> Any:
        return self._to_driver("first").first()

    def head(self, n: int | None = None) -> Any:
        plain = self._to_driver("head")
        return plain.head() if n is None else plain.head(n)

    def take(self, num: int) -> list[Any]:
        return self._to_driver("take").take(num)

    def tail(self, num: int) -> list[Any]:
        return self._to_driver("tail").tail(num)

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[Any]:
        return self._to_driver("toLocalIterator").toLocalIterator(prefetchPartitions)

    def toPandas(self) -> Any:
        return self._to_driver("toPandas").toPandas()

    def toArrow(self) -> Any:
        return self._to_driver("toArrow").toArrow()

    def isEmpty(self) -> bool:
        return self._to_driver("isEmpty").isEmpty()

    def show(self, *args: Any, **kwargs: Any) -> None:
        """Prints the data and returns nothing a later operation could use: no warning."""
        self.to_plain().show(*args, **kwargs)

    def printSchema(self) -> None:
        self.to_plain().printSchema()

    def collect_annotated(self) -> list[AnnotatedRow]:
        """Rows with their annotations (references into the graph, not expanded polynomials)."""
        from pyspark.sql import Row

        cols = self._df.columns
        layout = self._layout
        data_pos = [i for i, c in enumerate(cols) if not is_hidden(c)]
        fpos = [cols.index(f) for f in layout.factor_names()]
        vpos = {c: cols.index(value_col(c)) for c in layout.values}
        bpos = {c: cols.index(bag_col(c)) for c in layout.bags}
        make = Row(*self._visible)
        out = []
        for r in self._df.collect():
            data = make(*[r[i] for i in data_pos])
            fs = tuple(int(r[i]) for i in fpos if r[i])
            values = {c: int(r[i]) for c, i in vpos.items() if r[i] is not None}
            bags = {c: tuple(int(m["m"]) for m in (r[i] or []) if m["m"]) for c, i in bpos.items()}
            out.append(AnnotatedRow(data, Annotation(fs, values, bags)))
        return out

    def collect_latent(self) -> _latent.LatentRows | None:
        """The rows a filter over values dropped, as this frame would hold them had they passed,
        with their annotations, and the ids of that filter's tests of every row it dropped; ``None``
        when the frame carries none (no such filter, or an operation since that does not work row
        by row: :mod:`lipspark.capture.rules.latent`). A what-if that makes such a test true
        makes the row appear (:func:`lipspark.query.prediction.what_if`). For the result of a
        group-by on a value, no rows but its keys (``groups``: :mod:`lipspark.capture.rules.regroup`).

        >>> from lipspark import Tracker, get_spark
        >>> from pyspark.sql import functions as F
        >>> t = Tracker(get_spark())
        >>> n = t.annotate(t.spark.range(4).selectExpr("id", "id % 2 AS odd"), "N", key=["id"])
        >>> big = n.groupBy("odd").agg(F.sum("id").alias("s")).filter("s > 3").select("odd")
        >>> [x.odd for x in big.collect()], [x.row.odd for x in big.collect_latent().rows]
        ([1], [0])
        """
        return None if self._latent is None else self._latent.collect()

    # ------------------------------------------------------------------ columns
    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            check_visible(item)
            return self._df[item]
        if isinstance(item, Column):
            return self.filter(item)
        if isinstance(item, (list, tuple)):
            return self.select(*item)
        raise TypeError(f"unexpected item type: {type(item).__name__}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._visible:
            return self._df[name]
        if name in REFUSALS:
            raise UnsupportedOperation(f"DataFrame.{name}" + (f" ({_WHY[name]})" if name in _WHY else ""), REFUSALS[name])
        if hasattr(DataFrame, name):
            raise UnsupportedOperation(f"DataFrame.{name}", f"express it with select/filter/join/groupBy/union/distinct, or {BLACK_BOX_HINT}")
        raise AttributeError(f"annotated frame has no column or method {name!r}; columns: {list(self._visible)}")

    def __repr__(self) -> str:
        return f"AnnotatedFrame[{', '.join(self._visible)}] (k={self._layout.k})"

    # ------------------------------------------------------------------ SQL
    def createOrReplaceTempView(self, name: str) -> None:
        """Register this frame as the temporary view ``name`` of its tracker (the module
        invocation): ``df.sparkSession.sql`` reads it with its annotations. Spark gets the plain
        data under the same name, as with provenance off."""
        self._tracker.register_view(name, self, replace=True)

    def createTempView(self, name: str) -> None:
        """As :meth:`createOrReplaceTempView`; Spark's own error if the name is taken."""
        self._tracker.register_view(name, self, replace=False)

    @property
    def sparkSession(self) -> AnnotatedSession:
        """The session module code reaches SQL through, as on a DataFrame: its ``sql(query)`` reads
        the annotated views (:meth:`createOrReplaceTempView`) and returns an annotated frame
        computed by these rules (:mod:`lipspark.capture.sql`); its other attributes are the
        SparkSession's own."""
        from lipspark.capture.sql import AnnotatedSession

        return AnnotatedSession(self._tracker)

    # ------------------------------------------------------------------ projection
    def select(self, *cols: Any) -> AnnotatedFrame:
        """Projection (rows and annotations kept); black boxes and explode handled."""
        return self._row_by_row(_projection.select(self, cols), lambda f: f.select(*cols))

    def withColumn(self, colName: str, col: Column) -> AnnotatedFrame:
        return self._row_by_row(_projection.with_column(self, colName, col), lambda f: f.withColumn(colName, col))

    def withColumns(self, colsMap: dict[str, Column]) -> AnnotatedFrame:
        return self._row_by_row(_projection.with_columns(self, colsMap), lambda f: f.withColumns(colsMap))

    def withColumnRenamed(self, existing: str, new: str) -> AnnotatedFrame:
        return self._row_by_row(_projection.with_column_renamed(self, existing, new),
                                lambda f: f.withColumnRenamed(existing, new))

    def withColumnsRenamed(self, colsMap: dict[str, str]) -> AnnotatedFrame:
        return self._row_by_row(_projection.with_columns_renamed(self, colsMap), lambda f: f.withColumnsRenamed(colsMap))

    def toDF(self, *cols: str) -> AnnotatedFrame:
        return self._row_by_row(_projection.to_df(self, cols), lambda f: f.toDF(*cols))

    def drop(self, *cols: Any) -> AnnotatedFrame:
        return self._row_by_row(_projection.drop(self, cols), lambda f: f.drop(*cols))

    def selectExpr(self, *exprs: str) -> AnnotatedFrame:
        return self._row_by_row(_projection.select_expr(self, exprs), lambda f: f.selectExpr(*exprs))

    # ------------------------------------------------------------------ selection & post-processing
    def alias(self, alias: str) -> AnnotatedFrame:
        return self._row_by_row(_selection.alias(self, alias), lambda f: f.alias(alias))

    def filter(self, condition: Column | str) -> AnnotatedFrame:
        """Selection: kept rows keep their annotation."""
        return self._row_by_row(_selection.filter_rows(self, condition), lambda f: f.filter(condition))

    where = filter

    def orderBy(self, *cols: Any, **kwargs: Any) -> AnnotatedFrame:
        """Post-processing (Lipstick §3.2): order is not part of provenance."""
        return self._row_by_row(_selection.order_by(self, cols, kwargs), lambda f: f.orderBy(*cols, **kwargs))

    sort = orderBy

    def hint(self, name: str, *parameters: Any) -> AnnotatedFrame:
        """A query hint (``"broadcast"``, ``"merge"``, …): physical planning only, rows and
        annotations unchanged. ``F.broadcast(df)`` on an annotated frame is ``df.hint("broadcast")``."""
        return _selection.hint(self, name, parameters)

    @property
    def _jdf(self) -> Any:
        raise UnsupportedOperation(
            "a PySpark function or plain DataFrame method given an annotated frame (such as F.broadcast(df) or plain.join(df))",
            "df.hint('broadcast') for a broadcast hint; call methods on the annotated frame (annotated.join(other)), "
            "and annotate both sides of a join")

    def limit(self, num: int) -> AnnotatedFrame:
        """Post-processing: the rows kept keep their annotations."""
        return _selection.limit(self, num)

    def repartition(self, *args: Any) -> AnnotatedFrame:
        return _selection.repartition(self, args)

    def coalesce(self, n: int) -> AnnotatedFrame:
        return _selection.coalesce(self, n)

    def sortWithinPartitions(self, *cols: Any, **kwargs: Any) -> AnnotatedFrame:
        """Order within partitions: post-processing, rows and annotations unchanged."""
        return _selection.sort_within_partitions(self, cols, kwargs)

    def localCheckpoint(self, eager: bool = True, storageLevel: Any = None) -> AnnotatedFrame:
        """Computed and kept, annotations included: the same rows for the output and the graph."""
        return _selection.checkpoint(self, eager, local=True, storage_level=storageLevel)

    def checkpoint(self, eager: bool = True) -> AnnotatedFrame:
        """Computed into the checkpoint directory, annotations included."""
        return _selection.checkpoint(self, eager, local=False)

    def transform(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as on a DataFrame: each operation inside is rewritten."""
        return func(self, *args, **kwargs)

    # ------------------------------------------------------------------ missing values (per row)
    @property
    def na(self) -> AnnotatedNaFunctions:
        """``df.na.fill/drop/replace``: the same as ``fillna``, ``dropna``, ``replace``."""
        return AnnotatedNaFunctions(self)

    def fillna(self, value: Any, subset: Any = None) -> AnnotatedFrame:
        """A projection: each row keeps its annotation; a filled value has no v-node."""
        return _projection.fill_na(self, value, subset)

    def dropna(self, how: str = "any", thresh: int | None = None, subset: Any = None) -> AnnotatedFrame:
        """A selection: kept rows keep their annotation (only the data columns are looked at)."""
        return _selection.drop_na(self, how, thresh, subset)

    def replace(self, to_replace: Any, value: Any = NO_VALUE, subset: Any = None) -> AnnotatedFrame:
        """A projection: each row keeps its annotation; the replaced columns' values have no v-node."""
        return _projection.replace_values(self, to_replace, value, subset)

    def cache(self) -> AnnotatedFrame:
        self._df.cache()
        return self

    def persist(self, *args: Any) -> AnnotatedFrame:
        self._df.persist(*args)
        return self

    def unpersist(self, blocking: bool = False) -> AnnotatedFrame:
        self._df.unpersist(blocking)
        return self

    # ------------------------------------------------------------------ join & union
    def join(self, other: AnnotatedFrame, on: Any = None, how: str | None = None) -> AnnotatedFrame:
        """Inner (or cross) join: each output row's provenance is the · of its two input rows.
        A semi join (``how="left_semi"``) keeps each left row that has a partner, times δ of the
        sum of its partners; an anti join (``how="left_anti"``) each left row without one,
        ``r ⊖ δ(Σ partners)``; an outer join (``"left"``, ``"right"``, ``"full"``) its matched
        rows as an inner join and its padded rows ``r ⊖ δ(Σ partners)``."""
        return _join.join(self, other, on, how)

    def crossJoin(self, other: AnnotatedFrame) -> AnnotatedFrame:
        return _join.cross_join(self, other)

    def union(self, other: AnnotatedFrame) -> AnnotatedFrame:
        """Bag union by position: every row keeps its annotation."""
        return _union.union(self, other, by_name=False)

    unionAll = union

    def unionByName(self, other: AnnotatedFrame, allowMissingColumns: bool = False) -> AnnotatedFrame:
        """Bag union by column name: every row keeps its annotation; with ``allowMissingColumns``
        a column one side lacks is null on its rows, with no v-node."""
        return _union.union(self, other, by_name=True, allow_missing=allowMissingColumns)

    def subtract(self, other: AnnotatedFrame) -> AnnotatedFrame:
        """Distinct tuples of this side the other lacks (SQL EXCEPT), each ``δ(Σ left rows) ⊖ δ(Σ right rows)``."""
        return _difference.subtract(self, other)

    def intersect(self, other: AnnotatedFrame) -> AnnotatedFrame:
        """Distinct tuples of both sides (SQL INTERSECT), each ``δ(Σ left rows) · δ(Σ right rows)``."""
        return _intersect.intersect(self, other)

    # ------------------------------------------------------------------ δ
    def distinct(self) -> AnnotatedFrame:
        """Duplicate elimination: each distinct tuple gets δ of the sum of its rows."""
        return _aggregate.distinct(self)

    def dropDuplicates(self, subset: Sequence[str] | None = None) -> AnnotatedFrame:
        """One row per distinct tuple (``subset=None``: :meth:`distinct`) or per distinct value of
        the ``subset`` columns, δ of the sum of its rows; the other columns keep the row plain
        Spark keeps, each value a black-box ``first`` of those rows."""
        if subset is None:
            return self.distinct()
        return _aggregate.drop_duplicates(self, subset)

    drop_duplicates = dropDuplicates

    def groupBy(self, *cols: Any) -> AnnotatedGroupedData:
        """Group-by; follow with ``.agg(...)`` (δ per group, ⊗ per aggregated member)."""
        return AnnotatedGroupedData(self, as_list(cols))

    groupby = groupBy

    def rollup(self, *cols: Any) -> AnnotatedGroupedData:
        """``rollup(a, b).agg(...)``: the union of ``groupBy(a, b)``, ``groupBy(a)`` and a grand
        total, the keys a level leaves out null (one δ per group of each level)."""
        keys = as_list(cols)
        return AnnotatedGroupedData(self, keys, sets=_grouping_sets.rollup_sets(len(keys)), kind="rollup")

    def cube(self, *cols: Any) -> AnnotatedGroupedData:
        """``cube(a, b).agg(...)``: the union of a ``groupBy`` per subset of the keys, the keys a
        subset leaves out null (one δ per group of each)."""
        keys = as_list(cols)
        return AnnotatedGroupedData(self, keys, sets=_grouping_sets.cube_sets(len(keys)), kind="cube")

    def groupingSets(self, groupingSets: Sequence[Sequence[str]], *cols: Any) -> AnnotatedGroupedData:
        """``groupingSets([[a, b], [a], []], a, b).agg(...)``: the union of a ``groupBy`` per set
        (sets name the columns by name), the keys a set leaves out null."""
        keys = as_list(cols)
        return AnnotatedGroupedData(self, keys, sets=_grouping_sets.named_sets(self, keys, groupingSets), kind="groupingSets",
                                    named_sets=groupingSets)

    def agg(self, *exprs: Any) -> AnnotatedFrame:
        """Aggregate the whole relation (one group)."""
        return self.groupBy().agg(*exprs)


class AnnotatedNaFunctions:
    """``df.na`` on an annotated frame; mirrors :class:`pyspark.sql.DataFrameNaFunctions`."""

    def __init__(self, frame: AnnotatedFrame) -> None:
        self._frame = frame

    def fill(self, value: Any, subset: Any = None) -> AnnotatedFrame:
        return self._frame.fillna(value, subset)

    def drop(self, how: str = "any", thresh: int | None = None, subset: Any = None) -> AnnotatedFrame:
        return self._frame.dropna(how, thresh, subset)

    def replace(self, to_replace: Any, value: Any = NO_VALUE, subset: Any = None) -> AnnotatedFrame:
        return self._frame.replace(to_replace, value, subset)


class AnnotatedGroupedData:
    """``groupBy`` (or ``rollup``, ``cube``, ``groupingSets``, a ``pivot`` after ``groupBy``) on an
    annotated frame; mirrors :class:`pyspark.sql.GroupedData`."""

    def __init__(self, frame: AnnotatedFrame, keys: list[Any], *, sets: list[tuple[int, ...]] | None = None,
                 kind: str = "groupBy", named_sets: Any = None, pivot: tuple[Any, Any] | None = None) -> None:
        self._frame = frame
        self._keys = keys
        self._sets = sets
        self._kind = kind
        self._named_sets = named_sets
        self._pivot = pivot

    def _plain(self, df: DataFrame) -> Any:
        """The same grouping of a plain DataFrame (for Spark's own analysis of it)."""
        if self._kind == "groupingSets":
            return df.groupingSets(self._named_sets, *self._keys)
        grouped = getattr(df, self._kind)(*self._keys)
        return grouped if self._pivot is None else grouped.pivot(*self._pivot)

    def _aggregate(self, exprs: list[Any]) -> AnnotatedFrame:
        if self._pivot is not None:
            return _pivot.pivot(self._frame, self._keys, self._pivot[0], self._pivot[1], exprs)
        if self._sets is not None:
            return _grouping_sets.grouping_sets(self._frame, self._keys, self._sets, exprs, self._plain, self._kind)
        return _aggregate.aggregate(self._frame, self._keys, exprs)

    def agg(self, *exprs: Any) -> AnnotatedFrame:
        if len(exprs) == 1 and isinstance(exprs[0], dict):
            exprs = tuple(F.expr(f"{fn}({c})").alias(f"{fn}({c})") for c, fn in exprs[0].items())
        if not exprs:
            raise AnnotationError("agg() needs at least one aggregate expression")
        return self._aggregate(as_list(exprs))

    def count(self) -> AnnotatedFrame:
        return self._aggregate([F.count(F.lit(1)).alias("count")])

    def _shortcut(self, fn: str, cols: Sequence[str]) -> AnnotatedFrame:
        if not cols:
            raise UnsupportedOperation(f"GroupedData.{fn}() without columns", f"name the columns: .{fn}('col')")
        return self._aggregate([getattr(F, fn)(c).alias(f"{fn}({c})") for c in cols])

    def sum(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("sum", cols)

    def min(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("min", cols)

    def max(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("max", cols)

    def avg(self, *cols: str) -> AnnotatedFrame:
        return self._shortcut("avg", cols)

    mean = avg

    def pivot(self, pivot_col: Any, values: list[Any] | None = None) -> AnnotatedGroupedData:
        """``groupBy(...).pivot(col, values).agg(...)``: one aggregate per pivot value and
        aggregate, over the rows whose ``col`` is that value (null-safe), named as Spark names
        them; without ``values``, the distinct values of ``col`` computed as Spark computes them
        (a job whose result the driver keeps: the output's columns depend on it)."""
        if self._kind != "groupBy" or self._pivot is not None:
            self._plain(self._frame.to_plain()).pivot(pivot_col, [])  # Spark's own error: a pivot after rollup, or twice
            raise UnsupportedOperation(f"pivot after {self._kind if self._pivot is None else 'pivot'}", "groupBy(...).pivot(...)")
        if values is None:
            values = _pivot.pivot_values(self._frame, pivot_col)
        return AnnotatedGroupedData(self._frame, self._keys, pivot=(pivot_col, list(values)))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnsupportedOperation(f"GroupedData.{name}", f"groupBy(...).agg(count/sum/min/max/avg/collect_list), or {BLACK_BOX_HINT}")
