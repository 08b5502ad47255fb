"""One exception hierarchy for lipspark.

Every message says what was expected, what was found and how to fix it.

>>> from lipspark.errors import UnsupportedOperation, LipsparkError
>>> issubclass(UnsupportedOperation, LipsparkError)
True
"""
from __future__ import annotations

from typing import Any

__all__ = [
    "LipsparkError",
    "UnsupportedOperation",
    "AnnotationError",
    "WorkflowError",
    "ExecutionFailed",
    "SchemaError",
    "StoreError",
    "QueryError",
    "QuerySyntaxError",
    "SemiringError",
    "MissingValueError",
    "ProvenanceWarning",
]


class LipsparkError(Exception):
    """Base class of every error lipspark raises on purpose."""


class UnsupportedOperation(LipsparkError):
    """The provenance rewrite has no rule for an operation.

    Raised instead of producing provenance that could be wrong. The message names the
    operation and what to use instead (often :func:`lipspark.black_box`, which keeps coarse
    provenance for code the rewrite cannot see into).
    """

    def __init__(self, operation: str, alternative: str) -> None:
        self.operation = operation
        self.alternative = alternative
        super().__init__(
            f"lipspark cannot track provenance through {operation}. Instead: {alternative}"
        )


class AnnotationError(LipsparkError):
    """An annotated frame was used inconsistently (mixed with plain data, foreign tracker, ...)."""


class SemiringError(LipsparkError):
    """A semiring or provenance expression was used outside its definition."""


class MissingValueError(SemiringError):
    """Tokens an evaluation needs a value for were given none, and no default was given.

    Evaluating never guesses a value (a security level, a probability, a count): ``tokens``
    lists every token left without one, sorted, so that a caller can say how to give them.
    """

    def __init__(self, message: str, tokens: "tuple[str, ...]") -> None:
        super().__init__(message)
        self.tokens = tokens


class WorkflowError(LipsparkError):
    """A workflow definition is invalid (cycle, unknown module or relation, missing input)."""


class SchemaError(WorkflowError):
    """A relation's columns do not match the schema a module declares."""


class StoreError(LipsparkError):
    """A provenance store is missing, corrupt or of an incompatible version."""


class QueryError(LipsparkError):
    """A provenance query is semantically invalid (unknown module, nothing matches, ambiguous)."""


class QuerySyntaxError(QueryError):
    """A provenance query does not parse; the message shows line, column and a caret."""


class Interrupted(LipsparkError):
    """The user interrupted a command (Ctrl-C); the message says what state it left."""


class ProvenanceWarning(UserWarning):
    """Module code did something whose effect the provenance graph does not record, although
    the data stays right (e.g. brought annotated data to the driver, where a value used later
    as a literal carries no provenance). The message says what to write instead."""


class ExecutionFailed(WorkflowError):
    """Module code failed during an execution (a black box or UDF raising on some rows, an ANSI
    cast or arithmetic error, a ``raise``); the execution was not committed.

    ``report`` is the :class:`~lipspark.vocabulary.culprits.CrashReport` the store keeps: the
    failing invocation, the operation, the exception and the culprit rows with their provenance.
    The message is the report's text; the original exception is ``__cause__``.
    """

    def __init__(self, report: "Any", store: str | None = None) -> None:
        self.report = report
        super().__init__(report.text(store=store))
