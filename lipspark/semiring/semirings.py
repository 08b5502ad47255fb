"""Commutative semirings with δ, black boxes and aggregation, plus a registry.

Evaluating a provenance expression in a semiring K (via
:func:`lipspark.semiring.evaluate.evaluate`) specialises it: Boolean for deletion
propagation, Counting for bag multiplicities, Tropical for costs, Why / Lineage for
witnesses, min-max / max-min over any ordered levels (Security is min-max over
public < confidential < secret < top_secret).

>>> from lipspark.semiring.semirings import get_semiring
>>> k = get_semiring("counting")
>>> k.plus(k.times(2, 3), k.one), k.delta(7)
(7, 1)
>>> agents = MinMaxSemiring(["unclassified", "restricted", "confidential", "secret", "top_secret"])
>>> agents.plus("secret", agents.times("restricted", "confidential"))
'confidential'
"""
from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from functools import reduce
from typing import Any, ClassVar, Generic, TypeVar

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
    "MinMaxSemiring",
    "MaxMinSemiring",
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
    edge survives); ``aggregate`` aggregates the values whose annotation is not zero;
    ``coerce`` accepts any value for a token; a token has no value of its own
    (:attr:`symbolic` is False), so an evaluation needs one for every token or a default.

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
    #: True when a token is a value by itself (Why, Lineage: the token stands for itself), so
    #: evaluating needs no valuation; False when every token needs a value given (a count, a
    #: level, a cost), or a default: evaluating never guesses one.
    symbolic: ClassVar[bool] = False

    @abstractmethod
    def plus(self, a: K, b: K) -> K:
        """Semiring addition (alternative derivation)."""

    @abstractmethod
    def times(self, a: K, b: K) -> K:
        """Semiring multiplication (joint derivation)."""

    def delta(self, a: K) -> K:
        """Duplicate elimination δ; the identity unless overridden."""
        return a

    def monus(self, a: K, b: K) -> K:
        """The m-semiring difference ``a ⊖ b`` (Geerts and Poggi 2010): the least ``c`` with
        ``a ≤ b + c`` in the semiring's natural order. A semiring without one refuses, naming
        itself: an evaluation never guesses (``a`` would keep a row a re-run drops).

        >>> BOOLEAN.monus(True, False), COUNTING.monus(2, 5), COUNTING.monus(5, 2)
        (True, 0, 3)
        """
        raise SemiringError(
            f"expected an m-semiring (one with a monus ⊖) for an expression with ⊖ (an outer or anti join, a set "
            f"difference); the {self} semiring has none. Fix: evaluate it in boolean, counting, why, lineage, "
            f"tropical or a minmax/maxmin semiring, or define monus() in your semiring"
        )

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
        """The value token ``name`` stands for by itself, in a :attr:`symbolic` semiring.

        Used by :func:`~lipspark.semiring.evaluate.evaluate` for tokens the valuation does not
        name. A semiring that is not symbolic has none: it raises.
        """
        raise SemiringError(
            f"expected a value for token {name!r}: in the {self} semiring a token has no value "
            f"of its own. Fix: give it one in the valuation, or pass default=..."
        )

    def coerce(self, value: Any) -> K:
        """The element of the semiring that ``value``, given for a token, stands for.

        Raises :class:`~lipspark.errors.SemiringError` (one line: what is expected, what was
        found) for a value that is not one. The default accepts any value.
        """
        return value

    def __str__(self) -> str:
        return self.name

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

    def monus(self, a: bool, b: bool) -> bool:
        """``a and not b``."""
        return bool(a) and not bool(b)

    def coerce(self, value: Any) -> bool:
        """True/False, or 1/0.

        >>> BOOLEAN.coerce(0), BOOLEAN.coerce(True)
        (False, True)
        """
        if isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
            return bool(value)
        raise _not_a_value(self, value, "true or false (or 1, 0)")


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

    def monus(self, a: int, b: int) -> int:
        """Truncated difference ``max(0, a − b)`` (the natural numbers' monus)."""
        return max(0, a - b)

    def aggregate(self, op: str, pairs: Sequence[tuple[int, Any]]) -> Any:
        return _aggregate_values(op, [v for _, v in pairs], [k for k, _ in pairs])

    def coerce(self, value: Any) -> int:
        """A whole number >= 0 (a tuple's multiplicity).

        >>> COUNTING.coerce(3)
        3
        """
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
            return int(value)
        raise _not_a_value(self, value, "a whole number >= 0")


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

    def monus(self, a: float, b: float) -> float:
        """``∞`` (absent) when ``b`` is at most as costly as ``a`` (``a ≤ b`` in the semiring's
        order), else ``a`` (ProvSQL's tropical monus).

        >>> TROPICAL.monus(3.0, 1.0), TROPICAL.monus(1.0, 3.0), TROPICAL.monus(1.0, math.inf)
        (inf, 1.0, 1.0)
        """
        return math.inf if b <= a else a

    def coerce(self, value: Any) -> float:
        """A real number (a cost), or ``inf`` / ``"inf"`` for absent.

        >>> TROPICAL.coerce(2), TROPICAL.coerce("inf")
        (2.0, inf)
        """
        if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
            return math.inf
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value):
            return float(value)
        raise _not_a_value(self, value, 'a number (a cost), or "inf" for absent')


