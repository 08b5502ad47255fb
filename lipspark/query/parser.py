"""Parser of the provenance query language: text to :mod:`lipspark.query.ast` statements.

The grammar is ``grammar.lark`` next to this module (LALR(1) with lark's contextual lexer,
so a keyword is read as a name wherever only a name can follow). Syntax errors are raised as
:class:`lipspark.errors.QuerySyntaxError` with ``line`` and ``column`` attributes and a
message showing the offending line with a caret.
"""
from __future__ import annotations

import math
import re
from functools import cache
from importlib.resources import files
from typing import Any, Literal, cast

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lexer import PatternStr
from lark.tree import Meta

from lipspark.errors import QueryError, QuerySyntaxError
from lipspark.query.ast import (
    NO_POS,
    SAMPLE_SIZE,
    Culprits,
    Sample,
    Ancestors,
    Blame,
    Checks,
    Assignment,
    Condition,
    DefaultRef,
    Delete,
    Update,
    Depends,
    Descendants,
    Diff,
    Evaluate,
    InvocationSel,
    LiteralValue,
    NodeSel,
    Where,
    Polynomial,
    Pos,
    RelationRef,
    Reset,
    Responsibility,
    Selector,
    Show,
    Statement,
    Subgraph,
    TokenSel,
    TupleColumn,
    TupleSel,
    ValueSel,
    ViolationsSel,
    ZoomIn,
    ZoomOut,
)

__all__ = ["MAX_NODE_ID", "parse"]

#: Largest node id (ids are non-negative 64-bit integers).
MAX_NODE_ID = 2**63 - 1

_UNESCAPES = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t"}
_INTEGER = re.compile(r"[+-]?\d+")
_END = "the end of the query"
_FRIENDLY = {
    "NAME": "a name",
    "QNAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "INT": "a non-negative integer",
    "NODE_ID": "a node id (an integer)",
    "$END": _END,
}
_STATEMENTS = ["zoomout", "zoomin", "reset", "delete", "update", "subgraph", "ancestors", "descendants",
               "depends", "polynomial", "evaluate", "shapley", "banzhaf", "diff", "show", "where", "culprits", "sample",
               "checks", "blame"]
_SELECTORS = ["tuple", "input", "state", "output", "invocation", "node", "token", "value", "violations"]
_OPERATORS = ["=", "==", "!=", "<>", "<", "<=", ">", ">="]
# Whole groups of expected tokens are described by one phrase, to keep messages short.
_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("a statement (" + ", ".join(_STATEMENTS[:-1]) + f" or {_STATEMENTS[-1]})",
     frozenset(f"'{k}'" for k in _STATEMENTS)),
    ("a selector (" + ", ".join(_SELECTORS[:-1]) + f" or {_SELECTORS[-1]})",
     frozenset(f"'{k}'" for k in _SELECTORS)),
    ("a comparison operator (" + ", ".join(_OPERATORS[:-1]) + " or >=)",
     frozenset(f"'{k}'" for k in _OPERATORS)),
    ("a literal (a string, a number, true, false or null)",
     frozenset({"a string", "a number", "'true'", "'false'", "'null'"})),
)


def parse(text: str, source: str = "<query>") -> list[Statement]:
    """Parse query text into its statements, in order.

    Parameters
    ----------
    text
        The query: statements separated by ``;``, with ``#`` or ``--`` comments.
    source
        Name of the query's origin (a file name, say), used in error messages.

    Returns
    -------
    list[Statement]
        One node per non-empty statement; ``[]`` for a query of only blanks and comments.

    Raises
    ------
    QuerySyntaxError
        The text does not parse. ``line`` and ``column`` (1-based) locate the error and
        the message shows the line with a caret under it.

    Examples
    --------
    >>> stmts = parse('zoomout dealer1, dealer2; delete tuple Cars(CarId = "C2") in dealer1')
    >>> stmts  # doctest: +NORMALIZE_WHITESPACE
    [ZoomOut(modules=('dealer1', 'dealer2')),
     Delete(targets=(TupleSel(kind='tuple', relation='Cars',
                              conditions=(Condition(column='CarId', op='=', value='C2'),),
                              module='dealer1', execution=None),), recompute=False, until=None)]
    >>> stmts[1].targets[0].pos
    Pos(line=1, column=34)
    >>> print(stmts[1])
    delete tuple Cars(CarId = "C2") in dealer1
    >>> parse("zoomout dealer1 foo")
    Traceback (most recent call last):
    ...
    lipspark.errors.QuerySyntaxError: <query>:1:17: syntax error: unexpected 'foo'; expected ',', ';' or the end of the query
      zoomout dealer1 foo
                      ^
    """
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _from_lark(e, text, source) from None
    try:
        return _ToAst(text, source).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, QueryError):
            raise e.orig_exc from None
        raise


