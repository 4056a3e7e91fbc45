"""The table of docs/benchmarks.md "2026-11-27 (k) … the power law's unmasked mxm" from the JSON lines:
    python cpu2-2026-11-27k-hE1-mxm-summary.py cpu2-2026-11-27k-hE1-mxm.jsonl"""
import json, statistics as st, sys
rows=[json.loads(l) for l in open(sys.argv[1])]
for T in (1,2):
    for lab in ("before","after","before-b"):
        g=[r for r in rows if r['label']==lab and r['threads']==T and r['side']=='gbdist']
        p=[r for r in rows if r['label']==lab and r['threads']==T and r['side']=='peer']
        if not g: continue
        peers = p or [r for r in rows if r['label']=='after' and r['threads']==T and r['side']=='peer']
        gm=[r['median_s'] for r in g]; pm=[r['median_s'] for r in peers]
        ratios=[a/b for a,b in zip(gm,pm)]
        fr=[a['first_s']/b['first_s'] for a,b in zip(g,peers)]
        print(f"T={T} {lab:8s} gbdist medians {[round(x,2) for x in gm]} peer{'' if p else ' (after runs)'} {[round(x,2) for x in pm]} "
              f"ratios {[round(x,2) for x in ratios]} median-of-medians {st.median(gm):.2f}/{st.median(pm):.2f}={st.median(gm)/st.median(pm):.2f} "
              f"first {[round(r['first_s'],2) for r in g]}/{[round(r['first_s'],2) for r in peers]} "
              f"peak MiB {st.median(r['peak_hwm_mib'] for r in g):.0f}/{st.median(r['peak_hwm_mib'] for r in peers):.0f}="
              f"{st.median(r['peak_hwm_mib'] for r in g)/st.median(r['peak_hwm_mib'] for r in peers):.2f} "
              f"loads {min(min(r['load_before'][0],r['load_after'][0]) for r in g+p):.2f}-{max(max(r['load_before'][0],r['load_after'][0]) for r in g+p):.2f}")
print("digests equal:", len({(r['nnz'],r['rows_sha'],r['cols_sha'],r['values_bits_sha'],r['values_1e9_sha'],r['row_sums_1e9_sha']) for r in rows})==1, len(rows), "processes")
