"""Run scikit-learn's and SciPy's installed test files with calls routed to gbdist.

    python tests/compat/run.py                 # the three files, routed
    python tests/compat/run.py --only scipy    # one of them
    python tests/compat/run.py -k cdist        # extra pytest arguments after the options

Prints, per file, how many tests routed at least one call to gbdist and how
many of those passed, then the routed failures grouped by their message. The
peers' files are the ones shipped in the installed wheels (``--pyargs``).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = {
    "scipy": "scipy.spatial.tests.test_distance",
    "pairwise": "sklearn.metrics.tests.test_pairwise",
    "neighbors": "sklearn.neighbors.tests.test_neighbors",
}


def run(module: str, extra=(), route: bool = True, timeout: int = 1800) -> list[dict]:
    """The per-test records of one routed run (see plugin.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.jsonl"
        env = dict(os.environ, GBDIST_ROUTE_REPORT=str(report),
                   GBDIST_ROUTE="1" if route else "0", SKLEARN_RUN_FLOAT32_TESTS="1",
                   PYTHONPATH=os.pathsep.join([str(HERE.parent)]
                                              + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
               "compat.plugin", "--pyargs", *([module] if module else []), *extra]
        subprocess.run(cmd, cwd=tmp, env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if not report.exists():
            raise RuntimeError(f"no report from {' '.join(cmd)}")
        return [json.loads(line) for line in report.read_text().splitlines()]


def summary(records: list[dict]) -> dict:
    routed = [r for r in records if r.get("routed")]
    count = collections.Counter(r["outcome"] for r in routed)
    return {"tests": len(records), "routed": len(routed), "passed": count["passed"],
            "failed": count["failed"], "skipped": count["skipped"],
            "failures": [(r["nodeid"], r.get("message", "")) for r in routed
                         if r["outcome"] == "failed"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=sorted(FILES))
    ap.add_argument("--json", help="write the summaries to this file")
    ap.add_argument("--records", help="write every test's record (JSON lines) to this file")
    args, extra = ap.parse_known_args(argv)
    out, every = {}, []
    for key, module in FILES.items():
        if args.only and key != args.only:
            continue
        records = run(module, extra)
        every += records
        s = summary(records)
        out[key] = s
        print(f"{module}: {s['passed']} of {s['routed'] - s['skipped']} routed tests pass "
              f"({s['routed']} routed of {s['tests']}; {s['skipped']} routed skipped)")
        for nodeid, msg in s["failures"]:
            print(f"    FAIL {nodeid.split('::', 1)[-1]}: {msg[:160]}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    if args.records:
        Path(args.records).write_text("".join(json.dumps(r) + "\n" for r in every))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
