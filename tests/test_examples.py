"""Examples are tests: every command and code block in README.md, docs/*.md and ``lipspark --help``
runs as written against the graph ``make demo`` writes (``graphs/car_dealership-demo``).

Conventions, for whoever writes a document:

* A fenced block's info string says what it is. ``sh``: shell commands, each run; ``python``: a
  complete program (imports included), run; ``lq``: a query, its statements run in order from the
  captured graph; ``output``: what the block just before it prints, compared line by line
  (trailing blanks ignored); ``text``, ``json``: anything else (layouts, syntax, messages), never
  run. A block without an info string fails the fast test.
* ``<!-- not run: REASON -->`` on the line before a block leaves it out. It is for what cannot run
  here (a cluster URL, the test suite itself), and each use must also be listed in
  :data:`NOT_RUN`, or the fast test fails.
* ``<!-- exit status N -->`` on the line before an ``sh`` block: each of its commands must exit
  with status ``N`` (a run that fails on purpose, to show its crash report), and what they print
  on stderr — where a failing run reports — is compared with the ``output`` block too, after
  what they print on stdout (less the JVM's start-up line, ``WARNING: Using incubator modules``).
* The blocks of one document run in order in one fresh working directory holding copies of
  ``workflows/``, ``queries/`` and the demo graph as ``graphs/car_dealership-demo``: a block may
  use what an earlier block of its document wrote. Commands run with bash, with this checkout's
  ``lipspark`` first on PATH, and fail on a non-zero exit or a traceback.
* ``--help``: the lines of a help text that start with ``lipspark`` are commands, run in order in
  one working directory (top level first, then each command in turn); the lines under
  ``statements`` in ``lipspark query --help`` are queries, each run from the captured graph.

The fast tests (``make test``) read every block and help text, parse every query, and check the
graph paths and the names they use (modules, relations, columns) against the car dealership
workflow. The slow ones (``make test-slow``) make the demo graph as ``make demo`` does and run
everything.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
RUN = ("sh", "python", "lq")
KINDS = RUN + ("output", "text", "json")
#: Every example left out (``<!-- not run: ... -->``), by document: (its first line, the reason).
#: A new one fails the fast test until it is added here, so each is a decision someone made.
NOT_RUN = {
    "README.md": [
        ("make demo", "make demo writes the graph the examples read (the test session makes it the same way); make test is this suite"),
        ("lipspark run workflows/car_dealership.py --master spark://host:7077", "needs a Spark cluster"),
    ],
}
_FENCE = re.compile(r"^(`{3,})\s*([^`\s]*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->$")
_STATUS = re.compile(r"^<!--\s*exit status (\d+)\s*-->$")
#: The JVM's own line on start-up (Spark 4 asks for the vector module); not an example's output.
_JVM_NOTE = re.compile(r"^WARNING: Using incubator modules: [\w., ]+\n?", re.MULTILINE)
#: What a Spark Python worker writes on the process's stderr when Spark stops it while its task
#: reads (a task cancelled after another failed): a bare exception name, not the example's output;
#: it comes or not depending on the race (seen once in the crash walk-through of docs/debugging.md)
_WORKER_NOTE = re.compile(r"^EOFError\n", re.MULTILINE)
_GRAPH_PATH = re.compile(r"\bgraphs/[A-Za-z0-9_.-]*[A-Za-z0-9_]")


@dataclass(frozen=True)
class Block:
    """A fenced block of a document: where it is, its kind, its text, whether and why it is not
    run, and the output shown after it (an ``output`` block)."""

    doc: str
    line: int  # of the opening fence, 1-based
    kind: str
    text: str
    not_run: str | None = None
    output: str | None = None
    status: int = 0  # the exit status its commands must end with (``<!-- exit status N -->``)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``doc`` (a path under the checkout), each ``output`` block attached to
    the block before it. ``text`` replaces the file's contents (to test this collector)."""
    if text is None:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
            text = fh.read()
    lines = text.splitlines()
    found: list[Block] = []
    closed = 0  # the line after the last block's closing fence
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, kind, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{doc}:{start + 1}: the block opened here is not closed")
        i += 1
        before = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        marker, status = _NOT_RUN.match(before), _STATUS.match(before)
        block = Block(doc, start + 1, kind, "\n".join(body) + "\n", marker.group(1) if marker else None,
                      status=int(status.group(1)) if status else 0)
        if kind == "output":
            previous = found[-1] if found else None
            adjacent = previous is not None and not "".join(lines[closed:start]).strip()
            if previous is None or not adjacent or previous.kind not in RUN or previous.output is not None:
                raise AssertionError(f"{block.where}: an output block must follow the block whose output it shows")
            found[-1] = dataclasses.replace(previous, output=block.text)
        else:
            found.append(block)
        closed = i
    return found