class WhySemiring(Semiring[frozenset[frozenset[str]]]):
    """Why-provenance: sets of witnesses (sets of tokens); + is ∪, · is pairwise ∪.

    >>> a, b = WHY.token_value("a"), WHY.token_value("b")
    >>> sorted(sorted(w) for w in WHY.times(WHY.plus(a, b), a))
    [['a'], ['a', 'b']]
    """

    name = "why"
    zero: frozenset[frozenset[str]] = frozenset()
    one: frozenset[frozenset[str]] = frozenset({frozenset()})
    symbolic = True

    def plus(
        self, a: frozenset[frozenset[str]], b: frozenset[frozenset[str]]
    ) -> frozenset[frozenset[str]]:
        return a | b

    def times(
        self, a: frozenset[frozenset[str]], b: frozenset[frozenset[str]]
    ) -> frozenset[frozenset[str]]:
        return frozenset(x | y for x in a for y in b)

    def monus(self, a: frozenset[frozenset[str]], b: frozenset[frozenset[str]]) -> frozenset[frozenset[str]]:
        """The witnesses of ``a`` that are not witnesses of ``b`` (ProvSQL's why monus).

        >>> x, y = WHY.token_value("x"), WHY.token_value("y")
        >>> WHY.monus(WHY.plus(x, y), y) == x
        True
        """
        return a - b

    def token_value(self, name: str) -> frozenset[frozenset[str]]:
        return frozenset({frozenset({name})})

    def coerce(self, value: Any) -> frozenset[frozenset[str]]:
        """0 or false (the token is absent), or a set of witnesses: a token stands for itself.

        >>> WHY.coerce(0)
        frozenset()
        """
        if value is False or (isinstance(value, numbers.Integral) and value == 0):
            return self.zero
        if isinstance(value, frozenset) and all(isinstance(w, frozenset) for w in value):
            return value
        raise _not_a_value(self, value, "0 (absent): a token stands for itself otherwise")


