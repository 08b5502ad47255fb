"""The paper's dealer module on Example 2.3 (Lipstick §2.2, §3.2, Figure 2(c))."""
from __future__ import annotations

from lipspark import Tracker
from lipspark.examples.dealer import dealer_bid, example_inputs as inputs
from tests.util import multiset


def test_dealer_fidelity(spark):
    plain = dealer_bid(**inputs(spark))
    t = Tracker(spark)
    tracked = dealer_bid(**inputs(spark, t))
    assert multiset(tracked.collect()) == multiset(plain.collect())
    assert [tuple(r) for r in tracked.collect()] == [("B1", "P1", "Civic", 20000.0 - 500.0)]


def test_dealer_graph_matches_figure_2c(spark):
    t = Tracker(spark)
    bids = dealer_bid(**inputs(spark, t))
    (row,) = bids.collect_annotated()
    g = t.graph()
    c2, c3, b1 = g.token_id("Cars:C2"), g.token_id("Cars:C3"), g.token_id("Requests:B1")
    assert g.find(label="Cars:C1") and not any(c == g.token_id("Cars:C1") for d in g.find(label="·") for c in g.child_ids(d))
    # a · node per joined car (Cars ⋈ ReqModel)
    dots = g.find(label="·")
    assert sorted(sorted(g.child_ids(d)) for d in dots) == sorted([sorted([c2, b1]), sorted([c3, b1])])
    # δ for CarsByModel over the two joined cars
    count = g.find(label="Count")
    assert len(count) == 1
    (delta_cbm,) = [d for d in g.find(label="δ") if sorted(g.child_ids(d)) == sorted(dots)]
    # a Count v-node with two ⊗ children, value 2
    tensors = g.child_ids(count[0])
    assert len(tensors) == 2 and all(g.node(x)["label"] == "⊗" for x in tensors)
    assert g.node(count[0])["value"] == 2
    assert sorted(c for x in tensors for c in g.child_ids(x) if g.node(c)["kind"] == "p") == sorted(dots)
    # δ for the cogroup, over the request and the NumCarsByModel tuple
    (cog,) = row.annotation.factors
    assert g.node(cog)["label"] == "δ" and sorted(g.child_ids(cog)) == sorted([b1, delta_cbm])
    # a calcBid black-box v-node feeding the bid's Amount, fed by the Count
    bb = row.annotation.values["Amount"]
    assert g.node(bb)["label"] == "calcBid" and g.node(bb)["kind"] == "v"
    assert count[0] in g.child_ids(bb) and cog in g.child_ids(bb)
    assert str(g.polynomial(row.annotation)) == "δ(Requests:B1 + δ(Cars:C2·Requests:B1 + Cars:C3·Requests:B1))"