def commands(block: Block) -> list[tuple[int, str]]:
    """The commands of an ``sh`` block with their line numbers, as bash reads them: lines joined
    across ``\\`` continuations and open quotes, blank and comment-only lines left out."""
    out: list[tuple[int, str]] = []
    pending, first = "", 0
    for k, line in enumerate(block.text.splitlines()):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            first = block.line + 1 + k
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        pending += line
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on on the next line
            pending += "\n"
            continue
        out.append((first, pending))
        pending = ""
    assert not pending, f"{block.where}: the last command does not end (a continuation or an open quote)"
    return out


# ---- the help texts ----------------------------------------------------------------------


@dataclass(frozen=True)
class HelpExamples:
    """What the help texts show: commands (in order: top level, then each command) and the
    query statements of ``lipspark query --help``, each with the help it is in."""

    commands: list[tuple[str, str]]
    statements: list[tuple[str, str]]
    texts: dict[str, str]


def help_examples() -> HelpExamples:
    from lipspark.cli import build_parser

    parser = build_parser()
    texts = {"lipspark --help": parser.format_help()}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        texts[f"lipspark {name} --help"] = p.format_help()
    cmds, stmts = [], []
    for where, text in texts.items():
        in_statements = False
        for line in text.splitlines():
            if not line.strip():
                in_statements = False
                continue
            if line.startswith("statements"):
                in_statements = True
                continue
            if in_statements:
                stmts.append((where, line.strip()))
            elif line.strip().startswith("lipspark ") and line.startswith("  "):
                cmds.append((where, line.strip()))
    return HelpExamples(cmds, stmts, texts)


# ---- the queries of the examples ---------------------------------------------------------


def command_queries(cmd: str) -> list[tuple[str, str]]:
    """The queries a ``lipspark query|viz|export`` command runs: ``-e`` text and ``.lq`` files
    (read from the checkout), as (source, text)."""
    words = shlex.split(cmd, comments=True)
    if len(words) < 2 or words[0] != "lipspark" or words[1] not in ("query", "viz", "export"):
        return []
    out = []
    for k, w in enumerate(words):
        if w in ("-e", "--expression") and k + 1 < len(words):
            out.append(("<-e>", words[k + 1]))
        elif w.endswith(".lq") and words[k - 1] not in ("-o", "--output"):
            with open(os.path.join(ROOT, w), encoding="utf-8") as fh:
                out.append((w, fh.read()))
    return out


def every_query() -> Iterator[tuple[str, str]]:
    """(where, query text) of every query the examples run."""
    for doc in DOCS:
        for b in blocks(doc):
            if b.kind == "lq":
                yield b.where, b.text
            elif b.kind == "sh":
                for line, cmd in commands(b):
                    for _, q in command_queries(cmd):
                        yield f"{doc}:{line}", q
    examples = help_examples()
    for where, cmd in examples.commands:
        for _, q in command_queries(cmd):
            yield where, q
    yield from examples.statements


