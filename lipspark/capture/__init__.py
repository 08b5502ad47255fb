"""Capture: recording provenance while PySpark module code runs (the only Spark-aware layer).

* :mod:`~lipspark.capture.builder` — :class:`GraphBuilder`, typed segments with lazy tables;
* :mod:`~lipspark.capture.layout` — the hidden annotation columns of an annotated frame;
* :mod:`~lipspark.capture.plan` — reading Spark's analyzed plans;
* :mod:`~lipspark.capture.rules` — one rewrite rule per operation.

The public classes keep their homes: :class:`lipspark.frame.AnnotatedFrame`,
:class:`lipspark.tracker.Tracker`, :func:`lipspark.blackbox.black_box`.
"""
from __future__ import annotations

from lipspark.capture.builder import GraphBuilder
from lipspark.capture.layout import Layout

__all__ = ["GraphBuilder", "Layout"]
