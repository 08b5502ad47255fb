"""Probability of provenance expressions over tuple-independent probabilistic databases.

Each token is an independent Bernoulli variable: base tuple ``t`` is present with
probability ``p(t)``. A derived tuple is present iff its provenance expression evaluates to
True in the Boolean semiring (:data:`~lipspark.semiring.BOOLEAN`: ``+`` is or, ``·`` is
and, ``δ(x) = x``, a black box is the or of its arguments), so its probability is the
probability that the expression, read as a Boolean formula, is true.

:func:`probability` converts the expression into a hash-consed AND/OR formula over the
token variables (constants simplified away, nested operators flattened, repeated children
dropped) and then

* **read-once**: if no token occurs more than once, the children of every node are
  independent, and one bottom-up pass computes the exact value
  (AND: ``∏ pᵢ``; OR: ``1 - ∏ (1 - pᵢ)``);
* **exact**: otherwise it decomposes into independent components where it can and uses
  Shannon expansion ``P(f) = p(x)·P(f|x=1) + (1 - p(x))·P(f|x=0)`` on a shared token
  where it cannot; this is #P-hard in general, so the work is bounded by ``exact_limit``;
* **monte-carlo**: otherwise it samples possible worlds, vectorized with numpy.

All traversals use explicit stacks, so expressions tens of thousands of levels deep work.

>>> from lipspark.semiring import Token, probability
>>> x, y, z = Token("x"), Token("y"), Token("z")
>>> print(probability(x * (y + z), {"x": 0.5, "y": 0.5, "z": 0.5}))
0.375 (read-once)
>>> print(probability(x * y + x * z + y * z, {}, default=0.5))
0.5 (exact)
>>> r = probability(x * y + x * z + y * z, {}, default=0.5, method="monte-carlo", samples=20_000)
>>> r.method, r.samples, abs(r.value - 0.5) < 4 * r.stderr
('monte-carlo', 20000, True)
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from lipspark.errors import MissingValueError, SemiringError
from lipspark.semiring._nodes import (
    BlackBox,
    Delta,
    Expr,
    Monus,
    Product,
    Sum,
    Token,
    _One,
    _Zero,
)
from lipspark.semiring._traverse import fold_many
from lipspark.semiring.evaluate import describe_tokens, missing_tokens
from lipspark.semiring.expr import AggValue

__all__ = ["METHODS", "ProbabilityResult", "probability"]

#: The values accepted by ``probability(..., method=...)``.
METHODS: tuple[str, ...] = ("auto", "exact", "monte-carlo")

#: Samples evaluated together in one vectorized Monte Carlo pass.
_CHUNK = 8192

#: Same-operator children with at most this many children are spliced into their parent.
#: (Bounded so that a long chain ``((a·b)·c)·…`` converts in linear, not quadratic, time.)
_FLATTEN_MAX = 64

# Formula node kinds. Node 0 is the constant False, node 1 the constant True.
_CONST, _VAR, _AND, _OR = 0, 1, 2, 3
#: In a trace of the exact computation (``_Exact(trace=True)``): a Shannon expansion.
_SHANNON = 4
_FALSE, _TRUE = 0, 1


@dataclass(frozen=True)
class ProbabilityResult:
    """The probability that a provenance expression is true, and how it was obtained.

    Attributes
    ----------
    value : float
        P(expression is true).
    method : str
        ``"read-once"`` (exact, no token repeated), ``"exact"`` (exact, by Shannon
        expansion) or ``"monte-carlo"`` (an estimate).
    samples : int or None
        The number of Monte Carlo samples, None when exact.
    stderr : float or None
        The Monte Carlo standard error ``sqrt(p(1 - p) / n)``, None when exact.

    Examples
    --------
    >>> print(ProbabilityResult(0.42, "exact", None, None))
    0.42 (exact)
    >>> print(ProbabilityResult(0.41873, "monte-carlo", 100_000, 0.00156))
    0.4187 ± 0.0016 (monte-carlo, 100000 samples)
    """

    value: float
    method: str
    samples: int | None
    stderr: float | None

    def __str__(self) -> str:
        if self.samples is None:
            text = f"{self.value:.12g}"
            if not any(c in text for c in ".en"):
                text += ".0"
            return f"{text} ({self.method})"
        se = self.stderr if self.stderr is not None else 0.0
        decimals = 4 if se <= 0 else min(12, max(4, 1 - math.floor(math.log10(se))))
        return (
            f"{self.value:.{decimals}f} ± {se:.{decimals}f} "
            f"({self.method}, {self.samples} samples)"
        )


class _ExactTooBig(Exception):
    """Internal: the exact computation exceeded its work budget."""


class _Formula:
    """A hash-consed monotone Boolean formula DAG; children ids are smaller than parents'."""

    __slots__ = ("index", "kids", "kind", "var")

    def __init__(self) -> None:
        self.kind: list[int] = [_CONST, _CONST]
        self.kids: list[tuple[int, ...]] = [(), ()]
        self.var: list[int] = [-1, -1]
        self.index: dict[tuple[int, object], int] = {}

    def __len__(self) -> int:
        return len(self.kind)

    def _add(self, key: tuple[int, object], kind: int, kids: tuple[int, ...], var: int) -> int:
        node = self.index.get(key)
        if node is None:
            node = len(self.kind)
            self.kind.append(kind)
            self.kids.append(kids)
            self.var.append(var)
            self.index[key] = node
        return node

    def var_node(self, v: int) -> int:
        """The node of variable ``v``."""
        return self._add((_VAR, v), _VAR, (), v)

    def node(self, kind: int, kids: Iterable[int]) -> int:
        """AND / OR of ``kids``, simplified (constants, flattening, duplicates)."""
        absorbing, neutral = (_FALSE, _TRUE) if kind == _AND else (_TRUE, _FALSE)
        collected: set[int] = set()
        for k in kids:
            if k == absorbing:
                return absorbing
            if k == neutral:
                continue
            if self.kind[k] == kind and len(self.kids[k]) <= _FLATTEN_MAX:
                collected.update(self.kids[k])
            else:
                collected.add(k)
        if not collected:
            return neutral
        if len(collected) == 1:
            return next(iter(collected))
        ordered = tuple(sorted(collected))
        return self._add((kind, ordered), kind, ordered, -1)

    def reachable(self, root: int) -> list[int]:
        """The nodes reachable from ``root``, in increasing (hence topological) order."""
        seen = {root}
        stack = [root]
        while stack:
            for k in self.kids[stack.pop()]:
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
        return sorted(seen)