def _car_dealership() -> dict[str, Any]:
    """Modules, relations by kind and columns of the demo's workflow, without Spark."""
    from lipspark.demo import DEMO_PARAMS
    from lipspark.workflow import load_definition
    from lipspark.workflow.module import parse_schema

    definition = load_definition(os.path.join(ROOT, "workflows", "car_dealership.py"))
    workflow = definition.build(definition.with_params(DEMO_PARAMS))
    by_kind: dict[str, dict[str, set[str]]] = {"input": {}, "state": {}, "output": {}, "tuple": {}}
    columns: dict[str, set[str]] = {}
    for m in workflow.modules.values():
        for kind, group in (("input", m.inputs), ("state", m.state), ("output", m.outputs)):
            for rel, ddl in group.items():
                by_kind[kind].setdefault(rel, set()).add(m.name)
                columns.setdefault(rel, set()).update(n for n, _ in parse_schema(ddl))
        for rel in list(m.inputs) + list(m.state):  # base tuples: workflow inputs and initial state
            by_kind["tuple"].setdefault(rel, set()).add(m.name)
    nodes = {n.id: n.module for n in workflow.nodes.values()}  # `in NODE` names the module the node runs
    return {"modules": set(workflow.modules), "kinds": by_kind, "columns": columns, "nodes": nodes}


def unknown_names(stmt: Any, wf: dict[str, Any]) -> list[str]:
    """What a parsed statement names that the car dealership workflow does not have."""
    from lipspark.query import ast

    problems: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, (ast.ZoomOut, ast.ZoomIn)):
            problems.extend(f"module {m!r}" for m in node.modules if m not in wf["modules"])
        elif isinstance(node, ast.InvocationSel) and node.module not in wf["modules"] and node.module not in wf["nodes"]:
            problems.append(f"module {node.module!r}")
        elif isinstance(node, ast.Diff):
            visit(ast.TupleSel(node.kind, node.relation, node.conditions, node.module))
            if node.relation in wf["columns"]:
                problems.extend(f"column {c!r} of {node.relation}" for c in node.on if c not in wf["columns"][node.relation])
            return
        elif isinstance(node, ast.TupleSel):
            owners = wf["kinds"][node.kind].get(node.relation)
            module = wf["nodes"].get(node.module, node.module) if node.module not in wf["modules"] else node.module
            if owners is None:
                problems.append(f"{node.kind} relation {node.relation!r}")
            elif module is not None and module not in owners:
                problems.append(f"{node.kind} relation {node.relation!r} of module {node.module!r} (it is one of {', '.join(sorted(owners))})")
            else:
                problems.extend(f"column {c.column!r} of {node.relation}" for c in node.conditions
                                if c.column not in wf["columns"][node.relation])
        elif isinstance(node, ast.ValueSel) and isinstance(node.of, ast.TupleSel):
            if node.of.relation in wf["columns"] and node.column not in wf["columns"][node.of.relation]:
                problems.append(f"column {node.column!r} of {node.of.relation}")
        elif isinstance(node, ast.TokenSel) and node.label.split(":", 1)[0] not in wf["kinds"]["tuple"]:
            problems.append(f"token {node.label!r}")
        elif isinstance(node, ast.RelationRef) and node.name not in wf["kinds"]["tuple"]:
            problems.append(f"relation {node.name!r}")
        elif isinstance(node, ast.TupleColumn):
            if node.relation not in wf["kinds"]["tuple"]:
                problems.append(f"relation {node.relation!r}")
            elif node.column not in wf["columns"][node.relation]:
                problems.append(f"column {node.column!r} of {node.relation}")
        if dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                value = getattr(node, f.name)
                for item in value if isinstance(value, tuple) else (value,):
                    if dataclasses.is_dataclass(item):
                        visit(item)

    visit(stmt)
    return problems


def graphs_written(cmd: str) -> set[str]:
    """The stores a ``lipspark run`` command writes (``--graph``, else ``graphs/<workflow>``)."""
    words = shlex.split(cmd, comments=True)
    if words[:2] != ["lipspark", "run"]:
        return set()
    if "--graph" in words:
        return {os.path.normpath(words[words.index("--graph") + 1])}
    from lipspark.workflow import load_definition

    name = load_definition(os.path.join(ROOT, words[2])).name
    return {os.path.join("graphs", name + ("-plain" if "--no-provenance" in words else ""))}


