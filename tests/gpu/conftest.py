import pytest

from gbdist.backends.cuda import available


def pytest_collection_modifyitems(config, items):
    if available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and an NVIDIA GPU")
    for item in items:
        if "tests/gpu" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
