"""The ``knn`` and ``pairwise`` subcommands: files in, NumPy files out, same numbers as gb.knn."""
from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist.cli import knn as cli_knn
from gbdist import io
from datagen import random_dense

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(21)
    X = sps.csr_matrix(random_dense(rng, 30, 10, "real"))
    Y = sps.csr_matrix(random_dense(rng, 45, 10, "real"))
    mtx = tmp_path / "queries.mtx.gz"
    with gzip.open(mtx, "wb") as f:
        scipy.io.mmwrite(f, X)
    npz = tmp_path / "index.npz"
    sps.save_npz(npz, Y)
    return X, Y, mtx, npz


def run_cli(argv, capsys):
    rc = cli_knn.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_knn_with_index_matches_gb_knn(data, tmp_path, capsys):
    X, Y, mtx, npz = data
    out = tmp_path / "nn.npz"
    rc, _, err = run_cli(["knn", mtx, "--index", npz, "-k", 4, "--metric", "cosine",
                          "--backend", "cpu", "-o", out], capsys)
    assert rc == 0
    res = np.load(out)
    d, i = gb.knn(X, Y, k=4, metric="cosine", backend="cpu")
    assert res["indices"].dtype == np.int64
    assert_array_equal(res["indices"], i)
    assert_allclose(res["distances"], d, rtol=0, atol=0, equal_nan=True)
    name = gb.runtime.get_backend("cpu").name  # compiled when Numba imports, else cpu (NumPy)
    assert "pairs/s" in err and f"backend {name}" in err and "strategy intersection" in err
    assert "30 queries x 10 columns against 45 index rows" in err


def test_knn_self_join_minkowski_and_progress(data, tmp_path, capsys):
    X, _, mtx, _ = data
    out = tmp_path / "self.npz"
    rc, _, err = run_cli(["knn", mtx, "-k", 3, "--metric", "minkowski", "-p", 3, "--backend",
                          "cpu", "--working-memory", "4K", "--progress", "-o", out], capsys)
    assert rc == 0
    res = np.load(out)
    d, i = gb.knn(X, k=3, metric="minkowski", p=3, backend="cpu")
    assert_array_equal(res["indices"], i)
    assert_allclose(res["distances"], d, rtol=1e-12)
    assert not (res["indices"] == np.arange(30)[:, None]).any()
    # tqdm's bar reached the end, with elapsed time and the remaining time (ETA)
    assert "100%|" in err and "900/900" in err
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", err)
    assert "union-correction" in err


def test_knn_include_self(data, tmp_path, capsys):
    X, _, mtx, _ = data
    out = tmp_path / "incl.npz"
    rc, _, _ = run_cli(["knn", mtx, "-k", 1, "--metric", "manhattan", "--include-self",
                        "--backend", "cpu", "-o", out], capsys)
    assert rc == 0
    assert_allclose(np.load(out)["distances"][:, 0], 0.0, atol=1e-12)  # union-correction rounding


def test_pairwise_writes_the_dense_matrix(data, tmp_path, capsys):
    X, Y, mtx, npz = data
    out = tmp_path / "D.npy"
    rc, _, err = run_cli(["pairwise", mtx, "--index", npz, "--metric", "manhattan",
                          "--backend", "cpu", "-o", out], capsys)
    assert rc == 0 and "30 x 45" in err
    assert_allclose(np.load(out), gb.pairwise_distances(X, Y, metric="manhattan", backend="cpu"))


def test_pairwise_refuses_a_too_large_output(data, tmp_path, capsys):
    _, _, mtx, npz = data
    rc, _, err = run_cli(["pairwise", mtx, "--index", npz, "--max-bytes", 1000,
                          "-o", tmp_path / "D.npy"], capsys)
    assert rc == 2
    assert "too large" in err and "30 x 45 x 8 = 10800 bytes" in err
    assert not (tmp_path / "D.npy").exists()


