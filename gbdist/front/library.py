"""The library of names as users see it: the built-in metrics first, then what
users add (``gb.define``, ``gb.load``, ``gb.define_metric``).

The built-in metrics are the library file ``metrics.gbd`` beside this module,
written in gbdist's metric language (docs/language.md): the language is its
own first user. :func:`ensure_builtins` reads it once, through the same
:class:`~gbdist.front.loader.Loader` as any user text, which registers into
:mod:`gbdist.names`. Every lookup by name that must see the built-ins
(:func:`get_metric`, :func:`metric_names`, :func:`define`, ...) goes through
here; :mod:`gbdist.names` itself never reaches up to load them.

**Paying once per installation** (docs/cpu.md, "Start-up"). Reading the library means
lark (parsing) and sympy (the op formulas): about a tenth of a second, every process.
What a process that only *uses* the built-in metrics needs is stored instead, in records
keyed by the library's text, the code that reads and compiles it, gbdist's and sympy's
versions (:mod:`gbdist.algebra.records`: bounded read, digest, atomic write):

* the built-in metrics' names, parameters, docs and aliases (:func:`ensure_names`, the
  *index*): each is registered as a :class:`~gbdist.names.Metric` whose ``build`` is a
  :class:`LibraryBody`, which reads the library only when the metric's expression is built;
* each built-in metric's compiled plan, per parameter values (with their types: p=1 and
  p=1.0 are two entries) (:func:`builtin_plan`; :mod:`gbdist.compiler.stored`);
* each built-in metric's explanation as rendered text (:func:`stored_explanation`).

A name a user redefines (``gb.define_metric(..., replace=True)``) is no longer the library's
metric, so nothing stored for it is used. Any damage to a record is a miss: the library is
read and the record written again.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Callable

from ..compiler import ir
from .. import names
from . import colparams
from ..algebra import records
from ..errors import ArityError, DefinitionError, GbdistError, InputError, TypeCheckError
from ..names import Metric

LIBRARY = Path(__file__).resolve().parent / "metrics.gbd"
GRAPH_LIBRARY = LIBRARY.with_name("graph.gbd")  # graph definitions (triangle_count, ...)

FORMAT = 1  # of the stored index, plans and explanations
KIND = "programs"  # the cache folder (gbdist.paths.cache_dir) of every record here
# the code a stored record derives from: reading the library, compiling, naming
_CODE = ("algebra", "compiler", "front", "names.py")
# ... and what an explanation adds: the runtime's numeric checks it reports
_EXPLAIN_CODE = _CODE + ("runtime", "backends", "inputs.py", "pairwise.py")

_LOADED = False  # the texts were read: every definition built, the library's tier registered
_NAMED = False  # the built-in metrics are registered by name
_DEFINED: dict = {}  # metric name -> the library's own Metric (after the texts were read)
_COMMITTED: list = []  # the Loader of each text, to register its names again (restore)
# held while the library is read or its names registered: another thread (a Dask worker)
# waits for them instead of finding them half made; re-entered by the thread reading it
_LOCK = threading.RLock()


class LibraryBody:
    """The ``build`` of a built-in metric: the library's own definition, read from the
    library's text when the metric's expression is first built."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, A, B, **params):
        return definition(self.name).build(A, B, **params)

    def __repr__(self) -> str:
        return f"<built-in metric {self.name!r} of {LIBRARY.name}>"

    def __reduce__(self):
        return LibraryBody, (self.name,)


def definition(name: str) -> Metric:
    """The library's own definition of the built-in metric ``name`` (reads the library)."""
    ensure_builtins()
    return _DEFINED[name]


def is_builtin(metric: Metric) -> bool:
    """Whether ``metric`` is the built-in library's (not a user's of the same name)."""
    return isinstance(metric.build, LibraryBody)


_TEXTS: dict = {}


def _texts() -> dict:
    """source name -> text of the two library files (the spans of stored plans point there)."""
    if not _TEXTS:
        _TEXTS.update((str(p), p.read_text(encoding="utf-8")) for p in (LIBRARY, GRAPH_LIBRARY))
    return _TEXTS


_DIGEST: list = []


def library_digest() -> str:
    """What every stored record of the library is keyed on: the two texts and the code
    that reads and compiles them (:func:`gbdist.algebra.records.code_digest`)."""
    if not _DIGEST:
        h = hashlib.sha256(records.code_digest(*_CODE).encode())
        for path in (LIBRARY, GRAPH_LIBRARY):
            h.update(path.read_bytes())
        _DIGEST.append(h.hexdigest())
    return _DIGEST[0]


