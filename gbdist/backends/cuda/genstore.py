"""What the CUDA backend needs of a plan's generated code, without the code generator.

:mod:`.codegen` prints a plan's formulas with sympy. A process that has run the plan before
should not pay for that (DESIGN §6: "sympy and compilers are imported only when something
new must be analysed or compiled"), so this module holds, free of sympy:

* the generator's switches (:data:`DIRECT_UNION` …; ``codegen.X = v`` sets them here) and
  :func:`knobs`, :func:`sums_as_written`, which the runtime reads before any code exists;
* :class:`Generated`, the generated source and what the backend reads beside it;
* its record on disk (:func:`load`, :func:`store`: JSON through :mod:`gbdist.algebra.records`,
  keyed by the plan's structural key, the switches, and a digest of the generator's and the
  kernels' own source files), so a warm process rebuilds a :class:`Generated` from the plan
  and that record alone. The accumulators come back as :class:`StoredAccumulator` (the
  counts the strategy models read), the row reductions as :class:`StoredReduction` (their
  plan step and kind): the kernels' source is in the record, the formulas are not needed.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ...algebra import records
from ...compiler import ir

# Experiment (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md): evaluate all of ⊗ in the storage type
# (float) under float64 accumulation. Not a supported mode: it breaks the accuracy
# bound where a sum cancels before a square root (docs/benchmarks.md).
MUL_IN_STORAGE = False
# A plus summed over the union (the accuracy rule's direct plan) as gather's SKIP_SHARED
# second pass: once wrong on an H200 (minkowski p = 3 off by 1e5 relative), since right
# there (2026-11-27: SciPy's answers for p = 3, 4, 5.8, 8, 30 at offsets 0 to 1e6, and the
# whole GPU suite with the device rule on; the weighted metrics use the pass always). The
# accuracy rule runs on device operands (runtime/accuracy.DEVICE_RULE); a plan this pass
# does not generate (sums_as_written) runs on the CPU under backend="auto" (runtime/core.py).
DIRECT_UNION = True
# ⊗ over float data evaluated in double prints its divisions as gb_div (see CudaPrinter).
# False prints IEEE double divisions (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md compares the two).
FAST_DIV = True
# The dense union's (TM, TN, BK) instantiations: (8, 8, 16) where the accumulators are
# float and one step (a 128 × 128 output tile, 64 registers of accumulators a thread), else
# (4, 4, 32) (dense_strategies._dense_union_tile). Untuned (it measured slower than gather and stays off: dense_strategies.DU_RATES).
DENSE_UNION_TILES = ((8, 8, 16), (4, 4, 32))
# Scatter's registers capped so that 2048 threads (four 512-thread blocks) fit on an SM:
# its kernels are latency-bound on shared-memory atomics, and on an H100 the cap made
# them 3-9% faster in float32 and up to 20% in float64 (which had 40-50 registers),
# a few spilled bytes notwithstanding (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md, 2026-11-24).
SCATTER_FULL_OCCUPANCY = True
# Evaluate the f of a float split (compiler/plan.float_split) in float.
FLOAT_SPLIT = True
SWITCHES = ("MUL_IN_STORAGE", "DIRECT_UNION", "FAST_DIV", "DENSE_UNION_TILES",
            "SCATTER_FULL_OCCUPANCY", "FLOAT_SPLIT")
DEFAULTS = {name: globals()[name] for name in SWITCHES}  # ``del codegen.X`` restores these


def knobs() -> tuple:
    """The code generator's switches (part of the generated-source cache key)."""
    return (MUL_IN_STORAGE, FAST_DIV, SCATTER_FULL_OCCUPANCY, FLOAT_SPLIT)


def sums_as_written(plan) -> bool:
    """Whether the generator takes every plus-over-the-union step of ``plan`` (the
    accuracy rule's direct plan): the pass is on (:data:`DIRECT_UNION`) and each such
    step's corner f(0, 0) is absorbed (else the refusals in ``codegen.generate``)."""
    for s in plan.steps:
        n = s.node
        if not isinstance(n, ir.TwoPassUnion) or n.add.idempotent or n.weight is not None:
            continue
        if not (DIRECT_UNION and n.add.invertible):
            return False
        if not n.corner_absorbed and n.corner != n.add.identity_value:
            return False
    return True


