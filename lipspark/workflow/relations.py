"""Relations at module boundaries: schema checks, and relations stored as Parquet in a store.

Every relation crossing a module boundary is written to the store and described by a
:class:`~lipspark.vocabulary.RelationDescriptor` (its directory, files, value and bag columns
and how each row's p-node is found). A stored row's position ``file << ROW_BITS | row`` is what
boundary node ids are made of (:func:`position_col`).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.vocabulary.columns import is_hidden, value_col
from lipspark.errors import StoreError
from lipspark.frame import AnnotatedFrame
from lipspark.store import Store
from lipspark.vocabulary import FileRef, RelationDescriptor
from lipspark.vocabulary.ids import MAX_FILES, file_position_col, positional_col
from lipspark.workflow.module import Module, Relation

__all__ = ["StoredRelation", "check_schema", "relation_frame", "read_stored", "stored_files", "write_base", "position_col",
           "descriptor", "key_repeat", "row_hash", "fingerprint_metrics", "observed_fingerprint"]

#: the key under which Spark keeps a DataFrame's own schema in the Parquet files it writes
SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"

_TYPE_ALIASES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint", "real": "float", "dec": "decimal"}


def _norm_type(t: str) -> str:
    t = t.lower().replace(" ", "")
    return _TYPE_ALIASES.get(t, t)


def _visible_schema(df: Any) -> list[tuple[str, str]]:
    plain = df.to_plain() if isinstance(df, AnnotatedFrame) else df
    return [(f.name, _norm_type(f.dataType.simpleString())) for f in plain.schema.fields if not is_hidden(f.name)]


def check_schema(module: Module, rel: Relation, df: Any) -> None:
    """Schema check at an invocation boundary (names and types, in order)."""
    expected = Relation(rel.name, tuple((n, _norm_type(t)) for n, t in rel.columns))
    expected.check(module.name, _visible_schema(df))


def descriptor(desc: "RelationDescriptor | Mapping[str, Any]") -> RelationDescriptor:
    """A descriptor as a typed record (``store.json`` holds them as JSON)."""
    return desc if isinstance(desc, RelationDescriptor) else RelationDescriptor.from_json(desc)


def stored_files(store: Store, rel_dir: str) -> tuple[FileRef, ...]:
    """The Parquet files of a relation written at ``rel_dir``, in the order their rows are numbered."""
    absdir = store.resolve(rel_dir)
    names = sorted(n for n in os.listdir(absdir) if n.endswith(".parquet"))
    out = [FileRef.of(os.path.join(absdir, n), f"{rel_dir}/{n}") for n in names]  # checksummed: `lipspark check`
    if len(out) >= MAX_FILES:
        raise StoreError(f"{rel_dir} has {len(out)} files; lipspark numbers at most {MAX_FILES} per relation")
    return tuple(out)


def _spark_schema(path: str) -> T.StructType | None:
    """The Spark schema a Parquet file written by Spark carries in its footer (``None`` for
    files written otherwise): the schema Spark itself infers from such a file, read here
    without the Spark job that inference costs."""
    meta = pq.read_metadata(path).metadata or {}
    text = meta.get(SPARK_SCHEMA_KEY)
    return T.StructType.fromJson(json.loads(text)) if text else None


def read_stored(spark: SparkSession, path: str, files: "tuple[FileRef, ...]") -> DataFrame:
    """The relation stored at ``path`` (whose Parquet files are ``files``) as a DataFrame.

    Spark infers a Parquet relation's schema with a job of its own; a store's relations were
    written by Spark, whose schema is in each file's footer, so it is read from there and given
    to the reader (the same schema, made nullable, as inference gives). A relation whose files
    carry none is read with inference."""
    schema = _spark_schema(os.path.join(path, os.path.basename(files[0].path))) if files else None
    reader = spark.read if schema is None else spark.read.schema(schema)
    return reader.parquet(path)


def key_repeat(paths: Sequence[str], key: Sequence[str]) -> tuple[tuple[Any, ...], int] | None:
    """The key value with a null, else the one on the most rows if more than one, in the Parquet
    files ``paths`` (read on the driver, key columns only: no Spark job), and on how many rows;
    ``None`` when ``key`` identifies each row.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "r.parquet")
    >>> pq.write_table(pa.table({"k": ["a", "b", "b"], "x": [1, 2, 3]}), f)
    >>> key_repeat([f], ["k"]), key_repeat([f], ["k", "x"])
    ((('b',), 2), None)
    """
    parts = [pq.read_table(p, columns=list(key)) for p in paths]
    if not parts or not sum(t.num_rows for t in parts):
        return None
    names = [f"k{i}" for i in range(len(key))]  # the user's names could be those of the count below
    t = pa.concat_tables(parts, promote_options="default").rename_columns(names)
    groups = t.group_by(names, use_threads=False).aggregate([([], "count_all")])
    n = groups.column("count_all")
    null = pc.is_null(groups.column(names[0]))
    for k in names[1:]:
        null = pc.or_(null, pc.is_null(groups.column(k)))
    bad = groups.append_column("null", null).filter(pc.or_(null, pc.greater(n, 1)))
    if not bad.num_rows:
        return None
    order = [("null", "descending"), ("count_all", "descending"), *[(k, "ascending") for k in names]]
    worst = bad.sort_by(order).slice(0, 1).to_pylist()[0]
    return tuple(worst[k] for k in names), int(worst["count_all"])


def position_col(desc: RelationDescriptor) -> Column:
    """Spark column: file ordinal << ROW_BITS | row index, for rows read from ``desc``'s files."""
    ordinals = F.create_map(*[x for i, f in enumerate(desc.files) for x in (F.lit(os.path.basename(f.path)), F.lit(i))])
    name = F.element_at(F.split(F.col("_metadata.file_path"), "/"), -1)
    return file_position_col(F.element_at(ordinals, name), F.col("_metadata.row_index"))