def ensure_builtins() -> None:
    """Read the built-in libraries (``metrics.gbd``, ``graph.gbd``) once: every definition
    is built and the library's ops, semirings, helpers and graphs are registered (again,
    if :func:`gbdist.names.restore` dropped them). Needed by anything that reads
    definitions (users' texts, ``describe``, graph definitions); a lookup of a built-in
    metric by name needs only :func:`ensure_names`."""
    with _LOCK:
        _ensure_builtins()


def _ensure_builtins() -> None:
    global _LOADED
    if _LOADED:
        if _COMMITTED and names.library_name(next(iter(_COMMITTED[0].defs.helpers), "")) is None:
            for loader in _COMMITTED:  # names.restore() went back to before the library
                loader.commit(library=True, metrics=False)
        ensure_names()
        return
    _LOADED = True
    from .loader import Loader
    for path in (LIBRARY, GRAPH_LIBRARY):
        loader = Loader(path.read_text(encoding="utf-8"), str(path), typecheck=path != LIBRARY)
        loader.run()
        loader.commit(library=True, metrics=False)  # helpers (nnz, ...) leave the names to users
        _COMMITTED.append(loader)
        _DEFINED.update(loader.defs.metrics)
    if not _NAMED:
        entries = [(m.name, dict(m.params), m.doc, tuple(m.aliases)) for m in _DEFINED.values()]
        records.store(_index_key(), {"metrics": [[n, colparams.defaults_json(p), d, list(a)]
                                                 for n, p, d, a in entries]}, KIND)
        _register(entries)


def _index_key() -> str:
    return records.key_of("front.library.index", FORMAT, library_digest())


def ensure_names() -> None:
    """Register the built-in metrics by name (with their parameters, docs and aliases):
    from the stored index when there is a good one (no lark, no sympy), else by reading
    the library (:func:`ensure_builtins`), which stores the index for later processes."""
    if _NAMED and _ENTRIES and names.find_metric(_ENTRIES[0][0]) is not None:
        return  # the common case, without the lock
    with _LOCK:
        _ensure_names()


def _ensure_names() -> None:
    if _NAMED:
        if _ENTRIES and names.find_metric(_ENTRIES[0][0]) is None:
            _register(_ENTRIES)  # names.restore() went back to before the library
        return
    entries = None
    key = _index_key()
    found = records.load(key, KIND)
    if found is not None:
        try:
            entries = _read_index(found)
        except Exception as e:  # noqa: BLE001 - a bad record is a miss, never an error
            records.discard(key, e, KIND)
    if entries is None:
        ensure_builtins()
    else:
        _register(entries)


def _read_index(record: dict) -> list:
    out = []
    for name, params, doc, aliases in record["metrics"]:
        if not (isinstance(name, str) and name.isidentifier() and isinstance(doc, str)
                and isinstance(params, dict) and isinstance(aliases, list)):
            raise ValueError("a malformed entry in the stored library index")
        params = colparams.defaults_from_json(params)  # column operands' defaults too
        for k, v in params.items():
            if not k.isidentifier() or not (v is None or type(v) in (int, float)
                                            or isinstance(v, ir.ColVector)):
                raise ValueError("a malformed parameter in the stored library index")
        if not all(isinstance(a, str) and a.isidentifier() for a in aliases):
            raise ValueError("a malformed alias in the stored library index")
        out.append((name, params, doc, tuple(aliases)))
    if not out:
        raise ValueError("an empty stored library index")
    return out


_ENTRIES: list = []  # what was registered: (name, params, doc, aliases) of each metric


def _register(entries) -> None:
    global _NAMED
    for name, params, doc, aliases in entries:
        names.register_metric(Metric(name, LibraryBody(name), dict(params), doc, str(LIBRARY),
                                     tuple(aliases)), replace=True)
    _ENTRIES[:] = entries  # then the flag: a thread that sees it finds every name
    _NAMED = True


def builtin_plan(name: str, params: tuple, roles: dict, compile_expr: Callable):
    """The plan of the built-in metric ``name`` with ``params`` (((name, type, value), ...),
    as ``pairwise`` keys them): read from its stored record when there is a good one, else
    ``compile_expr(expression, roles)`` (a Program) and stored for the next process."""
    from ..compiler import stored
    key = records.key_of("front.library.plan", FORMAT, library_digest(), name,
                         [(k, t.__name__, repr(v)) for k, t, v in params])
    found = records.load(key, KIND)
    if found is not None:
        try:
            return stored.read_plan(found["plan"], _texts())
        except Exception as e:  # noqa: BLE001 - a bad record is a miss, never an error
            records.discard(key, e, KIND)
    expr = names.get_metric(name).expression(**{k: v for k, _, v in params})
    mark = records.cut_short()
    plan = compile_expr(expr, roles).plan
    try:
        records.store(key, {"plan": stored.plan_record(plan, roles)}, KIND, since=mark)
    except stored.Unsupported:
        pass  # a part with no stored form: compiled in every process
    return plan


