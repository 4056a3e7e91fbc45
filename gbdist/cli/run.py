"""``gbdist run GRAPHDEF FILE [VALUE ...]``: run a graph definition on a matrix file.

    gbdist run triangle_count graph.mtx                  # a scalar, printed on stdout
    gbdist run two_hop_count edges.txt -o counts.npy     # a vector: dense .npy
    gbdist run bfs_levels graph.mtx s=0 -o levels.npy --fill -1     # a built-in loop
    gbdist run pagerank graph.mtx alpha=0.9 -o rank.npy  # tol, max_iter: their defaults
    gbdist run bfs_step graph.mtx --arg q=frontier.npy --arg visited=seen.npy -o next.npy
    gbdist run my_graph graph.mtx --file my.gbd --arg k=3 -o out.npz   # a matrix: .npz
    gbdist run my.gbd graph.mtx 3 -o out.npz             # the one graph of my.gbd
    gbdist run my.gbd:my_graph graph.mtx k=3 -o out.npz  # a graph of my.gbd, by name

GRAPHDEF is a built-in or loaded definition's name, or a ``.gbd`` file (its only graph
definition, or ``FILE.gbd:NAME``). FILE is the definition's first operand (a graph: only
stored entries exist); the others come after it, in order or as ``NAME=VALUE``, or as
``--arg NAME=VALUE``: a matrix file, a vector ``.npy`` (NaN entries are absent, every
other entry stored), an index array (``.npy`` of integers, or ``0,4,7``), or a number
for a scalar; a parameter with a default (``graph pagerank(A; alpha = 0.85)``) may be
left out. The definition runs through :func:`gbdist.graph.run`. A scalar
result is printed on stdout; a vector is written with ``-o`` as a dense ``.npy``
(absent entries as ``--fill``, NaN by default; a vector with every entry stored keeps
its dtype), a matrix as a SciPy sparse ``.npz`` (``scipy.sparse.load_npz``; stored
entries only, a stored 0 stays stored). A summary line goes to stderr unless ``-q``.
"""
from __future__ import annotations

import math
import time

from ..errors import ArityError, InputError, UnknownNameError
from .base import say, say_backend
from .files import add_input_options, output_path, read_file, shape_text

BACKENDS = ("auto", "cpu", "compiled", "reference", "cuda")
_SUFFIX = {"vector": ".npy", "matrix": ".npz"}


def add_arguments(p) -> None:
    p.add_argument("graph", metavar="GRAPHDEF",
                   help="a graph definition: a built-in one (triangle_count, bfs_levels, sssp, "
                        "pagerank, connected_components, ...; `gbdist metrics --graphs` lists "
                        "them), one of --file, or a .gbd file (its one graph, or F.gbd:NAME)")
    p.add_argument("input", metavar="FILE",
                   help="the matrix given as the definition's first operand: .mtx, .mtx.gz, "
                        ".npz, .npy, .csv/.tsv or a triplet/edge-list file (.coo, .triplets, "
                        ".txt: 'row col [value]' lines, 1-based unless --zero-based)")
    p.add_argument("values", nargs="*", metavar="VALUE",
                   help="the other operands and parameters after FILE, in the definition's "
                        "order or as NAME=VALUE (as --arg)")
    p.add_argument("--arg", "-a", action="append", default=[], metavar="NAME=FILE_OR_VALUE",
                   help="another operand, by name (may be repeated): a matrix file, a vector "
                        ".npy (NaN entries are absent), an index array (.npy of integers or "
                        "0,4,7) or a number for a scalar")
    p.add_argument("--file", "-f", action="append", default=[], metavar="F",
                   help="a metric file (.gbd) whose definitions are loaded first (may be "
                        "repeated)")
    p.add_argument("--output", "-o", default=None, metavar="OUT",
                   help="where a vector result goes (dense .npy, np.save; absent entries as "
                        "--fill) or a matrix result (sparse .npz, scipy.sparse.save_npz); the "
                        "suffix is appended when missing; a scalar is printed on stdout")
    p.add_argument("--fill", type=_fill, default=math.nan, metavar="VALUE",
                   help="the value written for the absent entries of a vector result "
                        "(default nan, which makes the array float)")
    p.add_argument("--backend", default="auto", choices=BACKENDS,
                   help="the graph kernels: auto (default: the CPU kernels, the files being "
                        "read into host memory), cpu, compiled (Numba), reference (NumPy), or "
                        "cuda (the operands are moved to the GPU)")
    add_input_options(p, "FILE (and of the --arg matrices)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also say where --backend auto runs and why")


