"""The table of 2026-11-28b-upper_tiles.py's JSON lines (stdin) and the two trees' answers
(OUT/knn-base*.npz against OUT/knn-new*.npz): indices identical, largest distance gap."""
import collections, glob, json, os, sys
import numpy as np
OUT = os.environ.get("OUT", "/tmp")
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
t = collections.defaultdict(list); strat = {}
for r in rows:
    t[(r["data"], r["metric"], r["tree"].rstrip("0123456789"))].append(r["ms"])
    strat[(r["data"], r["metric"], r["tree"].rstrip("0123456789"))] = r["strategy"]
a = np.load(sorted(glob.glob(f"{OUT}/knn-base*.npz"))[0]); b = np.load(sorted(glob.glob(f"{OUT}/knn-new*.npz"))[0])
print("| data | metric | base ms | new ms | new/base | new / cosine | strategy | indices equal | max |Δd| |")
print("|---|---|---|---|---|---|---|---|---|")
for (data, metric) in dict.fromkeys((k[0], k[1]) for k in t):
    base, new = min(t[(data, metric, "base")]), min(t[(data, metric, "new")])
    cos = min(t[(data, "cosine", "new")])
    key = f"{data}/{metric}"
    same = float((a[key + "/i"] == b[key + "/i"]).mean())
    gap = float(np.nanmax(np.abs(a[key + "/d"].astype(np.float64) - b[key + "/d"])))
    print(f"| {data} | {metric} | {base:.2f} | {new:.2f} | {new / base:.2f} | {new / cos:.2f} | "
          f"{strat[(data, metric, 'new')]} | {same:.4f} | {gap:.2g} |")
