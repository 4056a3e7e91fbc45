"""Backends: where a bound plan is computed. Every backend implements ONE protocol,
:class:`gbdist.backends.base.Backend` (docs/backends.md), and nothing above asks which
backend it has.

* :mod:`~gbdist.backends.base` — the protocol, :class:`~gbdist.backends.base.Bound`
  (checked, canonical operands, made by :func:`gbdist.runtime.bind`) and
  :class:`~gbdist.backends.base.Tile`;
* :mod:`~gbdist.backends.rows` — array work on canonical CSR rows shared by every
  backend (NumPy or CuPy): identical rows and the proven d(a, a), conditioning,
  normalisation;
* :mod:`~gbdist.backends.cpu` — NumPy/SciPy, the reference semantics, and the
  reference top-k;
* :mod:`~gbdist.backends.cuda` — generated CUDA kernels through CuPy: operands,
  the strategy table, the one cache of compiled modules.

Imports run downward only: nothing here imports from :mod:`gbdist.runtime`,
:mod:`gbdist.neighbors` or :mod:`gbdist.pairwise` (tests/runtime/test_backend_protocol.py
checks it).
"""