@cache
def _lark() -> Lark:
    grammar = files("lipspark.query").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                maybe_placeholders=True, cache=_cache_file(grammar))


def _cache_file(grammar: str) -> str | bool:
    """Where lark keeps the analysed grammar between processes (building it costs ~0.25 s, a
    whole cold query's budget): a file in the user's own cache directory (mode 0700 — lark's
    cache is a pickle, never read from a directory others can write), named by the grammar's
    and lark's versions. False (no cache) when that directory cannot be made."""
    import hashlib
    import os

    import lark

    from lipspark.cache import cache_dir

    d = cache_dir()
    if d is None:
        return False
    key = hashlib.sha256(f"{lark.__version__}\n{grammar}".encode()).hexdigest()[:16]
    return os.path.join(d, f"query-grammar-{key}.lark-cache")


# ---- errors ----------------------------------------------------------------------------


def _syntax_error(text: str, source: str, line: int, column: int, detail: str) -> QuerySyntaxError:
    """A QuerySyntaxError at line:column, showing that line and a caret under the column."""
    lines = text.split("\n")
    shown = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
    pad = "".join("\t" if c == "\t" else " " for c in shown[: column - 1])
    pad += " " * max(0, column - 1 - len(shown))
    err = QuerySyntaxError(f"{source}:{line}:{column}: syntax error: {detail}\n  {shown}\n  {pad}^")
    err.line = line  # type: ignore[attr-defined]
    err.column = column  # type: ignore[attr-defined]
    return err


def _end_of(text: str) -> tuple[int, int]:
    """Line and column just past the end of ``text``."""
    return text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1


def _quote(found: str) -> str:
    found = found if len(found) <= 30 else found[:29] + "…"
    if not found.isprintable():
        found = found.encode("unicode_escape").decode("ascii")
    return f'"{found}"' if "'" in found and '"' not in found else f"'{found}'"


def _accepts_at(text: str, pos: int) -> set[str]:
    """The terminals the parser accepts after ``text[:pos]`` (exact, unlike lark's per-state set)."""
    try:
        interactive = _lark().parse_interactive(text[:pos])
        interactive.exhaust_lexer()
        return set(interactive.accepts())
    except UnexpectedInput:
        return set()


def _describe_expected(terminals: set[str]) -> str:
    """Human words for expected terminals: quoted tokens, then phrases, then the end."""
    lark = _lark()
    items: set[str] = set()
    for name in terminals:
        if name in _FRIENDLY:
            items.add(_FRIENDLY[name])
        elif name not in lark.lexer_conf.ignore:  # (a Lark loaded from its cache has no ignore_tokens)
            try:
                pattern = lark.get_terminal(name).pattern
            except KeyError:
                items.add(name.lower())
                continue
            items.add(f"'{pattern.value}'" if isinstance(pattern, PatternStr) else name.lower())
    for phrase, members in _GROUPS:
        if members <= items:
            items = (items - members) | {phrase}
    ordered = sorted(items - {_END}, key=lambda s: (not s.startswith("'"), s))
    ordered += [_END] if _END in items else []
    if len(ordered) <= 1:
        return "".join(ordered) or "something else"
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


