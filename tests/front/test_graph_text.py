"""Graph definitions in the text language: checking (typed errors with spans), running
(equal to the Python API, and to SciPy / networkx), explain before and after a run."""
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from gbdist.errors import ArityError, DSLSyntaxError, TypeCheckError, UnknownNameError

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def undirected(n=80, m=400, seed=0):
    G = nx.gnm_random_graph(n, m, seed=seed)
    A = nx.to_scipy_sparse_array(G, nodelist=range(n), format="csr").astype(np.float64)
    return G, sps.csr_matrix(A)


def weighted_digraph(n=60, m=300, seed=1):
    rng = np.random.default_rng(seed)
    G = nx.gnm_random_graph(n, m, seed=seed, directed=True)
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(1, 10))
    A = nx.to_scipy_sparse_array(G, nodelist=range(n), weight="weight", format="csr")
    return G, sps.csr_matrix(A)


def error_of(text, kind=gb.GbdistError):
    with pytest.raises(kind) as info:
        gb.define(text)
    return info.value


def points_at(err, snippet):
    """The error's span starts at the first occurrence of ``snippet`` in its text."""
    assert err.span is not None, str(err)
    line = err.span.text.splitlines()[err.span.line - 1]
    assert line[err.span.column - 1:].startswith(snippet), str(err)
    assert "^" in str(err)


# --- running: against networkx / SciPy -------------------------------------------------


def test_builtin_triangle_count_matches_networkx():
    G, A = undirected()
    got = gr.run("triangle_count", A)
    assert got == sum(nx.triangles(G).values()) // 3
    assert np.asarray(got).dtype == np.int64  # dtype=int64 in the definition


def test_text_triangle_count_equals_python_api_step_by_step():
    d = gb.define("""
graph tri(A) =
    let L = select(A, tril, -1) in
    mxm(L, L.T, plus_pair, mask=L.S)
""")
    _, A = undirected(seed=3)
    got = gr.run(d.graphs["tri"], A)
    L = gr.select(gb.Matrix(A), "tril", -1)
    want = gr.mxm(L, L.T, gb.semirings.plus_pair, mask=L.S)
    assert got.isequal(want)
    # and the per-edge counts are the common neighbours below, from SciPy
    Ls = sps.tril(A, -1).tocsr()
    ref = (Ls @ Ls.T).multiply(Ls != 0)
    assert np.array_equal(got.to_dense(), ref.toarray())


def test_bfs_step_complemented_mask_matches_networkx_levels():
    G, A = undirected(n=120, m=240, seed=5)
    n = A.shape[0]
    levels = np.full(n, -1)
    visited = gr.Vector.from_coo([0], [True], n)
    q = visited
    depth = 0
    levels[0] = 0
    while q.nvals:
        depth += 1
        q = gr.run("bfs_step", A, q=q, visited=visited)
        levels[q.indices] = depth
        visited = gr.ewise_add(visited, q, gb.ops.lor)
    want = nx.single_source_shortest_path_length(G, 0)
    ref = np.full(n, -1)
    for v, d in want.items():
        ref[v] = d
    assert np.array_equal(levels, ref)


def test_bellman_ford_min_plus_with_accum_min_matches_scipy():
    G, A = weighted_digraph()
    n = A.shape[0]
    d = gr.Vector.from_coo([0], [0.0], n)
    for _ in range(n):
        new = gr.run("bellman_ford_step", A, d)
        if new.isequal(d):
            break
        d = new
    ref = sps.csgraph.dijkstra(A, indices=0)
    got = d.to_dense(fill=np.inf)
    assert np.allclose(got, ref)
    want = nx.single_source_bellman_ford_path_length(G, 0)  # the reached set and distances
    assert sorted(d.indices.tolist()) == sorted(want)
    assert np.allclose([got[v] for v in sorted(want)], [want[v] for v in sorted(want)])
    # the operand was not changed by out=d (the definition is functional)
    first = gr.Vector.from_coo([0], [0.0], n)
    gr.run("bellman_ford_step", A, first)
    assert first.nvals == 1


def test_two_hop_count_matches_networkx():
    G, A = undirected(n=70, m=140, seed=9)
    got = gr.run("two_hop_count", A).to_dense()
    ref = [len(nx.single_source_shortest_path_length(G, v, cutoff=2)) - 1 for v in range(70)]
    assert np.array_equal(got, np.asarray(ref, dtype=float))


