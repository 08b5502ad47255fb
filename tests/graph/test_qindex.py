"""The query-ready index: the mapped graph answers exactly as the in-memory one; a stale, damaged
or half-written index is rebuilt, never used; several processes can open one store at once."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.graph import qindex
from lipspark.graph.index import GraphIndex
from lipspark.query import Session, delete, polynomial, zoom_out
from lipspark.store.graphs import graph_segments
from tests.query.graphs import workflow_graphs
from tests.util import damaged

SETTINGS = settings(max_examples=25, deadline=None, database=None)


def _blocks(gen):
    """The generated graph cut into blocks by execution (initial state first), as a store's
    index holds it: every edge lies in the block of its target, its source in that block or an
    earlier one."""
    nodes, edges = gen.frames()
    ex = nodes["execution"].astype("float64").fillna(0).to_numpy()
    block_of = dict(zip(nodes["id"].tolist(), ex.tolist()))
    for s, d in zip(edges["src"].tolist(), edges["dst"].tolist()):
        assert block_of[s] <= block_of[d]
    dst_block = edges["dst"].map(block_of).to_numpy()
    return [(nodes[ex == b].reset_index(drop=True), edges[dst_block == b].reset_index(drop=True)) for b in sorted(set(ex.tolist()))]


def _mapped(tmp, gen):
    path = os.path.join(tmp, "index")
    shutil.rmtree(path, ignore_errors=True)
    for i, (n, e) in enumerate(_blocks(gen)):
        qindex.append_block(path, f"g{i}", n, e, {})
    m = qindex.open_index(path)
    return GraphIndex(m.ids, m.is_v, m.op, m.type_code, m.in_ptr, m.in_src, m.attrs, out=m.out, cross=m.cross, blocks=m.blocks)


def _same_answers(a: GraphIndex, b: GraphIndex, rnd: random.Random) -> None:
    """Nodes, edges, traces, polynomials, zoom and what-if values agree (positions may differ)."""
    assert a.same_as(b)
    ids = sorted(int(i) for i in a.ids)
    for nid in rnd.sample(ids, min(8, len(ids))):
        assert sorted(a.ids[a.ancestors(a.position(nid))].tolist()) == sorted(b.ids[b.ancestors(b.position(nid))].tolist())
        assert sorted(a.ids[a.descendants(a.position(nid))].tolist()) == sorted(b.ids[b.descendants(b.position(nid))].tolist())
        assert str(polynomial(a, nid)) == str(polynomial(b, nid))
    tokens = sorted(int(i) for i in a.ids[np.asarray(a.op) == 1])
    for t in rnd.sample(tokens, min(3, len(tokens))):
        ra, rb = delete(a, [t]), delete(b, [t])
        assert sorted(ra.removed_ids.tolist()) == sorted(rb.removed_ids.tolist())
        assert [(c.node, c.before, repr(c.after)) for c in ra.values] == [(c.node, c.before, repr(c.after)) for c in rb.values]
    mods = sorted(str(m) for m in a.distinct("module", np.flatnonzero(np.asarray(a.op) == 2)))
    if mods:
        assert zoom_out(a, mods).same_as(zoom_out(b, mods))


@SETTINGS
@given(workflow_graphs(), st.randoms(use_true_random=False))
def test_the_mapped_index_answers_as_the_in_memory_one(tmp_path_factory, gen, rnd):
    tmp = str(tmp_path_factory.mktemp("q"))
    mapped = _mapped(tmp, gen)
    assert len(mapped.blocks) - 1 == len(_blocks(gen))
    _same_answers(mapped, gen.index, rnd)


# ------------------------------------------------------------------ a real store


@pytest.fixture()
def car_store(car_runs, tmp_path):
    """A copy of the car dealership store: 16,000 nodes over the initial state and one execution."""
    root = str(tmp_path / "cars")
    shutil.copytree(car_runs[0].store, root, ignore=shutil.ignore_patterns(qindex.INDEX_DIR))
    return root


@pytest.fixture()
def store(ledger_runs, tmp_path):
    """A copy of the ledger store (tests change its files): the initial state and three executions,
    four blocks of the index, small enough that rebuilding it is quick."""
    root = str(tmp_path / "store")
    shutil.copytree(ledger_runs[0], root, ignore=shutil.ignore_patterns(qindex.INDEX_DIR))
    return root


#: a query of the ledger store that reads every execution's block
LEDGER_Q = "ancestors output Summary of report execution 3; zoomout intake; delete tuple Seen(DepId = \"D0-0\")"


def _in_memory(root):
    segments, base = graph_segments(root)
    return GraphIndex.from_segments(segments, root=base)


def test_the_car_dealership_store_answers_as_in_memory(car_store):
    g = GraphIndex.load(car_store)
    assert os.path.exists(os.path.join(car_store, "index", "index.json"))
    assert isinstance(g.ids.base, np.memmap)  # mapped, not read
    _same_answers(g, _in_memory(car_store), random.Random(3))
    q = "ancestors output Bids1 of dealer1 execution 1; zoomout dealer2; delete tuple Requests(BidId = \"B1\")"
    assert [r.to_dict() for r in Session(g).run(q)] == [r.to_dict() for r in Session(_in_memory(car_store)).run(q)]


def test_the_ledger_store_answers_as_in_memory(store):
    g = GraphIndex.load(store)
    assert len(g.blocks) - 1 == 4 and isinstance(g.ids.base, np.memmap)
    _same_answers(g, _in_memory(store), random.Random(3))
    assert [r.to_dict() for r in Session(g).run(LEDGER_Q)] == [r.to_dict() for r in Session(_in_memory(store)).run(LEDGER_Q)]


def _meta(store):
    with open(os.path.join(store, "index", "index.json")) as fh:
        return json.load(fh)


def test_a_stale_index_is_rebuilt_not_used(store):
    before = GraphIndex.load(store)
    manifest = os.path.join(store, "executions", "000001", "graph", "manifest.json")
    st_ = os.stat(manifest)
    os.utime(manifest, ns=(st_.st_atime_ns, st_.st_mtime_ns + 10**9))  # the graph changed (as far as we can tell)
    stamp = _meta(store)["blocks"][1]["check"]["manifest"]
    g = GraphIndex.load(store)
    assert _meta(store)["blocks"][1]["check"]["manifest"] != stamp
    assert g.same_as(before)


@pytest.mark.parametrize("damage", ["truncate ids", "garbage index.json", "other version", "missing in_src"])
def test_a_damaged_index_is_rebuilt(store, damage):
    GraphIndex.load(store)
    want = _in_memory(store)  # not mapped: damaging a mapped file in place would crash this process (SIGBUS)
    ipath = os.path.join(store, "index")
    if damage == "truncate ids":
        os.truncate(os.path.join(ipath, "ids"), 16)
    elif damage == "garbage index.json":
        with open(os.path.join(ipath, "index.json"), "w") as fh:
            fh.write("{not json")
    elif damage == "other version":
        meta = _meta(store)
        meta["version"] = 99
        with open(os.path.join(ipath, "index.json"), "w") as fh:
            json.dump(meta, fh)
    else:
        os.remove(os.path.join(ipath, "in_src"))
    assert GraphIndex.load(store).same_as(want)


def test_new_executions_are_appended_and_a_crashed_append_leaves_the_index_as_it_was(store, monkeypatch):
    want = GraphIndex.load(store)
    meta = _meta(store)
    n_blocks = len(meta["blocks"])
    # the index of all but the last graph, as before that execution ran
    shutil.rmtree(os.path.join(store, "index"))
    root, dirs, ipath = qindex._graph_dirs(store)
    for gdir in dirs[:-1]:
        nodes, edges, check = qindex._expand_dir(root, gdir)
        qindex.append_block(ipath, gdir, nodes, edges, check)
    sizes = {f: os.path.getsize(os.path.join(ipath, f)) for f in os.listdir(ipath)}

    def crash(*a, **k):
        raise KeyboardInterrupt("killed while appending")

    monkeypatch.setattr(qindex, "_write_meta", crash)
    with pytest.raises(KeyboardInterrupt):
        GraphIndex.load(store)  # arrays appended, index.json not replaced
    monkeypatch.undo()
    assert len(_meta(store)["blocks"]) == n_blocks - 1
    grown = [f for f in sizes if f != "index.json" and os.path.getsize(os.path.join(ipath, f)) > sizes[f]]
    assert grown  # the crash left bytes past the committed lengths …
    g = GraphIndex.load(store)  # … which the next append truncates
    assert len(_meta(store)["blocks"]) == n_blocks
    assert g.same_as(want)


def test_a_store_that_cannot_be_written_is_indexed_in_memory(store, monkeypatch):
    want = GraphIndex.load(store)
    shutil.rmtree(os.path.join(store, "index"))

    def refuse(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(qindex, "update", refuse)
    g = GraphIndex.load(store)
    assert not os.path.exists(os.path.join(store, "index", "index.json"))
    assert g.same_as(want)


def test_reindex_rebuilds_and_two_processes_can_open_a_store_at_once(store):
    from lipspark.cli import main

    assert main(["reindex", store]) == 0
    first = _meta(store)
    shutil.rmtree(os.path.join(store, "index"))
    q = "ancestors output Summary of report execution 3"
    cmd = [sys.executable, "-m", "lipspark.cli", "query", store, "-e", q, "--format", "json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    want = json.dumps([r.to_dict() for r in Session(_in_memory(store)).run(q)], indent=2, default=str)
    assert [json.loads(o) for o, _ in outs] == [json.loads(want)] * 2
    assert [b["nodes"] for b in _meta(store)["blocks"]] == [b["nodes"] for b in first["blocks"]]


def test_opening_reads_no_graph_and_imports_no_pandas(store):
    GraphIndex.load(store)
    code = ("import sys; from lipspark.graph.index import GraphIndex; g = GraphIndex.load(sys.argv[1]); "
            "from lipspark.query import Session; Session(g).run('ancestors output Summary of report execution 3'); "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'sympy', 'pyspark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, store], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_store_copied_without_its_times_answers_as_the_original(store, tmp_path):
    """`cp -r` gives every file a new time: the copy reads as it was (checksums decide), its index
    is rebuilt once and then used; a base file changed in place with its size kept is still refused."""
    from lipspark.errors import StoreError

    q = "ancestors output Summary of report execution 3"
    want = [r.to_dict() for r in Session(store).run(q)]
    copy = str(tmp_path / "copy")
    shutil.copytree(store, copy, copy_function=shutil.copy)  # contents only, new times
    assert [r.to_dict() for r in Session(copy).run(q)] == want
    stamp = os.stat(os.path.join(copy, "index", "index.json")).st_mtime_ns
    assert [r.to_dict() for r in Session(copy).run(q)] == want
    assert os.stat(os.path.join(copy, "index", "index.json")).st_mtime_ns == stamp  # not rebuilt again
    seen = os.path.join(damaged(copy), "initial", "ledger", "Seen")
    part = os.path.join(seen, sorted(f for f in os.listdir(seen) if f.endswith(".parquet"))[0])
    with open(part, "r+b") as fh:  # one byte of the footer's schema changed, size kept
        fh.seek(-12, os.SEEK_END)
        b = fh.read(1)
        fh.seek(-12, os.SEEK_END)
        fh.write(bytes([b[0] ^ 0x20]))
    shutil.rmtree(os.path.join(copy, "index"))
    with pytest.raises(StoreError, match="changed after the graph was captured"):
        GraphIndex.load(copy)


def test_update_blocks_keeps_what_is_current_and_makes_again_what_is_not(tmp_path):
    """The index of a graph that is not a store's graph directories (a deferred store's coarse
    graph): blocks are kept while their name and check are the same, appended when new, and all
    made again from the first that differs."""
    from lipspark.graph.qindex import open_index, update_blocks

    def block(name):
        made.append(name)
        k = int(name[1:])
        ids = [k * 10 + 1, k * 10 + 2]
        nodes = pd.DataFrame({"id": ids, "kind": "p", "op": ["token", "+"], "label": [f"R:{k}", "+"], "seg": k})
        src = [ids[0]] + ([(k - 1) * 10 + 2] if k > 1 else [])  # an edge from the block before
        return nodes, pd.DataFrame({"src": src, "dst": [ids[1]] * len(src)})

    ipath = str(tmp_path / "index")
    made: list[str] = []
    want = [("b1", {"v": 1}), ("b2", {"v": 1})]
    meta = update_blocks(ipath, want, block)
    assert made == ["b1", "b2"] and [b["graph"] for b in meta["blocks"]] == ["b1", "b2"]
    m = open_index(ipath, meta)
    assert m.ids.tolist() == [11, 12, 21, 22] and m.in_ptr.tolist() == [0, 0, 1, 1, 3]
    made.clear()
    assert update_blocks(ipath, want, block) == meta and made == []  # current: nothing made
    meta3 = update_blocks(ipath, want + [("b3", {"v": 1})], block)
    assert made == ["b3"] and len(meta3["blocks"]) == 3
    made.clear()
    assert update_blocks(ipath, want, block)["blocks"] == meta3["blocks"][:2] and made == []  # blocks past the wanted: left out
    update_blocks(ipath, [("b1", {"v": 1}), ("b2", {"v": 2})], block)  # a check that differs: made again from scratch
    assert made == ["b1", "b2"]
