"""lipspark: semiring provenance for workflows of PySpark modules (Lipstick, VLDB 2012).

>>> import lipspark
>>> sorted(n for n in lipspark.__all__ if n[0].isupper())
['AnnotatedFrame', 'GraphIndex', 'LipsparkError', 'Tracker', 'UnsupportedOperation']
"""
from __future__ import annotations

from lipspark.blackbox import black_box
from lipspark.errors import LipsparkError, UnsupportedOperation
from lipspark.frame import AnnotatedFrame
from lipspark.functions import cogroup
from lipspark.graph.index import GraphIndex
from lipspark.session import get_spark
from lipspark.tracker import Tracker

__all__ = [
    "AnnotatedFrame",
    "GraphIndex",
    "LipsparkError",
    "Tracker",
    "UnsupportedOperation",
    "black_box",
    "cogroup",
    "get_spark",
]
__version__ = "0.1.0"
