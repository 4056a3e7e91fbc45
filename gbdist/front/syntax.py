"""Text in: reading a metric file, the lark parser, syntax errors, positions, limits.

The grammar is ``grammar/gbdist.lark`` (shipped as the package data
``gbdist.grammar``). :func:`parse_tree` turns a text into a lark parse tree or
a :class:`~gbdist.errors.DSLSyntaxError` with the line, column and a caret;
:class:`Source` turns a tree node back into a :class:`~gbdist.errors.Span`.
The limits that keep every text bounded in time and memory live here, in one
place (docs/language.md, "Limits").
"""
from __future__ import annotations

import difflib
import functools
import os
import stat
from dataclasses import dataclass

from ..algebra.lazy import module

from ..errors import DefinitionError, DSLSyntaxError, GbdistError, InputError, Span
from ..resources import read
from ..paths import file_name

# lark, imported when a text is first parsed (a process that reads only stored programs
# never does): gbdist.algebra.lazy
lark = module("lark")
lark_exceptions = module("lark.exceptions")

# Limits that keep every text bounded in time and memory (docs/language.md, "Limits").
MAX_DEPTH = 128  # nesting levels of one expression (a chain a + b + c ... counts once)
MAX_NUMBER_CHARS = 400  # characters of one number literal
MAX_BUILD_STEPS = 50_000  # parse-tree nodes visited to build one definition, helpers inlined
MAX_FORMULA_NODES = 5_000  # nodes of one formula or expression, written out as a tree
MAX_FORMULA_DEPTH = 100  # nesting of one formula or expression, helpers and ops inlined
MAX_FILE_BYTES = 64 * 2**20  # a metric file larger than this is refused

# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------


@functools.cache
def parser() -> "lark.Lark":
    """The lark LALR parser for ``grammar/gbdist.lark``, built on first use, or loaded
    from the on-disk cache of an earlier process (:mod:`gbdist.front.parser_cache`)."""
    from .parser_cache import cached_lark
    return cached_lark(read("grammar", "gbdist.lark"), parser="lalr", start=["start", "expression"],
                       propagate_positions=True, maybe_placeholders=True)


# Readable names for the grammar's terminals in "Expected: ..." lines.
_OPERATORS = {"ADD_OP", "MUL_OP", "POW_OP", "COMPARE", "AND", "OR", "DOT", "MINUS", "PLUS"}
_STARTS = {"OP", "SEMIRING", "DEF", "METRIC", "ALIAS", "MONOID", "GRAPH"}
_TERMINAL_WORDS = {"NAME": "a name", "NUMBER": "a number", "$END": "the end of the text"}


def _expected_text(terminals) -> str:
    terminals = set(terminals or ())
    words = []
    if terminals & _STARTS:
        words.append("a definition (op, semiring, monoid, def, metric, graph or alias)")
    named = []
    for t in terminals - _OPERATORS - _STARTS:
        if t in _TERMINAL_WORDS:
            named.append(_TERMINAL_WORDS[t])
            continue
        try:
            named.append(repr(parser().get_terminal(t).pattern.value))
        except KeyError:
            named.append(t)
    words += sorted(named)
    if terminals & _OPERATORS:
        words.append("an operator")
    return ", ".join(words) if len(words) < 2 else "one of " + ", ".join(words)


