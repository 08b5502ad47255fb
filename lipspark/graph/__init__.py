"""The provenance graph: recording (builder), expansion and the in-memory model."""
from __future__ import annotations

from lipspark.graph.builder import GraphBuilder, Segment
from lipspark.graph.model import ProvenanceGraph

__all__ = ["GraphBuilder", "Segment", "ProvenanceGraph"]