def _fill(text: str) -> float:
    import argparse
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (e.g. nan, 0, -1)") from None


def run(args) -> int:
    from ..front import load
    from ..graph import run as run_graph
    for path in args.file:
        load(path)
    g = _definition(args.graph, load)
    values = _arguments(args, g)
    kind = result_kind(g)
    target = _target(args, g, kind)
    operands = {name: _operand(args, g, name, text, what) for name, (text, what)
                in values.items()}
    if args.backend == "cuda":
        operands = {k: v.to_device() if hasattr(v, "to_device") else v
                    for k, v in operands.items()}
    say_backend(args)
    start = time.perf_counter()
    result = run_graph(g, backend=args.backend, **operands)
    seconds = time.perf_counter() - start
    A = operands[g.operands[0]]
    head = (f"gbdist run {g.name}: {g.operands[0]} = {args.input} "
            f"({_describe(A, args)}), {seconds:.3f} s")
    if not hasattr(result, "nvals"):  # a scalar
        value = result.item() if hasattr(result, "item") else result
        print(value)
        say(args, f"{head}; a scalar ({getattr(result, 'dtype', type(value).__name__)}), printed")
        return 0
    got = "vector" if result.ndim == 1 else "matrix"
    if target is None or target.suffix != _SUFFIX[got]:  # the kind followed an operand
        target = _target(args, g, got)
    say(args, f"{head}; {_write(result.to_host(), target, args.fill)}")
    return 0


def _definition(text: str, load):
    """GRAPHDEF: a name, a .gbd file with one graph definition, or ``FILE.gbd:NAME``."""
    path, colon, name = text.rpartition(":") if ":" in text else (text, "", "")
    if not path.lower().endswith(".gbd"):
        return find(text)
    graphs = load(path).graphs
    if colon:
        if name not in graphs:
            from ..front.syntax import suggest
            raise UnknownNameError(f"{path} defines no graph {name!r}",
                                   expected=", ".join(graphs) or "a graph definition",
                                   hint=suggest(name, list(graphs)) or None)
        return graphs[name]
    if len(graphs) != 1:
        raise InputError(f"{path} defines {len(graphs)} graph definitions: say which",
                         expected=f"{path}:NAME", got=", ".join(graphs) or "none",
                         hint=f"e.g. {path}:{next(iter(graphs))}" if graphs else
                         "a graph definition starts with `graph NAME(A, ...) =`")
    return next(iter(graphs.values()))


def find(name: str):
    """The graph definition ``name``, or an UnknownNameError with a close name (a metric's
    name says which commands take metrics)."""
    from ..front.library import find_graph, find_metric, graph_names
    from ..front.syntax import suggest
    g = find_graph(name)
    if g is not None:
        return g
    if find_metric(name) is not None:
        raise UnknownNameError(f"{name!r} is a metric, not a graph definition",
                               hint=f"gbdist knn / gbdist pairwise --metric {name} compute it; "
                                    "`gbdist metrics --graphs` lists the graph definitions")
    raise UnknownNameError(f"unknown graph definition {name!r}",
                           hint=suggest(name, graph_names()) or
                           "`gbdist metrics --graphs` lists them; --file F.gbd loads yours")


def result_kind(g) -> str:
    from .listing import result_kind as kind
    return kind(g)


