"""gbdist.dask with a replicated index: each worker searches a share of gb.knn's own tiles.

The reference is single-process gb.knn with the same working memory (the same tiles), bit
for bit; gb.knn itself is tested against SciPy and scikit-learn elsewhere.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sps

distributed = pytest.importorskip("distributed")

import gbdist as gb  # noqa: E402
import gbdist.dask as gbd  # noqa: E402
from datagen import tall_sparse, tied_sparse  # noqa: E402
from gbdist.dask import tasks  # noqa: E402

MiB_SMALL = 0.02  # working memory (MiB) small enough for many tiles per search


N_WORKERS = 3  # the shared ``client`` fixture's cluster (tests/dask/conftest.py)


def _data(m=90, n=24, seed=0, dtype=np.float64):
    return tied_sparse(m, n, seed, dtype)


def _same(a, b, exact=True):
    assert a[0].dtype == b[0].dtype and a[1].dtype == b[1].dtype == np.int64
    np.testing.assert_array_equal(a[1], b[1])
    if exact:
        np.testing.assert_array_equal(a[0], b[0])
    else:
        np.testing.assert_allclose(a[0], b[0], rtol=4 * np.finfo(a[0].dtype).eps, atol=0)


# every named metric with GBDIST_SLOW_TESTS=1; by default a representative few (dot-product
# and union families, a non-symmetric one, column defaults, a row transform)
SOME = ("cosine", "manhattan", "kl_divergence", "jensenshannon", "gower", "haversine")
METRICS = gb.metric_names() if os.environ.get("GBDIST_SLOW_TESTS") == "1" else SOME


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
@pytest.mark.parametrize("metric", METRICS)
def test_every_metric_matches_single_process(client, metric):
    X = _data()
    if metric == "haversine":  # rows (latitude, longitude)
        X = X[:, :2]
    R = gbd.replicate(X, client)
    configs = [(MiB_SMALL, None)]  # many tiles, each worker a share of them
    if metric in ("cosine", "manhattan", "kl_divergence"):  # one tile; no symmetry
        configs += [(None, None), (MiB_SMALL, False), (None, False)]
    for wm, sym in configs:
        # On the CPU, gb.knn may answer from the compiled fused search (no tiles); a
        # share runs the tiles, which may round a distance differently in the last bit
        # (column-scaled or mapped rows). On a GPU both run the same tiles: bit for
        # bit (test_dask_gpu.py).
        _same(gbd.knn(R, k=7, metric=metric, client=client, working_memory=wm,
                      symmetric=sym),
              gb.knn(X, k=7, metric=metric, working_memory=wm, symmetric=sym),
              exact=metric not in ("gower", "gower_mixed", "seuclidean", "mahalanobis"))


def test_shares_partition_the_tiles_and_merge_to_the_whole(client):
    """Each worker computes a disjoint third of the tiles: the shares alone are not the
    answer (each misses candidates), their merge is."""
    X = _data(m=120, seed=2)
    R = gbd.replicate(X, client)
    need = 6
    shares = [tasks.share_knn(X, need, w, 3, "manhattan", {}, "auto", MiB_SMALL, True)
              for w in range(3)]
    whole = gb.knn(X, k=need, metric="manhattan", exclude_self=False, working_memory=MiB_SMALL)
    for d, i in shares:
        assert not np.array_equal(i, whole[1])
    d, i = tasks.merge_shares(need, False, need, *shares)
    assert i.dtype == np.int32  # moved narrow; the client widens them (gbd.knn: int64)
    _same((d, i.astype(np.int64)), whole)
    _same(gbd.knn(R, k=5, metric="manhattan", client=client, working_memory=MiB_SMALL),
          gb.knn(X, k=5, metric="manhattan", working_memory=MiB_SMALL))


def test_partitions_float32_and_params(client):
    X = _data(dtype=np.float32, seed=4)
    R = gbd.replicate(gbd.partition(X, client, partition_rows=[5, 40, 1, 44]), client)
    assert R.n_rows == X.shape[0] and len(R.futures) == 3
    _same(gbd.knn(R, k=5, metric="minkowski", p=3, client=client, working_memory=MiB_SMALL),
          gb.knn(X, k=5, metric="minkowski", p=3, working_memory=MiB_SMALL))


def test_column_defaults_are_whole_matrix_statistics(client):
    """seuclidean's variances and gower's ranges come from all rows: each worker binds the
    whole matrix (the partitioned layout binds blocks, see test_dask.py)."""
    X = _data(seed=5)
    R = gbd.replicate(X, client)
    for metric in ("seuclidean", "gower"):
        _same(gbd.knn(R, k=4, metric=metric, client=client), gb.knn(X, k=4, metric=metric),
              exact=False)  # the CPU fused search vs tiles: see the test above


def test_checks(client):
    X = _data()
    R = gbd.replicate(X, client)
    with pytest.raises(gb.InputError, match="self-join"):
        gbd.knn(R, X, k=3, client=client)
    with pytest.raises(gb.InputError, match="n_neighbors"):
        gbd.knn(R, k=X.shape[0], client=client)
    with pytest.raises(gb.InputError, match="symmetric=True"):
        gbd.knn(R, k=3, metric="kl_divergence", symmetric=True, client=client)
    with pytest.raises(gb.InputError, match="exclude_self"):
        from gbdist.neighbors import knn_plan
        from gbdist.pairwise import metric_program
        from gbdist.runtime import get_backend
        knn_plan(metric_program("euclidean").plan, X, X, 3, get_backend("cpu"), None, True,
                 share=(0, 2))
    try:
        import cupy  # noqa: F401
    except ImportError:  # the answer as CuPy arrays needs CuPy, said before any work
        with pytest.raises(gb.InputError, match="CuPy is not installed"):
            gbd.knn(R, k=3, client=client, to_device=True)


def test_checkpoint_resume(client, tmp_path):
    X = _data()
    R = gbd.replicate(X, client)
    ref = gb.knn(X, k=5, metric="cosine")
    run = gbd.knn_submit(R, k=5, metric="cosine", client=client, checkpoint=str(tmp_path))
    _same(run.result(), ref)
    files = sorted(os.listdir(tmp_path))  # one row block per worker, merged there
    assert len(files) == 3 and run.resumed == []
    os.remove(tmp_path / files[1])  # as if the run had been killed before that block
    run = gbd.knn_submit(R, k=5, metric="cosine", client=client, checkpoint=str(tmp_path))
    assert run.resumed == [0, 2] and sorted(run.futures) == [1]
    _same(run.result(), ref)


def test_worker_killed_mid_run_with_processes():
    X = _data(m=400, seed=3)
    ref = gb.knn(X, k=6, metric="manhattan", working_memory=MiB_SMALL)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        R = gbd.replicate(X, c)
        distributed.wait(R.futures)
        run = gbd.knn_submit(R, k=6, metric="manhattan", client=c, working_memory=MiB_SMALL)
        nanny = next(n for n in cluster.workers.values() if n.worker_address == R.workers[1])
        c.sync(nanny.kill)  # a worker dies with its copy of the index and its share
        _same(run.result(), ref)


@pytest.mark.parametrize("W", [2, 3, 4])
def test_shares_are_even_and_cover_each_tile_once(W):
    """With few tiles of gb.knn's size, shares get finer tiles: together they hold every
    upper-triangle pair once, and no share has more than a tile over the mean (cells
    counted as computed: a diagonal tile on and above its diagonal where the backend takes
    ``upper``)."""
    from gbdist.neighbors.search import Search
    from gbdist.pairwise import metric_program
    from gbdist.runtime import get_backend
    from gbdist.runtime.tiles import takes_upper
    X = _data(m=300, seed=5)
    be = get_backend("cpu")
    half = takes_upper(be)
    budget = 300 * 300 * 16  # gb.knn's side is about the whole matrix: one or two tiles
    seen = np.zeros((300, 300), dtype=np.int64)
    loads = []
    for w in range(W):
        s = Search(metric_program("cosine").plan, X, X, be, budget)
        cells = 0
        for r0, r1, c0, c1, _D in s.symmetric_tiles(share=(w, W)):
            assert c0 >= r0
            seen[r0:r1, c0:c1] += 1
            h = r1 - r0
            cells += h * (h + 1) // 2 if half and r0 == c0 else h * (c1 - c0)
        loads.append(cells)
    upper = np.triu(np.ones((300, 300), dtype=bool))
    assert (seen[upper] == 1).all()
    tile = max(loads) / 8  # at least 8 tiles a share (SYMMETRIC_TILES_PER_SHARE)
    assert max(loads) - min(loads) <= 2 * tile


@pytest.mark.parametrize("n,s,W", [(283_228, 20_724, 4), (283_228, 20_724, 2), (66_000, 8_250, 2),
                                   (66_000, 6_000, 4), (60, 10, 3)])
def test_shares_keep_to_few_column_blocks(n, s, W):
    """Dealt by column block (each block's tiles in one to three runs of rows), a share
    builds the per-slice forms of at most about half the column blocks instead of nearly
    all, and its cells stay within SLACK of the split dealt tile by tile (the paper shapes'
    tilings)."""
    from gbdist.neighbors.shares import SLACK, _deal, _share
    cells = [(r0, c0) for r0 in range(0, n, s) for c0 in range(r0, n, s)]

    def cost(r0, c0):
        h, v = min(n, r0 + s) - r0, min(n, c0 + s) - c0
        return h * (h + 1) // 2 if r0 == c0 and h == v else h * v
    area = [cost(*c) for c in cells]
    shares = [_share(cells, s, s, n, n, w, W, upper=True) for w in range(W)]
    assert sorted(sum(shares, [])) == list(range(len(cells)))  # each tile once
    loads, dealt = _deal([[t] for t in range(len(cells))], area, W)
    assert max(sum(area[t] for t in mine) for mine in shares) <= max(loads) * (1 + SLACK)

    def most(owner):  # the most column blocks one share touches
        return max(len({cells[t][1] for t in mine}) for mine in owner)
    assert most(shares) <= -(-n // s) // 2 + 1  # about half of them, or fewer
    assert most(shares) < most(dealt) or most(dealt) <= 2


class _Mapped:
    """A share's lists as a receiving worker sees them (:class:`gbdist.dask.ipc.Lists`'s
    interface), or as one whose producer cannot be mapped (died, another host)."""

    def __init__(self, d, i, reachable):
        self.d, self.i, self.reachable = d, i, reachable
        self.shape = d.shape

    def rows(self, a, z):
        from gbdist.dask.ipc import Unreachable
        if not self.reachable:
            raise Unreachable("gone")
        return self.d[a:z].copy(), self.i[a:z].copy()


@pytest.mark.parametrize("metric", ["manhattan", "cosine"])
def test_unmappable_share_is_recomputed_from_the_replica(metric):
    """The GPU-to-GPU merge's way out: a share that cannot be mapped is recomputed on the
    merging worker from its own replica, and the rows merged are gb.knn's, bit for bit."""
    from gbdist.dask import tasks
    X, W, k = _data(m=120, seed=7), 3, 5
    common = (metric, {}, "cpu", MiB_SMALL, True)
    shares = [tasks.share_knn(X, k + 1, w, W, *common) for w in range(W)]
    edges = np.linspace(0, X.shape[0], W + 1).round().astype(int)
    for gone in (set(), {1}, {0, 2}):
        lists = [_Mapped(d, i, w not in gone) for w, (d, i) in enumerate(shares)]
        parts = [tasks.merge_lists(k, True, k + 1, int(a), int(z), X, W, common, *lists)
                 for a, z in zip(edges[:-1], edges[1:])]
        got = (np.concatenate([p[0] for p in parts]),
               np.concatenate([p[1] for p in parts]).astype(np.int64))
        _same(got, gb.knn(X, k=k, metric=metric, working_memory=MiB_SMALL))


