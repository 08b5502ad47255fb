"""TPC-H base relations, generated at run time by ``tpchgen-cli`` (nothing committed).

>>> KEYS["lineitem"]
('l_orderkey', 'l_linenumber')
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

__all__ = ["TABLES", "KEYS", "generate", "Tables", "load"]

#: the eight relations, each with the key that identifies its tuples (its token label)
KEYS: dict[str, tuple[str, ...]] = {
    "lineitem": ("l_orderkey", "l_linenumber"),
    "orders": ("o_orderkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "supplier": ("s_suppkey",),
    "nation": ("n_nationkey",),
    "region": ("r_regionkey",),
}
TABLES = tuple(KEYS)


def _tool() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    found = here if os.path.exists(here) else shutil.which("tpchgen-cli")
    if not found:
        raise RuntimeError("tpchgen-cli not found; install the dev extras: pip install -e '.[dev]'")
    return found


def generate(scale: float, root: str | None = None) -> str:
    """Parquet files of the eight relations at scale factor ``scale`` under ``root`` (a cache:
    generated once per directory; a half-written directory is never reused)."""
    root = root or os.path.join(tempfile.gettempdir(), f"lipspark-tpch-sf{scale:g}")
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    os.makedirs(os.path.dirname(os.path.abspath(root)) or ".", exist_ok=True)
    work = tempfile.mkdtemp(prefix=".tpch-", dir=os.path.dirname(os.path.abspath(root)))
    subprocess.run([_tool(), "parquet", "-s", f"{scale:g}", f"--output-dir={work}"], check=True,
                   stdout=subprocess.DEVNULL)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.replace(work, root)
    open(done, "w").close()
    return root


@dataclass(frozen=True)
class Tables:
    """The eight relations as frames (plain or annotated), and the scale factor (Q11 needs it)."""

    lineitem: Any
    orders: Any
    customer: Any
    part: Any
    partsupp: Any
    supplier: Any
    nation: Any
    region: Any
    sf: float


def load(spark: Any, root: str, scale: float) -> dict[str, Any]:
    """The eight relations as plain DataFrames (cached: every query reads them several times)."""
    return {t: spark.read.parquet(os.path.join(root, f"{t}.parquet")).cache() for t in TABLES}