def misnamed_graphs(doc_text: str, runnable: list[str]) -> list[str]:
    """Graph paths that are neither the demo graph nor one an example of the same text writes."""
    from lipspark.demo import DEMO_GRAPH

    made = {os.path.normpath(DEMO_GRAPH), os.path.join("graphs", "dealer-example")}
    for cmd in runnable:
        made |= graphs_written(cmd)
    return sorted({p for p in _GRAPH_PATH.findall(doc_text) if os.path.normpath(p) not in made})


# ---- fast tests: every make test -----------------------------------------------------------


def untagged(found: list[Block]) -> list[str]:
    return [b.where for b in found if b.kind not in KINDS]


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_says_what_it_is(doc):
    found = blocks(doc)
    assert not untagged(found), f"blocks without a known info string ({', '.join(KINDS)}): {untagged(found)}"
    assert all(b.kind in RUN for b in found if b.not_run is not None), "a not-run marker before a block that never runs"
    assert all(b.kind == "sh" for b in found if b.status), "an exit status marker before a block that is not an sh block"
    left_out = [(b.text.splitlines()[0], b.not_run) for b in found if b.not_run is not None]
    listed = NOT_RUN.get(doc, [])
    assert len(left_out) == len(listed) and all(
        line.startswith(start) and reason == why for (line, reason), (start, why) in zip(left_out, listed)
    ), f"the examples left out changed: {left_out}; list each in NOT_RUN, and say why it cannot run here"


def test_help_texts_show_examples():
    """Issue 19 item 4: the top level shows examples, and ``lipspark query --help`` one example of
    every statement of the language, on the demo graph."""
    from lipspark.query import ast
    from lipspark.query.parser import parse

    examples = help_examples()
    assert any(w == "lipspark --help" for w, _ in examples.commands)
    shown = {type(s) for _, text in examples.statements for s in parse(text)}
    every = {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.Statement) and c is not ast.Statement}
    assert every - shown == set(), "lipspark query --help shows no example of these statements"


def test_every_query_parses_and_names_what_the_workflow_has():
    from lipspark.query.parser import parse

    wf = _car_dealership()
    problems = []
    for where, text in every_query():
        for stmt in parse(text, where):
            problems += [f"{where}: `{stmt}` names {p}, which workflows/car_dealership.py does not have"
                         for p in unknown_names(stmt, wf)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS)
def test_examples_read_the_demo_graph(doc):
    """A graph path in a document is ``graphs/car_dealership-demo`` or a store an example of the
    same document writes (issue 19: ``graphs/car_dealership``, which ``make demo`` does not write)."""
    with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
        text = fh.read()
    runnable = [cmd for b in blocks(doc) if b.kind == "sh" and b.not_run is None for _, cmd in commands(b)]
    assert misnamed_graphs(text, runnable) == []


#: a zoomout's answer as documents show it, and the demo graph's size as the notebooks and the
#: shell's banner print it
_VIEW_SIZE = re.compile(r"^zoomed out ([^;\n]+); view: (\d+) nodes, (\d+) edges", re.M)
_GRAPH_SIZE = re.compile(r"(?:the demo graph|graphs/car_dealership-demo): ([\d,]+) nodes, ([\d,]+) edges")
NOTEBOOKS = [os.path.join("viz", "what_if.ipynb"), os.path.join("viz", "debugging.ipynb")]


