"""Connected sets (lipspark.graph.partitions): the partitioned tables a Spark query reads."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from lipspark.graph import partitions, qindex
from lipspark.graph.index import GraphIndex
from lipspark.vocabulary import Op
from tests.query.graphs import generate


def write_blocks(path: str, gen) -> str:
    """The generated graph as a query-ready index at ``path/index``, one block per execution (the
    tokens of no execution first), as a store's is; the index path."""
    nodes, edges = gen.frames()
    ex = nodes["execution"].map(lambda v: 0 if v is None or v != v else int(v)).to_numpy(dtype=np.int64)
    block_of = dict(zip(nodes["id"].tolist(), ex.tolist()))
    src_b = edges["src"].map(block_of).to_numpy()
    dst_b = edges["dst"].map(block_of).to_numpy()
    if (src_b > dst_b).any():  # an edge from a later execution: one block
        ex[:] = 0
        dst_b[:] = 0
    ipath = os.path.join(path, "index")
    for b in sorted(set(ex.tolist())):
        qindex.append_block(ipath, f"b{b}", nodes[ex == b].reset_index(drop=True), edges[dst_b == b].reset_index(drop=True), {"b": b})
    return ipath


def global_sets(g: GraphIndex) -> np.ndarray:
    """Weakly connected components of ``g`` with invocation nodes left out, by position."""
    src, dst = g.src, g.dst
    hub = np.asarray(g.op) == int(Op.INVOCATION)
    keep = ~hub[src] & ~hub[dst]
    n = len(g)
    return connected_components(coo_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n)), directed=False)[1]


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("seed", range(12))
def test_sets_made_block_by_block_are_the_connected_components_of_the_whole_graph(tmp_path, seed):
    gen = generate(seed, executions=3)
    ipath = write_blocks(str(tmp_path), gen)
    partitions.update_from(ipath)
    p = partitions.Partitions.open(str(tmp_path))
    m = qindex.open_index(ipath)
    g = GraphIndex(m.ids, m.is_v, m.op, m.type_code, m.in_ptr, m.in_src, m.attrs, out=m.out, cross=m.cross, blocks=m.blocks)
    sets = np.fromfile(os.path.join(p.root, "set.i8"), dtype="<i8")
    assert len(sets) == len(g) == p.nodes and p.edges == g.num_edges
    assert same_partition(p.representative(sets), global_sets(g))
    # every edge is stored once, under its target's set, which its source shares unless it is an invocation node
    e = pd.concat([pq.read_table(f).to_pandas() for f in p.files("edges")])
    assert len(e) == g.num_edges
    node_set = dict(zip(np.asarray(g.ids).tolist(), p.representative(sets).tolist()))
    inv = set(np.asarray(g.ids)[np.asarray(g.op) == int(Op.INVOCATION)].tolist())
    for s, d, st in zip(e["src"].tolist(), e["dst"].tolist(), e["set"].tolist()):
        assert node_set[d] == p.representative([st])[0]
        assert s in inv or node_set[s] == node_set[d]
    # the hubs table lists exactly the sets each invocation node has edges into
    h = pd.concat([pq.read_table(f).to_pandas() for f in p.files("hubs")])
    want = {(s, node_set[d]) for s, d in zip(e["src"].tolist(), e["dst"].tolist()) if s in inv}
    assert {(a, int(p.representative([b])[0])) for a, b in zip(h["hub"].tolist(), h["set"].tolist())} == want


def test_the_demo_store_is_partitioned_incrementally_and_made_again_when_stale(demo_graph, tmp_path):
    import shutil

    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    meta = partitions.update(path)
    assert len(meta["blocks"]) == 4 and [b["graph"] for b in meta["blocks"]][0] == "initial/graph"
    p = partitions.Partitions.open(path, make=False)
    g = GraphIndex.load(path)
    sets = np.fromfile(os.path.join(p.root, "set.i8"), dtype="<i8")
    assert same_partition(p.representative(sets), global_sets(g))
    # up to date: nothing is written again
    before = os.stat(p.files("nodes", [3])[0]).st_mtime_ns
    assert partitions.update(path) == meta and os.stat(p.files("nodes", [3])[0]).st_mtime_ns == before
    # a block dropped (as a crash would leave it) is appended again, the same
    meta2 = {**meta, "blocks": meta["blocks"][:2]}
    partitions._write_meta(p.root, meta2)
    assert partitions.update(path)["blocks"] == meta["blocks"]
    # an index block that changed makes them all again
    stale = {**meta, "blocks": [{**meta["blocks"][0], "check": {"other": 1}}, *meta["blocks"][1:]]}
    partitions._write_meta(p.root, stale)
    assert partitions.update(path)["blocks"] == meta["blocks"]


def test_a_missing_partition_is_one_line_naming_the_command(demo_graph, tmp_path):
    import shutil

    from lipspark.errors import StoreError

    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    shutil.rmtree(os.path.join(path, "partitions"), ignore_errors=True)
    with pytest.raises(StoreError, match="lipspark partition"):
        partitions.Partitions.open(path, make=False)


def test_a_run_appends_its_executions_to_a_store_that_has_partitions(spark, tmp_path):
    from lipspark.workflow import run
    from tests.conftest import LEDGER

    path = str(tmp_path / "ledger")
    run(LEDGER, graph_dir=path, spark=spark, executions=1)
    assert not os.path.exists(os.path.join(path, "partitions"))  # a store is partitioned on request only
    first = partitions.update(path)
    run(LEDGER, graph_dir=path, spark=spark, executions=1)
    meta = partitions._read_meta(os.path.join(path, "partitions"))
    assert meta is not None and len(meta["blocks"]) == len(first["blocks"]) + 1  # appended by the run, not by a query
    assert meta["blocks"][:len(first["blocks"])] == first["blocks"]
