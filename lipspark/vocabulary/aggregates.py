"""The one definition of what an aggregate computes over its members (Spark's semantics).

Capture (Spark computes the value), expansion (the aggregate v-node's recorded value),
deletion propagation (the what-if value) and the semirings (``Σ kᵢ ⊗ vᵢ``) all call
:func:`aggregate`, so they cannot disagree:

* a member whose argument is null (``None``) does not take part — it has no ⊗ node, and
  ``count(col)`` does not count it; ``count(*)`` / ``count(lit)`` pairs every member with 1;
* Count is the number (weighted: the multiplicities) of non-null values, 0 over none;
* Sum, Min, Max and Avg are over the non-null values and null (``None``) over none;
* NaN is a value, not a null, as in Spark: Sum and Avg with a NaN are NaN, Max with a NaN is
  NaN (Spark orders NaN above every number), Min is NaN only when every value is NaN;
* Avg of decimals is a decimal with 4 more decimal places than its members, rounded half up,
  as Spark types it (``avg`` of ``decimal(p, s)`` is ``decimal(p + 4, s + 4)``); of other
  numbers a float.

>>> aggregate("Count", [None, 1, 2]), aggregate(Op.SUM, [None, 1, 2]), aggregate("Avg", [])
(2, 3, None)
>>> aggregate("Sum", [3, 4], weights=[2, 1]), aggregate("Min", [float("nan"), 2.0])
(10, 2.0)
>>> from decimal import Decimal
>>> aggregate("Avg", [Decimal("0.04"), Decimal("0.05"), Decimal("0.05")])
Decimal('0.046667')

:func:`arithmetic` is what a formula over aggregates computes (``100 · Σa / Σb``), for the
same readers: null in, null out; one over zero is null (Spark's ``try_divide``); a float
makes the whole computation float, otherwise decimals stay exact; and what a filter's condition
over values computes per row: ``x > 0``, ``x = 0`` and SQL's three-valued AND, OR, NOT.

>>> arithmetic(Op.MULTIPLY, [Decimal("2.5"), 4]), arithmetic(Op.INVERSE, [0]), arithmetic(Op.ADD, [1.5, None])
(Decimal('10.0'), None, None)
>>> arithmetic(Op.POSITIVE, [Decimal("0.5")]), arithmetic(Op.AND, [True, None]), arithmetic(Op.OR, [None, True])
(True, None, True)
"""
from __future__ import annotations

import decimal
import math
from typing import Any, Sequence

from lipspark.errors import LipsparkError
from lipspark.vocabulary.ops import AGGREGATE_OPS, Op

__all__ = ["aggregate", "aggregate_op", "arithmetic", "is_null", "SPARK_AGGREGATES"]

#: Spark's aggregate function classes the rewrite supports, and their operator.
SPARK_AGGREGATES = {"Count": Op.COUNT, "Sum": Op.SUM, "Min": Op.MIN, "Max": Op.MAX, "Average": Op.AVG}


def is_null(v: Any) -> bool:
    """SQL null: ``None`` or pandas' ``NA`` (never NaN, which is a value)."""
    return v is None or type(v).__name__ == "NAType"


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def aggregate_op(op: "Op | str") -> Op:
    """The aggregate operator named by ``op`` (``Op.SUM``, ``"Sum"``, ``"sum"``).

    >>> aggregate_op("avg")
    <Op.AVG: 16>
    """
    found = Op.parse(op) if not isinstance(op, Op) else op
    if found not in AGGREGATE_OPS:
        raise LipsparkError(f"expected an aggregate operator (Count, Sum, Min, Max, Avg), found {op!r}")
    return found


def aggregate(op: "Op | str", values: Sequence[Any], weights: Sequence[int] | None = None) -> Any:
    """The value of aggregate ``op`` over member ``values`` with multiplicities ``weights``
    (default 1 each; a member of weight 0 does not take part)."""
    agg = aggregate_op(op)
    ws = list(weights) if weights is not None else [1] * len(values)
    present = [(v, w) for v, w in zip(values, ws) if not is_null(v) and w > 0]
    if agg is Op.COUNT:
        return int(sum(w for _, w in present))
    if not present:
        return None
    if agg is Op.SUM:
        return sum(v * w for v, w in present)
    if agg is Op.AVG:
        if all(isinstance(v, decimal.Decimal) and v.is_finite() for v, _ in present):
            return _decimal_avg(present)
        return float(sum(v * w for v, w in present)) / sum(w for _, w in present)
    vals = [v for v, _ in present]
    nans = [v for v in vals if _is_nan(v)]
    numbers = [v for v in vals if not _is_nan(v)]
    if agg is Op.MAX:
        return nans[0] if nans else max(numbers)
    return min(numbers) if numbers else nans[0]