def test_clear_errors(data, tmp_path, capsys):
    _, _, mtx, _ = data
    rc, _, err = run_cli(["knn", tmp_path / "missing.mtx", "-o", tmp_path / "o.npz"], capsys)
    assert rc == 2 and "no such file" in err
    bad = tmp_path / "bad.mtx"
    bad.write_text("not a matrix market file\n")
    rc, _, err = run_cli(["knn", bad, "-o", tmp_path / "o.npz"], capsys)
    assert rc == 2 and "cannot read" in err
    rc, _, err = run_cli(["knn", mtx, "--metric", "cosine", "-p", 3, "-o", tmp_path / "o.npz"],
                         capsys)
    assert rc == 2 and "has no parameter 'p'" in err and "takes no parameters" in err
    rc, _, err = run_cli(["knn", mtx, "-k", 40, "-o", tmp_path / "o.npz"], capsys)
    assert rc == 2 and "n_neighbors" in err


def test_io_reads_every_format(tmp_path):
    rng = np.random.default_rng(1)
    A = random_dense(rng, 6, 4, "real")
    np.save(tmp_path / "a.npy", A)
    np.savez(tmp_path / "dense.npz", A)
    scipy.io.mmwrite(tmp_path / "a.mtx", sps.coo_matrix(A))
    sps.save_npz(tmp_path / "s.npz", sps.csc_matrix(A))
    for name in ("a.npy", "dense.npz", "a.mtx", "s.npz"):
        M = io.read_matrix(tmp_path / name)
        assert sps.isspmatrix_csr(M)
        assert_allclose(M.toarray(), A)
    np.savez(tmp_path / "two.npz", a=A, b=A)
    with pytest.raises(gb.InputError, match="one array"):
        io.read_matrix(tmp_path / "two.npz")
    (tmp_path / "x.xlsx").write_text("1,2\n")
    with pytest.raises(gb.InputError, match="unknown file type"):
        io.read_matrix(tmp_path / "x.xlsx")
    np.save(tmp_path / "v.npy", np.arange(3.0))
    with pytest.raises(gb.InputError, match="2-D"):
        io.read_matrix(tmp_path / "v.npy")
    p = io.write_knn(tmp_path / "res", np.zeros((2, 1), dtype=np.int32), np.ones((2, 1)))
    assert p.name == "res.npz" and np.load(p)["indices"].dtype == np.int64


def test_sizes_count_mib_or_carry_a_unit():
    """--working-memory counts MiB, as the library's working_memory= does (one unit);
    --max-bytes counts bytes; both take the same units."""
    wm, mb = cli_knn.size_arg(2**20, "--working-memory"), cli_knn.size_arg(1, "--max-bytes")
    assert wm("256") == 256 * 2**20 == wm("256MiB") == wm("256M") == wm("0.25GiB")
    assert wm("2GB") == 2 * 10**9 and wm("300kB") == 300_000 and wm("1.5GiB") == 3 * 2**29
    assert mb("1048576") == 2**20 and mb("2GiB") == 2 * 2**30 and mb("4096B") == 4096
    for bad in ("", "12X", "-5", "0", "16 MiBs", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="Expected|expected"):
            wm(bad)


def test_commands_have_the_cli_shape():
    for entry in cli_knn.COMMANDS:
        name, help_, add_args, run = entry
        assert isinstance(name, str) and isinstance(help_, str)
        assert callable(add_args) and callable(run)
    assert [c[0] for c in cli_knn.COMMANDS] == ["knn", "pairwise"]


def test_python_dash_m_standalone(data, tmp_path):
    X, Y, mtx, npz = data
    out = tmp_path / "m.npz"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "gbdist.cli.knn", "knn", str(mtx), "--index",
                           str(npz), "-k", "2", "--metric", "euclidean", "--backend", "cpu",
                           "-o", str(out)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pairs/s" in proc.stderr
    _, i = gb.knn(X, Y, k=2, metric="euclidean", backend="cpu")
    assert_array_equal(np.load(out)["indices"], i)