def _from_lark(e: UnexpectedInput, text: str, source: str) -> QuerySyntaxError:
    """Translate a lark parse error into a QuerySyntaxError."""
    if isinstance(e, UnexpectedCharacters):
        if e.char in "\"'`":
            what = "backquoted name" if e.char == "`" else "string"
            detail = f"unterminated {what}; close it with {e.char} before the end of the line"
            return _syntax_error(text, source, e.line, e.column, detail)
        expected = _accepts_at(text, cast(int, e.pos_in_stream)) or set(e.allowed)  # always set on this error
        detail = f"unexpected {_quote(e.char)}; expected {_describe_expected(expected)}"
        return _syntax_error(text, source, e.line, e.column, detail)
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        token = e.token
        expected = (e.accepts if e.interactive_parser else None) or _accepts_at(text, token.start_pos)
        expected = expected or set(e.expected)
        detail = f"unexpected {_quote(str(token))}; expected {_describe_expected(expected)}"
        return _syntax_error(text, source, token.line, token.column, detail)
    if isinstance(e, UnexpectedToken):  # $END: point just after the last token
        line = getattr(e.token, "end_line", None)
        column = getattr(e.token, "end_column", None)
        if line is None or column is None:
            line, column = _end_of(text)
        expected = _accepts_at(text, len(text)) or set(e.expected)
    else:
        line, column = _end_of(text)
        expected = set(e.expected) if isinstance(e, UnexpectedEOF) else set()
    return _syntax_error(text, source, line, column,
                         f"unexpected end of the query; expected {_describe_expected(expected)}")


# ---- tree to AST -----------------------------------------------------------------------


def _pos(meta: Meta) -> Pos:
    return NO_POS if meta.empty else Pos(meta.line, meta.column)


