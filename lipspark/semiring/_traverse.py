"""Iterative, memoizing traversal of provenance expressions (no Python recursion).

Expressions can be very deep (a long chain of unions) and share sub-objects (a DAG whose
tree size is exponential), so every whole-expression computation in
:mod:`lipspark.semiring` goes through :func:`fold_many`: an explicit-stack post-order walk
that computes each *structurally distinct* sub-expression exactly once.

>>> from lipspark.semiring.expr import Token, plus, times
>>> a, b = Token("a"), Token("b")
>>> calls = []
>>> fold_many([plus(a, times(a, b))], lambda node, kids: calls.append(node) or len(calls))
[4]
>>> len(calls)   # a, b, a·b, a + a·b: the second `a` is not recomputed
4
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from lipspark.semiring.expr import Expr

__all__ = ["fold_many"]

R = TypeVar("R")


def fold_many(roots: Iterable[Expr], combine: Callable[[Expr, list[R]], R]) -> list[R]:
    """Fold ``combine`` bottom-up over several expressions with one shared memo.

    Parameters
    ----------
    roots : Iterable[Expr]
        The expressions to fold.
    combine : Callable[[Expr, list[R]], R]
        Called once per structurally distinct node with the node and the results of its
        children (in order); leaves get an empty list.

    Returns
    -------
    list[R]
        One result per root, in order.

    Notes
    -----
    Nodes are identified first by ``id`` (identical sub-objects), then by their *shape*:
    ``(type, payload, canonical ids of children)``. Shapes are shallow, so identifying
    structurally equal sub-expressions costs O(#children) per node, never a deep compare.

    Examples
    --------
    >>> from lipspark.semiring.expr import Sum, Token
    >>> t = Token("t")
    >>> e = t
    >>> for _ in range(100):   # tree size 2**100, DAG size 101
    ...     e = Sum((e, e))
    >>> fold_many([e], lambda node, kids: sum(kids) if kids else 1)[0] == 2**100
    True
    """
    by_id: dict[int, int] = {}
    by_shape: dict[tuple[object, ...], int] = {}
    results: list[R] = []
    root_list = list(roots)
    out: list[R] = []
    for root in root_list:
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in by_id:
                continue
            children: Sequence[Expr] = node._children()
            if not expanded and children:
                stack.append((node, True))
                for child in reversed(children):
                    if id(child) not in by_id:
                        stack.append((child, False))
                continue
            kid_idx = tuple(by_id[id(c)] for c in children)
            shape = (type(node), node._payload(), kid_idx)
            idx = by_shape.get(shape)
            if idx is None:
                idx = len(results)
                results.append(combine(node, [results[i] for i in kid_idx]))
                by_shape[shape] = idx
            by_id[id(node)] = idx
        out.append(results[by_id[id(root)]])
    return out
