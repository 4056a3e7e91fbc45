"""The ``knn`` and ``pairwise`` subcommands: files in, NumPy files out, same numbers as gb.knn."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist import cli_knn, io
from datagen import random_dense

ROOT = Path(__file__).resolve().parents[1]


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
    assert "pairs/s" in err and "backend cpu" in err and "strategy intersection" in err
    assert "30 queries x 45 index rows" in err


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
    assert "100.0%" in err and "[####" in err  # the bar reached the end
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
    assert rc == 2 and "takes no parameter p" in err
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
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(gb.InputError, match="unknown file type"):
        io.read_matrix(tmp_path / "x.csv")
    np.save(tmp_path / "v.npy", np.arange(3.0))
    with pytest.raises(gb.InputError, match="2-D"):
        io.read_matrix(tmp_path / "v.npy")
    p = io.write_knn(tmp_path / "res", np.zeros((2, 1), dtype=np.int32), np.ones((2, 1)))
    assert p.name == "res.npz" and np.load(p)["indices"].dtype == np.int64


def test_parse_bytes():
    assert cli_knn.parse_bytes("1048576") == 2**20
    assert cli_knn.parse_bytes("256M") == 256 * 2**20
    assert cli_knn.parse_bytes("2GiB") == 2 * 2**30
    for bad in ("", "12X", "-5", "0"):
        with pytest.raises(Exception):
            cli_knn.parse_bytes(bad)


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
    proc = subprocess.run([sys.executable, "-m", "gbdist.cli_knn", "knn", str(mtx), "--index",
                           str(npz), "-k", "2", "--metric", "euclidean", "--backend", "cpu",
                           "-o", str(out)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pairs/s" in proc.stderr
    _, i = gb.knn(X, Y, k=2, metric="euclidean", backend="cpu")
    assert_array_equal(np.load(out)["indices"], i)
