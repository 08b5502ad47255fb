"""Node ids: one layout, in a numpy form (reading graphs) and a Spark form (capturing them).

Ids are 64-bit integers that do not change when Spark recomputes a plan or a run is repeated:

* **positional ids** ``segment << SEGMENT_SHIFT | ordinal``: base tokens (the ordinal is
  ``file << ROW_BITS | row`` in the relation's files), boundary nodes (the row's position in its
  stored file), invocation nodes (ordinal 0), and the nodes implied by an aggregation, numbered
  after a canonical sort: a member's ⊗ node ``2·slot + 2`` and its value node ``2·slot + 3``;
* **content ids**: 64-bit xxhash of the segment and the node's content (δ nodes, · member nodes,
  black-box v-nodes), computed by Spark (:func:`node_hash_col`);
* **aggregate ids**: the group's δ id XOR a per-aggregate constant (:func:`aggregate_salt`);
* **zoom ids**: ``invocation | 1``, free because an invocation is alone in its segment;
* **monus parts**: the two sides of a ⊖ node are the δ nodes whose ids are its id XOR a constant
  per side (:func:`monus_part_ids`), so the graph tells its left side from its right without
  ordered edges.

Segments are numbered in two ranges. *Coarse* segments (an invocation, the tokens of the relations
it is given, its boundary reads and writes) take the numbers below :data:`MAX_SEGMENT`, reserved
per invocation from its module's declaration (so an invocation's numbers follow from its place
in the workflow alone). The *fine* segments of an invocation — each rewritten operation in module
code — are numbered from :data:`FINE_BASE` in a range of their own, :func:`fine_segment`, so they
depend on the invocation alone, never on how many operations earlier invocations ran; a replay
of one invocation therefore makes the ids an eager run made. A fine segment's ⊗ and member value
nodes are hashed (:func:`tensor_ids`), since its number does not fit a positional id.

The *member rule* says which single p-node stands for a row whose provenance is the product of
several factors (0 stands for 1): the factor itself when exactly one is non-zero, else a
· node with its own id (:func:`member_ids`, :func:`member_col`).

>>> positional(3, 5) == (3 << 40) | 5, segment_of(positional(3, 5)), ordinal_of(positional(3, 5))
(True, 3, 5)
>>> import numpy as np
>>> member_ids([np.array([7, 0, 4]), np.array([0, 9, 5])], np.array([-1, -2, -3])).tolist()
[7, 9, -3]
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, TypeVar

import numpy as np

from lipspark.errors import AnnotationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = [
    "SEGMENT_SHIFT", "ROW_BITS", "LOW_MASK", "MAX_FILES", "MAX_SEGMENT", "FINE_BASE", "FINE_BITS", "MAX_FINE_SEGMENT",
    "fine_segment", "is_fine", "segment_node",
    "positional", "segment_of", "ordinal_of", "file_position", "check_segment",
    "aggregate_salt", "aggregate_ids", "tensor_ids", "member_value_ids", "zoom_id", "pending_id", "monus_part_ids", "MINUEND", "SUBTRAHEND",
    "member_ids", "positional_col", "file_position_col", "aggregate_id_col", "node_hash_col", "member_col",
]

#: Positional ids are ``segment << SEGMENT_SHIFT | ordinal``.
SEGMENT_SHIFT = 40
#: A stored row's ordinal is ``file << ROW_BITS | row`` (row: its index in the file).
ROW_BITS = 28
#: The ordinal part of a positional id.
LOW_MASK = (1 << SEGMENT_SHIFT) - 1
#: How many files one relation may have (file ordinals fit between ROW_BITS and SEGMENT_SHIFT).
MAX_FILES = 1 << (SEGMENT_SHIFT - ROW_BITS)
#: Coarse segments are numbered below this (positional ids stay positive 63-bit numbers).
MAX_SEGMENT = 1 << (63 - SEGMENT_SHIFT - 1)
#: Fine segments (an invocation's rewritten operations) are numbered from here.
FINE_BASE = MAX_SEGMENT
#: An invocation numbers at most ``2**FINE_BITS`` operations.
FINE_BITS = 10
#: Fine segments are numbered below this (a segment number is a 32-bit integer in the index).
MAX_FINE_SEGMENT = 1 << 31

_I = TypeVar("_I", int, np.ndarray)


def check_segment(seg: int) -> int:
    """``seg`` if it is a valid coarse segment number, else an :class:`AnnotationError`."""
    if not 0 < seg < MAX_SEGMENT:
        raise AnnotationError(f"too many provenance operations in one graph (segment {seg}); split the workflow")
    return seg


def fine_segment(invocation: int, j: int) -> int:
    """The number of the ``j``-th rewritten operation of the ``invocation``-th invocation of a
    workflow store (counted from 0 over its executions, in workflow order).

    >>> fine_segment(0, 0) == FINE_BASE, fine_segment(1, 2) - fine_segment(0, 0)
    (True, 1026)
    >>> is_fine(fine_segment(3, 4)), is_fine(7)
    (True, False)
    """
    if not 0 <= j < (1 << FINE_BITS):
        raise AnnotationError(f"module code of one invocation ran more than {1 << FINE_BITS} provenance operations; "
                              "split the module into several modules of the workflow")
    seg = FINE_BASE + (int(invocation) << FINE_BITS) + j
    if not 0 <= invocation or seg >= MAX_FINE_SEGMENT:
        raise AnnotationError(f"too many module invocations in one store ({invocation}); start a new store")
    return seg


def is_fine(seg: "int | np.ndarray") -> "bool | np.ndarray":
    """Whether segment numbers are fine ones (:func:`fine_segment`)."""
    if isinstance(seg, np.ndarray):
        return seg >= FINE_BASE
    return int(seg) >= FINE_BASE


def positional(seg: "int | np.ndarray", ordinal: _I) -> _I:
    """The id ``seg << SEGMENT_SHIFT | ordinal`` (ints or numpy arrays)."""
    if isinstance(seg, np.ndarray) or isinstance(ordinal, np.ndarray):
        return (np.asarray(seg, dtype=np.int64) << np.int64(SEGMENT_SHIFT)) | np.asarray(ordinal, dtype=np.int64)  # type: ignore[return-value]
    return (int(seg) << SEGMENT_SHIFT) | int(ordinal)


def segment_of(ids: _I) -> _I:
    """The segment of positional ids."""
    if isinstance(ids, np.ndarray):
        return ids >> np.int64(SEGMENT_SHIFT)
    return int(ids) >> SEGMENT_SHIFT


def ordinal_of(ids: _I) -> _I:
    """The ordinal (low bits) of ids."""
    if isinstance(ids, np.ndarray):
        return ids & np.int64(LOW_MASK)
    return int(ids) & LOW_MASK


def file_position(file_ordinal: _I, row: _I) -> _I:
    """A stored row's ordinal: ``file_ordinal << ROW_BITS | row``."""
    if isinstance(file_ordinal, np.ndarray) or isinstance(row, np.ndarray):
        return (np.asarray(file_ordinal, dtype=np.int64) << np.int64(ROW_BITS)) | np.asarray(row, dtype=np.int64)
    return (int(file_ordinal) << ROW_BITS) | int(row)


