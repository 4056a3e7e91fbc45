"""The ``gbdist`` command: ``demo``, ``explain``, ``check``.

    gbdist explain manhattan
    gbdist explain "mxm(A, B.T, semiring(absdiff, plus))"
    gbdist explain chi2_dist --file my_metrics.gbd --cuda
    gbdist explain manhattan --format svg -o manhattan.svg
    gbdist explain triangle_count --fills 0     (a graph definition: its steps)
    gbdist explain bfs_levels -o bfs_levels.svg (its plan drawn: steps, masks, loops)
    gbdist check my_metrics.gbd

Each subcommand is a (name, help, add_arguments, run) entry in COMMANDS, so a
new one is a new entry, not a branch in a dispatch function.
"""
from __future__ import annotations

from ..errors import GbdistError
from .base import EXIT_INTERNAL, EXIT_USAGE, run_commands  # noqa: F401 (re-exported)
from .knn import COMMANDS as _KNN_COMMANDS


def _demo_args(p):
    from .demo import add_arguments
    add_arguments(p)


def _demo(args) -> int:
    from .demo import run
    return run(args)


def _explain_args(p):
    p.add_argument("target", metavar="EXPR_OR_NAME",
                   help='a metric name (manhattan, or one defined with --file) or an expression '
                        'such as "mxm(A, B.T, semiring(absdiff, plus))"')
    p.add_argument("--file", "-f", action="append", default=[], metavar="F",
                   help="a metric file whose definitions are loaded first (may be repeated)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="a metric parameter, e.g. -p p=4 for minkowski")
    p.add_argument("--fills", default=None, choices=("absent", "0"),
                   help="for a graph definition: the operands are graphs (absent, the default) "
                        "or data (0); the fill decisions follow")
    p.add_argument("--cuda", action="store_true", help="also print the generated CUDA source")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"),
                   help="the dtype of the generated CUDA (default float32)")
    p.add_argument("--format", default=None, choices=("text", "md", "html", "svg", "png"),
                   help="text (default), md (Markdown with LaTeX), html (page with the picture), "
                        "svg or png (the picture: passes over a worked example, and the plan; "
                        "for a graph definition its steps, masks and loops; needs matplotlib)")
    p.add_argument("--output", "-o", default=None, metavar="FILE",
                   help="write to FILE instead of the terminal (the format follows its suffix "
                        "unless --format is given)")


def _params(items):
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier():
            raise GbdistError("-p needs NAME=VALUE", got=item, hint="e.g. -p p=4")
        try:
            out[name] = float(value)
        except ValueError:
            raise GbdistError(f"parameter {name!r} needs a number", got=value) from None
        if out[name] != out[name]:
            raise GbdistError(f"parameter {name!r} needs a number", got=value)
    return out


def _explanation(args):
    """The Explanation of a metric name or of an expression (after loading --file)."""
    from ..front.library import find_metric
    from ..pairwise import explain
    loaded = None
    if args.file:  # the loader (lark, sympy) only for a metric file
        from ..front import Definitions, load
        loaded = Definitions("<command line>")
        for f in args.file:
            d = load(f)
            loaded.ops.update(d.ops)
            loaded.semirings.update(d.semirings)
            loaded.metrics.update(d.metrics)
            loaded.helpers.update(d.helpers)
    params = _params(args.param)
    if getattr(args, "fills", None) is not None:
        from ..front.library import find_graph
        if find_graph(args.target) is None:
            raise GbdistError("--fills goes with a graph definition", got=args.target)
        params["fills"] = 0 if args.fills == "0" else "absent"
    if find_metric(args.target) is not None or args.target.isidentifier():
        return explain(args.target, **params)  # an unknown name says "unknown metric"
    if params:
        raise GbdistError(f"{args.target!r} is not a metric name, so it takes no parameters",
                          hint="parameters (-p) go with a named metric such as minkowski")
    from ..front import parse_expression
    return explain(parse_expression(args.target, loaded))


