"""Write the real benchmark datasets as compressed SciPy ``.npz`` files.

The GPU machine has no copy of ``../shared/data`` and receives at most 64 MiB
with the working tree, so the matrices are built here once and carried::

    python benchmarks/prepare_data.py --data-dir ../shared/data --out .bench_data

Each dataset becomes ``<out>/<name>.npz`` (``scipy.sparse.save_npz``,
compressed, float32 values, int32 indices); ``<out>/manifest.json`` holds each
dataset's metadata plus file size and build time.  ``benchmarks.datasets.load``
reads such a directory directly.  ``powerlaw`` is not written: it is generated
on the spot from its seed.

The total is kept under a budget (``--budget-mib``, default 45): if it is
exceeded the script says so and exits non-zero, listing the sizes, so that a
dataset can be left out with ``--names``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import scipy.sparse as sp

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import datasets  # noqa: E402

MIB = 1024 * 1024


def prepare(data_dir, out_dir, names=datasets.REAL_NAMES, log=print) -> dict:
    """Build each dataset from ``data_dir`` and write it to ``out_dir``; return the manifest."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / datasets.MANIFEST
    manifest = {}
    if manifest_path.is_file():
        with open(manifest_path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    for name in names:
        t0 = time.perf_counter()
        m, meta = datasets.load(name, data_dir)
        build_s = time.perf_counter() - t0
        path = out / f"{name}.npz"
        sp.save_npz(path, m, compressed=True)
        meta = dict(meta)
        meta["npz_bytes"] = path.stat().st_size
        meta["build_seconds"] = round(build_s, 2)
        manifest[name] = meta
        log(
            f"{name:13s} {m.shape[0]:>7d} x {m.shape[1]:<7d} nnz {m.nnz:>9d}  "
            f"{meta['npz_bytes'] / MIB:6.2f} MiB  built in {build_s:5.2f} s"
        )
    with open(manifest_path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data", help="raw data directory")
    parser.add_argument("--out", default=".bench_data", help="output directory for the .npz files")
    parser.add_argument(
        "--names",
        nargs="+",
        default=list(datasets.REAL_NAMES),
        choices=list(datasets.REAL_NAMES),
        help="datasets to write (default: all real ones)",
    )
    parser.add_argument("--budget-mib", type=float, default=45.0, help="size limit for the whole directory")
    args = parser.parse_args(argv)

    if datasets.is_prepared_dir(args.data_dir):
        parser.error(f"{args.data_dir} is a prepared directory; give the raw data directory")
    prepare(args.data_dir, args.out, args.names)
    total = sum(p.stat().st_size for p in Path(args.out).iterdir() if p.is_file())
    print(f"total {total / MIB:.2f} MiB in {args.out}")
    if total > args.budget_mib * MIB:
        print(
            f"over the {args.budget_mib:.0f} MiB budget: leave a dataset out with --names",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