def test_user_monoid_defined_in_text():
    d = gb.define("""
op por_op(x, y) = x + y - x * y
monoid por = monoid(por_op, identity=0)
graph reach_prob(A, p) = mxv(A, p, semiring(times, por))
graph any_prob(A) = reduce_rows(A, por)
""")
    assert d.monoids["por"].identity == 0
    rng = np.random.default_rng(2)
    A = sps.random(30, 30, density=0.2, random_state=3, format="csr")
    A.data = rng.uniform(0.1, 0.9, A.nnz)
    p = rng.uniform(0, 1, 30)
    got = gr.run("reach_prob", A, p).to_dense()
    ref = np.zeros(30)  # 1 - prod(1 - a_ij p_j) over stored j, by brute force
    for i in range(30):
        row = A.getrow(i)
        if row.nnz:
            ref[i] = 1 - np.prod(1 - row.data * p[row.indices])
    assert np.allclose(got, ref)
    rows = gr.run("any_prob", A)
    for i in rows.indices:
        r = A.getrow(i).data
        assert np.isclose(rows.to_dense()[i], 1 - np.prod(1 - r))


def test_let_and_repeated_subexpressions_are_one_step():
    d = gb.define("graph g(A) = ewise_add(select(A, tril), select(A, tril), plus)\n"
                  "graph h(A) = let T = apply(abs, A) in ewise_mult(T, T.T, min)")
    assert [s.operation for s in d.graphs["g"].steps] == ["select", "ewise_add"]
    assert [s.operation for s in d.graphs["h"].steps] == ["apply", "ewise_mult"]
    A = sps.random(20, 20, density=0.3, random_state=1, format="csr") - 0.5 * sps.eye(20)
    got = gr.run("h", A).to_dense()
    B = abs(A.toarray())
    both = (A.toarray() != 0) & (A.toarray().T != 0)
    assert np.allclose(got, np.where(both, np.minimum(B, B.T), 0))


def test_apply_bound_scalar_value_select_extract_assign_and_dtype():
    d = gb.define("""
graph shift(A, s) = apply(plus, A, right=s, dtype=float32)
graph big(A) = select(A, gt, 0.5)
graph normalized(A) = apply(div, A, right=reduce_scalar(A, max))
graph sub(A, r) = extract(A, rows=r, cols=r)
graph put(C, v, r) = assign(C, v, rows=r)
""")
    A = sps.random(15, 15, density=0.4, random_state=4, format="csr")
    assert d.graphs["shift"].kinds == {"A": "any", "s": "scalar"}
    s = gr.run("shift", A, 10)
    assert s.dtype == np.float32 and np.allclose(s.to_scipy().data, A.data + 10)
    b = gr.run("big", A).to_scipy()
    assert np.array_equal(np.sort(b.data), np.sort(A.data[A.data > 0.5]))
    nrm = gr.run("normalized", A).to_scipy()
    assert np.allclose(nrm.toarray(), A.toarray() / A.data.max())
    r = np.array([3, 1, 7])
    assert np.array_equal(gr.run("sub", A, r=r).to_dense(), A.toarray()[np.ix_(r, r)])
    C = gr.Vector.from_coo([0], [5.0], 10)
    out = gr.run("put", C, 2.0, np.array([4, 6]))
    assert np.array_equal(out.to_dense(), [5, 0, 0, 0, 2, 0, 2, 0, 0, 0])
    assert C.nvals == 1  # C itself is not changed


def test_graph_calls_a_graph_defined_above_and_backend_passes_through():
    d = gb.define("graph deg(A) = reduce_rows(apply(pair, A, right=1), plus)\n"
                  "graph deg2(A) = deg(mxm(A, A, any_pair))")
    _, A = undirected(n=30, m=60, seed=2)
    got = gr.run(d.graphs["deg2"], A=A, backend="reference").to_dense()
    ref = ((A @ A) != 0).sum(axis=1).A1
    assert np.array_equal(got, ref)


def test_run_operand_errors():
    _, A = undirected(n=10, m=20)
    with pytest.raises(UnknownNameError, match="unknown graph definition"):
        gr.run("triangle_cout", A)
    with pytest.raises(ArityError, match="needs the operand 'q'"):
        gr.run("bfs_step", A)
    with pytest.raises(UnknownNameError, match="no operand 'B'"):
        gr.run("triangle_count", A, B=A)


# --- checking: typed errors with spans ------------------------------------------------


