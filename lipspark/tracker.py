"""The tracker: where annotated frames come from and where their provenance graph is built.

>>> from lipspark import Tracker, get_spark
>>> spark = get_spark()
>>> t = Tracker(spark)
>>> cars = t.annotate(spark.createDataFrame([("C1", "Accord")], ["CarId", "Model"]), "Cars", key=["CarId"])
>>> cars.columns
['CarId', 'Model']
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from functools import reduce
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lipspark.blackbox import BlackBoxRegistry
from lipspark.capture.builder import GraphBuilder, InvocationBuilder
from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import PREFIX, factor, is_hidden
from lipspark.errors import AnnotationError, ProvenanceWarning
from lipspark.frame import AnnotatedFrame
from lipspark.vocabulary import BASE_ID, BaseSegment, Context, FileRef
from lipspark.vocabulary.ids import MAX_FILES, file_position_col, is_fine, node_hash_col, positional_col
from lipspark.vocabulary.tokens import key_violation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.graph.index import GraphIndex

__all__ = ["Tracker"]


def _norm_path(path: str) -> str:
    return re.sub(r"^file:/+", "/", path)


def _spellings(path: str) -> tuple[str, ...]:
    """The ways Spark's ``_metadata.file_path`` may spell a normalized path (each normalizes
    back to it: :func:`_norm_path`).

    >>> _spellings("/tmp/r.parquet"), _spellings("s3a://b/r.parquet")
    (('/tmp/r.parquet', 'file:/tmp/r.parquet', 'file:///tmp/r.parquet'), ('s3a://b/r.parquet',))
    """
    if path.startswith("/") and not path.startswith("//"):
        return (path, "file:" + path, "file://" + path)
    return (path,)


#: Plan nodes that preserve a deterministic row order from their child (or are leaves with one).
_STABLE_ORDER = {"LogicalRelation", "LocalRelation", "LogicalRDD", "Range", "Project", "Filter", "SubqueryAlias", "ResolvedHint"}


def _has_stable_order(df: DataFrame) -> bool:
    """Whether recomputing ``df`` yields its rows in the same partitions and order."""
    try:
        plan = df._jdf.queryExecution().analyzed()
        if not plan.deterministic():
            return False
        stack = [plan]
        while stack:
            node = stack.pop()
            if node.getClass().getSimpleName() not in _STABLE_ORDER:
                return False
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
        return True
    except Exception:
        return False


def _parquet_source(df: DataFrame) -> list[FileRef] | None:
    """The files of ``df`` if it is exactly an unpartitioned Parquet scan, else ``None``."""
    try:
        plan = df._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() != "LogicalRelation":
            return None
        rel = plan.relation()
        if rel.getClass().getSimpleName() != "HadoopFsRelation":
            return None
        if "Parquet" not in rel.fileFormat().getClass().getSimpleName() or rel.partitionSchema().size() > 0:
            return None
        # A cached scan (this frame's plan, or the same plan cached through another frame) is
        # served from memory, where the file metadata columns that make (file, row) ids are
        # null: copy the tuples instead.
        if df._jdf.storageLevel().useMemory() or df._jdf.storageLevel().useDisk():
            return None
    except Exception:  # not a classic DataFrame (e.g. Spark Connect): copy the tuples instead
        return None
    out = []
    for f in sorted(df.inputFiles()):
        local = _norm_path(f)
        if not os.path.exists(local):
            return None  # a remote file system: copy the tuples instead
        st = os.stat(local)
        out.append(FileRef(f, st.st_size, st.st_mtime_ns))
    if len(out) >= MAX_FILES:
        return None
    return out


def _name(column: str) -> Column:
    """A top-level column by its exact name (dots and backquotes in it are not syntax)."""
    return F.col("`" + column.replace("`", "``") + "`")


def _verdict_file(files: list[FileRef], key: list[str]) -> str | None:
    """Where the verdict that ``key`` identifies each row of exactly ``files`` is kept: the
    user's cache directory, named by the files (path, size, modification time) and the key."""
    from lipspark.cache import cache_dir

    d = cache_dir()
    if d is None:
        return None
    text = json.dumps({"files": [[f.path, f.size, f.mtime_ns] for f in files], "key": key})
    return os.path.join(d, "keys", hashlib.sha256(text.encode()).hexdigest()[:32])