_GONE: set = set()  # the shares that cannot be mapped, read when a share is (module state:
# a share's copy, pickled on its way to the client, reads the same set)


class _Share(_Mapped):
    """A share as this process maps it, gone or not when it is read (:data:`_GONE`)."""

    def __init__(self, d, i, w):
        super().__init__(d, i, True)
        self.w = w

    def rows(self, a, z):
        self.reachable = self.w not in _GONE
        return super().rows(a, z)


def test_the_client_merges_every_share_or_hands_the_merge_back(client, monkeypatch, tmp_path):
    """The answer wanted here, the workers on this host (``to_device``): this process maps
    each share as it finishes and merges them itself, with no merge task; gb.knn's answer
    bit for bit. A share it cannot map (its worker died, another host) hands the merge back
    to the workers, which recompute that share from their replica: the same answer. Each
    block is checkpointed as the blocks of the other paths are."""
    from gbdist.dask import replicas, search
    X, k = _data(m=150, seed=5), 5
    R = gbd.replicate(X, client)
    def share_lists(X, need, w, W, *common):
        return _Share(*tasks.share_knn(X, need, w, W, *common), w)

    monkeypatch.setattr(tasks, "share_lists", share_lists)
    ref = gb.knn(X, k=k, metric="manhattan", working_memory=MiB_SMALL)
    common = ("manhattan", {}, "cpu", MiB_SMALL, True, None)
    rows = replicas.blocks(R)
    for lost, ck in ((set(), None), ({1}, None), (set(), str(tmp_path))):
        _GONE.clear()
        _GONE.update(lost)
        submit, collect = replicas._knn_client_merge(R, k, k + 1, True, common, client)
        run = search._start(client, "knn", rows, rows, "manhattan", {}, (k, repr(lost)), ck,
                            submit, search._widened)
        run.collect = collect
        assert sorted(run.futures) == list(range(N_WORKERS))
        _same(run.result(), ref)
        # handed back: every block's rows merged on its worker, else no merge task
        assert all(f.key.startswith("merge_lists" if lost else "share_lists")
                   for f in run.futures.values())
    saved = sorted(os.listdir(tmp_path))
    assert len(saved) == N_WORKERS
    run = search._start(client, "knn", rows, rows, "manhattan", {}, (k, repr(set())),
                        str(tmp_path), submit, search._widened)
    assert run.resumed == list(range(N_WORKERS)) and not run.futures
    _same(run.result(), ref)


