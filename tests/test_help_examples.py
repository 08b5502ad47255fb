"""The ``--help`` texts' examples run as written against the graph ``make demo`` writes (slow:
``make test-slow``). A file of their own beside tests/test_examples.py, so that the two workers of
the slow suite (``--dist loadfile``) run them at the same time as the documents' examples: each
file takes a quarter of an hour on two cores."""
from __future__ import annotations

import pytest

from tests.test_examples import Runner, _report, help_examples, workdir  # noqa: F401  (workdir: the fixture)


@pytest.mark.slow
def test_help_examples_run_as_written(workdir, tmp_path):
    runner = Runner(workdir, str(tmp_path / "scratch"))
    examples = help_examples()
    problems = []
    for where, cmd in examples.commands:
        why, _ = runner.sh(where, cmd)
        problems += [f"{where}: `{cmd}`: {why}"] if why else []
    for where, text in examples.statements:
        why, _ = runner.query(where, text)
        problems += [f"{where}: `{text}`: {why}"] if why else []
    _report(runner, problems)
