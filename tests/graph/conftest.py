"""The ``kernels`` fixture: every graph test runs through each kernel set present."""
from __future__ import annotations

import pytest

from gbdist.graph import dispatch
from graphcase import KERNEL_SETS

@pytest.fixture(params=KERNEL_SETS)
def kernels(request):
    """A kernel set by name; the missing ones are skipped (compiled: Numba + the gcpu
    module; cuda: CuPy, a GPU and the gcuda module)."""
    name = request.param
    if name == "cuda":
        from gbdist.backends.cuda import available
        if not available():
            pytest.skip("needs CuPy and an NVIDIA GPU")
    if not dispatch.available(name):
        pytest.skip(f"the {name} graph kernels are not importable here")
    return name