def test_documented_sizes_are_the_demo_graphs(demo_graph):
    """Every size of the demo graph or of a zoomed-out view that README.md, docs/ or the saved
    notebooks show — in output blocks, in illustrations the slow examples do not run — is the
    size the demo graph has now: a change of the capture that adds or removes nodes fails here, in
    ``make test``, not only in the slow examples (stop 43's did)."""
    from lipspark.query import Session

    session = Session(demo_graph)
    whole = (len(session.base), session.base.num_edges)
    problems, checked = [], 0
    for doc in DOCS + NOTEBOOKS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
            text = fh.read()
        for m in _GRAPH_SIZE.finditer(text):
            checked += 1
            shown = tuple(int(x.replace(",", "")) for x in m.groups())
            if shown != whole:
                problems.append(f"{doc}: shows the demo graph with {shown} (nodes, edges), it has {whole}")
        for m in _VIEW_SIZE.finditer(text):
            checked += 1
            session.run("reset")
            summary = session.run(f"zoomout {m.group(1)}")[-1].summary
            shown = f"view: {m.group(2)} nodes, {m.group(3)} edges"
            if shown not in summary:
                problems.append(f"{doc}: zoomout {m.group(1)} shows {shown!r}, the demo graph answers {summary!r}")
    assert checked >= 10 and problems == [], (checked, problems)  # 3 graph sizes and 7 views today


def test_help_examples_read_the_demo_graph():
    examples = help_examples()
    runnable = [cmd for _, cmd in examples.commands]
    assert misnamed_graphs("\n".join(examples.texts.values()), runnable) == []


def test_files_the_help_names_exist():
    named = {(where, m) for where, text in help_examples().texts.items() for m in re.findall(r"e\.g\. ([\w./-]+\.\w+)", text)}
    assert named and [(where, path) for where, path in named if not os.path.exists(os.path.join(ROOT, path))] == []


def test_the_checks_catch_what_issue_19_found():
    """The defects issue 19 reported, fed to the fast checks (the slow test runs them)."""
    from lipspark.query.parser import parse

    assert misnamed_graphs("lipspark query graphs/car_dealership queries/what_if_car_absent.lq", []) == ["graphs/car_dealership"]
    assert misnamed_graphs("lipspark run workflows/car_dealership.py --graph graphs/plain; lipspark query graphs/plain -e 'reset'",
                           ["lipspark run workflows/car_dealership.py --graph graphs/plain"]) == []
    wf = _car_dealership()
    (stmt,) = parse("show input Bids in agg")
    assert unknown_names(stmt, wf) == ["input relation 'Bids'"]
    (stmt,) = parse("polynomial state SoldCars in agg")
    assert unknown_names(stmt, wf) == ["state relation 'SoldCars' of module 'agg' (it is one of dealer1, dealer2, dealer3, dealer4)"]
    (stmt,) = parse("evaluate security output BestBid of agg given tuple Cars.Level, tuple Bids.Amount")
    assert unknown_names(stmt, wf) == ["column 'Level' of Cars", "relation 'Bids'"]
    assert untagged(blocks("x.md", "```\nlipspark query x\n```\n")) == ["x.md:1"]
    for orphan in ("Some text.\n\n```output\n1\n```\n", "```sh\necho 1\n```\n\nSome text.\n\n```output\n1\n```\n"):
        with pytest.raises(AssertionError, match="must follow"):
            blocks("x.md", orphan)


def test_collector_reads_blocks_markers_and_outputs():
    text = ("Intro.\n\n<!-- not run: needs a cluster -->\n```sh\nlipspark run w.py \\\n    --master spark://h:7077  # here\n```\n\n"
            "```python\nprint(1)\n```\n\n```output\n1\n```\n\n```text\nlayout\n```\n")
    sh, py, txt = blocks("x.md", text)
    assert (sh.kind, sh.line, sh.not_run) == ("sh", 4, "needs a cluster")
    assert commands(sh) == [(5, "lipspark run w.py      --master spark://h:7077  # here")]
    assert (py.kind, py.output, py.not_run) == ("python", "1\n", None)
    assert (txt.kind, txt.output) == ("text", None)