_MAX_SCALE = 38  # Spark's DecimalType.MAX_SCALE
_EXACT = decimal.Context(prec=80)


def _decimal_avg(present: list[tuple[Any, int]]) -> decimal.Decimal:
    """Spark's average of decimals: exact, then rounded half up to the members' scale + 4."""
    scale = min(max(-v.as_tuple().exponent for v, _ in present) + 4, _MAX_SCALE)
    total = sum((v * w for v, w in present), decimal.Decimal(0))
    mean = _EXACT.divide(total, decimal.Decimal(sum(w for _, w in present)))
    return mean.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=_EXACT)


def arithmetic(op: "Op | str", values: Sequence[Any]) -> Any:
    """The value of an arithmetic node (:attr:`Op.is_arithmetic`) over its children's values:
    their sum (ADD) or product (MULTIPLY), or minus (NEGATE) or one over (INVERSE) its one value.
    :data:`UNKNOWN` in, unknown out; a null in, null out."""
    found = Op.parse(op)
    if not found.is_arithmetic:
        raise LipsparkError(f"expected a formula operator (add, multiply, negate, inverse, positive, zero, and, or, not, in_group), "
                            f"found {op!r}")
    if found in (Op.NEGATE, Op.INVERSE, Op.POSITIVE, Op.ZERO, Op.NOT) and len(values) != 1:
        raise LipsparkError(f"{found.name.lower()} takes one value, found {len(values)}")
    if found in (Op.AND, Op.OR):
        return _logic(found is Op.AND, values)
    if found is Op.IN_GROUP:
        return _same_key(values)
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    if any(is_null(v) for v in values):
        return None
    vals = list(values)
    if any(isinstance(v, float) for v in vals):
        vals = [float(v) for v in vals]
    if found is Op.ADD:
        return sum(vals[1:], vals[0]) if vals else 0
    if found is Op.MULTIPLY:
        out = vals[0] if vals else 1
        for v in vals[1:]:
            out = out * v
        return out
    if found is Op.NEGATE:
        return -vals[0]
    if found is Op.NOT:
        return not vals[0]
    if found in (Op.POSITIVE, Op.ZERO):  # a comparison: NaN compares as Spark orders it, which this does not
        if _is_nan(vals[0]):
            return UNKNOWN
        return bool(vals[0] > 0) if found is Op.POSITIVE else bool(vals[0] == 0)
    v = vals[0]
    if v == 0:
        return None
    if isinstance(v, decimal.Decimal):
        return _EXACT.divide(decimal.Decimal(1), v)
    return 1 / v if isinstance(v, float) else 1.0 / v


def _same_key(values: Sequence[Any]) -> Any:
    """Whether two grouping keys are one group's, as Spark groups: null with null, NaN with
    NaN, numbers by value (``2 == 2.0``)."""
    if len(values) != 2:
        raise LipsparkError(f"in_group takes two values, found {len(values)}")
    a, b = values
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if is_null(a) or is_null(b):
        return is_null(a) and is_null(b)
    if _is_nan(a) or _is_nan(b):
        return _is_nan(a) and _is_nan(b)
    return bool(a == b)


def _logic(conjunction: bool, values: Sequence[Any]) -> Any:
    """SQL's three-valued AND (OR): false (true) if one is, else unknown if one is, else null
    if one is, else true (false)."""
    decisive = not conjunction
    if any(v is not UNKNOWN and not is_null(v) and bool(v) is decisive for v in values):
        return decisive
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    if any(is_null(v) for v in values):
        return None
    return not decisive


class _Unknown:
    """The type of :data:`UNKNOWN` (one instance)."""

    def __repr__(self) -> str:
        return "unknown"

    __str__ = __repr__


#: The what-if value of a black box whose inputs changed (and of what is computed from it): not
#: recomputable from the graph (deletion propagation, :mod:`lipspark.query.deletion`).
UNKNOWN: Any = _Unknown()

