"""Semiring provenance: N[X] expressions with δ, black boxes and ⊗, and their evaluation.

>>> from lipspark.semiring import Token, delta, evaluate, COUNTING, equivalent
>>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
>>> e = delta(c2 * b1 + c3 * b1)
>>> print(e)
δ(Cars:C2·Req:B1 + Cars:C3·Req:B1)
>>> evaluate(e, COUNTING, {"Cars:C2": 0, "Cars:C3": 0}, default=1)
0
>>> equivalent(e, delta(b1 * (c3 + c2)))
True
"""
from __future__ import annotations

from lipspark.semiring.evaluate import evaluate
from lipspark.semiring.expanded import Expanded, ExpandedAggregate, Monomial, expand
from lipspark.semiring.expr import (
    MAX_TEXT,
    Prefixes,
    ONE,
    ZERO,
    AggValue,
    BlackBox,
    Delta,
    Expr,
    Monus,
    Product,
    Sum,
    Token,
    black_box,
    delta,
    equivalent,
    monus,
    normal_form,
    plus,
    times,
    to_sympy,
    tokens,
)
from lipspark.semiring.probability import ProbabilityResult, probability
from lipspark.semiring.responsibility import Responsibility, banzhaf, shapley
from lipspark.semiring.semirings import (
    BOOLEAN,
    COUNTING,
    LINEAGE,
    SECURITY,
    TROPICAL,
    WHY,
    MaxMinSemiring,
    MinMaxSemiring,
    Semiring,
    get_semiring,
    register_semiring,
    semiring_names,
)

__all__ = [
    "MAX_TEXT",
    "Prefixes",
    "Expr",
    "Token",
    "ZERO",
    "ONE",
    "Sum",
    "Product",
    "Delta",
    "BlackBox",
    "Monus",
    "AggValue",
    "plus",
    "times",
    "delta",
    "black_box",
    "monus",
    "to_sympy",
    "normal_form",
    "equivalent",
    "tokens",
    "expand",
    "Expanded",
    "ExpandedAggregate",
    "Monomial",
    "Semiring",
    "BOOLEAN",
    "COUNTING",
    "TROPICAL",
    "WHY",
    "LINEAGE",
    "SECURITY",
    "MinMaxSemiring",
    "MaxMinSemiring",
    "get_semiring",
    "register_semiring",
    "semiring_names",
    "evaluate",
    "probability",
    "ProbabilityResult",
    "shapley",
    "banzhaf",
    "Responsibility",
]