@dataclass
class Generated:
    source: str
    gather: str | None  # Spec struct name, or None when the plan has no product step
    union: bool
    structural: bool
    accumulators: list
    reductions: list
    key: str = field(default="")
    # "dense": per accumulator, ((left map struct, fill), (right map struct, fill)) per rank term
    dense_maps: tuple | None = None
    # "sorted": "desc" (max) or "asc" (min) when the plan is one max/min two-pass union
    sorted_order: str | None = None
    acc_itemsize: int = 4  # bytes of the accumulator type (gb_acc)
    # E when some ⊗ runs a float split: valid where every stored value of the product's
    # operands is 0 or within 2^±E (the backend checks, else runs the source without it)
    split_exponent: int | None = None
    float_split: bool = False  # some ⊗ runs a float split (with or without a range)
    direct_union: bool = False  # a plus over the union: pass 2 skips shared columns
    # the keys of the weighted steps' κ(w) (Bound.weights), in the rows of the weight
    # matrix (NW × K, accumulator type) the gather kernel reads: () for an unweighted plan
    weights: tuple = ()
    # "dense_union" (kernels/dense_union.cuh) can run the plan: see _dense_union_ok
    dense_union: bool = False

    @property
    def masked(self) -> bool:
        """Whether the gather kernel keeps a stored-entry mask of the dense rows (shared
        memory: one byte per column)."""
        return self.structural or self.direct_union

    @property
    def strategies(self) -> tuple[str, ...]:
        """The CUDA strategies this plan can run with."""
        if not self.gather:
            return ()
        out = ["gather"]
        if not self.union:
            out.append("scatter")
        if self.dense_maps is not None:
            out.append("dense")
        if self.sorted_order is not None:
            out.append("sorted")
        if self.dense_union:
            out.append("dense_union")
        return tuple(out)


@dataclass
class StoredAccumulator:
    """An accumulator of a stored :class:`Generated`: the counts of its ⊗'s formula the
    strategy models read (``codegen.Accumulator`` carries the same, beside the formula)."""
    ops: int  # sympy's count_ops of ⊗
    divs: int  # its divisions (negative powers)
    trans: int  # its transcendentals (non-integer powers, exp, log, ...)


@dataclass
class StoredReduction:
    """A row reduction of a stored :class:`Generated`: its plan step and side."""
    step: object  # gbdist.compiler.plan.Step
    kind: str  # col / row


def _tuples(v):
    """JSON lists back to the tuples they were (dense_maps, weight keys)."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


_FIELDS = ("source", "gather", "union", "structural", "key", "sorted_order", "acc_itemsize",
           "split_exponent", "float_split", "direct_union", "dense_union")


def to_record(gen: Generated) -> dict:
    """The JSON record of ``gen`` (its accumulators as their counts, its reductions as their
    steps' names)."""
    rec = {f: getattr(gen, f) for f in _FIELDS}
    rec["dense_maps"] = gen.dense_maps
    rec["weights"] = list(gen.weights)
    rec["accumulators"] = [[a.ops, a.divs, a.trans] for a in gen.accumulators]
    rec["reductions"] = [[r.step.name, r.kind] for r in gen.reductions]
    return rec


def from_record(rec: dict, plan) -> Generated:
    """:func:`to_record`'s inverse for ``plan`` (its steps by name); KeyError or ValueError
    where the record does not fit the plan."""
    steps = {s.name: s for s in plan.steps}
    gen = Generated(**{f: rec[f] for f in _FIELDS},
                    accumulators=[StoredAccumulator(*map(int, a)) for a in rec["accumulators"]],
                    reductions=[StoredReduction(steps[n], str(k)) for n, k in rec["reductions"]])
    gen.dense_maps = None if rec["dense_maps"] is None else _tuples(rec["dense_maps"])
    gen.weights = _tuples(rec["weights"])
    if not isinstance(gen.source, str) or hashlib.sha256(gen.source.encode()).hexdigest()[:16] != gen.key:
        raise ValueError("the stored source does not match its key")
    return gen


_DIGEST: list = []


def _code() -> str:
    """A digest of what the generated source is made from besides the plan: the generator
    (gbdist/backends/cuda), the IR and ops (gbdist/compiler, gbdist/algebra) and the kernel
    templates (kernels/*.cuh)."""
    if not _DIGEST:
        from ...resources import folder
        h = hashlib.sha256(records.code_digest("backends/cuda", "compiler", "algebra").encode())
        for f in sorted(folder("kernels").glob("*.cuh")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _DIGEST.append(h.hexdigest())
    return _DIGEST[0]


def record_key(key) -> str:
    """The record's key for the backend's in-process key of a generated source (the plan's
    structural keys, roles, dtypes, split, :func:`knobs`)."""
    return records.key_of("cuda-generated", repr(key), _code())


def load(key, plan) -> Generated | None:
    """The stored :class:`Generated` of ``key`` for ``plan``, or None (a miss: never raises)."""
    rk = record_key(key)
    rec = records.load(rk, "programs")
    if rec is None:
        return None
    try:
        return from_record(rec, plan)
    except (KeyError, ValueError, TypeError) as e:
        records.discard(rk, e, "programs")
        return None


def store(key, gen: Generated) -> None:
    """Keep ``gen`` under ``key`` on disk (skipped where caching is off)."""
    records.store(record_key(key), to_record(gen), "programs")