def stored_explanation(name: str, params: dict, compute: Callable):
    """The explanation of the built-in metric ``name`` with ``params``: its renderings from
    the stored record when there is one (a :class:`~gbdist.compiler.stored.StoredExplanation`:
    the text with its proofs, without sympy), else ``compute()`` now (so that an error is
    raised here) with its renderings stored as they are made."""
    from ..compiler.stored import StoredExplanation, read_renderings
    key = records.key_of("front.library.explanation", FORMAT, library_digest(),
                         records.code_digest(*_EXPLAIN_CODE), name,
                         [(k, type(v).__name__, repr(v)) for k, v in params.items()])

    mark = records.cut_short()

    def store(renderings: dict) -> None:
        records.store(key, {"renderings": renderings}, KIND, since=mark)

    found = records.load(key, KIND)
    if found is not None:
        try:
            return StoredExplanation(read_renderings(found), compute, store)
        except Exception as e:  # noqa: BLE001 - a bad record is a miss, never an error
            records.discard(key, e, KIND)
    return StoredExplanation({}, compute, store, real=compute())


def find_graph(name):
    """The graph definition called ``name`` (a user's, or the built-in library's), or None."""
    from .graphdef import GraphDef
    ensure_builtins()
    thing = names.lookup(name) if isinstance(name, str) else None
    return thing if isinstance(thing, GraphDef) else None


def graph_names() -> list[str]:
    """The names of every graph definition, sorted."""
    from .graphdef import GraphDef
    ensure_builtins()
    return sorted(n for n in set(names.known_names()) if isinstance(names.lookup(n), GraphDef))


def find_metric(name) -> Metric | None:
    """The metric called ``name`` (or an alias of it; case-insensitive), or None."""
    ensure_names()
    return names.find_metric(name)


def get_metric(name) -> Metric:
    """The metric called ``name``; an UnknownNameError (with a close match) if there is none."""
    ensure_names()
    return names.get_metric(name)


def metric_names() -> list[str]:
    """The names of every metric, built-in and user-defined, sorted (``gb.metric_names()``)."""
    ensure_names()
    return names.metric_names()


