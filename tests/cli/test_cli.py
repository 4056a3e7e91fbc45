"""The gbdist command: explain (names, expressions, --file, -p, --cuda) and check."""
import re

import pytest

from gbdist.cli.main import main
from gbdist.front import library


def _env():
    import os
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_explain_a_named_metric_shows_decision_rewrite_proofs_plan(capsys):
    rc, out, _ = run(capsys, "explain", "manhattan")
    assert rc == 0
    assert "L(x) = f(x, 0) = |x|,   R(y) = f(0, y) = |y|,   C = f(0, 0) = 0" in out
    assert "strategy     union-correction" in out
    assert "rewrite      Σ_(A∪B) f" in out
    assert "[proved symbolically (sympy)" in out
    assert "[refuted, as expected" in out and "FAILS" not in out
    assert "\nplan\n" in out and "result = " in out


def test_explain_with_a_parameter(capsys):
    rc, out, _ = run(capsys, "explain", "minkowski", "-p", "p=4")
    assert rc == 0 and "expansion    rank 3" in out
    rc, out, _ = run(capsys, "explain", "minkowski", "-p", "p=3")
    assert rc == 0 and "expansion    none" in out


def test_explain_an_expression(capsys):
    rc, out, _ = run(capsys, "explain", "sqrt(mxm(A, B.T, semiring(sqdiff, plus)))")
    assert rc == 0
    assert "expression  sqrt(mxm(A, B.T, semiring(sqdiff, plus)))" in out
    assert "expansion    rank 1" in out


def test_explain_with_a_file(capsys, tmp_path):
    f = tmp_path / "mine.gbd"
    f.write_text("op cli_chi2(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))\n"
                 "metric cli_chi2_dist(A, B) = mxm(A, B.T, semiring(cli_chi2, plus))\n")
    rc, out, _ = run(capsys, "explain", "cli_chi2_dist", "--file", str(f))
    assert rc == 0 and "== cli_chi2_dist" in out and "union-correction" in out
    rc, out, _ = run(capsys, "explain", "mxm(A, B.T, semiring(cli_chi2, max))", "--file", str(f))
    assert rc == 0 and "two-pass-union" in out


def test_explain_cuda_prints_source_or_says_why_not(capsys):
    rc, out, _ = run(capsys, "explain", "manhattan", "--cuda")
    assert rc == 0
    tail = out.split("generated CUDA", 1)[1]
    assert "__global__" in tail or "CUDA code generator is unavailable" in tail \
        or "CUDA code generator failed" in tail


def test_explain_errors_have_a_caret_and_exit_2(capsys):
    rc, _, err = run(capsys, "explain", "mxm(A, B.T, semiring(absdif, plus))")
    assert rc == 2
    assert err.splitlines() == [
        "gbdist: error: <expression>:1:22: unknown name 'absdif'",
        "    mxm(A, B.T, semiring(absdif, plus))",
        "                         ^^^^^^",
        "Hint: did you mean 'absdiff'?",
    ]
    rc, _, err = run(capsys, "explain", "cosine", "-p", "p=x")
    assert rc == 2 and "needs a number" in err


def test_check_reports_per_definition(capsys, tmp_path):
    f = tmp_path / "mixed.gbd"
    f.write_text("op ck_chi2(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))\n"
                 "metric ck_dist(A, B) = mxm(A, B.T, semiring(ck_chi2, plus))\n"
                 "semiring ck_bad = semiring(absdiff, minus)\n"
                 "metric ck_uses_bad(A, B) = mxm(A, B.T, ck_bad)\n")
    rc, out, _ = run(capsys, "check", str(f))
    assert rc == 1
    assert f"{f}:1:4: ok    op ck_chi2" in out
    assert f"{f}:2:8: ok    metric ck_dist" in out
    # (plans are cached by structure, so the semiring's label may come from an equal
    # earlier one, e.g. a named chi2 semiring of another test)
    assert re.search(r"\n    mxm\(A, B\.T, [^\n]*\): union-correction\n", out), out
    assert "plan: 3 step(s), output matrix" in out
    assert f"{f}:3:37: ERROR semiring ck_bad" in out and "'minus' is not a monoid" in out
    assert f"{f}:4:40: ERROR metric ck_uses_bad" in out and "unknown name 'ck_bad'" in out
    assert out.rstrip().endswith("4 definition(s), 2 with errors")
    # check registers nothing
    rc, _, err = run(capsys, "explain", "ck_dist")
    assert rc == 2 and "unknown metric" in err


def test_check_syntax_error_and_the_library(capsys, tmp_path):
    f = tmp_path / "broken.gbd"
    f.write_text("metric m(A, B) = mxm(A, B.T plus_times)\n")
    rc, out, _ = run(capsys, "check", str(f))
    assert rc == 1 and f"{f}:1:29: ERROR syntax" in out and "^" in out
    rc, out, _ = run(capsys, "check", str(library.LIBRARY))
    assert rc == 0 and ", 0 with errors" in out, out
    rc, _, err = run(capsys, "check", str(tmp_path / "missing.gbd"))
    assert rc == 2 and "cannot read" in err


