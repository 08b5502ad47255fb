"""``lipspark shell G``: one graph kept open for a session of queries.

Each line is query text (docs/query-language.md): one statement, or several separated by ``;``,
answered as ``lipspark query G -e LINE`` prints it, on the session's working view (a ``zoomout``
holds until ``reset``). A line that stops where a statement cannot end (after ``,``, ``on`` or an
open parenthesis) continues on the next; an error is reported in the words ``lipspark query``
uses and the session goes on. ``help`` lists the statements with an example of each, ``quit``
or end of input (Ctrl-D) leaves.

At a terminal the shell keeps a history (``~/.lipspark_history``, or the file ``LIPSPARK_HISTORY``
names; empty: none) and completes with Tab the statement keywords and the graph's module,
relation and column names (:func:`complete`). Read from a pipe or a file it prints answers only,
and exits 2 if a statement failed.

The names a graph offers, and what completes where:

>>> names = Names(modules=("agg", "dealer1"), relations=("Bids", "Cars"), columns={"Cars": ("CarId", "Model")},
...               values=("Amount",), semirings=("boolean", "counting"), executions=(1, 2))
>>> complete("zoo", names), complete("zoomout agg, d", names)
(['zoomout', 'zoomin'], ['dealer1'])
>>> complete("show state Cars(M", names), complete("ancestors output Bids of ", names)
(['Model'], ['agg', 'dealer1'])
>>> complete("evaluate c", names), complete("polynomial output Bids ", names)
(['counting'], ['in', 'of', 'execution', 'expanded'])
>>> complete("where ", names), complete("where column M", names), complete("where column Model of ", names)[:2]
(['column'], ['Model'], ['tuple', 'input'])
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, TextIO

if TYPE_CHECKING:
    from lipspark.graph.index import GraphIndex
    from lipspark.query.engine import Session

__all__ = ["STATEMENTS", "StatementHelp", "Names", "graph_names", "complete", "help_text", "Shell", "history_path"]


@dataclass(frozen=True)
class StatementHelp:
    """One statement of the language: its keyword, its syntax, what it does, an example on the
    graph ``make demo`` writes (``lipspark query --help`` lists the examples; the tests run them)."""

    keyword: str
    syntax: str
    does: str
    example: str


#: Every statement of the language, in the order of docs/query-language.md.
STATEMENTS: tuple[StatementHelp, ...] = (
    StatementHelp("zoomout", "zoomout MODULE, ...", "hide the inside of every invocation of the modules (changes the view)",
                  "zoomout dealer2, dealer3, dealer4"),
    StatementHelp("zoomin", "zoomin MODULE, ...", "undo a zoomout of the modules (changes the view)",
                  "zoomout dealer1, dealer2; zoomin dealer2"),
    StatementHelp("reset", "reset", "return to the captured graph", "zoomout dealer1; reset"),
    StatementHelp("delete", "delete SELECTOR, ... [recompute [execution N]]",
                  "propagate the deletion of the nodes, recompute aggregates (changes the view); recompute: re-run the invocations "
                  "whose values the graph cannot recompute (black boxes, conditions over values), up to execution N",
                  'delete tuple Cars(CarId = "D1C000004") in dealer1 recompute execution 1'),
    StatementHelp("update", "update SELECTOR set COLUMN = VALUE, ... [in MODULE]",
                  "a value what-if: give base tuples new values and re-run the invocations they reach (changes the view)",
                  'update tuple Cars(CarId = "D1C000004") set Model = "VW Golf" in dealer1'),
    StatementHelp("subgraph", "subgraph SELECTOR", "one node's ancestors, descendants and their siblings",
                  "subgraph output Bids1 of dealer1 execution 1"),
    StatementHelp("ancestors", "ancestors SELECTOR", "what the nodes were derived from", "ancestors output BestBid of agg execution 1"),
    StatementHelp("descendants", "descendants SELECTOR", "what was derived from the nodes", 'descendants token "Requests:B1"'),
    StatementHelp("depends", "depends SELECTOR on SELECTOR, ...", "are the first nodes gone once the others are deleted",
                  'depends output Bids1 of dealer1 execution 1 on tuple Requests(BidId = "B1") in request'),
    StatementHelp("polynomial", "polynomial SELECTOR [expanded]", "the provenance expression of each node",
                  "polynomial value Amount of output Bids2 of dealer2 execution 1"),
    StatementHelp("evaluate", "evaluate SEMIRING SELECTOR [given ASSIGNMENT, ...] [without delta] [samples N] [seed N]",
                  "the provenance in a semiring (minmax(L < L < ...) for ordered levels), or as a probability",
                  "evaluate counting output Bids1 of dealer1 execution 1 given default = 1 without delta"),
    StatementHelp("shapley", "shapley SELECTOR [over tuples|invocations, ...] [given ASSIGNMENT, ...] [samples N] [seed N]",
                  "each base tuple's (or invocation's) Shapley value for the tuples' existence; exact, else sampled",
                  "shapley output Bids1 of dealer1 execution 3"),
    StatementHelp("banzhaf", "banzhaf SELECTOR [over tuples|invocations, ...] [given ASSIGNMENT, ...] [samples N] [seed N]",
                  "each base tuple's (or invocation's) Banzhaf value for the tuples' existence; exact, else sampled",
                  "banzhaf output BestBid of agg execution 1 over invocations"),
    StatementHelp("show", "show SELECTOR", "list the nodes the selector matches", 'show state Cars(Model = "Audi A6") in dealer1 execution 1'),
    StatementHelp("diff", "diff input|state|output REL[(COLUMN = VALUE, ...)] [of MODULE] execution N, execution M [on COLUMN, ...]",
                  "the tuples that appeared, disappeared or changed value between two executions, and the provenance that explains each",
                  "diff output BestBid of agg execution 1, execution 2 on Model"),
    StatementHelp("where", "where column COLUMN of SELECTOR", "the base tuples and columns each node's value of the column was copied or computed from",
                  "where column UserId of output BestBid of agg execution 1"),
    StatementHelp("culprits", "culprits [execution N]",
                  "the crash report of a failed execution (default: the latest): the failing invocation, operation, exception and culprit rows with their provenance",
                  "culprits"),
    StatementHelp("sample", "sample relation REL of MODULE execution N [K]",
                  "the first K tuples (default 5), by stored position, of a module's input, state or output relation, with their polynomials",
                  "sample relation Cars of dealer1 execution 1 3"),
    StatementHelp("checks", 'checks ["NAME"] [in MODULE] [execution N]',
                  "the integrity checks' verdicts: since when each fails; after a delete, whether it would hold",
                  'checks "discount at most 6%"'),
    StatementHelp("blame", "blame SELECTOR",
                  "the base tuples behind the selected tuples (violations \"CHECK\": a check's violating rows), with counts",
                  'blame violations "discount at most 6%" execution 1'),
)

_SELECTORS = ("tuple", "input", "state", "output", "invocation", "node", "token", "value")
_SELECTOR_HELP = (
    "tuple|input|state|output REL[(COLUMN = VALUE, ...)] [in MODULE] [execution N]",
    "invocation MODULE [execution N]",
    'node ID     token "LABEL"     value COLUMN of SELECTOR',
)
_COMMANDS = ("help", "quit", "exit")
_OPERATORS = ("=", "==", "!=", "<>", "<", "<=", ">", ">=")
#: What ends the word Tab completes (as readline splits the line).
_DELIMS = " \t\n;,()=<>!"
_WORD = re.compile(r"[^ \t\n;,()=<>!]*\Z")
_TOKEN = re.compile(r"""`[^`\n]*`?|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|--|==|!=|<>|<=|>=|[A-Za-z_][A-Za-z0-9_]*|[^\s]""")
#: Tuples sampled per relation for its column names (boundary nodes carry every column, tokens their key).
_SAMPLE = 20


def history_path() -> str | None:
    """The history file: ``LIPSPARK_HISTORY`` if set (empty: no history), else ``~/.lipspark_history``."""
    path = os.environ.get("LIPSPARK_HISTORY")
    if path is None:
        return os.path.join(os.path.expanduser("~"), ".lipspark_history")
    return path or None


@dataclass(frozen=True)
class Names:
    """What Tab completes besides keywords: the graph's modules, relations, each relation's
    columns, the columns with value nodes, the semirings and the execution numbers."""

    modules: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    values: tuple[str, ...] = ()
    semirings: tuple[str, ...] = ()
    executions: tuple[int, ...] = ()


def graph_names(g: GraphIndex) -> Names:
    """The names of a captured graph. Modules, relations and executions come from the segment
    table of a mapped graph (no pass over the nodes); a relation's columns from the tuples of a
    few of its nodes."""
    import json

    import numpy as np

    from lipspark.semiring import semiring_names
    from lipspark.vocabulary import Op

    def strings(attr: str) -> tuple[str, ...]:
        return tuple(sorted(str(v) for v in g.distinct(attr) if isinstance(v, str)))

    relations = strings("relation")
    columns: dict[str, tuple[str, ...]] = {}
    for rel in relations:
        cand = g.segment_nodes({"relation": [rel]})
        if cand is None:
            cand = np.flatnonzero(g.where("relation", [rel]))
        cand = cand[~np.asarray(g.is_v)[cand]]
        tokens = np.asarray(g.op)[cand] == Op.TOKEN
        sample = np.concatenate([cand[~tokens][:_SAMPLE], cand[tokens][:_SAMPLE]])
        found: set[str] = set()
        for t in g.column("tuple", sample).tolist():
            if isinstance(t, str):
                found.update(json.loads(t))
        columns[rel] = tuple(sorted(found))
    executions = tuple(sorted(int(e) for e in g.distinct("execution") if e is not None))
    return Names(strings("module"), relations, columns, strings("column"), (*semiring_names(), "probability"), executions)


def segment_names(segments: Any) -> Names:
    """The names of a graph the spark engine reads (:mod:`lipspark.engines`), from its
    segment table alone: modules, relations, value columns and executions (a relation's columns
    would take a Spark job: not completed)."""
    from lipspark.semiring import semiring_names

    def strings(attr: str) -> tuple[str, ...]:
        return tuple(sorted({str(v) for v in segments[attr].tolist() if isinstance(v, str)}))

    executions = tuple(sorted({int(e) for e in segments["execution"].dropna().tolist()}))
    return Names(strings("module"), strings("relation"), {}, strings("column"), (*semiring_names(), "probability"), executions)


def _tokens(text: str) -> list[str] | None:
    """The tokens of ``text`` (comments left out); None when it ends inside a comment or an
    unterminated string or backquoted name (nothing to complete there)."""
    out: list[str] = []
    pos = 0
    while True:
        m = _TOKEN.search(text, pos)
        if m is None:
            return out
        tok = m.group()
        if tok in ("#", "--"):
            end = text.find("\n", m.end())
            if end < 0:
                return None
            pos = end
            continue
        if tok[0] in "\"'`" and (len(tok) == 1 or tok[-1] != tok[0] or tok.endswith("\\" + tok[0])):
            return None
        out.append(tok)
        pos = m.end()