def test_wrong_kind_semiring_where_monoid_and_back():
    e = error_of("graph g(A) = mxm(A, A, plus)", TypeCheckError)
    assert "needs a semiring" in e.message and "semiring(times, plus)" in e.hint
    points_at(e, "plus)")
    e = error_of("graph g(A) = reduce_rows(A, plus_times)", TypeCheckError)
    assert "monoid, not a semiring" in e.message
    points_at(e, "plus_times")
    e = error_of("graph g(A, B) = mxm(A, B, A)", TypeCheckError)
    assert "operand 'A'" in e.got


def test_unknown_names_suggest():
    e = error_of("graph g(A) = mxm(A, A, plus_pear)", UnknownNameError)
    assert "plus_pair" in e.hint
    points_at(e, "plus_pear")
    e = error_of("graph g(A) = mxn(A, A, plus_pair)", UnknownNameError)
    assert "not a graph operation" in e.message and "mxm" in e.expected and "mxv" in e.hint
    e = error_of("graph g(A) = select(A, trill)", UnknownNameError)
    assert "tril" in e.hint
    points_at(e, "trill")
    e = error_of("graph g(A) = mxm(A, A, plus_pair, mask=B.S)", UnknownNameError)
    points_at(e, "B")


def test_masks_only_in_mask_keyword():
    e = error_of("graph g(A) = mxm(A.S, A, plus_pair)", TypeCheckError)
    assert "only meaningful as mask=" in e.message
    points_at(e, "A.S")
    e = error_of("graph g(A, v) = vxm(not v.S, A, any_pair)", TypeCheckError)
    points_at(e, "not v.S")
    e = error_of("graph g(A) = mxm(A, A, plus_pair, S=A)", UnknownNameError)
    assert "mask=" in e.hint


def test_wrong_arity_and_keywords():
    e = error_of("graph g(A) = mxm(A, plus_pair)", ArityError)
    assert "3" in e.message and e.expected.startswith("mxm(")
    points_at(e, "mxm(A")
    e = error_of("graph g(A) = reduce_scalar(A, plus, mask=A.S)", UnknownNameError)
    assert e.expected == "dtype"
    e = error_of("graph g(A, d) = vxm(d, A, min_plus, accum=min)", TypeCheckError)
    assert "needs out=" in e.message
    e = error_of("graph g(A) = apply(abs, A, right=1)", TypeCheckError)
    assert "binary op" in e.message
    e = error_of("graph g(A) = mxm(A, A, plus_pair, replace=yes, mask=A.S)", UnknownNameError)
    assert e.expected == "true, false"


def test_operand_kinds_are_inferred_and_checked():
    d = gb.define("graph g(A, u) = mxv(A, u, plus_times)")
    assert d.graphs["g"].kinds == {"A": "matrix", "u": "vector"}
    e = error_of("graph g(A, u) = ewise_add(mxv(A, u, plus_times), A, plus)", TypeCheckError)
    assert "two matrices or two vectors" in e.message
    e = error_of("graph g(A) = mxm(reduce_scalar(A, plus), A, plus_pair)", TypeCheckError)
    assert "needs a matrix" in e.message and "scalar" in e.got
    e = error_of("graph g(A, u) = mxv(A, u, plus_times, mask=A.S)", TypeCheckError)
    assert "mask=" in e.message
    e = error_of("graph g(A) = mxm(A, A, plus_pair) + 1", TypeCheckError)
    assert "arithmetic" in e.message


def test_redefinition_and_syntax():
    e = error_of("graph mxm_x(A) = A\ngraph mxm_x(A) = A")
    assert "already defined" in e.message
    e = error_of("graph g(A) = mxm(A, A, plus_pair", DSLSyntaxError)
    assert "ends in the middle" in e.message


def test_no_user_text_is_evaluated(monkeypatch):
    import builtins
    called = []
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: called.append(a))
    monkeypatch.setattr(builtins, "exec", lambda *a, **k: called.append(a))
    error_of("graph g(A) = __import__(A, A, plus_pair)", UnknownNameError)
    gb.define("graph ok(A) = mxm(A, A, plus_pair)")
    assert not called


# --- explain -------------------------------------------------------------------------