def _check_key(df: DataFrame, relation: str, key: list[str], files: list[FileRef] | None = None) -> None:
    """Refuse a ``key`` that does not identify each row of ``df``: in one aggregation, the key
    value with a null, else the one on the most rows, if any is on more than one.

    When ``df`` is exactly a scan of the Parquet ``files`` (which a graph requires never to
    change), a key found to identify each row is remembered for those files as they are (size
    and modification time): the next annotation of the same files by the same key skips the
    aggregation, a full pass over the relation."""
    verdict = _verdict_file(files, key) if files else None
    if verdict is not None and os.path.exists(verdict):
        return
    _aggregate_key_check(df, relation, key)
    if verdict is not None:
        try:
            os.makedirs(os.path.dirname(verdict), exist_ok=True)
            tmp = f"{verdict}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(json.dumps({"relation": relation, "key": key, "unique": True}))
            os.replace(tmp, verdict)
        except OSError:  # a cache only: the next annotation checks again
            pass


def _aggregate_key_check(df: DataFrame, relation: str, key: list[str]) -> None:
    count = f"{PREFIX}rows"
    has_null = reduce(lambda a, b: a | b, [_name(k).isNull() for k in key])
    worst = (df.groupBy(*[_name(k) for k in key]).agg(F.count(F.lit(1)).alias(count))
             .where(has_null | (F.col(count) > 1))
             .orderBy(has_null.desc(), F.col(count).desc(), *[_name(k).asc() for k in key])
             .limit(1).collect())
    if worst:
        row = worst[0]
        raise AnnotationError(key_violation(
            f"relation {relation!r}", key, tuple(row[i] for i in range(len(key))), row[count],
            "deduplicate the rows or drop those with a null key, choose key columns that identify each row, "
            "or number repeated key values as row-position tokens with annotate(..., unique=False)"))


def _unpersist(frames: list[DataFrame]) -> None:
    for df in frames:
        df.unpersist()
    frames.clear()


