"""What a matrix knows of its own symmetry (``gr.Matrix.known_symmetry``), carried from an
operand by the operations that keep it, and the compiled masked product that then skips its
check (issue 28: jaccard's and cosine's pattern matrix P is new on every call).

Every claim a flag makes is checked against NumPy brute force on the result itself (its
dense pattern against its transpose, its values bit for bit), on symmetric, pattern-only
symmetric and directed inputs, through chains of operations: a flag may be absent, never
wrong. The answers of jaccard / cosine and of ``C<P> = P plus.pair P`` with the check skipped
are compared with networkx and python-graphblas.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.algorithms._common import pattern_is_symmetric

KINDS = ("symmetric", "pattern", "directed")


def make(kind: str, seed: int, n: int = 30) -> sps.csr_matrix:
    """A symmetric matrix (pattern and values), one whose pattern only is symmetric, or a
    directed one; self loops, an empty row, stored zeros, -0.0 beside 0.0 in the directed one."""
    rng = np.random.default_rng(seed)
    P = np.triu(rng.random((n, n)) < 0.2)
    P[3, :] = False
    V = np.triu(rng.integers(-3, 4, (n, n)).astype(np.float64))
    P, V = P | P.T, V + np.triu(V, 1).T
    P[3, :] = P[:, 3] = False
    if kind == "pattern":
        V[np.tril_indices(n, -1)] += 1.0
    if kind == "directed":
        P[np.tril_indices(n, -1)] &= rng.random(n * (n - 1) // 2) < 0.7
        i, j = np.argwhere(np.triu(P, 1))[0]
        P[j, i] = False  # at least one mirror missing
    r, c = np.nonzero(P)
    A = sps.csr_matrix((V[r, c], (r, c)), shape=(n, n))
    A.sort_indices()
    return A


def truth(M):
    """``"values"``, ``"pattern"`` or False: what M is, by brute force."""
    C = M.to_scipy().tocoo()
    n = M.nrows
    D = np.zeros((n, n), dtype=bool)
    D[C.row, C.col] = True
    if not (D == D.T).all():
        return False
    bits = np.zeros((n, n), dtype=np.uint64)
    bits[C.row, C.col] = C.data.astype(np.float64).view(np.uint64)
    return "values" if (bits == bits.T).all() else "pattern"


def sound(M) -> None:
    """M's flag, where it has one, is right."""
    k, t = M.known_symmetry(), truth(M)
    if k == "values":
        assert t == "values"
    elif k == "pattern":
        assert t in ("values", "pattern")
    elif k is False:
        assert t is False


def checked(A, kind):
    """A gb.Matrix whose symmetry has been checked (values too, through its cached
    transpose, for the symmetric one)."""
    M = gb.Matrix(A)
    if kind == "symmetric":
        M.T  # noqa: B018  (pattern_is_symmetric then compares the values too)
    pattern_is_symmetric(M)
    return M


@pytest.mark.parametrize("kind", KINDS)
def test_the_check_is_kept_and_right(kind):
    M = gb.Matrix(make(kind, 0))
    assert M.known_symmetry() is None  # nothing known before a check
    M = checked(make(kind, 0), kind)
    assert M.known_symmetry() == {"symmetric": "values", "pattern": "pattern",
                                  "directed": False}[kind]
    assert truth(M) == M.known_symmetry()


@pytest.mark.parametrize("kind", KINDS)
def test_apply_transpose_dup_cast_carry_it(kind):
    M = checked(make(kind, 1), kind)
    k = M.known_symmetry()
    elementwise = [gr.apply(gb.ops.neg, M), gr.apply(gb.ops.second, M, right=1.0),
                   gr.apply(gb.ops.abs, M, dtype=np.float32), M.T, M.dup(),
                   gb.Matrix(M, dtype=np.int64)]
    for R in elementwise:  # the pattern's flag always, the values' where M's values are
        assert R.known_symmetry() == k
        sound(R)
    # a positional apply keeps the pattern only: its values are the row index
    R = gr.apply("rowindex", M, thunk=0)
    assert R.known_symmetry() == ("pattern" if k else False)
    assert truth(R) == ("pattern" if k else False)  # and indeed the values are not