# ---------------------------------------------------------------------------
# Bad arguments and files: a message and a non-zero exit, never exit 0, a
# traceback, a crash or a hang. Run as real processes where a crash is possible.
# ---------------------------------------------------------------------------
def run_proc(*argv, timeout=120):
    """The CLI in a process of its own (a crash or a hang cannot take pytest down: the
    timeout only stops a hung process, it measures nothing)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "gbdist", *map(str, argv)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def assert_refused(rc, err, *words):
    assert rc == 2, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err


def test_output_naming_a_directory_is_refused_before_any_work(data, tmp_path, capsys):
    _, _, mtx, _ = data
    for cmd in ("knn", "pairwise"):
        rc, _, err = run_cli([cmd, mtx, "-o", tmp_path], capsys)
        assert_refused(rc, err, "is a directory")
        rc, _, err = run_cli([cmd, mtx, "-o", tmp_path / "no" / "such" / "dir" / "out"], capsys)
        assert_refused(rc, err, "does not exist")
    (tmp_path / "taken.npy").mkdir()
    rc, _, err = run_cli(["pairwise", mtx, "-o", tmp_path / "taken"], capsys)
    assert_refused(rc, err, "is a directory")


def test_pairwise_reports_the_path_it_wrote(data, tmp_path, capsys):
    X, _, mtx, _ = data
    rc, _, err = run_cli(["pairwise", mtx, "--metric", "manhattan", "--backend", "cpu",
                          "-o", tmp_path / "out"], capsys)
    assert rc == 0
    written = tmp_path / "out.npy"
    assert f"wrote {written}" in err and not (tmp_path / "out").exists()
    import scipy.spatial.distance as ssd
    assert_allclose(np.load(written), ssd.cdist(X.toarray(), X.toarray(), "cityblock"), rtol=1e-12,
                    atol=1e-12)


@pytest.mark.parametrize("value,word", [("0", "at least one byte"), ("-1", "not a memory size"),
                                        ("12X", "not a memory size"), ("1e12", "too large"),
                                        ("99999999999T", "too large"), ("", "not a memory size")])
def test_bad_working_memory_is_refused(data, tmp_path, capsys, value, word):
    _, _, mtx, _ = data
    with pytest.raises(SystemExit) as info:
        cli_knn.main(["knn", str(mtx), "--working-memory", value, "-o", str(tmp_path / "o.npz")])
    assert info.value.code == 2
    assert word in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("argv,word", [(["-k", "0"], "at least 1"), (["-k", "abc"], "whole number"),
                                       (["-k", "2.5"], "whole number"), (["-p", "nan"], "needs a number"),
                                       (["-p", "x"], "needs a number"),
                                       (["--backend", "gpu"], "invalid choice")])
def test_bad_options_are_refused(data, tmp_path, capsys, argv, word):
    _, _, mtx, _ = data
    with pytest.raises(SystemExit) as info:
        cli_knn.main(["knn", str(mtx), *argv, "-o", str(tmp_path / "o.npz")])
    assert info.value.code == 2
    assert word in capsys.readouterr().err


@pytest.mark.parametrize("shape", [(3, 0), (0, 4)])
def test_inputs_without_rows_or_columns_are_refused(tmp_path, capsys, shape):
    f = tmp_path / "empty.npy"
    np.save(f, np.zeros(shape))
    for cmd in ("knn", "pairwise"):
        rc, _, err = run_cli([cmd, f, "-o", tmp_path / "o"], capsys)
        assert_refused(rc, err, "holds no data")


def test_index_with_other_columns_is_refused(data, tmp_path, capsys):
    _, _, mtx, _ = data
    other = tmp_path / "other.npy"
    np.save(other, np.ones((4, 3)))
    rc, _, err = run_cli(["knn", mtx, "--index", other, "-o", tmp_path / "o.npz"], capsys)
    assert_refused(rc, err, "different numbers of columns")


def _header_file(path, header, body=""):
    path.write_text(header + body)
    return path


@contextlib.contextmanager
def _allocation_bound(limit=64 << 20):
    """The header is refused before anything sized by it is allocated: Python's peak
    allocation inside the block stays under ``limit`` (the file promises terabytes)."""
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit, f"allocated {peak / 2**20:.0f} MiB before refusing"


@pytest.mark.parametrize("header,word", [
    ("%%MatrixMarket matrix coordinate real general\n100000000000 3 2\n", "more memory"),
    ("%%MatrixMarket matrix coordinate real general\n30000 30000 100000000\n", "more data than the file"),
    ("%%MatrixMarket matrix coordinate real general\n3 3 10\n", "more entries than cells"),
    ("%%MatrixMarket matrix array real general\n100000 100000\n", "more data than the file"),
    ("%%MatrixMarket matrix coordinate real general\n3 x 2\n", "malformed"),
    ("%%MatrixMarket matrix coordinate real general\n% only comments\n%", "size line is missing"),
    ("%%MatrixMarket tensor coordinate real general\n3 3 1\n", "not a MatrixMarket matrix header"),
    ("%%MatrixMarket matrix coordinate real general\n" + "9" * 40 + " 3 1\n", "malformed"),
])
def test_matrix_market_header_is_checked_before_allocating(tmp_path, header, word):
    body = "" if header.endswith("%") else "1 1 1.0\n2 2 2.0\n"
    f = _header_file(tmp_path / "h.mtx", header, body)
    with _allocation_bound(), pytest.raises(gb.InputError, match=word):
        io.read_matrix(f)


def test_matrix_market_header_check_in_a_process(tmp_path):
    f = _header_file(tmp_path / "huge.mtx",
                     "%%MatrixMarket matrix coordinate real general\n100000000000 100000000000 2\n",
                     "1 1 1.0\n2 2 2.0\n")
    rc, _, err = run_proc("knn", f, "-k", 1, "-o", tmp_path / "o.npz")
    assert_refused(rc, err, "more memory")


def test_a_good_gzipped_matrix_market_file_passes_the_header_check(data):
    X, _, mtx, _ = data
    rows, cols, entries = io.check_mtx_header(mtx)
    assert (rows, cols) == X.shape and entries >= X.nnz


def _runtime_checks_indices() -> bool:
    """Whether runtime.to_csr bounds-checks indices (the input-validation work)."""
    code = ("import numpy as np, scipy.sparse as sps\n"
            "from gbdist import runtime, errors\n"
            "m = sps.csr_matrix((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=(2, 3))\n"
            "try:\n    runtime.to_csr(m, 'X')\nexcept errors.InputError:\n    print('checked')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=60)
    return "checked" in proc.stdout


@pytest.mark.parametrize("indices,indptr", [([0, -5, 2], [0, 1, 2, 3]), ([0, 1, 99999], [0, 1, 2, 3]),
                                            ([0, 1, 2], [0, 5, 2, 3])])
def test_a_corrupt_npz_is_refused_without_crashing(tmp_path, indices, indptr):
    if not _runtime_checks_indices():
        pytest.skip("runtime.to_csr does not bound-check indices yet (input-validation work)")
    f = tmp_path / "bad.npz"
    np.savez(f, data=np.ones(3), indices=np.array(indices), indptr=np.array(indptr),
             format=b"csr", shape=np.array([3, 3]))
    for cmd in ("knn", "pairwise"):
        rc, _, err = run_proc(cmd, f, "-k", 1, "-o", tmp_path / "o") if cmd == "knn" else \
            run_proc(cmd, f, "-o", tmp_path / "o")
        assert rc == 2, (rc, err)
        assert "Traceback" not in err and "gbdist: error:" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_device_as_input_is_refused(tmp_path, capsys):
    fifo = tmp_path / "pipe.mtx"
    os.mkfifo(fifo)
    rc, _, err = run_cli(["knn", fifo, "-o", tmp_path / "o.npz"], capsys)
    assert_refused(rc, err, "not a regular file")
    if os.path.exists("/dev/zero"):
        rc, _, err = run_cli(["pairwise", "/dev/zero", "-o", tmp_path / "o"], capsys)
        assert rc == 2 and "Traceback" not in err


def test_every_option_has_help_and_index_help_fits_the_command():
    import argparse
    import gbdist.cli.main as cli
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    helps = {}
    for name, _, add_args, _ in cli.COMMANDS:
        p = sub.add_parser(name)
        add_args(p)
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            helps[(name, action.dest)] = action.help
    assert helps[("pairwise", "index")] != helps[("knn", "index")]
    assert "neighbour" not in helps[("pairwise", "index")]


def test_version(capsys):
    rc, out, err = run_proc("--version")
    assert rc == 0 and out.strip() == f"gbdist {gb.__version__}"


def _npy_bytes(shape, payload=b"\0" * 16):
    import io as _io
    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buf.getvalue() + payload


def test_npy_and_npz_headers_are_checked_before_allocating(tmp_path, capsys):
    import zipfile
    npy = tmp_path / "huge.npy"
    npy.write_bytes(_npy_bytes((10**11, 2)))
    npz = tmp_path / "huge.npz"
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("arr_0.npy", _npy_bytes((10**11, 2)))
    for f in (npy, npz):
        with _allocation_bound(), pytest.raises(gb.InputError,
                                                match="promises more data than the file holds"):
            io.read_matrix(f)
        rc, _, err = run_cli(["pairwise", f, "-o", tmp_path / "o"], capsys)
        assert_refused(rc, err, "promises more data")
    # a good file of each kind still reads
    A = np.arange(6.0).reshape(2, 3)
    np.save(tmp_path / "good.npy", A)
    np.savez_compressed(tmp_path / "good.npz", A)
    for name in ("good.npy", "good.npz"):
        assert_allclose(io.read_matrix(tmp_path / name).toarray(), A)


def test_no_bar_off_a_terminal_and_nothing_with_quiet(data, tmp_path, capsys):
    X, Y, mtx, npz = data
    rc, _, err = run_cli(["knn", mtx, "-k", 2, "--backend", "cpu", "-o", tmp_path / "a"], capsys)
    assert rc == 0 and "%|" not in err and "gbdist knn:" in err  # capsys is not a terminal
    rc, _, err = run_cli(["pairwise", mtx, "--progress", "--quiet", "--backend", "cpu", "-o",
                          tmp_path / "b"], capsys)
    assert rc == 0 and err == ""
    assert np.load(tmp_path / "b.npy").shape == (30, 30)


CHI2_FILE = """
# (x - y)^2 / (x + y), 0 where both are 0
op chi2(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))