@pytest.mark.parametrize("metric", ["cosine", "manhattan"])
def test_pruned_replicated_search_splits_rows(client, metric):
    """Where gb.knn takes the pruned search, each worker runs it over its rows of the whole
    replica (final lists, nothing merged): gb.knn's answer bit for bit."""
    from gbdist.dask import tasks
    X = tall_sparse()
    assert tasks.prunes(X, metric, {}, "cpu", None)  # the data is what the test is about
    R = gbd.replicate(X, client)
    _same(gbd.knn(R, k=6, metric=metric, client=client), gb.knn(X, k=6, metric=metric))
    assert list(R.decisions.values()) == [True]
    _same(gbd.knn(R, k=6, metric=metric, client=client, exclude_self=False),
          gb.knn(X, X, k=6, metric=metric))


@pytest.mark.parametrize("metric", ["manhattan", "hellinger"])
def test_the_accuracy_rule_runs_once_per_replica(client, metric, monkeypatch):
    """The accuracy rule's statistics are gathered once per replica and metric (on one
    worker, over the whole index) and every share then runs the decided plan: before, each
    share of each call gathered them over the whole index again (a sort of every stored
    column index on the device). Same answer as gb.knn."""
    from gbdist.runtime import accuracy
    calls = []
    real = accuracy.column_stats
    monkeypatch.setattr(accuracy, "column_stats", lambda x: calls.append(x.shape) or real(x))
    X = _data(m=120, seed=3)
    ref = gb.knn(X, k=5, metric=metric, working_memory=MiB_SMALL)
    R = gbd.replicate(X, client)
    calls.clear()
    for _ in range(2):
        _same(gbd.knn(R, k=5, metric=metric, client=client, working_memory=MiB_SMALL), ref,
              exact=False)
    assert calls == [X.shape]  # the whole replica's, once (3 shares x 2 calls before)
    assert len(R.choices) == 1