def aggregate_salt(j: int) -> int:
    """The constant XORed into a δ node's id to get the id of its j-th aggregate v-node.

    >>> aggregate_salt(0) != aggregate_salt(1)
    True
    """
    z = (0x9E3779B97F4A7C15 * (j + 1)) & 0xFFFFFFFFFFFFFFFF  # splitmix64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z - (1 << 64) if z >= 1 << 63 else z


def aggregate_ids(group_ids: _I, j: int) -> _I:
    """Ids of the j-th aggregate v-nodes of the groups whose δ nodes are ``group_ids``."""
    if isinstance(group_ids, np.ndarray):
        return group_ids ^ np.int64(aggregate_salt(j))
    return int(group_ids) ^ aggregate_salt(j)


def _slot_ids(seg: int, ordinals: np.ndarray) -> np.ndarray:
    """``positional(seg, ordinals)`` for a coarse segment; for a fine one (whose number does not
    fit a positional id) a splitmix64 hash of the segment and ordinal, like content ids."""
    if not is_fine(seg):
        return positional(seg, ordinals)
    with np.errstate(over="ignore"):
        z = (np.uint64(seg) << np.uint64(40)) ^ ordinals.astype(np.uint64)
        z = z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z.view(np.int64)


def segment_node(seg: int) -> int:
    """The id of a segment's one node (a relation-level black box, a condition, a keyless
    group): ``positional(seg, 0)``, hashed for a fine segment.

    >>> segment_node(5) == positional(5, 0), segment_node(fine_segment(0, 0)) != segment_node(fine_segment(0, 1))
    (True, True)
    """
    return int(_slot_ids(seg, np.zeros(1, dtype=np.int64))[0])


#: The sides of a ⊖ node (:func:`monus_part_ids`): ``a ⊖ b`` has minuend ``a``, subtrahend ``b``.
MINUEND, SUBTRAHEND = 0, 1
# far above the aggregates an ``agg`` may hold, so a part is never taken for an aggregate
_MONUS_SALT = 1 << 20


