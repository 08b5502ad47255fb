"""Atomic file output for the exporters: write a temporary file next to the target, then rename.

A failed export (an error while building or serializing the document, an interrupt) leaves no
file behind and does not touch an existing file of the same name.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> with atomic_open(os.path.join(d, "out.txt"), "w") as fh:
...     _ = fh.write("done")
>>> os.listdir(d)
['out.txt']
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from lipspark.errors import LipsparkError

__all__ = ["atomic_open", "check_size"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file in ``path``'s directory; on success rename it to ``path``.

    Parameters
    ----------
    path
        The file to write (replaced atomically if it exists).
    mode
        ``"w"`` (UTF-8 text) or ``"wb"``.
    """
    target = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        raise LipsparkError(f"cannot write {os.fspath(path)}: it is a directory; give a file name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise LipsparkError(f"cannot write {os.fspath(path)}: {err.strerror} ({directory}); does the directory exist and is it writable?") from err
    try:
        with (os.fdopen(fd, mode) if "b" in mode else os.fdopen(fd, mode, encoding="utf-8")) as fh:
            yield fh
        # mkstemp creates the file 0600; give it the permissions a plain open() would have
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as err:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise LipsparkError(f"cannot write {os.fspath(path)}: {err.strerror or err}") from err
        raise


def check_size(n: int, max_nodes: int | None, what: str) -> None:
    """Refuse to export more than ``max_nodes`` nodes (``None``: no limit)."""
    if max_nodes is not None and n > max_nodes:
        raise LipsparkError(
            f"the graph has {n:,} nodes, more than max_nodes={max_nodes:,} for a {what} export "
            "(the whole document is built in memory). Zoom out modules (`zoomout M`) or select a "
            "subgraph (`ancestors ...`, `subgraph ...`) and export that, e.g. "
            "`lipspark export GRAPH -e \"zoomout M; ancestors output R of M\" ...`; "
            "or raise the limit (max_nodes=None, --max-nodes 0 for no limit)")