def test_demo_and_explain_are_listed(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "explain" in out and "check" in out and "demo" in out


# --- bad files and unexpected errors: a message and a non-zero exit -----------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def latin1_file(tmp_path):
    f = tmp_path / "latin1.gbd"
    f.write_bytes("# caf\u00e9\nop ok(x, y) = x\n".encode("latin-1"))
    return f


def test_check_and_explain_name_a_non_utf8_file_and_offset(capsys, latin1_file):
    for argv in (["check", str(latin1_file)], ["explain", "manhattan", "--file", str(latin1_file)]):
        rc, _, err = run(capsys, *argv)
        assert rc == 2
        assert str(latin1_file) in err and "not UTF-8" in err and "offset 5" in err
        assert "Traceback" not in err


def test_check_refuses_missing_files_directories_and_fifos(capsys, tmp_path):
    rc, _, err = run(capsys, "check", str(tmp_path / "missing.gbd"))
    assert rc == 2 and "cannot read" in err
    rc, _, err = run(capsys, "check", str(tmp_path))
    assert rc == 2 and "directory" in err
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.gbd"
        os.mkfifo(fifo)
        rc, _, err = run(capsys, "check", str(fifo))
        assert rc == 2 and "not a regular file" in err


def test_check_a_deeply_nested_file_in_a_process(tmp_path):
    f = tmp_path / "deep.gbd"
    f.write_text("op deep(x, y) = " + "abs(" * 5000 + "x" + ")" * 5000 + "\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "gbdist", "check", str(f)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 1  # check: the file has errors
    assert "nests too deeply" in proc.stdout and "RecursionError" not in proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gbdist", "explain", "manhattan", "--file", str(f)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "nests too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unexpected_error_is_a_message_and_exit_3(capsys, monkeypatch):
    import gbdist.cli.main as cli

    def boom(args):
        raise RuntimeError("something broke")

    rc = cli.run_commands([("boom", "fails", lambda p: None, boom)], ["boom"])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_INTERNAL == 3
    assert "internal error: RuntimeError: something broke" in err and "Traceback" not in err

    def oom(args):
        raise MemoryError

    rc = cli.run_commands([("oom", "fails", lambda p: None, oom)], ["oom"])
    assert rc == 3 and "out of memory" in capsys.readouterr().err


def test_version_flag(capsys):
    import gbdist
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"gbdist {gbdist.__version__}"


@pytest.mark.parametrize("param,word", [("p", "NAME=VALUE"), ("=3", "NAME=VALUE"), ("p=nan", "needs a number"),
                                        ("p=", "needs a number")])
def test_explain_bad_parameters(capsys, param, word):
    rc, _, err = run(capsys, "explain", "minkowski", "-p", param)
    assert rc == 2 and word in err


def test_a_closed_output_pipe_is_not_an_internal_error():
    """`gbdist explain cosine | head -1`: the reader leaving early ends the command quietly."""
    import os
    import subprocess
    import sys
    r, w = os.pipe()
    os.close(r)  # nobody reads: every write to stdout fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "gbdist", "explain", "cosine"], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(w)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


def test_the_auto_backend_is_named_where_it_matters_and_nowhere_else(capsys, tmp_path):
    """Issue 27: no CPU-fallback line on every run; `explain`, `--verbose` and the demo's
    header say where backend='auto' runs."""
    import subprocess
    import sys

    import numpy as np

    from gbdist.runtime.core import auto_backend_note
    note = auto_backend_note()
    rc, out, err = run(capsys, "explain", "manhattan")
    assert rc == 0 and note in err and note not in out
    f = tmp_path / "x.npy"
    np.save(f, np.random.default_rng(0).random((20, 5)))
    code = ("import numpy as np, gbdist as gb; "
            "gb.pairwise_distances(np.eye(3), metric='cosine'); print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert proc.stdout.strip() == "ok" and "backend=" not in proc.stderr
    for extra, shown in (([], False), (["-v"], True), (["-v", "-q"], False)):
        rc, _, err = run(capsys, "knn", str(f), "-k", "2", "-o", str(tmp_path / "o"), *extra)
        assert rc == 0 and (note in err) == shown, (extra, err)


def test_progress_into_a_file_is_plain_lines_without_repeats(tmp_path):
    """Issue 27: the 100% state was written twice, joined by carriage returns."""
    import subprocess
    import sys

    import numpy as np
    f = tmp_path / "x.npy"
    np.save(f, np.random.default_rng(0).random((40, 5)))
    proc = subprocess.run([sys.executable, "-m", "gbdist", "knn", str(f), "-k", "2", "-o",
                           str(tmp_path / "o"), "--progress"], capture_output=True, text=True,
                          env=_env())
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr
    lines = proc.stderr.splitlines()
    bars = [ln for ln in lines if ln.startswith("knn:")]
    assert bars and "100%" in bars[-1] and sum("100%" in ln for ln in bars) == 1
    assert len(lines) == len(set(lines))
