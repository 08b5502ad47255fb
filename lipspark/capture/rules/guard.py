"""A filter's condition over values, per row: which rows pass is itself provenance.

A selection keeps each row's annotation (Lipstick §3.2). When its condition reads a value with a
v-node — HAVING over an aggregate (``big_qty > 300``), a threshold from a one-row aggregate
(``value > threshold``, ``total = max_total``) — the rows that pass depend on that value, and a
what-if that changes it may keep a row a re-run drops, or miss one it adds. Following the
semimodule treatment of comparisons over aggregates (Amsterdamer, Deutch and Tannen,
"Provenance for aggregate queries", PODS 2011: a row kept by ``v > c`` is annotated ``p · [v >
c]``), the rule records the condition **per input row** as v-nodes:

* the condition is rewritten to tests of one value against zero: ``a > b`` is POSITIVE(a +
  (−b)), ``a < b`` POSITIVE(b + (−a)), ``a ≥ b`` NOT(POSITIVE(b + (−a))), ``a = b`` ZERO(a +
  (−b)), combined by AND, OR and NOT; ``+ − × /`` over the row's values are ADD, NEGATE, MULTIPLY,
  INVERSE nodes, a valued column is its v-node, and what reads no valued column (a plain column,
  a literal, ``s = 'x'``) is a CONSTANT per row (it does not change when tuples are deleted);
* node ids are content hashes (segment and children, or the constant's value), so rows sharing
  a sub-condition share its nodes (``−threshold`` once for every row of a cross join);
* each row the filter **keeps** gets one more factor, a · p-node whose one child is its
  condition: a what-if that makes the condition false (or null) removes the row, through
  Definition 4.2 (:mod:`lipspark.query.deletion`); its polynomial is unchanged (the · over no
  p-node is 1);
* each row the filter **drops** has its condition recorded too (false or null): a what-if that
  makes it true says the row appears, and is not exact.

Conditions this cannot express (``round(total) > 3``, ``total IS NULL``, a string function of a
value) record one CONDITION node instead (:mod:`~lipspark.capture.rules.condition`): a what-if
that changes a value it read says unknown.

>>> from lipspark.capture.plan import _Node
>>> v = _Node("AttributeReference", {"name": "tot"}, [])
>>> c = _Node("Literal", {"value": "300", "dataType": "integer"}, [])
>>> condition_formula(_Node("GreaterThan", {}, [v, c]), {"tot"})
('pos', ('sub', ('v', 'tot'), ('c', 1)))
>>> condition_formula(_Node("IsNull", {}, [v]), {"tot"}) is None
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.capture.plan import DESCEND, _seq, arithmetic_formula
from lipspark.capture.rules._common import value_json
from lipspark.capture.rules.latent import Latent, Parts
from lipspark.vocabulary import Op, RowNodeSegment
from lipspark.vocabulary.ops import BOOLEAN_OPS
from lipspark.vocabulary.columns import factor, value_col
from lipspark.vocabulary.ids import node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.capture.plan import _Node
    from lipspark.frame import AnnotatedFrame

__all__ = ["condition_formula", "guarded_filter"]

_COMPARE = {"GreaterThan", "LessThan", "GreaterThanOrEqual", "LessThanOrEqual", "EqualTo"}


def _reads(n: "_Node", valued: set[str]) -> bool:
    return any(x.cls == "AttributeReference" and str(x.fields.get("name")) in valued for x in n.walk())


def condition_formula(tree: "_Node", valued: set[str], jexpr: Any = None) -> Any:
    """The condition as nested tuples of tests against zero (see the module's text), its parts
    that read no valued column as ``("c", k)`` — the k-th such part, in the order
    :func:`parts_of` lists them — and valued columns as ``("v", name)``; ``None`` when some
    part reading a value is no comparison of arithmetic over values. A cast to an integer type
    is arithmetic only when what it casts is an integer (its type read from ``jexpr``, the
    condition's JVM node, walked in step: without it, such a cast is not)."""
    count = [0]

    def const() -> Any:
        count[0] += 1
        return ("c", count[0])

    def kids(n: "_Node", j: Any) -> list[Any]:
        js = _seq(j.children()) if j is not None else []
        return js if len(js) == len(n.children) else [None] * len(n.children)

    def leaf(n: "_Node") -> Any:
        if not _reads(n, valued):
            return const()
        if n.cls == "AttributeReference":
            return ("v", str(n.fields["name"]))
        return DESCEND

    def arith(n: "_Node", j: Any) -> Any:
        return arithmetic_formula(n, j, leaf)

    def test(n: "_Node", j: Any) -> Any:
        if not _reads(n, valued):
            return const()
        jk = kids(n, j)
        if n.cls in ("And", "Or") and len(n.children) == 2:
            a, b = test(n.children[0], jk[0]), test(n.children[1], jk[1])
            return None if a is None or b is None else (n.cls.lower(), a, b)
        if n.cls == "Not" and len(n.children) == 1:
            a = test(n.children[0], jk[0])
            return None if a is None else ("not", a)
        if n.cls in _COMPARE and len(n.children) == 2:
            left, right = arith(n.children[0], jk[0]), arith(n.children[1], jk[1])
            if left is None or right is None:
                return None
            if n.cls == "GreaterThan":
                return ("pos", ("sub", left, right))
            if n.cls == "LessThan":
                return ("pos", ("sub", right, left))
            if n.cls == "GreaterThanOrEqual":
                return ("not", ("pos", ("sub", right, left)))
            if n.cls == "LessThanOrEqual":
                return ("not", ("pos", ("sub", left, right)))
            return ("zero", ("sub", left, right))
        return None

    return test(tree, jexpr)


def parts_of(tree: "_Node", jexpr: Any, valued: set[str]) -> list[tuple["_Node", Any]]:
    """The condition's parts that read no valued column (tree node, JVM node), in the order
    :func:`condition_formula` numbers them (both walk the tree the same way)."""
    out: list[tuple["_Node", Any]] = []

    def walk(n: "_Node", j: Any) -> None:
        if not _reads(n, valued):
            out.append((n, j))
            return
        for c, jc in zip(n.children, _seq(j.children())):
            walk(c, jc)

    walk(tree, jexpr)
    return out


@dataclass
class _Slot:
    """One node per row: its operator, id, value and children columns; ``rows`` the rows to
    record it for (``None``: every row; a literal's is one row)."""

    op: Op
    id: Column
    value: Column
    children: list[Column] = field(default_factory=list)
    rows: "Callable[[DataFrame], DataFrame] | None" = None


def guarded_filter(frame: "AnnotatedFrame", out: DataFrame, tree: "_Node", jcond: Any, valued: Sequence[str],
                   text: str, condition: "Column | str") -> "AnnotatedFrame | None":
    """The filter ``out`` of ``frame`` by ``condition`` with its condition over values recorded
    per row (see the module's text), carrying the rows it drops as latent rows
    (:mod:`~lipspark.capture.rules.latent`), or ``None`` when the condition is no comparison of
    arithmetic over values."""
    names = set(valued)
    formula = condition_formula(tree, names, jcond)
    if formula is None:
        return None
    df = frame.with_annotations()
    parts = parts_of(tree, jcond, names)
    tracker = frame.tracker
    slots: list[_Slot] = []
    segs: dict[Op, int] = {}

    def seg(op: Op) -> int:
        """The segment of the condition's nodes of operator ``op`` (numbered in order of use)."""
        if op not in segs:
            segs[op] = tracker.builder.allocate()
        return segs[op]

    def constant(value: Column, rows: "Callable[[DataFrame], DataFrame] | None" = None) -> Column:
        """A CONSTANT node per distinct value (its id is its value's)."""
        text_ = value_json(value, df.select(value.alias("x")).schema[0].dataType)
        nid = node_hash_col(seg(Op.CONSTANT), text_)
        slots.append(_Slot(Op.CONSTANT, nid, text_, rows=rows))
        return nid

    def literal(k: int) -> bool:
        return not any(x.cls == "AttributeReference" for x in parts[k - 1][0].walk())

    def one_row(d: DataFrame) -> DataFrame:
        return d.limit(1)

    def leaf(k: int, fn: Callable[[Column], Column]) -> tuple[Column, Column]:
        value = fn(F.expr(str(parts[k - 1][1].sql())))
        return constant(value, one_row if literal(k) else None), value

    def build(f: Any) -> tuple[Column, Column]:
        """(id, Spark value) of formula ``f``'s node."""
        kind = f[0]
        if kind == "c":
            return leaf(f[1], lambda c: c)
        if kind in ("neg", "inv") and f[1][0] == "c":  # minus or one over a constant: a constant
            return leaf(f[1][1], (lambda c: -c) if kind == "neg" else (lambda c: F.try_divide(F.lit(1), c)))
        if kind == "v":
            own = F.col(value_col(f[1]))
            value = F.col(f"`{f[1]}`")
            # a row whose column has no v-node (its value is no aggregate's here): a constant
            return F.coalesce(own, constant(value, lambda d: d.where(own.isNull()))), value
        if kind == "sub":
            a, b = build(f[1]), build(("neg", f[2]))
            return node(Op.ADD, [a, b], a[1] + b[1])
        if kind == "div":
            a, b = build(f[1]), build(("inv", f[2]))
            return node(Op.MULTIPLY, [a, b], a[1] * b[1])
        kids = [build(x) for x in f[1:]]
        values = [k[1] for k in kids]
        spark = {
            "neg": lambda: -values[0], "inv": lambda: F.try_divide(F.lit(1), values[0]), "add": lambda: values[0] + values[1],
            "mul": lambda: values[0] * values[1], "pos": lambda: values[0] > 0, "zero": lambda: values[0] == 0,
            "and": lambda: values[0] & values[1], "or": lambda: values[0] | values[1], "not": lambda: ~values[0],
        }
        ops = {"neg": Op.NEGATE, "inv": Op.INVERSE, "add": Op.ADD, "mul": Op.MULTIPLY, "pos": Op.POSITIVE, "zero": Op.ZERO,
               "and": Op.AND, "or": Op.OR, "not": Op.NOT}
        return node(ops[kind], kids, spark[kind]())

    def node(op: Op, kids: list[tuple[Column, Column]], value: Column) -> tuple[Column, Column]:
        ids = [k[0] for k in kids]
        nid = node_hash_col(seg(op), *ids)
        slots.append(_Slot(op, nid, value_json(value, df.select(value.alias("x")).schema[0].dataType), ids))
        return nid, value

    root, _ = build(formula)
    recorded: dict[Op, list[DataFrame]] = {}
    for s in slots:
        rows = s.rows(df) if s.rows is not None else df
        recorded.setdefault(s.op, []).append(rows.select(
            s.id.alias("id"), F.array(*s.children).cast("array<bigint>").alias("children"), s.value.alias("value")))
    for op, frames in recorded.items():
        nodes = frames[0]
        for f in frames[1:]:
            nodes = nodes.unionByName(f)
        label = f"filter {text}" if op in BOOLEAN_OPS else op.label
        tracker.builder.record(RowNodeSegment(segs[op], tracker.context, label=label, op=op), nodes=nodes)
    # the rows kept: one more factor, a · over the row's condition
    keep = tracker.builder.allocate()
    layout: Layout = frame.layout
    kept = out.withColumn(factor(layout.k), node_hash_col(keep, root))
    tracker.builder.record(RowNodeSegment(keep, tracker.context, label="·", op=Op.TIMES, node_kind="p"), nodes=kept.select(
        F.col(factor(layout.k)).alias("id"), F.array(root).cast("array<bigint>").alias("children"),
        F.lit(None).cast("string").alias("value")))
    new = layout.with_(k=layout.k + 1)
    hidden = new.hidden()
    ordered = [F.col(f"`{c}`") for c in out.columns if c not in set(hidden)] + [F.col(h) for h in hidden]
    # the rows dropped (test false or null): latent rows, each with a · over its test, of a
    # segment recorded only if a what-if asks for them
    lseg = tracker.builder.allocate()
    test = F.expr(condition) if isinstance(condition, str) else condition

    def dropped() -> Parts:
        rows = df.where(~F.coalesce(test, F.lit(False))).withColumn(factor(layout.k), node_hash_col(lseg, root))
        return (frame.derive(rows.select(*ordered), new),
                rows.select(F.col(factor(layout.k)).alias("id"), F.array(root).cast("array<bigint>").alias("children"),
                            F.lit(None).cast("string").alias("value")),
                rows.select(root.alias("t")).distinct())

    latent = Latent.of(RowNodeSegment(lseg, tracker.context, label="·", op=Op.TIMES, node_kind="p"), dropped)
    return frame.derive(kept.select(*ordered), new).with_latent(latent)
