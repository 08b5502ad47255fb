"""Modules, workflows, executions and the provenance store (Lipstick §2.2, §3.1).

The public names are imported on first use, so that what needs no Spark — a query on a
deferred store's coarse graph (:mod:`lipspark.workflow.ondemand`) — imports without pyspark.

>>> import lipspark.workflow as w
>>> w.Store.__name__, "Executor" in w.__all__
('Store', True)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from lipspark.lazy import exports

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.store import Store
    from lipspark.workflow.checks import Check, CheckFailed
    from lipspark.workflow.definition import WorkflowDefinition, load_definition
    from lipspark.workflow.execution import Executor
    from lipspark.workflow.materialize import materialize
    from lipspark.workflow.module import Module, Relation
    from lipspark.workflow.rerun import Rerunner
    from lipspark.workflow.run import RunSummary, run
    from lipspark.workflow.workflow import Workflow

__all__ = ["Check", "CheckFailed", "Executor", "Module", "Relation", "Rerunner", "RunSummary", "Store", "Workflow", "WorkflowDefinition", "load_definition", "materialize", "run"]

#: public name → the module that defines it
_HOMES = {
    "Check": "lipspark.workflow.checks", "CheckFailed": "lipspark.workflow.checks",
    "WorkflowDefinition": "lipspark.workflow.definition", "load_definition": "lipspark.workflow.definition",
    "Executor": "lipspark.workflow.execution", "materialize": "lipspark.workflow.materialize",
    "Module": "lipspark.workflow.module", "Relation": "lipspark.workflow.module",
    "Rerunner": "lipspark.workflow.rerun", "RunSummary": "lipspark.workflow.run", "run": "lipspark.workflow.run",
    "Store": "lipspark.store", "Workflow": "lipspark.workflow.workflow",
}


__getattr__, __dir__ = exports(globals(), _HOMES)