_Probabilities = Mapping[str, float] | Callable[[str], float]


def _check_probability(value: object, what: str) -> float:
    p = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not (0.0 <= p <= 1.0):
        raise SemiringError(
            f"expected {what} to be a probability, a real number in [0, 1]; found "
            f"{type(value).__name__} {value!r}. Fix: give every token a probability "
            f"between 0 and 1, e.g. {{'Cars:C2': 0.9}}."
        )
    return p


def _lookup(probabilities: _Probabilities, default: float | None, expr: Expr) -> Callable[[str], float]:
    if default is not None:
        default = _check_probability(default, "default")
    if isinstance(probabilities, Mapping):
        mapping = probabilities
        if default is None:
            missing = missing_tokens(expr, mapping)
            if missing:
                raise MissingValueError(
                    f"expected a probability for every token; found none for {len(missing)} "
                    f"token(s): {describe_tokens(missing)}. Fix: add them to the mapping, or pass "
                    f"a default for every token it does not name, e.g. probability(expr, probs, "
                    f"default=1.0).",
                    missing,
                )

        def look(name: str) -> float:
            if name in mapping:
                return _check_probability(mapping[name], f"the probability of token {name!r}")
            assert default is not None  # every token was checked above
            return default

        return look
    if callable(probabilities):
        func = probabilities

        def call(name: str) -> float:
            return _check_probability(func(name), f"the probability of token {name!r}")

        return call
    raise SemiringError(
        f"expected probabilities as a Mapping[str, float] or a callable token -> float; "
        f"found {type(probabilities).__name__}. Fix: pass e.g. {{'Cars:C2': 0.9}}."
    )