def test_a_block_that_fails_on_purpose_says_its_exit_status_and_shows_its_stderr(tmp_path):
    """``<!-- exit status 1 -->``: the command must fail with that status, and its stderr (less
    the JVM's start-up line) is compared with the output shown; any other status fails it."""
    text = ("<!-- exit status 1 -->\n```sh\necho out; echo 'WARNING: Using incubator modules: jdk.incubator.vector' >&2; "
            "echo report >&2; exit 1\n```\n\n```output\nout\nreport\n```\n")
    (sh,) = blocks("x.md", text)
    assert (sh.status, sh.output) == (1, "out\nreport\n")
    runner = Runner(str(tmp_path), str(tmp_path / "scratch"))
    assert runner.block(sh) == []
    for body, why in (("echo out; echo report >&2; exit 0", "exit status 0 (expected 1)"),
                      ("echo out; echo other >&2; exit 1", "prints something else"),
                      ("echo out; echo report >&2; exit 2", "exit status 2 (expected 1)")):
        (wrong,) = blocks("x.md", text.replace(sh.text.strip(), body))
        assert why in "".join(runner.block(wrong)), body
    (plain,) = blocks("x.md", "```sh\necho out; echo report >&2; exit 1\n```\n")
    assert plain.status == 0 and "exit status 1:" in "".join(runner.block(plain))


# ---- running the examples (slow: make test-slow) ---------------------------------------------


@pytest.fixture
def workdir(demo_graph, tmp_path) -> str:
    """A directory like a checkout after ``make demo``: copies of workflows/, queries/ and the demo
    graph (``demo_graph``, tests/conftest.py)."""
    from lipspark.demo import DEMO_GRAPH

    wd = tmp_path / "work"
    for d in ("workflows", "queries"):
        shutil.copytree(os.path.join(ROOT, d), wd / d, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(demo_graph, wd / DEMO_GRAPH)
    return str(wd)


def _env() -> dict[str, str]:
    bin_dir = os.path.dirname(sys.executable)
    assert os.path.exists(os.path.join(bin_dir, "lipspark")), f"no lipspark beside {sys.executable} (make .venv/.installed)"
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "PYSPARK_PYTHON": sys.executable}


def _failed(proc: subprocess.CompletedProcess, status: int = 0) -> str | None:
    """Why a finished example failed: an exit status other than ``status`` (0 unless the block
    says otherwise) or a traceback (the last lines of its stderr)."""
    if proc.returncode == status and "Traceback (most recent call last)" not in proc.stdout + proc.stderr:
        return None
    tail = "\n    ".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
    expected = f" (expected {status})" if status else ""
    return f"exit status {proc.returncode}{expected}:\n    {tail}"


def _differs(shown: str, printed: str) -> str | None:
    """The difference between the output a document shows and what the example printed."""
    def norm(text: str) -> list[str]:
        return [line.rstrip() for line in text.rstrip().splitlines()]

    if norm(shown) == norm(printed):
        return None
    return "prints something else than the output shown:\n    " + "\n    ".join(norm(printed)[:20])


