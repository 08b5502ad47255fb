"""SQL over annotated temporary views: ``spark.sql`` as the DataFrame methods whose rules record provenance.

Module code registers an annotated frame with ``df.createOrReplaceTempView("cars")`` (the tracker
keeps it, and Spark gets the plain data under the same name, as with provenance off) and queries
it with ``df.sparkSession.sql(...)``, the session an annotated frame gives (:class:`AnnotatedSession`).
The query is parsed by sqlglot (Spark dialect) and translated into calls of the annotated frame's
own methods, so SQL and the DataFrame API share one set of rewrite rules:

=============================================  ==============================================
SQL                                            DataFrame methods (and so rules)
=============================================  ==============================================
``FROM v [AS a]``, a derived table, a CTE      the registered frame, ``alias(a)``
``JOIN … ON c`` / ``USING (k)``                ``join(other, F.expr(c) | ["k"], how)``: inner,
                                               left/right/full outer, left semi/anti; ``CROSS
                                               JOIN`` and ``FROM a, b``: ``crossJoin``
``WHERE c``                                    ``filter(F.expr(c))``
``WHERE [NOT] EXISTS (SELECT … WHERE c)``,     a left semi (anti) join on the subquery's
``WHERE x IN (SELECT y …)``                    condition (and ``x = y``), correlated or not
``GROUP BY k`` + aggregates, ``HAVING h``      ``groupBy(k).agg(items)``, ``filter(h)``
``SELECT items``                               ``select(F.expr(item))`` (windows included)
``SELECT DISTINCT``                            ``distinct()``
``UNION [ALL]``, ``EXCEPT``, ``INTERSECT``     ``union`` (+ ``distinct``), ``subtract``, ``intersect``
``ORDER BY``, ``LIMIT n``                      ``orderBy``, ``limit``
``CREATE [OR REPLACE] TEMP VIEW v AS q``,      the tracker registers (forgets) ``q``'s frame
``DROP VIEW v``                                as ``v``; Spark runs the statement too
=============================================  ==============================================

Expressions are handed back to Spark as SQL text (``F.expr``), so Spark analyzes them as plain
Spark does; the whole query is also analyzed by Spark over the plain views first, so an invalid
query fails with Spark's own error and the result has the columns plain Spark gives. Anything
else (``EXCEPT ALL``, ``NATURAL JOIN``, ``LATERAL VIEW``, a scalar subquery, ``GROUPING SETS``…)
raises :class:`~lipspark.errors.UnsupportedOperation` naming the SQL construct and the DataFrame
alternative; a query over a Spark table or view that is not an annotated view of this tracker
is refused (it would read data without annotations).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.errors import SqlglotError

from lipspark.capture.rules.difference import EXCEPT_ALL_INSTEAD, EXCEPT_ALL_WHY
from lipspark.capture.rules.intersect import INTERSECT_ALL_INSTEAD, INTERSECT_ALL_WHY
from lipspark.errors import AnnotationError, UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from lipspark.frame import AnnotatedFrame
    from lipspark.tracker import Tracker

__all__ = ["AnnotatedSession", "sql", "DIALECT"]

#: sqlglot's name of the dialect queries are read in and expressions written back in.
DIALECT = "spark"
#: Prefix of the columns the translation adds for a moment (group keys, ORDER BY and HAVING
#: values not in the select list) and drops before the query's result.
_TEMP = "_lp_sql_"
_DATAFRAME = "write it with DataFrame methods on the annotated frame"
_NOT_ANNOTATED = ("SQL over {name!r}, a Spark table or view that is not an annotated view of this module invocation, would read "
                  "its data without annotations")
_NOT_ANNOTATED_FIX = ("register an annotated frame under that name with df.createOrReplaceTempView({name!r}) in the same "
                      "module (or pass the relation to the module as an input)")

#: Clauses of a SELECT the translation has no rule for: (the SQL construct, what to write instead).
_CLAUSES = {
    "laterals": ("LATERAL VIEW", "select(..., F.explode(col).alias(...)) on the annotated frame, then register it as a view"),
    "qualify": ("QUALIFY", "compute the window function in a derived table (or CTE) and filter it with WHERE outside"),
    "offset": ("OFFSET", "ORDER BY ... LIMIT, or a row_number() window in a derived table filtered with WHERE outside"),
    "sort": ("SORT BY", "ORDER BY, or df.sortWithinPartitions(...) on the annotated frame"),
    "distribute": ("DISTRIBUTE BY", "df.repartition(...) on the annotated frame"),
    "cluster": ("CLUSTER BY", "df.repartition(...).sortWithinPartitions(...) on the annotated frame"),
    "hint": ("a query hint (/*+ ... */)", "df.hint('broadcast') on the annotated frame before registering the view"),
    "windows": ("a WINDOW clause", "write each window inline: OVER (PARTITION BY ... ORDER BY ...)"),
    "pivots": ("PIVOT", "groupBy(...).pivot(col, values).agg(...) on the annotated frame"),
    "sample": ("TABLESAMPLE", "filter(F.rand(seed) < fraction) on the annotated frame"),
    "into": ("SELECT ... INTO", "return the frame from the module: the workflow writes its outputs"),
}
#: GROUP BY forms without a translation.
_GROUPINGS = {
    "rollup": ("GROUP BY ROLLUP", "df.rollup(...).agg(...) on the annotated frame"),
    "cube": ("GROUP BY CUBE", "df.cube(...).agg(...) on the annotated frame"),
    "grouping_sets": ("GROUP BY GROUPING SETS", "df.groupingSets([...], ...).agg(...) on the annotated frame"),
    "all": ("GROUP BY ALL", "name the grouping columns"),
    "totals": ("GROUP BY ... WITH TOTALS", "df.rollup(...).agg(...) on the annotated frame"),
}


def _refuse(construct: str, instead: str) -> UnsupportedOperation:
    return UnsupportedOperation(f"SQL {construct}", instead)


def _sql(node: exp.Expr) -> str:
    """``node`` as Spark SQL text (what ``F.expr`` is given)."""
    return node.sql(dialect=DIALECT)


def _expr(node: exp.Expr) -> Column:
    return F.expr(_sql(node))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _name_col(name: str) -> Column:
    """A column by its exact name (dots and parentheses in it are not syntax)."""
    return F.col(_quoted(name))


def _column(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _is_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` calls an aggregate function outside a window (``OVER``)."""
    for agg in node.find_all(exp.AggFunc):
        parent = agg.parent
        inside_window = False
        while parent is not None and parent is not node.parent:
            if isinstance(parent, exp.Window):
                inside_window = True
                break
            parent = parent.parent
        if not inside_window:
            return True
    return False