# alpha * Σ chi2
metric scaled_chi2(A, B; alpha = 1) = alpha * mxm(A, B.T, semiring(chi2, plus))
"""


def _chi2(X, Y, alpha):
    X, Y = np.asarray(X.todense(), float), np.asarray(Y.todense(), float)
    s = X[:, None, :] + Y[None, :, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(s == 0, 0.0, (X[:, None, :] - Y[None, :, :]) ** 2 / s)
    return alpha * t.sum(axis=2)


@pytest.fixture
def positive(tmp_path):
    rng = np.random.default_rng(5)
    X = sps.random(20, 12, density=0.4, random_state=rng, format="csr")
    Y = sps.random(25, 12, density=0.4, random_state=rng, format="csr")
    px, py = tmp_path / "x.npz", tmp_path / "y.npz"
    sps.save_npz(px, X)
    sps.save_npz(py, Y)
    f = tmp_path / "chi2.gbd"
    f.write_text(CHI2_FILE)
    return X, Y, px, py, f


def test_knn_and_pairwise_with_a_metric_file_and_a_parameter(positive, tmp_path, capsys,
                                                             isolated_definitions):
    X, Y, px, py, f = positive
    ref = _chi2(X, Y, 2.5)
    rc, _, err = run_cli(["pairwise", px, "--index", py, "--file", f, "--metric", "scaled_chi2",
                          "--param", "alpha=2.5", "--backend", "cpu", "-o", tmp_path / "d"], capsys)
    assert rc == 0, err
    assert "metric scaled_chi2 alpha=2.5" in err
    assert_allclose(np.load(tmp_path / "d.npy"), ref, rtol=1e-6, atol=1e-9)
    rc, _, err = run_cli(["knn", px, "--index", py, "-f", f, "--metric", "scaled_chi2",
                          "-p", "alpha=2.5", "-k", 3, "--backend", "cpu", "-o", tmp_path / "n"],
                         capsys)
    assert rc == 0, err
    res = np.load(tmp_path / "n.npz")
    assert_allclose(res["distances"], np.sort(ref, axis=1)[:, :3], rtol=1e-6, atol=1e-9)


def test_pairwise_in_blocks_matches_one_call(data, tmp_path, capsys, monkeypatch):
    from scipy.spatial.distance import cdist
    X, Y, mtx, npz = data
    monkeypatch.setattr(cli_knn, "PAIRS_PER_BLOCK", 7 * 45)  # 7 query rows a block
    rc, _, err = run_cli(["pairwise", mtx, "--index", npz, "--metric", "minkowski", "-p", 3,
                          "--backend", "cpu", "--progress", "-o", tmp_path / "d"], capsys)
    assert rc == 0, err
    assert "1.35k/1.35k" in err  # 30 x 45 pairs, in five steps
    ref = cdist(X.toarray(), Y.toarray(), "minkowski", p=3)
    assert_allclose(np.load(tmp_path / "d.npy"), ref, rtol=1e-5)


@pytest.mark.parametrize("argv, words", [
    (["--metric", "cosine", "--param", "p=3"], ["no parameter 'p'", "cosine takes no parameters",
                                               "drop --param"]),
    (["--metric", "minkowski", "--param", "q=3"], ["no parameter 'q'", "minkowski takes p"]),
    (["--metric", "minkowski", "-p", "3", "-p", "p=4"], ["given twice"]),
    (["--metric", "minkowski", "--param", "p=x"], ["parameter 'p' needs a number", "p=3"]),
    (["--metric", "minkowski", "--param", "2p=3"], ["not NAME=VALUE"]),
    (["--metric", "manhatan"], ["unknown metric 'manhatan'", "manhattan"]),
])
def test_metric_and_parameter_errors(data, tmp_path, capsys, argv, words):
    _, _, mtx, _ = data
    with pytest.raises(SystemExit) if "NAME=VALUE" in words[0] or "needs a number" in words[0] \
            else _no_raise():
        rc, _, err = run_cli(["knn", mtx, *argv, "-o", tmp_path / "o"], capsys)
        assert rc == 2
        for w in words:
            assert w in err, err
    if "NAME=VALUE" in words[0] or "needs a number" in words[0]:  # argparse's own exit
        err = capsys.readouterr().err
        for w in words:
            assert w in err, err


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_metric_file_errors_name_the_file(data, tmp_path, capsys):
    _, _, mtx, _ = data
    bad = tmp_path / "bad.gbd"
    bad.write_text("metric m(A, B) = mxm(A, B.T, semiring(nosuchop, plus))\n")
    rc, _, err = run_cli(["knn", mtx, "--file", bad, "--metric", "m", "-o", tmp_path / "o"], capsys)
    assert rc == 2 and "bad.gbd" in err and "nosuchop" in err


@pytest.mark.parametrize("module", ["gbdist", "gbdist.cli.knn", "gbdist.cli.demo",
                                    "gbdist.cli.main"])
def test_every_entry_point_has_version(module):
    proc = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"gbdist {gb.__version__}"


def test_demo_options_all_have_help():
    import argparse
    from gbdist.cli import demo
    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    for action in p._actions:
        if not isinstance(action, argparse._HelpAction):
            assert action.help, action.dest


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "kl_divergence"])
def test_pairwise_self_join_in_blocks_equals_one_call(data, tmp_path, capsys, monkeypatch, metric):
    """Without --index the blocks are compared with all of INPUT: the same matrix as one
    call, the exact zero diagonal included."""
    X, _, mtx, _ = data
    if metric == "kl_divergence":
        Xp = abs(X)
        mtx = tmp_path / "pos.npz"
        sps.save_npz(mtx, sps.csr_matrix(Xp))
    rc, _, err = run_cli(["pairwise", mtx, "--metric", metric, "--backend", "cpu", "-o",
                          tmp_path / "one"], capsys)
    assert rc == 0, err
    monkeypatch.setattr(cli_knn, "PAIRS_PER_BLOCK", 4 * 30)
    rc, _, err = run_cli(["pairwise", mtx, "--metric", metric, "--backend", "cpu", "-o",
                          tmp_path / "blocks"], capsys)
    assert rc == 0, err
    one, blocks = np.load(tmp_path / "one.npy"), np.load(tmp_path / "blocks.npy")
    assert_allclose(blocks, one, rtol=1e-6, atol=1e-12, equal_nan=True)
    if metric != "kl_divergence":  # NaN only where a row is all zeros (cosine, as SciPy)
        diag = np.diag(blocks)
        empty = np.asarray(abs(X).sum(axis=1)).ravel() == 0
        assert (diag[~np.isnan(diag)] == 0).all() and (np.isnan(diag) <= empty).all()