class Runner:
    """Runs the examples of one document (or help text) in order in one working directory."""

    def __init__(self, wd: str, scratch: str) -> None:
        self.wd, self.scratch, self.env = wd, scratch, _env()
        self.session: Any = None
        self.timings: list[tuple[str, float]] = []

    def sh(self, where: str, cmd: str, status: int = 0) -> tuple[str | None, str]:
        """Run one command; ``status``: the exit status it must end with (not 0: what it prints
        on stderr is its output too, after stdout)."""
        t = time.perf_counter()
        # no input but what the command gives itself (`lipspark shell G < FILE`): never the terminal's
        proc = subprocess.run(["bash", "-c", cmd], cwd=self.wd, env=self.env, capture_output=True, text=True, timeout=1800,
                              stdin=subprocess.DEVNULL)
        self.timings.append((where, time.perf_counter() - t))
        return _failed(proc, status), proc.stdout + (_WORKER_NOTE.sub("", _JVM_NOTE.sub("", proc.stderr)) if status else "")

    def python(self, block: Block) -> tuple[str | None, str]:
        # the file has the document's name and the block at its own lines: tracebacks point into the document
        path = os.path.join(self.scratch, block.doc)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n" * block.line + block.text)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, path], cwd=self.wd, env=self.env, capture_output=True, text=True, timeout=1800)
        self.timings.append((block.where, time.perf_counter() - t))
        return _failed(proc), proc.stdout

    def query(self, where: str, text: str) -> tuple[str | None, str]:
        """A query from the captured graph, in this process (what ``lipspark query -e`` runs)."""
        from lipspark.cli import _open_session
        from lipspark.demo import DEMO_GRAPH
        from lipspark.errors import LipsparkError

        t = time.perf_counter()
        if self.session is None:  # as lipspark query opens it (a re-runner for recompute and update)
            self.session = _open_session(os.path.join(self.wd, DEMO_GRAPH))
        self.session.run("reset")
        try:
            printed = "\n\n".join(r.to_text() for r in self.session.run(text, where))
        except LipsparkError as err:
            return f"{type(err).__name__}: {err}", ""
        finally:
            self.timings.append((where, time.perf_counter() - t))
        return None, printed

    def block(self, block: Block) -> list[str]:
        """Run one block; what went wrong, as lines naming the document's line."""
        if block.kind == "python":
            results = [(block.where, *self.python(block))]
        elif block.kind == "lq":
            results = [(block.where, *self.query(block.where, block.text))]
        else:
            results = [(f"{block.doc}:{line}", *self.sh(f"{block.doc}:{line}", cmd, block.status)) for line, cmd in commands(block)]
        problems = [f"{where}: {why}" for where, why, _ in results if why]
        if not problems and block.output is not None:
            why = _differs(block.output, "".join(out for _, _, out in results))
            if why:
                problems.append(f"{block.where}: {why}")
        return problems


def _report(runner: Runner, problems: list[str]) -> None:
    slowest = sorted(runner.timings, key=lambda t: -t[1])[:5]
    print("slowest examples: " + ", ".join(f"{w} {s:.1f}s" for w, s in slowest))
    assert not problems, "\n".join(problems)


RUNNABLE_DOCS = [d for d in DOCS if any(b.kind in RUN and b.not_run is None for b in blocks(d))]


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUNNABLE_DOCS)
def test_document_examples_run_as_written(doc, workdir, tmp_path):
    runner = Runner(workdir, str(tmp_path / "scratch"))
    problems: list[str] = []
    for b in blocks(doc):
        if b.kind in RUN and b.not_run is None:
            problems += runner.block(b)
    _report(runner, problems)


@pytest.mark.slow
def test_running_catches_what_issue_19_found(workdir, tmp_path):
    """The defects issue 19 reported fail the runner: each example as it was."""
    runner = Runner(workdir, str(tmp_path / "scratch"))
    old_readme = ('```python\nfrom lipspark import Tracker, get_spark\nspark = get_spark()\nt = Tracker(spark)\n'
                  'cars = t.annotate(spark.read.parquet("cars"), "Cars", key=["CarId"])\n```\n')
    (python,) = blocks("README.md", old_readme)
    assert "PATH_NOT_FOUND" in "".join(runner.block(python))
    (sh,) = blocks("README.md", "```sh\nlipspark query graphs/car_dealership queries/what_if_car_absent.lq\n```\n")
    assert "no graph at graphs/car_dealership" in "".join(runner.block(sh))
    (opening,) = blocks("docs/query-language.md", "```lq\nzoomout dealer1, dealer2, dealer3, dealer4;\n"
                                                   "polynomial state SoldCars in dealer2 expanded\n```\n")
    assert "SoldCars" in "".join(runner.block(opening))
    assert "no tuple has these values" in "".join(runner.block(Block("lipspark query --help", 1, "lq",
                                                                     "zoomout dealer2, dealer3; delete tuple Cars(CarId = 'C2')\n")))
    (wrong,) = blocks("x.md", "```sh\necho 2\n```\n\n```output\n1\n```\n")
    assert "prints something else" in "".join(runner.block(wrong))
