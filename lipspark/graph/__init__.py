"""The provenance graph: expansion and the in-memory model (recording is :mod:`lipspark.capture`)."""
from __future__ import annotations

from lipspark.graph.model import ProvenanceGraph

__all__ = ["ProvenanceGraph"]
