"""``lipspark shell G`` (issue 19 item 4): one graph open for a session of queries.

Completion and the line-by-line session run on the hand-built dealership (no Spark); the command
itself, piped and at a terminal, on a copy of the car dealership store the suite captures once.
"""
from __future__ import annotations

import io
import os
import select
import shutil
import subprocess
import sys
import time

import pytest

from lipspark.graph.index import GraphIndex
from lipspark.query.engine import Session
from lipspark.shell import STATEMENTS, Shell, complete, graph_names, help_text
from tests.query.graphs import dealership

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


@pytest.fixture(scope="module")
def names():
    return graph_names(dealership().index)


def test_the_graph_offers_its_modules_relations_and_columns(names):
    assert names.modules == ("agg", "dealer1")
    assert names.relations == ("BestBid", "Bids", "Cars", "Requests")
    assert names.columns["Cars"] == ("CarId", "Model")  # from the state nodes: the tokens show only CarId
    assert names.values == ("Amount",) and names.executions == (1, 2)
    assert "counting" in names.semirings and "probability" in names.semirings


@pytest.mark.parametrize("line, expected", [
    ("", ["zoomout", "zoomin", "reset", "delete", "update", "subgraph", "ancestors", "descendants", "depends", "polynomial",
          "evaluate", "shapley", "banzhaf", "show", "diff", "where", "culprits", "sample", "checks", "blame", "help", "quit", "exit"]),
    ("de", ["delete", "descendants", "depends"]),
    ("ZOOM", ["ZOOMOUT", "ZOOMIN"]),
    ("zoomout ", ["agg", "dealer1"]),
    ("zoomout agg, d", ["dealer1"]),
    ("zoomout agg; sh", ["shapley", "show"]),  # a new statement after ;
    ("show ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("show state ", ["BestBid", "Bids", "Cars", "Requests"]),
    ("show state ca", ["Cars"]),  # names are case-sensitive; a miss falls back to any case
    ("show state `Be", ["`BestBid`"]),
    ("show state Cars(", ["CarId", "Model"]),
    ('show state Cars(CarId = "C1", M', ["Model"]),
    ("show state Cars(CarId = ", []),
    ("show state Cars in ", ["agg", "dealer1"]),
    ("show invocation ", ["agg", "dealer1"]),
    ("show invocation agg ", ["execution"]),
    ("show output Bids in dealer1 execution ", ["1", "2"]),
    ("show value ", ["Amount"]),
    ("show value Amount of ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("depends output Bids in dealer1 ", ["execution", "on"]),
    ('delete tuple Cars(CarId = "C1") in dealer1 ', ["execution", "recompute"]),
    ("update ", ["tuple"]),
    ('update tuple Cars(CarId = "C1") ', ["in", "of", "execution", "set"]),
    ('update tuple Cars(CarId = "C1") set ', ["CarId", "Model"]),
    ('update tuple Cars(CarId = "C1") set Model = "x", ', ["CarId", "Model"]),
    ('update tuple Cars(CarId = "C1") set Model = "x" ', ["in"]),
    ("depends output Bids on tuple Cars, ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("polynomial output BestBid of agg ", ["execution", "expanded"]),
    ("evaluate c", ["counting"]),
    ("evaluate boolean ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("evaluate boolean output Bids given r", ["relation"]),
    ("evaluate boolean output Bids given relation C", ["Cars"]),
    ("shapley ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("banzhaf output Bids in dealer1 execution 1 ", ["over", "given", "samples", "seed"]),
    ("shapley output Bids over ", ["tuples", "invocations"]),
    ("shapley output Bids over tuples, i", ["invocations"]),
    ("shapley output Bids over tuples given ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value", "relation"]),
    ('show token "Ca', []),
    ("show # a comment", []),
    ("zoomout agg,  -- a comment\n", ["agg", "dealer1"]),  # the statement goes on after the comment's line
    ("diff ", ["input", "state", "output"]),
    ("diff output ", ["BestBid", "Bids", "Cars", "Requests"]),
    ("diff output Bids of ", ["agg", "dealer1"]),
    ("diff output Bids of dealer1 ", ["execution"]),
    ("diff output Bids of dealer1 execution 1, ", ["execution"]),
    ("diff output Bids of dealer1 execution 1, execution ", ["1", "2"]),
    ("diff state Cars of dealer1 execution 1, execution 2 ", ["on"]),
    ("diff state Cars of dealer1 execution 1, execution 2 on ", ["CarId", "Model"]),
    ("diff state Cars of dealer1 execution 1, execution 2 on CarId, M", ["Model"]),
    ("where ", ["column"]),
    ("where column ", ["Amount", "BidId", "CarId", "Model", "UserId"]),  # every column of the graph's relations
    ("where column CarId ", ["of"]),
    ("where column CarId of ", ["tuple", "input", "state", "output", "invocation", "node", "token", "value"]),
    ("where column CarId of output Bids ", ["in", "of", "execution"]),
])
def test_tab_completes_keywords_and_names_where_they_fit(names, line, expected):
    assert complete(line, names) == expected


def _shell():
    out, err = io.StringIO(), io.StringIO()
    return Shell(Session(dealership().index), out=out, err=err), out, err


def test_an_error_is_one_report_and_the_session_goes_on():
    shell, out, err = _shell()
    code = shell.run(["zoomout agg", "show invocation nowhere", "zoomout dealer1 foo", "zoomin agg", "reset"])
    assert code == 2  # a statement failed: a script can tell
    lines = err.getvalue().splitlines()
    assert lines[0] == "lipspark: error: invocation nowhere (line 1, column 6): no module 'nowhere' (modules: agg, dealer1)"
    assert lines[1].startswith("lipspark: error: <stdin>:1:17: syntax error: unexpected 'foo'")
    assert len(lines) == 4  # the syntax error shows its line and a caret, as lipspark query does
    answers = [block.splitlines()[0] for block in out.getvalue().strip().split("\n\n")]
    assert answers == ["zoomout agg", "zoomin agg", "reset"]  # the view kept the zoomout through the errors


def test_a_statement_goes_on_where_it_cannot_end():
    shell, out, err = _shell()
    assert shell.run(["zoomout agg,", "   -- which others?", "dealer1", "show state Cars in dealer1"]) == 2
    assert out.getvalue().startswith("zoomout agg, dealer1\n")
    assert "hidden by zoomout dealer1" in err.getvalue()  # the view kept the zoomout
    shell, out, err = _shell()
    assert shell.run(["delete"]) == 2  # the input ends inside a statement: reported, not dropped
    assert "unexpected end of the query" in err.getvalue()


def test_help_lists_every_statement_with_its_example():
    shell, out, _ = _shell()
    assert shell.run(["help", "help zoomin", "help nosuch", "quit", "reset"]) == 0
    text = out.getvalue()
    for s in STATEMENTS:
        assert f"  {s.syntax}\n" in text and f"e.g. {s.example}\n" in text
    assert help_text("ZOOMIN") in text and "no statement 'nosuch'" in text
    assert "back to the captured graph" not in text  # quit left before reset


@pytest.fixture()
def store(car_runs, tmp_path):
    """A copy of the car dealership store."""
    root = str(tmp_path / "store")
    shutil.copytree(car_runs[0].store, root, ignore=shutil.ignore_patterns("index"))
    return root


def _lipspark(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lipspark.cli", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300)


def test_a_piped_session_answers_as_lipspark_query(store, tmp_path):
    a, b = "zoomout dealer2, dealer3, dealer4", 'delete tuple Requests(BidId = "B1")'
    history = str(tmp_path / "history")
    piped = _lipspark("shell", store, stdin=f"{a}\n\n# a comment\n{b}\n", env={"LIPSPARK_HISTORY": history})
    query = _lipspark("query", store, "-e", f"{a}; {b}")
    assert (piped.returncode, piped.stderr) == (0, "")
    assert piped.stdout == query.stdout and "zoomed out dealer2" in piped.stdout
    assert not os.path.exists(history)  # only a session at a terminal keeps one
    failing = _lipspark("shell", store, stdin="show invocation nowhere\nreset\n")
    assert failing.returncode == 2 and failing.stdout.startswith("reset\n")
    assert failing.stderr.count("\n") == 1 and failing.stderr.startswith("lipspark: error: invocation nowhere")


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_bad_graph_path_is_one_line_and_writes_nothing(tmp_path, where):
    graph = tmp_path / "graph"
    if where == "empty":
        graph.mkdir()
    history = tmp_path / "history"
    proc = _lipspark("shell", str(graph), stdin="reset\n", env={"LIPSPARK_HISTORY": str(history)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("lipspark: error: no graph at ") and proc.stderr.count("\n") == 1, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == (["graph"] if where == "empty" else [])
    assert where == "missing" or list(graph.iterdir()) == []


def test_a_session_imports_neither_spark_nor_sympy(store):
    """As `lipspark query`: the graph is mapped, and a statement imports what it needs (a
    lineage needs no sympy)."""
    GraphIndex.load(store)  # the first open builds the index (with pandas); a session maps it
    code = ("import io, sys, contextlib; from lipspark.cli import main\n"
            "sys.stdin = io.StringIO('ancestors output Bids1 of dealer1 execution 1\\nevaluate lineage output BestBid of agg execution 1\\n')\n"
            "with contextlib.redirect_stdout(io.StringIO()): code = main(['shell', sys.argv[1]])\n"
            "print(code, sorted(m for m in ('pandas', 'pyarrow', 'sympy', 'pyspark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, store], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "0 []"


class _Terminal:
    """``lipspark shell`` on a pseudo-terminal: what a person types, what the screen shows."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        import pty

        try:
            self.master, slave = pty.openpty()
        except OSError as err:  # a container without /dev/ptmx
            pytest.skip(f"no pseudo-terminal here: {err}")
        self.proc = subprocess.Popen([sys.executable, "-m", "lipspark.cli", *args], stdin=slave, stdout=slave, stderr=slave,
                                     cwd=ROOT, env={**os.environ, "INPUTRC": os.devnull, "TERM": "dumb", **env})
        os.close(slave)
        self.seen = b""

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, text: str, timeout: float = 120) -> str:
        """Everything shown up to and including ``text``."""
        end = time.monotonic() + timeout
        while text.encode() not in self.seen:
            ready, _, _ = select.select([self.master], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                raise AssertionError(f"the screen never showed {text!r}; it shows {self.seen[-400:]!r}")
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:  # the shell left
                raise AssertionError(f"the shell left before showing {text!r}: {self.seen[-400:]!r}") from None
        i = self.seen.index(text.encode()) + len(text)
        shown, self.seen = self.seen[:i], self.seen[i:]
        return shown.decode(errors="replace")

    def close(self) -> int:
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return code


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_at_a_terminal_tab_completes_and_history_is_kept(store, tmp_path):
    pytest.importorskip("readline")
    history = tmp_path / "history"
    history.write_text("show invocation agg\n")  # an earlier session's
    term = _Terminal(["shell", store], {"LIPSPARK_HISTORY": str(history)})
    try:
        assert "One statement a line" in term.expect("lipspark> ")
        term.type("zoomo\t")
        term.expect("zoomout ")
        term.type("dealer\t")  # four dealers: nothing to add yet
        term.type("2, deal\t")
        term.type("3\n")
        assert "zoomed out dealer2, dealer3" in term.expect("lipspark> ")
        term.type("show state Cars(Mo\t")
        term.expect("Model ")
        term.type('= "Audi A6") in dealer1 execution 1\n')
        assert "state Cars(" in term.expect("lipspark> ")
        term.type("show invocation nowhere\n")
        assert "lipspark: error: invocation nowhere" in term.expect("lipspark> ")
        term.type("polynomial output BestBid of agg execution 1 \t")  # the one clause left
        term.expect("expanded ")
        term.type("\n")
        term.expect("lipspark> ")
        term.type("\x04")  # Ctrl-D
    finally:
        code = term.close()
    assert code == 0
    lines = history.read_text().splitlines()
    assert lines[0] == "show invocation agg" and "zoomout dealer2, dealer3" in lines[1]
    assert lines[-1] == "polynomial output BestBid of agg execution 1 expanded "
