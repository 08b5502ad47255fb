"""Commutative semirings with δ, black boxes and aggregation, plus a registry.

Evaluating a provenance expression in a semiring K (via
:func:`lipspark.semiring.evaluate.evaluate`) specialises it: Boolean for deletion
propagation, Counting for bag multiplicities, Tropical for costs, Why / Lineage for
witnesses, Security for clearance levels.

>>> from lipspark.semiring.semirings import get_semiring
>>> k = get_semiring("counting")
>>> k.plus(k.times(2, 3), k.one), k.delta(7)
(7, 1)
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import IntEnum
from functools import reduce
from typing import Any, Generic, TypeVar

from lipspark.errors import SemiringError
from lipspark.semiring._nodes import canonical_op
from lipspark.vocabulary.aggregates import aggregate

__all__ = [
    "Semiring",
    "BooleanSemiring",
    "CountingSemiring",
    "TropicalSemiring",
    "WhySemiring",
    "LineageSemiring",
    "SecuritySemiring",
    "Clearance",
    "BOOLEAN",
    "COUNTING",
    "TROPICAL",
    "WHY",
    "LINEAGE",
    "SECURITY",
    "get_semiring",
    "register_semiring",
    "semiring_names",
]

K = TypeVar("K")


def _aggregate_values(op: str, values: Sequence[Any], weights: Sequence[int] | None = None) -> Any:
    """Aggregate a bag given as values with multiplicities (``weights``, default all 1), with
    the one definition of what an aggregate computes (:func:`lipspark.vocabulary.aggregate`):
    null values do not take part, Count counts the non-null values, the others are None when
    nothing is left.

    >>> _aggregate_values("Count", [None, 1, 2]), _aggregate_values("Sum", [3, None], [2, 5])
    (2, 6)
    """
    return aggregate(canonical_op(op), values, weights)


class Semiring(ABC, Generic[K]):
    """A commutative semiring ``(K, +, ·, 0, 1)`` with δ, black boxes and aggregation.

    Subclasses set :attr:`name`, :attr:`zero`, :attr:`one` and implement :meth:`plus`
    and :meth:`times`. The defaults are: ``delta`` is the identity; ``black_box`` folds
    :meth:`plus` over its arguments (its result is derivable when any input is, matching
    Lipstick's deletion propagation, where a non-``·`` node survives while any incoming
    edge survives); ``aggregate`` aggregates the values whose annotation is not zero.

    Examples
    --------
    >>> class MaxTimes(Semiring[float]):
    ...     name, zero, one = "maxtimes", 0.0, 1.0
    ...     def plus(self, a, b): return max(a, b)
    ...     def times(self, a, b): return a * b
    >>> MaxTimes().black_box([0.5, 0.25])
    0.5
    """

    name: str
    zero: K
    one: K

    @abstractmethod
    def plus(self, a: K, b: K) -> K:
        """Semiring addition (alternative derivation)."""

    @abstractmethod
    def times(self, a: K, b: K) -> K:
        """Semiring multiplication (joint derivation)."""

    def delta(self, a: K) -> K:
        """Duplicate elimination δ; the identity unless overridden."""
        return a

    def black_box(self, args: Sequence[K]) -> K:
        """Annotation of a black-box result from its inputs' annotations (fold of plus)."""
        return reduce(self.plus, args, self.zero)

    def is_zero(self, a: K) -> bool:
        """True iff ``a`` is the semiring zero (the tuple is absent)."""
        return bool(a == self.zero)

    def sum(self, items: Sequence[K]) -> K:
        """Fold :meth:`plus` over ``items`` (``zero`` when empty)."""
        return reduce(self.plus, items, self.zero)

    def product(self, items: Sequence[K]) -> K:
        """Fold :meth:`times` over ``items`` (``one`` when empty)."""
        return reduce(self.times, items, self.one)

    def token_value(self, name: str) -> K:
        """The canonical annotation of a base token, if the semiring has one.

        Used by :func:`~lipspark.semiring.evaluate.evaluate` when no valuation is given.
        The default is :attr:`one` (the token is present).
        """
        return self.one

    def aggregate(self, op: str, pairs: Sequence[tuple[K, Any]]) -> Any:
        """Evaluate ``Σ kᵢ ⊗ vᵢ``: aggregate the values whose ``kᵢ`` is not zero.

        Count gives the number of surviving pairs with a non-null value; Sum/Min/Max/Avg
        ignore None values and return None when no (non-None) value survives
        (:func:`lipspark.vocabulary.aggregate`).
        """
        survivors = [v for k, v in pairs if not self.is_zero(k)]
        return _aggregate_values(op, survivors)

    def __repr__(self) -> str:
        return f"<semiring {self.name}>"


