"""Responsibility: the Shapley and Banzhaf values of tokens for a tuple's existence.

A derived tuple exists iff its provenance expression, read as a Boolean formula, is true (as
:func:`~lipspark.semiring.probability` reads it: ``+`` or, ``·`` and, ``δ`` the identity, a
black box the or of its arguments). Its tokens are the players of a cooperative game whose
value, for a set ``S`` of present players, is 1 if the formula is true when exactly the
players of ``S`` are present and 0 otherwise — the definitions of Deutch, Frost, Kimelfeld and
Monet, "Computing the Shapley value of facts in query answering" (SIGMOD 2022), which ProvSQL
implements (``shapley``, ``banzhaf``):

* tokens that are not players are *exogenous*: fixed present (``True``) or absent (``False``)
  in every coalition (:func:`shapley`'s ``fixed``). The other tokens are the *endogenous*
  facts, the players; a player the formula does not depend on is a null player, value 0;
* the **Shapley value** of player ``x`` among ``n`` is
  ``Σ_{S ⊆ P∖{x}} |S|!·(n−|S|−1)!/n! · (v(S ∪ {x}) − v(S))``: its marginal contribution
  averaged over every order of arrival; the values sum to ``v(P) − v(∅)`` (efficiency);
* the **Banzhaf value** is ``Σ_{S ⊆ P∖{x}} (v(S ∪ {x}) − v(S)) / 2^{n−1}``: the marginal
  contribution averaged over the subsets of the other players, that is the probability that
  ``x`` is decisive when every other player is present with probability 1/2. ProvSQL's
  ``banzhaf`` returns the sum without the division (``2^{n−1}`` times this value, which depends
  on how many null players there are); :attr:`Responsibility.players` gives ``n``.

**Exact.** With every other player present independently with probability ``p``, the formula
is multilinear, so ``P_p(f | x=1) − P_p(f | x=0)`` is the expected marginal contribution of
``x``; the Banzhaf value is it at ``p = 1/2``, and the Shapley value is its integral over
``p ∈ [0, 1]`` (``∫ p^k (1−p)^{n−1−k} dp = k!(n−1−k)!/n!``). That integrand is a polynomial in
``p`` of degree at most ``n − 1``, so Gauss–Legendre quadrature with ``⌈n/2⌉ + 1`` points is
exact (up to rounding). The exact probability engine
(:mod:`lipspark.semiring.probability`: decomposition into independent parts, Shannon expansion
on shared tokens) computes ``P_p(f)`` at every quadrature point at once (numpy arrays), and
records how: a decision-DNNF circuit. As ``P_p`` is multilinear,
``∂P/∂p_x = P_p(f | x=1) − P_p(f | x=0)``, so one backward pass through that circuit
(reverse-mode differentiation) gives every player's difference at once. This is #P-hard in
general: the work (steps of the engine, then of the backward pass) is bounded by
``exact_limit``. Measured on a 2-core machine, the default budget covers the Shapley values
of a read-once formula of 2,560 players (3.6 s), a chain ``t0·t1 + t1·t2 + …`` of 320 (1.2 s)
and a random 3-DNF of 40 players and 40 terms (1.1 s), not one of 50 (the budget runs out after
about 2 s); past it, ``"auto"`` samples.

**Sampled.** Past that bound (``method="auto"``), or on request (``"monte-carlo"``):

* Shapley by permutation sampling: each player gets a uniform arrival time; the formula
  evaluated with ``and`` as max and ``or`` as min gives the time it becomes true, and the player
  arriving then is the one decisive player of that order (its marginal contribution is 1, every
  other player's 0). The value is the fraction of orders in which the player is decisive, with
  standard error ``sqrt(v(1−v)/N)``;
* Banzhaf by subset sampling: each player is present with probability 1/2, and
  ``2·E[f·(2·[x present] − 1)]`` estimates every player's value from the same worlds, with the
  standard error of that mean.

Both are vectorized with numpy and deterministic for a given ``seed``.

>>> from lipspark.semiring import Token, shapley, banzhaf
>>> x, y, z = Token("x"), Token("y"), Token("z")
>>> print(shapley(x * (y + z)))
shapley (exact, 3 players)
x  0.666666666667
y  0.166666666667
z  0.166666666667
>>> banzhaf(x * (y + z)).values
{'x': 0.75, 'y': 0.25, 'z': 0.25}
>>> shapley(x * (y + z), fixed={"y": True}).values   # y exogenous: always present
{'x': 1.0, 'z': 0.0}
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from lipspark.errors import SemiringError
from lipspark.semiring._nodes import Expr
from lipspark.semiring.evaluate import describe_tokens
from lipspark.semiring.expr import AggValue
from lipspark.semiring.probability import (
    _AND,
    _SHANNON,
    _FALSE,
    _OR,
    _TRUE,
    _VAR,
    _check_args,
    _Exact,
    _ExactTooBig,
    _Formula,
    _repeated_vars,
    _to_formula,
)

__all__ = ["MEASURES", "Responsibility", "shapley", "banzhaf"]

#: The measures :class:`Responsibility` reports.
MEASURES: tuple[str, ...] = ("shapley", "banzhaf")

#: The values accepted by ``shapley(..., method=...)`` and ``banzhaf(..., method=...)``.
METHODS: tuple[str, ...] = ("auto", "exact", "monte-carlo")

#: Random numbers drawn per sampled chunk (players × samples), bounding its memory.
_CHUNK_CELLS = 1 << 21


@dataclass(frozen=True)
class Responsibility:
    """The Shapley or Banzhaf value of every player, and how they were obtained.

    Attributes
    ----------
    measure : str
        ``"shapley"`` or ``"banzhaf"``.
    values : dict[str, float]
        Player (token name) → value, highest first (ties by name). Every player is listed,
        null players with 0.
    method : str
        ``"exact"`` or ``"monte-carlo"``.
    samples : int or None
        Sampled permutations (Shapley) or worlds (Banzhaf); None when exact.
    stderr : dict[str, float] or None
        Each player's standard error; None when exact.

    Examples
    --------
    >>> r = Responsibility("banzhaf", {"a": 0.5, "b": 0.25}, "monte-carlo", 1000, {"a": 0.02, "b": 0.01})
    >>> r.players, r.ranked()[0]
    (2, ('a', 0.5))
    >>> print(r)
    banzhaf (monte-carlo, 1000 samples, 2 players)
    a  0.5000 ± 0.0200
    b  0.2500 ± 0.0100
    """

    measure: str
    values: dict[str, float]
    method: str
    samples: int | None = None
    stderr: dict[str, float] | None = None

    @property
    def players(self) -> int:
        """How many players there are (``n``)."""
        return len(self.values)

    def ranked(self) -> list[tuple[str, float]]:
        """(player, value) pairs, highest value first, ties by name."""
        return sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))

    def __str__(self) -> str:
        how = self.method if self.samples is None else f"{self.method}, {self.samples} samples"
        lines = [f"{self.measure} ({how}, {self.players} players)"]
        width = max((len(p) for p in self.values), default=0)
        for player, value in self.ranked():
            if self.stderr is None:
                text = f"{value:.12g}"
            else:
                se = self.stderr[player]
                text = f"{value:.4f} ± {se:.4f}"
            lines.append(f"{player.ljust(width)}  {text}")
        return "\n".join(lines)


def shapley(
    expr: Expr,
    players: Iterable[str] | None = None,
    fixed: Mapping[str, bool] | None = None,
    *,
    method: str = "auto",
    samples: int = 10_000,
    seed: int = 0,
    exact_limit: int = 500_000,
) -> Responsibility:
    """The Shapley value of each player (token) for the truth of ``expr``.

    Parameters
    ----------
    expr : Expr
        A provenance expression, read as a Boolean formula (``+`` or, ``·`` and, ``δ`` the
        identity, a black box the or of its arguments). An
        :class:`~lipspark.semiring.AggValue` is rejected: a value is not true or false.
    players : iterable of str, optional
        The endogenous tokens. Default: every token of ``expr`` not in ``fixed``. When given,
        every other token of ``expr`` must be in ``fixed`` (a token's role is never guessed).
    fixed : Mapping[str, bool], optional
        The exogenous tokens: ``True`` present in every coalition, ``False`` absent. Names that
        ``expr`` does not mention are ignored.
    method : {"auto", "exact", "monte-carlo"}, default "auto"
        ``"auto"`` is exact within ``exact_limit`` and samples otherwise; ``"exact"`` raises
        instead of sampling; ``"monte-carlo"`` always samples.
    samples : int, default 10_000
        Sampled permutations.
    seed : int, default 0
        Seed of :func:`numpy.random.default_rng`.
    exact_limit : int, default 500_000
        Work budget of the exact method, in formula nodes rebuilt or expanded over all players.

    Returns
    -------
    Responsibility

    Raises
    ------
    SemiringError
        A bad argument, a player ``expr`` does not mention, a token neither a player nor
        fixed, or ``method="exact"`` past ``exact_limit``.

    Examples
    --------
    >>> from lipspark.semiring import Token, delta
    >>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
    >>> shapley(delta(c2 * b1 + c3 * b1)).ranked()[0]
    ('Req:B1', 0.6666666666666667)
    >>> r = shapley(c2 * b1 + c3 * b1, method="monte-carlo", samples=20_000, seed=1)
    >>> r.method, abs(r.values["Req:B1"] - 2 / 3) < 4 * r.stderr["Req:B1"]
    ('monte-carlo', True)
    """
    return _responsibility("shapley", expr, players, fixed, method, samples, seed, exact_limit)


def banzhaf(
    expr: Expr,
    players: Iterable[str] | None = None,
    fixed: Mapping[str, bool] | None = None,
    *,
    method: str = "auto",
    samples: int = 10_000,
    seed: int = 0,
    exact_limit: int = 500_000,
) -> Responsibility:
    """The Banzhaf value of each player (token) for the truth of ``expr``: the probability
    that it is decisive when every other player is present with probability 1/2.

    Parameters are those of :func:`shapley` (``samples``: sampled worlds). ProvSQL's
    ``banzhaf`` is ``2^(n−1)`` times this value, ``n`` the number of players.

    Examples
    --------
    >>> from lipspark.semiring import Token
    >>> a, b, c = Token("a"), Token("b"), Token("c")
    >>> r = banzhaf(a * b + a * c + b * c)   # majority of three: decisive iff the others split
    >>> r.values, r.method
    ({'a': 0.5, 'b': 0.5, 'c': 0.5}, 'exact')
    >>> {p: v * 2 ** (r.players - 1) for p, v in r.values.items()}   # ProvSQL's banzhaf()
    {'a': 2.0, 'b': 2.0, 'c': 2.0}
    """
    return _responsibility("banzhaf", expr, players, fixed, method, samples, seed, exact_limit)


# ---- players --------------------------------------------------------------------------------


def _roles(
    names: list[str], players: Iterable[str] | None, fixed: Mapping[str, bool] | None
) -> tuple[list[int], dict[int, bool]]:
    """The variables that are players, and the fixed ones with their truth."""
    if fixed is not None and not isinstance(fixed, Mapping):
        raise SemiringError(
            f"expected fixed to be a Mapping[str, bool] of exogenous tokens; found "
            f"{type(fixed).__name__}. Fix: pass e.g. fixed={{'Requests:B1': True}}."
        )
    given = dict(fixed or {})
    for name, value in given.items():
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
            raise SemiringError(
                f"expected fixed token {name!r} to be True (present) or False (absent); found "
                f"{type(value).__name__} {value!r}. Fix: fixed={{{name!r}: True}}."
            )
    var_of = {name: v for v, name in enumerate(names)}
    truth = {var_of[n]: bool(b) for n, b in given.items() if n in var_of}
    if players is None:
        return [v for v in range(len(names)) if v not in truth], truth
    if isinstance(players, str):
        raise SemiringError(
            f"expected players to be an iterable of token names; found the string {players!r}. "
            f"Fix: players=[{players!r}]."
        )
    chosen = list(dict.fromkeys(players))
    unknown = [p for p in chosen if p not in var_of]
    if unknown:
        raise SemiringError(
            f"expected players among the expression's tokens; found {len(unknown)} it does not "
            f"mention: {describe_tokens(tuple(unknown))}. Its tokens: "
            f"{describe_tokens(tuple(sorted(names))) or 'none'}. Fix: name tokens of the expression."
        )
    both = [p for p in chosen if var_of[p] in truth]
    if both:
        raise SemiringError(
            f"expected each token to be either a player or fixed; found {len(both)} both: "
            f"{describe_tokens(tuple(both))}. Fix: leave them out of players or out of fixed."
        )
    chosen_vars = {var_of[p] for p in chosen}
    left = tuple(n for v, n in enumerate(names) if v not in chosen_vars and v not in truth)
    if left:
        raise SemiringError(
            f"expected every token to be a player or fixed; found {len(left)} neither: "
            f"{describe_tokens(left)}. Fix: add them to players, or to fixed as True (always "
            f"present, exogenous) or False (absent)."
        )
    return sorted(chosen_vars), truth


# ---- exogenous tokens -----------------------------------------------------------------------


def _substitute(formula: _Formula, root: int, truth: Mapping[int, bool]) -> int:
    """``root`` with the variables of ``truth`` replaced by constants, simplified."""
    if not truth:
        return root
    done: dict[int, int] = {}
    for n in formula.reachable(root):  # increasing: children first
        kind = formula.kind[n]
        if kind == _VAR:
            v = formula.var[n]
            done[n] = n if v not in truth else (_TRUE if truth[v] else _FALSE)
        elif kind in (_AND, _OR):
            done[n] = formula.node(kind, [done[k] for k in formula.kids[n]])
        else:
            done[n] = n
    return done[root]


# ---- exact ----------------------------------------------------------------------------------


def _exact(
    measure: str, formula: _Formula, root: int, live: list[int], limit: int
) -> dict[int, float]:
    """Each live player's exact value (raises _ExactTooBig past ``limit``).

    One exact computation of ``P_p(root)`` at every quadrature point, traced, then one backward
    pass through the trace: ``∂P/∂p_x = P(f | x=1) − P(f | x=0)``, as ``P`` is multilinear and
    every step of the trace (and, or of independent parts, Shannon expansion) is a polynomial
    identity in the players' probabilities.
    """
    n = len(live)
    if measure == "shapley":
        nodes, weights = np.polynomial.legendre.leggauss(math.ceil(n / 2) + 1)
        points, weights = (nodes + 1.0) / 2.0, weights / 2.0  # [-1, 1] → [0, 1]
    else:
        points, weights = np.array([0.5]), np.array([1.0])
    probs: list[object] = [points] * (1 + max(formula.var))  # only the live players' are read
    order = formula.reachable(root)
    exact = _Exact(formula, probs, _repeated_vars(formula, order), limit, trace=True)  # type: ignore[arg-type]
    exact.run(root)
    f, memo, trace = formula, exact.memo, exact.trace
    assert trace is not None
    grad: dict[int, np.ndarray] = {}
    adjoint: dict[int, np.ndarray] = {}

    def value(node: int) -> np.ndarray:
        return np.asarray(points if f.kind[node] == _VAR else memo[node], dtype=np.float64)

    def add(into: dict[int, np.ndarray], key: int, amount: np.ndarray) -> None:
        into[key] = into[key] + amount if key in into else amount

    def push(node: int, amount: np.ndarray) -> None:
        if f.kind[node] == _VAR:
            add(grad, f.var[node], amount)
        elif node not in (_FALSE, _TRUE):
            add(adjoint, node, amount)

    push(root, np.ones_like(points))
    for node in reversed(exact.done):  # a node's value was found after those it is made of
        a = adjoint.pop(node, None)
        if a is None:
            continue
        how = trace[node]
        exact.tick(len(how))
        if how[0] == _SHANNON:  # p·P(on) + (1 − p)·P(off)
            _, v, on, off = how
            add(grad, v, a * (value(on) - value(off)))
            push(on, a * points)
            push(off, a * (1.0 - points))
            continue
        kind, kids = how[0], how[1:]
        factors = [value(k) if kind == _AND else 1.0 - value(k) for k in kids]
        before = np.ones_like(points)
        partial = []
        for x in factors:  # ∂/∂kid_i is the product of the other factors: prefix · suffix
            partial.append(before)
            before = before * x
        after = np.ones_like(points)
        for i in range(len(kids) - 1, -1, -1):
            push(kids[i], a * partial[i] * after)
            after = after * factors[i]
    return {v: float(np.dot(weights, grad[v])) if v in grad else 0.0 for v in live}


# ---- sampled --------------------------------------------------------------------------------


def _fold_chunk(
    formula: _Formula,
    root: int,
    order: list[int],
    leaves: np.ndarray,
    row_of: dict[int, int],
    and_op: Callable[..., np.ndarray],
    or_op: Callable[..., np.ndarray],
) -> np.ndarray:
    """The root's value in every column of ``leaves`` (one row per variable), combining
    children with ``and_op`` / ``or_op``; arrays are dropped after their last use."""
    kind, kids, var = formula.kind, formula.kids, formula.var
    if kind[root] == _VAR:
        return leaves[row_of[var[root]]]
    left: dict[int, int] = dict.fromkeys(order, 0)
    for n in order:
        for k in kids[n]:
            left[k] += 1
    values: dict[int, np.ndarray] = {}
    for n in order:
        if kind[n] == _VAR:
            continue
        acc: np.ndarray | None = None
        for k in kids[n]:
            arr = leaves[row_of[var[k]]] if kind[k] == _VAR else values[k]
            left[k] -= 1
            if left[k] == 0:
                values.pop(k, None)
            if acc is None:
                acc = arr.copy()
            else:
                (and_op if kind[n] == _AND else or_op)(acc, arr, out=acc)
        assert acc is not None  # an AND/OR node has at least two children
        values[n] = acc
    return values[root]


def _sampled(
    measure: str, formula: _Formula, root: int, live: list[int], samples: int, seed: int
) -> tuple[dict[int, float], dict[int, float]]:
    """Each live player's estimated value and standard error."""
    order = formula.reachable(root)
    row_of = {v: i for i, v in enumerate(live)}
    rng = np.random.default_rng(seed)
    chunk = max(64, min(8192, _CHUNK_CELLS // max(1, len(live))))
    hits = np.zeros(len(live), dtype=np.int64)  # Shapley: decisive; Banzhaf: f and present
    truths = 0  # Banzhaf: worlds where f is true
    for start in range(0, samples, chunk):
        m = min(chunk, samples - start)
        if measure == "shapley":
            arrival = rng.random((len(live), m))
            became_true = _fold_chunk(formula, root, order, arrival, row_of, np.maximum, np.minimum)
            hits += np.count_nonzero(arrival == became_true, axis=1)
        else:
            present = rng.random((len(live), m)) < 0.5
            true = _fold_chunk(formula, root, order, present, row_of, np.logical_and, np.logical_or)
            truths += int(np.count_nonzero(true))
            hits += np.count_nonzero(present & true, axis=1)
    values: dict[int, float] = {}
    errors: dict[int, float] = {}
    for v, h in zip(live, hits.tolist()):
        if measure == "shapley":
            mean = h / samples
            errors[v] = math.sqrt(mean * (1.0 - mean) / samples)
        else:  # each world gives 2·f·(+1 if present else −1)
            mean = 2.0 * (h - (truths - h)) / samples
            second = 4.0 * truths / samples
            errors[v] = math.sqrt(max(0.0, second - mean * mean) / samples)
        values[v] = mean
    return values, errors


# ---- entry ----------------------------------------------------------------------------------


def _responsibility(
    measure: str,
    expr: Expr,
    players: Iterable[str] | None,
    fixed: Mapping[str, bool] | None,
    method: str,
    samples: int,
    seed: int,
    exact_limit: int,
) -> Responsibility:
    if isinstance(expr, AggValue):
        raise SemiringError(
            f"expected a provenance expression (Expr); found an AggValue ({expr.op}). A value "
            f"is not true or false, so its tokens have no {measure} value. Fix: ask about the "
            f"provenance of the tuple that carries it."
        )
    samples, seed, exact_limit = _check_args(expr, method, samples, seed, exact_limit, METHODS)
    formula, root, names, _ = _to_formula(expr, lambda name: 0.5)
    chosen, truth = _roles(names, players, fixed)
    root = _substitute(formula, root, truth)
    in_root = {formula.var[n] for n in formula.reachable(root) if formula.kind[n] == _VAR}
    live = [v for v in chosen if v in in_root]

    def result(values: Mapping[int, float], how: str, errors: Mapping[int, float] | None) -> Responsibility:
        ordered = sorted(chosen, key=lambda v: (-values.get(v, 0.0), names[v]))
        return Responsibility(
            measure,
            {names[v]: values.get(v, 0.0) for v in ordered},
            how,
            None if errors is None else samples,
            None if errors is None else {names[v]: errors.get(v, 0.0) for v in ordered},
        )

    if not live:  # a constant: nobody is decisive
        return result({}, "exact", None)
    if method != "monte-carlo":
        try:
            return result(_exact(measure, formula, root, live, exact_limit), "exact", None)
        except _ExactTooBig:
            if method == "exact":
                raise SemiringError(
                    f"expected the exact {measure} values to be computable within "
                    f"exact_limit={exact_limit} work steps; found they need more ({len(live)} "
                    f"players in a Boolean formula of {len(formula.reachable(root))} nodes). "
                    f"Fix: use method='monte-carlo' (or 'auto' to fall back to it), or raise "
                    f"exact_limit."
                ) from None
    values, errors = _sampled(measure, formula, root, live, samples, seed)
    return result(values, "monte-carlo", errors)
