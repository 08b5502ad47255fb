"""The user's own cache directory for lipspark: what is worth keeping between processes and can
always be recomputed (the query grammar's analysis, the verdicts of key checks).

>>> import os, tempfile
>>> os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp()
>>> d = cache_dir()
>>> d is not None and d.endswith(os.path.join("", "lipspark")) and oct(os.stat(d).st_mode & 0o777)
'0o700'
>>> del os.environ["XDG_CACHE_HOME"]
"""
from __future__ import annotations

import os

__all__ = ["cache_dir"]


def cache_dir() -> str | None:
    """``$XDG_CACHE_HOME/lipspark`` (else ``~/.cache/lipspark``), made with mode 0700; ``None``
    when it cannot be made, or is not the user's own and private (what is cached there is read
    back as trusted: a directory others can write must not be used)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "lipspark")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
    except OSError:
        return None
    return d
