"""Names of the hidden columns an annotated frame carries next to the user's data.

A row's annotation is the product of its *factor* columns ``__lp_f0 .. __lp_fK-1``: node ids
of the graph (0 stands for the semiring's 1 and is skipped). A join concatenates the factors of
both sides instead of creating a · node per row; the · node is created only where a pipeline
breaker (group-by, distinct, cogroup, black box) needs the row as one p-node. A value column
whose value is a v-node of the graph (an aggregate, a black box's result) carries that node's id
in ``__lp_v_<column>``; a nested bag (``collect_list``, ``cogroup``) carries its members' p-node
ids in ``__lp_b_<column>``.

>>> factor(2), value_col("Amount"), bag_col("Cars")
('__lp_f2', '__lp_v_Amount', '__lp_b_Cars')
>>> is_hidden("__lp_f0"), is_hidden("Model")
(True, False)
"""
from __future__ import annotations

__all__ = ["PREFIX", "factor", "value_col", "bag_col", "is_hidden"]

PREFIX = "__lp_"


def factor(i: int) -> str:
    """Name of the i-th factor column."""
    return f"{PREFIX}f{i}"


def value_col(name: str) -> str:
    """Hidden column holding the v-node id of data column ``name``."""
    return f"{PREFIX}v_{name}"


def bag_col(name: str) -> str:
    """Hidden column holding the member p-node ids of bag column ``name``."""
    return f"{PREFIX}b_{name}"


def is_hidden(name: str) -> bool:
    """Whether a column name belongs to lipspark rather than to the user."""
    return name.startswith(PREFIX)
