"""The ``lipspark`` command's own behaviour (each subcommand is tested beside what it runs)."""
from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback():
    """`lipspark query G ... | head -1`: the output outlives its reader, as with any Unix filter."""
    code = ("import lipspark.cli as cli\n"
            "def main(argv=None):\n"
            "    for _ in range(10_000):\n"
            "        print('x' * 200)\n"  # 2 MB, far beyond a pipe's buffer
            "    return 0\n"
            "cli.main = main\n"
            "cli.console()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # the reader goes away with most of the answer unread
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == "", err


@pytest.mark.slow  # two JVMs
def test_a_run_prints_lipsparks_lines_and_spark_only_with_verbose(tmp_path):
    """Spark's start-up notes and warnings stay out of a run's output (its errors would not);
    `--verbose` shows them. The run ends with its module-by-module table."""
    import os

    from tests.workflow.test_execution import LEDGER

    root = os.path.join(os.path.dirname(__file__), "..")
    outs = {}
    for flag in ("--quiet", "--verbose"):
        proc = subprocess.run([sys.executable, "-m", "lipspark.cli", "run", LEDGER, "--graph", str(tmp_path / flag.strip("-")),
                               "--executions", "1", "--quiet", *([flag] if flag == "--verbose" else [])],
                              capture_output=True, text=True, cwd=root, timeout=600)
        assert proc.returncode == 0, proc.stderr
        outs[flag] = proc
    quiet = [ln for ln in outs["--quiet"].stderr.splitlines() if ln.strip() and "incubator modules" not in ln]  # the JVM's own line
    assert quiet == [], quiet
    assert "module by module:" in outs["--quiet"].stdout
    assert "log4j" in outs["--verbose"].stderr or "log level" in outs["--verbose"].stderr
