"""Reading the integrity checks' verdicts a store's executions kept (each one's ``checks.json``).

An execution of a workflow without checks has no ``checks.json``; one with checks always has one
(:mod:`lipspark.workflow.checks` writes it with the execution, atomically with its commit).

>>> import json, os, tempfile
>>> from lipspark.vocabulary.checks import CheckResult
>>> root = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(root, "executions", "000001"))
>>> meta = {"format": "lipspark-store", "version": 1, "workflow": "w", "provenance": True, "next_segment": 3, "initial": {},
...         "executions": [{"n": 1, "dir": "executions/000001", "inputs": {}, "outputs": {}, "state": {}}]}
>>> with open(os.path.join(root, "store.json"), "w") as fh:
...     json.dump(meta, fh)
>>> r = CheckResult("m", "m", "Out", "positive", "row", "warn", "(n > 0)", False, 1, (3,), "executions/000001/outputs/m/Out")
>>> with open(os.path.join(root, "executions", "000001", "checks.json"), "w") as fh:
...     json.dump({"format": "lipspark-checks", "version": 1, "execution": 1, "checks": [r.to_json()]}, fh)
>>> read_checks(Store.open(root)) == [(1, r)]
True
"""
from __future__ import annotations

import os

from lipspark.errors import StoreError
from lipspark.store.manifest import read_json
from lipspark.store.store import Store
from lipspark.vocabulary.checks import CHECKS_FILE, CHECKS_FORMAT, CHECKS_VERSION, CheckResult

__all__ = ["read_checks"]


def read_checks(store: Store) -> list[tuple[int, CheckResult]]:
    """Every verdict the store's executions kept, as ``(execution, result)`` in execution order."""
    out: list[tuple[int, CheckResult]] = []
    for e in store.executions:
        path = os.path.join(store.root, e["dir"], CHECKS_FILE)
        if not os.path.exists(path):
            continue
        doc = read_json(path, f"the checks of execution {e['n']}")
        if not isinstance(doc, dict) or doc.get("format") != CHECKS_FORMAT or doc.get("version") != CHECKS_VERSION:
            raise StoreError(f"{path} is not lipspark checks version {CHECKS_VERSION}; `lipspark check {store.root}` tells what is damaged")
        out += [(int(e["n"]), CheckResult.from_json(r)) for r in doc.get("checks", [])]
    return out
