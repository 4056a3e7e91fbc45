"""What a user installs: the wheel's contents, the project's metadata, cache locations."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OFFLINE_WORDS = ("No matching distribution", "Could not find a version", "NewConnectionError",
                 "Network is unreachable", "Temporary failure in name resolution",
                 "ProxyError", "Max retries exceeded", "No module named 'setuptools'",
                 "BackendUnavailable")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the tree (so no build/ or egg-info is left here)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".bench_data"))
    out = work / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                           "--no-cache-dir", "-q", "-w", str(out)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        if any(w in proc.stdout + proc.stderr for w in OFFLINE_WORDS):
            pytest.skip("the build backend (setuptools>=77) is not available offline")
        raise AssertionError(f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}")
    (whl,) = out.glob("gbdist-*.whl")
    return zipfile.ZipFile(whl)


def test_wheel_ships_license_types_library_grammar_and_kernels(wheel):
    names = wheel.namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    licenses = [n for n in names if n.startswith(info) and n.endswith("/LICENSE")]
    assert licenses, "the wheel ships no LICENSE"
    assert wheel.read(licenses[0]) == (ROOT / "LICENSE").read_bytes()
    assert "gbdist/py.typed" in names
    assert "gbdist/front/metrics.gbd" in names
    assert "gbdist/grammar/gbdist.lark" in names
    for kernel in (ROOT / "kernels").glob("*.cuh"):
        assert f"gbdist/kernels/{kernel.name}" in names, kernel.name
    assert "gbdist/paths.py" in names and "gbdist/cli/main.py" in names
    meta = wheel.read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in meta
    assert "Project-URL: Homepage, https://github.com/gbdist/gbdist" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "Requires-Dist: tqdm" in meta and "Requires-Dist: platformdirs" in meta
    entry = wheel.read(f"{info}/entry_points.txt").decode()
    assert "gbdist = gbdist.cli.main:main" in entry


def test_project_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in \
        (ROOT / "LICENSE").read_text()
    assert project["authors"] and all("name" in a for a in project["authors"])
    urls = project["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://github.com/gbdist/gbdist") for u in urls.values())
    classifiers = project["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # PEP 639: the expression says it
    py = [c.rsplit(":: ", 1)[1] for c in classifiers if c.startswith("Programming Language :: Python :: 3.")]
    assert py and min(py, key=lambda v: tuple(map(int, v.split(".")))) == \
        project["requires-python"].removeprefix(">=")
    assert (ROOT / "gbdist" / "py.typed").is_file()


# --- cache directories ----------------------------------------------------------------


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    from gbdist import paths
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path / "c"))
    assert paths.cache_dir("cuda") == tmp_path / "c" / "cuda"
    for off in ("off", "OFF", "0", "none", "false"):
        monkeypatch.setenv("GBDIST_CACHE_DIR", off)
        assert paths.cache_dir("cuda") is None and paths.cache_root() is None
    for bad in ("", "../x", "a/b", "CUDA", 3):
        with pytest.raises(ValueError):
            paths.cache_dir(bad)


def test_default_cache_is_the_platform_cache_directory(tmp_path, monkeypatch):
    import platformdirs
    from gbdist import paths
    from gbdist.compiler import cache
    monkeypatch.delenv("GBDIST_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_cache_dir("gbdist", appauthor=False))
    assert paths.cache_root() == expected
    assert cache.directory() == expected / "analyses"
    if sys.platform.startswith("linux"):
        assert expected == tmp_path / "xdg" / "gbdist"  # the XDG convention, not ~/.cache always


def test_the_analysis_cache_writes_under_cache_dir(tmp_path, monkeypatch):
    """A fresh process analyses a metric and stores it under cache_dir("analyses")."""
    env = {**os.environ, "GBDIST_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    code = "import gbdist as gb; gb.explain('canberra')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert any((tmp_path / "analyses").glob("*.json"))


def test_the_installed_wheel_works_outside_the_source_tree(wheel, tmp_path):
    """Installed from the wheel alone (dependencies from this environment): the console
    script's --version, an explanation, a built-in metric and the README's first block."""
    import re
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "-q", "--target", str(target), wheel.filename],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    env = {**os.environ, "PYTHONPATH": str(target), "GBDIST_CACHE_DIR": str(tmp_path / "cache")}
    run = dict(capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    where = subprocess.run([sys.executable, "-c", "import gbdist; print(gbdist.__file__)"], **run)
    assert where.stdout.strip().startswith(str(target)), where.stdout + where.stderr
    script = target / "bin" / "gbdist"
    version = subprocess.run([sys.executable, str(script), "--version"], **run)
    import gbdist
    assert version.returncode == 0 and version.stdout.strip() == f"gbdist {gbdist.__version__}"
    explained = subprocess.run([sys.executable, "-m", "gbdist", "explain", "manhattan"], **run)
    assert explained.returncode == 0 and "union-correction" in explained.stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    block = subprocess.run([sys.executable, "-c", first], **run)
    assert block.returncode == 0, block.stderr
    assert "(1000, 50)" in block.stdout
