"""Modules, workflows, executions and the provenance store (Lipstick §2.2, §3.1)."""
from __future__ import annotations

from lipspark.workflow.checks import Check, CheckFailed
from lipspark.workflow.definition import WorkflowDefinition, load_definition
from lipspark.workflow.execution import Executor
from lipspark.workflow.materialize import materialize
from lipspark.workflow.module import Module, Relation
from lipspark.workflow.run import RunSummary, run
from lipspark.store import Store
from lipspark.workflow.workflow import Workflow

__all__ = ["Check", "CheckFailed", "Executor", "Module", "Relation", "RunSummary", "Store", "Workflow", "WorkflowDefinition", "load_definition", "materialize", "run"]
