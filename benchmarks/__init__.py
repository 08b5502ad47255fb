"""Benchmarks and harnesses (not installed with the package); ``benchmarks.tpch`` is imported by
the test suite."""