class LineageSemiring(Semiring["frozenset[str] | None"]):
    """Lineage: the set of contributing tokens, None for absent; + and · are ∪ (· absorbs None).

    >>> sorted(LINEAGE.times(frozenset({"a"}), frozenset({"b"}))), LINEAGE.times(None, frozenset())
    (['a', 'b'], None)
    """

    name = "lineage"
    zero: frozenset[str] | None = None
    one: frozenset[str] | None = frozenset()
    symbolic = True

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

    def monus(self, a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
        """ProvSQL's lineage (which-provenance) monus: absent when ``a`` is absent or all its tokens
        are in ``b``; ``a`` when ``b`` is absent; else the tokens of ``a`` not in ``b``.

        >>> sorted(LINEAGE.monus(frozenset({"a", "b"}), frozenset({"b"}))), LINEAGE.monus(frozenset({"a"}), frozenset({"a", "b"}))
        (['a'], None)
        """
        if a is None:
            return None
        if b is None:
            return a
        return None if a <= b else a - b

    def token_value(self, name: str) -> frozenset[str] | None:
        return frozenset({name})

    def coerce(self, value: Any) -> frozenset[str] | None:
        """0, false or None (the token is absent), or a set of tokens: a token stands for itself.

        >>> LINEAGE.coerce(False) is None
        True
        """
        if value is None or value is False or (isinstance(value, numbers.Integral) and value == 0):
            return None
        if isinstance(value, frozenset) and all(isinstance(t, str) for t in value):
            return value
        raise _not_a_value(self, value, "0 (absent): a token stands for itself otherwise")


def _not_a_value(semiring: Semiring[Any], value: Any, expected: str) -> SemiringError:
    return SemiringError(
        f"expected a value of the {semiring} semiring, {expected}; found "
        f"{type(value).__name__} {value!r}. Fix: give the token such a value."
    )


class _Levels(Semiring[Any]):
    """A bounded linear order of levels, given lowest first, as a semiring (ProvSQL's
    ``sr_minmax`` / ``sr_maxmin`` over an ENUM). Its values are the levels themselves, and
    None, an element outside the order: the zero (no derivation), so that every level, the
    highest included, is one a token can have."""

    #: "min" (min-max: + is min, · is max) or "max" (max-min: + is max, · is min)
    plus_is: ClassVar[str]
    zero: Any = None

    def __init__(self, levels: Iterable[Hashable], *, name: str | None = None) -> None:
        found = tuple(levels) if not isinstance(levels, str) else None
        kind = "minmax" if self.plus_is == "min" else "maxmin"
        if not found:
            raise SemiringError(
                f"expected the levels of a {kind} semiring, lowest first, at least one; found "
                f"{levels!r}. Fix: e.g. {type(self).__name__}(['public', 'secret'])."
            )
        rank: dict[Any, int] = {}
        for i, level in enumerate(found):
            if level is None or isinstance(level, bool) or not isinstance(level, Hashable):
                raise SemiringError(
                    f"expected levels that are names (or other hashable values, not None or a "
                    f"boolean); found {level!r}. Fix: name the levels, e.g. 'secret'."
                )
            if level in rank:
                raise SemiringError(
                    f"expected distinct levels; found {level!r} twice in "
                    f"{' < '.join(map(str, found))}. Fix: give each level once, lowest first."
                )
            rank[level] = i
        self.levels: tuple[Any, ...] = found
        self._rank = rank
        self._kind = kind
        self.name = name or kind
        self.one = found[0] if self.plus_is == "min" else found[-1]

    def _key(self, a: Any) -> int:
        """Position in the order; the zero (None) beyond the end where + looks last."""
        if a is None:
            return len(self.levels) if self.plus_is == "min" else -1
        try:
            return self._rank[a]
        except (KeyError, TypeError):
            raise SemiringError(
                f"expected a level of {self.describe()}; found {type(a).__name__} {a!r}. "
                f"Fix: use one of those levels."
            ) from None

    def plus(self, a: Any, b: Any) -> Any:
        low = self._key(a) <= self._key(b)
        return a if low == (self.plus_is == "min") else b

    def times(self, a: Any, b: Any) -> Any:
        low = self._key(a) <= self._key(b)
        return b if low == (self.plus_is == "min") else a

    def is_zero(self, a: Any) -> bool:
        return a is None

    def monus(self, a: Any, b: Any) -> Any:
        """ProvSQL's min-max / max-min monus: 0 (None) when ``a ≤ b`` in the semiring's order
        (``a + b = b``), else ``a``.

        >>> SECURITY.monus("secret", "public") is None, SECURITY.monus("public", "secret"), SECURITY.monus("public", None)
        (True, 'public', 'public')
        """
        return None if a is None or self.plus(a, b) == b else a

    def coerce(self, value: Any) -> Any:
        """The level ``value`` names (levels are matched exactly, case included)."""
        try:
            return self.levels[self._rank[value]]
        except (KeyError, TypeError):
            raise SemiringError(
                f"expected a level of {self.describe()}; found {type(value).__name__} "
                f"{value!r}. Fix: use one of those levels, or add it to the order."
            ) from None

    def describe(self) -> str:
        """The semiring as the query language writes it, ``minmax(a < b < c)``."""
        return f"{self._kind}({' < '.join(map(str, self.levels))})"

    def __str__(self) -> str:
        return self.name if self.name != self._kind else self.describe()

    def __repr__(self) -> str:
        return f"<semiring {self.name}: {self.describe()}>"


class MinMaxSemiring(_Levels):
    """The min-max semiring over ``levels`` (lowest first): + is min, · is max.

    The security shape: a tuple derived in several ways needs the least restrictive of them,
    a join needs the most restrictive of its parts. 1 is the lowest level; 0 is None (no
    derivation), above every level. δ is the identity (a group keeps its members' level).

    Parameters
    ----------
    levels : iterable of hashable
        The levels in increasing order, e.g. ``["unclassified", "restricted", "secret"]``.
    name : str, optional
        Its name (default ``"minmax"``), e.g. ``"security"`` for :data:`SECURITY`.

    Examples
    --------
    >>> k = MinMaxSemiring(["unclassified", "restricted", "confidential", "secret", "top_secret"])
    >>> k.plus("secret", "restricted"), k.times("secret", "restricted"), k.one
    ('restricted', 'secret', 'unclassified')
    >>> k.plus(None, "top_secret"), k.times(None, "restricted")
    ('top_secret', None)
    """

    plus_is = "min"


class MaxMinSemiring(_Levels):
    """The max-min semiring over ``levels`` (lowest first): + is max, · is min.

    The trust / availability shape (fuzzy levels): a tuple derived in several ways is as
    trusted as its best derivation, a join as its least trusted part. 1 is the highest
    level; 0 is None (no derivation), below every level. δ is the identity.

    Examples
    --------
    >>> k = MaxMinSemiring(["low", "medium", "high"])
    >>> k.plus("low", "medium"), k.times("high", "medium"), k.one, k.plus(None, "low")
    ('medium', 'medium', 'high', 'low')
    """

    plus_is = "max"


BOOLEAN = BooleanSemiring()
COUNTING = CountingSemiring()
TROPICAL = TropicalSemiring()
WHY = WhySemiring()
LINEAGE = LineageSemiring()
#: Clearance needed to see a tuple: min-max over public < confidential < secret < top_secret.
SECURITY = MinMaxSemiring(("public", "confidential", "secret", "top_secret"), name="security")

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
