"""The paper's operators as a type: what a node of the provenance graph computes.

Every node of the graph carries an :class:`Op` in its own column; its label is for display
only (a black box may be called ``"Max"`` and is still a black box). The operators are those of
Lipstick §2.3 and §3.1:

=============  ====  =====================================================================
operator       kind  meaning
=============  ====  =====================================================================
TOKEN          p     a base tuple (``Cars:C2``); a leaf
INVOCATION     p     a module invocation, the token ``M_<module>[<execution>]``; a leaf
TIMES          p     · : joint use of its children
PLUS           p     + : alternative use of its children
DELTA          p     δ : duplicate elimination / group-by over its children
BLACK_BOX      p, v  a function the rewrite cannot see into (relation- or value-level)
INPUT          p, v  a module input: · of the tuple's node and the invocation (v: its value)
STATE          p, v  a state tuple read by an invocation (likewise)
OUTPUT         p, v  a module output (likewise)
ZOOM           p     a zoomed-out invocation (ZoomOut, Definition 4.1): a black box
TENSOR         v     ⊗ : a member's p-node paired with its value, inside an aggregate
COUNT … AVG    v     an aggregate Σ pᵢ ⊗ vᵢ over its ⊗ children
CONSTANT       v     a value without provenance of its own (a member's value); a leaf
CONDITION      v     a filter, join or grouping whose decision read values (HAVING, a join
                     with an aggregate): its children are every v-node it read
MONUS          p     ⊖ : a ⊖ b, the m-semiring difference (Geerts and Poggi 2010): a row
                     kept because another has no partner (outer and anti joins, set
                     difference); its right side is the child :func:`~lipspark.vocabulary.ids.monus_part_ids` names
ADD            v     arithmetic over values (an expression over aggregates, ``100 · Σa / Σb``):
MULTIPLY       v     the sum or product of its v-children (both commute, so the order of
NEGATE         v     edges does not matter), minus or one over its one v-child; a what-if
INVERSE        v     recomputes them (:func:`~lipspark.vocabulary.arithmetic`). A formula's
                     literals are CONSTANT children; its root also has its group's node as
                     a p-child. They need all of their children (conjunctive)
POSITIVE       v     a filter's condition over values, per row (``total > threshold`` is
ZERO           v     POSITIVE(total + (−threshold))): whether its one child is > 0 (POSITIVE)
AND, OR, NOT   v     or = 0 (ZERO), and SQL's three-valued AND, OR, NOT over such tests; a
                     kept row's · p-node has the condition as a child, and a what-if that
                     makes it false removes the row (:mod:`lipspark.capture.rules.guard`)
IN_GROUP       v     a member of a group-by on a value is in its group: whether its two
                     children (the member's key v-node and the group's key, a CONSTANT) are
                     equal, null-safe; the member's · p-node has it as a child, so a what-if
                     that changes the key takes the member out of its group, and a frame's
                     prediction puts it in its new one (:mod:`lipspark.capture.rules.regroup`)
=============  ====  =====================================================================

>>> Op.DELTA.label, Op.parse("delta") is Op.DELTA, Op.parse("δ") is Op.DELTA
('δ', True, True)
>>> Op.SUM.is_aggregate, Op.TENSOR.conjunctive, Op.PLUS.conjunctive
(True, True, False)
>>> Op.parse("⊖") is Op.MONUS, Op.MONUS.label, Op.MONUS.conjunctive
(True, '⊖', False)
>>> Op.parse("multiply").label, Op.INVERSE.is_arithmetic, Op.ADD.conjunctive
('×', True, True)
"""
from __future__ import annotations

from enum import IntEnum

from lipspark.errors import LipsparkError

__all__ = ["Op", "AGGREGATE_OPS", "BOUNDARY_OPS", "ARITHMETIC_OPS", "BOOLEAN_OPS"]


