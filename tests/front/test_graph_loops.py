"""Loops in graph definitions (``loop ... do ... until/repeat ... in``) and the built-in
graph library written with them: against networkx and gbdist.algorithms, on random,
real-shaped, disconnected, self-looped and empty graphs; the checks made when a loop is
defined, the ones made when it runs, explain and trace."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.errors import DefinitionError, InputError, TypeCheckError
from gbdist.graph.loops import LoopLimitError

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def adjacency(G, n=None, weight="weight"):
    n = G.number_of_nodes() if n is None else n
    A = nx.to_scipy_sparse_array(G, nodelist=range(n), weight=weight, format="csr")
    return sps.csr_matrix(A.astype(np.float64))


def weighted(G, seed=0, low=1, high=10):
    rng = np.random.default_rng(seed)
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(low, high))
    return G


def disconnected():
    """Three components, two isolated vertices, a self loop."""
    G = nx.disjoint_union_all([nx.cycle_graph(5), nx.path_graph(4), nx.complete_graph(3),
                               nx.empty_graph(2)])
    G.add_edge(6, 6)
    return G


def graphs():
    """(name, networkx graph) — small random, real-shaped, odd."""
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(9, 8))
    grid.remove_edges_from(list(grid.edges)[::10])  # road-like: a grid with edges removed
    return [
        ("gnm", nx.gnm_random_graph(70, 160, seed=1)),
        ("digraph", nx.gnm_random_graph(60, 200, seed=2, directed=True)),
        ("karate", nx.karate_club_graph()),
        ("power_law", nx.barabasi_albert_graph(120, 2, seed=3)),
        ("road", grid),
        ("disconnected", disconnected()),
        ("one_vertex", nx.empty_graph(1)),
    ]


GRAPHS = graphs()
IDS = [name for name, _ in GRAPHS]


def as_dict(v):
    return dict(zip(v.indices.tolist(), v.values.tolist()))


# --- the library against networkx and gbdist.algorithms ---------------------------------


@pytest.mark.parametrize("name, G", GRAPHS, ids=IDS)
def test_bfs_levels_and_parents(name, G):
    A = adjacency(G, weight=None)
    for s in {0, G.number_of_nodes() - 1}:
        levels = gr.run("bfs_levels", A, s)
        assert levels.dtype == np.int64
        assert as_dict(levels) == nx.single_source_shortest_path_length(G, s)
        assert np.array_equal(levels.to_dense(fill=-1), alg.bfs_levels(A, s))
        parents = gr.run("bfs_parents", A, s)
        assert np.array_equal(parents.to_dense(fill=-1), alg.bfs_parents(A, s))
        p = as_dict(parents)
        want = as_dict(levels)
        assert set(p) == set(want) and p[s] == s
        for v, u in p.items():  # a parent is a neighbour one level closer
            if v != s:
                assert G.has_edge(u, v) and want[u] == want[v] - 1


@pytest.mark.parametrize("name, G", GRAPHS, ids=IDS)
def test_sssp_bellman_ford(name, G):
    A = adjacency(weighted(G, seed=len(name)))
    d = gr.run("sssp", A, 0)
    want = nx.single_source_bellman_ford_path_length(G, 0)
    got = as_dict(d)
    assert set(got) == set(want)
    assert np.allclose([got[k] for k in want], [want[k] for k in want])
    assert np.allclose(d.to_dense(fill=np.inf), alg.sssp(A, 0))


def test_sssp_negative_weights_and_negative_cycle():
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 4.0), (0, 2, 1.0), (2, 1, -2.0), (1, 3, 1.0), (3, 4, 0.0)])
    A = adjacency(G)
    got = as_dict(gr.run("sssp", A, 0))
    assert got == {k: float(v) for k, v in nx.single_source_bellman_ford_path_length(G, 0).items()}
    G.add_weighted_edges_from([(4, 2, -5.0)])  # 2 -> 1 -> 3 -> 4 -> 2: weight -6
    with pytest.raises(LoopLimitError) as info:
        gr.run("sssp", adjacency(G), 0)
    assert "did not stop within 6 iterations" in str(info.value)
    assert "negative cycle" in str(info.value)


@pytest.mark.parametrize("name, G", GRAPHS, ids=IDS)
def test_pagerank(name, G):
    A = adjacency(weighted(G, seed=3))
    x = gr.run("pagerank", A)
    want = nx.pagerank(G, weight="weight")
    n = G.number_of_nodes()
    assert x.nvals == n
    assert np.allclose(x.to_dense(), [want[i] for i in range(n)], atol=1e-6)
    assert np.allclose(x.to_dense(), alg.pagerank(A), rtol=1e-12, atol=1e-15)


def test_pagerank_parameters_and_max_iter():
    G = weighted(nx.gnm_random_graph(50, 150, seed=4, directed=True))
    A = adjacency(G)
    x = gr.run("pagerank", A, alpha=0.6, tol=1e-10)
    want = nx.pagerank(G, alpha=0.6, tol=1e-10, weight="weight")
    assert np.allclose(x.to_dense(), [want[i] for i in range(50)], atol=1e-10)
    assert np.allclose(x.to_dense(), alg.pagerank(A, alpha=0.6, tol=1e-10), atol=1e-15)
    with pytest.raises(LoopLimitError) as info:
        gr.run("pagerank", A, max_iter=3)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=3)
    assert "within 3 iterations" in str(info.value) and "err < ntol" in str(info.value)


@pytest.mark.parametrize("name, G", GRAPHS, ids=IDS)
def test_connected_components(name, G):
    A = adjacency(G, weight=None)
    labels = gr.run("connected_components", A).to_dense()
    components = nx.weakly_connected_components(G) if G.is_directed() else \
        nx.connected_components(G)
    want = np.empty(G.number_of_nodes(), dtype=np.int64)
    for c in components:
        want[list(c)] = min(c)
    assert np.array_equal(labels, want)
    assert np.array_equal(labels, alg.connected_components(A))


def test_empty_graphs():
    E = sps.csr_matrix((0, 0))
    assert gr.run("pagerank", E).size == 0 and nx.pagerank(nx.empty_graph(0)) == {}
    assert gr.run("connected_components", E).size == 0
    one = sps.csr_matrix((3, 3))
    assert as_dict(gr.run("bfs_levels", one, 1)) == {1: 0}
    assert as_dict(gr.run("sssp", one, 2)) == {2: 0.0}
    assert np.allclose(gr.run("pagerank", one).to_dense(), 1 / 3)
    assert gr.run("connected_components", one).to_dense().tolist() == [0, 1, 2]
    with pytest.raises(InputError, match="not a row"):
        gr.run("bfs_levels", one, 3)


# --- loops of one's own -----------------------------------------------------------------


def test_repeat_counts_and_scalar_counts():
    gb.define("""
    graph my_walks(A; k = 2) = loop W = A do W = mxm(W, A, plus_times) repeat k in W
    graph my_power(A, u) = loop x = u do x = mxv(A, x, plus_times) repeat 3 in x
    """)
    A = adjacency(nx.gnm_random_graph(12, 30, seed=5))
    D = A.toarray()
    assert np.allclose(gr.run("my_walks", A).to_dense(), np.linalg.matrix_power(D, 3))
    assert np.allclose(gr.run("my_walks", A, k=0).to_dense(), D)
    u = np.arange(12.0)
    assert np.allclose(gr.run("my_power", A, u).to_dense(), D @ D @ D @ u)
    with pytest.raises(InputError, match="repeat needs a whole number >= 0"):
        gr.run("my_walks", A, k=1.5)


def test_carried_state_several_variables_and_a_result_over_them():
    # the number of vertices at each BFS level, counted while the loop runs, as a vector
    # indexed by vertex: a result computed after the loop from two carried variables
    gb.define("""
    graph my_reach(A, s) =
        loop f = vector(A, 1, at=s), seen = f
        do   f = vxm(f, A, any_pair, mask=not seen.S),
             seen = ewise_add(seen, f, first)
        until empty(f)
        in reduce_scalar(ewise_mult(seen, seen, first), plus)
    """)
    G = disconnected()
    A = adjacency(G, weight=None)
    assert gr.run("my_reach", A, 0) == len(nx.node_connected_component(G, 0))
    assert gr.run("my_reach", A, 6) == 4


def test_nested_loops_and_graphs_calling_loop_graphs():
    gb.define("""
    # A to the third power, one loop inside another (in brackets: a binding is an expression)
    graph my_nested(A) =
        loop W = A
        do   W = (loop V = W do V = mxm(V, A, plus_times) repeat 1 in V)
        repeat 2
        in W
    graph my_levels_of_transpose(B, s) = bfs_levels(B.T, s)
    graph my_two(A) = ewise_add(connected_components(A), connected_components(A), plus)
    """)
    G = nx.gnm_random_graph(15, 30, seed=6, directed=True)
    A = adjacency(G, weight=None)
    D = A.toarray()
    assert np.allclose(gr.run("my_nested", A).to_dense(), np.linalg.matrix_power(D, 3))
    got = as_dict(gr.run("my_levels_of_transpose", A, 2))
    assert got == nx.single_source_shortest_path_length(G.reverse(), 2)
    g = gb.define("graph my_cc_once(A) = connected_components(A)").graphs["my_cc_once"]
    assert sum(s.operation == "loop" for s in g.steps) == 1
    assert np.array_equal(gr.run("my_two", A).to_dense(), 2 * alg.connected_components(A))


def test_condition_forms():
    gb.define("""
    graph my_halve(A, u; tol = 1) =
        loop x = u
        do   x = apply(times, x, right=0.5),
             big = reduce_scalar(x, max)
        until big < tol or empty(x)
        in x
    graph my_both(A, u) =
        loop x = u, y = u
        do   x = apply(times, x, right=0.5), y = x
        until unchanged(y) and big >= 0 limit 3
        in y
    """.replace("big >= 0", "empty(x)"))
    u = np.array([64.0, 8.0])
    A = sps.csr_matrix(np.eye(2))
    # 7 halvings, past the default limit (the largest dimension, 2, plus 1)
    with pytest.raises(LoopLimitError, match="within 3 iterations"):
        gr.run("my_halve", A, u)
    gb.define(str(gb.explain("my_halve").graph.text).replace("or empty(x)", "or empty(x) limit 10"))
    assert gr.run("my_halve", A, u).to_dense().tolist() == [0.5, 0.0625]
    assert gr.run("my_halve", A, u, tol=100).to_dense().tolist() == [32.0, 4.0]
    with pytest.raises(LoopLimitError, match="within 3 iterations"):
        gr.run("my_both", A, u)


# --- checked when defined ---------------------------------------------------------------


def error_of(text, kind=gb.GbdistError):
    with pytest.raises(kind) as info:
        gb.define(text)
    return info.value


def points_at(err, snippet):
    assert err.span is not None, str(err)
    line = err.span.text.splitlines()[err.span.line - 1]
    assert line[err.span.column - 1:].startswith(snippet), str(err)


@pytest.mark.parametrize("text, snippet, words", [
    ("graph g(A, u) = loop u = u do u = mxv(A, u, plus_times) repeat 2 in u",
     "u = u", "has the name of an operand"),
    ("graph g(A, u) = loop x = u, x = u do x = mxv(A, x, plus_times) repeat 2 in x",
     "x = u do", "named twice"),
    ("graph g(A, u) = loop x = u do y = mxv(A, x, plus_times) repeat 2 in x",
     "y = mxv", "assigns none of its variables"),
    ("graph g(A, u) = loop x = vxm(u, A, any_pair) do x = mxm(A, A, plus_pair) repeat 2 in x",
     "x = mxm", "is a vector before an iteration and a matrix after it"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times), y = x until unchanged(y) in x",
     "y)", "unchanged() takes a loop variable"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times) until x in x",
     "x in", "a loop stops on unchanged(x) of a carried x, empty(x), or a comparison"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times) until x < 1 in x",
     "x < 1", "needs a scalar"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times) until empty(x) limit 0 in x",
     "0 in", "limit needs a whole number >= 1"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times) repeat 2.5 in x",
     "2.5", "repeat needs a whole number >= 0"),
    ("graph g(A, u) = loop x = u do x = mxv(A, x, plus_times) until unchanged(x, x) in x",
     "unchanged(x, x)", "unchanged() takes one name"),
    ("graph g(A) = loop x = ids(A) do x = mxv(A, x, min_second) repeat 1 in x",
     "min_second", "unknown name 'min_second'"),
    ("graph g(A) = loop x = 2 do x = 3 repeat 1 in x", "2 do", "needs a matrix or vector"),
])
def test_loop_checks(text, snippet, words):
    err = error_of(text)
    assert words in str(err), str(err)
    points_at(err, snippet)


def test_loop_outside_graphs_and_constructor_checks():
    err = error_of("metric m(A, B) = loop x = A do x = A repeat 1 in x", DefinitionError)
    assert "graph definitions only" in str(err)
    err = error_of("graph g(A) = vector(A, 1, at=-1)", TypeCheckError)
    assert "at= needs a whole number >= 0" in str(err)
    err = error_of("graph g(A) = vector(A, 1, at=2, mask=A.S)")
    assert "has no argument 'mask'" in str(err)
    err = error_of("graph g(A; alpha = plus) = vector(A, alpha)", TypeCheckError)
    assert "default of parameter 'alpha' must be a number" in str(err)


def test_carried_dtype_and_shape_checked_when_it_runs():
    gb.define("""
    graph my_drift(A) = loop x = ids(A) do x = apply(times, x, right=0.5) repeat 2 in x
    graph my_shape(A, B, u) = loop x = u do x = mxv(B, x, plus_times) repeat 2 in x
    """)
    A = sps.csr_matrix(np.eye(3))
    with pytest.raises(TypeCheckError) as info:
        gr.run("my_drift", A)
    assert "loop variable 'x' changes in iteration 1" in str(info.value)
    assert "dtype=int64" in str(info.value)
    with pytest.raises(TypeCheckError, match="keeps its kind and shape"):
        gr.run("my_shape", A, sps.csr_matrix(np.ones((2, 3))), np.ones(3))


def test_no_user_text_is_evaluated_in_loops(monkeypatch):
    import builtins
    called = []
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: called.append(a))
    monkeypatch.setattr(builtins, "exec", lambda *a, **k: called.append(a))
    gb.define("graph my_l(A) = loop f = ids(A) do f = ewise_add(f, mxv(A, f, semiring(second, "
              "min), dtype=int64), min) until unchanged(f) in f")
    gr.run("my_l", adjacency(disconnected(), weight=None))
    err = error_of("graph g(A) = loop f = ids(A) do f = __import__(f) until unchanged(f) in f")
    assert "__import__" in str(err)
    assert not called


# --- explain and trace ------------------------------------------------------------------


def test_explain_shows_the_body_decisions_and_the_condition():
    text = str(gb.explain("sssp"))
    assert "carried: d = %1 (vector, fill 'absent'), f = %1 (vector, fill 'absent')" in text
    assert "each iteration:" in text
    assert "step 2.1: t = vxm(f, A, min_plus)" in text
    assert "semiring min_plus" in text and "structural semantics" in text
    assert "next: d = step 2.5, f = step 2.4" in text
    assert "stop: until empty(f), tested after each iteration; at most the largest dimension" \
        in text
    pr = str(gb.explain("pagerank"))
    assert "until err < ntol or empty(x)" in pr and "at most max_iter iterations" in pr
    gb.define("graph my_w(A) = loop W = A do W = mxm(W, A, plus_times) repeat 2 in W")
    data = str(gb.explain("my_w", fills=0))
    assert "stop: repeat 2: exactly that many iterations" in data
    assert "carried: W = A (matrix, fill 0)" in data  # data: the compiler's rule for fill 0
    assert "result fill: 0" in data and "f(x, 0) = 0 and f(0, y) = 0" in data


def test_trace_counts_iterations():
    # a path 0 - 1 - ... - 9: BFS from 0 reaches a new level in each of 9 iterations and
    # stops on the 10th, whose frontier is empty
    A = adjacency(nx.path_graph(10), weight=None)
    t = gr.trace("bfs_levels", A, 0)
    assert "10 iteration(s); the last one's steps:" in str(t)
    assert as_dict(t.result) == {i: i for i in range(10)}
