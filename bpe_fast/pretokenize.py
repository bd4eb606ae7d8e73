"""Pre-tokenization: cutting text into the pieces that BPE merges never cross.

This module is the single entry point for pre-tokenizing; callers never use `regex` directly.
`regex` is the reference for every pattern. For the built-in patterns (GPT2_PATTERN, GPT4_PATTERN,
O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN, TEKKEN_PATTERN, DEEPSEEK3_PATTERN, KIMI_PATTERN, STARCODER_PATTERN,
BLOOM_PATTERN:
patterns.builtin_name) the work is done by the native scanner in
`bpe_fast._scan`, which gives the same results; any other pattern goes to `regex`. The scanner classifies code points with bpe_fast/_unicode_table.py, a table generated
from `regex` by tools/gen_unicode_table.py; if the installed `regex` disagrees with it (or the extension is
not built), every function here falls back to `regex` with a warning rather than differ.

Public: compiled_pattern, pretokenize (list of str), pretoken_boundaries (bytes -> int64 offsets),
pretoken_spans (bytes -> the start and end of each match, for a pattern that may leave text out),
count_pretokens_text (str -> Counter of bytes), count_chunk (bytes of a corpus chunk -> dict of bytes), and
ChunkCounter (count_chunk over many chunks into one native table). native_kind says whether a pattern is
scanned natively; native_tables is the scanner's Unicode tables, which every native scan is given.
"""
from __future__ import annotations

import array
import codecs
import hashlib
import threading
import types
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._numpy import np
from .patterns import GPT2_PATTERN, builtin_name, compile_pattern, resolve_pattern
from .procs import renewed_in_child
from ._types import Table
from .specials import SpecialTokens, split_on_specials

if TYPE_CHECKING:
    import regex
    from numpy.typing import NDArray
    from ._scan import UnicodeTables
# (`regex`, imported where it is used: the built-in patterns are scanned natively, and the Unicode 16.0 tables
# need no `regex` either; the import was 8-11 ms of a fresh process's first Encoding)

_compiled: dict[str, regex.Pattern[str]] = {}
# patterns compiled_pattern keeps (forgotten all at once past it, as `regex`'s own cache does): one a Tokenizer or
# pretokenize call of another custom pattern, about 9 KB each, was kept for good (a process making tokenizers of
# generated patterns grew without bound)
_MAX_COMPILED = 256


def compiled_pattern(pattern: str) -> regex.Pattern[str]:
    """The compiled `regex` object for a pattern name or regex string (cached, up to _MAX_COMPILED of them)."""
    pattern = resolve_pattern(pattern)
    rx = _compiled.get(pattern)
    if rx is None:
        rx = compile_pattern(pattern)       # ValueError naming a pattern that does not compile
        if len(_compiled) >= _MAX_COMPILED:
            _compiled.clear()
        _compiled[pattern] = rx
    return rx


def pretokenize(text: str, pattern: str = GPT2_PATTERN) -> list[str]:
    """Split `text` into pre-tokens: the whole matches of `pattern` (``m.group()`` for each m of
    ``regex.finditer(pattern, text)``; ``regex.findall``'s result when the pattern has no capturing group).
    Text that no match covers is in no pre-token, as with tiktoken (HF's Isolated Split keeps it as a piece of
    its own; export_hf writes a custom pattern as a Removed, inverted Split, which skips it too).

    >>> pretokenize("Hello, world!")
    ['Hello', ',', ' world', '!']
    """
    kind = native_kind(pattern)
    if kind and isinstance(text, str):
        data = _utf8_or_none(text)
        if data is not None:
            return _scan.split(native_tables(), data, kind)   # type: ignore[union-attr]  # kind != 0: loaded
    return [m.group() for m in compiled_pattern(pattern).finditer(text)]