def test_a_row_block_runs_the_whole_replicas_decision():
    """The pruned layout's row blocks (queries a:z against the whole replica) run the
    decision made on the whole replica, not one made from the block's own statistics."""
    from gbdist.compiler import accuracy as rule
    from gbdist.dask.accuracy import plan_for, whole
    X = tall_sparse()
    choice = whole(X, "manhattan", {})
    plan = plan_for("manhattan", {}, choice)
    assert choice is None or isinstance(plan, rule.Decided) or not rule.guards(plan)
    d, i = tasks.rows_knn(X, 6, 10, 40, 5, True, "manhattan", {}, "cpu", None, False, choice)
    ref = gb.knn(X, k=5, metric="manhattan")
    _same((d, i.astype(np.int64)), (ref[0][10:40], ref[1][10:40]), exact=False)


def test_replicate_waits_for_workers_a_client_does_not_list_yet(monkeypatch):
    """A client that lists no worker yet (a cluster just started, a lost worker being
    replaced; one full CI run failed so) is waited on for one; one that stays empty is an
    InputError after the wait."""
    from gbdist.dask import replicas

    class Client:
        def __init__(self, arrives):
            self.arrives, self.waited, self.seen = arrives, [], {}

        def scheduler_info(self):
            return {"workers": self.seen}

        def wait_for_workers(self, n, timeout):
            self.waited.append((n, timeout))
            if not self.arrives:
                raise TimeoutError
            self.seen = {"inproc://w1": {}, "inproc://w0": {}}

    c = Client(arrives=True)
    assert replicas._workers(c, None) == ["inproc://w0", "inproc://w1"]
    assert c.waited == [(1, replicas.WAIT_FOR_WORKERS_S)]
    c = Client(arrives=False)
    with pytest.raises(gb.InputError, match="no worker"):
        replicas._workers(c, None)
    assert len(c.waited) == 1
    assert replicas._workers(Client(arrives=False), ["tcp://x"]) == ["tcp://x"]  # named: no wait