def _has_subquery(node: exp.Expr) -> bool:
    return node.find(exp.Select, exp.Subquery, exp.Exists) is not None


def _check_no_subquery(node: exp.Expr, where: str) -> None:
    if _has_subquery(node):
        raise _refuse(f"subquery in {where}",
                      "join with the subquery's result (crossJoin a one-row aggregate for a scalar subquery); in WHERE, "
                      "[NOT] EXISTS (SELECT ...) and x IN (SELECT y ...) as conditions joined by AND are translated")


def _int(node: exp.Expr | None, what: str) -> int:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    raise _refuse(f"{what} {_sql(node) if node is not None else ''} (not an integer literal)", f"a literal number in {what}")


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    """The conditions of ``a AND b AND …`` (through parentheses)."""
    if isinstance(node, exp.Paren):
        yield from _conjuncts(node.this)
    elif isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def _output_name(item: exp.Expr) -> str | None:
    """The name a select item is given in the query (its alias, or a column's own name); ``None``
    when Spark names it."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column) and not isinstance(item.this, exp.Star):
        return item.name
    return None


def _unaliased(item: exp.Expr) -> exp.Expr:
    return item.this if isinstance(item, exp.Alias) else item


@dataclass(frozen=True)
class _Source:
    """A relation of a FROM clause: the name its columns are qualified with, and its columns."""

    alias: str
    columns: tuple[str, ...]


class _Translator:
    """One query's translation: sqlglot's tree in, annotated frame method calls out."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self._fresh = 0

    def fresh(self, what: str) -> str:
        self._fresh += 1
        return f"{_TEMP}{what}{self._fresh}"

    def key(self, name: str) -> str:
        return name if self.tracker.case_sensitive else name.lower()

    # ------------------------------------------------------------------ queries
    def query(self, node: exp.Expr, scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        """A query (SELECT, a set operation, a parenthesized query) with its CTEs."""
        scope = self.ctes(node, scope)
        if isinstance(node, exp.Subquery):
            extra = [k for k, v in node.args.items() if v and k not in ("this", "alias", "with_")]
            if extra:
                raise _refuse(f"{extra[0].upper()} on a parenthesized query", "put it inside the parentheses")
            return self.query(node.this, scope)
        if isinstance(node, exp.Select):
            return self.select(node, scope)
        if isinstance(node, exp.SetOperation):
            return self.set_operation(node, scope)
        raise _refuse(f"statement {type(node).__name__.upper()}", "a query (SELECT ...); " + _DATAFRAME)

    def ctes(self, node: exp.Expr, scope: dict[str, AnnotatedFrame]) -> dict[str, AnnotatedFrame]:
        with_ = node.args.get("with_")
        if not with_:
            return scope
        if with_.args.get("recursive"):
            raise _refuse("WITH RECURSIVE", "an iteration of DataFrame joins in Python")
        scope = dict(scope)
        for cte in with_.expressions:
            frame = self.query(cte.this, scope)
            columns = [c.name for c in cte.args["alias"].columns] if cte.args["alias"].columns else None
            scope[self.key(cte.alias)] = frame.toDF(*columns) if columns else frame
        return scope

    def set_operation(self, node: exp.SetOperation, scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        extra = [k for k, v in node.args.items() if v and k not in ("this", "expression", "distinct", "with_", "order", "limit")]
        if extra:
            raise _refuse(f"{extra[0]} on {type(node).__name__.upper()}", _DATAFRAME)
        if node.args.get("by_name"):
            raise _refuse(f"{type(node).__name__.upper()} BY NAME", "unionByName on the annotated frames")
        left, right = self.query(node.this, scope), self.query(node.expression, scope)
        distinct = node.args.get("distinct", True) is not False
        if isinstance(node, exp.Union):
            out = left.union(right)
            out = out.distinct() if distinct else out
        elif isinstance(node, exp.Except):
            if not distinct:
                raise _refuse(f"EXCEPT ALL ({EXCEPT_ALL_WHY})", "EXCEPT (DISTINCT), which is " + EXCEPT_ALL_INSTEAD)
            out = left.subtract(right)
        else:
            if not distinct:
                raise _refuse(f"INTERSECT ALL ({INTERSECT_ALL_WHY})", "INTERSECT (DISTINCT), which is " + INTERSECT_ALL_INSTEAD)
            out = left.intersect(right)
        return self.order_limit(out, node, lambda e: self.over_output(e, out.columns))

    def over_output(self, node: exp.Expr, columns: list[str]) -> exp.Expr:
        """An ORDER BY expression over a result's columns: an ordinal is the column at that position."""
        if isinstance(node, exp.Literal) and not node.is_string:
            position = _int(node, "ORDER BY")
            if not 1 <= position <= len(columns):
                raise _refuse(f"ORDER BY {position} (the query has {len(columns)} columns)", "a position among the columns")
            return _column(columns[position - 1])
        return node

    def order_limit(self, frame: AnnotatedFrame, node: exp.Expr, resolve: Any) -> AnnotatedFrame:
        """ORDER BY (each expression made a column over ``frame`` by ``resolve``), then LIMIT."""
        order = node.args.get("order")
        if order:
            frame = frame.orderBy(*[self.ordering(o, resolve(o.this)) for o in order.expressions])
        limit = node.args.get("limit")
        if limit:
            frame = frame.limit(_int(limit.expression, "LIMIT"))
        return frame

    @staticmethod
    def ordering(ordered: exp.Ordered, node: exp.Expr) -> Column:
        _check_no_subquery(node, "ORDER BY")
        col = _expr(node)
        desc, nulls_first = bool(ordered.args.get("desc")), ordered.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = not desc  # Spark's default: nulls are smallest
        if desc:
            return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()

    # ------------------------------------------------------------------ SELECT
    def select(self, node: exp.Select, scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        for arg, value in node.args.items():
            if value and arg in _CLAUSES:
                raise _refuse(*_CLAUSES[arg])
        known = {"expressions", "from_", "joins", "where", "group", "having", "order", "limit", "distinct", "with_", "kind"}
        extra = [k for k, v in node.args.items() if v and k not in known]
        if extra:
            raise _refuse(f"clause {extra[0]!r} of a SELECT", _DATAFRAME)
        if node.args.get("kind"):
            raise _refuse(f"SELECT AS {node.args['kind']}", "select(F.struct(...)) on the annotated frame")
        distinct = node.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise _refuse("DISTINCT ON", "dropDuplicates([...]) on the annotated frame")
        if not node.args.get("from_"):
            raise _refuse("SELECT without FROM (it reads no annotated view)", "select from a registered annotated view")
        frame, sources = self.from_clause(node, scope)
        where = node.args.get("where")
        if where is not None:
            frame = self.where(frame, where.this, sources, scope)
        items = list(node.expressions)
        aggregate = bool(node.args.get("group")) or bool(node.args.get("having")) or any(_is_aggregate(i) for i in items)
        if aggregate:
            return self.aggregate(frame, node, items, sources)
        return self.projection(frame, node, items)

    def from_clause(self, node: exp.Select, scope: dict[str, AnnotatedFrame]) -> tuple[AnnotatedFrame, list[_Source]]:
        """FROM and its JOINs: one frame, and the relations whose names qualify its columns."""
        frame, source = self.relation(node.args["from_"].this, scope)
        sources = [source]
        for join in node.args.get("joins") or []:
            frame = self.join(frame, join, sources, scope)
        return frame, sources

    def relation(self, node: exp.Expr, scope: dict[str, AnnotatedFrame]) -> tuple[AnnotatedFrame, _Source]:
        """A table name (a CTE, else an annotated view), or a derived table, with its alias."""
        if isinstance(node, exp.Table):
            for arg, value in node.args.items():
                if value and arg in _CLAUSES:
                    raise _refuse(*_CLAUSES[arg])
            if node.args.get("db") or node.args.get("catalog"):
                raise _refuse(f"over {_sql(node)} (a table of a database or catalog)", _NOT_ANNOTATED_FIX.format(name=node.name))
            extra = [k for k, v in node.args.items() if v and k not in ("this", "alias")]
            if extra or not isinstance(node.this, exp.Identifier):
                raise _refuse(f"table {_sql(node)} (a table-valued function or table option)",
                              "a registered annotated view, or the DataFrame operation the function stands for")
            frame = self.named(node.name, scope)
            alias = node.alias or node.name
        elif isinstance(node, exp.Subquery):
            frame = self.query(node.this, scope)
            alias = node.alias or self.fresh("t")
        elif isinstance(node, exp.Values):
            raise _refuse("VALUES", "annotate the rows as a base relation (tracker.annotate) and register it as a view")
        else:
            raise _refuse(f"{type(node).__name__.upper()} in FROM", "a registered annotated view or a derived table (SELECT ...)")
        table_alias = node.args.get("alias")
        if table_alias is not None and table_alias.columns:
            frame = frame.toDF(*[c.name for c in table_alias.columns])
        return frame.alias(alias), _Source(alias, tuple(frame.columns))

    def named(self, name: str, scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        key = self.key(name)
        if key in scope:
            return scope[key]
        frame = self.tracker.view(name)
        if frame is not None:
            return frame
        if self.tracker.spark.catalog.tableExists(name):
            raise UnsupportedOperation(_NOT_ANNOTATED.format(name=name), _NOT_ANNOTATED_FIX.format(name=name))
        raise AnnotationError(f"SQL: no view {name!r} is registered (register an annotated frame with df.createOrReplaceTempView({name!r}))")

    def join(self, frame: AnnotatedFrame, join: exp.Join, sources: list[_Source], scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        if join.args.get("method"):
            raise _refuse(f"{join.args['method'].upper()} JOIN", "JOIN ... USING (the columns), or ON a condition")
        extra = [k for k, v in join.args.items() if v and k not in ("this", "side", "kind", "on", "using")]
        if extra:
            raise _refuse(f"{extra[0]} in a JOIN", _DATAFRAME)
        right, source = self.relation(join.this, scope)
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        on, using = join.args.get("on"), join.args.get("using")
        sources.append(source)
        if kind == "CROSS" or (kind in ("", "INNER") and not side and on is None and not using):
            if on is not None or using:
                raise _refuse("CROSS JOIN with a condition", "JOIN ... ON")
            return frame.crossJoin(right)
        if kind in ("SEMI", "ANTI"):
            if side not in ("", "LEFT"):
                raise _refuse(f"{side} {kind} JOIN", f"LEFT {kind} JOIN with the sides swapped")
            how = "left_semi" if kind == "SEMI" else "left_anti"
        elif side in ("LEFT", "RIGHT", "FULL"):
            how = side.lower()
        elif kind in ("", "INNER", "OUTER") and not side:
            how = "inner"
        else:
            raise _refuse(f"{side} {kind} JOIN".strip(), "INNER, LEFT/RIGHT/FULL OUTER, LEFT SEMI, LEFT ANTI or CROSS JOIN")
        if using:
            return frame.join(right, [u.name for u in using], how)
        if on is None:
            return frame.join(right, F.lit(True), how)
        _check_no_subquery(on, "JOIN ... ON")
        return frame.join(right, _expr(on), how)

    # ------------------------------------------------------------------ WHERE
    def where(self, frame: AnnotatedFrame, condition: exp.Expr, sources: list[_Source],
              scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        """A filter by the conditions without subqueries, then a semi (anti) join per [NOT] EXISTS or IN."""
        plain, subqueries = [], []
        for c in _conjuncts(condition):
            negated = isinstance(c, exp.Not)
            inner = c.this if negated else c
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Exists) or (isinstance(inner, exp.In) and inner.args.get("query") is not None):
                if negated and isinstance(inner, exp.In):
                    raise _refuse("NOT IN (SELECT ...) (a null in the subquery makes it unknown for every row)",
                                  "NOT EXISTS (SELECT ... WHERE inner.y = outer.x), a left anti join, where nulls never match")
                subqueries.append((inner, negated))
            else:
                plain.append(c)
        if plain:
            cond = exp.and_(*plain) if len(plain) > 1 else plain[0]
            _check_no_subquery(cond, "WHERE (other than [NOT] EXISTS or IN (SELECT ...) joined by AND)")
            frame = frame.filter(_expr(cond))
        for sub, negated in subqueries:
            frame = self.subquery_join(frame, sub, negated, sources, scope)
        return frame

    def subquery_join(self, frame: AnnotatedFrame, node: exp.Exists | exp.In, negated: bool, outer: list[_Source],
                      scope: dict[str, AnnotatedFrame]) -> AnnotatedFrame:
        """``[NOT] EXISTS (SELECT … FROM s WHERE c)`` as ``join(s, c, "left_semi" | "left_anti")``;
        ``x IN (SELECT y FROM s WHERE c)`` as ``join(s, x = y AND c, "left_semi")``."""
        how = "left_anti" if negated else "left_semi"
        sub = node.this if isinstance(node, exp.Exists) else node.args["query"]
        while isinstance(sub, exp.Subquery) and not any(v for k, v in sub.args.items() if k != "this"):
            sub = sub.this
        simple = isinstance(sub, exp.Select) and not any(
            v for k, v in sub.args.items() if k not in ("expressions", "from_", "joins", "where")) and not any(
            _is_aggregate(e) or e.find(exp.Window) for e in sub.expressions)  # SELECT max(w) … has a row whatever WHERE keeps
        if simple and isinstance(node, exp.Exists):  # only what cannot be an aggregate sqlglot does not know (SELECT 1, *, a column)
            simple = all(isinstance(_unaliased(e), (exp.Star, exp.Literal, exp.Column, exp.Null, exp.Boolean)) for e in sub.expressions)
        if not simple:
            if isinstance(node, exp.Exists):
                raise _refuse("EXISTS over a query selecting more than constants or columns, or with GROUP BY, DISTINCT, "
                              "LIMIT, a set operation or CTEs (such as SELECT max(w): a row whatever WHERE keeps)",
                              "EXISTS (SELECT 1 FROM view WHERE ...), or a left semi join with the query's result")
            result = self.query(sub, scope)
            if len(result.columns) != 1:
                raise _refuse(f"IN over a query of {len(result.columns)} columns", "a query of one column")
            alias = self.fresh("q")
            lhs = self.qualify(node.this, [], outer)
            _check_no_subquery(lhs, "IN (...)")
            return frame.join(result.alias(alias), _expr(lhs) == F.col(f"{alias}.{_quoted(result.columns[0])}"), how)
        assert isinstance(sub, exp.Select)
        sub = sub.copy()
        inner_scope = dict(scope)
        taken = {self.key(s.alias) for s in outer}
        renames: dict[str, str] = {}
        for rel in [sub.args["from_"].this, *[j.this for j in sub.args.get("joins") or []]]:
            name = rel.alias_or_name
            if self.key(name) in taken:  # the same view inside and out: the inner one gets a name of its own
                renames[self.key(name)] = fresh = self.fresh("s")
                rel.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
        for col in sub.find_all(exp.Column):
            if col.table and self.key(col.table) in renames:
                col.set("table", exp.to_identifier(renames[self.key(col.table)]))
        inner, sources = self.from_clause(sub, inner_scope)
        where = sub.args.get("where")
        conds = [self.qualify(where.this, sources, outer)] if where is not None else []
        if isinstance(node, exp.In):
            if len(sub.expressions) != 1 or isinstance(sub.expressions[0], exp.Star):
                raise _refuse("IN over a query that does not select one column", "a query of one column")
            conds.insert(0, exp.EQ(this=self.qualify(node.this, [], outer),
                                   expression=self.qualify(_unaliased(sub.expressions[0]), sources, outer)))
        for c in conds:
            _check_no_subquery(c, "a subquery's WHERE")
        if not conds:
            return frame.join(inner, F.lit(True), how)
        return frame.join(inner, _expr(exp.and_(*conds) if len(conds) > 1 else conds[0]), how)

    def qualify(self, node: exp.Expr, inner: list[_Source], outer: list[_Source]) -> exp.Expr:
        """``node`` with each unqualified column named by the relation SQL resolves it to: the
        subquery's own first, then the outer query's (when exactly one of them has it)."""
        node = node.copy()
        for col in list(node.find_all(exp.Column)):
            if col.table or isinstance(col.this, exp.Star):
                continue
            for sources in (inner, outer):
                owners = [s for s in sources if any(self.key(c) == self.key(col.name) for c in s.columns)]
                if len(owners) == 1:
                    col.set("table", exp.to_identifier(owners[0].alias))
                    break
                if owners:
                    break
        return node

    def same(self, a: exp.Expr, b: exp.Expr) -> bool:
        """Whether two expressions are one (a column named with or without its relation is one)."""
        if isinstance(a, exp.Column) and isinstance(b, exp.Column):
            return self.key(a.name) == self.key(b.name) and (not a.table or not b.table or self.key(a.table) == self.key(b.table))
        return a == b

    # ------------------------------------------------------------------ SELECT without aggregates
    def projection(self, frame: AnnotatedFrame, node: exp.Select, items: list[exp.Expr]) -> AnnotatedFrame:
        cols: list[Any] = []
        for item in items:
            _check_no_subquery(item, "the select list")
            if isinstance(item, exp.Star):
                cols.append("*")
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                cols.append(f"{item.table}.*")
            elif isinstance(item, exp.Alias):
                cols.append(_expr(item.this).alias(item.alias))
            else:
                cols.append(_expr(item))
        aliases = {self.key(i.alias): i.this for i in items if isinstance(i, exp.Alias)}
        star = any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star)) for i in items)
        distinct = node.args.get("distinct") is not None
        order = node.args.get("order")
        ordered = list(order.expressions) if order else []
        over_output: list[exp.Expr | None] = []  # each ORDER BY expression over the select's output, if it is one
        for o in ordered:
            e = o.this
            same = [j for j, i in enumerate(items) if e == _unaliased(i)]
            if isinstance(e, exp.Literal) and not e.is_string:
                over_output.append(e)  # a position, resolved over the output's columns
            elif isinstance(e, exp.Column) and not e.table and self.key(e.name) in aliases:
                over_output.append(_column(next(i.alias for i in items if isinstance(i, exp.Alias) and self.key(i.alias) == self.key(e.name))))
            elif same and not star:
                over_output.append(exp.Literal.number(same[0] + 1))  # a selected expression: its position
            else:
                over_output.append(None)
        if all(e is not None for e in over_output):
            out = frame.select(*cols)
            names = out.columns
            out = out.distinct() if distinct else out
            positions = iter([e for e in over_output if e is not None])
            return self.order_limit(out, node, lambda e: self.over_output(next(positions), names))
        # ORDER BY an expression of the source's columns: order (and limit) the source, then select
        if distinct:
            raise _refuse("SELECT DISTINCT ... ORDER BY an expression not in the select list", "order by a selected column")
        if any(i.find(exp.Window) for i in items):
            raise _refuse("ORDER BY an expression not in the select list of a query with window functions",
                          "select the expression too, and order by its alias")

        def unalias(n: exp.Expr) -> exp.Expr:  # ORDER BY reads a select alias before a column of the source
            if isinstance(n, exp.Column) and not n.table and self.key(n.name) in aliases:
                return aliases[self.key(n.name)].copy()
            return n

        def over_source(e: exp.Expr) -> exp.Expr:
            if isinstance(e, exp.Literal) and not e.is_string:
                position = _int(e, "ORDER BY")
                if star or not 1 <= position <= len(items):
                    raise _refuse(f"ORDER BY {position} beside an expression of unselected columns", "order by names")
                return _unaliased(items[position - 1])
            return e.copy().transform(unalias)

        resolved = iter([over_source(o.this) for o in ordered])
        return self.order_limit(frame, node, lambda e: next(resolved)).select(*cols)

    # ------------------------------------------------------------------ GROUP BY, aggregates, HAVING
    def aggregate(self, frame: AnnotatedFrame, node: exp.Select, items: list[exp.Expr],
                  sources: list[_Source]) -> AnnotatedFrame:
        """``groupBy(keys).agg(every select item)``, then HAVING as a filter, DISTINCT, ORDER BY,
        LIMIT; the keys (and values HAVING or ORDER BY need that the select list lacks) are
        columns of the translation's own, dropped at the end."""
        for item in items:
            _check_no_subquery(item, "the select list")
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                raise _refuse("SELECT * with GROUP BY or aggregates", "name the grouping columns")
            if item.find(exp.Window):
                raise _refuse("window function in a query with GROUP BY or aggregates",
                              "aggregate in a derived table (or CTE), then apply the window to its result in the outer query")
        exprs = [_unaliased(i) for i in items]
        group = node.args.get("group")
        keys: list[exp.Expr] = []
        if group:
            for arg, value in group.args.items():
                if value and arg in _GROUPINGS:
                    raise _refuse(*_GROUPINGS[arg])
            aliases = {self.key(i.alias): i.this for i in items if isinstance(i, exp.Alias)}
            source_columns = {self.key(c) for s in sources for c in s.columns}
            for k in group.expressions:
                if isinstance(k, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                    raise _refuse(*_GROUPINGS[{exp.Rollup: "rollup", exp.Cube: "cube"}.get(type(k), "grouping_sets")])
                _check_no_subquery(k, "GROUP BY")
                if isinstance(k, exp.Literal) and not k.is_string:  # GROUP BY 1: the first select item
                    position = _int(k, "GROUP BY")
                    if not 1 <= position <= len(exprs):
                        raise _refuse(f"GROUP BY {position} (the select list has {len(exprs)} items)", "a position in the select list")
                    k = exprs[position - 1]
                elif isinstance(k, exp.Column) and not k.table and self.key(k.name) in aliases and self.key(k.name) not in source_columns:
                    k = aliases[self.key(k.name)]  # GROUP BY a select alias
                keys.append(k)
        key_names = [f"{_TEMP}g{j}" for j in range(len(keys))]
        key_cols = [_expr(k).alias(n) for k, n in zip(keys, key_names)]
        plain = frame.to_plain()
        spark_names = plain.groupBy(*key_cols).agg(*[_expr(e) for e in exprs]).columns[len(keys):] if exprs else []
        names = [_output_name(i) or spark_names[j] for j, i in enumerate(items)]
        # the aggregation's own names: the output's, but a repeated one (SELECT a.k, b.k) its own until the end
        seen: set[str] = set()
        inner: list[str] = []
        for j, n in enumerate(names):
            inner.append(n if self.key(n) not in seen else f"{_TEMP}s{j}")
            seen.add(self.key(n))
        extras: list[Column] = []

        def over_groups(e: exp.Expr, *, order: bool) -> exp.Expr:
            """``e`` over the aggregation's output: keys and aggregates become its columns."""
            def swap(n: exp.Expr) -> exp.Expr:
                for j, k in enumerate(keys):
                    if self.same(n, k):
                        return _column(key_names[j])
                if isinstance(n, exp.AggFunc):
                    for j, x in enumerate(exprs):
                        if n == x:
                            return _column(inner[j])
                    name = self.fresh("x")
                    extras.append(_expr(n).alias(name))
                    return _column(name)
                if isinstance(n, exp.Column) and not n.table:
                    named = [inner[j] for j, i in enumerate(items) if isinstance(i, exp.Alias) and self.key(i.alias) == self.key(n.name)]
                    if named and (order or not any(self.key(n.name) == self.key(c) for s in sources for c in s.columns)):
                        return _column(named[0])  # a select alias (ORDER BY prefers it; HAVING a source column)
                return n
            return e.copy().transform(swap)

        having = node.args.get("having")
        having_cond = None
        if having is not None:
            _check_no_subquery(having.this, "HAVING")
            having_cond = over_groups(having.this, order=False)
        order = node.args.get("order")
        ordered = []
        for o in order.expressions if order else []:
            _check_no_subquery(o.this, "ORDER BY")
            ordered.append(self.over_output(o.this, inner) if isinstance(o.this, exp.Literal) else over_groups(o.this, order=True))
        grouped = frame.groupBy(*key_cols).agg(*[_expr(e).alias(n) for e, n in zip(exprs, inner)], *extras)
        if having_cond is not None:
            grouped = grouped.filter(_expr(having_cond))
        if node.args.get("distinct") is not None:
            if any(c.name not in inner for o in ordered for c in o.find_all(exp.Column)):
                raise _refuse("SELECT DISTINCT ... ORDER BY an expression not in the select list", "order by a selected column")
            grouped = grouped.select(*[_name_col(n) for n in inner]).distinct()
        resolved = iter(ordered)
        grouped = self.order_limit(grouped, node, lambda e: next(resolved))
        if grouped.columns == names:
            return grouped
        return grouped.select(*[_name_col(i) if i == n else _name_col(i).alias(n) for i, n in zip(inner, names)])


def _parse(text: str) -> exp.Expr:
    """The one statement of ``text`` as sqlglot reads it (Spark dialect)."""
    try:
        statements = [s for s in sqlglot.parse(text, read=DIALECT) if s is not None]
    except SqlglotError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UnsupportedOperation(f"SQL the translator cannot parse ({first})",
                                   f"check the query; if plain Spark runs it, {_DATAFRAME}") from err
    if len(statements) != 1:
        raise _refuse(f"text of {len(statements)} statements", "one query per sql() call")
    return statements[0]


def sql(tracker: Tracker, text: str) -> AnnotatedFrame | DataFrame:
    """``text`` (one query) over the tracker's annotated views, as annotated frame method calls.

    The query is first analyzed by Spark over the plain views (an invalid query fails as plain
    Spark fails), and the result has plain Spark's column names and types. ``CREATE [OR REPLACE]
    TEMP VIEW v AS query`` registers the query's annotated frame as ``v`` and ``DROP VIEW v``
    forgets it (each returns Spark's empty result); any other statement is refused, unrun.
    """
    tree = _parse(text)
    if isinstance(tree, (exp.Create, exp.Drop)) and (tree.args.get("kind") or "").upper() == "VIEW":
        return _view_statement(tracker, text, tree)
    if not isinstance(tree, (exp.Select, exp.SetOperation, exp.Subquery)):
        # never handed to Spark: a statement other than a query would run (create, insert, drop, set)
        raise _refuse(f"statement {type(tree).__name__.upper()} (only queries and temporary views are translated)",
                      "queries (SELECT ...) and CREATE TEMP VIEW ... AS SELECT; return frames from the module, which the workflow writes")
    plain = tracker.spark.sql(text)  # Spark's own analysis of the plain query: its errors, its columns
    return _translated(tracker, tree, plain)


def _translated(tracker: Tracker, tree: exp.Expr, plain: DataFrame, names: list[str] | None = None) -> AnnotatedFrame:
    """The query ``tree`` as the annotated frame's methods, checked against ``plain``, Spark's
    reading of it (its columns renamed ``names``, as a view's column list does)."""
    _check_views(tracker, tree)
    _check_read_alike(tracker, tree, plain, names)
    out = _Translator(tracker).query(tree, {})
    return _as_plain_names(out, plain)


def _view_statement(tracker: Tracker, text: str, tree: exp.Create | exp.Drop) -> DataFrame:
    """``CREATE [OR REPLACE] TEMP VIEW v [(columns)] AS query`` and ``DROP VIEW [IF EXISTS] v``: Spark
    runs the statement over the plain views (its errors, its reading of the query), then the
    tracker registers the query's annotated frame as ``v`` (Spark's ``v`` becomes its plain data,
    the same rows) or forgets ``v``."""
    if isinstance(tree, exp.Drop):
        (table,) = tree.args.get("tables") or [None]
        if table is None or table.args.get("db"):
            raise _refuse("DROP VIEW of several views or of a database's view", "one DROP VIEW name per sql() call")
        if tracker.view(table.name) is None and (not tree.args.get("exists") or tracker.spark.catalog.tableExists(table.name)):
            raise _refuse(f"DROP VIEW {table.name} (not a view this module invocation registered from an annotated frame)",
                          "drop only the views the module registered; spark.catalog.dropTempView for others")
        result = tracker.spark.sql(text)  # Spark drops its view (IF EXISTS over none: nothing happens)
        tracker.drop_view(table.name)
        return result
    properties = tree.args.get("properties")
    props = [type(p).__name__ for p in (properties.expressions if properties else [])]
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    extra = [k for k, v in tree.args.items()
             if v and k not in ("this", "kind", "replace", "expression", "exists", "properties")]
    if props != ["TemporaryProperty"] or extra or not isinstance(target, exp.Table) or target.args.get("db"):
        raise _refuse("CREATE VIEW other than CREATE [OR REPLACE] TEMP VIEW name AS query (a permanent or global view "
                      "outlives the module invocation)", "CREATE OR REPLACE TEMP VIEW name AS SELECT ..., or df.createOrReplaceTempView(name)")
    query = tree.args["expression"]
    if not isinstance(query, (exp.Select, exp.SetOperation, exp.Subquery)):
        raise _refuse(f"CREATE TEMP VIEW ... AS {type(query).__name__.upper()}", "CREATE TEMP VIEW name AS SELECT ...")
    name = target.name
    result = tracker.spark.sql(text)  # Spark's own statement: its errors (a taken name, IF NOT EXISTS), its reading of the query
    names = [c.name for c in tree.this.expressions] if isinstance(tree.this, exp.Schema) else None
    frame = _translated(tracker, query, tracker.spark.table(_quoted(name)), names)
    tracker.register_view(name, frame, replace=True)
    return result


def _check_views(tracker: Tracker, tree: exp.Expr) -> None:
    """Refuse a query naming an annotated view whose Spark view plain code has replaced since
    (``plain_df.createOrReplaceTempView(name)``): provenance off would read the plain frame."""
    for table in tree.find_all(exp.Table):
        frame = tracker.view(table.name) if not table.args.get("db") else None
        if frame is not None and not tracker.spark.table(_quoted(table.name)).sameSemantics(frame.to_plain()):
            raise UnsupportedOperation(
                f"SQL over {table.name!r}, whose Spark view a plain DataFrame replaced after an annotated frame was registered "
                "under that name: provenance off would read the plain frame's rows, which have no annotations",
                f"register an annotated frame as {table.name!r} (df.createOrReplaceTempView), or give the plain one another name")


def _check_read_alike(tracker: Tracker, tree: exp.Expr, plain: DataFrame, names: list[str] | None = None) -> None:
    """Refuse a query sqlglot reads otherwise than Spark: the translation gives Spark sqlglot's
    text of each expression, so the query as sqlglot writes it back must be the same query to
    Spark — the same analyzed plan (``nvl`` written ``COALESCE`` is not: the same optimized one).
    sqlglot reads ``'it''s'`` as ``CONCAT('it', 's')`` and ``log10(x)`` as ``LOG(10, x)``, which
    Spark computes in another way; ``rand()`` without a seed draws its seed when analyzed."""
    commas = tree.copy()  # sqlglot reads FROM a, b as a CROSS JOIN b, which Spark plans as another join type
    for join in commas.find_all(exp.Join):
        if (join.kind or "").upper() == "CROSS" and not join.args.get("on") and not join.args.get("using"):
            join.set("kind", None)
    optimized = plain._jdf.queryExecution().optimizedPlan()
    for text in dict.fromkeys([_sql(tree), _sql(commas)]):
        rendered = tracker.spark.sql(text)
        rendered = rendered.toDF(*names) if names else rendered
        if plain.sameSemantics(rendered) or optimized.sameResult(rendered._jdf.queryExecution().optimizedPlan()):
            return
    raise _refuse("that sqlglot reads otherwise than Spark (such as 'it''s', log10(x), rand() without a seed): its "
                  f"translation would compute other values than Spark computes (sqlglot reads it as: {_sql(tree)})",
                  "write it as both read it ('it\\'s', log(10, x), rand(seed)), or with DataFrame methods")


def _as_plain_names(out: AnnotatedFrame, plain: DataFrame) -> AnnotatedFrame:
    """``out`` with the column names of ``plain``, whose types it must have (else the translation
    is wrong: refused, never returned)."""
    got, want = out.schema.fields, plain.schema.fields
    if [f.dataType.simpleString() for f in got] != [f.dataType.simpleString() for f in want]:  # nullability aside
        raise AnnotationError(
            "internal: the translation of the SQL query computes columns "
            f"{', '.join(f'{f.name} {f.dataType.simpleString()}' for f in got)} where Spark computes "
            f"{', '.join(f'{f.name} {f.dataType.simpleString()}' for f in want)}; please report it, and write the query with "
            "DataFrame methods meanwhile")
    names = [f.name for f in want]
    return out if out.columns == names else out.toDF(*names)


class AnnotatedSession:
    """``df.sparkSession`` of an annotated frame: ``sql`` and ``table`` read the annotated views of
    its tracker (registered with ``createOrReplaceTempView``) and return annotated frames; every
    other attribute is the SparkSession's own.

    Examples
    --------
    >>> from lipspark import Tracker, get_spark
    >>> spark = get_spark()
    >>> t = Tracker(spark)
    >>> cars = t.annotate(spark.createDataFrame([("C1", "Accord", 90), ("C2", "Civic", 120), ("C3", "Civic", 130)],
    ...                                         "CarId string, Model string, Price int"), "Cars", key=["CarId"])
    >>> cars.createOrReplaceTempView("cars")
    >>> out = cars.sparkSession.sql("SELECT Model, count(*) AS n FROM cars WHERE Price > 100 GROUP BY Model")
    >>> [(r.row.Model, r.row.n, str(t.graph().polynomial(r.annotation))) for r in out.collect_annotated()]
    [('Civic', 2, 'δ(Cars:C2 + Cars:C3)')]
    """

    def __init__(self, tracker: Tracker) -> None:
        self._tracker = tracker

    def sql(self, sqlQuery: str, args: Any = None, **kwargs: Any) -> AnnotatedFrame | DataFrame:
        """The query over the annotated views, translated into the annotated frame's methods (a
        ``CREATE TEMP VIEW … AS`` query or ``DROP VIEW``: Spark's empty result)."""
        if args is not None or kwargs:
            raise _refuse("parameters (spark.sql(query, args) or keyword arguments)",
                          "write the values into the query text and register each annotated frame it reads with "
                          "df.createOrReplaceTempView(name)")
        return sql(self._tracker, sqlQuery)

    def table(self, tableName: str) -> AnnotatedFrame:
        """The annotated view ``tableName`` (``spark.table``)."""
        tree = _parse(f"SELECT * FROM {_quoted(tableName)}")
        return _translated(self._tracker, tree, self._tracker.spark.table(_quoted(tableName)))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_tracker":
            raise AttributeError(name)
        return getattr(self._tracker.spark, name)

    def __repr__(self) -> str:
        return f"AnnotatedSession({self._tracker.spark!r})"
