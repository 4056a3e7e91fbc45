"""The ``gbdist`` command, one module per group of subcommands.

- ``base``: the shared runner (argument parsing, exit codes, one-line errors).
- ``main``: the entry point; ``demo``, ``explain``, ``check``, and the table of all commands.
- ``knn``: ``knn`` and ``pairwise`` (file I/O, progress, memory budgets in bytes).
- ``demo``: the README's main job on a generated power-law matrix.

The top stage: it may import anything below it and nothing imports it.
"""