def _to_formula(
    expr: Expr, look: Callable[[str], float]
) -> tuple[_Formula, int, list[str], list[float]]:
    """Convert ``expr`` to a Boolean formula with the Boolean semiring's semantics."""
    formula = _Formula()
    names: list[str] = []
    probs: list[float] = []
    var_of: dict[str, int] = {}

    def combine(node: Expr, kids: list[int]) -> int:
        if isinstance(node, Token):
            v = var_of.get(node.name)
            if v is None:
                v = var_of[node.name] = len(names)
                names.append(node.name)
                probs.append(look(node.name))
            return formula.var_node(v)
        if isinstance(node, _Zero):
            return _FALSE
        if isinstance(node, _One):
            return _TRUE
        if isinstance(node, Product):
            return formula.node(_AND, kids)
        if isinstance(node, (Sum, BlackBox)):  # Boolean black box: fold of or (False if empty)
            return formula.node(_OR, kids)
        if isinstance(node, Delta):  # Boolean δ is the identity
            return kids[0]
        if isinstance(node, Monus):
            raise SemiringError(
                "expected an expression without ⊖ (a monus: an outer or anti join, a set difference); found one. "
                "The probability engine has no negation, so P(a ∧ ¬b) is not computed. Fix: evaluate in the boolean "
                "semiring per possible world, or ask about a tuple whose provenance has no ⊖"
            )
        raise SemiringError(
            f"expected an Expr node (Token, ZERO, ONE, Sum, Product, Delta, BlackBox); found "
            f"{type(node).__name__}. Fix: build expressions with lipspark.semiring constructors."
        )

    root = fold_many([expr], combine)[0]
    return formula, root, names, probs


def _repeated_vars(formula: _Formula, order: list[int]) -> frozenset[int]:
    """Variables occurring more than once in the tree unfolding of the formula.

    ``order`` is the reachable nodes in increasing order; the root is the last one.
    Counts root-to-node paths (capped at 2) from the root downwards.
    """
    paths = dict.fromkeys(order, 0)
    paths[order[-1]] = 1
    for node in reversed(order):
        n = paths[node]
        for k in formula.kids[node]:
            paths[k] = min(2, paths[k] + n)
    return frozenset(formula.var[n] for n in order if formula.kind[n] == _VAR and paths[n] > 1)


def _combine(kind: int, ps: list[float]) -> float:
    if kind == _AND:
        return math.prod(ps)
    return 1.0 - math.prod(1.0 - p for p in ps)


def _clip(value: float) -> float:
    """A probability computed in floating point, kept within [0, 1] (element-wise for an array)."""
    if isinstance(value, np.ndarray):
        return np.clip(value, 0.0, 1.0)
    return min(1.0, max(0.0, float(value)))


