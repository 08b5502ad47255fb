"""Names of the hidden columns lipspark keeps next to the user's data, in annotated frames and in
stored relations (part of the store format: readers find factors and value nodes by these names).

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
