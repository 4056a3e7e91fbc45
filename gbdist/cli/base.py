"""The runner every ``gbdist`` command table shares: argument parsing, exit codes, errors.

A command table is a list of ``(name, help, add_arguments, run)`` entries;
:func:`run_commands` parses ``argv`` against one and runs the chosen entry.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import GbdistError

EXIT_USAGE = 2  # a bad argument, file or definition (argparse uses 2 as well)
EXIT_INTERNAL = 3  # anything unexpected: a message, not a traceback


# A library message names Python calls; on the command line the same advice is a
# command or an option. Whole phrases only, so nothing else is rewritten.
CLI_TERMS = (
    ("gb.metric_names() lists the known metrics",
     "`gbdist metrics` lists the known metrics, with their parameters and aliases"),
    ("gb.metric_names()", "`gbdist metrics`"),
    ("backend='cpu'", "--backend cpu"),
    ("backend='compiled'", "--backend compiled"),
    ("backend='cuda'", "--backend cuda"),
)


def in_cli_terms(text: str) -> str:
    """A library error's text with its Python calls said the command line's way."""
    for python, cli in CLI_TERMS:
        text = text.replace(python, cli)
    return text


def run_commands(commands, argv=None, description: str = "sparse semiring distances") -> int:
    """Parse ``argv`` against a COMMANDS table and run the chosen entry.

    Exit codes: 0 success; 1 ``check`` found errors; 2 a bad argument, file or
    definition (a :class:`GbdistError`, message on stderr); 3 an unexpected
    error (message on stderr; ``GBDIST_DEBUG=1`` adds the traceback); 130
    interrupted.
    """
    from ..version import __version__
    parser = argparse.ArgumentParser(prog="gbdist", description=description)
    parser.add_argument("--version", action="version", version=f"gbdist {__version__}",
                        help="print the gbdist version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_, add_args, run in commands:
        p = sub.add_parser(name, help=help_, description=help_)
        add_args(p)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, where it is handled, not at exit
        return code
    except GbdistError as e:
        print(f"gbdist: error: {in_cli_terms(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gbdist: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gbdist explain cosine | head`: the reader left; not an error
        import os
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet
        return 0
    except MemoryError:
        print("gbdist: error: out of memory", file=sys.stderr)
        print("Hint: lower --working-memory, or use smaller inputs", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception as e:  # noqa: BLE001 - a bug: say so in one message, not a traceback
        import os
        print(f"gbdist: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        print("This is a bug in gbdist; please report it with the command line. "
              "GBDIST_DEBUG=1 shows the traceback.", file=sys.stderr)
        if os.environ.get("GBDIST_DEBUG"):
            import traceback
            traceback.print_exc()
        return EXIT_INTERNAL


# --- options shared by the commands that run a metric ---------------------------


def add_metric_options(p: argparse.ArgumentParser) -> None:
    """``--metric``, ``--file`` and ``--param`` (with ``-p``) on one parser."""
    p.add_argument("--metric", default="euclidean",
                   help="a metric name: a built-in one (cosine, manhattan, minkowski, ...; "
                        "`gbdist explain NAME` shows how it is computed) or one defined in a "
                        "--file (default euclidean)")
    p.add_argument("--file", "-f", action="append", default=[], metavar="FILE",
                   help="a metric file (.gbd) whose definitions are loaded before --metric is "
                        "looked up (may be repeated; `gbdist check FILE` checks one)")
    p.add_argument("--param", "-p", action="append", default=[], type=param_item,
                   metavar="NAME=VALUE",
                   help="a metric parameter, e.g. --param p=3 for minkowski (may be repeated; "
                        "-p 3 alone sets p)")


def param_item(text: str) -> tuple[str, float]:
    """``"p=3"`` -> ("p", 3.0); a bare number is the parameter ``p`` (``-p 3``)."""
    name, eq, value = text.partition("=")
    if not eq:
        name, value = "p", text
    name = name.strip()
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(
            f"not NAME=VALUE: {text!r} (e.g. --param p=3, or -p 3 for the parameter p)")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"parameter {name!r} needs a number, got {value!r} (e.g. {name}=3 or {name}=inf)") from None
    if number != number:
        raise argparse.ArgumentTypeError(f"parameter {name!r} needs a number, got nan")
    return name, number


def metric_from_args(args) -> tuple[str, dict]:
    """Load ``--file``s, then check ``--metric`` and ``--param`` against each other.

    Returns the metric's name and its parameters. An unknown name or parameter is
    an error that says which names and parameters exist.
    """
    from ..errors import InputError
    from ..front import get_metric, load
    for path in args.file:
        load(path)
    metric = get_metric(args.metric)
    params: dict = {}
    for name, value in args.param:
        if name in params:
            raise InputError(f"the parameter {name!r} is given twice",
                             got=f"{params[name]:g} and {value:g}", hint="give it once")
        params[name] = value
    unknown = sorted(set(params) - set(metric.params))
    if unknown:
        takes = ", ".join(metric.params) or "no parameters"
        raise InputError(f"metric {args.metric!r} has no parameter {unknown[0]!r}",
                         expected=f"{args.metric} takes {takes}", got=", ".join(unknown),
                         hint=("drop --param" if not metric.params else
                               f"e.g. --param {next(iter(metric.params))}=VALUE"))
    missing = [k for k, v in metric.params.items() if v is None and k not in params]
    if missing:
        raise InputError(f"metric {args.metric!r} needs the parameter {missing[0]!r}",
                         hint=f"add --param {missing[0]}=VALUE")
    return args.metric, params


# --- progress -------------------------------------------------------------------


def add_progress_options(p: argparse.ArgumentParser) -> None:
    """``--progress``, ``--quiet`` and ``--verbose``: the bar is on stderr when it is a
    terminal."""
    p.add_argument("--progress", action="store_true",
                   help="show the progress bar (elapsed time, ETA) even when stderr is not a "
                        "terminal (then as plain lines, one every few seconds)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar and no summary line on stderr")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also say where --backend auto runs and why")


def progress(args, total: int, unit: str, desc: str | None = None):
    """A tqdm bar on stderr for ``total`` units: elapsed time, rate and ETA.

    Shown when stderr is a terminal or ``--progress`` is given, never with
    ``--quiet``. tqdm (a dependency) draws it; ``bar.update(n)`` moves it. Into a file
    or a pipe it writes whole lines (every 5 s, and the last state once), not a
    terminal's carriage returns.
    """
    from tqdm import tqdm
    quiet = getattr(args, "quiet", False)
    tty = sys.stderr.isatty()
    shown = not quiet and (getattr(args, "progress", False) or tty)
    return tqdm(total=max(int(total), 1), unit=unit, unit_scale=unit == "pairs", desc=desc,
                file=sys.stderr if tty else _Lines(sys.stderr), disable=not shown,
                dynamic_ncols=tty, leave=True, mininterval=0.1 if tty else 5.0, ascii=not tty)


class _Lines:
    """A file for tqdm that is not a terminal: each state on a line of its own, a state
    equal to the last one written not repeated (tqdm draws the final state twice)."""

    def __init__(self, out):
        self._out = out
        self._last = None

    def write(self, text: str) -> None:
        for part in text.replace("\r", "\n").split("\n"):
            part = part.rstrip()
            if part and part != self._last:
                self._out.write(part + "\n")
                self._last = part

    def flush(self) -> None:
        self._out.flush()


def say_backend(args) -> None:
    """With ``--verbose`` (and not ``--quiet``): what ``--backend auto`` runs on, and why."""
    if getattr(args, "verbose", False) and getattr(args, "backend", "auto") == "auto":
        from ..runtime.core import auto_backend_note
        say(args, f"gbdist: {auto_backend_note()}")


def say(args, text: str) -> None:
    """A summary line on stderr, unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)