class _Exact:
    """Exact probability by decomposition and Shannon expansion, iterative, with a budget.

    Only the repeated variables (``multi``) can make children of a node dependent, so the
    variable sets used to find independent components are restricted to them; a node
    whose restricted set is empty is read-once and is computed in one bottom-up pass.

    A variable's probability may also be a numpy array (one entry per point, the same shape
    for every array): the arithmetic is then element-wise, so one pass computes the
    probability at every point — :mod:`lipspark.semiring.responsibility` uses this to
    evaluate ``P_p`` at all its quadrature points at once. The memo keeps a node's value, so
    one instance answers several roots of the same formula while sharing what they have in
    common.

    With ``trace=True`` it also records how each node's value was computed — the and / or of
    which nodes (``(_AND | _OR, kids)``) or a Shannon expansion (``(_SHANNON, v, high, low)``) —
    in ``trace``, and the nodes in the order their values were found in ``done``: an arithmetic
    circuit (a decision-DNNF) that responsibility differentiates in one backward pass.
    """

    def __init__(
        self, formula: _Formula, probs: list[float], multi: frozenset[int], limit: int,
        trace: bool = False,
    ) -> None:
        self.f = formula
        self.probs = probs
        self.multi = multi
        self.limit = limit
        self.steps = 0
        self.shannon = False
        self.rsets: dict[int, frozenset[int]] = {_FALSE: frozenset(), _TRUE: frozenset()}
        self.memo: dict[int, float] = {_FALSE: 0.0, _TRUE: 1.0}
        self.trace: dict[int, tuple[int, ...]] | None = {} if trace else None
        self.done: list[int] = []

    def record(self, node: int, how: tuple[int, ...]) -> None:
        """With ``trace``: how ``node``'s value is computed (see the class docstring)."""
        if self.trace is not None:
            self.trace[node] = how

    def tick(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.limit:
            raise _ExactTooBig

    def rset(self, node: int) -> frozenset[int]:
        """The repeated variables occurring in ``node`` (memoized, iterative)."""
        found = self.rsets.get(node)
        if found is not None:
            return found
        f, rsets = self.f, self.rsets
        empty: frozenset[int] = frozenset()
        stack: list[tuple[int, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if n in rsets:
                continue
            if f.kind[n] == _VAR:
                rsets[n] = frozenset((f.var[n],)) if f.var[n] in self.multi else empty
                continue
            if not expanded:
                stack.append((n, True))
                stack.extend((k, False) for k in f.kids[n] if k not in rsets)
                continue
            parts = [rsets[k] for k in f.kids[n] if rsets[k]]
            if not parts:
                rsets[n] = empty
            elif len(parts) == 1:
                rsets[n] = parts[0]
            else:
                union = frozenset().union(*parts)
                biggest = max(parts, key=len)
                rsets[n] = biggest if len(biggest) == len(union) else union
                self.tick(1 + len(union) // 16)
        return rsets[node]

    def read_once(self, node: int) -> float:
        """Probability of a node with no repeated variable: one bottom-up pass."""
        f, memo = self.f, self.memo
        stack: list[tuple[int, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if n in memo:
                continue
            if f.kind[n] == _VAR:
                memo[n] = self.probs[f.var[n]]
                continue
            if not expanded:
                stack.append((n, True))
                stack.extend((k, False) for k in f.kids[n] if k not in memo)
                continue
            memo[n] = _combine(f.kind[n], [memo[k] for k in f.kids[n]])
            if self.trace is not None:
                self.trace[n] = (f.kind[n], *f.kids[n])
                self.done.append(n)
        return memo[node]

    def condition(self, node: int, v: int, value: bool) -> int:
        """``node`` with variable ``v`` set to ``value``, simplified (iterative)."""
        f = self.f
        done: dict[int, int] = {}
        stack: list[tuple[int, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if n in done:
                continue
            if f.kind[n] == _VAR:  # only v's node is pushed: others lack v
                done[n] = _TRUE if value else _FALSE
                continue
            if not expanded:
                stack.append((n, True))
                stack.extend((k, False) for k in f.kids[n] if k not in done and v in self.rset(k))
                continue
            self.tick()
            done[n] = f.node(f.kind[n], [done.get(k, k) for k in f.kids[n]])
        return done[node]

    def solve(self, node: int) -> Generator[int, float, float]:
        """Probability of a (non-constant, non-var) node; yields sub-formulas it needs."""
        f = self.f
        self.tick()
        kind, kids = f.kind[node], f.kids[node]
        rsets = [self.rset(k) for k in kids]
        dirty = [i for i, r in enumerate(rsets) if r]
        if len(dirty) < 2:  # children pairwise independent
            independent: list[float] = []
            for k in kids:
                independent.append((yield k))
            self.record(node, (kind, *kids))
            return _combine(kind, independent)
        # union-find over the children sharing repeated variables
        parent = list(range(len(kids)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner: dict[int, int] = {}
        counts: dict[int, int] = {}
        for i in dirty:
            self.tick(len(rsets[i]))
            for v in rsets[i]:
                counts[v] = counts.get(v, 0) + 1
                j = owner.setdefault(v, i)
                if j != i:
                    parent[find(i)] = find(j)
        groups: dict[int, list[int]] = {}
        for i, k in enumerate(kids):
            groups.setdefault(find(i), []).append(k)
        if len(groups) > 1:  # independent components
            ps: list[float] = []
            subs: list[int] = []
            for members in groups.values():
                sub = members[0] if len(members) == 1 else f.node(kind, members)
                subs.append(sub)
                ps.append((yield sub))
            self.record(node, (kind, *subs))
            return _combine(kind, ps)
        # one component: Shannon expansion on the variable shared by most children
        self.shannon = True
        v = max(counts, key=lambda u: (counts[u], -u))
        p = self.probs[v]
        on = self.condition(node, v, True) if np.any(p > 0.0) else _FALSE
        off = self.condition(node, v, False) if np.any(p < 1.0) else _FALSE
        high = (yield on) if on != _FALSE else 0.0
        low = (yield off) if off != _FALSE else 0.0
        self.record(node, (_SHANNON, v, on, off))
        return p * high + (1.0 - p) * low

    def run(self, root: int) -> float:
        """P(root), driving :meth:`solve` generators on an explicit stack."""
        value = self.need(root)
        if value is not None:
            return value
        stack: list[tuple[int, Generator[int, float, float]]] = [(root, self.solve(root))]
        send: float | None = None
        while True:
            node, gen = stack[-1]
            try:
                request = gen.send(send)  # type: ignore[arg-type]
            except StopIteration as stop:
                result = _clip(stop.value)
                self.memo[node] = result
                if self.trace is not None:
                    self.done.append(node)
                stack.pop()
                if not stack:
                    return result
                send = result
                continue
            send = self.need(request)
            if send is None:
                stack.append((request, self.solve(request)))

    def need(self, node: int) -> float | None:
        """P(node) if known or cheap (constant, variable, read-once), else None."""
        known = self.memo.get(node)
        if known is not None:
            return known
        if self.f.kind[node] == _VAR:
            return self.probs[self.f.var[node]]
        if not self.rset(node):
            return self.read_once(node)
        return None


def _sample_chunk(
    formula: _Formula,
    root: int,
    inner: list[int],
    uses: dict[int, int],
    p_of: np.ndarray,
    rng: np.random.Generator,
    m: int,
) -> np.ndarray:
    """Truth of ``root`` in ``m`` sampled worlds (a boolean array).

    Each non-variable node in ``inner`` (topological order) is evaluated once; a
    variable's column is drawn when first needed; arrays are dropped after their last use.
    """
    kind, kids, var = formula.kind, formula.kids, formula.var
    values: dict[int, np.ndarray] = {}
    left = dict(uses)

    def get(n: int) -> np.ndarray:
        arr = values.get(n)
        if arr is None:  # a variable, drawn when first needed
            arr = rng.random(m) < p_of[var[n]]
            if left[n] > 1:
                values[n] = arr
        left[n] -= 1
        if left[n] == 0:
            values.pop(n, None)
        return arr

    if kind[root] == _VAR:
        return rng.random(m) < p_of[var[root]]
    for n in inner:
        ks = kids[n]
        op = np.logical_and if kind[n] == _AND else np.logical_or
        acc = get(ks[0]).copy()
        for k in ks[1:]:
            op(acc, get(k), out=acc)
        values[n] = acc
    return values[root]


def _monte_carlo(
    formula: _Formula, root: int, probs: list[float], samples: int, seed: int
) -> tuple[float, float]:
    """Estimate P(root) by sampling worlds; returns (mean, standard error)."""
    if root in (_FALSE, _TRUE):
        return float(root == _TRUE), 0.0
    order = formula.reachable(root)
    uses = dict.fromkeys(order, 0)
    for n in order:
        for k in formula.kids[n]:
            uses[k] += 1
    inner = [n for n in order if formula.kind[n] != _VAR]
    p_of = np.array(probs, dtype=np.float64)
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, samples, _CHUNK):
        m = min(_CHUNK, samples - start)
        top = _sample_chunk(formula, root, inner, uses, p_of, rng, m)
        hits += int(np.count_nonzero(top))
    mean = hits / samples
    return mean, math.sqrt(mean * (1.0 - mean) / samples)


def _check_int(value: object, what: str, low: int) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise SemiringError(
            f"expected {what} to be an integer >= {low}; found {type(value).__name__} "
            f"{value!r}. Fix: pass a whole number, e.g. {what}={low + 1}."
        )
    return int(value)


def _check_args(expr: object, method: str, samples: object, seed: object, exact_limit: object,
                methods: tuple[str, ...]) -> tuple[int, int, int]:
    """The checks :func:`probability` and :mod:`~lipspark.semiring.responsibility` share: an
    Expr, a known method, whole numbers; ``(samples, seed, exact_limit)`` as ints."""
    if not isinstance(expr, Expr):
        raise SemiringError(
            f"expected an Expr; found {type(expr).__name__} {expr!r}. "
            f"Fix: wrap base tuples as Token('name')."
        )
    if method not in methods:
        raise SemiringError(
            f"expected method to be one of {', '.join(map(repr, methods))}; found {method!r}. "
            f"Fix: use method='auto'."
        )
    return _check_int(samples, "samples", 1), _check_int(seed, "seed", 0), _check_int(exact_limit, "exact_limit", 0)


def probability(
    expr: Expr,
    probabilities: Mapping[str, float] | Callable[[str], float],
    default: float | None = None,
    *,
    method: str = "auto",
    samples: int = 100_000,
    seed: int = 0,
    exact_limit: int = 200_000,
) -> ProbabilityResult:
    """Probability that ``expr`` is true when tokens are independent Bernoulli variables.

    Parameters
    ----------
    expr : Expr
        A provenance expression. Its truth is its value in the Boolean semiring
        (``+`` or, ``·`` and, ``δ(x) = x``, black box = or of its arguments).
        An :class:`~lipspark.semiring.AggValue` is rejected: a value has no probability
        of being true.
    probabilities : Mapping[str, float] or Callable[[str], float]
        Token name to the probability that the base tuple is present.
    default : float, optional
        Probability of tokens missing from a mapping (ignored for a callable). Without
        it the tokens missing from the mapping raise
        :class:`~lipspark.errors.MissingValueError`, which names them.
    method : {"auto", "exact", "monte-carlo"}, default "auto"
        ``"auto"`` computes exactly when it can within ``exact_limit`` and samples
        otherwise; ``"exact"`` raises instead of sampling; ``"monte-carlo"`` always
        samples.
    samples : int, default 100_000
        Number of Monte Carlo samples (possible worlds).
    seed : int, default 0
        Seed of :func:`numpy.random.default_rng`; the estimate is deterministic for a
        given seed.
    exact_limit : int, default 200_000
        Work budget of the exact (Shannon expansion) algorithm, in steps of roughly
        one formula node each. Read-once formulas are always exact, whatever the size.

    Returns
    -------
    ProbabilityResult
        ``value``, ``method`` (``"read-once"``, ``"exact"`` or ``"monte-carlo"``) and,
        for Monte Carlo, ``samples`` and ``stderr``.

    Raises
    ------
    SemiringError
        For a missing token, a probability outside [0, 1], an AggValue, a bad argument,
        or ``method="exact"`` when the exact computation exceeds ``exact_limit``.

    Examples
    --------
    >>> from lipspark.semiring import Token, black_box, delta
    >>> c2, c3, b1 = Token("Cars:C2"), Token("Cars:C3"), Token("Req:B1")
    >>> probs = {"Cars:C2": 0.5, "Cars:C3": 0.5, "Req:B1": 0.8}
    >>> print(probability(delta(c2 * b1 + c3 * b1), probs))
    0.6 (exact)
    >>> print(probability(delta(b1 * (c2 + c3)), probs))
    0.6 (read-once)
    >>> print(probability(black_box("calcBid", c2, c3), probs))
    0.75 (read-once)
    >>> r = probability(c2 * b1 + c3 * b1, probs, method="monte-carlo", samples=10_000, seed=1)
    >>> r == probability(c2 * b1 + c3 * b1, probs, method="monte-carlo", samples=10_000, seed=1)
    True
    >>> abs(r.value - 0.6) < 4 * r.stderr
    True
    """
    if isinstance(expr, AggValue):
        raise SemiringError(
            f"expected a provenance expression (Expr); found an AggValue ({expr.op}). "
            f"The probability of an aggregate value is not defined here. Fix: ask for the "
            f"probability of one term's provenance, e.g. probability(expr.terms[0][0], ...)."
        )
    samples, seed, exact_limit = _check_args(expr, method, samples, seed, exact_limit, METHODS)
    formula, root, names, probs = _to_formula(expr, _lookup(probabilities, default, expr))

    def sample() -> ProbabilityResult:
        mean, stderr = _monte_carlo(formula, root, probs, samples, seed)
        return ProbabilityResult(mean, "monte-carlo", samples, stderr)

    if method == "monte-carlo":
        return sample()
    if root in (_FALSE, _TRUE):
        return ProbabilityResult(float(root == _TRUE), "read-once", None, None)
    order = formula.reachable(root)
    multi = _repeated_vars(formula, order)
    exact = _Exact(formula, probs, multi, exact_limit)
    if not multi:
        return ProbabilityResult(exact.read_once(root), "read-once", None, None)
    try:
        value = exact.run(root)
    except _ExactTooBig:
        if method == "exact":
            raise SemiringError(
                f"expected the exact probability to be computable within "
                f"exact_limit={exact_limit} work steps; found it needs more (Boolean formula "
                f"of {len(order)} nodes over {len(names)} tokens, {len(multi)} of them "
                f"occurring more than once; Shannon expansion grew it to {len(formula)} "
                f"nodes). Fix: use method='monte-carlo' (or 'auto' to fall back to it), "
                f"or raise exact_limit."
            ) from None
        return sample()
    return ProbabilityResult(value, "exact" if exact.shannon else "read-once", None, None)