class Op(IntEnum):
    """What a node computes (stored as a small integer in the node table's ``op`` column)."""

    TOKEN = 1
    INVOCATION = 2
    TIMES = 3
    PLUS = 4
    DELTA = 5
    BLACK_BOX = 6
    INPUT = 7
    STATE = 8
    OUTPUT = 9
    ZOOM = 10
    TENSOR = 11
    COUNT = 12
    SUM = 13
    MIN = 14
    MAX = 15
    AVG = 16
    CONSTANT = 17
    CONDITION = 18
    MONUS = 19
    ADD = 20
    MULTIPLY = 21
    NEGATE = 22
    INVERSE = 23
    POSITIVE = 24
    ZERO = 25
    AND = 26
    OR = 27
    NOT = 28
    IN_GROUP = 29

    @property
    def label(self) -> str:
        """The paper's symbol for this operator (the default display label of its nodes)."""
        return _LABELS[self]

    @property
    def is_aggregate(self) -> bool:
        """Count, Sum, Min, Max or Avg."""
        return self in AGGREGATE_OPS

    @property
    def is_arithmetic(self) -> bool:
        """A formula's node over values: Add, Multiply, Negate, Inverse, or a condition's
        Positive, Zero, And, Or, Not (:func:`~lipspark.vocabulary.arithmetic` computes them)."""
        return self in ARITHMETIC_OPS

    @property
    def is_boundary(self) -> bool:
        """A module input, state or output node (Lipstick §3.1)."""
        return self in BOUNDARY_OPS

    @property
    def carries_value(self) -> bool:
        """A v-node with this operator carries its one v-node child's value: a module boundary
        node, or the · v-node of a new state row's value (docs/graph-format.md).

        >>> [o.name for o in Op if o.carries_value]
        ['TIMES', 'INPUT', 'STATE', 'OUTPUT']
        """
        return self in BOUNDARY_OPS or self is Op.TIMES

    @property
    def is_leaf(self) -> bool:
        """Tokens, invocations and constants have no children."""
        return self in (Op.TOKEN, Op.INVOCATION, Op.CONSTANT)

    @property
    def conjunctive(self) -> bool:
        """Whether the node needs *all* of its children (·, ⊗ and the boundary nodes, which are
        products with the invocation, and arithmetic over values): Definition 4.2 removes it when
        it loses any one."""
        return self in (Op.TIMES, Op.TENSOR, Op.INPUT, Op.STATE, Op.OUTPUT) or self in ARITHMETIC_OPS

    @classmethod
    def parse(cls, text: "str | int | Op") -> "Op":
        """The operator named by ``text``: its name (any case), its symbol, or its number.

        >>> Op.parse("count"), Op.parse("⊗"), Op.parse(3)
        (<Op.COUNT: 12>, <Op.TENSOR: 11>, <Op.TIMES: 3>)
        """
        if isinstance(text, Op):
            return text
        if isinstance(text, int):
            try:
                return cls(text)
            except ValueError as err:
                raise LipsparkError(f"unknown operator code {text}; expected 1..{len(cls)}") from err
        found = _BY_TEXT.get(str(text).lower())
        if found is None:
            raise LipsparkError(
                f"unknown operator {text!r}; expected one of {', '.join(o.name.lower() for o in cls)} (or ·, +, δ, ⊗, ⊖)"
            )
        return found


AGGREGATE_OPS = frozenset({Op.COUNT, Op.SUM, Op.MIN, Op.MAX, Op.AVG})
BOUNDARY_OPS = frozenset({Op.INPUT, Op.STATE, Op.OUTPUT})
ARITHMETIC_OPS = frozenset({Op.ADD, Op.MULTIPLY, Op.NEGATE, Op.INVERSE, Op.POSITIVE, Op.ZERO, Op.AND, Op.OR, Op.NOT,
                            Op.IN_GROUP})
#: The formula nodes whose value is a truth value (a condition's, a group membership's).
BOOLEAN_OPS = frozenset({Op.POSITIVE, Op.ZERO, Op.AND, Op.OR, Op.NOT, Op.IN_GROUP})

_LABELS = {
    Op.TOKEN: "token", Op.INVOCATION: "invocation", Op.TIMES: "·", Op.PLUS: "+", Op.DELTA: "δ",
    Op.BLACK_BOX: "black box", Op.INPUT: "·", Op.STATE: "·", Op.OUTPUT: "·", Op.ZOOM: "zoom",
    Op.TENSOR: "⊗", Op.COUNT: "Count", Op.SUM: "Sum", Op.MIN: "Min", Op.MAX: "Max", Op.AVG: "Avg",
    Op.CONSTANT: "constant", Op.CONDITION: "condition", Op.MONUS: "⊖",
    Op.ADD: "add", Op.MULTIPLY: "×", Op.NEGATE: "−", Op.INVERSE: "1/", Op.POSITIVE: "> 0", Op.ZERO: "= 0",
    Op.AND: "and", Op.OR: "or", Op.NOT: "not", Op.IN_GROUP: "∈ group",
}
_BY_TEXT = {o.name.lower(): o for o in Op}
_BY_TEXT.update({"·": Op.TIMES, "+": Op.PLUS, "δ": Op.DELTA, "⊗": Op.TENSOR, "black_box": Op.BLACK_BOX, "⊖": Op.MONUS})
