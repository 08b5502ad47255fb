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

from lipspark.errors import StoreError
from lipspark.vocabulary.segments import FORMAT_VERSION, Segment

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["read_json", "read_manifest", "read_segments", "local_path"]


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
    if manifest.get("version") != FORMAT_VERSION:
        raise StoreError(f"the graph at {path} has format version {manifest.get('version')}; this lipspark reads {FORMAT_VERSION}")
    return manifest


def read_segments(path: str, manifest: dict[str, Any]) -> list[tuple[Segment, dict[str, pa.Table]]]:
    """``[(segment, {table: pyarrow.Table})]`` of a graph directory (the manifest's entries read
    by :meth:`Segment.from_json`, so an unknown kind or a missing field is a :class:`StoreError`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: list[tuple[Segment, dict[str, pa.Table]]] = []
    for seg in manifest["segments"]:
        segment = Segment.from_json(seg)
        tables: dict[str, pa.Table] = {}
        for name, entry in seg.get("tables", {}).items():
            tpath = os.path.join(path, entry["path"])
            try:
                files = sorted(os.path.join(tpath, f) for f in os.listdir(tpath) if f.endswith(".parquet"))
                table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default") if files else None
            except Exception as err:  # pyarrow raises several types for missing/corrupt files
                raise StoreError(f"the graph at {path} is corrupt: table {entry['path']} cannot be read ({err})") from err
            renames = entry.get("columns", {})
            if table is None:
                table = pa.table({"g": pa.array([], pa.int64()), "m": pa.array([], pa.int64()), "id": pa.array([], pa.int64()),
                                  "children": pa.array([], pa.list_(pa.int64())), "value": pa.array([], pa.string())})
            table = table.rename_columns([renames.get(c, c) for c in table.column_names])
            tables[name] = table
        out.append((segment, tables))
    return out