def signature(g) -> str:
    """``bfs_step(A matrix, q vector, visited vector)``; a default as ``alpha scalar = 0.85``."""
    from .listing import _kind
    return f"{g.name}(" + ", ".join(
        f"{o} {_kind(g.kinds.get(o))}" + (f" = {g.defaults[o]:g}" if g.defaults.get(o) is not None
                                          else "") for o in g.operands) + ")"


def _target(args, g, kind: str):
    """The output path for a ``kind`` result, checked before any work."""
    if kind not in _SUFFIX:  # a scalar, or known only after the run
        if args.output is not None and kind == "scalar":
            raise InputError(f"{g.name} returns a scalar: it is printed on stdout, not written",
                             got=f"-o {args.output}", hint="drop -o (redirect stdout to keep it)")
        return None
    if args.output is None:
        raise InputError(f"{g.name} returns a {kind}: it needs an output file",
                         expected=f"-o OUT{_SUFFIX[kind]} ("
                                  + ("dense, np.load" if kind == "vector" else
                                     "sparse, scipy.sparse.load_npz") + ")",
                         hint=f"add -o {g.name}{_SUFFIX[kind]}")
    other = ".npz" if kind == "vector" else ".npy"
    if args.output.lower().endswith(other):
        raise InputError(f"{g.name} returns a {kind}, written as {_SUFFIX[kind]}",
                         got=f"-o {args.output}", hint=f"name the output *{_SUFFIX[kind]}")
    return output_path(args.output, _SUFFIX[kind])


def _arguments(args, g) -> dict:
    """operand -> (text, where it came from), FILE first; every operand given once."""
    first = g.operands[0]
    values = {first: (args.input, "FILE ")}
    items = [(item, True) for item in args.arg]
    for item in args.values:
        name, eq, _ = item.partition("=")
        if eq and name.strip().isidentifier():
            items.append((item, True))
        else:  # the next operand not given yet, in the definition's order
            given = set(values) | {i.partition("=")[0].strip() for i, named in items if named}
            rest = [o for o in g.operands if o not in given]
            if not rest:
                raise ArityError(f"graph {g.name!r} takes {len(g.operands)} operand(s): "
                                 f"{item!r} is one too many", expected=signature(g))
            items.append((f"{rest[0]}={item}", True))
    for item, _ in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise InputError("--arg needs NAME=FILE_OR_VALUE", got=item,
                             hint=f"e.g. --arg {g.operands[-1]}=...; {signature(g)}")
        if name not in g.operands:
            from ..front.syntax import suggest
            raise UnknownNameError(f"graph {g.name!r} has no operand {name!r}",
                                   expected=signature(g),
                                   hint=suggest(name, list(g.operands[1:])) or None)
        if name in values:
            why = "FILE is" if name == first else "it is given twice"
            raise ArityError(f"operand {name!r} of {g.name!r} is given twice",
                             got=f"{why} {values[name][0]!r} and --arg {item}",
                             hint=f"FILE is {first}; the others come as --arg NAME=..."
                             if name == first else "give it once")
        values[name] = (text.strip(), f"--arg {name}=")
    missing = [o for o in g.operands if o not in values and g.defaults.get(o) is None]
    if missing:
        raise ArityError(f"graph {g.name!r} needs {len(g.operands)} operands: "
                         f"{', '.join(repr(o) for o in missing)} missing",
                         expected=signature(g),
                         hint="FILE is " + first + "; add "
                              + " ".join(f"--arg {o}=..." for o in missing))
    return values


