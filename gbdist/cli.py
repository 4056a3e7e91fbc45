"""The ``gbdist`` command: ``demo``, ``explain``, and more subcommands.

Each subcommand is a (name, help, add_arguments, run) entry in COMMANDS, so a
new one is a new entry, not a branch in a dispatch function.
"""
from __future__ import annotations

import argparse
import sys

from .errors import GbdistError


def _demo_args(p):
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the demo")


def _demo(args) -> int:
    from .demo import main
    return main(args.rest)


def _explain_args(p):
    p.add_argument("target", help="a metric name (or, with the DSL, an expression)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="a metric parameter, e.g. -p p=4 for minkowski")


def _params(items):
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            raise GbdistError(f"parameter {name!r} needs a number", got=value) from None
    return out


def _explain(args) -> int:
    from .pairwise import explain
    print(explain(args.target, **_params(args.param)))
    return 0


COMMANDS = [
    ("demo", "run the main job on a generated power-law matrix", _demo_args, _demo),
    ("explain", "show how the compiler evaluates a metric, with proofs and plan", _explain_args, _explain),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gbdist", description="sparse semiring distances")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_, add_args, run in COMMANDS:
        p = sub.add_parser(name, help=help_)
        add_args(p)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except GbdistError as e:
        print(f"gbdist: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