def pretoken_boundaries(data: bytes | bytearray, pattern: str = GPT2_PATTERN,
                        unicode: str | None = None) -> NDArray[np.int64]:
    """Byte offsets of the pre-tokens of UTF-8 `data`: an int64 array b with b[0] == 0 and b[-1] == len(data);
    pre-token i is data[b[i]:b[i+1]]. Invalid UTF-8 raises UnicodeDecodeError, as data.decode("utf-8") would;
    a custom pattern that leaves some of the text in no match raises ValueError (see pretoken_spans).
    unicode: the classes a built-in pattern is scanned with (native_tables; None: the installed `regex`'s).

    >>> pretoken_boundaries("Hi, ünï".encode()).tolist()
    [0, 2, 3, 9]
    """
    check_unicode(unicode)                      # (a custom pattern, read by `regex`, has no use for it)
    kind = native_kind(pattern)
    if kind and isinstance(data, (bytes, bytearray)):
        # a bytearray is copied: its UTF-8 is checked, then scanned as valid, and another thread could change it
        data = bytes(data)
        check_utf8(data)
        return _scan.boundaries(native_tables(unicode), data, kind)   # type: ignore[union-attr]  # kind != 0
    starts, ends = pretoken_spans(data, pattern)
    out = np.concatenate([[0], ends]).astype(np.int64)
    gaps = np.flatnonzero(np.append(starts, len(data)) != out)
    if len(gaps):
        raise ValueError(f"the pattern leaves the text from byte {int(out[gaps[0]])} in no pre-token: boundaries "
                         f"must cover the text (pretoken_spans gives such a pattern's matches)")
    return out


