"""Expression node classes and smart constructors (re-exported by :mod:`lipspark.semiring.expr`).

>>> from lipspark.semiring._nodes import Token, plus
>>> print(plus(Token("a"), Token("b")))
a + b
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lipspark.errors import SemiringError
from lipspark.vocabulary.ops import AGGREGATE_OPS
from lipspark.semiring._traverse import fold_many

__all__ = [
    "AGG_OPS",
    "MAX_TEXT",
    "Prefixes",
    "check_text_length",
    "canonical_op",
    "Expr",
    "Token",
    "ZERO",
    "ONE",
    "Sum",
    "Product",
    "Delta",
    "BlackBox",
    "Monus",
    "plus",
    "times",
    "delta",
    "black_box",
    "monus",
]

#: The longest expression text :func:`str` writes (characters). An expression is a DAG: its text
#: writes every shared sub-expression out again at each use, so it can grow exponentially with
#: the depth of sharing (state carried across many executions) where the DAG stays small.
MAX_TEXT = 50_000_000

#: The aggregate operators an :class:`AggValue` may carry (their labels, in operator order).
AGG_OPS: tuple[str, ...] = tuple(o.label for o in sorted(AGGREGATE_OPS))
_OPS_LOWER = {op.lower(): op for op in AGG_OPS}


def canonical_op(op: object) -> str:
    """Return the canonical spelling of an aggregate operator (case-insensitive).

    >>> canonical_op("count")
    'Count'
    """
    if isinstance(op, str) and op.lower() in _OPS_LOWER:
        return _OPS_LOWER[op.lower()]
    raise SemiringError(
        f"expected an aggregate operator, one of {', '.join(AGG_OPS)}; found {op!r}. "
        f"Fix: use one of those names (e.g. 'Sum')."
    )


class Expr:
    """Base class of provenance expressions; ``+`` and ``*`` build sums and products.

    >>> from lipspark.semiring.expr import Token
    >>> print(Token("a") * (Token("b") + Token("c")))
    a·(b + c)
    """

    __slots__ = ()

    def _children(self) -> tuple[Expr, ...]:
        return ()

    def _payload(self) -> object:
        return None

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Expr):
            return NotImplemented
        return _struct_eq(self, other)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __add__(self, other: object) -> Expr:
        return plus(self, _coerce(other))

    def __radd__(self, other: object) -> Expr:
        return plus(_coerce(other), self)

    def __mul__(self, other: object) -> Expr:
        return times(self, _coerce(other))

    def __rmul__(self, other: object) -> Expr:
        return times(_coerce(other), self)

    def __str__(self) -> str:
        check_text_length([self])
        return fold_many([self], _str_node)[0]

    def _init_hash(self) -> None:
        kids = tuple(hash(c) for c in self._children())
        object.__setattr__(self, "_hash", hash((type(self).__name__, self._payload(), kids)))


def _struct_eq(a: Expr, b: Expr) -> bool:
    """Iterative structural equality with cached hashes and a visited-pairs memo."""
    stack = [(a, b)]
    seen: set[tuple[int, int]] = set()
    while stack:
        x, y = stack.pop()
        if x is y or (id(x), id(y)) in seen:
            continue
        if type(x) is not type(y) or hash(x) != hash(y) or x._payload() != y._payload():
            return False
        xs, ys = x._children(), y._children()
        if len(xs) != len(ys):
            return False
        seen.add((id(x), id(y)))
        stack.extend(zip(xs, ys))
    return True


def _check_exprs(items: object, what: str) -> tuple[Expr, ...]:
    if not isinstance(items, (tuple, list)):
        raise SemiringError(
            f"expected {what} to be a tuple of Expr; found {type(items).__name__} {items!r}. "
            f"Fix: pass a tuple, e.g. Sum((Token('a'), Token('b')))."
        )
    for item in items:
        if not isinstance(item, Expr):
            raise SemiringError(
                f"expected every element of {what} to be an Expr; found "
                f"{type(item).__name__} {item!r}. Fix: wrap base tuples as Token('name')."
            )
    return tuple(items)


@dataclass(frozen=True, slots=True, eq=False)
class Token(Expr):
    """A base tuple's provenance token, e.g. ``Token("Cars:C2")``.

    >>> Token("Cars:C2") == Token("Cars:C2")
    True
    """

    name: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SemiringError(
                f"expected a non-empty string token name; found {self.name!r}. "
                f"Fix: name tokens like 'Relation:Id', e.g. Token('Cars:C2')."
            )
        self._init_hash()

    def _payload(self) -> object:
        return self.name

    def __reduce__(self) -> tuple[object, ...]:
        return (Token, (self.name,))


@dataclass(frozen=True, slots=True, eq=False)
class _Zero(Expr):
    """The semiring zero (absent); use the singleton :data:`ZERO`.

    >>> str(ZERO), isinstance(ZERO, _Zero), ZERO + ZERO is ZERO
    ('0', True, True)
    """

    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._init_hash()

    def __repr__(self) -> str:
        return "ZERO"

    def __reduce__(self) -> str:
        return "ZERO"


@dataclass(frozen=True, slots=True, eq=False)
class _One(Expr):
    """The semiring one (present, no dependency); use the singleton :data:`ONE`.

    >>> str(ONE), isinstance(ONE, _One), ONE * ONE is ONE
    ('1', True, True)
    """

    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._init_hash()

    def __repr__(self) -> str:
        return "ONE"

    def __reduce__(self) -> str:
        return "ONE"


ZERO: Expr = _Zero()
ONE: Expr = _One()


@dataclass(frozen=True, slots=True, eq=False)
class Sum(Expr):
    """An n-ary sum (alternative derivations); prefer :func:`plus`.

    >>> print(Sum((Token("a"), Token("b"))))
    a + b
    """

    terms: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", _check_exprs(self.terms, "Sum.terms"))
        self._init_hash()

    def _children(self) -> tuple[Expr, ...]:
        return self.terms

    def __reduce__(self) -> tuple[object, ...]:
        return (Sum, (self.terms,))


@dataclass(frozen=True, slots=True, eq=False)
class Product(Expr):
    """An n-ary product (joint derivation); prefer :func:`times`.

    >>> print(Product((Token("a"), Token("b"))))
    a·b
    """

    factors: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "factors", _check_exprs(self.factors, "Product.factors"))
        self._init_hash()

    def _children(self) -> tuple[Expr, ...]:
        return self.factors

    def __reduce__(self) -> tuple[object, ...]:
        return (Product, (self.factors,))


@dataclass(frozen=True, slots=True, eq=False)
class Delta(Expr):
    """Duplicate elimination ``δ(arg)``; prefer :func:`delta`.

    >>> print(Delta(Token("a")))
    δ(a)
    """

    arg: Expr
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_exprs((self.arg,), "Delta.arg")
        self._init_hash()

    def _children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def __reduce__(self) -> tuple[object, ...]:
        return (Delta, (self.arg,))


@dataclass(frozen=True, slots=True, eq=False)
class BlackBox(Expr):
    """The p-node of a black-box function; its result derives from all ``args``.

    >>> print(BlackBox("calcBid", (Token("a"), Token("b"))))
    calcBid(a, b)
    """

    name: str
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SemiringError(
                f"expected a non-empty string black-box name; found {self.name!r}. "
                f"Fix: name the function, e.g. black_box('calcBid', t1, t2)."
            )
        object.__setattr__(self, "args", _check_exprs(self.args, "BlackBox.args"))
        self._init_hash()

    def _children(self) -> tuple[Expr, ...]:
        return self.args

    def _payload(self) -> object:
        return self.name

    def __reduce__(self) -> tuple[object, ...]:
        return (BlackBox, (self.name, self.args))


@dataclass(frozen=True, slots=True, eq=False)
class Monus(Expr):
    """The m-semiring difference ``left ⊖ right`` (Geerts and Poggi 2010; ProvSQL's monus
    gate): a tuple derived by ``left`` as long as ``right`` does not hold. Prefer :func:`monus`.

    >>> print(Monus(Token("a"), Delta(Token("b"))))
    a ⊖ δ(b)
    """

    left: Expr
    right: Expr
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_exprs((self.left, self.right), "Monus arguments")
        self._init_hash()

    def _children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def __reduce__(self) -> tuple[object, ...]:
        return (Monus, (self.left, self.right))


def _coerce(x: object) -> Expr:
    if isinstance(x, Expr):
        return x
    if type(x) is int and x in (0, 1):
        return ZERO if x == 0 else ONE
    raise SemiringError(
        f"expected an Expr (or the integers 0/1); found {type(x).__name__} {x!r}. "
        f"Fix: wrap base tuples as Token('name') and use ZERO/ONE for constants."
    )


def _flatten(es: tuple[object, ...], kind: type[Expr]) -> list[Expr]:
    out: list[Expr] = []
    stack = [_coerce(e) for e in reversed(es)]
    while stack:
        e = stack.pop()
        if type(e) is kind:
            stack.extend(reversed(e._children()))
        else:
            out.append(e)
    return out


def plus(*es: Expr) -> Expr:
    """Sum of expressions: flattens nested sums, drops ZERO, no other simplification.

    >>> a, b = Token("a"), Token("b")
    >>> print(plus(a, ZERO, plus(b, a)))
    a + b + a
    >>> plus() is ZERO, plus(a) is a
    (True, True)
    """
    terms = [e for e in _flatten(es, Sum) if not isinstance(e, _Zero)]
    if not terms:
        return ZERO
    if len(terms) == 1:
        return terms[0]
    return Sum(tuple(terms))


def times(*es: Expr) -> Expr:
    """Product of expressions: flattens, drops ONE, is ZERO if any factor is ZERO.

    >>> a, b = Token("a"), Token("b")
    >>> print(times(a, ONE, times(b, a)))
    a·b·a
    >>> times(a, ZERO) is ZERO, times() is ONE
    (True, True)
    """
    factors = _flatten(es, Product)
    if any(isinstance(f, _Zero) for f in factors):
        return ZERO
    factors = [f for f in factors if not isinstance(f, _One)]
    if not factors:
        return ONE
    if len(factors) == 1:
        return factors[0]
    return Product(tuple(factors))


def delta(e: Expr) -> Expr:
    """``δ(e)``, with δ(ZERO) = ZERO and δ(ONE) = ONE (no idempotence rewrite).

    >>> str(delta(delta(Token("a")))), delta(ONE) is ONE, delta(ZERO) is ZERO
    ('δ(δ(a))', True, True)
    """
    e = _coerce(e)
    if isinstance(e, (_Zero, _One)):
        return e
    return Delta(e)


def monus(a: Expr, b: Expr) -> Expr:
    """``a ⊖ b``, with ``a ⊖ 0 = a`` and ``0 ⊖ b = 0`` (laws of every m-semiring); nothing else
    is simplified.

    >>> a, b = Token("a"), Token("b")
    >>> print(monus(a * b, delta(b)))
    a·b ⊖ δ(b)
    >>> monus(a, ZERO) is a, monus(ZERO, a) is ZERO
    (True, True)
    """
    a, b = _coerce(a), _coerce(b)
    if isinstance(b, _Zero) or isinstance(a, _Zero):
        return a
    return Monus(a, b)


def black_box(name: str, *es: Expr) -> Expr:
    """The p-node of black-box function ``name`` applied to ``es`` (kept as is).

    >>> print(black_box("calcBid", Token("a"), Token("b")))
    calcBid(a, b)
    """
    return BlackBox(name, tuple(_coerce(e) for e in es))


def _paren(s: str, node: Expr, wrap: tuple[type[Expr], ...]) -> str:
    return f"({s})" if isinstance(node, wrap) else s


def _str_node(node: Expr, kids: list[str]) -> str:
    if isinstance(node, Token):
        return node.name
    if isinstance(node, _Zero):
        return "0"
    if isinstance(node, _One):
        return "1"
    if isinstance(node, Sum):
        return " + ".join(kids) if kids else "0"
    if isinstance(node, Product):
        parts = [_paren(s, c, (Sum, Monus)) for s, c in zip(kids, node.factors)]
        return "·".join(parts) if parts else "1"
    if isinstance(node, Delta):
        return f"δ({kids[0]})"
    if isinstance(node, Monus):
        return f"{_paren(kids[0], node.left, (Sum, Monus))} ⊖ {_paren(kids[1], node.right, (Sum, Monus))}"
    assert isinstance(node, BlackBox)
    return f"{node.name}({', '.join(kids)})"


def _len_node(node: Expr, kids: list[int]) -> int:
    """The length of ``_str_node(node, texts)`` given the lengths of the children's texts."""
    if isinstance(node, Token):
        return len(node.name)
    if isinstance(node, (_Zero, _One)):
        return 1
    if isinstance(node, Sum):
        return sum(kids) + 3 * (len(kids) - 1) if kids else 1
    if isinstance(node, Product):
        if not kids:
            return 1
        return sum(kids) + (len(kids) - 1) + 2 * sum(isinstance(c, (Sum, Monus)) for c in node.factors)
    if isinstance(node, Delta):
        return kids[0] + 3
    if isinstance(node, Monus):
        return kids[0] + kids[1] + 3 + 2 * (isinstance(node.left, (Sum, Monus)) + isinstance(node.right, (Sum, Monus)))
    assert isinstance(node, BlackBox)
    return len(node.name) + 2 + sum(kids) + 2 * max(len(kids) - 1, 0)


