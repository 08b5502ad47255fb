"""Executions, state, the coarse graph around the fine one, the store, crash safety."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lipspark.errors import SchemaError, StoreError
from lipspark.graph.index import GraphIndex
from lipspark.workflow import Module, Store, Workflow, WorkflowDefinition, run
from lipspark.workflow.execution import relation_frame
from tests.util import damaged, multiset

HERE = os.path.dirname(__file__)
LEDGER = os.path.join(HERE, "..", "fixtures", "ledger.py")
CARS = os.path.join(HERE, "..", "..", "workflows", "car_dealership.py")


def stored(spark, root):
    """Every stored relation of every execution, as multisets: {(execution, kind, node, rel): Counter}."""
    store = Store.open(root)
    out = {}
    for e in store.executions:
        for kind in ("outputs", "state"):
            for node, rels in e[kind].items():
                for rel, desc in rels.items():
                    out[(e["n"], kind, node, rel)] = multiset(relation_frame(spark, store, desc).collect())
    return out


def test_state_is_carried_across_executions(spark, ledger_runs):
    on, _ = ledger_runs
    store = Store.open(on)
    assert [e["n"] for e in store.executions] == [1, 2, 3]
    final = relation_frame(spark, store, store.current_state()["ledger"]["Balances"]).collect()
    deposits = [("D0-0", "A", 10)] + [(f"D{n}-{i}", "ABC"[(n + i) % 3], 10 * n + i) for n in (1, 2, 3) for i in range(2)]
    expected = {}
    for _, acct, amount in deposits:
        total, count = expected.get(acct, (0, 0))
        expected[acct] = (total + amount, count + 1)
    assert {r.Account: (r.Balance, r.Deposits) for r in final} == expected


def test_fidelity_provenance_on_and_off(spark, ledger_runs):
    on, off = ledger_runs
    a, b = stored(spark, on), stored(spark, off)
    assert a.keys() == b.keys() and a == b


def test_graph_has_every_node_type_with_the_right_edges(spark, ledger_runs):
    on, _ = ledger_runs
    g = GraphIndex.load(on)
    nodes = g.nodes
    assert set(nodes["type"].dropna()) == {"i", "o", "s", "m"}
    inv = {(r.module, r.execution): r.id for r in nodes[nodes["type"] == "m"].itertuples()}
    assert len(inv) == 9 and g.node(inv[("ledger", 1)])["label"] == "ledger"
    # workflow input tuple -> module input node (·, type i) <- intake invocation
    tok = g.token_id("Deposits:D1-0")
    (inp,) = [n for n in g.nodes[(g.nodes["type"] == "i") & (g.nodes["label"] == "·")]["id"] if tok in g.child_ids(n)]
    assert sorted(g.child_ids(inp)) == sorted([tok, inv[("intake", 1)]])
    # the initial state tuple Seen:D0-0 -> state node (·, type s) <- ledger invocation of execution 1
    seen0 = g.token_id("Seen:D0-0")
    states = [n for n in g.nodes[g.nodes["type"] == "s"]["id"] if seen0 in g.child_ids(n)]
    assert any(sorted(g.child_ids(s)) == sorted([seen0, inv[("ledger", 1)]]) for s in states)
    # every output node is a · joined with its invocation
    for o in g.nodes[g.nodes["type"] == "o"].itertuples():
        assert o.invocation in g.child_ids(o.id) and o.label == "·"
    # fine-grained nodes between them: the ledger's group-by δ and Sum, tagged with module and execution
    sums = nodes[(nodes["label"] == "Sum") & (nodes["module"] == "ledger")]
    assert set(sums["execution"]) == {1, 2, 3}
    # a Summary row is a keyless aggregate: SQL returns it over any input, so its annotation is the
    # invocation alone; its Total reaches the deposit that caused it, through the workflow
    report = g.nodes[(g.nodes["type"] == "o") & (g.nodes["module"] == "report") & (g.nodes["execution"] == 1)]
    from lipspark.semiring import tokens

    (row,) = report[report["kind"] == "p"]["id"]
    (total,) = report[(report["kind"] == "v") & (report["column"] == "Total")]["id"]
    assert tokens(g.polynomial(row)) == {"M_report[1]"}
    assert "Deposits:D1-0" in tokens(g.polynomial(total))


def test_car_dealership_fidelity_and_graph(spark, car_runs):
    on, off = car_runs
    a, b = stored(spark, on.store), stored(spark, off.store)
    assert a == b
    assert on.outputs == off.outputs and on.outputs["car"]["Car"] == 1  # the buyer bought a car
    g = GraphIndex.load(on.store)
    labels = set(g.nodes["label"])
    assert {"calcBid", "Count", "Min", "δ", "·"} <= labels
    assert set(g.nodes["type"].dropna()) == {"i", "o", "s", "m"}
    # the sold car's output tuple depends on the lot's car and on the buyer's request
    (car_out,) = g.nodes[(g.nodes["type"] == "o") & (g.nodes["kind"] == "p") & (g.nodes["module"] == "car")]["id"]
    from lipspark.semiring import tokens

    toks = tokens(g.polynomial(car_out))
    assert "Requests:B1" in toks and any(t.startswith("Cars:D") for t in toks) and "Choice:P1" in toks


def test_schema_mismatch_writes_nothing(spark, tmp_path):
    bad = Module("m", inputs={"In": "x int"}, outputs={"Out": "x int"}, logic=lambda In: {"Out": In.selectExpr("cast(x as string) as x")})
    wf = Workflow("bad", [bad]).node("m", "m", input=True, output=True)
    definition = WorkflowDefinition("bad", lambda p: wf, lambda s, p: {}, lambda s, n, p: {"m": {"In": s.createDataFrame([(1,)], "x int")}})
    root = str(tmp_path / "bad")
    with pytest.raises(SchemaError, match=r"module 'm', relation 'Out': expected columns x int; found x string"):
        run(definition, graph_dir=root, spark=spark, executions=1)
    store = Store.open(root)
    assert store.executions == [] and os.listdir(os.path.join(root, "executions")) == []


def test_store_errors(tmp_path):
    with pytest.raises(StoreError, match="no provenance store"):
        Store.open(str(tmp_path / "missing"))
    root = tmp_path / "corrupt"
    root.mkdir()
    damaged(root)
    (root / "store.json").write_text("{not json")
    with pytest.raises(StoreError, match="corrupt"):
        Store.open(str(root))
    (root / "store.json").write_text(json.dumps({"format": "lipspark-store", "version": 99}))
    with pytest.raises(StoreError, match="version 99"):
        Store.open(str(root))
    with pytest.raises(StoreError, match="no provenance store|no graph"):
        GraphIndex.load(str(tmp_path / "missing"))


@pytest.mark.slow
def test_kill_mid_execution_leaves_last_complete_execution(spark, tmp_path):
    root = str(tmp_path / "crash")
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from lipspark.workflow import run\n"
        "run(%r, graph_dir=%r, executions=3)\n"
    ) % (os.path.abspath(os.path.join(HERE, "..", "..")), os.path.abspath(LEDGER), root)
    env = {**os.environ, "LEDGER_KILL_AT": "2"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=600)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    store = Store.open(root)  # a reader: it sees execution 1 and leaves the half-written execution 2 alone
    assert [e["n"] for e in store.executions] == [1]
    assert sorted(os.listdir(os.path.join(root, "executions"))) == [".pending-000002", "000001"]
    # continue: the next writer removes it; executions 2 and 3 run from the stored state and
    # match an uninterrupted run
    run(LEDGER, graph_dir=root, spark=spark, executions=2)
    assert sorted(os.listdir(os.path.join(root, "executions"))) == ["000001", "000002", "000003"]
    clean = str(tmp_path / "clean")
    run(LEDGER, graph_dir=clean, spark=spark, executions=3)
    assert stored(spark, root) == stored(spark, clean)
    g1, g2 = GraphIndex.load(root), GraphIndex.load(clean)
    assert sorted(g1.nodes["id"]) == sorted(g2.nodes["id"])
    e1, e2 = g1.edge_frame(), g2.edge_frame()
    assert sorted(zip(e1["src"], e1["dst"])) == sorted(zip(e2["src"], e2["dst"]))


def test_boundary_nodes_carry_relation_and_values(spark, ledger_runs):
    on, _ = ledger_runs
    g = GraphIndex.load(on)
    n = g.nodes
    outs = n[(n["type"] == "o") & (n["kind"] == "p") & (n["module"] == "ledger") & (n["execution"] == 1)]
    assert set(outs["relation"]) == {"Changed"}
    assert all(json.loads(t).keys() == {"Account", "Balance", "Deposits"} for t in outs["tuple"])
    ins = n[(n["type"] == "i") & (n["label"] == "·") & (n["module"] == "intake") & (n["execution"] == 1)]
    assert sorted(json.loads(t)["DepId"] for t in ins["tuple"]) == ["D1-0", "D1-1"]
    vouts = n[(n["type"] == "o") & (n["kind"] == "v") & (n["module"] == "ledger") & (n["execution"] == 1)]
    assert len(vouts) > 0 and vouts["value"].notna().all()


KEYED = '''
import os
from lipspark.workflow import Module, Workflow, WorkflowDefinition

R = "Id string, x int"
DUP = os.path.join(os.path.dirname(__file__), "dup")  # present: the next execution's input repeats a key


def build(p):
    m = Module("intake", inputs={"Items": R}, state={"Seen": R}, outputs={"Out": R}, keys={"Items": ["Id"], "Seen": ["Id"]},
               logic=lambda Items, Seen: {"Out": Items, "Seen": Seen.union(Items)})
    return Workflow("keyed", [m]).node("intake", "intake", input=True, output=True)


def initial_state(spark, p):
    return {"intake": {"Seen": spark.createDataFrame([(None if p["nullInitial"] else "S0", 0)], R)}}


def inputs(spark, n, p):
    rows = [(f"I{n}-{i}", i) for i in range(3)] + ([(f"I{n}-1", 9), (f"I{n}-1", 8)] if os.path.exists(DUP) else [])
    return {"intake": {"Items": spark.createDataFrame(rows, R)}}


DEFINITION = WorkflowDefinition("keyed", build, initial_state, inputs, params={"nullInitial": 0, "numExec": 1})
'''


def test_a_workflow_input_whose_key_repeats_fails_before_anything_is_committed(spark, tmp_path, capsys):
    from lipspark.cli import main
    from lipspark.errors import WorkflowError
    from lipspark.store.check import check_store

    wf, root = tmp_path / "keyed.py", str(tmp_path / "g")
    wf.write_text(KEYED)
    run(str(wf), graph_dir=root, spark=spark, executions=1)
    (tmp_path / "dup").write_text("")
    expected = ("execution 2, module 'intake', input 'Items': key (Id) must identify each row, but Id = 'I2-1' is on 3 rows; "
                "fix the rows the workflow definition gives")
    with pytest.raises(WorkflowError) as err:
        run(str(wf), graph_dir=root, spark=spark, executions=1)
    assert str(err.value).startswith(expected) and "keys=" in str(err.value)
    store = Store.open(root)
    assert [e["n"] for e in store.executions] == [1] and sorted(os.listdir(os.path.join(root, "executions"))) == ["000001"]
    assert check_store(root).ok
    assert main(["run", str(wf), "--graph", root, "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"lipspark: error: {err.value}"]
    # a deferred store gets its tokens later, when replayed: its inputs are checked now all the same
    with pytest.raises(WorkflowError, match="Id = 'I1-1' is on 3 rows"):
        run(str(wf), graph_dir=str(tmp_path / "deferred"), spark=spark, executions=1, capture="deferred")
    (tmp_path / "dup").unlink()
    run(str(wf), graph_dir=root, spark=spark, executions=1)  # the run continues where the store was
    assert [e["n"] for e in Store.open(root).executions] == [1, 2] and check_store(root).ok


def test_an_initial_state_with_a_null_key_fails_and_leaves_no_store(spark, tmp_path):
    from lipspark.errors import WorkflowError

    wf, root = tmp_path / "keyed.py", tmp_path / "g"
    wf.write_text(KEYED)
    with pytest.raises(WorkflowError) as err:
        run(str(wf), graph_dir=str(root), spark=spark, executions=1, params={"nullInitial": 1})
    assert str(err.value).startswith("module 'intake', initial state 'Seen': key (Id) must identify each row, but Id is null on 1 row; ")
    assert not root.exists()
    run(str(wf), graph_dir=str(root), spark=spark, executions=1, params={"nullInitial": 1}, provenance=False)  # no tokens: no key


KEPT = '''
from lipspark.workflow import Module, Workflow, WorkflowDefinition

R = "Id string, Level string, Note string"


def build(p):
    m = Module("intake", inputs={"Items": R}, state={"Seen": R}, outputs={"Out": R}, keys={"Items": ["Id"], "Seen": ["Id"]},
               keep={"Items": ["Level"], "Seen": ["Level"]}, logic=lambda Items, Seen: {"Out": Items.union(Seen)})
    return Workflow("kept", [m]).node("intake", "intake", input=True, output=True)


def initial_state(spark, p):
    return {"intake": {"Seen": spark.createDataFrame([("S0", "secret", "x")], R)}}


def inputs(spark, n, p):
    return {"intake": {"Items": spark.createDataFrame([(f"I{n}-0", "public", "y"), (f"I{n}-1", "top_secret", "z")], R)}}


DEFINITION = WorkflowDefinition("kept", build, initial_state, inputs, params={"numExec": 1})
'''


def test_module_keep_gives_base_tuples_the_columns_queries_read(spark, tmp_path):
    """Issue 14 item 2 in a workflow: inputs and initial state keep Level beside the key Id (read
    back from the stored Parquet files), not Note; their labels are still the key."""
    from lipspark.errors import QueryError
    from lipspark.query import Session, provenance_mapping

    wf, root = tmp_path / "kept.py", str(tmp_path / "g")
    wf.write_text(KEPT)
    run(str(wf), graph_dir=root, spark=spark, executions=1)
    s = Session(root)
    assert provenance_mapping(s.base, "Items", "Level") == {"Items:I1-0": "public", "Items:I1-1": "top_secret"}
    assert provenance_mapping(s.base, "Seen", "Level") == {"Seen:S0": "secret"}
    with pytest.raises(QueryError, match=r"keep no column 'Note' \(they keep: Id, Level\); keep it with .*Module\(keep=\{'Items': \['Note'\]\}\)"):
        provenance_mapping(s.base, "Items", "Note")
    (r,) = s.run("evaluate security output Out in intake given tuple Items.Level, tuple Seen.Level")
    assert sorted(row["value"] for row in r.rows) == ["public", "secret", "top_secret"]
