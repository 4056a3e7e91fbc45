"""The built-in metrics: the library file ``gbdist/metrics.gbd``, loaded once.

The metrics are written in gbdist's metric language (see docs/language.md),
so the library is the language's first user and its documentation. Nothing is
special-cased: every metric is an expression over products, reductions and
pointwise functions; the analysis finds the strategies and rewrites.
"""
from __future__ import annotations

from pathlib import Path

LIBRARY = Path(__file__).resolve().parent / "metrics.gbd"


def load_builtins():
    """Parse the library file and register its ops, semirings, helpers and metrics."""
    from .parse import Loader
    loader = Loader(LIBRARY.read_text(encoding="utf-8"), str(LIBRARY), typecheck=False)
    loader.run()
    return loader.commit()