def _name(token: str) -> str:
    return token[1:-1] if token.startswith("`") else token


def _keywords(word: str, candidates: Iterable[str]) -> list[str]:
    low = word.lower()
    hits = [k for k in candidates if k.startswith(low)]
    return [k.upper() for k in hits] if word and word.isupper() else hits


def _names(word: str, candidates: Iterable[Any]) -> list[str]:
    from lipspark.query.ast import format_name

    if word.startswith("`"):  # the user backquotes: offer every name so
        shown = [f"`{c}`" for c in candidates if isinstance(c, str) and "`" not in c]
    else:
        shown = [format_name(c) if isinstance(c, str) else str(c) for c in candidates]
    hits = [s for s in shown if s.startswith(word)]
    return hits or [s for s in shown if s.lower().startswith(word.lower())]


def complete(line: str, names: Names) -> list[str]:
    """The words that can replace the last word of ``line`` (the text before the cursor, earlier
    lines of an unfinished statement included): a statement keyword at the start, a selector
    keyword where a selector begins, a module after ``zoomout``/``in``/``of``/``invocation``, a
    relation after ``tuple``/``input``/``state``/``output``/``relation``, a column in a
    relation's parentheses or after ``value``, a semiring after ``evaluate``, else the keywords
    that may follow."""
    word = _WORD.search(line)
    w = word.group() if word else ""
    before = line[: len(line) - len(w)]
    toks = _tokens(before)
    if toks is None or (w and w[0] in "\"'"):
        return []
    ends = [i for i, t in enumerate(toks) if t == ";"]
    stmt = toks[ends[-1] + 1:] if ends else toks
    if not stmt:
        commands = _COMMANDS if not before.strip() else ()
        return _keywords(w, [s.keyword for s in STATEMENTS] + list(commands))
    head, p = stmt[0].lower(), stmt[-1].lower()
    lowered = [t.lower() for t in stmt]
    depth, opened = 0, -1
    for i, t in enumerate(stmt):
        if t == "(":
            depth, opened = depth + 1, i
        elif t == ")":
            depth -= 1
    if depth > 0:  # in a relation's conditions: COLUMN OP LITERAL, ...
        rel = _name(stmt[opened - 1]) if opened > 0 else ""
        return _names(w, names.columns.get(rel, ())) if p in ("(", ",") else []
    if p in ("tuple", "input", "state", "output", "relation"):
        return _names(w, names.relations)
    if p == "invocation":
        return _names(w, names.modules)
    if p == "value":
        return _names(w, names.values or sorted({c for cols in names.columns.values() for c in cols}))
    if head == "where" and len(stmt) <= 3:  # where column COLUMN of
        return (_keywords(w, ["column"]) if len(stmt) == 1 else
                _names(w, sorted({c for cols in names.columns.values() for c in cols})) if len(stmt) == 2 else _keywords(w, ["of"]))
    if p in ("in", "of"):
        if len(stmt) >= 3 and lowered[-3] in ("value", "column"):
            return _keywords(w, _SELECTORS)
        return _names(w, names.modules)
    if p == "execution":
        return _names(w, names.executions)
    if p == "evaluate":
        return _names(w, names.semirings)
    if p in ("node", "token", "samples", "seed") or p in _OPERATORS:
        return []  # a number, a label, a literal
    if head in ("zoomout", "zoomin"):
        return _names(w, names.modules) if len(stmt) == 1 or p == "," else []
    if head == "diff":  # diff KIND REL[(…)] [of MODULE] execution N, execution M [on COLUMN, ...]
        columns = names.columns.get(_name(stmt[2]), ()) if len(stmt) > 2 else ()
        if p == "diff":
            return _keywords(w, ("input", "state", "output"))
        if p == "on" or (p == "," and "on" in lowered):
            return _names(w, columns)
        if p == ",":
            return _keywords(w, ("execution",))
        if lowered.count("execution") == 2:
            return _keywords(w, ("on",)) if "on" not in lowered else []
    if head == "update" and "set" in lowered:  # update tuple REL(…) [in M] set COLUMN = VALUE, ... [in M]
        rel = _name(stmt[2]) if len(stmt) > 2 else ""
        return _names(w, names.columns.get(rel, ())) if p in ("set", ",") else _keywords(w, ("in",)) if p not in _OPERATORS else []
    if p == "update":
        return _keywords(w, ("tuple",))
    if p in ("delete", "subgraph", "ancestors", "descendants", "show", "polynomial", "on", "shapley", "banzhaf") or (head == "evaluate" and len(stmt) == 2):
        return _keywords(w, _SELECTORS)
    if head in ("shapley", "banzhaf") and (p == "over" or (p == "," and "over" in lowered and "given" not in lowered)):
        return _keywords(w, ("tuples", "invocations"))
    if head in ("evaluate", "shapley", "banzhaf") and (p == "given" or (p == "," and "given" in lowered)):
        return _keywords(w, (*_SELECTORS, "relation", "default") if head == "evaluate" else (*_SELECTORS, "relation"))
    if p == ",":
        return _keywords(w, _SELECTORS) if head in ("delete", "depends") else []
    starts = [i for i, t in enumerate(lowered) if t in _SELECTORS]  # after a selector's relation, module or conditions:
    said = set(lowered[starts[-1]:]) if starts else set()           # what it has not said yet
    kind = lowered[starts[-1]] if starts else ""
    clauses = {"invocation": ("execution",), "node": (), "token": ()}.get(kind, ("in", "of", "execution"))
    follow = [k for k in clauses if not said & ({"execution"} if k == "execution" else {"in", "of"})]
    if head == "depends" and "on" not in lowered:
        follow.append("on")
    if head == "polynomial":
        follow.append("expanded")
    if head == "evaluate":
        follow += ["given", "without", "samples", "seed"]
    if head in ("shapley", "banzhaf"):
        follow += ["over", "given", "samples", "seed"]
    if head == "delete" and "recompute" not in lowered:
        follow.append("recompute")
    if head == "update":
        follow.append("set")
    return _keywords(w, follow)


