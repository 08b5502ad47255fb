"""The rewrite rules, one module per kind of operation (Lipstick §3.2).

Each rule is a small function over an immutable :class:`~lipspark.frame.AnnotatedFrame`
saying how data and annotation propagate and which segment it records:
:mod:`~lipspark.capture.rules.projection`, :mod:`~lipspark.capture.rules.selection`,
:mod:`~lipspark.capture.rules.join`, :mod:`~lipspark.capture.rules.semijoin`,
:mod:`~lipspark.capture.rules.intersect`, :mod:`~lipspark.capture.rules.union`,
:mod:`~lipspark.capture.rules.aggregate` (``distinct``, ``dropDuplicates`` too), :mod:`~lipspark.capture.rules.pivot`,
:mod:`~lipspark.capture.rules.grouping_sets` (``rollup``, ``cube``), :mod:`~lipspark.capture.rules.window`,
:mod:`~lipspark.capture.rules.black_box`,
:mod:`~lipspark.capture.rules.cogroup`, :mod:`~lipspark.capture.rules.guard` (a filter's
comparison over values, decided per row) and :mod:`~lipspark.capture.rules.condition` (what any
other filter, join or grouping over values records).
"""
from __future__ import annotations

__all__: list[str] = []
