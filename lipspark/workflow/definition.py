"""Workflow definitions: plain Python modules under ``workflows/`` that lipspark can run.

A definition module exposes ``DEFINITION = WorkflowDefinition(...)``: how to build the workflow
from parameters, its initial state, the workflow inputs of each execution and, optionally, when
a run stops early.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from lipspark.errors import WorkflowError

__all__ = ["WorkflowDefinition", "load_definition"]


@dataclass
class WorkflowDefinition:
    """What ``lipspark run`` needs to know about a workflow.

    Parameters
    ----------
    name
        Default store directory name (``graphs/<name>``).
    build
        ``build(params) -> Workflow``.
    initial_state
        ``initial_state(spark, params) -> {module: {relation: DataFrame}}``.
    inputs
        ``inputs(spark, execution, params) -> {input node: {relation: DataFrame}}``; ``execution``
        counts from 1; the inputs must depend only on it and ``params`` (deterministic runs).
    params
        Default parameters (``--param k=v`` on the command line overrides them).
    stop
        ``stop(outputs, params) -> bool`` after each execution, where ``outputs`` maps an output
        node to ``{relation: [Row, ...]}``; ``True`` ends the run early.
    """

    name: str
    build: Callable[[dict[str, Any]], Any]
    initial_state: Callable[[Any, dict[str, Any]], dict[str, dict[str, Any]]]
    inputs: Callable[[Any, int, dict[str, Any]], dict[str, dict[str, Any]]]
    params: dict[str, Any] = field(default_factory=dict)
    stop: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None
    source: str = ""

    def with_params(self, overrides: dict[str, Any]) -> dict[str, Any]:
        unknown = [k for k in overrides if k not in self.params]
        if unknown:
            raise WorkflowError(f"workflow {self.name!r} has no parameters {unknown}; it takes {sorted(self.params)}")
        out = dict(self.params)
        for k, v in overrides.items():
            default = self.params[k]
            try:
                out[k] = type(default)(v) if default is not None and not isinstance(v, type(default)) else v
            except (TypeError, ValueError) as err:
                raise WorkflowError(f"parameter {k!r} expects {type(default).__name__}, got {v!r}") from err
        return out


def _where(err: BaseException, path: str) -> str:
    """``file:line`` of the error in the definition file (its own line for a syntax error)."""
    if isinstance(err, SyntaxError) and err.lineno is not None:
        return f"{path}:{err.lineno}"
    target = os.path.abspath(path)
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    return f"{path}:{line}" if line is not None else path


def _first_line(err: BaseException) -> str:
    text = err.msg if isinstance(err, SyntaxError) else str(err)
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def load_definition(path: str) -> WorkflowDefinition:
    """Import a workflow definition file and return its ``DEFINITION``."""
    if not os.path.exists(path):
        raise WorkflowError(f"no workflow definition at {path}")
    name = "lipspark_workflow_" + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkflowError(f"{path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's file: one line with its file:line, not a traceback
        sys.modules.pop(name, None)
        raise WorkflowError(f"{_where(err, path)}: the workflow definition does not load: {type(err).__name__}: {_first_line(err)}") from None
    # black boxes defined in the file run on Spark's Python workers, which cannot import a
    # module loaded from a path: ship its functions by value
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
    definition = getattr(module, "DEFINITION", None)
    if not isinstance(definition, WorkflowDefinition):
        raise WorkflowError(f"{path} must define DEFINITION = lipspark.workflow.WorkflowDefinition(...)")
    with open(path, "rb") as fh:
        definition.source = hashlib.sha256(fh.read()).hexdigest()
    return definition