def pretoken_spans(data: bytes | bytearray, pattern: str,
                   context: bytes = b"") -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(starts, ends): the byte offsets in UTF-8 `data` of each whole match of `pattern` (regex.finditer), in
    order; a pattern may leave text out (between ends[i] and starts[i + 1]), which tiktoken's encoder (and
    bpe_fast's) then skips. Invalid UTF-8 raises UnicodeDecodeError. context: UTF-8 text just before `data`
    (already encoded by the caller), searched from where `data` starts: the pattern's "^", "\\A", "\\b" and
    look-behind see it.

    >>> [a.tolist() for a in pretoken_spans("ab, é".encode(), r"\\w+")]
    [[0, 4], [2, 6]]
    >>> [a.tolist() for a in pretoken_spans(b"ab", r"^a|a|b", context=b"x")]
    [[0, 1], [1, 2]]
    """
    before = context.decode("utf-8")
    text = before + bytes(data).decode("utf-8")
    spans = np.array([m.span() for m in compiled_pattern(pattern).finditer(text, len(before))],
                     dtype=np.int64).reshape(-1, 2)
    if not text.isascii():                     # character offsets to byte offsets
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        sizes = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
        byte_at = np.zeros(len(points) + 1, dtype=np.int64)
        np.cumsum(sizes, out=byte_at[1:])
        spans = byte_at[spans]
    if context:
        spans -= len(context)
    return spans[:, 0].copy(), spans[:, 1].copy()


def count_pretokens_text(text: str, pattern: str = GPT2_PATTERN,
                         counts: Counter[bytes] | None = None) -> Counter[bytes]:
    """Add the pre-tokens of `text` (a piece between special tokens) to `counts` (a Counter of UTF-8 bytes)."""
    if counts is None:
        counts = Counter()
    kind = native_kind(pattern)
    data = _utf8_or_none(text) if kind and isinstance(text, str) else None
    if data is not None:
        words = _scan.count(native_tables(), data, kind)      # type: ignore[union-attr]  # kind != 0: loaded
    else:
        if isinstance(text, str) and not text.isascii():    # a lone surrogate: named, as counting names it
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"the text holds a lone surrogate at character {exc.start}, which UTF-8 has no "
                                 f"bytes for") from None
        found = Counter(m.group() for m in compiled_pattern(pattern).finditer(text))
        words = {w.encode("utf-8"): n for w, n in found.items()}
    for word, n in words.items():
        counts[word] += n
    return counts


def count_chunk(data: bytes, special_tokens: Iterable[str] | None = (), pattern: str = GPT2_PATTERN,
                errors: str = "strict") -> dict[bytes, int]:
    """Count the pre-tokens of a chunk of a UTF-8 file: decode, split on special tokens (never counted),
    pre-tokenize each piece. Returns dict[bytes, int].

    `data` must start and end on a character boundary and on a pre-token boundary (the chunker guarantees it).
    Invalid UTF-8 with errors="strict" raises UnicodeDecodeError (its .start is the offset within `data`);
    other `errors` values decode as bytes.decode does (errors="replace" counts U+FFFD in place of bad bytes).

    >>> count_chunk(b"a cat<|endoftext|>a cat", ["<|endoftext|>"])
    {b'a': 2, b' cat': 2}
    """
    return ChunkCounter(special_tokens, pattern, errors).add(data).to_dict()


class ChunkCounter:
    """count_chunk for many chunks, added up as it goes: the native scanner counts into one native table and
    Python objects are made once, for the distinct pre-tokens, by to_dict() or arrays().

    >>> counter = ChunkCounter(["<|e|>"])
    >>> counter.add(b"a b<|e|>a b").add(b" b").to_dict()
    {b'a': 2, b' b': 3}
    """

    def __init__(self, special_tokens: Iterable[str] | None = (), pattern: str = GPT2_PATTERN,
                 errors: str = "strict") -> None:
        codecs.lookup_error(errors)                           # an unknown error handler fails here
        if errors in ("surrogateescape", "surrogatepass"):
            raise ValueError(f"errors={errors!r} decodes bad bytes to lone surrogates, which pre-tokens (UTF-8) "
                             f"cannot hold: use 'strict', 'replace' or 'ignore'")
        self._specials = SpecialTokens.of(special_tokens)
        self.special_tokens = self._specials.tokens
        self.pattern, self.errors = resolve_pattern(pattern), errors
        compiled_pattern(self.pattern)
        self._native = self._native_counter()
        self._counts: Counter[bytes] = Counter()              # what only `regex` could count

    def _native_counter(self) -> Any:
        """An empty native counter for this pattern and these special tokens, or None when `regex` counts."""
        kind = native_kind(self.pattern)
        return _scan.PretokenCounter(native_tables(), kind, self._specials.utf8) if kind else None  # type: ignore[union-attr]

    @property
    def native(self) -> bool:
        """Whether the pattern is counted natively: add() and add_documents() of valid UTF-8 then run without the
        GIL, and threads count in parallel."""
        return self._native is not None

    def add(self, data: bytes | bytearray) -> ChunkCounter:
        """Count the pre-tokens of one chunk (bytes, as count_chunk takes them). Returns self."""
        if self._native is not None and isinstance(data, (bytes, bytearray)):
            # a bytearray is copied: its UTF-8 is checked, then scanned as valid, and another thread could change it
            data = bytes(data)
            if self.errors == "strict":
                check_utf8(data)
                utf8 = data
            else:
                utf8 = _utf8_or_none(data.decode("utf-8", self.errors))   # (a handler of one's own can give None)
            if utf8 is not None:
                self._native.add(utf8)
                return self
        for piece, is_special in split_on_specials(data.decode("utf-8", self.errors), self._specials.regex):
            if not is_special:
                count_pretokens_text(piece, self.pattern, self._counts)
        return self

    def add_documents(self, data: bytes | bytearray | memoryview | NDArray[np.uint8],
                      bounds: NDArray[np.int64]) -> ChunkCounter:
        """Count documents: document k is data[bounds[k]:bounds[k + 1]] (bytes, a bytearray, or a uint8 array
        such as a view of a shared slot; bounds int64 from 0 to len(data)), each counted as add() counts a chunk:
        nothing crosses from one to the next. Invalid UTF-8 (errors="strict") raises the UnicodeDecodeError of
        the first invalid document, its offsets in data. Returns self. The data must not change during the call
        (its UTF-8 is checked, then scanned as valid, not copied): the counting paths pass buffers of their own,
        or shared slots nothing writes until they are released."""
        if self._native is not None:
            try:
                check_documents_utf8(data, bounds)
            except UnicodeDecodeError:
                if self.errors == "strict":
                    raise
            else:
                self._native.add_documents(data, bounds)
                return self
        elif self.errors == "strict":
            check_documents_utf8(data, bounds)
        # what add() and its decode take (a bytearray or memoryview too, as the native counter takes them)
        data = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        for k in range(len(bounds) - 1):
            self.add(data[bounds[k]:bounds[k + 1]])
        return self

    def distinct(self) -> int:
        """How many distinct pre-tokens it holds (at most: one counted both natively and by `regex`, when
        chunks of both kinds came, is counted twice here)."""
        return (len(self._native) if self._native is not None else 0) + len(self._counts)

    def to_dict(self) -> dict[bytes, int]:
        """dict[bytes, int] of the distinct pre-tokens counted so far."""
        if self._native is None:
            return dict(self._counts)
        out = self._native.to_dict()
        for word, n in self._counts.items():
            out[word] = out.get(word, 0) + n
        return out

    def add_arrays(self, tokens: NDArray[np.uint8], offsets: NDArray[np.int64],
                   counts: NDArray[np.int64]) -> ChunkCounter:
        """Add a table of counts (as arrays() gives them) to this one. Returns self."""
        if self._native is not None:
            self._native.add_arrays(tokens, offsets, counts)
        else:
            blob, bounds = tokens.tobytes(), offsets.tolist()
            for k, n in enumerate(counts.tolist()):
                self._counts[blob[bounds[k]:bounds[k + 1]]] += n
        return self

    def arrays_with(self, tokens: NDArray[np.uint8], offsets: NDArray[np.int64], counts: NDArray[np.int64],
                    threads: int = 1) -> Table:
        """arrays(release=True) of this counter with a table of distinct pre-tokens (as arrays() gives them) added:
        the same arrays as add_arrays then arrays(release=True), without inserting the table's pre-tokens into
        the native counter's hash table (they are looked up: less time, less memory at once). threads: look
        them up in that many threads at most (for a caller whose other cores are idle)."""
        if self._native is not None and not self._counts:
            return self._native.arrays_with(tokens, offsets, counts, threads)
        return self.add_arrays(tokens, offsets, counts).arrays(release=True)

    def memory(self) -> int:
        """About the bytes its tables fill (the native one's spans, hash table and key bytes; 100 a pre-token
        that only `regex` counted): what a memory budget watches (spill.Spill)."""
        return (self._native.memory() if self._native is not None else 0) + 100 * len(self._counts)

    def spill(self, fd: int, keep: bool = False) -> tuple[int, int]:
        """Write the pre-tokens and counts as a run sorted by their bytes (see _runs.pxd) to the open file
        descriptor fd, at its start, emptying the counter. Returns (entries, errno of writing or 0). keep: keep
        the native table's memory, to count on into it (see PretokenCounter.spill)."""
        if self._native is not None and not self._counts:
            return self._native.spill(fd, keep)
        from . import _scan as scan
        table = self.arrays(release=True)       # (pre-tokens only `regex` counted too: one table of all)
        return scan.PretokenCounter(None, 0).add_arrays(*table).spill(fd)

    def arrays(self, release: bool = False) -> Table:
        """(tokens, offsets, counts): the distinct pre-tokens concatenated (uint8), int64 offsets with token k
        = tokens[offsets[k]:offsets[k + 1]], and their int64 counts. release: empty the counter as they are made
        (for a caller done with it: the native table is freed before the arrays are made)."""
        if self._native is not None and not self._counts:
            return self._native.arrays(release)
        counts = self.to_dict()
        if release:                     # (both tables' counts are in `counts`: a fresh, empty pair)
            self._counts, self._native = Counter(), self._native_counter()
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in counts], out=offsets[1:])
        return (np.frombuffer(b"".join(counts), dtype=np.uint8).copy(), offsets,
                np.fromiter(counts.values(), dtype=np.int64, count=len(counts)))