class BooleanSemiring(Semiring[bool]):
    """``({False, True}, or, and, False, True)``: is the tuple derivable?

    >>> BOOLEAN.aggregate("Sum", [(True, 3), (False, 4), (True, 5)])
    8
    """

    name, zero, one = "boolean", False, True

    def plus(self, a: bool, b: bool) -> bool:
        return bool(a) or bool(b)

    def times(self, a: bool, b: bool) -> bool:
        return bool(a) and bool(b)

    def is_zero(self, a: bool) -> bool:
        return not a


class CountingSemiring(Semiring[int]):
    """``(ℕ, +, ×, 0, 1)``: bag multiplicities; δ(n) = 1 if n > 0 else 0.

    ``aggregate`` gives the bag result: Count = Σkᵢ over non-null values, Sum = Σkᵢvᵢ, Min/Max over values
    with kᵢ > 0, Avg = Σkᵢvᵢ / Σkᵢ; None when no pair has kᵢ > 0 (except Count, 0).

    >>> COUNTING.aggregate("Avg", [(2, 10), (0, 99), (1, 40)])
    20.0
    """

    name, zero, one = "counting", 0, 1

    def plus(self, a: int, b: int) -> int:
        return a + b

    def times(self, a: int, b: int) -> int:
        return a * b

    def delta(self, a: int) -> int:
        return 1 if a > 0 else 0

    def aggregate(self, op: str, pairs: Sequence[tuple[int, Any]]) -> Any:
        return _aggregate_values(op, [v for _, v in pairs], [k for k, _ in pairs])


class TropicalSemiring(Semiring[float]):
    """``([0, ∞], min, +, ∞, 0)``: the cheapest derivation's cost; δ is the identity.

    ``aggregate`` aggregates the values whose cost is finite (those derivable at all),
    exactly as Boolean aggregates its surviving pairs.

    >>> TROPICAL.plus(3.0, TROPICAL.times(1.0, 1.5)), TROPICAL.aggregate("Count", [(1.0, 1), (math.inf, 1)])
    (2.5, 1)
    """

    name, zero, one = "tropical", math.inf, 0.0

    def plus(self, a: float, b: float) -> float:
        return min(a, b)

    def times(self, a: float, b: float) -> float:
        return a + b

    def is_zero(self, a: float) -> bool:
        return a == math.inf


class WhySemiring(Semiring[frozenset[frozenset[str]]]):
    """Why-provenance: sets of witnesses (sets of tokens); + is ∪, · is pairwise ∪.

    >>> a, b = WHY.token_value("a"), WHY.token_value("b")
    >>> sorted(sorted(w) for w in WHY.times(WHY.plus(a, b), a))
    [['a'], ['a', 'b']]
    """

    name = "why"
    zero: frozenset[frozenset[str]] = frozenset()
    one: frozenset[frozenset[str]] = frozenset({frozenset()})

    def plus(
        self, a: frozenset[frozenset[str]], b: frozenset[frozenset[str]]
    ) -> frozenset[frozenset[str]]:
        return a | b

    def times(
        self, a: frozenset[frozenset[str]], b: frozenset[frozenset[str]]
    ) -> frozenset[frozenset[str]]:
        return frozenset(x | y for x in a for y in b)

    def token_value(self, name: str) -> frozenset[frozenset[str]]:
        return frozenset({frozenset({name})})


