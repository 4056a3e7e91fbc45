"""Column statistics over the whole data, before a partitioned run.

A metric parameter whose default is a statistic of the rows (seuclidean's V, gower's ranges
r and gaps g, mahalanobis' VI and centre mu: :mod:`gbdist.runtime.columns`) is computed,
in a single process, over the rows of both operands as bound. A partitioned run binds
blocks, so each task would compute it over its two blocks. :func:`whole_data_params`
computes those defaults once, on the client, over all the rows (the same canonical
operands and the same function as a single-process call, so the values are the same bit
for bit) and passes them to every task as given parameters. Cost: one pass over the data on
the client, only for a metric with such a default that the caller did not pass; a Dask
array input is gathered for it.
"""
from __future__ import annotations

import scipy.sparse as sps

from .partition import Partitions, _is_dask_array


def _defaults_needed(metric, params: dict) -> dict:
    """name -> ColVector of the column operands with a data default the call lacks."""
    if not isinstance(metric, str):
        return {}
    from ..compiler import ir
    from ..pairwise import metric_program
    plan = metric_program(metric, **params).plan
    return {s.name: s for s in ir.symbols(plan.expr)
            if isinstance(s, ir.ColVector) and s.default and params.get(s.name) is None}


def _rows(X, parts: Partitions, client):
    """The canonical host CSR of all rows of X (as a single-process call binds it)."""
    from ..runtime import prepared
    src = parts.source if parts.source is not None else X
    if isinstance(src, Partitions) or _is_dask_array(src):
        blocks = [b.get() if hasattr(b, "get") and not sps.issparse(b) else b
                  for b in client.gather(parts.futures)]
        src = sps.vstack([sps.csr_matrix(b) for b in blocks], format="csr")
    return prepared.operand(src, False, "allow-nan", "X").csr


def whole_data_params(metric, params: dict, X, Y, Qp: Partitions, Ip: Partitions,
                      client) -> dict:
    """``params`` with every data-default column operand of the metric computed over all
    the rows of X and Y (of X alone in a self-join, as gb.knn(X) computes them)."""
    needed = _defaults_needed(metric, params)
    if not needed:
        return params
    from ..runtime.columns import bind_columns
    A = _rows(X, Qp, client)
    base = {"A": A, "B": A if Ip is Qp else _rows(Y, Ip, client)}
    values = bind_columns(needed, {}, base, {"A": "X", "B": "Y"})
    return {**params, **values}