def test_explain_before_running_uses_the_compiler_rule():
    ex = gb.explain("triangle_count")
    text = str(ex)
    assert "step 1: L = select(A, tril, -1)" in text
    assert "mask: structural (the stored entries of L)" in text
    assert "semiring plus_pair" in text and "monoid plus" in text
    assert "fill='absent'" in text
    # data operands: the rule decides per step; plus_pair has no exact sparse result on
    # fill-0 data (pair(0, 0) = 1), as the operation itself says when run
    ex0 = gb.explain("bfs_step", fills=0)
    assert "REFUSED" in str(ex0)
    with pytest.raises(gb.GbdistError) as info:
        gr.vxm(gb.Vector(np.ones(3), fill=0), gb.Matrix(np.eye(3), fill=0),
               gb.semirings.any_pair)
    assert info.value.message.split(":")[0] in str(ex0)
    d = gb.define("graph pt(A, B) = mxm(A, B, plus_times)")
    assert "result fill 0" in str(gb.explain(d.graphs["pt"], fills=0)).replace(": ", " ")


def test_trace_shows_each_steps_actual_decision():
    _, A = undirected(n=40, m=120)
    tr = gr.trace("triangle_count", A)
    assert tr.result == gr.run("triangle_count", A)
    text = str(tr)
    assert text.count("ran: structural semantics") == 2  # select and mxm; a scalar has none
    assert "nvals=" in text
    Ad = gb.Matrix(A, fill=0)
    d = gb.define("graph sq(A) = mxm(A, A, plus_times)")
    tr = gr.trace(d.graphs["sq"], Ad)
    assert tr.steps[0].ran[0] == "structural semantics, result fill 0"
    assert np.allclose(tr.result.to_dense(), (A @ A).toarray())


