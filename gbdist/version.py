"""The gbdist version: one place, read by the package, the caches and pyproject.toml."""

__version__ = "0.1.0"
