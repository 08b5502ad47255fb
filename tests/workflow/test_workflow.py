"""Workflow validation (Definition 2.2): every invalid workflow gets a clear error before running."""
from __future__ import annotations

import pytest

from lipspark.errors import SchemaError, WorkflowError
from lipspark.workflow import Module, Workflow
from lipspark.workflow.module import parse_schema

ident = lambda **rels: {k.replace("In", "Out"): v for k, v in rels.items()}  # noqa: E731


def mods():
    return [
        Module("a", inputs={"X": "x int"}, outputs={"Y": "x int"}, logic=lambda X: {"Y": X}),
        Module("b", inputs={"Y": "x int"}, outputs={"Z": "x int"}, logic=lambda Y: {"Z": Y}),
        Module("c", inputs={"Y": "x int", "W": "x int"}, outputs={"Z": "x int"}, logic=lambda Y, W: {"Z": Y}),
    ]


def test_valid_workflow_and_order():
    wf = Workflow("w", mods()).node("s", "a", input=True).node("t", "b", output=True).edge("s", "t", ["Y"])
    assert wf.validate().topological_order() == ["s", "t"]


def test_a_node_need_not_receive_every_input_of_its_module():
    """An input no edge brings is read as an empty relation of its declared schema
    (tests/query/test_warehouse.py runs one)."""
    wf = Workflow("w", mods()).node("s", "a", input=True).node("t", "c", output=True).edge("s", "t", ["Y"])
    assert wf.validate().missing_inputs("t") == ["W"] and wf.missing_inputs("s") == []


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda w: w.node("s", "zzz", input=True), "unknown module 'zzz'"),
        (lambda w: w.node("s", "a", input=True).node("t", "b", output=True).edge("s", "t", ["Q"]), "carries 'Q', which is not an output"),
        (lambda w: w.node("s", "a", input=True).node("t", "b", output=True).edge("s", "nowhere", ["Y"]), "unknown node 'nowhere'"),
        (lambda w: w.node("s", "a", input=True).node("s2", "a", input=True).node("t", "b", output=True)
            .edge("s", "t", ["Y"]).edge("s2", "t", ["Y"]), "receives relation 'Y' on two incoming edges"),
        (lambda w: w.node("s", "a", input=True).node("t", "b").node("u", "b", output=True).edge("s", "t", ["Y"])
            .edge("t", "u", ["Z"]), "carries 'Z', which is not an input"),
        (lambda w: w.node("t", "b", output=True), "has no input node"),
        (lambda w: w.node("s", "a", input=True), "has no output node"),
        (lambda w: w.node("s", "a", input=True).node("t", "b", output=True).node("s3", "a", input=True).node("t3", "b", output=True)
            .edge("s", "t", ["Y"]).edge("s3", "t3", ["Y"]), "is not connected"),
    ],
)
def test_invalid_workflows(build, message):
    with pytest.raises(WorkflowError) as err:
        build(Workflow("w", mods())).validate()
    assert message in str(err.value)


def test_cycle_is_reported_with_its_path():
    m = [Module("p", inputs={"A": "x int"}, outputs={"A2": "x int", "B": "x int"}, logic=lambda A: {}),
         Module("q", inputs={"B": "x int"}, outputs={"A": "x int", "C": "x int"}, logic=lambda B: {}),
         Module("src", inputs={"S": "x int"}, outputs={"B": "x int"}, logic=lambda S: {})]
    wf = Workflow("w", m).node("s", "src", input=True).node("p", "p").node("q", "q", output=False).node("o", "q", output=True)
    wf.edge("p", "q", ["B"]).edge("q", "p", ["A"]).edge("s", "o", ["B"])
    with pytest.raises(WorkflowError, match="cycle: p -> q -> p|cycle: q -> p -> q"):
        wf.validate()


def test_module_definition_errors():
    with pytest.raises(WorkflowError, match="disjoint"):
        Module("m", inputs={"R": "x int"}, outputs={"R": "x int"}, logic=lambda R: {})
    with pytest.raises(WorkflowError, match="key columns"):
        Module("m", inputs={"R": "x int"}, keys={"R": ["y"]}, logic=lambda R: {})
    with pytest.raises(WorkflowError, match=r"relation 'R': columns to keep \['z'\] are not columns \(its columns: x, y\)"):
        Module("m", inputs={"R": "x int, y string"}, keys={"R": ["x"]}, keep={"R": ["z"]}, logic=lambda R: {})
    with pytest.raises(WorkflowError, match=r"columns to keep given for unknown relations \['S'\]"):
        Module("m", inputs={"R": "x int"}, keep={"S": ["x"]}, logic=lambda R: {})


def test_the_columns_a_base_tuple_keeps():
    m = Module("m", inputs={"R": "x int, y string, z double"}, state={"S": "x int, y string"}, outputs={"O": "x int"},
               keys={"R": ["x"], "S": ["x"]}, keep={"R": ["z", "x"], "S": "y"}, logic=lambda R, S: {})
    assert m.relation("R").token_columns == ("x", "z")  # the key first; a key column kept is kept once
    assert m.relation("S").token_columns == ("x", "y")
    assert m.relation("O").token_columns == ("x",)  # without a key, every column
    with pytest.raises(WorkflowError, match="logic"):
        Module("m", inputs={"R": "x int"})
    with pytest.raises(WorkflowError, match="schema entry"):
        parse_schema("x")


def test_schema_check_names_module_relation_expected_and_found():
    m = mods()[0]
    with pytest.raises(SchemaError, match=r"module 'a', relation 'X': expected columns x int; found x string, y int"):
        m.relation("X").check("a", [("x", "string"), ("y", "int")])


BAD_NAMES = ["../../x", "/abs", "a/b", "a\x00b", "x" * 129, "", "dealer 1", "café"]


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_names_that_would_leave_the_store_are_refused_where_defined(bad):
    """Node ids, module, relation and workflow names become directories of the store: each is
    refused when it is defined, before anything runs or is written, in one line naming the rule."""
    def one_line(err):
        assert "\n" not in str(err.value) and "ASCII letters" in str(err.value) and repr(bad) in str(err.value)

    with pytest.raises(WorkflowError) as err:
        Workflow("w", mods()).node(bad, "a", input=True)
    one_line(err)
    with pytest.raises(WorkflowError) as err:
        Module(bad, inputs={"X": "x int"}, outputs={"Y": "x int"}, logic=lambda X: {"Y": X})
    one_line(err)
    with pytest.raises(WorkflowError) as err:
        Module("m", inputs={bad: "x int"}, outputs={"Y": "x int"}, logic=lambda **r: {"Y": None})
    one_line(err)
    with pytest.raises(WorkflowError) as err:
        Workflow(bad)
    one_line(err)


def test_longest_allowed_names_pass():
    name = "n" * 128
    Module(name, inputs={name: "x int"}, outputs={"Y": "x int"}, logic=lambda **r: r)
    Workflow("w-1", mods()).node(name, "a", input=True)


@pytest.mark.parametrize("argv", [
    ["run", "workflows/car_dealership.py", "--executions", "-1"],
    ["run", "workflows/car_dealership.py", "--executions", "0"],
    ["viz", "graphs/g", "-e", "zoomout agg", "--max-nodes", "-5"],
    ["viz", "graphs/g", "-e", "zoomout agg", "--max-nodes", "many"],
])
def test_counts_on_the_command_line_are_whole_numbers_of_at_least_one(argv, capsys):
    from lipspark.cli import build_parser

    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert "expected a whole number of at least 1" in capsys.readouterr().err