# ------------------------------------------------------------------------------------------ native scanner

_KINDS: dict[str, int]
_KINDS = {"gpt2": 2, "gpt4": 4, "o200k": 5, "llama3": 6, "qwen2": 7, "tekken": 8, "deepseek3": 9, "kimi": 10,
          "starcoder": 11, "bloom": 12}   # builtin_name -> the kinds of _scan.pxd
_scan: types.ModuleType | None = None           # the extension module, once found usable (_load_native)
_tables: UnicodeTables | None = None            # native_tables(None), once built
_native_checked = False
_installed_checked = False                      # whether _tables has been built (or found not to be made)
# (reentrant: the Unicode 16.0 tables fall back to the installed regex's, built under it too)
_native_lock = threading.RLock()


renewed_in_child(globals(), "_native_lock", threading.RLock)     # (a thread building the tables at a fork: built
                                                                 # again in the child)


def native_kind(pattern: str) -> int:
    """The native scanner's number for `pattern` (a name or regex string), or 0 when `regex` must do it."""
    kind = _KINDS.get(builtin_name(resolve_pattern(pattern)) or "", 0)
    return kind if kind and _native_scanner() is not None else 0


PEERS_UNICODE = "16.0"      # the Unicode version of tiktoken's regex engine and of HF tokenizers' Oniguruma
UNICODE_VERSIONS = (None, PEERS_UNICODE)
_peer_tables: UnicodeTables | None = None       # native_tables(PEERS_UNICODE), once built


