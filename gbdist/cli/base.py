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
        return args.run(args)
    except GbdistError as e:
        print(f"gbdist: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gbdist: interrupted", file=sys.stderr)
        return 130
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
