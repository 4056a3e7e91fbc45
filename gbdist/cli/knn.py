"""The ``knn`` and ``pairwise`` subcommands of the ``gbdist`` command.

    gbdist knn data.mtx.gz -k 10 --metric cosine -o neighbours.npz
    gbdist knn queries.npz --index corpus.mtx -k 5 --metric minkowski -p 3 -o out.npz
    gbdist pairwise data.npz --metric manhattan -o distances.npy
    gbdist knn data.npz --file my_metrics.gbd --metric chi2_dist --param alpha=0.5 -o out.npz
    gbdist knn genes_by_cells.mtx --transpose -k 15 --metric cosine -o cells.npz
    gbdist pairwise table.csv --metric cosine -o distances.npy

COMMANDS holds (name, help, add_arguments, run) entries, the shape of
``gbdist.cli.main.COMMANDS``, so the main command can take them in; ``python -m
gbdist.cli.knn`` runs them on their own.
"""
from __future__ import annotations

import argparse
import time

from ..errors import InputError
from .base import (
    add_metric_options, add_progress_options, metric_from_args, progress, run_commands, say,
    say_backend)
from .files import add_input_options, output_path as _output, read_points

def size_arg(unit: int, name: str):
    """An argparse ``type=`` for a memory size: a number counts ``unit`` bytes, a unit may
    follow (``512MiB``, ``2GB``, ``1.5GiB``, ``300kB``; the library's one parser,
    :func:`gbdist.runtime.parse_size`)."""
    def parse(text: str) -> int:
        from ..errors import ParameterError
        from ..runtime import parse_size
        try:
            return parse_size(text, unit=unit, name=name)
        except ParameterError as e:
            raise argparse.ArgumentTypeError(
                f"{e.message}: {text!r}; expected {e.expected}".replace(
                    "a positive number of MiB (as scikit-learn counts it)",
                    "a positive number of MiB" if unit != 1 else "a positive number of bytes")) \
                from None
    parse.__name__ = "size"  # argparse names the type in its messages
    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _common_args(p, index_help: str):
    p.add_argument("input", metavar="INPUT",
                   help="the query rows: a .mtx, .mtx.gz, .npz (scipy.sparse.save_npz or one "
                        "dense array), .npy, .csv/.tsv (dense) or triplet file (.coo, .triplets, "
                        ".txt: 'row col value' lines, 1-based unless --zero-based)")
    p.add_argument("--index", metavar="INDEX", help=index_help)
    add_input_options(p)
    add_metric_options(p)
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "compiled", "cuda"),
                   help="where to compute: cpu, compiled (Numba), cuda, or auto (cuda when "
                        "a GPU and CuPy are available; default)")
    p.add_argument("--working-memory", type=size_arg(2**20, "--working-memory"), default=None,
                   metavar="SIZE",
                   help="memory budget for one block of distances: MiB, as the library's "
                        "working_memory= counts it, or a size with a unit (256MiB, 2GB, 1.5GiB; "
                        "default 512MiB or half the free memory)")
    add_progress_options(p)


def _load(args):
    """The input (and index) matrices, read (--transpose applied) and made canonical."""
    X = read_points(args, args.input, "INPUT")
    Y = read_points(args, args.index, "INDEX") if args.index else None
    if Y is not None and Y.shape[1] != X.shape[1]:
        raise InputError("INPUT and INDEX have different numbers of columns",
                         got=f"{X.shape[1]:,} and {Y.shape[1]:,}",
                         hint="--transpose applies to both" if args.transpose else None)
    return X, Y


def _shape(X, Y, args) -> str:
    """What the summary says of the shapes used: "322 queries x 23,433 columns"."""
    n_index = "itself" if Y is None else f"{Y.shape[0]:,} index rows"
    return (f"{X.shape[0]:,} queries x {X.shape[1]:,} columns"
            f"{' (transposed)' if args.transpose else ''} against {n_index}")


# --- knn ----------------------------------------------------------------------


def _knn_args(p):
    _common_args(p, "the rows searched for neighbours (default: INPUT itself, each point left "
                     "out of its own neighbours)")
    p.add_argument("-k", type=_positive_int, default=10, help="neighbours per query (default 10)")
    p.add_argument("--include-self", action="store_true",
                   help="without --index, let a point be its own neighbour")
    p.add_argument("-o", "--output", required=True, metavar="OUT.npz",
                   help="where to write the int64 indices and the distances (np.savez; .npz is "
                        "appended when the name lacks it)")


def _strategy(metric: str, params: dict) -> str:
    """The strategy of each product, read from the plan (no explanation: no sympy)."""
    from ..pairwise import metric_program
    products = metric_program(metric, **params).plan.products
    if not products:
        return "no products"
    return "; ".join(p.strategy + (f" (expansion rank {p.expansion_rank})" if p.expansion_rank
                                   else "") for p in products)