def _visible_parquet(spark: SparkSession, path: str) -> DataFrame:
    df = spark.read.parquet(path)
    return df.select(*[c for c in df.columns if not is_hidden(c)])


def relation_frame(spark: SparkSession, store: Store, desc: "RelationDescriptor | Mapping[str, Any]") -> DataFrame:
    """The data of a stored relation (hidden columns dropped)."""
    return _visible_parquet(spark, store.resolve(descriptor(desc).dir))


def row_hash(df: DataFrame) -> Column:
    """Each row's hash over its visible columns in name order (hidden columns and column order
    left out: a replay's rows carry provenance columns the run's do not). Spark does not hash
    maps: a map column is hashed as its JSON."""
    types = {f.name: f.dataType for f in df.schema.fields}
    cols = [F.to_json(F.col(_quoted(c))) if isinstance(types[c], T.MapType) else F.col(_quoted(c))
            for c in sorted(c for c in types if not is_hidden(c))]
    return F.xxhash64(*cols).cast("decimal(38,0)")


def fingerprint_metrics(df: DataFrame) -> list[Column]:
    """A relation's fingerprint as two aggregate columns for :meth:`DataFrame.observe` — ``n``,
    its rows, and ``s``, the sum of their :func:`row_hash` — so the job that writes it computes it
    too: equal multisets of rows have equal fingerprints (and unequal ones almost surely not),
    whatever the row order and the hidden columns."""
    zero = F.lit(0).cast("decimal(38,0)")
    return [F.count(F.lit(1)).alias("n"), F.coalesce(F.sum(row_hash(df)), zero).alias("s")]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def observed_fingerprint(observation: Any) -> tuple[int, int] | None:
    """The fingerprint an ``Observation`` of :func:`fingerprint_metrics` saw, or ``None`` when
    its job did not report it."""
    jo = observation._jo
    if jo is None or not jo.future().isCompleted():
        return None
    got = observation.get
    if "n" not in got or "s" not in got:
        return None
    return int(got["n"]), int(got["s"])


@dataclass(frozen=True)
class StoredRelation:
    """A relation already written as Parquet files (a directory): given as a workflow input or
    initial state, its files are copied verbatim, so the rows keep their file and position, and
    so their token ids (deferred capture replays executions this way)."""

    path: str

    def frame(self, spark: SparkSession) -> DataFrame:
        return _visible_parquet(spark, self.path)


def write_base(df: "DataFrame | StoredRelation", path: str) -> None:
    """Write a workflow input or initial state relation (a :class:`StoredRelation` is copied)."""
    if isinstance(df, StoredRelation):
        if os.path.exists(path):
            raise StoreError(f"{path} already exists")
        shutil.copytree(df.path, path, ignore=shutil.ignore_patterns(".*.crc"))
    else:
        df.write.mode("errorifexists").parquet(path)
