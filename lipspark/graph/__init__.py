"""The provenance graph as it is read: expansion of stored segments, the in-memory index, and
the provenance expressions its nodes encode. Nothing here imports pyspark (recording the graph
is capture's business).

>>> from lipspark.graph import GraphIndex, polynomial
>>> GraphIndex.__name__, polynomial.__module__
('GraphIndex', 'lipspark.graph.expression')
"""
from __future__ import annotations

from lipspark.graph.expand import expand_segments
from lipspark.graph.expression import evaluate, polynomial, token_name
from lipspark.graph.index import GraphIndex

__all__ = ["GraphIndex", "expand_segments", "polynomial", "evaluate", "token_name"]