def help_text(keyword: str | None = None) -> str:
    """What ``help`` prints: every statement (or the one named) with its syntax and an example."""
    chosen = [s for s in STATEMENTS if keyword is None or s.keyword == keyword.lower()]
    if not chosen:
        return f"no statement {keyword!r}; the statements are {', '.join(s.keyword for s in STATEMENTS)}"
    lines = []
    if keyword is None:
        lines.append("Statements (one a line, or several separated by ;), each with an example on graphs/car_dealership-demo:")
    for s in chosen:
        lines += [f"  {s.syntax}", f"      {s.does}", f"      e.g. {s.example}"]
    if keyword is None:
        lines += ["Selectors:"] + [f"  {h}" for h in _SELECTOR_HELP]
        lines += ["Tab completes keywords and the graph's names; help STATEMENT shows one; quit (or Ctrl-D) leaves.",
                  "The language: docs/query-language.md."]
    return "\n".join(lines)


_MORE, _DONE, _QUIT = "more", "done", "quit"


class Shell:
    """A session of queries on one graph (:class:`~lipspark.query.engine.Session`), fed line by
    line; answers and errors are printed as ``lipspark query`` prints them.

    >>> import io
    >>> import pandas as pd
    >>> from lipspark.graph.index import GraphIndex
    >>> from lipspark.query.engine import Session
    >>> g = GraphIndex.build(
    ...     pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "δ"], "label": ["Cars:C2", "Cars:C3", "δ"],
    ...                   "relation": ["Cars", "Cars", None], "tuple": ['{"CarId": "C2"}', '{"CarId": "C3"}', None]}),
    ...     pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
    >>> out, err = io.StringIO(), io.StringIO()
    >>> Shell(Session(g), out=out, err=err).run(["show invocation agg", "depends node 3 on", 'tuple Cars(CarId = "C2")'])
    2
    >>> print(err.getvalue().strip())
    lipspark: error: invocation agg (line 1, column 6): no module 'agg' (modules: none)
    >>> print(out.getvalue().strip())
    depends node 3 on tuple Cars(CarId = "C2")
    0 of 1 node(s) depend on it
    node                depends
    ------------------  -------
    δ (distinct/group)  False
    """

    def __init__(self, session: Session, *, ids: bool = False, all_rows: bool = False, source: str = "<stdin>",
                 out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.session = session
        self.ids, self.all_rows, self.source = ids, all_rows, source
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.failed = 0
        self._buffer = ""
        self._names: Names | None = None
        self._matches: list[str] = []

    @property
    def names(self) -> Names:
        """The captured graph's names (read on the first Tab)."""
        if self._names is None:
            part = self.session._partial
            if part is None:
                self._names = graph_names(self.session.base)
            else:
                from lipspark.engines import SparkGraph

                assert isinstance(part, SparkGraph)
                self._names = segment_names(part.all_segments())
        return self._names

    def complete(self, line: str) -> list[str]:
        """Completions of the last word of ``line``, after the unfinished statement's earlier lines."""
        return complete(self._buffer + "\n" + line if self._buffer else line, self.names)

    @property
    def continuing(self) -> bool:
        """Whether the lines so far end inside a statement (the next line continues it)."""
        return bool(self._buffer)

    def _error(self, err: BaseException) -> None:
        self.failed += 1
        print(f"lipspark: error: {err}", file=self.err, flush=True)

    def feed(self, line: str) -> str:
        """Take one line: run what it completes, remember what it leaves unfinished."""
        from lipspark.errors import LipsparkError, QuerySyntaxError
        from lipspark.query.parser import parse

        line = line.rstrip("\r\n")
        if not self._buffer:
            words = line.strip().rstrip(";").split()
            if words and words[0].lower() in ("quit", "exit") and len(words) == 1:
                return _QUIT
            if words and words[0].lower() == "help" and len(words) <= 2:
                print(help_text(words[1] if len(words) == 2 else None), file=self.out, flush=True)
                return _DONE
        text = self._buffer + "\n" + line if self._buffer else line
        try:
            statements = parse(text, self.source)
        except QuerySyntaxError as err:
            if line.strip() and "syntax error: unexpected end of the query" in str(err):
                self._buffer = text  # the statement goes on on the next line
                return _MORE
            self._buffer = ""
            self._error(err)
            return _DONE
        self._buffer = ""
        for stmt in statements:
            try:
                result = self.session.execute(stmt)
            except LipsparkError as err:
                self._error(err)
                break
            print(result.to_text(ids=self.ids, all_rows=self.all_rows), end="\n\n", file=self.out, flush=True)
        return _DONE

    def run(self, lines: Iterable[str]) -> int:
        """Answer lines read from a pipe or a file: 0 if every statement ran, 2 if one failed
        (each error was reported and the session went on)."""
        for line in lines:
            if self.feed(line) == _QUIT:
                break
        if self._buffer:
            self.feed("")  # the input ended inside a statement: say so
        return 2 if self.failed else 0

    def interact(self, history: str | None = None, banner: str = "") -> int:
        """Read lines at a terminal, with history (``history``: the file) and Tab completion when
        readline is available, until ``quit`` or end of input. Ctrl-C drops the line being typed
        or stops the statement running. Returns 0."""
        rl = _readline()
        if rl is not None:
            rl.set_completer_delims(_DELIMS)
            rl.set_completer(self._complete_readline)
            rl.parse_and_bind("bind ^I rl_complete" if "libedit" in (rl.__doc__ or "") else "tab: complete")
            if history and os.path.exists(history):
                try:
                    rl.read_history_file(history)
                except OSError as err:
                    print(f"lipspark: cannot read the history {history}: {err.strerror}", file=self.err)
        # input() writes its prompt to stdout; when that is redirected, prompts go to the terminal's stderr
        prompt_out = self.out if self.out.isatty() else self.err
        if banner:
            print(banner, file=prompt_out, flush=True)
        try:
            while True:
                prompt = "     ...> " if self._buffer else "lipspark> "
                try:
                    if prompt_out is self.out:
                        line = input(prompt)
                    else:
                        print(prompt, end="", file=prompt_out, flush=True)
                        line = input()
                except EOFError:
                    print(file=prompt_out)
                    break
                except KeyboardInterrupt:
                    print(file=prompt_out)
                    self._buffer = ""
                    continue
                try:
                    if self.feed(line) == _QUIT:
                        break
                except KeyboardInterrupt:
                    print("lipspark: interrupted", file=self.err, flush=True)
        finally:
            if rl is not None and history:
                try:
                    rl.set_history_length(1000)
                    rl.write_history_file(history)
                except OSError as err:
                    print(f"lipspark: cannot write the history {history}: {err.strerror}", file=self.err)
        return 0

    def _complete_readline(self, text: str, state: int) -> str | None:
        rl = _readline()
        if rl is None:
            return None
        if state == 0:  # Python's readline appends nothing to a completed word: add the space
            self._matches = [m + " " for m in self.complete(rl.get_line_buffer()[: rl.get_endidx()])]
        return self._matches[state] if state < len(self._matches) else None


def _readline() -> Any:
    """The readline module, or None where Python has none (completion and history are then off)."""
    try:
        import readline
    except ImportError:
        return None
    return readline
