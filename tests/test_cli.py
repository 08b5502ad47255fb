"""The ``lipspark`` command's own behaviour (each subcommand is tested beside what it runs)."""
from __future__ import annotations

import subprocess
import sys


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
