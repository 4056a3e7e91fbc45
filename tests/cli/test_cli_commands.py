"""``gbdist metrics``, ``gbdist run`` and ``--transpose``: outputs against the registry and
against NumPy/SciPy brute force."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist import names
from gbdist.cli.listing import param_default, summary
from gbdist.cli.main import main
from gbdist.front.library import ensure_names, find_graph, graph_names, is_builtin

MY_GBD = """\
# Squared differences.
op cmd_sqd(x, y) = (x - y)^2
# A weighted squared Euclidean distance.
metric cmd_wsq(A, B; w = 1) = w * mxm(A, B.T, semiring(cmd_sqd, plus))
alias cmd_weighted = cmd_wsq
# Shifted by a parameter that must be given.
metric cmd_shifted(A, B; t) = mxm(A, B.T, semiring(cmd_sqd, plus)) + t
# The entries heavier than t.
graph cmd_heavy(A, t) = select(A, gt, t)
# The sub-graph on the vertices r.
graph cmd_sub(A, r) = extract(A, rows=r, cols=r)
# Walks of length two.
graph cmd_walks2(A) = mxm(A, A, plus_times)
"""


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def my_gbd(tmp_path, isolated_definitions):
    f = tmp_path / "my.gbd"
    f.write_text(MY_GBD)
    return f


@pytest.fixture
def graph(tmp_path):
    """A random undirected graph without self loops (float weights), as a .mtx."""
    rng = np.random.default_rng(7)
    n = 14
    W = np.triu(rng.uniform(0.5, 2.0, (n, n)) * (rng.random((n, n)) < 0.3), 1)
    W = W + W.T
    f = tmp_path / "g.mtx"
    scipy.io.mmwrite(f, sps.coo_matrix(W))
    return W, f


# --- gbdist metrics ----------------------------------------------------------------------


def _rows(out: str) -> dict:
    return {line.split()[0]: line for line in out.splitlines() if line and line.split()}


def test_metrics_lists_every_name_of_the_registry(capsys):
    rc, out, _ = run(capsys, "metrics")
    assert rc == 0
    ensure_names()
    rows = _rows(out)
    for name in names.metric_names():
        m = names.find_metric(name)
        row = rows[name]
        for k, v in m.params.items():
            assert (f"{k}={param_default(v)}" if v is not None else k) in row, row
        for a in m.aliases:
            assert a in row, row
    every = names.metric_names(aliases=True)
    assert len(every) > len(names.metric_names())  # aliases are there to be listed
    words = set(out.replace(",", " ").split())
    assert set(every) <= words
    for g in graph_names():
        assert g in rows and "scalar" in rows.get("triangle_count", "")


def test_metrics_json_is_the_registry(capsys):
    rc, out, _ = run(capsys, "metrics", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    ensure_names()
    assert [m["name"] for m in data["metrics"]] == names.metric_names()
    listed = {a for m in data["metrics"] for a in m["aliases"]}
    assert listed == set(names.metric_names(aliases=True)) - set(names.metric_names())
    for m in data["metrics"]:
        reg = names.find_metric(m["name"])
        want = {k: v if v is None or isinstance(v, (int, float)) else param_default(v)
                for k, v in reg.params.items()}  # a column default as text: var(A, B)
        assert m["parameters"] == want and m["doc"] == reg.doc.strip()
        builtin = is_builtin(reg)  # other tests of the session may have loaded files
        assert m["source"] == ("built-in" if builtin else str(reg.source))
        assert m["user"] is not builtin
        for a in m["aliases"]:
            assert names.find_metric(a) is reg
    assert [g["name"] for g in data["graphs"]] == graph_names()
    tc = next(g for g in data["graphs"] if g["name"] == "triangle_count")
    assert tc["operands"] == [{"name": "A", "kind": "matrix"}] and tc["result"] == "scalar"
    assert tc["doc"] == find_graph("triangle_count").doc.strip()


def test_metrics_with_a_file_marks_its_definitions(capsys, my_gbd):
    rc, out, _ = run(capsys, "metrics", "--file", my_gbd)
    assert rc == 0
    user = out[out.index(f"User metrics from {my_gbd} (2)"):]
    rows = _rows(user)
    assert "w=1" in rows["cmd_wsq"] and "cmd_weighted" in rows["cmd_wsq"]
    assert "A weighted squared Euclidean distance" in rows["cmd_wsq"]
    assert rows["cmd_shifted"].split()[1] == "t"  # required: no default
    assert "must be given" in out
    assert "cmd_wsq" not in out[:out.index("User metrics")]  # not among the built-ins
    graphs = out[out.index(f"User graph definitions from {my_gbd} (3)"):]
    assert "r (index)" in _rows(graphs)["cmd_sub"] and "t (scalar)" in _rows(graphs)["cmd_heavy"]
    rc, out, _ = run(capsys, "metrics", "--file", my_gbd, "--format", "json")
    data = json.loads(out)
    mine = {m["name"]: m for m in data["metrics"] if m["source"] == str(my_gbd)}
    assert set(mine) == {"cmd_wsq", "cmd_shifted"}
    assert mine["cmd_wsq"]["parameters"] == {"w": 1} and mine["cmd_shifted"]["parameters"] == {"t": None}
    assert all(m["user"] for m in mine.values())
    assert {g["name"] for g in data["graphs"] if g["source"] == str(my_gbd)} == {
        "cmd_heavy", "cmd_sub", "cmd_walks2"}
    assert not any(g["user"] for g in data["graphs"] if g["name"] == "triangle_count")


def test_metrics_graphs_only_and_metrics_only(capsys):
    rc, out, _ = run(capsys, "metrics", "--graphs")
    assert rc == 0 and "triangle_count" in out and "cosine" not in out
    rc, out, _ = run(capsys, "metrics", "--no-graphs")
    assert rc == 0 and "cosine" in out and "triangle_count" not in out
    rc, out, _ = run(capsys, "metrics", "--graphs", "--format", "json")
    assert set(json.loads(out)) == {"graphs"}


def test_summary_is_one_clause_line():
    assert summary("Σ |x − y|") == "Σ |x − y|"
    assert summary("first line\nsecond line. More.") == "first line second line"
    long = "1 − ⟨a, b⟩ / (‖a‖ ‖b‖), in [0, 2]: Cauchy–Schwarz bounds the ratio by 1, which\nrounding"
    assert summary(long) == "1 − ⟨a, b⟩ / (‖a‖ ‖b‖), in [0, 2] …"
    assert summary("x" * 100).endswith(" …") and len(summary("x" * 100)) <= 74


# --- gbdist run --------------------------------------------------------------------------


def _pattern(W):
    return (W != 0).astype(np.int64)


def test_run_triangle_count_equals_brute_force(capsys, graph, tmp_path):
    W, f = graph
    P = _pattern(W)
    want = int(np.trace(P @ P @ P)) // 6
    assert want > 0
    rc, out, err = run(capsys, "run", "triangle_count", f)
    assert rc == 0 and out.strip() == str(want)
    assert "gbdist run triangle_count: A = " in err and "14 x 14" in err and "scalar" in err
    rc, out, err = run(capsys, "run", "triangle_count", f, "-q")
    assert out.strip() == str(want) and err == ""
    # the same graph as a 1-based edge list (a pattern) and as a dense CSV
    i, j = np.nonzero(W)
    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{a + 1} {b + 1}\n" for a, b in zip(i, j)))
    assert run(capsys, "run", "triangle_count", edges)[1].strip() == str(want)
    table = tmp_path / "g.csv"
    np.savetxt(table, W, delimiter=",")
    assert run(capsys, "run", "triangle_count", table)[1].strip() == str(want)


def test_run_two_hop_count_vector_output(capsys, graph, tmp_path):
    W, f = graph
    P = _pattern(W)
    R = ((P + P @ P) > 0).astype(np.int64)
    np.fill_diagonal(R, 0)
    counts = R.sum(axis=1)
    rc, out, err = run(capsys, "run", "two_hop_count", f, "-o", tmp_path / "c")
    assert rc == 0 and out == ""
    got = np.load(tmp_path / "c.npy")
    assert_array_equal(np.where(np.isnan(got), 0, got), counts)
    assert np.isnan(got[counts == 0]).all()
    assert "a vector of 14 entries" in err and "wrote" in err
    rc, _, err = run(capsys, "run", "two_hop_count", f, "-o", tmp_path / "z.npy", "--fill", "0")
    assert_array_equal(np.load(tmp_path / "z.npy"), counts)


def test_run_bfs_and_bellman_ford_steps_with_vector_operands(capsys, graph, tmp_path):
    W, f = graph
    n = W.shape[0]
    q = np.full(n, np.nan)
    q[[0, 3]] = 1.0
    visited = q.copy()
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "v.npy", visited)
    rc, _, _ = run(capsys, "run", "bfs_step", f, "--arg", f"q={tmp_path / 'q.npy'}",
                   "--arg", f"visited={tmp_path / 'v.npy'}", "-o", tmp_path / "next.npy")
    assert rc == 0
    reached = (W[[0, 3]] != 0).any(axis=0) & np.isnan(visited)
    got = np.load(tmp_path / "next.npy")
    assert_array_equal(~np.isnan(got), reached)
    d = np.full(n, np.nan)
    d[0] = 0.0
    np.save(tmp_path / "d.npy", d)
    rc, _, _ = run(capsys, "run", "bellman_ford_step", f, "-a", f"d={tmp_path / 'd.npy'}",
                   "-o", tmp_path / "d1.npy")
    assert rc == 0
    dd = np.where(np.isnan(d), np.inf, d)
    relaxed = np.minimum(dd, np.where(W != 0, dd[:, None] + W, np.inf).min(axis=0))
    want = np.where(np.isinf(relaxed), np.nan, relaxed)
    assert_allclose(np.load(tmp_path / "d1.npy"), want, rtol=1e-15, equal_nan=True)


def test_run_a_file_definition_matrix_scalar_and_index_operands(capsys, graph, tmp_path, my_gbd):
    W, f = graph
    rc, _, err = run(capsys, "run", "cmd_walks2", f, "--file", my_gbd, "-o", tmp_path / "w")
    assert rc == 0 and "a 14 x 14 matrix" in err
    M = sps.load_npz(tmp_path / "w.npz")
    assert_allclose(M.toarray(), W @ W, rtol=1e-12)
    rc, _, _ = run(capsys, "run", "cmd_heavy", f, "--file", my_gbd, "--arg", "t=1.5",
                   "-o", tmp_path / "h.npz")
    assert rc == 0
    assert_array_equal(sps.load_npz(tmp_path / "h.npz").toarray(), np.where(W > 1.5, W, 0))
    rows = [0, 2, 5, 9]
    for value in ("0,2,5,9", tmp_path / "r.npy"):
        np.save(tmp_path / "r.npy", np.array(rows))
        rc, _, _ = run(capsys, "run", "cmd_sub", f, "--file", my_gbd, "--arg", f"r={value}",
                       "-o", tmp_path / "s.npz")
        assert rc == 0
        assert_array_equal(sps.load_npz(tmp_path / "s.npz").toarray(), W[np.ix_(rows, rows)])


@pytest.mark.parametrize("argv, words", [
    (["triangle_cont"], ["unknown graph definition 'triangle_cont'", "did you mean 'triangle_count'"]),
    (["cosine"], ["'cosine' is a metric, not a graph definition", "--metric cosine"]),
    (["bfs_step", "-o", "x.npy"], ["needs 3 operands", "'q', 'visited' missing",
                                   "bfs_step(A matrix, q vector, visited vector)",
                                   "--arg q=... --arg visited=..."]),
    (["bfs_step", "--arg", "qq=x.npy"], ["has no operand 'qq'", "did you mean 'q'"]),
    (["bfs_step", "--arg", "A=x.mtx"], ["operand 'A' of 'bfs_step' is given twice", "FILE is A"]),
    (["bfs_step", "--arg", "q"], ["--arg needs NAME=FILE_OR_VALUE"]),
    (["bfs_step", "--arg", "q=3", "--arg", "visited=3", "-o", "x.npy"],
     ["operand 'q' of 'bfs_step' is a vector, not a number", "--arg q=3", ".npy"]),
    (["two_hop_count"], ["two_hop_count returns a vector: it needs an output file",
                         "-o two_hop_count.npy"]),
    (["two_hop_count", "-o", "x.npz"], ["returns a vector, written as .npy"]),
    (["triangle_count", "-o", "x.npy"], ["returns a scalar: it is printed on stdout"]),
])
def test_run_errors_are_typed_and_say_what_to_do(capsys, graph, tmp_path, argv, words):
    _, f = graph
    argv = [str(tmp_path / a) if a.endswith((".npy", ".npz")) and "=" not in a else a
            for a in argv]
    rc, out, err = run(capsys, "run", argv[0], f, *argv[1:])
    assert rc == 2 and out == ""
    for w in words:
        assert w in err, err
    assert not list(tmp_path.glob("x.*"))  # refused before anything was written


def test_run_scalar_operand_needs_a_number(capsys, graph, my_gbd):
    _, f = graph
    rc, _, err = run(capsys, "run", "cmd_heavy", f, "--file", my_gbd, "--arg", "t=big", "-o", "h.npz")
    assert rc == 2 and "operand 't' of 'cmd_heavy' is a scalar: give a number" in err


# --- --transpose -------------------------------------------------------------------------


@pytest.fixture
def tall(tmp_path):
    """A genes x cells .mtx: 300 rows (genes), 10 columns (cells)."""
    X = sps.random(300, 10, density=0.3, random_state=3, format="csr")
    f = tmp_path / "genes_by_cells.mtx"
    scipy.io.mmwrite(f, X)
    return X, f


def test_knn_transpose_searches_the_columns(capsys, tall, tmp_path):
    X, f = tall
    out = tmp_path / "cells.npz"
    rc, _, err = run(capsys, "knn", f, "--transpose", "-k", 3, "--backend", "cpu",
                     "-o", out)
    assert rc == 0
    d, i = gb.knn(sps.csr_matrix(X.T), k=3, backend="cpu")
    res = np.load(out)
    assert res["indices"].shape == (10, 3)
    assert_array_equal(res["indices"], i)
    assert_allclose(res["distances"], d, rtol=1e-12)
    assert "10 queries x 300 columns (transposed) against itself" in err
    assert "hint:" not in err


def test_a_tall_mtx_gets_a_hint_not_a_refusal(capsys, tall, tmp_path):
    X, f = tall
    rc, _, err = run(capsys, "pairwise", f, "--backend", "cpu", "--index", f,
                     "-o", tmp_path / "d.npy")
    assert rc == 0 and np.load(tmp_path / "d.npy").shape == (300, 300)
    assert "hint: INPUT" in err and "300 rows and 10 columns" in err and "--transpose" in err
    assert "300 queries x 10 columns against 300 index rows" in err
    rc, _, err = run(capsys, "pairwise", f, "--backend", "cpu", "-q", "-o", tmp_path / "d.npy")
    assert rc == 0 and err == ""
    npz = tmp_path / "tall.npz"  # not the 10x convention: no hint
    sps.save_npz(npz, X)
    rc, _, err = run(capsys, "pairwise", npz, "--backend", "cpu", "-o", tmp_path / "d.npy")
    assert rc == 0 and "hint:" not in err


def test_knn_reads_csv_and_triplets_like_npy(capsys, tmp_path):
    rng = np.random.default_rng(9)
    X = rng.random((12, 4))
    X[X < 0.4] = 0
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", fmt="%.17g", header="a,b,c,d",
               comments="")
    i, j = np.nonzero(X)
    (tmp_path / "x.coo").write_text("".join(f"{a} {b} {float(X[a, b])!r}\n" for a, b in zip(i, j))
                                    + f"{X.shape[0] - 1} {X.shape[1] - 1} 0\n")
    d, idx = gb.knn(X, k=2, metric="manhattan", backend="cpu")
    for f, extra in (("x.csv", []), ("x.coo", ["--zero-based"])):
        rc, _, err = run(capsys, "knn", tmp_path / f, *extra, "-k", 2, "--metric", "manhattan",
                         "--backend", "cpu", "-o", tmp_path / "o.npz")
        assert rc == 0, err
        assert_array_equal(np.load(tmp_path / "o.npz")["indices"], idx)
        assert_allclose(np.load(tmp_path / "o.npz")["distances"], d, rtol=1e-12)


def test_a_nan_in_a_file_is_refused_with_a_command_line_hint(capsys, tmp_path):
    (tmp_path / "n.csv").write_text("1,2\n3,nan\n")
    rc, _, err = run(capsys, "knn", tmp_path / "n.csv", "-k", 1, "-o", tmp_path / "o.npz")
    assert rc == 2 and "contains NaN" in err and "row 1, column 1" in err
    assert "ensure_all_finite" not in err and "in the file" in err


def test_help_lists_the_new_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for cmd in ("metrics", "run", "knn", "pairwise", "explain"):
        assert cmd in out
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert ".npy" in out and ".npz" in out and "--arg" in out and "--transpose" in out
