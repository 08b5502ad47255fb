"""TPC-H as lipspark modules: the 22 queries in idiomatic PySpark, data from ``tpchgen-cli``,
and a coverage scoreboard (runs | fidelity | oracle) — issue 13, item 2.

``python -m benchmarks.tpch`` prints the scoreboard; see :mod:`benchmarks.tpch.scoreboard`.
"""
