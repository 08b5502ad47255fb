"""The provenance store on disk: workflow stores (``store.json``) and graph directories
(``manifest.json`` + Parquet tables). Reading and writing JSON and files only: no Spark, no
graph expansion (that is :mod:`lipspark.graph`)."""
from __future__ import annotations

from lipspark.store.graphs import graph_segments
from lipspark.store.manifest import read_json, read_manifest, read_segments
from lipspark.store.store import CAPTURE_MODES, PROVENANCE_DIR, STATE_SCHEMES, STORE_FORMAT, STORE_VERSION, Store

__all__ = ["Store", "PROVENANCE_DIR", "STORE_FORMAT", "STORE_VERSION", "CAPTURE_MODES", "STATE_SCHEMES", "read_json", "read_manifest", "read_segments", "graph_segments"]
