"""Shares of a self-join's tiles (``knn_plan(share=(w, W))``, :mod:`gbdist.dask.replicas`):
which tiles worker w of W computes, chosen the same way by every worker without talking
to the others, and tiles made fine enough for the split to come out even."""
from __future__ import annotations


TILES_PER_SHARE = 16
"""A share's tiles: at least this many a share, so that the largest-first split leaves
each within about a tile of the mean (4 GPUs on 66K rows: 15 tiles of gb.knn's size gave
shares of 0.20-0.33 s). Smaller tiles cost nothing in the answer: each pair's distance is
computed alone and the lists merge in a total order."""


SYMMETRIC_TILES_PER_SHARE = 8
"""The symmetric self-join's shares: at least this many tiles a share, over an even
number of row blocks (an even count splits the upper triangle's cells evenly over 2 and 4
shares; 11 blocks left the largest of 4 shares 2.5% over the mean). Fewer, larger tiles
than 16 a share: on the dense paper shape (66K x 26K, 7%) four shares of 6,000-row tiles
took 13% more worker time in all than gb.knn's 20,724-row tiles."""


def _finer(length: int, step: int, parts: int, share: tuple) -> int:
    """``step``, made small enough to cut ``length`` in ``parts`` when there are shares."""
    return step if share[1] == 1 else min(step, max(1, -(-max(length, 1) // parts)))


SLACK = 0.005
"""How much more than the most even split's largest share (by cells) a split may give to
keep each share on fewer column blocks (:func:`_share`)."""


def _share(cells, rows: int, width: int, m: int, n: int, w: int, W: int,
           upper: bool = False) -> list:
    """The positions (in visiting order) of share w of W of the tiles ``cells``: the
    largest first to the least loaded share (by cells, then share number), so the W shares
    cost about the same even where edge tiles are small. ``upper``: a diagonal tile
    (r0 == c0) is computed on and above its diagonal only (the backend's ``upper``), so it
    counts those cells.

    Dealt tile by tile, a share touches nearly every column block, and each column block it
    touches costs it that block's per-slice forms (the index slice's Bᵀ, its orders:
    ``kept.Kept``, built once per call and share; 0.6-1.1 ms a block on an H200, 9-17 ms a
    share on the paper shapes). So the tiles are also dealt by column, each column block's
    tiles in 1, 2 or 3 runs of rows, and the split that keeps shares on the fewest column
    blocks is taken among those whose largest share is within :data:`SLACK` of the most
    even one's."""
    def cost(r0, c0):
        h, v = min(m, r0 + rows) - r0, min(n, c0 + width) - c0
        return h * (h + 1) // 2 if upper and r0 == c0 and h == v else h * v
    area = [cost(r0, c0) for r0, c0 in cells]
    splits = [_deal([[t] for t in range(len(cells))], area, W)]
    columns: dict = {}
    for t in sorted(range(len(cells)), key=lambda t: (cells[t][1], cells[t][0])):
        columns.setdefault(cells[t][1], []).append(t)
    for runs in (1, 2, 3):
        splits.append(_deal([g for ts in columns.values() for g in _cut(ts, runs)], area, W))
    even = min(max(load) for load, _ in splits)

    def blocks(owner):  # the most column blocks one share touches
        return max(len({cells[t][1] for t in mine}) for mine in owner)
    fits = [owner for load, owner in splits if max(load) <= even * (1 + SLACK)]
    return sorted(min(fits, key=blocks)[w])


def _cut(ts: list, runs: int) -> list:
    """``ts`` in min(runs, len(ts)) consecutive runs of near-equal length."""
    r = min(runs, len(ts))
    return [ts[j * len(ts) // r:(j + 1) * len(ts) // r] for j in range(r)]


def _deal(groups: list, area: list, W: int) -> tuple:
    """(loads, owners): each group of tiles, largest first (then by its first tile), to
    the least loaded of W shares (then the lowest numbered)."""
    load, owner = [0] * W, [[] for _ in range(W)]
    for g in sorted(groups, key=lambda g: (-sum(area[t] for t in g), min(g))):
        j = min(range(W), key=lambda j: (load[j], j))
        load[j] += sum(area[t] for t in g)
        owner[j] += g
    return load, owner