class Tracker:
    """Owns one provenance graph under construction.

    Parameters
    ----------
    spark
        The SparkSession module code runs on.
    builder
        Graph builder to record into (a fresh one by default; the workflow layer passes its own
        so that all invocations of an execution share one graph).
    context
        Where the segments this tracker records belong (module, workflow node, execution,
        invocation); every segment carries it. The workflow layer gives each invocation its
        own tracker with its own context.
    share_breaker_inputs
        Cache the inputs of pipeline breakers (see :meth:`share`).

    Attributes
    ----------
    black_boxes
        The value-level black boxes the rules recognise, by identity (see
        :class:`~lipspark.blackbox.BlackBoxRegistry`).
    observer
        ``None``, or a function the projection rule calls with the input frame of every
        projection that applies a value-level black box, and the black box (a crash-culprit
        search, :mod:`lipspark.workflow.culprits`, guards those inputs row by row).
    """

    def __init__(self, spark: SparkSession, builder: GraphBuilder | InvocationBuilder | None = None, *, context: Context = Context(),
                 share_breaker_inputs: bool = False, planning_only: bool = False) -> None:
        self.spark = spark
        #: plans are made and never run (a deferred store's layout probe): nothing is cached or computed
        self.planning_only = planning_only
        self.builder: GraphBuilder | InvocationBuilder = builder if builder is not None else GraphBuilder()
        self.context = context
        self.share_breaker_inputs = share_breaker_inputs
        self.black_boxes = BlackBoxRegistry()
        self._persisted: list[DataFrame] = []
        self._for_graph: list[DataFrame] = []  # cached until the graph is written (keep_for_graph)
        self._case_sensitive: bool | None = None  # read from the session's conf when first needed
        self._warned: set[str] = set()
        self.observer: Callable[[Any, Any], None] | None = None
        self._views: dict[str, AnnotatedFrame] = {}  # temporary views of annotated frames, by name as Spark compares names

    def share(self, df: DataFrame) -> DataFrame:
        """Mark the input of a pipeline breaker to be computed once for the output and the graph.

        With ``share_breaker_inputs`` (the workflow layer turns it on: module relations are
        small) the frame is cached, so writing the graph does not recompute the module's
        pipeline; :meth:`release` frees the caches. Otherwise a no-op.
        """
        if self.share_breaker_inputs and not self.planning_only:
            df.persist()
            self._persisted.append(df)
        return df

    def keep_for_graph(self, df: DataFrame) -> DataFrame:
        """Cache ``df`` (memory, spilling to disk) so the output and the graph read one
        computation of it: the first job that needs it (the output's write, or the graph's)
        computes it, the other reads the cache. Unlike :meth:`compute_once` the frame keeps its
        plan (column lineage reads it); its rows must not depend on the job (a recomputation,
        should the cache lose a block, gives the same rows). :meth:`write` and :meth:`release`
        free it. Planning only: ``df`` as it is."""
        if self.planning_only:
            return df
        df.persist()
        self._for_graph.append(df)
        return df

    def compute_once(self, df: DataFrame) -> DataFrame:
        """``df`` computed now, once, for the output and the graph alike: for frames whose rows
        may differ from one Spark job to the next (``rand()``, ``current_timestamp()``, ``limit``
        over unordered rows), which would otherwise give the output one set of rows and the graph
        another. A local checkpoint: its blocks live as long as the Spark application. Planning
        only: ``df`` as it is (no job runs)."""
        return df if self.planning_only else df.localCheckpoint(eager=True)

    def warn_once(self, key: str, message: str, *, stacklevel: int = 3) -> None:
        """Emit ``message`` as a :class:`~lipspark.errors.ProvenanceWarning`, the first time
        only for this tracker (one invocation in a workflow) and ``key``."""
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, ProvenanceWarning, stacklevel=stacklevel + 1)

    @property
    def case_sensitive(self) -> bool:
        """Whether column names are case-sensitive (``spark.sql.caseSensitive``, false by default)."""
        if self._case_sensitive is None:
            self._case_sensitive = str(self.spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
        return self._case_sensitive

    def register_view(self, name: str, frame: AnnotatedFrame, *, replace: bool = True) -> None:
        """Register ``frame`` as the temporary view ``name`` of this tracker (``df.createOrReplaceTempView``):
        ``frame.sparkSession.sql`` reads it with its annotations. Spark gets the plain data under
        the same name too, as with provenance off (``replace=False``: Spark's own error if the
        name is taken, as ``createTempView``)."""
        plain = frame.to_plain()
        if replace:
            plain.createOrReplaceTempView(name)
        else:
            plain.createTempView(name)
        self._views[self._view_key(name)] = frame

    def drop_view(self, name: str) -> None:
        """Forget the annotated view ``name`` (``DROP VIEW`` through ``frame.sparkSession.sql``)."""
        self._views.pop(self._view_key(name), None)

    def view(self, name: str) -> AnnotatedFrame | None:
        """The annotated frame registered as the temporary view ``name``, or ``None``."""
        return self._views.get(self._view_key(name))

    @property
    def views(self) -> list[str]:
        """The names of the temporary views registered from annotated frames."""
        return sorted(self._views)

    def _view_key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def release(self) -> None:
        """Unpersist what :meth:`share` and :meth:`keep_for_graph` cached."""
        _unpersist(self._persisted)
        _unpersist(self._for_graph)

    def annotate(self, df: DataFrame, relation: str, key: Sequence[str] | None = None, *, unique: bool = True,
                 keep: Sequence[str] = ()) -> AnnotatedFrame:
        """Annotate a base relation: every row gets a token p-node.

        Tokens read ``Relation:key`` (e.g. ``Cars:C2``) when ``key`` is given, otherwise
        ``Relation:values`` with ``#n`` for the n-th duplicate (row-position tokens); null is
        ``null`` and values that could be misread are quoted (:mod:`lipspark.vocabulary.tokens`).

        A ``key`` must identify each row: it is checked (one Spark aggregation over ``df``; for a
        scan of Parquet files, once per version of the files: the verdict is kept in the user's
        cache directory, ``~/.cache/lipspark/keys``) and a null or repeated key value raises
        :class:`~lipspark.errors.AnnotationError` naming one
        such value and how many rows have it. ``unique=False`` skips the check and labels by the
        key anyway, numbering repeated values ``#2``, ``#3``… in row order, like rows without a key.

        A token keeps its key columns (with no key, all the columns) and the columns in ``keep``:
        the values a query can read from a base tuple (``tuple Cars(Model = …)``, ``evaluate …
        given tuple Cars.Model``, :func:`lipspark.query.provenance_mapping`), e.g. a security
        level or a probability. Kept columns are stored with the graph; they do not change labels.

        When ``df`` is a plain, uncached scan of Parquet files, token ids are (file, row-in-file) and the
        graph refers to those files instead of copying the tuples: the files must not change
        afterwards (a changed file is reported when the graph is read). Otherwise the tuples are
        copied into the graph and ids number the rows in the order of ``df``'s partitions; a ``df``
        whose order Spark does not guarantee on recomputation (the result of a shuffle, a
        non-deterministic expression) is checkpointed first so its ids cannot change.
        """
        if not relation or not relation.replace("_", "").isalnum():
            raise AnnotationError(f"relation name must be alphanumeric (underscores allowed), got {relation!r}")
        hidden = [c for c in df.columns if is_hidden(c)]
        if hidden:
            raise AnnotationError(f"relation {relation!r} has reserved column names {hidden}; rename them")
        key = list(key or [])
        missing = [k for k in key if k not in df.columns]
        if missing:
            raise AnnotationError(f"relation {relation!r}: key columns {missing} not among its columns {df.columns}")
        if isinstance(keep, str):
            keep = [keep]
        missing = [k for k in keep if k not in df.columns]
        if missing:
            raise AnnotationError(f"relation {relation!r}: columns to keep {missing} not among its columns {df.columns}")
        files = _parquet_source(df)
        if files is None and not _has_stable_order(df):
            # e.g. the result of a shuffle: rows could come back in another order when Spark
            # recomputes the plan, and positional ids would silently change. Fix them once.
            df = df.localCheckpoint(eager=True)
        if key and unique:
            _check_key(df, relation, key, files)
        seg = self.builder.allocate()
        columns = tuple(key + [k for k in dict.fromkeys(keep) if k not in key]) if key else tuple(df.columns)
        if files is not None and not is_fine(seg):
            # Token ids from (file ordinal, row index in file): deterministic whatever Spark's
            # partitioning, and the tuples need not be copied: the graph refers to the files.
            # the path as Spark spells it (file:/…) looked up as it is first: a regular expression
            # on every row's path cost 1.3 s per 6M rows, the lookup 0.15 s; a spelling the map
            # does not hold is normalized, then looked up (its normalized form is among the keys)
            spelled = F.create_map(*[x for i, f in enumerate(files) for s in _spellings(_norm_path(f.path)) for x in (F.lit(s), F.lit(i))])
            fpath = F.col("_metadata.file_path")
            at = F.coalesce(F.element_at(spelled, fpath), F.element_at(spelled, F.regexp_replace(fpath, "^file:/+", "/")))
            ordinal = file_position_col(at, F.col("_metadata.row_index"))
            annotated = df.withColumn(factor(0), positional_col(seg, ordinal))
            self.builder.record(BaseSegment(seg, self.context, relation=relation, key=tuple(key), columns=columns, files=tuple(files)))
        else:
            # (in a workflow's module code the segment is a fine one, too large for a positional
            # id: the tokens are hashed and kept in the graph, as for a relation without files)
            mid = F.monotonically_increasing_id()  # partition << 33 | row in partition
            ordinal = file_position_col(F.shiftright(mid, 33), mid.bitwiseAND((1 << 33) - 1))
            annotated = df.withColumn(factor(0), node_hash_col(seg, ordinal) if is_fine(seg) else positional_col(seg, ordinal))
            self.builder.record(BaseSegment(seg, self.context, relation=relation, key=tuple(key), columns=columns),
                                tuples=annotated.select(F.col(factor(0)).alias(BASE_ID), *columns))
        return AnnotatedFrame(self, annotated, Layout(1))

    def graph(self) -> "GraphIndex":
        """Compute the recorded graph into memory, indexed (small graphs: tests, notebooks)."""
        from lipspark.graph.index import GraphIndex

        return GraphIndex.from_segments(self.builder.collect())

    def write(self, path: str) -> dict[str, Any]:
        """Write the recorded graph as Parquet under ``path``; returns the manifest. What was
        cached for the graph alone (:meth:`keep_for_graph`) is freed once it is written."""
        manifest = self.builder.write(path)
        _unpersist(self._for_graph)
        return manifest