def monus_part_ids(monus_ids: _I, side: int) -> _I:
    """Ids of the δ nodes that are side ``side`` (:data:`MINUEND` or :data:`SUBTRAHEND`) of the
    ⊖ nodes ``monus_ids``: the ⊖ id XOR a constant per side.

    >>> m = 12345
    >>> monus_part_ids(monus_part_ids(m, SUBTRAHEND), SUBTRAHEND) == m, monus_part_ids(m, MINUEND) != monus_part_ids(m, SUBTRAHEND)
    (True, True)
    """
    return aggregate_ids(monus_ids, _MONUS_SALT + side)


def tensor_ids(seg: int, slots: np.ndarray) -> np.ndarray:
    """Ids of the ⊗ nodes of an aggregation's member slots (``slot = row · n_aggregates + j``).

    >>> import numpy as np
    >>> tensor_ids(3, np.array([0])).tolist() == [positional(3, 2)]
    True
    >>> a = tensor_ids(fine_segment(0, 1), np.arange(3)); len(set(a.tolist())), a.dtype.name
    (3, 'int64')
    """
    return _slot_ids(seg, 2 * np.asarray(slots, dtype=np.int64) + 2)


def member_value_ids(seg: int, slots: np.ndarray) -> np.ndarray:
    """Ids of the constant value nodes paired with the ⊗ nodes of the same slots."""
    return _slot_ids(seg, 2 * np.asarray(slots, dtype=np.int64) + 3)


def zoom_id(invocation: int) -> int:
    """The id of the p-node ZoomOut puts in place of an invocation's computation."""
    return int(invocation) | 1


def pending_id(invocation: int) -> int:
    """The id of the p-node that stands for an invocation's computation not replayed yet (a
    deferred store's graph, fine-grained provenance on demand): beside its invocation node and
    its zoom node in the invocation's segment.

    >>> inv = positional(7, 0)
    >>> len({inv, zoom_id(inv), pending_id(inv)}), segment_of(pending_id(inv))
    (3, 7)
    """
    return int(invocation) | 2


def member_ids(factors: Sequence[np.ndarray], product_ids: np.ndarray) -> np.ndarray:
    """The member rule (numpy form): per row, the only non-zero factor, else ``product_ids``
    (the id of the · node over the row's factors). One factor column is the member itself."""
    if len(factors) == 1:
        return np.asarray(factors[0], dtype=np.int64)
    fs = [np.asarray(f, dtype=np.int64) for f in factors]
    nonzero = sum((f != 0).astype(np.int64) for f in fs)
    return np.where(nonzero == 1, sum(fs), np.asarray(product_ids, dtype=np.int64))


# ---------------------------------------------------------------------------- Spark forms
def positional_col(seg: int, ordinal: "Column") -> "Column":
    """Spark form of :func:`positional`."""
    from pyspark.sql import functions as F

    return F.lit(positional(seg, 0)).bitwiseOR(ordinal)


def file_position_col(file_ordinal: "Column", row: "Column") -> "Column":
    """Spark form of :func:`file_position`."""
    from pyspark.sql import functions as F

    return F.shiftleft(file_ordinal.cast("long"), ROW_BITS).bitwiseOR(row)


def aggregate_id_col(group_id: "Column", j: int) -> "Column":
    """Spark form of :func:`aggregate_ids`."""
    from pyspark.sql import functions as F

    return group_id.bitwiseXOR(F.lit(aggregate_salt(j)))


def node_hash_col(seg: int, *cols: "Column") -> "Column":
    """A content id: 64-bit xxhash of the segment and ``cols``, null-safe (``(null, 1)`` and
    ``(1, null)`` differ). Callers normalize what Spark groups together (``-0.0`` and ``0.0``)."""
    from pyspark.sql import functions as F

    parts: list[Any] = [F.lit(seg).cast("long")]
    for c in cols:
        parts.append(c)
        parts.append(c.isNull())
    return F.xxhash64(*parts)


def member_col(factors: Sequence["Column"], product_id: "Column") -> "Column":
    """Spark form of :func:`member_ids`."""
    from functools import reduce

    from pyspark.sql import functions as F

    if len(factors) == 1:
        return factors[0]
    nonzero = reduce(lambda a, b: a + b, [F.when(f != 0, 1).otherwise(0) for f in factors])
    total = reduce(lambda a, b: a + b, factors)
    return F.when(nonzero == 1, total).otherwise(product_id)
