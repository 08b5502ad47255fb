"""lipspark.workflow.layouts: the layouts a deferred store's invocations read and write, probed."""
from __future__ import annotations


def test_a_probe_plans_module_code_without_call_sites(spark):
    from types import SimpleNamespace

    from pyspark.errors import utils as pyspark_utils

    from lipspark.workflow.layouts import BASE, Probe

    seen = []

    def logic(R):
        seen.append(pyspark_utils.is_debugging_enabled())
        return {"Out": R.filter(R.n > 1)}

    module = SimpleNamespace(name="m", logic=logic, relation=lambda r: SimpleNamespace(ddl="n int"))
    out = Probe(spark)._run(module, {"R": BASE}, ["Out"], None, 1)
    assert out == {"Out": BASE} and seen == [False]
    assert pyspark_utils.is_debugging_enabled() is True  # the caller's thread has them back