def test_a_value_changing_apply_keeps_the_pattern_flag_only():
    M = checked(make("pattern", 2), "pattern")
    assert M.known_symmetry() == "pattern"
    R = gr.apply(gb.ops.abs, M)  # may make unequal values equal: still only the pattern
    assert R.known_symmetry() == "pattern"
    C = gr.apply(gb.ops.second, M, right=1.0)  # every value 1: symmetric, not claimed
    assert truth(C) == "values" and C.known_symmetry() == "pattern"


@pytest.mark.parametrize("kind", KINDS)
def test_select_keeps_it_only_where_mirrors_go_together(kind):
    M = checked(make(kind, 3), kind)
    k = M.known_symmetry()
    for op, t in (("offdiag", 0), ("diag", 0)):
        R = gr.select(M, op, t)
        assert R.known_symmetry() == (k or None)  # a subset: "not symmetric" not carried
        sound(R)
    for op, t in (("tril", 0), ("triu", 0), ("offdiag", 1)):
        assert gr.select(M, op, t).known_symmetry() is None
    for op, t in ((">", 0), ("nonzero", 0), ("==", 1.0)):
        R = gr.select(M, op, t)
        assert R.known_symmetry() == ("values" if k == "values" else None)
        sound(R)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_chains_never_claim_what_is_not(kind, seed):
    rng = np.random.default_rng(seed)
    steps = [lambda X: gr.apply(gb.ops.neg, X), lambda X: X.T, lambda X: X.dup(),
             lambda X: gr.apply("colindex", X, thunk=0),
             lambda X: gr.select(X, "offdiag"), lambda X: gr.select(X, ">", 0),
             lambda X: gr.select(X, "tril"), lambda X: gr.apply(gb.ops.second, X, right=2.0),
             lambda X: gr.ewise_add(X, X.T, gb.ops.plus)]
    X = checked(make(kind, seed + 10), kind)
    for _ in range(8):
        X = steps[int(rng.integers(len(steps)))](X)
        sound(X)
        if rng.random() < 0.3:
            pattern_is_symmetric(X)
            sound(X)


def test_a_write_drops_the_flag():
    M = checked(make("symmetric", 4), "symmetric")
    P = gr.apply(gb.ops.second, M, right=1.0)
    assert P.known_symmetry() == "values"
    D = gb.Matrix(make("directed", 4))
    gr.apply(gb.ops.identity, D, out=P)  # P now holds a directed pattern
    assert P.known_symmetry() is None
    assert pattern_is_symmetric(P) is False and P.known_symmetry() is False


# --- the compiled masked product: the check skipped, the same answers ---------------------


@pytest.fixture
def counted(monkeypatch):
    """The compiled half product's symmetry checks, counted (HALF_MIN_TERMS 0: the small
    graphs here have few terms a mask entry)."""
    pytest.importorskip("numba")
    from gbdist.backends.compiled import graph_masked as gm
    from gbdist.backends.compiled import graph_symmetry as gs
    calls = []
    real = gs.symmetric

    def spy(*a, **k):
        calls.append(k.get("data", a[4] if len(a) > 4 else None) is not None)
        return real(*a, **k)
    monkeypatch.setattr(gs, "symmetric", spy)
    monkeypatch.setattr(gm, "HALF_MIN_TERMS", 0)
    return calls


def _graphblas(A, reads: bool):
    gb_ = pytest.importorskip("graphblas")
    G = gb_.io.from_scipy_sparse(A)
    sr = gb_.semiring.plus_times if reads else gb_.semiring.plus_pair
    C = gb_.Matrix(gb_.dtypes.FP64, *G.shape)
    C(mask=G.S) << sr(G @ G)
    return C.to_dense(fill_value=np.nan)


@pytest.mark.parametrize("kind", KINDS)
def test_masked_product_takes_the_known_flag(counted, kind):
    A = make(kind, 5)
    M = checked(A, kind)
    for sr, reads in ((gb.semirings.plus_pair, False), (gb.semirings.plus_times, True)):
        P = gr.apply(gb.ops.identity, M)  # a new matrix: its csr never checked
        del counted[:]
        C = gr.mxm(P, P, sr, mask=P.S, dtype=np.float64, backend="compiled")
        # known: no check, but where ⊗ reads values only "pattern" is known (it checks them)
        assert counted == ([True] if reads and kind == "pattern" else [])
        got = C.to_dense(fill=np.nan)
        assert np.array_equal(got, _graphblas(A, reads), equal_nan=True)