def test_cli_explain_graph(tmp_path):
    f = tmp_path / "g.gbd"
    f.write_text("graph deg(A) = reduce_rows(A, plus)\n")
    out = subprocess.run([sys.executable, "-m", "gbdist", "explain", "deg", "--file", str(f),
                          "--fills", "0"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "step 1: %1 = reduce_rows(A, plus)" in out.stdout
    assert "fill semantics" in out.stdout  # fill-0 data: the zeros take part
    out = subprocess.run([sys.executable, "-m", "gbdist", "explain", "triangle_count", "--format",
                          "svg"], capture_output=True, text=True)
    # a graph definition is drawn too (tests/front/test_graph_pictures.py): svg needs a file
    assert out.returncode != 0 and "needs a file" in out.stderr


def test_check_reports_graph_steps():
    reports = gb.front.check("graph g(A) = mxm(A, A.T, plus_pair, mask=A.S)\ngraph h(A) = mxm(A)")
    assert reports[0].ok and "mxm(A, A.T, plus_pair, mask=A.S)" in reports[0].lines[0]
    assert not reports[1].ok


def test_library_steps_equal_the_python_api_on_the_same_operands():
    G, A = weighted_digraph(n=50, m=200, seed=7)
    M = gb.Matrix(A)
    rng = np.random.default_rng(0)
    q = gr.Vector.from_coo(rng.choice(50, 5, replace=False), True, 50)
    visited = gr.Vector.from_coo(rng.choice(50, 20, replace=False), True, 50)
    want = gr.vxm(q, M, gb.semirings.any_pair, mask=~visited.S, replace=True)
    assert gr.run("bfs_step", M, q, visited).isequal(want)
    d = gr.Vector.from_coo([0, 3, 9], [0.0, 2.0, 5.0], 50)
    out = d.dup()
    want = gr.vxm(d, M, gb.semirings.min_plus, accum=gb.ops.min, out=out)
    assert gr.run("bellman_ford_step", M, d).isequal(want)
    two = gr.run("two_hop_count", M)
    R = gr.ewise_add(gr.mxm(M, M, gb.semirings.any_pair), M, gb.ops.pair)  # int64
    # the text's number 1 is a float64 (docs/language.md), so apply(..., right=1) is float64
    ref = gr.reduce_rows(gr.apply(gb.ops.pair, gr.select(R, "offdiag"), right=1.0), gb.ops.plus)
    assert two.isequal(ref)


def test_graphs_calling_graphs_are_bounded():
    lines = ["graph g0(A) = apply(abs, A)"]
    for k in range(1, 16):
        lines.append(f"graph g{k}(A) = ewise_add(g{k - 1}(apply(abs, A)), "
                     f"g{k - 1}(apply(neg, A)), plus)")
    e = error_of("\n".join(lines), gb.DefinitionError)
    assert "grows too large" in e.message and e.span is not None


def test_operand_named_backend_is_refused_and_html_explain():
    e = error_of("graph g(A, backend) = mxm(A, A, plus_pair)", gb.GbdistError)
    assert "'backend'" in e.message
    points_at(e, "backend")
    html = gb.explain("bfs_step")._repr_html_()
    assert html.startswith("<pre>") and "not visited.S" in html and "A (matrix)" in html


def test_inf_and_negative_numbers_as_bound_scalars():
    gb.define("graph capped(A) = apply(min, A, right=inf)\n"
              "graph low(A) = select(A, lt, -0.25)")
    A = sps.random(12, 12, density=0.4, random_state=6, format="csr")
    A.data -= 0.5
    assert np.array_equal(gr.run("capped", A).to_scipy().toarray(), A.toarray())
    low = gr.run("low", A).to_scipy()
    assert np.array_equal(np.sort(low.data), np.sort(A.data[A.data < -0.25]))


def test_graph_named_like_an_operation_is_refused_and_library_names_can_be_taken():
    e = error_of("graph select(A) = A", gb.GbdistError)
    assert "graph operation" in e.message
    gb.define("graph triangle_count(A) = reduce_scalar(A, plus)")  # the user's wins
    A = sps.csr_matrix(np.array([[0, 2.0], [3.0, 0]]))
    assert gr.run("triangle_count", A) == 5.0


def test_keyword_twice_and_an_array_operand_used_as_indices():
    e = error_of("graph e(A) = mxm(A, A, plus_pair, mask=A.S, mask=A.V)", ArityError)
    assert "mask= twice" in e.message
    points_at(e, "mask=A.V")
    # a vector indexed by its own values (f[f]) is fine; a matrix is not an index list
    assert gb.define("graph e(A) = extract(A, rows=A)").graphs["e"].kinds == {"A": "vector"}
    e = error_of("graph e(A, B) = extract(B, rows=mxm(A, A, plus_times))", TypeCheckError)
    assert "index array" in e.message and "a matrix" in e.got
    points_at(e, "mxm(A, A, plus_times)")
    e = error_of("graph e(A) = extract(A, cols=A)", TypeCheckError)
    assert "needs a matrix" in e.message and "vector" in e.got
    gb.define("graph f(A, s) = apply(plus, s, right=A)")  # A a scalar, s an array: fine
    e = error_of("graph e(A, s) = apply(plus, A, right=s)\ngraph g(A) = apply(plus, A, right=A)",
                 TypeCheckError)
    assert e.span.line == 2


def test_explain_unknown_name_suggests_a_graph():
    with pytest.raises(UnknownNameError) as info:
        gb.explain("triangle_cont")
    assert "triangle_count" in info.value.hint
    with pytest.raises(UnknownNameError) as info:
        gb.explain("manhatan")
    assert "manhattan" in info.value.hint


def test_compensated_sums_in_text_equal_the_python_api():
    """compensated=true on mxv/vxm in the text is the Python API's compensated=True (rows
    whose terms cancel: the plain sum differs), and is refused on mxm."""
    import math
    rng = np.random.default_rng(8)
    rows, cols, vals = [], [], []
    for i in range(30):
        c = rng.choice(500, 60, replace=False)
        big = 10.0 ** rng.integers(0, 12, 60)
        rows += [i] * 60
        cols += list(c)
        vals += list(np.where(np.arange(60) % 2 == 0, big, -big) + rng.random(60))
    A = sps.csr_matrix((vals, (rows, cols)), shape=(30, 500))
    A.sort_indices()
    x = np.ones(500)
    gb.define("graph ksum(A, x) = mxv(A, x, plus_times, compensated=true)\n"
              "graph psum(A, x) = mxv(A, x, plus_times)")
    got = gr.run("ksum", A, x).to_dense()
    want = gr.mxv(gb.Matrix(A), gb.Vector(x), gb.semirings.plus_times, compensated=True).to_dense()
    np.testing.assert_array_equal(got, want)
    exact = [math.fsum(A.data[A.indptr[i]:A.indptr[i + 1]]) for i in range(30)]
    assert np.abs(got - exact).max() < np.abs(gr.run("psum", A, x).to_dense() - exact).max()
    assert "compensated=true" in str(gb.explain("ksum"))
    err = error_of("graph bad(A) = mxm(A, A, plus_times, compensated=true)", UnknownNameError)
    points_at(err, "true)")  # the span of an unknown keyword is its value, as for every keyword
