"""OpenLineage export (lipspark.export.openlineage) of the ledger workflow's store: events valid
against the OpenLineage JSON schema (tests/fixtures/openlineage/, the spec's 2-0-2 and facets
1-2-0), deterministic, with the column lineage worked out by hand (tests/query/test_where.py),
and sent over HTTP to a local server only."""
from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

pytest.importorskip("openlineage.client")
jsonschema = pytest.importorskip("jsonschema")

from referencing import Registry, Resource  # noqa: E402

from lipspark.cli import main  # noqa: E402
from lipspark.export.openlineage import FACET_SCHEMA_FILE, FACET_SCHEMA_URL, openlineage_events, to_dicts, write_openlineage  # noqa: E402
from lipspark.query import Session  # noqa: E402

SPEC = os.path.join(os.path.dirname(__file__), "..", "fixtures", "openlineage")
BASE = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
FACETS = {"columnLineage": "ColumnLineageDatasetFacet", "schema": "SchemaDatasetFacet", "parent": "ParentRunFacet"}
#: the facet lipspark adds, validated against the schema it ships (lipspark/export/LipsparkGraphRunFacet.json)
LIPSPARK_FACET = FACET_SCHEMA_URL


def _validator(ref: str):
    resources = []
    for path in [os.path.join(SPEC, n) for n in os.listdir(SPEC) if n.endswith(".json")] + [FACET_SCHEMA_FILE]:
        with open(path) as fh:
            doc = json.load(fh)
        resources.append((doc["$id"], Resource.from_contents(doc)))
    registry = Registry().with_resources(resources)
    return jsonschema.Draft202012Validator({"$ref": ref}, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def events(ledger_runs):
    on, _ = ledger_runs
    return to_dicts(openlineage_events(on))


def test_every_event_and_facet_is_valid_against_the_openlineage_schema(events):
    run_event = _validator(f"{BASE}#/$defs/RunEvent")
    facets = {k: _validator(f"https://openlineage.io/spec/facets/1-2-0/{v}.json#/$defs/{v}") for k, v in FACETS.items()}
    facets["lipspark"] = _validator(LIPSPARK_FACET)
    checked = dict.fromkeys(facets, 0)
    for e in events:
        run_event.validate(e)
        found = [(k, f) for k, f in e["run"]["facets"].items()]
        found += [(k, f) for d in e.get("inputs", []) + e.get("outputs", []) for k, f in d.get("facets", {}).items()]
        for k, f in found:
            facets[k].validate(f)  # a facet of another name is a KeyError: every facet is checked
            checked[k] += 1
            if k == "lipspark":
                assert f["_schemaURL"] == FACET_SCHEMA_URL
    assert all(checked.values()), checked
    with pytest.raises(jsonschema.ValidationError):  # the facet's own schema rejects what it does not describe
        facets["lipspark"].validate({**events[1]["run"]["facets"]["lipspark"], "execution": "one"})
    with pytest.raises(jsonschema.ValidationError):  # the validator does reject: a run id that is no UUID
        run_event.validate({**events[0], "run": {**events[0]["run"], "runId": "not-a-uuid"}})


def test_one_start_and_complete_per_execution_and_per_invocation(events, ledger_runs):
    on, _ = ledger_runs
    # 3 executions × (the execution + intake, ledger, report) × (START, COMPLETE)
    assert len(events) == 3 * 4 * 2
    g = Session(on)
    for n in range(3):
        mine = events[8 * n: 8 * n + 8]
        parent = mine[0]["run"]["runId"]
        assert [(e["eventType"], e["job"]["name"]) for e in mine] == [
            ("START", "ledger"), ("START", "ledger.intake"), ("COMPLETE", "ledger.intake"), ("START", "ledger.ledger"),
            ("COMPLETE", "ledger.ledger"), ("START", "ledger.report"), ("COMPLETE", "ledger.report"), ("COMPLETE", "ledger")]
        assert mine[-1]["run"]["runId"] == parent
        for e in mine[1:-1]:
            assert e["run"]["facets"]["parent"]["run"]["runId"] == parent
            facet = e["run"]["facets"]["lipspark"]
            assert facet["execution"] == n + 1 and facet["token"] == f"M_{facet['module']}[{n + 1}]"
            (shown,) = g.run(f"show node {facet['invocation']}")  # the facet points into the row-level graph
            assert [(r["op"], r["label"], r["execution"]) for r in shown.rows] == [("invocation", facet["module"], n + 1)]
    assert len({e["run"]["runId"] for e in events}) == 12


def test_column_lineage_facets_follow_the_recorded_lineage(events, ledger_runs):
    on, _ = ledger_runs
    (ledger2,) = [e for e in events if e["job"]["name"] == "ledger.ledger" and e["eventType"] == "COMPLETE"
                  and e["run"]["facets"]["lipspark"]["execution"] == 2]
    (changed,) = [d for d in ledger2["outputs"] if d["name"].endswith("/outputs/ledger/Changed")]
    seen1, incoming = (os.path.join(on, d) for d in ("executions/000001/state/ledger/Seen", "executions/000002/outputs/intake/Incoming"))
    lineage = changed["facets"]["columnLineage"]
    assert [(f["name"], f["field"], [t["subtype"] for t in f["transformations"]]) for f in lineage["fields"]["Balance"]["inputFields"]] == [
        (seen1, "Amount", ["AGGREGATION"]), (incoming, "Amount", ["AGGREGATION"])]
    assert sorted((f["name"], f["field"], f["transformations"][0]["type"], f["transformations"][0]["subtype"]) for f in lineage["dataset"]) == [
        (seen1, "Account", "INDIRECT", "GROUP_BY"), (seen1, "Account", "INDIRECT", "JOIN"),
        (incoming, "Account", "INDIRECT", "GROUP_BY"), (incoming, "Account", "INDIRECT", "JOIN")]
    assert [f["name"] for f in changed["facets"]["schema"]["fields"]] == ["Account", "Balance", "Deposits"]
    assert {d["name"] for d in ledger2["inputs"]} == {seen1, incoming, os.path.join(on, "executions/000001/state/ledger/Balances")}


def test_exporting_twice_gives_the_same_events(events, ledger_runs, tmp_path):
    on, _ = ledger_runs
    assert to_dicts(openlineage_events(on)) == events
    out = str(tmp_path / "ledger.jsonl")
    assert main(["export", on, "--format", "openlineage", "--out", out]) == 0
    with open(out) as fh:
        assert [json.loads(line) for line in fh] == events
    by_suffix = str(tmp_path / "by_suffix.jsonl")  # .jsonl chooses the format, as .json chooses PROV-JSON
    assert main(["export", on, "-o", by_suffix]) == 0
    with open(by_suffix) as fh:
        assert [json.loads(line) for line in fh] == events


def test_the_http_transport_posts_every_event_to_a_local_server(events, ledger_runs):
    on, _ = ledger_runs
    received: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert write_openlineage(on, url=f"http://127.0.0.1:{server.server_port}") == len(events)
    finally:
        server.shutdown()
    assert [p for p, _ in received] == ["/api/v1/lineage"] * len(events)
    for _, body in received:  # the client adds its own tags (its version) as it sends
        assert "openlineage" in body["run"]["facets"].pop("tags")["_producer"].lower()
    assert [b for _, b in received] == events


def test_the_command_says_what_it_needs(ledger_runs, capsys):
    on, _ = ledger_runs
    assert main(["export", on, "--format", "openlineage"]) != 0
    assert "--output FILE (JSON lines), --url URL" in capsys.readouterr().err
    assert main(["export", on, "--format", "openlineage", "-e", "show invocation ledger", "-o", "x.jsonl"]) != 0
    assert "it takes no query" in capsys.readouterr().err
    assert main(["export", on, "--format", "prov-json", "-o", "x.json", "--url", "http://127.0.0.1:9"]) != 0
    assert "--url sends OpenLineage events; give --format openlineage" in capsys.readouterr().err
    assert not os.path.exists("x.json") and not os.path.exists("x.jsonl")