def test_unknown_symmetry_is_still_checked(counted):
    A = make("symmetric", 6)
    P = gb.Matrix(A)  # nothing known
    C = gr.mxm(P, P, gb.semirings.plus_pair, mask=P.S, dtype=np.float64, backend="compiled")
    assert counted == [False]
    assert np.array_equal(C.to_dense(fill=np.nan), _graphblas(A, False), equal_nan=True)


@pytest.mark.parametrize("fn", ["jaccard", "cosine"])
def test_similarity_checks_once_per_matrix(counted, fn):
    nx = pytest.importorskip("networkx")
    A = make("symmetric", 7, n=40)
    A.setdiag(0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    M = gb.Matrix(A)
    first = getattr(alg, fn)(M, backend="compiled")
    n_first = len(counted)
    again = getattr(alg, fn)(M, backend="compiled")
    # M's pattern checked once (the first call), P's never: its flag came from M
    assert counted == [False] and n_first == 1
    assert first.isequal(again)
    G = nx.from_scipy_sparse_array(A)
    got = first.to_scipy().tocoo()
    ref = {(u, v): p for u, v, p in nx.jaccard_coefficient(G, G.edges)} if fn == "jaccard" \
        else None
    for i, j, v in zip(got.row, got.col, got.data):
        if fn == "jaccard":
            p = ref.get((i, j), ref.get((j, i)))
        else:
            a, b = set(G[i]), set(G[j])
            p = len(a & b) / np.sqrt(len(a) * len(b))
        assert v == pytest.approx(p, abs=1e-15)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_a_square_of_a_symmetric_matrix_knows_it_is_symmetric(kind, dtype):
    """C = A ⊕.⊗ A (masked by A's pattern or its complement, or not) is marked symmetric
    only where the algebra says so: B is A, A symmetric (values, or pattern with a ⊗ that
    reads none), ⊗ commutes, an integer domain; the flag is checked against brute force."""
    A = make(kind, 8)
    M = checked(A, kind)
    first = gb.op("first_sq_test", lambda x, y: x)  # does not commute
    cases = ((gb.semirings.plus_pair, False), (gb.semirings.plus_times, True),
             (gb.semirings.min_plus, True), (gb.semiring(first, gb.ops.plus), True))
    for sr, reads in cases:
        for mask in (None, M.S, ~M.S):
            C = gr.mxm(M, M, sr, mask=mask, dtype=dtype)
            sound(C)
            want = (kind != "directed" and (kind == "symmetric" or not reads)
                    and sr.mul is not first and np.dtype(dtype).kind == "i")
            assert (C.known_symmetry() == "values") == want, (kind, sr, mask, dtype)
    C = gr.mxm(M, gr.apply(gb.ops.identity, M), gb.semirings.plus_pair, dtype=dtype)
    assert C.known_symmetry() is None  # B is not A: nothing claimed


def test_ktruss_checks_symmetry_once(counted):
    nx = pytest.importorskip("networkx")
    A = make("symmetric", 9, n=60)
    A.setdiag(0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    T = alg.ktruss(gb.Matrix(A), 3, backend="compiled")
    # the input's check (its pattern) only: each iteration's square is known symmetric
    assert counted.count(False) <= 1 and True not in counted, counted
    G = nx.k_truss(nx.from_scipy_sparse_array(A), 3)
    got = T.to_scipy().tocoo()
    assert {(int(i), int(j)) for i, j in zip(got.row, got.col)} == \
        {(u, v) for u, v in G.edges} | {(v, u) for u, v in G.edges}


def test_the_square_rule_reads_terms_not_sympy():
    """mul_symmetry reads the op's term: a ktruss with built-in semirings in a fresh process
    (kernel modules cached) imports no sympy (~30 MiB and a fraction of a second of a first
    call)."""
    import subprocess
    import sys
    code = ("import sys, scipy.sparse as sps, gbdist as gb\n"
            "from gbdist import algorithms as alg\n"
            "A = sps.random(200, 200, density=0.05, random_state=1, format='csr')\n"
            "A = ((A + A.T) > 0).astype(float); A.setdiag(0); A.eliminate_zeros()\n"
            "T = alg.ktruss(gb.Matrix(A), 3, backend='cpu')\n"
            "assert T.nvals > 0\n"
            "print('sympy' in sys.modules)\n")
    for _ in range(2):  # the first may generate and cache kernel modules (their printer is sympy)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "False"
