"""Graph directories on disk: ``manifest.json`` and the Parquet tables of its segments.

Reading only: a manifest's entries become typed :class:`~lipspark.vocabulary.Segment` records
(:meth:`Segment.from_json`), paired with their tables as Arrow tables.

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> with open(os.path.join(d, "manifest.json"), "w") as fh:
...     json.dump({"format": "lipspark-graph", "version": 1, "segments": [
...         {"seg": 1, "kind": "invocation", "meta": {"type": "m", "label": "dealer1"}}]}, fh)
>>> read_segments(d, read_manifest(d))
[(InvocationSegment(seg=1, context=Context(module=None, node=None, execution=None, invocation=None), label='dealer1'), {})]
"""
from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from lipspark.errors import StoreError
from lipspark.vocabulary.segments import READABLE_VERSIONS, FileRef, Segment

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["read_json", "read_manifest", "read_segments", "TableReader", "local_path", "checked_path"]


def local_path(path: str, root: str | None) -> str:
    """A file path of a graph as a local path (``file:`` URIs stripped), relative ones under ``root``.

    >>> local_path("file:///data/x.parquet", None), local_path("executions/1/x", "/s")
    ('/data/x.parquet', '/s/executions/1/x')
    """
    path = re.sub(r"^file:/+", "/", path)
    return path if os.path.isabs(path) or root is None else os.path.join(root, path)


def read_json(path: str, what: str) -> Any:
    """Parse a JSON file of a graph or store; a file that does not parse is a :class:`StoreError`."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as err:
        raise StoreError(f"{what} is corrupt: {os.path.basename(path)} does not parse ({err})") from err


def read_manifest(path: str) -> dict[str, Any]:
    """The manifest of a graph directory, checked for format and version."""
    mpath = os.path.join(path, "manifest.json")
    if not os.path.exists(mpath):
        raise StoreError(f"no graph at {path} (manifest.json missing)")
    manifest = read_json(mpath, f"the graph at {path}")
    if manifest.get("format") != "lipspark-graph":
        raise StoreError(f"{mpath} is not a lipspark graph manifest")
    if manifest.get("version") not in READABLE_VERSIONS:
        raise StoreError(f"the graph at {path} has format version {manifest.get('version')}; this lipspark reads "
                         f"{', '.join(map(str, READABLE_VERSIONS[:-1]))} and {READABLE_VERSIONS[-1]}")
    return manifest


class TableReader:
    """The tables of the segments of one graph directory, as Arrow tables with their logical
    column names.

    A table entry of the manifest is either a segment's own directory (version 1:
    ``{"path": "members/seg=17", "columns": {...}}``) or a table shared by all segments with the
    segment number in a column (version 2: ``{"path": "members", "seg_column": "seg",
    "columns": {...}}``). A shared table is read once, on first use, and split by segment;
    each segment then gets a zero-copy slice of it, without the segment column and without the
    typed argument columns ``x<i>_<type>`` of other segments. ``columns`` maps stored names back
    to logical ones (``x0_double`` -> ``x0``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._shared: dict[tuple[str, str], tuple[dict[int, pa.Table], pa.Table]] = {}

    def read(self, seg: int, entry: dict[str, Any]) -> pa.Table | None:
        """Segment ``seg``'s table of the manifest ``entry``; None when a segment of a version-1
        graph has no rows (Spark wrote no file for it, so its columns are unknown)."""
        renames: dict[str, str] = entry.get("columns", {})
        seg_column = entry.get("seg_column")
        if seg_column is None:
            table = self._files(entry["path"])
        else:
            key = (entry["path"], seg_column)
            if key not in self._shared:
                self._shared[key] = self._split(entry["path"], seg_column)
            parts, empty = self._shared[key]
            table = parts.get(seg, empty)
            if table is not None:
                table = table.select([c for c in table.column_names
                                      if c != seg_column and (not c.startswith("x") or c in renames)])
        if table is None:
            return None
        return table.rename_columns([renames.get(c, c) for c in table.column_names])

    def _files(self, rel: str) -> pa.Table | None:
        """All Parquet files of a directory as one table (None without files)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        tpath = os.path.join(self.path, rel)
        try:
            files = sorted(os.path.join(tpath, f) for f in os.listdir(tpath) if f.endswith(".parquet"))
            return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default") if files else None
        except Exception as err:  # pyarrow raises several types for missing/corrupt files
            raise StoreError(f"the graph at {self.path} is corrupt: table {rel} cannot be read ({type(err).__name__}); "
                             "`lipspark check` lists every damaged file") from None

    def _split(self, rel: str, seg_column: str) -> tuple[dict[int, pa.Table], pa.Table | None]:
        """A shared table split by segment (rows in file order within a segment), and an
        empty table with its columns for segments without rows."""
        import pyarrow as pa

        table = self._files(rel)
        if table is None:
            return {}, None
        if seg_column not in table.column_names:
            raise StoreError(f"the graph at {self.path} is corrupt: table {rel} has no column {seg_column!r}")
        segs = table[seg_column].to_numpy(zero_copy_only=False)
        if len(segs) and not bool(np.all(segs[1:] >= segs[:-1])):  # written in segment order; sort if not
            order = np.argsort(segs, kind="stable")
            table, segs = table.take(pa.array(order)), segs[order]
        values, starts = np.unique(segs, return_index=True)
        ends = np.append(starts[1:], len(segs))
        return {int(v): table.slice(int(lo), int(hi - lo)) for v, lo, hi in zip(values, starts, ends)}, table.slice(0, 0)


def _empty_schema() -> "pa.Schema":
    """The table a segment without rows reads as when its columns are unknown (a version-1 graph)."""
    import pyarrow as pa

    return pa.schema([("g", pa.int64()), ("m", pa.int64()), ("id", pa.int64()),
                      ("children", pa.list_(pa.int64())), ("value", pa.string())])


def read_segments(path: str, manifest: dict[str, Any]) -> list[tuple[Segment, dict[str, pa.Table]]]:
    """``[(segment, {table: pyarrow.Table})]`` of a graph directory (the manifest's entries read
    by :meth:`Segment.from_json`, so an unknown kind or a missing field is a :class:`StoreError`).

    Each shared table (version 2) is read once for all segments (:class:`TableReader`)."""
    reader = TableReader(path)
    out: list[tuple[Segment, dict[str, pa.Table]]] = []
    for seg in manifest["segments"]:
        segment = Segment.from_json(seg)
        tables: dict[str, pa.Table] = {}
        for name, entry in seg.get("tables", {}).items():
            table = reader.read(segment.seg, entry)
            tables[name] = _empty_schema().empty_table() if table is None else table
        out.append((segment, tables))
    return out


def checked_path(f: FileRef, what: str, root: str | None) -> str:
    """The local path of a stored file the graph refers to, refused in one line (naming
    ``what``) when it is gone or changed since the graph was captured."""
    path = local_path(f.path, root)
    try:
        st = os.stat(path)
    except OSError as err:
        raise StoreError(f"{what}: its file {path} is gone; the graph refers to it (`lipspark check` lists every damaged file)") from err
    if not f.unchanged(st, path):
        raise StoreError(f"{what}: file {path} changed after the graph was captured (its size or checksum differ); "
                         "`lipspark check` lists every damaged file")
    return path
