"""``gbdist run NAME FILE ...`` on the loop algorithms of the built-in graph library and on
a user's .gbd file: results against networkx, operands in order or by name, parameters
with defaults, and the errors."""
import json

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sps

from gbdist.cli.main import main


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def graph(tmp_path):
    """A weighted undirected graph with two components and an isolated vertex, as .mtx."""
    rng = np.random.default_rng(3)
    G = nx.disjoint_union(nx.gnm_random_graph(20, 45, seed=4), nx.path_graph(5))
    G.add_node(25)
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(1, 9))
    A = nx.to_scipy_sparse_array(G, nodelist=range(26), weight="weight", format="coo")
    f = tmp_path / "g.mtx"
    scipy.io.mmwrite(f, sps.coo_matrix(A))
    return G, f


def test_bfs_levels_sssp_and_components(capsys, graph, tmp_path):
    G, f = graph
    rc, _, err = run(capsys, "run", "bfs_levels", f, "s=3", "-o", tmp_path / "lv", "--fill", "-1")
    assert rc == 0 and "wrote" in err
    got = np.load(tmp_path / "lv.npy")
    want = nx.single_source_shortest_path_length(G, 3)
    assert got.tolist() == [want.get(i, -1) for i in range(26)]
    rc, _, _ = run(capsys, "run", "sssp", f, "3", "-o", tmp_path / "d.npy", "-q")  # in order
    d = np.load(tmp_path / "d.npy")
    want = nx.single_source_dijkstra_path_length(G, 3)
    assert np.allclose(d[list(want)], list(want.values()))
    assert np.isnan(d[[i for i in range(26) if i not in want]]).all()
    rc, _, _ = run(capsys, "run", "bfs_parents", f, "--arg", "s=0", "-o", tmp_path / "p.npy")
    p = np.load(tmp_path / "p.npy")
    assert p[0] == 0 and all(G.has_edge(int(p[v]), v) for v in range(1, 20) if not np.isnan(p[v]))
    rc, _, _ = run(capsys, "run", "connected_components", f, "-o", tmp_path / "cc.npy")
    cc = np.load(tmp_path / "cc.npy")
    assert cc.dtype == np.int64  # every entry stored: the vector's own dtype
    assert cc.tolist() == [min(c) for i in range(26) for c in nx.connected_components(G) if i in c]


def test_pagerank_parameters_from_the_command_line(capsys, graph, tmp_path):
    G, f = graph
    rc, _, _ = run(capsys, "run", "pagerank", f, "-o", tmp_path / "pr.npy")
    want = nx.pagerank(G, weight="weight")
    assert np.allclose(np.load(tmp_path / "pr.npy"), [want[i] for i in range(26)], atol=1e-6)
    rc, _, _ = run(capsys, "run", "pagerank", f, "alpha=0.5", "tol=1e-10", "-o", tmp_path / "p5")
    want = nx.pagerank(G, alpha=0.5, tol=1e-10, weight="weight")
    assert np.allclose(np.load(tmp_path / "p5.npy"), [want[i] for i in range(26)], atol=1e-10)
    rc, out, err = run(capsys, "run", "pagerank", f, "max_iter=2", "-o", tmp_path / "x.npy")
    assert rc == 2 and "did not stop within 2 iterations" in err
    assert not (tmp_path / "x.npy").exists()
    rc, out, _ = run(capsys, "metrics", "--graphs", "--format", "json")
    pr = next(g for g in json.loads(out)["graphs"] if g["name"] == "pagerank")
    assert pr["operands"][1] == {"name": "alpha", "kind": "scalar", "default": 0.85}


MY_GBD = """
# the walks of length k + 1 between every pair of vertices
graph my_walks(A; k = 1) =
    loop W = A do W = mxm(W, A, plus_times) repeat k in W
"""


def test_a_gbd_file_as_the_definition(capsys, graph, tmp_path, isolated_definitions):
    G, f = graph
    gbd = tmp_path / "walks.gbd"
    gbd.write_text(MY_GBD)
    D = nx.to_numpy_array(G, nodelist=range(26), weight="weight")
    rc, _, _ = run(capsys, "run", gbd, f, "-o", tmp_path / "w")
    assert rc == 0 and np.allclose(sps.load_npz(tmp_path / "w.npz").toarray(), D @ D)
    rc, _, _ = run(capsys, "run", f"{gbd}:my_walks", f, "2", "-o", tmp_path / "w3.npz")
    assert np.allclose(sps.load_npz(tmp_path / "w3.npz").toarray(), D @ D @ D)
    two = tmp_path / "two.gbd"
    two.write_text(MY_GBD.replace("my_walks", "my_walks2") + "graph my_other(A) = mxm(A, A, plus_pair)\n")
    rc, _, err = run(capsys, "run", two, f, "-o", tmp_path / "w.npz")
    assert rc == 2 and "defines 2 graph definitions: say which" in err and f"{two}:my_walks2" in err
    rc, _, err = run(capsys, "run", f"{gbd}:my_walk", f, "-o", tmp_path / "w.npz")
    assert rc == 2 and "defines no graph 'my_walk'" in err and "did you mean 'my_walks'" in err


@pytest.mark.parametrize("argv, words", [
    (["bfs_levels", "-o", "x.npy"], ["needs 2 operands: 's' missing", "bfs_levels(A matrix, s scalar)"]),
    (["bfs_levels", "1", "2", "-o", "x.npy"], ["takes 2 operand(s): '2' is one too many"]),
    (["bfs_levels", "s=99", "-o", "x.npy"], ["at=i): i is not a row of the matrix", "[0, 26)"]),
    (["bfs_levels", "s=0", "--arg", "s=1", "-o", "x.npy"], ["operand 's' of 'bfs_levels' is given twice"]),
    (["pagerank", "alpha=high", "-o", "x.npy"], ["operand 'alpha' of 'pagerank' is a scalar: give a number"]),
    (["pagerank", "alpah=0.9", "-o", "x.npy"], ["has no operand 'alpah'", "did you mean 'alpha'"]),
    (["sssp", "0"], ["sssp returns a vector: it needs an output file"]),
])
def test_errors(capsys, graph, tmp_path, argv, words):
    _, f = graph
    argv = [str(tmp_path / a) if a.endswith(".npy") else a for a in argv]
    rc, out, err = run(capsys, "run", argv[0], f, *argv[1:])
    assert rc == 2 and out == ""
    for w in words:
        assert w in err, err
    assert not list(tmp_path.glob("x.*"))
