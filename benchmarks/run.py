"""The benchmark runner: one entry point, one section per question.

    python benchmarks/run.py SECTION [options]        # SECTION --help lists its options

Sections (each in its own module; every gbdist result is checked against its peer or a
float64 reference before anything is timed; times are medians):

  latency    benchmarks/latency.py. Small work, as a user waits for it. Fresh processes
             with warm and with empty disk caches (import and first distance, first BFS,
             `gbdist explain`, `gbdist knn` on a file vs the same search in a warm
             process); warm 16- to 1,024-row distances vs scikit-learn (CPU) and cuSPARSE
             SpMM (GPU); mxv, BFS and PageRank on 10^3-10^4 vertices vs SciPy and
             python-graphblas; a fitted NearestNeighbors answering 1,000 single-row
             queries vs scikit-learn. Prints each row against the issue-25 target.
  distances  benchmarks/distances.py. The distance matrix of 2,048 query rows against
             each real data set. GPU (default): vs cuSPARSE (product + norm expansion),
             torch.cdist on dense copies, the paper's naive merge kernel and scikit-learn
             on all cores. `--device cpu`: vs scikit-learn with n_jobs=2 (every named
             metric it computes) and SciPy's cdist (jensenshannon). `--accuracy`: float32
             accuracy of every named metric vs float64 SciPy, and the cost of float64
             accumulation. `--check-peers`: the peers themselves vs a float64 reference.
  knn        benchmarks/knn.py. All-pairs k = 10 nearest neighbours (the self-join). GPU:
             vs the same distance tiles without selection, cuSPARSE + top-k and
             scikit-learn; `--powerlaw`: the 283K x 194K MovieLens-scale matrix.
             `--device cpu`: vs NearestNeighbors(algorithm="brute", n_jobs=2).
  graph      benchmarks/graph.py. gbdist.algorithms and single products on power-law
             graphs of 10^4-10^7 edges vs python-graphblas (SuiteSparse:GraphBLAS), SciPy
             (mxv) and networkx; `--device` adds gbdist's GPU column; `--kernels`: the
             CUDA SpGEMM and SpMV vs cuSPARSE (benchmarks/graph_gpu.py).
  dask       benchmarks/dask_knn.py. gbdist.dask's kNN on a one-GPU cluster vs
             single-process gbdist, answers compared bit for bit.
  pruned     benchmarks/knn_pruned.py. The device pruned kNN (GBDIST_PRUNE=always) vs
             the full device search and cuSPARSE + top-k on issue 29's shapes, answers
             compared on every row, recall vs float64, the stage profile.

Tools:

  data       write the real data sets as .npz (datasets.prepare) for the GPU machine,
             which receives the working tree but not ../shared/data
  report     a distances JSON as the docs table and plot; `--compare BEFORE AFTER`

Options of every section: `--json PATH` writes what the section measured; `--tree PATH`
imports gbdist from another checkout (this runner, its peers and its data stay), so a
before and an after table come from one runner:

    python benchmarks/run.py latency --tree /tmp/base --json before.json
    python benchmarks/run.py latency --json after.json

Libraries shared by the sections: datasets.py (the real sets, the power-law generator),
peers.py (the distance peers and timers), graphs.py and graph_peers.py (graphs and the
python-graphblas algorithms), report.py (tables). benchmarks/gpu_check.sh runs the GPU
tests and a section on the GPU machine; benchmarks/results/ holds the JSON behind
docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import benchmarks  # noqa: E402,F401  (this checkout's benchmarks, bound before any --tree)

# section -> (module, one line for --help)
SECTIONS = {
    "latency": ("benchmarks.latency", "start-up and small calls against their targets"),
    "distances": ("benchmarks.distances", "distance matrices on the real data sets"),
    "knn": ("benchmarks.knn", "all-pairs k nearest neighbours"),
    "graph": ("benchmarks.graph", "graph algorithms and products"),
    "dask": ("benchmarks.dask_knn", "gbdist.dask against one process"),
    "pruned": ("benchmarks.knn_pruned", "pruned vs full kNN on the device (issue 29)"),
    "data": ("benchmarks.datasets", "write .bench_data/ (the prepared data sets)"),
    "report": ("benchmarks.report", "tables and plots from a results JSON"),
}


def use_tree(path: str) -> Path:
    """Import gbdist from the checkout at ``path`` (first on sys.path); its location, or
    SystemExit when gbdist was imported from elsewhere."""
    tree = Path(path).resolve()
    if any(m == "gbdist" or m.startswith("gbdist.") for m in sys.modules):
        raise SystemExit("--tree: gbdist was imported before the tree was set")
    sys.path.insert(0, str(tree))
    import gbdist
    where = Path(gbdist.__file__).resolve().parents[1]
    if where != tree:
        raise SystemExit(f"--tree {tree}: gbdist was imported from {where}")
    return where


def parser(section: str | None) -> argparse.ArgumentParser:
    """The runner's options, with the options of ``section`` (whose module is imported
    here, after --tree has chosen where gbdist comes from)."""
    p = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="section", metavar="SECTION", required=True)
    for name, (module, what) in SECTIONS.items():
        s = sub.add_parser(name, help=what, description=f"{what} ({module}).")
        s.add_argument("--json", default=None, help="write the results to this file")
        s.add_argument("--tree", default=None, metavar="PATH",
                       help="import gbdist from the checkout at PATH")
        if name == section:
            importlib.import_module(module).add_arguments(s)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    head = argparse.ArgumentParser(add_help=False)
    head.add_argument("--tree", default=None)
    tree = head.parse_known_args(argv)[0].tree
    if tree:  # before any section's module imports gbdist
        print(f"gbdist from {use_tree(tree)}", flush=True)
    section = next((a for a in argv if a in SECTIONS), None)
    args = parser(section).parse_args(argv)
    out = importlib.import_module(SECTIONS[args.section][0]).run(args)
    if args.json and out is not None:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        print(f"wrote {args.json}")
    return 1 if isinstance(out, dict) and out.get("failed") else 0


if __name__ == "__main__":
    raise SystemExit(main())