def _syntax_error(e, text: str, source: str) -> DSLSyntaxError:
    if isinstance(e, lark_exceptions.UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        hint = ("the language has no strings, imports or attribute calls: only numbers, names, "
                "operators and the functions listed in docs/language.md") if char in "\"'`[]{}@$!\\" else None
        return DSLSyntaxError(f"unexpected character {char!r}", expected=_expected_text(e.allowed),
                              hint=hint, span=Span(source, text, e.line, e.column))
    if isinstance(e, lark_exceptions.UnexpectedEOF) or (
            isinstance(e, lark_exceptions.UnexpectedToken) and e.token.type == "$END"):
        lines = text.splitlines() or [""]
        line = len(lines)
        col = len(lines[-1]) + 1
        return DSLSyntaxError("the text ends in the middle of a definition",
                              expected=_expected_text(getattr(e, "expected", ())),
                              span=Span(source, text, line, col))
    tok = e.token
    end = tok.end_column if tok.end_line == tok.line else None
    hint = None
    if tok.type in ("NAME", "NUMBER") and e.expected & {"ADD_OP", "MUL_OP"}:
        hint = "two expressions side by side need an operator or a comma between them"
    return DSLSyntaxError(f"unexpected {_token_word(tok)}", expected=_expected_text(e.expected),
                          hint=hint, span=Span(source, text, tok.line, tok.column, end))


def _token_word(tok) -> str:
    if tok.type == "NAME":
        return f"name {str(tok)!r}"
    if tok.type == "NUMBER":
        return f"number {str(tok)}"
    return repr(str(tok))


# What str.splitlines() breaks a line at, besides \n and \r: lark counts lines at \n
# only, so in a text these are white space (as the grammar already reads them).
_OTHER_LINE_BREAKS = str.maketrans({c: " " for c in "\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def normalize_text(text: str) -> str:
    """``text`` with \r\n and bare \r line endings as \n, and the other characters
    str.splitlines() breaks at as spaces: then lark's line and column (which count
    \n only) and the line an error quotes (split by splitlines) are the same line.
    A comment ends at a bare \r too, as it does at \n."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_OTHER_LINE_BREAKS)


def parse_tree(text: str, source: str = "<text>", start: str = "start"):
    """The lark parse tree of ``text``; syntax errors become DSLSyntaxError.

    Trees that nest deeper than :data:`MAX_DEPTH` are refused here, so the
    (recursive) builders never meet one. Line endings are normalised first
    (:func:`normalize_text`); positions refer to the normalised text.
    """
    text = normalize_text(text)
    try:
        tree = parser().parse(text, start=start)
    except lark_exceptions.UnexpectedInput as e:
        raise _syntax_error(e, text, source) from None
    except RecursionError:  # pragma: no cover (lark's LALR parser is iterative)
        raise DSLSyntaxError("the text nests too deeply to parse",
                             expected=f"at most {MAX_DEPTH} levels of nesting") from None
    _check_depth(tree, Source(source, text))
    return tree


def _check_depth(tree, src: Source) -> None:
    """Refuse a tree deeper than MAX_DEPTH (walked iteratively). The left operand
    of a binary operator chain stays at its parent's level: ``x + x + ... + x``
    is built as a loop, not by recursion.

    Also refuse a definition of more than MAX_BUILD_STEPS parse-tree nodes: building
    it visits every node, so it would be refused after that many steps anyway (here,
    before any formula is built)."""
    for definition in tree.children if tree.data == "start" else (tree,):
        if isinstance(definition, lark.Tree):
            _check_definition(definition, src)


def _check_definition(tree, src: Source) -> None:
    stack = [(tree, 0)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_BUILD_STEPS:
            first = tree.children[0] if tree.children and isinstance(tree.children[0], lark.Token) else tree
            raise DefinitionError(
                f"the definition is too large: more than {MAX_BUILD_STEPS} parse-tree nodes",
                expected=f"at most {MAX_BUILD_STEPS} (building it visits each; a formula has at most "
                         f"{MAX_FORMULA_NODES} nodes once written out)",
                hint="split it into smaller ops, helper defs or let bindings", span=src.span(first))
        if depth > MAX_DEPTH:
            raise DSLSyntaxError(f"the expression nests too deeply (more than {MAX_DEPTH} levels)",
                                 expected=f"at most {MAX_DEPTH} nested calls, brackets or operators",
                                 hint="name parts with let bindings, helper defs or ops",
                                 span=src.span(node))
        for i, child in enumerate(node.children):
            if isinstance(child, lark.Tree):
                chained = i == 0 and node.data == "binop" and child.data == "binop"
                stack.append((child, depth if chained else depth + 1))


# ---------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    name: str  # file name or "<text>"
    text: str  # normalised (:func:`normalize_text`), as it was parsed

    def __post_init__(self):
        object.__setattr__(self, "text", normalize_text(self.text))

    def span(self, item) -> Span | None:
        """The Span of a parse-tree node or token."""
        if isinstance(item, lark.Token):
            line, col, end_line, end_col = item.line, item.column, item.end_line, item.end_column
        elif isinstance(item, lark.Tree) and not item.meta.empty:
            m = item.meta
            line, col, end_line, end_col = m.line, m.column, m.end_line, m.end_column
        else:
            return None
        if line is None:
            return None
        return Span(self.name, self.text, line, col, end_col if end_line == line else None)

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def doc_above(self, line: int) -> str:
        """The comment lines directly above ``line`` (1-based): a definition's doc string."""
        lines = self.lines  # split once per text, not once per definition
        out = []
        i = line - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            out.append(lines[i].strip().lstrip("#").strip())
            i -= 1
        return "\n".join(reversed(out))


def located(fn):
    """Re-raise gbdist errors from ``fn(self, tree)`` at the tree's position; any
    other exception (sympy failing on a formula) becomes a DefinitionError there."""
    @functools.wraps(fn)
    def wrapper(self, tree, *args):
        try:
            return fn(self, tree, *args)
        except GbdistError as e:
            raise e.with_span(self.src.span(tree)) from None
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - the boundary: nothing untyped reaches the user
            raise unexpected(e, self.src.span(tree)) from None
    return wrapper


def unexpected(e: BaseException, span: Span | None) -> GbdistError:
    """An exception that is not a GbdistError, raised while building a definition, as a
    DefinitionError at ``span``."""
    if isinstance(e, RecursionError):
        return DefinitionError("the definition is too complex to build",
                               got="Python ran out of recursion depth on it",
                               hint="split it into smaller ops, helpers or let bindings", span=span)
    return DefinitionError("the definition could not be built",
                           got=f"{type(e).__name__}: {str(e)[:160]}",
                           hint="this is a limitation of gbdist's symbolic analysis; writing the "
                                "formula differently may avoid it - please report the definition",
                           span=span)


def suggest(name: str, candidates) -> str | None:
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    return f"did you mean {close[0]!r}?" if close else None


# ---------------------------------------------------------------------------
# Reading a metric file
# ---------------------------------------------------------------------------


def read_source(path) -> str:
    """The text of a metric file: a regular file of at most MAX_FILE_BYTES, in UTF-8.

    Every failure is an :class:`InputError` naming the file (and, for a file
    that is not UTF-8, the offset of the first bad byte); a FIFO or a device
    is refused without reading it.
    """
    name = _metric_file_name(path)
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as e:
        got = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
        raise InputError(f"cannot read the metric file {name!r}", got=got) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise InputError(f"cannot read the metric file {name!r}: it is {kind}")
        if st.st_size > MAX_FILE_BYTES:
            raise InputError(f"the metric file {name!r} is too large",
                             expected=f"at most {MAX_FILE_BYTES} bytes", got=f"{st.st_size} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise InputError(f"the metric file {name!r} is too large",
                                 expected=f"at most {MAX_FILE_BYTES} bytes")
            chunks.append(chunk)
    except OSError as e:
        raise InputError(f"cannot read the metric file {name!r}", got=e.strerror or str(e)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"the metric file {name!r} is not UTF-8 text",
                         got=f"byte 0x{data[e.start]:02x} at offset {e.start} (line {line})",
                         hint="save the file as UTF-8") from None
    if not text.strip():
        raise InputError(f"the metric file {name!r} is empty",
                         expected="definitions (op, semiring, metric, ...)",
                         got="an empty file" if not data else "only white space",
                         hint="check the path; gb.define(text) takes the definitions as a string")
    return text


# The data formats gbdist reads (gbdist.io: its MatrixMarket, NumPy and text readers, the
# last with io.text.DENSE_SUFFIXES and the triplet suffixes but .txt, which a metric file
# may carry too): a metric file named like one is a mix-up.
_DATA_SUFFIXES = (".mtx", ".mtx.gz", ".mm", ".mm.gz", ".npz", ".npy", ".csv", ".tsv", ".coo",
                  ".triplets")


def _metric_file_name(path) -> str:
    """The file name of ``path`` as a str, or an InputError: not a path, an empty path, a
    NUL byte (which no file name can hold: ``os.open`` would raise ValueError), or the name
    of a data matrix (.mtx, .npz, .npy, .csv, .tsv, .coo, .triplets) rather than of metric
    definitions."""
    name = file_name(path, "a metric file")
    suffix = next((s for s in _DATA_SUFFIXES if name.lower().endswith(s)), None)
    if suffix is not None:
        raise InputError(f"cannot read the metric file {name!r}: it is named as a data matrix, "
                         "not as metric definitions",
                         expected="a UTF-8 text file of definitions (e.g. my_metrics.gbd)",
                         got=f"a {suffix} file",
                         hint="gb.load reads metric definitions; pass data to "
                              "gb.pairwise_distances / gb.knn (the CLI reads .mtx, .npz, .npy)")
    return name