def _operand(args, g, name: str, text: str, what: str):
    """The value of operand ``name`` (kind from the definition) from ``text``."""
    from ..graph import Matrix
    kind = g.kinds.get(name, "any")
    number = _number(text)
    if kind == "scalar":
        if number is None:
            raise InputError(f"operand {name!r} of {g.name!r} is a scalar: give a number",
                             got=f"{what}{text}", expected=signature(g))
        return number
    if number is not None:
        raise InputError(f"operand {name!r} of {g.name!r} is a {_kind_word(kind)}, not a number",
                         got=f"{what}{text}", expected=signature(g),
                         hint=_files_of(kind))
    if kind == "index":
        return _index(text, name, g)
    lower = text.lower()
    if kind == "vector" or (kind in ("any", "array") and lower.endswith(".npy")
                            and _npy_ndim(text) == 1):
        return _vector(text)
    if kind not in ("matrix", "any", "array"):
        raise InputError(f"operand {name!r} of {g.name!r} has kind {kind!r}, which the "
                         "command line cannot read", expected=signature(g))
    return Matrix(read_file(args, text, f"operand {name}"))


def _kind_word(kind: str) -> str:
    return "matrix or vector" if kind in ("any", "array") else kind


def _files_of(kind: str) -> str:
    return {"vector": "a vector is a .npy file of one 1-D array (NaN entries are absent)",
            "index": "an index array is a .npy file of integers, or 0,4,7",
            "matrix": "a matrix is a .mtx, .npz, .npy, .csv/.tsv or triplet file"}.get(
        kind, "a matrix file, or a 1-D .npy for a vector")


def _number(text: str):
    """``text`` as an int or a float (not NaN), or None when it is not a number."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value:
        raise InputError("a scalar operand must be a number, not nan", got=text)
    return value


def _npy_ndim(path: str):
    """The number of dimensions a .npy header states, or None (the readers then say why)."""
    import numpy as np
    try:
        with open(path, "rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read = (np.lib.format.read_array_header_1_0 if major == 1 else
                    np.lib.format.read_array_header_2_0)
            return len(read(f)[0])
    except (OSError, ValueError, EOFError):
        return None


def _vector(path: str):
    """A gb.Vector from a .npy: NaN entries absent, every other entry stored."""
    import numpy as np

    from ..graph import Vector
    from ..io import read_vector
    arr = read_vector(path)
    if arr.dtype.kind != "f":
        return Vector(arr)
    keep = np.flatnonzero(~np.isnan(arr))
    return Vector.from_coo(keep, arr[keep], arr.size, dtype=arr.dtype)


def _index(text: str, name: str, g):
    import numpy as np

    from ..io import read_vector
    if text.lower().endswith(".npy"):
        arr = read_vector(text)
    else:
        try:
            arr = np.array([int(t) for t in text.split(",") if t.strip()], dtype=np.int64)
        except ValueError:
            raise InputError(f"operand {name!r} of {g.name!r} is an index array",
                             expected="a .npy file of integers, or 0,4,7", got=text) from None
    if arr.dtype.kind not in "iu":
        raise InputError(f"operand {name!r} of {g.name!r} is an index array of integers",
                         got=f"dtype {arr.dtype}")
    return arr.astype(np.int64)


def _describe(A, args) -> str:
    if hasattr(A, "nvals") and getattr(A, "ndim", 2) == 2:
        return f"{shape_text(A, args)}, {A.nvals:,} stored"
    return f"{getattr(A, 'size', '?')} entries"


def _write(result, target, fill: float) -> str:
    """Write a host vector (.npy) or matrix (.npz); the summary's words."""
    import numpy as np
    try:
        if result.ndim == 1:
            full = result.nvals == result.size
            dense = result.to_dense() if full else result.to_dense(fill=fill)
            np.save(target, dense)
            absent = "" if full else f", absent written as {fill:g}"
            return (f"a vector of {result.size:,} entries ({result.nvals:,} stored{absent}), "
                    f"{dense.dtype}; wrote {target}")
        import scipy.sparse as sps
        csr = result.to_scipy()
        sps.save_npz(target, sps.csr_matrix((csr.data, csr.indices, csr.indptr), csr.shape))
    except OSError as e:
        raise InputError(f"cannot write {str(target)!r}", got=e.strerror or str(e)) from None
    return (f"a {result.shape[0]:,} x {result.shape[1]:,} matrix ({result.nvals:,} stored, "
            f"{result.dtype}); wrote {target}")