class LineageSemiring(Semiring["frozenset[str] | None"]):
    """Lineage: the set of contributing tokens, None for absent; + and · are ∪ (· absorbs None).

    >>> sorted(LINEAGE.times(frozenset({"a"}), frozenset({"b"}))), LINEAGE.times(None, frozenset())
    (['a', 'b'], None)
    """

    name = "lineage"
    zero: frozenset[str] | None = None
    one: frozenset[str] | None = frozenset()

    def plus(self, a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
        if a is None:
            return b
        if b is None:
            return a
        return a | b

    def times(self, a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
        if a is None or b is None:
            return None
        return a | b

    def is_zero(self, a: frozenset[str] | None) -> bool:
        return a is None

    def token_value(self, name: str) -> frozenset[str] | None:
        return frozenset({name})


class Clearance(IntEnum):
    """Clearance levels, ordered; ``ABSENT`` (above all) is the security semiring's zero.

    >>> Clearance.PUBLIC < Clearance.SECRET < Clearance.ABSENT
    True
    """

    PUBLIC = 0
    CONFIDENTIAL = 1
    SECRET = 2
    TOP_SECRET = 3
    ABSENT = 4


class SecuritySemiring(Semiring[Clearance]):
    """Clearance needed to see a tuple: + is min (least restrictive derivation), · is max.

    >>> SECURITY.plus(Clearance.SECRET, SECURITY.times(Clearance.PUBLIC, Clearance.CONFIDENTIAL))
    <Clearance.CONFIDENTIAL: 1>
    """

    name, zero, one = "security", Clearance.ABSENT, Clearance.PUBLIC

    def plus(self, a: Clearance, b: Clearance) -> Clearance:
        return Clearance(min(a, b))

    def times(self, a: Clearance, b: Clearance) -> Clearance:
        return Clearance(max(a, b))


BOOLEAN = BooleanSemiring()
COUNTING = CountingSemiring()
TROPICAL = TropicalSemiring()
WHY = WhySemiring()
LINEAGE = LineageSemiring()
SECURITY = SecuritySemiring()

_REGISTRY: dict[str, Semiring[Any]] = {}


def register_semiring(semiring: Semiring[Any], *, replace: bool = False) -> None:
    """Register ``semiring`` under ``semiring.name`` (case-insensitive).

    Parameters
    ----------
    semiring : Semiring
        The instance to register.
    replace : bool, default False
        Allow replacing a different semiring already registered under that name.

    Examples
    --------
    >>> register_semiring(BOOLEAN)   # re-registering the same object is a no-op
    >>> get_semiring("BOOLEAN") is BOOLEAN
    True
    """
    if not isinstance(semiring, Semiring):
        raise SemiringError(
            f"expected a Semiring instance; found {type(semiring).__name__} {semiring!r}. "
            f"Fix: subclass lipspark.semiring.Semiring and register an instance."
        )
    name = getattr(semiring, "name", None)
    if not isinstance(name, str) or not name:
        raise SemiringError(
            f"expected the semiring to have a non-empty string name; found {name!r}. "
            f"Fix: set the class attribute `name`."
        )
    key = name.lower()
    existing = _REGISTRY.get(key)
    if existing is not None and existing is not semiring and not replace:
        raise SemiringError(
            f"expected a new semiring name; found {name!r} already registered to "
            f"{existing!r}. Fix: choose another name or pass replace=True."
        )
    _REGISTRY[key] = semiring


def get_semiring(name: str) -> Semiring[Any]:
    """Look up a registered semiring by name, case-insensitively.

    >>> get_semiring("Tropical") is TROPICAL
    True
    """
    key = name.lower() if isinstance(name, str) else None
    if key is None or key not in _REGISTRY:
        raise SemiringError(
            f"expected a semiring name, one of {', '.join(semiring_names())}; found {name!r}. "
            f"Fix: use one of those names or register_semiring() your own."
        )
    return _REGISTRY[key]


def semiring_names() -> tuple[str, ...]:
    """The registered names, sorted.

    >>> semiring_names()[:3]
    ('boolean', 'counting', 'lineage')
    """
    return tuple(sorted(_REGISTRY))


for _s in (BOOLEAN, COUNTING, TROPICAL, WHY, LINEAGE, SECURITY):
    register_semiring(_s)
del _s