def _cuda_source(explanation, dtype: str) -> str:
    try:
        from ..backends.cuda import generate_source
    except ImportError as e:  # the code generator is not part of this installation
        return f"(the CUDA code generator is unavailable: {e})"
    import numpy as np
    try:
        return generate_source(explanation.plan, np.dtype(dtype))
    except GbdistError:
        raise
    except Exception as e:  # a bug in the generator: say so, keep the explanation
        return f"(the CUDA code generator failed: {type(e).__name__}: {e})"


def _is_metric_explanation(explanation) -> bool:
    """A metric's or expression's explanation (stored or made now), not a graph's steps."""
    from ..compiler.stored import StoredExplanation
    if isinstance(explanation, StoredExplanation):
        return True
    from ..compiler.explain import Explanation
    return isinstance(explanation, Explanation)


def _explain(args) -> int:
    explanation = _explanation(args)
    if not _is_metric_explanation(explanation):  # a graph definition's steps (and picture)
        if args.cuda or args.param:
            raise GbdistError(f"{args.target!r} is a graph definition: --cuda and -p go with "
                              "a metric", hint="gbdist explain NAME [--fills 0] [--format F -o FILE]")
        fmt = _format_of(args)
        if fmt in ("svg", "png") and not args.output:
            raise GbdistError(f"--format {fmt} writes a picture: it needs a file",
                              hint=f"add -o FILE.{fmt}")
        _write(args.output, explanation.render(fmt))
        return 0
    if args.cuda:
        explanation = explanation.with_cuda(_cuda_source(explanation, args.dtype))
    from ..compiler.explain_figures import render
    fmt = _format_of(args)
    data = render(explanation, fmt)
    if args.output:
        _write(args.output, data)
        return 0
    if fmt in ("svg", "png"):
        raise GbdistError(f"--format {fmt} writes a picture: it needs a file",
                          hint=f"add -o FILE.{fmt}")
    print(data.decode("utf-8"), end="")
    if (fmt or "text") == "text":  # where the plan would run here (stderr: not part of it)
        import sys

        from ..runtime.core import auto_backend_note
        print(f"note: {auto_backend_note()}", file=sys.stderr)
    return 0


def _format_of(args) -> str:
    """--format, else the output file's suffix, else text."""
    fmt = args.format
    if fmt is None and args.output:
        suffix = args.output.rsplit(".", 1)[-1].lower() if "." in args.output else ""
        fmt = {"txt": "text", "markdown": "md", "htm": "html"}.get(suffix, suffix)
    return fmt if fmt in ("text", "md", "html", "svg", "png") else "text"


def _write(path, data: bytes) -> None:
    if path is None:
        print(data.decode("utf-8"), end="")
        return
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as e:
        raise GbdistError(f"cannot write {path}", got=str(e)) from None


def _check_args(p):
    p.add_argument("file", metavar="FILE", help="a metric file (.gbd)")


def _check(args) -> int:
    from ..front import check, read_source
    reports = check(read_source(args.file), args.file)
    for r in reports:
        print(r)
    bad = sum(not r.ok for r in reports)
    print(f"{len(reports)} definition(s), {bad} with errors")
    return 1 if bad else 0


COMMANDS = [
    ("demo", "run the main job on a generated power-law matrix", _demo_args, _demo),
    ("explain", "show how the compiler evaluates a metric or expression: strategy, proofs, plan",
     _explain_args, _explain),
    ("check", "parse, type-check and prove every definition of a metric file", _check_args, _check),
]


def _metrics_args(p):
    from .listing import add_arguments
    add_arguments(p)


def _metrics(args) -> int:
    from .listing import run
    return run(args)


def _run_args(p):
    from .run import add_arguments
    add_arguments(p)


def _run(args) -> int:
    from .run import run
    return run(args)


COMMANDS += [
    ("metrics", "list the metrics (parameters, aliases, docs) and graph definitions gbdist "
                "knows, with those of --file", _metrics_args, _metrics),
    ("run", "run a graph definition (triangle_count, two_hop_count, ... or one of --file) on a "
            "matrix file", _run_args, _run),
]
COMMANDS += _KNN_COMMANDS  # knn and pairwise own their I/O and progress reporting


def main(argv=None) -> int:
    return run_commands(COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
