"""Shares of a self-join's tiles (``knn_plan(share=(w, W))``, :mod:`gbdist.dask.replicas`):
which tiles worker w of W computes, chosen the same way by every worker without talking
to the others, and tiles made fine enough for the split to come out even."""
from __future__ import annotations


TILES_PER_SHARE = 16
"""A share's tiles: at least this many a share, so that the largest-first split leaves
each within about a tile of the mean (4 GPUs on 66K rows: 15 tiles of gb.knn's size gave
shares of 0.20-0.33 s). Smaller tiles cost nothing in the answer: each pair's distance is
computed alone and the lists merge in a total order."""


def _finer(length: int, step: int, parts: int, share: tuple) -> int:
    """``step``, made small enough to cut ``length`` in ``parts`` when there are shares."""
    return step if share[1] == 1 else min(step, max(1, -(-max(length, 1) // parts)))


def _share(cells, rows: int, width: int, m: int, n: int, w: int, W: int,
           upper: bool = False) -> list:
    """The positions (in visiting order) of share w of W of the tiles ``cells``: the
    largest tile first to the least loaded share (by cells, then share number), so the W
    shares cost about the same even where edge tiles are small. ``upper``: a diagonal tile
    (r0 == c0) is computed on and above its diagonal only (the backend's ``upper``), so it
    counts those cells."""
    def cost(r0, c0):
        h, v = min(m, r0 + rows) - r0, min(n, c0 + width) - c0
        return h * (h + 1) // 2 if upper and r0 == c0 and h == v else h * v
    area = [cost(r0, c0) for r0, c0 in cells]
    load, mine = [0] * W, []
    for t in sorted(range(len(cells)), key=lambda t: (-area[t], t)):
        j = min(range(W), key=lambda j: (load[j], j))
        load[j] += area[t]
        if j == w:
            mine.append(t)
    return sorted(mine)
