"""Black boxes: code the rewrite cannot see into keeps coarse provenance (Lipstick §3.2).

A *relation-level* black box is a Python function from DataFrames to a DataFrame. Its result
rows all derive from one p-node labelled with the function's name, which has an edge from the
p-node of every input row: coarse inside, fine around.

A *value-level* black box is a Python function applied to columns of a row, like a UDF. Each
result value is a v-node labelled with the function's name, with edges from the row's p-node,
the v-nodes of its arguments and, for nested-bag arguments, their members.

Both work unchanged on plain PySpark DataFrames (no provenance) and on annotated frames.

A UDF in a projection is a black box only when it *is* the function a :class:`BlackBoxFunction`
made: the rewrite compares the analyzed plan's ``PythonUDF`` JVM function with the black box's
own (:class:`BlackBoxRegistry`), never names, so a plain ``F.udf(score)`` stays a plain UDF
after an unrelated ``black_box(..., name="score")``.

>>> from pyspark.sql import types as T
>>> bid = black_box(lambda n: 100.0 * n, returnType=T.DoubleType(), name="calcBid")
>>> bid.name
'calcBid'
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from pyspark.sql import Column, DataFrame

from lipspark.errors import AnnotationError

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["BlackBoxFunction", "BlackBoxRegistry", "KnownBlackBox", "black_box", "BlackBoxCall", "recording_calls"]


@dataclass(frozen=True)
class KnownBlackBox:
    """A value-level black box as plans show it: its JVM function and its name (the label)."""

    function: Any
    name: str


#: Every value-level black box called so far in this process, one entry per distinct function.
#: Entries are kept for good: a black box may be created, called and dropped before the
#: projection using its column is analyzed (``select(black_box(...)("x"))``).
_CALLED: list[KnownBlackBox] = []


@dataclass(frozen=True)
class BlackBoxCall:
    """One call of a value-level black box in module code: the columns it was given and where
    module code called it (``file:line``). Kept only while :func:`recording_calls` is on, so a
    crash-culprit search (:mod:`lipspark.workflow.culprits`) can guard the function row by row."""

    box: "BlackBoxFunction"
    cols: tuple[Any, ...]
    site: str


#: the calls recorded by the innermost active :func:`recording_calls`, if any
_RECORDING: list[list[BlackBoxCall]] = []


@contextlib.contextmanager
def recording_calls() -> Iterator[list[BlackBoxCall]]:
    """Record every value-level black box call made inside the block (in order).

    >>> from pyspark.sql import types as T
    >>> with recording_calls() as calls:
    ...     _ = black_box(lambda n: n, returnType=T.DoubleType(), name="f")  # made, not called
    >>> calls
    []
    """
    calls: list[BlackBoxCall] = []
    _RECORDING.append(calls)
    try:
        yield calls
    finally:
        _RECORDING.remove(calls)


def call_site() -> str:
    """``file:line`` of the innermost frame outside lipspark and pyspark (module code)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(here + os.sep) and f"{os.sep}pyspark{os.sep}" not in path and "<frozen" not in path:
            return f"{os.path.relpath(path) if not os.path.relpath(path).startswith('..') else path}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "?"


def _announce(known: KnownBlackBox) -> None:
    if not any(k.name == known.name and k.function.equals(known.function) for k in _CALLED):
        _CALLED.append(known)


class BlackBoxFunction:
    """A value-level black box; call it on columns to get a :class:`~pyspark.sql.Column`.

    What makes a UDF in a plan this black box is its JVM function (:meth:`jvm_function`), never
    its name: the first call announces the function to the trackers (see
    :class:`BlackBoxRegistry`), and a plain ``F.udf`` of another function called the same is
    not it.
    """

    def __init__(self, fn: Callable[..., Any], returnType: Any, name: str) -> None:
        from pyspark.sql import functions as F

        if not name.isidentifier():
            raise AnnotationError(f"a black box needs a Python identifier as name, got {name!r}")
        self.fn = fn
        self.name = name
        self.returnType = returnType

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            return fn(*args)

        call.__name__ = name
        call.__qualname__ = name
        self._udf = F.udf(call, returnType)
        self._announced = False

    def jvm_function(self) -> Any:
        """The JVM ``SimplePythonFunction`` every call of this black box puts in a plan (made
        once per black box; needs an active SparkContext)."""
        return self._udf._unwrapped._judf.func()  # type: ignore[attr-defined]

    def __call__(self, *cols: "str | Column") -> Column:
        column = self._udf(*cols)
        if _RECORDING:
            _RECORDING[-1].append(BlackBoxCall(self, cols, call_site()))
        if not self._announced:  # first use: from now on its function may be in a plan
            _announce(KnownBlackBox(self.jvm_function(), self.name))
            self._announced = True
        return column

    def __repr__(self) -> str:
        return f"black_box({self.name})"


class BlackBoxRegistry:
    """A tracker's view of the value-level black boxes: which Python UDF of a plan is one.

    A black box registers on its first call (its JVM function is announced process-wide, once
    per distinct function); each tracker's registry takes the announcements it has not seen
    yet when it looks a function up. :meth:`find` matches a ``PythonUDF``'s JVM function by
    equality with a black box's own (Spark's ``SimplePythonFunction`` equality: the same pickled
    function), so identity decides, never the name.
    """

    def __init__(self) -> None:
        self._known: list[KnownBlackBox] = []

    def find(self, function: Any) -> KnownBlackBox | None:
        """The black box whose JVM function is ``function`` (a ``PythonUDF``'s ``func()``), if any."""
        self._known.extend(_CALLED[len(self._known):])
        for known in self._known:
            if known.function.equals(function):
                return known
        return None


def black_box(fn: Callable[..., Any], *frames: Any, name: str | None = None, returnType: Any = None) -> Any:
    """Make ``fn`` a black box, or apply it to relations at once.

    Parameters
    ----------
    fn
        The function. Relation-level: takes DataFrames, returns a DataFrame. Value-level: takes
        column values of one row (nested bags arrive as lists of Rows), returns one value.
    *frames
        Relations to apply ``fn`` to now (relation level). Plain DataFrames give a plain
        DataFrame; annotated frames give an annotated frame whose rows all derive from one
        black-box p-node fed by every input row.
    name
        Label of the black-box node (default: ``fn.__name__``).
    returnType
        For value-level black boxes (no ``frames``): the Spark type of the result.

    Returns
    -------
    DataFrame, AnnotatedFrame or BlackBoxFunction
    """
    label = name or getattr(fn, "__name__", None) or "black_box"
    if label == "<lambda>":
        raise AnnotationError("name the black box: black_box(lambda ..., name='calcBid')")
    if not frames:
        if returnType is None:
            raise AnnotationError(
                f"black box {label!r}: give returnType= for a value-level black box, "
                "or pass the DataFrames to apply it to"
            )
        return BlackBoxFunction(fn, returnType, label)
    from lipspark.capture.rules.black_box import relation_black_box
    from lipspark.frame import AnnotatedFrame

    if all(isinstance(f, DataFrame) for f in frames):
        return fn(*frames)
    if all(isinstance(f, AnnotatedFrame) for f in frames):
        annotated: list[AnnotatedFrame] = list(frames)
        return relation_black_box(fn, label, annotated)
    raise AnnotationError(
        f"black box {label!r} got a mix of plain DataFrames and annotated frames; "
        "annotate every input (Tracker.annotate) or none"
    )