def _knn(args) -> int:
    from .. import neighbors
    from ..io import write_knn
    from ..pairwise import metric_program
    metric, params = metric_from_args(args)
    target = _output(args.output, ".npz")
    X, Y = _load(args)
    exclude_self = Y is None and not args.include_self
    Yv = X if Y is None else Y
    plan = metric_program(metric, **params).plan
    budget = args.working_memory  # bytes: size_arg converted the MiB or the unit
    be = neighbors._backend(args.backend, budget)
    say_backend(args)
    total = X.shape[0] * Yv.shape[0]
    start = time.perf_counter()
    with progress(args, total, "pairs", "knn") as bar:
        d, i = neighbors._knn(plan, X, Yv, args.k, be, budget, exclude_self, on_block=bar.update)
    seconds = time.perf_counter() - start
    out = write_knn(target, i, d)
    say(args, f"gbdist knn: {_shape(X, Y, args)}, k={args.k}, "
              f"metric {_described(metric, params)}: {total:,} pairs in {seconds:.3f} s "
              f"({total / max(seconds, 1e-9):.3g} pairs/s); backend {getattr(be, 'name', be)}; "
              f"strategy {_strategy(metric, params)}; wrote {out}")
    return 0


def _described(metric: str, params: dict) -> str:
    return metric + "".join(f" {k}={v:g}" for k, v in params.items())


# --- pairwise -----------------------------------------------------------------

DEFAULT_MAX_BYTES = 2 * 2**30


def _pairwise_args(p):
    _common_args(p, "the rows whose distances to the INPUT rows form the output's columns "
                     "(default: INPUT itself, a square matrix)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.npy",
                   help="where to write the dense distance matrix (np.save; .npy is appended "
                        "when the name lacks it)")
    p.add_argument("--max-bytes", type=size_arg(1, "--max-bytes"), default=DEFAULT_MAX_BYTES,
                   metavar="SIZE",
                   help="refuse outputs larger than this (n_query * n_index * 8): bytes, or a "
                        "size with a unit (2GiB, 500MB; default 2GiB)")


PAIRS_PER_BLOCK = 2**22  # rows of the output computed per call (and per step of the bar)


def _pairwise(args) -> int:
    import numpy as np

    from ..pairwise import _pairwise
    metric, params = metric_from_args(args)
    target = _output(args.output, ".npy")
    X, Y = _load(args)
    Yv = X if Y is None else Y
    n_index = Yv.shape[0]
    need = X.shape[0] * n_index * 8
    if need > args.max_bytes:
        raise InputError("the dense distance matrix is too large to write",
                         expected=f"at most --max-bytes = {args.max_bytes} bytes",
                         got=f"{X.shape[0]} x {n_index} x 8 = {need} bytes",
                         hint="use `gbdist knn` for nearest neighbours, or raise --max-bytes")
    say_backend(args)
    start = time.perf_counter()
    rows = max(1, PAIRS_PER_BLOCK // n_index)
    with progress(args, X.shape[0] * n_index, "pairs", "pairwise") as bar:
        if rows >= X.shape[0]:  # one call: the library sees the whole (square) problem
            D = _pairwise(X, Y, metric, args.backend, args.working_memory, None, "auto", params)
            bar.update(X.shape[0] * n_index)
        else:  # blocks of query rows against every index row, so the bar moves
            D = None
            for r0 in range(0, X.shape[0], rows):
                # args.working_memory is bytes here (size_arg converted it), as _pairwise takes
                part = np.asarray(_pairwise(X[r0:r0 + rows], Yv, metric, args.backend,
                                            args.working_memory, None, "auto", params))
                if D is None:
                    D = np.empty((X.shape[0], n_index), dtype=part.dtype)
                D[r0:r0 + part.shape[0]] = part
                bar.update(part.shape[0] * n_index)
    seconds = time.perf_counter() - start
    try:
        np.save(target, np.asarray(D))
    except OSError as e:
        raise InputError(f"cannot write {str(target)!r}", got=e.strerror or str(e)) from None
    say(args, f"gbdist pairwise: {_shape(X, Y, args)}: {D.shape[0]:,} x {D.shape[1]:,} "
              f"distances, metric {_described(metric, params)}, in {seconds:.3f} s; "
              f"wrote {target}")
    return 0


COMMANDS = [
    ("knn", "k nearest neighbours of the rows of a matrix file, written to .npz",
     _knn_args, _knn),
    ("pairwise", "the dense distance matrix of a matrix file, written to .npy (when it fits)",
     _pairwise_args, _pairwise),
]


def main(argv=None) -> int:
    return run_commands(COMMANDS, argv, "nearest neighbours and distances")


if __name__ == "__main__":
    raise SystemExit(main())