def check_unicode(unicode: object) -> str | None:
    """`unicode` if it is one of UNICODE_VERSIONS (None: the installed `regex`'s), else a ValueError naming it."""
    if unicode not in UNICODE_VERSIONS:
        raise ValueError(f"unicode must be None (the installed regex's Unicode version) or {PEERS_UNICODE!r} "
                         f"(tiktoken's and HF tokenizers'), got {unicode!r}")
    return unicode


def native_tables(unicode: str | None = None) -> UnicodeTables | None:
    """The native scanner's Unicode tables (a bpe_fast._scan.UnicodeTables), built on first use; None when the
    scanner cannot be used (then `regex` pre-tokenizes). One object for each Unicode reading, never changed,
    serves every native scan of the process that reads so: the scanning functions and objects of _scan and
    _encode take it as their first argument.
    unicode: None, the classes of the installed `regex` (bpe_fast/_unicode_table.py); PEERS_UNICODE, those of
    Unicode 16.0 as tiktoken's and HF's engines have them (bpe_fast/_unicode_table_peers.py: the drop-in paths').
    """
    global _installed_checked, _tables, _peer_tables
    check_unicode(unicode)
    if _native_scanner() is None:
        return None
    if unicode is None:
        if not _installed_checked:
            with _native_lock:
                if not _installed_checked:
                    try:
                        _tables = _load_installed_tables()
                    finally:
                        _installed_checked = True
        return _tables
    if _peer_tables is None:
        with _native_lock:
            if _peer_tables is None:
                _peer_tables = _load_peer_tables()
    return _peer_tables


def _native_scanner() -> types.ModuleType | None:
    """bpe_fast._scan once it is found usable (_load_native: on first use), else None (`regex` pre-tokenizes)."""
    global _native_checked
    if not _native_checked:
        with _native_lock:                  # threads asking at once wait for the one looking
            if not _native_checked:
                try:
                    _load_native()
                finally:
                    _native_checked = True
    return _scan


