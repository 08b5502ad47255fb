"""lipspark: semiring provenance for workflows of PySpark modules (Lipstick, VLDB 2012).

The public names are imported on first use, so the layers that need no Spark (vocabulary,
semiring, store, graph, query, viz, export) import without pyspark.

>>> import lipspark
>>> sorted(n for n in lipspark.__all__ if n[0].isupper())
['AnnotatedFrame', 'GraphIndex', 'LipsparkError', 'ProvenanceWarning', 'Tracker', 'UnsupportedOperation']
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from lipspark.lazy import exports

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.blackbox import black_box
    from lipspark.errors import LipsparkError, ProvenanceWarning, UnsupportedOperation
    from lipspark.frame import AnnotatedFrame
    from lipspark.functions import cogroup
    from lipspark.graph.index import GraphIndex
    from lipspark.session import get_spark
    from lipspark.tracker import Tracker

__all__ = [
    "AnnotatedFrame",
    "GraphIndex",
    "LipsparkError",
    "ProvenanceWarning",
    "Tracker",
    "UnsupportedOperation",
    "black_box",
    "cogroup",
    "get_spark",
]
__version__ = "0.1.0"

#: public name → the module that defines it
_HOMES = {
    "AnnotatedFrame": "lipspark.frame",
    "LipsparkError": "lipspark.errors",
    "ProvenanceWarning": "lipspark.errors",
    "GraphIndex": "lipspark.graph.index",
    "Tracker": "lipspark.tracker",
    "UnsupportedOperation": "lipspark.errors",
    "black_box": "lipspark.blackbox",
    "cogroup": "lipspark.functions",
    "get_spark": "lipspark.session",
}


__getattr__, __dir__ = exports(globals(), _HOMES)
