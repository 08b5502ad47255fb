"""`lipspark check`: every file a store names is verified; damage is named in one line with its fix."""
from __future__ import annotations

import os
import shutil

import pytest

from lipspark.cli import main
from lipspark.store import Store
from lipspark.store.check import check_store
from tests.store.test_store import _tree
from tests.util import damaged, stores_failing_check


@pytest.fixture
def copy(ledger_runs, tmp_path):
    root = str(tmp_path / "s")
    shutil.copytree(ledger_runs[0], root)  # copy2: sizes and modification times kept
    return root


def _a_file(root: str, under: str) -> str:
    for d, _, names in sorted(os.walk(os.path.join(root, under))):
        for n in sorted(names):
            if n.endswith(".parquet"):
                return os.path.join(d, n)
    raise AssertionError(f"no Parquet file under {under}")


def test_an_intact_store_passes_with_every_file_checksummed(copy, capsys):
    report = check_store(copy)
    assert report.ok and report.size_only == 0
    store = Store.open(copy)
    relation_dirs = {os.path.dirname(f["path"]) for e in store.executions for k in ("inputs", "outputs", "state")
                     for rels in e[k].values() for d in rels.values() for f in d["files"]}
    assert report.verified > len(relation_dirs) and any(d.endswith("/inputs/intake/Deposits") for d in relation_dirs)
    before = _tree(copy)
    assert main(["check", copy]) == 0
    assert "all intact" in capsys.readouterr().out and _tree(copy) == before  # reads only


@pytest.mark.parametrize("under, damage, expected", [
    ("executions/000002/outputs", "truncate", "truncated or rewritten"),
    ("executions/000002/outputs", "flip", "checksum differs"),
    ("executions/000001/graph", "flip", "checksum differs"),
    ("executions/000003/state", "delete", "missing"),
    ("initial", "flip", "checksum differs"),
])
def test_damage_is_named_with_its_fix(copy, capsys, under, damage, expected):
    path = _a_file(damaged(copy), under)
    st = os.stat(path)
    if damage == "truncate":
        os.truncate(path, st.st_size // 2)
    elif damage == "delete":
        os.remove(path)
    else:  # one bit flipped, size and time kept: only the checksum sees it
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0x10
        open(path, "wb").write(bytes(data))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert main(["check", copy]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(path) and expected in lines[0] and "lipspark run" in lines[0]
    assert "1 problem(s)" in lines[1]


def test_a_query_on_a_damaged_graph_says_so_in_one_line(copy, capsys):
    path = _a_file(damaged(copy), "executions/000002/graph")
    os.truncate(path, 100)
    assert main(["query", copy, "-e", "ancestors output Changed of ledger execution 2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lipspark check" in err[0]


def test_a_damaged_replay_names_materialize(spark, tmp_path, capsys):
    from lipspark.workflow import materialize, run
    from tests.workflow.test_execution import LEDGER

    d = str(tmp_path / "deferred")
    run(LEDGER, graph_dir=d, spark=spark, executions=1, capture="deferred")
    materialize(d, spark=spark)
    assert check_store(d).ok
    os.remove(_a_file(damaged(d), "provenance/executions/000001/graph"))
    report = check_store(d)
    assert len(report.problems) == 1 and f"run `lipspark materialize {os.path.abspath(d)}`" in report.problems[0]


def test_the_suite_checks_every_store_it_writes(copy, tmp_path):
    """What tests/conftest.py runs at the end of the session: a damaged store is reported unless
    its test declared the damage."""
    assert stores_failing_check(tmp_path) == []
    os.truncate(_a_file(copy, "executions/000002/outputs"), 10)
    problems = stores_failing_check(tmp_path)
    assert len(problems) == 1 and problems[0].startswith(copy)
    damaged(copy)
    assert stores_failing_check(tmp_path) == []