def table_arrays(table: Any) -> tuple[array.array[int], array.array[int], list[int], list[str]]:
    """The arguments of bpe_fast._scan.UnicodeTables for a table laid out as bpe_fast/_unicode_table.py:
    (stage1, stage2, fold code points, their contraction letters)."""
    from . import _scan

    stage1, stage2 = _scan.two_level_table([array.array("q", ranges) for ranges in _ranges_of(table)])
    fold_cps = [cp for letter, cps in table.FOLDS.items() for cp in cps]
    fold_letters = [letter for letter, cps in table.FOLDS.items() for cp in cps]
    return stage1, stage2, fold_cps, fold_letters


def _load_native() -> None:
    """Import bpe_fast._scan and set _scan, unless bpe_fast/_unicode_table.py does not match its stamp (or the
    extension is missing): then `regex` pre-tokenizes, with a warning. Neither Unicode reading's tables are built
    here: native_tables builds the one asked for (the drop-in paths ask only for Unicode 16.0's, which needs no
    `regex`)."""
    global _scan
    try:
        from . import _scan as scan
        from . import _unicode_table as table
    except ImportError as exc:
        warnings.warn(f"bpe_fast: native pre-tokenizer unavailable ({exc}); using `regex` (slower)", RuntimeWarning,
                      stacklevel=4)
        return
    if table_stamp(table.REGEX_VERSION, _ranges_of(table), table.FOLDS) != table.STAMP:
        warnings.warn(f"bpe_fast: {_STAMP_PROBLEM}; pre-tokenizing with `regex` instead of the native scanner "
                      "(slower). Run tools/gen_unicode_table.py to regenerate the table.", RuntimeWarning, stacklevel=4)
        return
    _scan = scan


def _load_installed_tables() -> UnicodeTables:
    """native_tables(None): the tables of bpe_fast/_unicode_table.py (its stamp checked by _load_native) when
    the installed `regex` agrees with it, else of the installed `regex` itself."""
    from . import _unicode_table as table

    if _regex_problem(table):
        # Another `regex` release with another Unicode version: take the classes from the installed `regex`
        # itself (about 0.1 s, once per process), so the scanner agrees with it by construction.
        table = installed_regex_table()
    return _scan.UnicodeTables(*table_arrays(table))     # type: ignore[union-attr]  # loaded (native_tables)


def _load_peer_tables() -> UnicodeTables:
    """The tables of bpe_fast/_unicode_table_peers.py; the installed `regex`'s, with a warning, when its stamp is
    wrong (edited by hand)."""
    from . import _unicode_table_peers as table

    if table_stamp(table.REGEX_VERSION, _ranges_of(table), table.FOLDS) != table.STAMP:
        warnings.warn("bpe_fast: bpe_fast/_unicode_table_peers.py does not match its stamp (edited by hand?); "
                      "scanning with the installed regex's Unicode classes instead. Run tools/gen_unicode_table.py "
                      "--peers to regenerate it.", RuntimeWarning, stacklevel=4)
        tables = native_tables()
        assert tables is not None
        return tables
    return _scan.UnicodeTables(*table_arrays(table))     # type: ignore[union-attr]  # loaded (native_tables)


_STAMP_PROBLEM = "bpe_fast/_unicode_table.py does not match its stamp (edited by hand?)"


def _table_problem(table: Any) -> str:
    """Why `table` must not be used with the installed `regex`, or "" when it agrees."""
    if table_stamp(table.REGEX_VERSION, _ranges_of(table), table.FOLDS) != table.STAMP:
        return _STAMP_PROBLEM
    return _regex_problem(table)


