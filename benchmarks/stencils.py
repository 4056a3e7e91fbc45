"""The fourth seed's matrix classes (issue 30), built with vectorised array operations on
NumPy or CuPy (``xp``): the 7-point Poisson 3D Laplacian, a 27-point FEM-like stencil on
the same grid, and a band of half-width b. Symmetric, float64, columns sorted.

``stencil_csr(offsets, nx, ny, nz, upper=False, xp=np, seed=None)`` returns
(indptr, indices, data, n) with int32 indices (int64 indptr above 2^31 - 1 entries), the
full matrix or its upper triangle with the diagonal (``upper=True``; built directly, the
full matrix is never formed). ``seed``: values perturbed symmetrically (a(i,j) = base *
(1 + 0.25 w(min(i,j), max(i,j))), w a hash of the pair in [0, 1)) so that a transposed
entry read from the wrong place changes the result; None: the plain stencil (diagonal
the number of neighbours, -1 off it).
"""
from __future__ import annotations

import numpy as np

POISSON7 = [(dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
            if abs(dx) + abs(dy) + abs(dz) <= 1]
FEM27 = [(dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]


def stencil_csr(offsets, nx: int, ny: int, nz: int, *, upper: bool = False, xp=np, seed=None):
    n = nx * ny * nz
    lin = sorted(((dz * ny + dy) * nx + dx, dx, dy, dz) for dx, dy, dz in offsets)
    if upper:
        lin = [t for t in lin if t[0] >= 0]
    idx = xp.arange(n, dtype=np.int64)
    gx, gy, gz = idx % nx, (idx // nx) % ny, idx // (nx * ny)
    K = len(lin)
    cols = xp.empty((n, K), dtype=np.int32)
    valid = xp.empty((n, K), dtype=np.bool_)
    vals = xp.empty((n, K), dtype=np.float64)
    for k, (off, dx, dy, dz) in enumerate(lin):
        valid[:, k] = ((gx + dx >= 0) & (gx + dx < nx) & (gy + dy >= 0) & (gy + dy < ny)
                       & (gz + dz >= 0) & (gz + dz < nz))
        cols[:, k] = (idx + off).astype(np.int32)
        vals[:, k] = float(len(offsets) - 1) if off == 0 else -1.0
        if seed is not None:
            lo = xp.minimum(idx, idx + off)
            h = (lo * 2654435761 + abs(off) * 40503 + int(seed) * 97) % 1000003
            vals[:, k] *= 1.0 + 0.25 * h.astype(np.float64) / 1000003.0
    del gx, gy, gz
    deg = valid.sum(axis=1)
    nnz = int(deg.sum())
    it = np.int32 if nnz < 2**31 - 1 else np.int64
    indptr = xp.zeros(n + 1, dtype=it)
    indptr[1:] = xp.cumsum(deg).astype(it)
    return indptr, cols[valid], vals[valid], n


def poisson3d(nx: int, **kw):
    return stencil_csr(POISSON7, nx, nx, nx, **kw)


def fem27(nx: int, **kw):
    return stencil_csr(FEM27, nx, nx, nx, **kw)


def band(n: int, b: int, *, upper: bool = False, xp=np, seed=None):
    """Half-width ``b`` band (2b + 1 diagonals) as a 1-D stencil of n points."""
    return stencil_csr([(d, 0, 0) for d in range(-b, b + 1)], n, 1, 1, upper=upper, xp=xp,
                       seed=seed)


def as_scipy(parts):
    import scipy.sparse as sps
    indptr, indices, data, n = parts
    return sps.csr_matrix((data, indices, indptr), shape=(n, n))


def as_cupyx(parts):
    """cupyx CSR of parts built on either side: cupyx's constructor takes CuPy arrays only
    ("data, indices, and indptr must be 1-D cupy arrays" for NumPy ones), so host parts are
    copied to the device first (a no-op for CuPy parts)."""
    import cupy
    import cupyx.scipy.sparse as cps
    indptr, indices, data, n = parts
    return cps.csr_matrix((cupy.asarray(data), cupy.asarray(indices), cupy.asarray(indptr)),
                          shape=(n, n))