@v_args(inline=True, meta=True)
class _ToAst(Transformer):
    """lark tree to AST nodes. Methods are named after grammar rules."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__()
        self._text = text
        self._source = source

    def _error(self, token: Token, detail: str, offset: int = 0) -> QuerySyntaxError:
        return _syntax_error(self._text, self._source, token.line or 0, (token.column or 0) + offset, detail)

    # -- statements

    def start(self, meta: Meta, *statements: Statement | None) -> list[Statement]:
        return [s for s in statements if s is not None]

    def zoomout(self, meta: Meta, modules: list[str]) -> ZoomOut:
        return ZoomOut(tuple(modules), pos=_pos(meta))

    def zoomin(self, meta: Meta, modules: list[str]) -> ZoomIn:
        return ZoomIn(tuple(modules), pos=_pos(meta))

    def reset(self, meta: Meta) -> Reset:
        return Reset(pos=_pos(meta))

    def delete(self, meta: Meta, targets: list[Selector], recompute: Token | None, until: int | None) -> Delete:
        return Delete(tuple(targets), recompute is not None, until, pos=_pos(meta))

    def update(self, meta: Meta, target: Selector, *rest: Any) -> Update:
        *items, module = rest
        if module is not None:
            if not isinstance(target, TupleSel) or target.module is not None or target.execution is not None:
                raise _syntax_error(self._text, self._source, meta.line, meta.column,
                                    f"'{module[0]} {module[1]}' after the assignments belongs to a tuple selector without a module or "
                                    f"execution of its own; write it in the selector: update tuple R(k = v) in MODULE set c = x")
            target = TupleSel(target.kind, target.relation, target.conditions, module[1], None, pos=target.pos, preposition=module[0])
        return Update(target, tuple(items), pos=_pos(meta), module_last=module is not None)

    def set_item(self, meta: Meta, column: str, value: LiteralValue) -> tuple[str, LiteralValue]:
        return column, value

    def subgraph(self, meta: Meta, target: Selector) -> Subgraph:
        return Subgraph(target, pos=_pos(meta))

    def ancestors(self, meta: Meta, target: Selector) -> Ancestors:
        return Ancestors(target, pos=_pos(meta))

    def descendants(self, meta: Meta, target: Selector) -> Descendants:
        return Descendants(target, pos=_pos(meta))

    def depends(self, meta: Meta, target: Selector, on: list[Selector]) -> Depends:
        return Depends(target, tuple(on), pos=_pos(meta))

    def polynomial(self, meta: Meta, target: Selector, expanded: Token | None) -> Polynomial:
        return Polynomial(target, expanded is not None, pos=_pos(meta))

    def evaluate(self, meta: Meta, semiring: tuple[str, tuple[str, ...]], target: Selector,
                 given: tuple[Assignment | TupleColumn, ...] | None, without_delta: bool | None,
                 samples: int | None, seed: int | None) -> Evaluate:
        name, levels = semiring
        return Evaluate(name.lower(), target, given or (), samples, seed, bool(without_delta), levels, pos=_pos(meta))

    def show(self, meta: Meta, target: Selector) -> Show:
        return Show(target, pos=_pos(meta))

    def diff(self, meta: Meta, kind: str, relation: str, conditions: tuple[Condition, ...] | None,
             module: tuple[Literal["in", "of"], str] | None, before: int, after: int, on: list[str] | None) -> Diff:
        if kind == "tuple":
            raise _syntax_error(self._text, self._source, meta.line, meta.column,
                                f"diff compares a module's input, state or output tuples, not base tuples: write "
                                f"`diff output {relation} of MODULE execution {before}, execution {after}` (or input, state)")
        preposition, name = module or ("of", None)
        return Diff(kind, relation, before, after, conditions or (), name, tuple(on or ()),  # type: ignore[arg-type]
                    pos=_pos(meta), preposition=preposition)

    def diff_on(self, meta: Meta, names: list[str]) -> list[str]:
        return names

    def responsibility(self, meta: Meta, measure: str, target: Selector, over: tuple[str, ...] | None,
                       given: tuple[Assignment | TupleColumn, ...] | None, samples: int | None,
                       seed: int | None) -> Responsibility:
        players = tuple(k for k in ("tuples", "invocations") if k in (over or ("tuples",)))  # in one order
        return Responsibility(measure, target, players, given or (), samples, seed, pos=_pos(meta))  # type: ignore[arg-type]

    def measure(self, meta: Meta, token: Token) -> str:
        return token.value.lower()

    def over(self, meta: Meta, *kinds: str) -> tuple[str, ...]:
        return kinds

    def player_kind(self, meta: Meta, token: Token) -> str:
        return token.value.lower()

    def where(self, meta: Meta, column: str, target: Selector) -> Where:
        return Where(column, target, pos=_pos(meta))

    def culprits(self, meta: Meta, execution: int | None) -> Culprits:
        return Culprits(execution, pos=_pos(meta))

    def sample(self, meta: Meta, relation: str, module: tuple[Literal["in", "of"], str], execution: int,
               k: Token | None) -> Sample:
        size = SAMPLE_SIZE if k is None else self._int(k)
        if size < 1:
            raise self._error(k, f"sample needs a positive number of tuples, found {k}") if k is not None else AssertionError()
        return Sample(relation, module[1], execution, size, preposition=module[0], pos=_pos(meta))

    def checks(self, meta: Meta, check: Token | None, module: tuple[Literal["in", "of"], str] | None, execution: int | None) -> Checks:
        return Checks(None if check is None else self._string(check), module[1] if module else None, execution, pos=_pos(meta))

    def blame(self, meta: Meta, target: Selector) -> Blame:
        return Blame(target, pos=_pos(meta))

    def violations_sel(self, meta: Meta, check: Token, module: tuple[Literal["in", "of"], str] | None,
                       execution: int | None) -> ViolationsSel:
        return ViolationsSel(self._string(check), module[1] if module else None, execution, pos=_pos(meta))

    def name_list(self, meta: Meta, *names: str) -> list[str]:
        return list(names)

    def selector_list(self, meta: Meta, *selectors: Selector) -> list[Selector]:
        return list(selectors)

    # -- evaluate options

    def semiring(self, meta: Meta, name: str, *levels: str | Token | None) -> tuple[str, tuple[str, ...]]:
        return name, tuple(str(level) for level in levels if isinstance(level, str) and not isinstance(level, Token))

    def level(self, meta: Meta, value: str | Token) -> str:
        return self._string(value) if isinstance(value, Token) else value

    def given(self, meta: Meta, *assignments: Assignment | TupleColumn) -> tuple[Assignment | TupleColumn, ...]:
        return assignments

    def without_delta(self, meta: Meta) -> bool:
        return True

    def tuple_column(self, meta: Meta, kind: str, relation: str, column: str) -> TupleColumn:
        if kind != "tuple":
            raise _syntax_error(self._text, self._source, meta.line, meta.column,
                                f"only base tuples take values from a column: write `tuple {relation}.{column}` "
                                f"(a {kind} node is derived; the base tuples it comes from are the ones to value)")
        return TupleColumn(relation, column, pos=_pos(meta))

    def samples(self, meta: Meta, token: Token) -> int:
        return self._int(token)

    def seed(self, meta: Meta, token: Token) -> int:
        return self._int(token)

    def assignment(self, meta: Meta, target: Selector | RelationRef | DefaultRef,
                   value: LiteralValue) -> Assignment:
        return Assignment(target, value, pos=_pos(meta))

    def relation_ref(self, meta: Meta, name: str) -> RelationRef:
        return RelationRef(name, pos=_pos(meta))

    def default_ref(self, meta: Meta) -> DefaultRef:
        return DefaultRef(pos=_pos(meta))

    # -- selectors

    def tuple_sel(self, meta: Meta, kind: str, relation: str,
                  conditions: tuple[Condition, ...] | None, module: tuple[Literal["in", "of"], str] | None,
                  execution: int | None) -> TupleSel:
        preposition, name = module or ("in", None)
        return TupleSel(kind, relation, conditions or (), name, execution,  # type: ignore[arg-type]
                        pos=_pos(meta), preposition=preposition)

    def kind(self, meta: Meta, token: Token) -> str:
        return token.value.lower()

    def conditions(self, meta: Meta, *conditions: Condition) -> tuple[Condition, ...]:
        return conditions

    def condition(self, meta: Meta, column: str, op: str, value: LiteralValue) -> Condition:
        return Condition(column, op, value, pos=_pos(meta))

    def comp_op(self, meta: Meta, token: Token | None = None) -> str:
        op = "=" if token is None else token.value  # a bare '=' is filtered out of the tree
        return {"==": "=", "<>": "!="}.get(op, op)

    def module(self, meta: Meta, name: str) -> tuple[Literal["in", "of"], str]:
        return "in", name

    def module_of(self, meta: Meta, name: str) -> tuple[Literal["in", "of"], str]:
        return "of", name

    def execution(self, meta: Meta, token: Token) -> int:
        return self._int(token)

    def invocation_sel(self, meta: Meta, module: str, execution: int | None) -> InvocationSel:
        return InvocationSel(module, execution, pos=_pos(meta))

    def node_sel(self, meta: Meta, token: Token) -> NodeSel:
        node_id = int(str(token))
        if not -MAX_NODE_ID - 1 <= node_id <= MAX_NODE_ID:
            raise self._error(token, f"node id {token} is out of range; ids are 64-bit integers ({-MAX_NODE_ID - 1} to {MAX_NODE_ID})")
        return NodeSel(node_id, pos=_pos(meta))

    def token_sel(self, meta: Meta, token: Token) -> TokenSel:
        return TokenSel(self._string(token), pos=_pos(meta))

    def value_sel(self, meta: Meta, column: str, of: Selector) -> ValueSel:
        return ValueSel(column, of, pos=_pos(meta))

    # -- names and literals

    def name(self, meta: Meta, token: Token) -> str:
        if token.type == "NAME":
            return str(token)
        if len(token) == 2:
            raise self._error(token, "empty backquoted name; write the name between the backquotes")
        return token[1:-1]

    def literal(self, meta: Meta, token: Token) -> LiteralValue:
        kind = token.type
        if kind == "STRING":
            return self._string(token)
        if kind == "NUMBER":
            return self._number(token)
        return {"TRUE": True, "FALSE": False, "NULL": None}[kind]

    def _int(self, token: Token) -> int:
        try:
            return int(token)
        except ValueError:  # more digits than Python converts
            raise self._error(token, "number too long") from None

    def _number(self, token: Token) -> int | float:
        if _INTEGER.fullmatch(token):
            return self._int(token)
        value = float(token)
        if not math.isfinite(value):
            raise self._error(token, f"number {token} is out of range")
        return value

    def _string(self, token: Token) -> str:
        """The value of a STRING token; only \\" \\' \\\\ \\n \\t are escapes."""
        body, out, i = token[1:-1], [], 0
        while i < len(body):
            if body[i] != "\\":
                out.append(body[i])
                i += 1
                continue
            escaped = body[i + 1]  # the grammar guarantees a character after a backslash
            if escaped not in _UNESCAPES:
                raise self._error(token, f"unknown escape '\\{escaped}' in a string; "
                                  "the escapes are \\\" \\' \\\\ \\n and \\t", offset=1 + i)
            out.append(_UNESCAPES[escaped])
            i += 2
        return "".join(out)