def _regex_problem(table: Any) -> str:
    """Why `table` (its stamp matching) disagrees with the installed `regex`, or "" when it agrees."""
    import regex

    if table.REGEX_VERSION == regex.__version__:
        return ""
    # Another `regex` release, perhaps with another Unicode version: compare every code point (about 0.1 s).
    now = regex_unicode_classes()
    for (key, name), mine in zip(CLASSES, _ranges_of(table)):
        if tuple(x for r in now[key] for x in r) != tuple(mine):
            return f"regex {regex.__version__} disagrees on {name} with the table (made with regex {table.REGEX_VERSION})"
    if now["folds"] != {k: tuple(v) for k, v in table.FOLDS.items()}:
        return f"regex {regex.__version__} case-folds the contraction letters differently"
    return ""


def installed_regex_table() -> Any:
    """The Unicode table (as bpe_fast/_unicode_table.py lays it out) of the installed `regex`."""
    import regex

    now = regex_unicode_classes()
    flat = lambda ranges: tuple(x for r in ranges for x in r)  # noqa: E731
    return types.SimpleNamespace(REGEX_VERSION=regex.__version__, FOLDS=now["folds"],
                                 **{_FIELDS[key]: flat(now[key]) for key, _ in CLASSES})


CONTRACTION_LETTERS = "sdmtlver"