def check_text_length(exprs: list[Expr], extra: int = 0) -> int:
    """The length of the texts of ``exprs`` together (plus ``extra``); :class:`SemiringError` if
    it is over :data:`MAX_TEXT`. Computed over the DAG, never by writing the text.

    >>> e = t = Token("t")
    >>> for _ in range(60):   # a DAG of 121 nodes whose text has over 2**60 tokens
    ...     s = plus(e, t)
    ...     e = times(s, s)
    >>> check_text_length([Token("abc")])
    3
    >>> check_text_length([e])
    Traceback (most recent call last):
    ...
    lipspark.errors.SemiringError: expected an expression text of at most 50000000 characters; this one would have 16140901064495857651, because the expression writes shared sub-expressions out at each use. Fix: evaluate it in a semiring (counting, boolean...), read its graph (subgraph), or zoom out the modules inside
    """
    total = sum(fold_many(exprs, _len_node)) + extra
    if total > MAX_TEXT:
        raise SemiringError(
            f"expected an expression text of at most {MAX_TEXT} characters; this one would have {total}, because "
            f"the expression writes shared sub-expressions out at each use. Fix: evaluate it in a semiring "
            f"(counting, boolean...), read its graph (subgraph), or zoom out the modules inside")
    return total


class Prefixes:
    """The first ``k`` characters of expressions' texts, memoized across calls: a sort key for
    building canonical expressions bottom-up that costs O(k) per node whatever the text's size
    (sorting by the whole text is exponential where sub-expressions are shared).

    >>> pre = Prefixes(5)
    >>> a, b = Token("alpha"), Token("beta")
    >>> pre(plus(a, b)), pre(times(plus(a, b), b)), pre(a)
    ('alpha', '(alph', 'alpha')
    """

    def __init__(self, k: int = 4096) -> None:
        self.k = k
        self._memo: dict[int, tuple[Expr, str]] = {}  # id -> (the object, kept alive; its prefix)

    def __call__(self, e: Expr) -> str:
        memo, k = self._memo, self.k
        stack: list[tuple[Expr, bool]] = [(e, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in memo:
                continue
            kids = node._children()
            if kids and not expanded:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(kids) if id(c) not in memo)
                continue
            texts: list[str] = []
            if isinstance(node, (Sum, Product, BlackBox)):
                n = 0
                for c in kids:  # the children after the first k characters are cut anyway
                    texts.append(memo[id(c)][1])
                    n += len(texts[-1]) + 1
                    if n > k:
                        break
            else:
                texts = [memo[id(c)][1] for c in kids]
            memo[id(node)] = (node, _str_node(node, texts)[:k])
        return memo[id(e)][1]
