"""What-if answers a user can read (issue 14, item 8), on a warehouse workflow written as a user
would: one module (``stock``) at two workflow nodes, each receiving one of its two inputs; a
report summing units per region. Every what-if value is checked against re-running the workflow
without the deleted tuple (the replay oracle), never against the graph itself."""
from __future__ import annotations

import pytest

from lipspark.errors import QueryError
from lipspark.query import Session
from lipspark.workflow import Store, run
from lipspark.workflow.execution import relation_frame

WAREHOUSE = '''
from pyspark.sql import functions as F
from lipspark.workflow import Module, Workflow, WorkflowDefinition

O = "Id string, Region string, Item string, Units int"
M = "Region string, Item string, Units int"


def stock(Accepted, Picked):
    return {"Moves": Accepted.select("Region", "Item", "Units").union(Picked)}


def build(p):
    intake = Module("intake", inputs={"Orders": O}, outputs={"Accepted": O}, keys={"Orders": ["Id"]},
                    logic=lambda Orders: {"Accepted": Orders.filter(F.col("Units") > 0)})
    stock_m = Module("stock", inputs={"Accepted": O, "Picked": M}, outputs={"Moves": M}, logic=stock)
    pick = Module("pick", inputs={"Moves": M}, outputs={"Picked": M}, logic=lambda Moves: {"Picked": Moves.filter(F.col("Item") != "broken")})
    report = Module("report", inputs={"Moves": M}, outputs={"RegionReport": "Region string, Units long"},
                    logic=lambda Moves: {"RegionReport": Moves.groupBy("Region").agg(F.sum("Units").alias("Units"))})
    wf = Workflow("warehouse", [intake, stock_m, pick, report])
    wf.node("intake", "intake", input=True).node("stock_reserve", "stock").node("pick", "pick")
    wf.node("stock_ship", "stock").node("report", "report", output=True)
    return (wf.edge("intake", "stock_reserve", ["Accepted"]).edge("stock_reserve", "pick", ["Moves"])
              .edge("pick", "stock_ship", ["Picked"]).edge("stock_ship", "report", ["Moves"]))


ORDERS = [("o1", "north", "bolt", 4), ("o2", "north", "nut", 16), ("o3", "south", "bolt", 7), ("o4", "south", "broken", 3)]


def initial_state(spark, p):
    return {}


def inputs(spark, n, p):
    dropped = set(p["drop"].split(",")) if p["drop"] else set()
    return {"intake": {"Orders": spark.createDataFrame([o for o in ORDERS if o[0] not in dropped], O)}}


DEFINITION = WorkflowDefinition("warehouse", build, initial_state, inputs, params={"drop": ""})
'''


@pytest.fixture(scope="module")
def warehouse(spark, tmp_path_factory):
    d = tmp_path_factory.mktemp("warehouse")
    wf = d / "warehouse.py"
    wf.write_text(WAREHOUSE)
    stores = {}
    for name, params, provenance in (("on", {}, True), ("off", {}, False), ("without_o1", {"drop": "o1"}, False)):
        stores[name] = str(d / name)
        run(str(wf), graph_dir=stores[name], spark=spark, executions=1, params=params, provenance=provenance)
    return stores


def report(spark, root):
    store = Store.open(root)
    (e,) = store.executions
    return {r.Region: r.Units for r in relation_frame(spark, store, e["outputs"]["report"]["RegionReport"]).collect()}


def test_a_node_that_lacks_an_input_reads_it_empty_with_provenance_on_or_off(spark, warehouse):
    # stock_reserve gets no Picked, stock_ship no Accepted: each reads the other as an empty relation
    assert report(spark, warehouse["on"]) == report(spark, warehouse["off"]) == {"north": 20, "south": 7}


def test_show_after_a_delete_gives_the_what_if_values_a_rerun_gives(spark, warehouse):
    rerun = report(spark, warehouse["without_o1"])
    s = Session(warehouse["on"])
    d, shown, value = s.run('delete tuple Orders(Id = "o1"); show output RegionReport(Region = "north") in report; '
                            'show value Units of output RegionReport(Region = "north") in report')
    assert shown.rows[0]["what_if"] == f"Units 20 → {rerun['north']}" and "Units 20 → 16" in shown.to_text()
    assert value.rows[0]["value"] == rerun["north"] == 16 and value.rows[0]["what_if"] == "20 → 16"
    # JSON and the Python API agree with the text
    assert s.view.value_at(s.view.position(value.rows[0]["id"])) == 16
    # every changed value names its relation, column and tuple: "what is north's Units now?" is one lookup
    changed = d.to_dict()["changed_values"]
    assert changed and all(c["relation"] and c["column"] for c in changed)
    now = {(c["relation"], c["column"], c["tuple"]["Region"]): c["after"] for c in changed if c["op"] == "output"}
    assert now == {("RegionReport", "Units", "north"): rerun["north"]}
    inside = [c for c in changed if c["op"] == "sum"]
    assert inside and all(c["feeds"] == "Units of output RegionReport(north, 20)" for c in inside)
    # a polynomial on the view values the sum as after the delete
    (p,) = s.run('polynomial value Units of output RegionReport(Region = "north") in report')
    assert (p.rows[0]["value"], p.rows[0]["what_if"]) == (16, "20 → 16") and "Orders:o1" not in p.rows[0]["polynomial"]
    assert p.rows[0]["polynomial"].endswith("⊗ 16)")


def test_selectors_take_a_workflow_node_as_well_as_a_module(warehouse):
    s = Session(warehouse["on"])
    (both,) = s.run("show output Moves in stock")
    (ship,) = s.run("show output Moves in stock_ship")
    assert {r["invoked_as"] for r in both.rows} == {"stock_reserve", "stock_ship"}
    assert {r["invoked_as"] for r in ship.rows} == {"stock_ship"} and 0 < len(ship.rows) < len(both.rows)
    assert "invoked_as" in ship.to_text()
    (inv,) = s.run("show invocation stock_reserve")
    assert [r["invoked_as"] for r in inv.rows] == ["stock_reserve"]
    with pytest.raises(QueryError, match=r"no output of Moves in module 'pick_x' \(found in: stock \(nodes stock_reserve, stock_ship\)\)"):
        s.run("show output Moves in pick_x")


def test_a_derived_relation_named_as_a_base_tuple_says_what_to_select(warehouse):
    s = Session(warehouse["on"])
    with pytest.raises(QueryError, match=r"RegionReport is not a base relation, its rows are derived \(output of report\); "
                                         r"select them as `output RegionReport\(Region = \"north\"\)`"):
        s.run('delete tuple RegionReport(Region = "north")')
    with pytest.raises(QueryError, match="nothing in execution 2"):
        s.run('delete tuple Orders(Id = "o1") execution 2')