# The code point classes the scanner needs: (key, regex). Their bits in bpe_fast/_scan.pyx are 1, 2, 4, 16, 32, 64
# (8 is \r and \n). UPPER and LOWER are O200K_PATTERN's two case classes (they overlap on Lm, Lo and M); P is
# DEEPSEEK3_PATTERN's punctuation and symbols.
CLASSES = (("L", r"\p{L}"), ("N", r"\p{N}"), ("S", r"\s"), ("U", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
           ("W", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"), ("P", r"[\p{P}\p{S}]"), ("H", r"\p{Han}"))
_FIELDS = {"L": "LETTER", "N": "NUMBER", "S": "SPACE", "U": "UPPER", "W": "LOWER",    # names in _unicode_table.py
           "P": "PUNCT_SYMBOL", "H": "HAN"}


def _ranges_of(table: Any) -> tuple[Any, ...]:
    """The flat range tuples of `table` (bpe_fast/_unicode_table.py or its like), in CLASSES order."""
    return tuple(getattr(table, _FIELDS[key]) for key, _ in CLASSES)


def regex_unicode_classes() -> dict[str, Any]:
    """The installed `regex`'s view of every code point, as the native scanner needs it.

    Returns {"L": ranges, "N": ranges, "S": ranges, "U": ranges, "W": ranges, "folds": {letter: code points}}:
    (start, stop) ranges of the code points matched by each class of CLASSES, and for each contraction letter
    of GPT-4's and o200k's patterns the code points that (?i:letter) matches. Surrogates are not valid UTF-8
    and are left out.
    """
    import regex

    cps = np.arange(0x110000, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    everything = cps.astype("<u4").tobytes().decode("utf-32-le")

    def ranges(rx: str) -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []
        for m in regex.finditer(rx, everything):
            start, stop = int(cps[m.start()]), int(cps[m.end() - 1]) + 1
            if stop - start != m.end() - m.start():     # the run jumps over the surrogates
                out += [(start, 0xD800), (0xE000, stop)]
            elif out and out[-1][1] == start:
                out[-1] = (out[-1][0], stop)
            else:
                out.append((start, stop))
        return tuple(out)

    folds = {c: tuple(int(cps[m.start()]) for m in regex.finditer(f"(?i:{c})", everything))
             for c in CONTRACTION_LETTERS}
    return {key: ranges(rx + "+") for key, rx in CLASSES} | {"folds": folds}


def table_stamp(regex_version: str, classes: Sequence[Sequence[Any]], folds: Mapping[str, Iterable[int]]) -> str:
    """A hash of the table's contents (the ranges of each class of CLASSES, in order, flat or as pairs), so a
    hand-edited table is noticed."""
    def flat(ranges: Iterable[Any]) -> list[Any]:
        ranges = list(ranges)
        if not any(issubclass(kind, tuple) for kind in set(map(type, ranges))):
            return ranges       # flat already, as a generated table is (the loop below took 0.9 ms of its 1.5)
        return [x for r in ranges for x in (r if isinstance(r, tuple) else (r,))]

    text = repr((regex_version, *(flat(r) for r in classes),
                 sorted((k, list(v)) for k, v in folds.items())))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _utf8_or_none(text: str) -> bytes | None:
    """text as UTF-8, or None when it holds lone surrogates (only `regex` can pre-tokenize those)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def check_utf8(data: bytes | bytearray | memoryview | NDArray[np.uint8]) -> None:
    """Raise the UnicodeDecodeError data.decode("utf-8") would raise, found by the native validator."""
    if _scan is None:           # no built-in pattern has loaded the scanner yet; its validator needs no tables
        from . import _scan as scan
    else:
        scan = _scan
    pos = scan.utf8_error(data)
    if pos < 0:
        return
    try:
        bytes(data[pos:pos + 8]).decode("utf-8")            # a bad sequence is at most 4 bytes long
    except UnicodeDecodeError as exc:
        if exc.start == 0:
            whole = data if isinstance(data, (bytes, bytearray)) else bytes(data)
            raise UnicodeDecodeError("utf-8", whole, pos + exc.start, pos + exc.end, exc.reason) from None
    if not isinstance(data, bytes):
        # read three times here: another thread may have written it meanwhile. A copy, checked again, tells: still
        # invalid, its error; valid to both validators, the data changed (a disagreement is the copy's to raise)
        copy = bytes(data)
        if scan.utf8_error(copy) >= 0:
            check_utf8(copy)
            return
        raise RuntimeError("the data changed while its UTF-8 was checked (another thread writes to it)")
    data.decode("utf-8")                                      # the validators disagree: let Python's decide
    raise AssertionError(f"bpe_fast._scan.utf8_error reported offset {pos} of valid UTF-8")


def check_documents_utf8(data: bytes | bytearray | memoryview | NDArray[np.uint8], bounds: Any) -> None:
    """check_utf8 of each document data[bounds[k]:bounds[k + 1]] (bounds rising from 0 to len(data)), as
    decoding each alone would: a bound inside a character (a document ending in its first bytes, the next
    starting with the rest) leaves the whole of data valid and both documents not. Raises the
    UnicodeDecodeError of the first invalid document, its offsets in data.

    >>> check_documents_utf8("é".encode(), [0, 1, 2])
    Traceback (most recent call last):
    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xc3 in position 0: unexpected end of data
    """
    try:
        check_utf8(data)
    except UnicodeDecodeError as exc:
        error: UnicodeDecodeError | None = exc
        valid = exc.start               # data[:valid] is whole characters
    else:
        error, valid = None, len(data)
    view = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    inner = np.asarray(bounds, dtype=np.int64)[1:-1]
    inner = inner[inner < valid]
    cut = inner[(view[inner] & 0xC0) == 0x80]          # a continuation byte starts a document
    if len(cut):
        end = int(cut[0])           # the first such bound ends the document holding the character's lead byte
        lead = end - 1
        while view[lead] & 0xC0 == 0x80:
            lead -= 1
        try:
            bytes(view[lead:end]).decode("utf-8")
        except UnicodeDecodeError as exc:
            whole = data if isinstance(data, (bytes, bytearray)) else bytes(data)
            error = None        # (see below)
            raise UnicodeDecodeError("utf-8", whole, lead + exc.start, lead + exc.end, exc.reason) from None
    if error is not None:
        try:
            raise error
        finally:
            # error's traceback holds this frame: left in a local, the two were a reference cycle that kept the
            # data and every caller's frame (a failed count's native table, encode_documents_utf8's copy) alive
            # until the garbage collector ran (as an except clause deletes its name)
            error = None
