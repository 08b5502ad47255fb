"""The query engines (lipspark.engines): the Spark engine gives the in-memory engine's answers,
read a connected set at a time."""
from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest

from lipspark.engines import SparkGraph, open_session
from lipspark.errors import QueryError
from lipspark.graph import partitions, qindex
from lipspark.graph.index import GraphIndex
from lipspark.query import Session
from lipspark.vocabulary import Op
from tests.graph.test_partitions import write_blocks
from tests.query.graphs import generate


def answers(results) -> list:
    return [json.loads(json.dumps(r.to_dict(), default=str)) for r in results]


def both(path: str, spark, text: str, g: GraphIndex | None = None):
    mem = Session(g if g is not None else path)
    sp = Session(SparkGraph(path, spark=spark))
    return mem, sp, _run(mem, text), _run(sp, text)


def _run(s: Session, text: str):
    try:
        return answers(s.run(text))
    except QueryError as err:
        return ("error", str(err))


def _queries(g: GraphIndex, gen, rng: random.Random) -> list[str]:
    ids = np.asarray(g.ids)
    op = np.asarray(g.op)
    tokens = ids[op == int(Op.TOKEN)].tolist()
    outs = ids[np.asarray(g.type_code) == 3].tolist()
    pick = lambda xs: rng.choice(xs) if xs else int(ids[0])  # noqa: E731
    o, t = pick(outs), pick(tokens)
    mod = rng.choice(gen.modules)
    return [f"ancestors node {o}", f"descendants node {t}", f"polynomial node {o}", f"subgraph node {o}",
            f"delete node {t}; descendants node {t}", f"delete node {t}; polynomial node {o}",
            f"depends node {o} on node {t}", f"evaluate counting node {o}",
            f"zoomout {mod}; ancestors node {o}", f"zoomout {mod}; descendants node {t}; zoomin {mod}; ancestors node {o}",
            f"descendants invocation {mod}"]


@pytest.mark.parametrize("seed", range(8))
def test_answers_on_generated_graphs_are_the_in_memory_engines(spark, tmp_path, seed):
    gen = generate(seed, executions=3)
    ipath = write_blocks(str(tmp_path), gen)
    partitions.update_from(ipath)
    m = qindex.open_index(ipath)
    g = GraphIndex(m.ids, m.is_v, m.op, m.type_code, m.in_ptr, m.in_src, m.attrs, out=m.out, cross=m.cross, blocks=m.blocks)
    for q in _queries(g, gen, random.Random(seed)):
        _, sp, a, b = both(str(tmp_path), spark, q, g)
        assert a == b, (gen, q)


DEMO_QUERIES = [
    "ancestors output BestBid of agg execution 2",
    "polynomial output Bids1 of dealer1 execution 2",
    'descendants tuple Cars(CarId = "D1C000003")',
    "subgraph output Bids1 of dealer1 execution 3",
    'delete tuple Cars(CarId = "D1C000003")',
    "descendants invocation dealer1 execution 2",
    "zoomout dealer2, dealer3, dealer4; ancestors output BestBid of agg execution 1",
    "zoomout dealer1; delete tuple Cars(CarId = \"D1C000003\"); zoomin dealer1; polynomial output BestBid of agg execution 3",
    "evaluate counting output BestBid of agg execution 1",
    'show state Cars(Model = "Audi A6") in dealer1 execution 1',
    # errors, in the same words
    'ancestors output Nothing of agg',
    'ancestors output Bids1 of dealer9 execution 2',
    'ancestors output Bids1 of dealer1 execution 99',
    'descendants tuple Cars(CarId = "nope")',
    'descendants tuple Cars(Colour = "red")',
    'descendants token "Cars:none"',
    'descendants invocation dealer7',
    'descendants tuple Cars(CarId = "D1C000003") execution 2',
    'polynomial value Amount of output Bids1 of dealer1 execution 1',
    'polynomial token "Cars:D2C000040"',
]


def test_answers_on_the_demo_store_are_the_in_memory_engines(spark, demo_graph, tmp_path):
    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    for q in DEMO_QUERIES:
        mem, sp, a, b = both(path, spark, q)
        assert a == b, q
    # a statement reads the sets it reaches, not the graph
    s = Session(SparkGraph(path, spark=spark))
    s.run("ancestors output BestBid of agg execution 1")
    g = GraphIndex.load(path)
    assert 0 < s._partial.stats["nodes"] < len(g) / 4


def test_a_session_grows_as_statements_reach_further_and_keeps_its_view(spark, demo_graph, tmp_path):
    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    mem, sp = Session(path), Session(SparkGraph(path, spark=spark))
    for q in ['delete tuple Cars(CarId = "D1C000003")', "ancestors output BestBid of agg execution 3",
              "zoomout dealer2", "descendants invocation dealer2 execution 1", "reset", "polynomial output Bids2 of dealer2 execution 1"]:
        assert answers(mem.run(q)) == answers(sp.run(q)), q
    assert "scope" not in sp.run("zoomout agg")[0].to_dict()  # the whole view's size, as the in-memory engine's


def test_statements_that_read_the_store_are_refused_in_one_line(spark, demo_graph, tmp_path):
    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    s = Session(SparkGraph(path, spark=spark))
    for q in ["diff output Bids1 of dealer1 execution 1, execution 2", "culprits", "checks",
              "where column Amount of output Bids1 of dealer1 execution 1",
              'update tuple Cars(CarId = "D1C000003") in dealer1 set Model = "x"']:
        with pytest.raises(QueryError, match="--engine memory"):
            s.run(q)


def test_engine_choice(spark, demo_graph):
    with pytest.raises(QueryError, match="unknown query engine"):
        open_session(demo_graph, engine="gpu")
    assert open_session(demo_graph, engine="auto")._partial is None  # a small graph stays in memory
    assert isinstance(open_session(demo_graph, engine="spark", spark=spark)._partial, SparkGraph)


@pytest.mark.parametrize("seed", range(8, 40))
@pytest.mark.slow  # ~10 s each: the fast suite runs eight seeds
def test_answers_on_more_generated_graphs(spark, tmp_path, seed):
    test_answers_on_generated_graphs_are_the_in_memory_engines(spark, tmp_path, seed)


def test_the_command_line(spark, demo_graph, tmp_path, capsys):
    from lipspark import cli

    path = shutil.copytree(demo_graph, str(tmp_path / "demo"))
    shutil.rmtree(str(tmp_path / "demo" / "partitions"), ignore_errors=True)
    assert cli.main(["partition", path]) == 0
    assert "connected set(s)" in capsys.readouterr().out
    q = "zoomout dealer2, dealer3, dealer4; polynomial output BestBid of agg execution 1"
    assert cli.main(["query", path, "-e", q, "--format", "json"]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert cli.main(["query", path, "--engine", "spark", "-e", q, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == memory
    assert cli.main(["query", path, "--engine", "spark", "-e", "culprits"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--engine memory" in err[0]