def define_metric(name: str, fn: Callable, doc: str = "", replace: bool = False,
                  aliases: tuple = ()) -> Metric:
    """Register ``fn(A, B, **params)`` as a named metric usable everywhere.

    ``fn`` is called on symbolic operands and returns an expression, e.g. an
    ``mxm`` of ``A`` and ``B.T`` over a semiring (docs/api.md).
    """
    ensure_names()  # a built-in name is then taken whatever the order of calls
    m = names.python_metric(name, fn, doc, aliases)
    built = _refuse_matrix_parameters(m)
    if all(v is not None for v in m.params.values()):
        try:
            built = m.expression()  # build once, so a broken definition fails here
        except (GbdistError, RecursionError, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - the user's function failed: typed, named
            raise DefinitionError(f"metric {name!r}: its function raised {type(e).__name__}",
                                  got=str(e)[:200],
                                  hint="it is called once with symbolic operands A and B and "
                                       "returns an expression over them (docs/api.md)") from None
    _refuse_free_operands(m, built)
    return names.register_metric(m, replace=replace)


def _refuse_free_operands(m: Metric, expr) -> None:
    """A metric's expression reads A and B only: a matrix or vector it takes from
    elsewhere (``C, D = gb.matrices("C D")`` outside the function) would be an operand no
    call can give, so the definition is refused here, not when it first runs."""
    if not isinstance(expr, ir.Node):
        return
    free = [n.name for n in ir.walk(expr) if isinstance(n, (ir.Matrix, ir.Vector))
            and n.name not in ("A", "B") and n.name not in m.params]
    if free:
        free = sorted(set(free))
        raise DefinitionError(
            f"metric {m.name!r} reads {', '.join(free)}, "
            f"{'which is' if len(free) == 1 else 'which are'} not among its operands: a "
            "metric takes exactly two matrix operands, A (the output's rows) and B (its "
            "columns), both with the same k columns",
            expected="an expression over the function's own A and B (lambda A, B: ...)",
            got=f"{len(free) + 2} operands: A, B, {', '.join(free)}",
            hint="use the function's arguments A and B in place of matrices made outside it; "
                 "for more operands, gb.compile(expr) runs with every operand by name "
                 "(program(A=..., B=..., C=...)), all of them with the same k columns")


def _refuse_matrix_parameters(m: Metric) -> None:
    """A metric takes exactly two matrix operands, A and B; what follows them are numbers.
    A parameter without a default that the function uses as a matrix (a third operand) is
    refused here, at definition, rather than when the metric runs: the function is called
    once with that parameter as a symbolic matrix, and the expression it returns is read."""
    required = [k for k, v in m.params.items() if v is None]
    if not required:
        return None
    probes = {k: ir.Matrix(k) for k in required}
    try:
        out = m.build(ir.Matrix("A"), ir.Matrix("B"), **probes)
    except Exception:  # noqa: BLE001 - a numeric use of the parameter: nothing to say
        return None
    used = sorted(_matrix_uses(out) & set(required)) if isinstance(out, ir.Node) else []
    if used:
        raise DefinitionError(
            f"metric {m.name!r} uses {', '.join(used)} as a matrix: a metric takes exactly two "
            "matrix operands, A (the output's rows) and B (its columns); the parameters after "
            "them are numbers",
            expected="fn(A, B, **numbers), e.g. lambda A, B, p=2: ...",
            got=f"{len(required) + 2} operands",
            hint="compute several operands into one (concatenate their columns), or compile the "
                 "expression with gb.compile(expr, roles) and run it with every operand by name")
    read = {n.name for n in ir.walk(out) if isinstance(n, ir.Matrix)} if isinstance(out, ir.Node) \
        else set(required)
    unread = [k for k in required if k not in read]
    if unread:  # lambda A, B, C, D: ... that never reads C, D: a call would have to pass them
        raise ArityError(
            f"metric {m.name!r} takes {len(m.params) + 2} arguments, but its expression never "
            f"reads {', '.join(unread)}: every call would have to pass "
            f"{'it' if len(unread) == 1 else 'them'} for nothing",
            expected="fn(A, B) with two matrix operands, then the numeric parameters the "
                     "expression uses (with defaults where they are optional)",
            got=f"fn({', '.join(['A', 'B', *m.params])})",
            hint=f"drop {', '.join(unread)} from the function's arguments, or give "
                 f"{'it a default' if len(unread) == 1 else 'them defaults'}")
    return out


def _matrix_uses(expr: ir.Node) -> set:
    """The names used as matrices in ``expr``: products' and reductions' operands."""
    out = set()
    for node in ir.walk(expr):
        parts = ((node.left, node.right) if isinstance(node, ir.MxM) else
                 (node.matrix,) if isinstance(node, ir.MxV) else
                 (node.arg,) if isinstance(node, (ir.RowReduce, ir.NCols)) else ())
        for part in parts:
            while isinstance(part, (ir.Apply, ir.Transpose)):
                part = part.arg
            if isinstance(part, ir.Matrix):
                out.add(part.name)
    return out


def define(text: str, source: str = "<text>"):
    """Parse ``text``, register its ops, semirings and metrics by name, and return them
    (a :class:`~gbdist.front.loader.Definitions`).

    ``gb.define("op chi2(x, y) = ...\\nmetric chi2_dist(A, B) = ...")`` makes
    ``gb.pairwise_distances(X, metric="chi2_dist")`` work.
    """
    from .loader import Loader
    if not isinstance(text, str):
        raise InputError("define() needs the text of a metric file", got=type(text).__name__)
    ensure_builtins()
    loader = Loader(text, source)
    loader.run()
    return loader.commit()


def load(path):
    """:func:`define` the contents of a metric file; errors name the file."""
    from .syntax import read_source
    return define(read_source(path), str(path))


def parse_expression(text: str, definitions=None, source: str = "<expression>") -> ir.Node:
    """One expression (``mxm(A, B.T, semiring(absdiff, plus))``) as IR.

    Single capital letters name matrix operands, single small letters vectors.
    """
    from .expr import ExprBuilder
    from .scope import describe
    from .syntax import Source, parse_tree
    ensure_builtins()
    tree = parse_tree(text, source, start="expression")
    scope = definitions.scope if definitions is not None else {}
    out = ExprBuilder(Source(source, text), scope, free_operands=True).build(tree.children[0])
    if not isinstance(out, ir.Node):
        raise TypeCheckError("the expression does not compute anything over matrices",
                             got=describe(out), span=Source(source, text).span(tree.children[0]))
    return out
