"""Tokenizer(vocab, merges, special_tokens): CS336's constructor. Its usual input (a dict {int: bytes} and a list
of (bytes, bytes) tuples, plainly regular) goes the way GPT-2's files read as arrays go (the native packers of
bpe_fast._gpt2_files, formats.gpt2_arrays, the merge rule's check and the tables in a thread); anything else is
checked in Python, which names what is wrong. The oracle here is that Python path alone (the array path switched
off): both must give the same tokenizer or the same error, whatever the input."""
import itertools
import json
import os
import pickle
import random
import re
import subprocess
import sys
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import bpe_fast.tokenizer as T
from bpe_fast import Tokenizer
from bpe_fast._gpt2_files import first_indices, pack_pairs, pack_vocab
from bpe_fast import formats as F
from bpe_fast.merge_rule import describe_difference, merge_rule_difference
from corpora import FIXTURES
from encode_oracle import oracle_encode

TEXT = "abcd dcba abab ccdd <|eot|> aaaa bbbb <|x|>abc d\n\n  ab"


def outcome(make):
    try:
        tok = make()
    except (TypeError, ValueError) as exc:
        return ("error", type(exc).__name__, str(exc))
    try:
        ids = tok.encode(TEXT)
    except ValueError as exc:       # a byte with no token
        ids = ("error", type(exc).__name__, str(exc))
    return ("ok", dict(tok.vocab), tok.merges, tok.special_tokens, ids, tok._tables.permanent_mask())


def both(*args):
    """(the constructor's outcome, the Python path's alone); each call gets its own copies of the arguments."""
    fast = outcome(lambda: Tokenizer(*_copies(args)))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "_plain_arrays", lambda packed_vocab, merges: None)
        slow = outcome(lambda: Tokenizer(*_copies(args)))
    return fast, slow


def _copies(args):
    """Fresh arguments: a dict, a list, and special tokens as given (a function called for an iterator)."""
    vocab, merges, *rest = args
    return (dict(vocab), list(merges), *[x() if callable(x) else x for x in rest])


def _merge_lists(draw_choices, letters=b"abcd"):
    """A merge list over `letters` from index pairs (each merge joins two tokens made so far)."""
    tokens = [bytes([c]) for c in letters]
    merges = []
    for i, j in draw_choices:
        a, b = tokens[i % len(tokens)], tokens[j % len(tokens)]
        if a + b not in tokens:
            tokens.append(a + b)
        merges.append((a, b))
    return tokens, merges


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=14),
       st.sampled_from(["plain", "shuffled_ids", "gap", "no_byte", "dup_token", "extra", "drop_join"]),
       st.sampled_from([[], ["<|eot|>"], ["<|eot|>", "<|x|>"], ["ab"], ["<|x|>", "<|eot|>"]]),
       st.sampled_from(["list", "iter", "tuple"]), st.booleans())
@example([(0, 1), (0, 1)], "plain", [], "list", True)            # a pair listed twice in a row: the Python path's
@example([(0, 1), (4, 2), (0, 1)], "plain", [], "list", True)     # a pair made again after another merge: refused
@example([(0, 1), (1, 2), (0, 5)], "plain", [], "list", True)     # a, b; b, c; a, bc: abc made as a + bc, refused
@example([(0, 1), (1, 2), (0, 5)], "plain", ["<|eot|>"], "list", False)   # the same, the special token added
@example([(0, 1), (4, 0), (5, 0)], "gap", ["<|eot|>", "<|x|>"], "iter", False)   # added after the largest id
def test_the_constructor_equals_its_python_path(choices, vocab_kind, specials, special_kind, specials_listed):
    """specials_listed: the special tokens' bytes are in the vocabulary (else the constructor adds them, at the
    next free ids)."""
    tokens, merges = _merge_lists(choices)
    made = tokens[4:]
    rng = random.Random(len(choices) * 7 + len(specials))
    vocab = {i: bytes([i]) for i in range(256)}
    specials_in_vocab = [s for s in specials if s != "ab"] if specials_listed else []
    ids = list(range(256, 256 + len(made) + len(specials_in_vocab)))
    if vocab_kind == "shuffled_ids":
        rng.shuffle(ids)
    elif vocab_kind == "gap":
        ids = [i + 1000 * k for k, i in enumerate(ids)]
    entries = list(zip(ids, made + [s.encode() for s in specials_in_vocab]))
    if vocab_kind == "shuffled_ids":
        rng.shuffle(entries)
    vocab.update(entries)
    if vocab_kind == "no_byte":
        del vocab[ord("c")]
    elif vocab_kind == "dup_token" and made:
        vocab[5000] = made[0]                       # a token's bytes at two ids
    elif vocab_kind == "extra":
        vocab[4000] = b"zzz"                        # a token no merge makes
    elif vocab_kind == "drop_join" and made:
        del vocab[next(i for i, t in vocab.items() if t == made[-1])]
    if special_kind == "iter":
        specials = (lambda names: lambda: iter(names))(specials)
    elif special_kind == "tuple":
        specials = tuple(specials)
    fast, slow = both(vocab, merges, specials)
    assert fast == slow


@pytest.mark.parametrize("bad", [
    lambda v, m: (v, [list(m[0])] + m[1:]),                        # a merge as a list
    lambda v, m: (v, [(bytearray(m[0][0]), m[0][1])] + m[1:]),     # a bytearray part
    lambda v, m: (v, [(m[0][0], m[0][1].decode())] + m[1:]),       # a str part
    lambda v, m: (v, [m[0] + (b"x",)] + m[1:]),                    # three parts
    lambda v, m: (v, [(b"q", b"r")] + m[1:]),                      # tokens not in the vocabulary
    lambda v, m: ({**v, True: b"qq"}, m),                          # a bool id
    lambda v, m: ({**v, -1: b"qq"}, m),                            # a negative id
    lambda v, m: ({**v, F.MAX_TOKEN_ID + 1: b"qq"}, m),            # an id too large
    lambda v, m: ({**v, 2 ** 70: b"qq"}, m),                       # an id far too large
    lambda v, m: ({**v, 300000: b""}, m),                          # an empty token
    lambda v, m: ({**v, 300000: bytearray(b"qq")}, m),             # a bytearray token
    lambda v, m: ({**v, 300000: "qq"}, m),                         # a str token
    lambda v, m: ({**v, 10 ** 7: b"qq"}, m),                       # too sparse
    lambda v, m: (v, tuple(m)),                                    # merges as a tuple
    lambda v, m: (v, iter(m)),                                     # merges as an iterator
])
def test_irregular_input_gets_the_python_paths_answer(bad):
    tokens, merges = _merge_lists([(0, 1), (4, 2), (5, 3)])
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: t for k, t in enumerate(tokens[4:])}
    vocab, merges = bad(vocab, merges)
    if not isinstance(merges, (list, tuple)):       # an iterator: consumed once; both get it whole
        merges = list(merges)
    fast, slow = both(vocab, merges, ["<|eot|>"])
    assert fast == slow


def test_special_tokens_from_an_iterator_are_kept_by_from_files():
    """from_files read its special tokens twice (once to look them up among the arrays, once to set them up):
    an iterator gave none the second time, and the tokenizer matched no special token."""
    specials = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt",
                                    iter(["<|endoftext|>"])).special_tokens
    assert specials == {"<|endoftext|>": 50256}


def test_a_mapping_that_is_not_a_dict_is_copied():
    from types import MappingProxyType

    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    fast, slow = both(MappingProxyType(vocab), [(b"a", b"b")])
    assert fast == slow and fast[0] == "ok"
    with pytest.raises(TypeError, match="vocab must be a dict"):
        Tokenizer([(0, b"a")], [])


# ------------------------------------------------------------------------------------- the native packers

@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(-3, 2 ** 40), st.booleans(), st.just(2 ** 80)),
                          st.one_of(st.binary(max_size=5), st.text(max_size=2))), max_size=12),
       st.integers(0, 2 ** 33))
def test_pack_vocab_equals_a_plain_loop(items, max_id):
    vocab = dict(items)
    regular = all(type(i) is int and 0 <= i <= max_id and type(t) is bytes and t for i, t in vocab.items())
    packed = pack_vocab(vocab, max_id)
    if not regular:
        assert packed is None
        return
    pool, offsets, ids = packed
    assert ids.tolist() == list(vocab)
    assert [bytes(pool[offsets[k]:offsets[k + 1]]) for k in range(len(vocab))] == list(vocab.values())
    assert offsets[0] == 0 and offsets[-1] == len(pool)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.binary(max_size=4), st.binary(max_size=4)),
                          st.tuples(st.binary(max_size=2)), st.lists(st.binary(max_size=2), min_size=2, max_size=2),
                          st.tuples(st.binary(max_size=2), st.text(max_size=2))), max_size=10))
def test_pack_pairs_equals_a_plain_loop(merges):
    regular = all(type(m) is tuple and len(m) == 2 and all(type(p) is bytes for p in m) for m in merges)
    packed = pack_pairs(merges)
    if not regular:
        assert packed is None
        return
    pool, offsets = packed
    parts = list(itertools.chain.from_iterable(merges))
    assert len(offsets) == len(parts) + 1
    assert [bytes(pool[offsets[k]:offsets[k + 1]]) for k in range(len(parts))] == parts


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-5, 5), st.integers(0, 4400), st.integers(-2 ** 63, 2 ** 63 - 1)), max_size=60))
def test_first_indices_equals_a_dict(values):
    # (values in 0..4 * len + 4095 go through a direct table, others through a hash table: 4400 is on either side)
    seen = {}
    for k, v in enumerate(values):
        seen.setdefault(v, k)
    assert first_indices(np.array(values, dtype=np.int64)).tolist() == sorted(seen.values())


def test_distinct_checks_fall_back_to_sorting_when_the_table_is_crowded(monkeypatch):
    """When first_indices gives up (keys made to share slots), first_occurrences and all_distinct sort."""
    from bpe_fast import token_arrays

    values = np.array([4, 1, 4, 9, 1, 2], dtype=np.int64)
    assert token_arrays.first_occurrences(values).tolist() == [0, 1, 3, 5]
    assert not token_arrays.all_distinct(values) and token_arrays.all_distinct(values[[0, 1, 3, 5]])
    monkeypatch.setattr(token_arrays, "first_indices", lambda values: None)
    assert token_arrays.first_occurrences(values).tolist() == [0, 1, 3, 5]
    assert not token_arrays.all_distinct(values) and token_arrays.all_distinct(values[[0, 1, 3, 5]])


# ------------------------------------------------------------------------------------- the order of errors

_REFUSED_VOCAB = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc", 258: b"abc"}
_REFUSED_MERGES = [(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")]      # abc: the ranks rule makes it as ab + c


@pytest.mark.parametrize("rest", [
    ([7],),                             # a special token that is not a str
    (["<|eot|>", 7, "<|eot|>"],),       # the same, with a special token twice (counted once)
    (["\ud800"],),                      # a special token with no UTF-8
    (None, "(unbalanced"),              # a pattern that does not compile
    (["ab"], "(unbalanced"),            # the same, with a special token found in the vocabulary
    (["<|new|>"], "(unbalanced"),       # the same, with a special token the vocabulary lacks (added to it)
])
def test_the_merge_rules_refusal_comes_before_other_errors(rest):
    """The Python path refuses merges the merge rule refuses before it looks at the special tokens or the
    pattern; the array path ran the rule's check in the tables' thread, asked only after those were checked, so
    a bad special token or pattern was named instead (shown by the merges a+b, b+c, a+bc with special token 7)."""
    fast, slow = both(_REFUSED_VOCAB, _REFUSED_MERGES, *rest)
    assert slow[:2] == ("error", "ValueError") and slow[2].startswith("merge 2 (b'a', b'bc'): ")
    assert fast == slow


@pytest.mark.parametrize("training", ["bogus", {"unknown": 1}, {"merge_counts": [1]}])
def test_the_merge_rules_refusal_comes_before_the_training_records(training):
    """As above, for a training record that is refused (the Python path checks it after the merge rule)."""
    with pytest.raises(ValueError, match=r"^merge 2 \(b'a', b'bc'\): "):
        Tokenizer(dict(_REFUSED_VOCAB), list(_REFUSED_MERGES), training=training)
    with pytest.raises(ValueError, match="^training"):      # a valid merge list: the training record's error
        Tokenizer(dict(_REFUSED_VOCAB), _REFUSED_MERGES[:2], training=training)


# ------------------------------------------------------------------------------------- mappings' items as given

class _Entries(Mapping):
    """A mapping read through its items(), which gives its entries as listed (a key may come twice)."""

    def __init__(self, entries):
        self._entries = list(entries)

    def __getitem__(self, key):
        return dict(self._entries)[key]

    def __iter__(self):
        return iter(dict(self._entries))

    def __len__(self):
        return len(dict(self._entries))

    def items(self):
        return list(self._entries)


_BYTES = [(i, bytes([i])) for i in range(256)]


@pytest.mark.parametrize("entries, error, message", [
    # id 1 given as a str, then as bytes: refused by its first entry (it was taken from the last, and accepted)
    (_BYTES + [(1, "s"), (1, b"\x01")], TypeError, "vocab token 1 is str, not bytes"),
    (_BYTES + [(1, b""), (1, b"\x01")], ValueError, "vocab token 1 is empty"),
    (_BYTES + [("x", b"q"), (1, 5), (1, b"\x01")], TypeError, "vocab id 'x' is not an int"),
    (_BYTES + [([300], b"q")], TypeError, "vocab id [300] is not an int"),      # an unhashable key
    (_BYTES + [(300, b"q", b"r")], ValueError, "too many values to unpack (expected 2)"),     # not a pair
    (_BYTES + [(300,)], ValueError, "not enough values to unpack (expected 2, got 1)"),
])
def test_a_mappings_items_are_checked_as_given(entries, error, message):
    """The vocab is checked entry by entry as its items() gives them, as before the array path (which made a
    dict of them first: a key given twice was checked by its last entry only, and an unhashable key or an entry
    not a pair raised dict()'s own error). Shown by a mapping whose items() gives id 1 as "s" and then as
    b"\\x01": it was accepted."""
    with pytest.raises(error) as info:
        Tokenizer(_Entries(entries), [])
    assert str(info.value) == message


def test_a_mappings_items_may_give_a_key_twice_when_each_entry_is_good():
    """Each entry good: the last of a key's entries is kept (as dict(items) keeps it), in the first one's place."""
    tok = Tokenizer(_Entries(_BYTES + [(300, b"ab"), (1, b"\x01"), (300, b"cd")]), [])
    assert tok.vocab == {**dict(_BYTES), 300: b"cd"} and list(tok.vocab)[256] == 300


def test_the_constructor_in_an_atexit_handler(tmp_path):
    """No thread may start once the interpreter is shutting down: the tables' job then ran in the calling thread
    (procs.started, now procs.ThreadJob) before the arrays it waits for were made, and waited for ever. Shown by Tokenizer({bytes,
    256: b"ab"}, [(b"a", b"b")]) in an atexit handler, which never returned (the Python path: no thread);
    Tokenizer.from_files, which goes the same way, likewise."""
    code = ("import atexit\n"
            "from bpe_fast import Tokenizer\n"
            "vocab = {i: bytes([i]) for i in range(256)}\n"
            "def late():\n"
            "    print(Tokenizer(vocab | {256: b'ab'}, [(b'a', b'b')], ['<|e|>']).encode('abab<|e|>'))\n"
            "    try:\n"
            "        Tokenizer(vocab | {256: b'ab', 257: b'bc', 258: b'abc'},\n"
            "                  [(b'a', b'b'), (b'b', b'c'), (b'a', b'bc')])\n"
            "    except ValueError as e:\n"
            "        print(str(e).split(':')[0])\n"
            "    print(Tokenizer.from_files(os.path.join(folder, 'vocab.json'), os.path.join(folder, 'merges.txt'))"
            ".encode('abab'))\n"
            "import os\n"
            f"folder = {str(tmp_path)!r}\n"
            "Tokenizer(vocab | {256: b'ab'}, [(b'a', b'b')]).save(folder)\n"
            "atexit.register(late)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(__file__))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[256, 256, 257]", "merge 2 (b'a', b'bc')", "[256, 256]"]


def test_a_bool_id_is_refused():
    """The check of a bool id came after operator.index, which makes True the int 1: {..., True: b"q"} was
    accepted as id 1 (the case above with True only replaced key 1, as dict keys True and 1 are one)."""
    import numpy as np

    vocab = {i: bytes([i]) for i in range(2, 256)}
    for key in (True, np.bool_(True)):
        with pytest.raises(TypeError, match=r"vocab id (np\.)?True_? is not an int"):
            Tokenizer({**vocab, key: b"\x01", 0: b"\x00"}, [])


def test_a_special_token_with_the_bytes_of_a_vocab_token_keeps_its_given_id():
    # helper-108: GPT-NeoX's "  " (id 50276) is also the merge "Ġ Ġ"'s token; from_hf reads it so, but the
    # constructor refused the {str: id} that special_tokens gives back ("takes 256"), so a tokenizer could not be
    # made again from its parts. Found in the text first it gives its id; ordinary text merges to the vocab's.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"  ", 257: b"ab", 258: b"  ", 259: b"<|e|>"}
    merges = [(b" ", b" "), (b"a", b"b")]
    tok = Tokenizer(vocab, merges, {"  ": 258, "<|e|>": 259}, pattern=r"\S+|\s+")
    assert tok.special_tokens == {"  ": 258, "<|e|>": 259}
    assert tok.encode("a  b<|e|>") == [97, 258, 98, 259] and tok.encode_ordinary("a  b") == [97, 256, 98]
    assert tok.decode([256, 258]) == "    "
    again = Tokenizer(dict(tok.vocab), list(tok.merges), dict(tok.special_tokens), pattern=tok.pattern)
    again_pickled = pickle.loads(pickle.dumps(again))
    for made in (again, again_pickled):
        assert made.encode("x  ab<|e|>  ") == tok.encode("x  ab<|e|>  ") == [120, 258, 257, 259, 258]
        assert made.encode_ordinary("x  ab  ") == [120, 256, 257, 256]
    # the constructor's own rule stands where no token shares its bytes, and for an id the bytes are not at
    with pytest.raises(ValueError, match=r"special token '  ' is given id 257, but takes 256"):
        Tokenizer(vocab, merges, {"  ": 257}, pattern=r"\S+|\s+")
    assert Tokenizer(vocab, merges, ["  "], pattern=r"\S+|\s+").special_tokens == {"  ": 256}


# ------------------------------------------------------------------------- a merge chain, a special token added

def _chain(depth):
    """The vocabulary and merges of a run of one letter `depth` long: tokens a * 2 .. a * depth, the merges the
    ranks rule makes them by (aaaa is aa + aa, not aaa + a)."""
    ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, depth + 1)}
    tok = Tokenizer.from_tiktoken(ranks, "gpt2")
    return dict(tok.vocab), tok.merges


@pytest.mark.parametrize("path", ["arrays", "python"])
def test_a_merge_chain_with_a_special_token_the_vocabulary_lacks_builds_as_without(monkeypatch, path):
    """A special token not in the vocabulary (it takes the next free id) took the general build: the merge rule's
    check merging every token's bytes, then the tables from the Python objects and the native permanent entries
    found by merging every token's bytes, which grow about with the cube of a run's length (a run 8,000 long:
    209 s, 0.15 s without the special token). It is now added to the arrays' vocabulary, and the tables are the
    split trees' as without it; the Python path (irregular input) builds its tables by the split trees too."""
    vocab, merges = _chain(1000)
    plain = Tokenizer(dict(vocab), list(merges))
    with monkeypatch.context() as m:
        if path == "arrays":        # neither the general build nor the full check is asked
            for name in ("_build_tables", "_table_arrays"):
                m.setattr(T, name, lambda *args, name=name: pytest.fail(f"{name}: the general build"))
            m.setattr(F.GPT2Arrays, "rule_check", lambda self: pytest.fail("the merge rule's full check"))
        else:       # the permanent entries not found by merging every token's bytes
            m.setattr(T, "_plain_arrays", lambda packed_vocab, merges: None)
            m.setattr(T, "BPETables", lambda *args, **kwargs: pytest.fail("BPETables: each token's bytes merged"))
        tok = Tokenizer(dict(vocab), list(merges), ["<|endoftext|>"])
    assert tok.special_tokens == {"<|endoftext|>": 1255} and tok.vocab == {**vocab, 1255: b"<|endoftext|>"}
    assert tok.merges == merges and np.array_equal(tok._tables.permanent_mask(), plain._tables.permanent_mask())
    lengths = [1, 2, 3, 5, 8, 63, 64, 65, 255, 256, 257, 500]
    for n in lengths:
        text = "a" * n
        ids = tok.encode(text)
        assert ids == plain.encode(text) == oracle_encode(text, vocab, merges), n
        assert tok.encode(text + "<|endoftext|>" + text) == ids + [1255] + ids
    for n in (999, 1000, 1001, 2500):       # past the oracle's reach: as without the special token
        assert tok.encode("a" * n) == plain.encode("a" * n)
    assert tok.decode([1255, 1254]) == "<|endoftext|>" + "a" * 1000


def _no_full_check(m):
    """Make the merge rule's check by merging every merged token's bytes (recover_merges, and the native rule_cuts
    that rule_difference_of_indices asked before the split trees) fail the test."""
    import bpe_fast.merge_rule as R

    m.setattr(R, "recover_merges", lambda *args, **kwargs: pytest.fail("recover_merges: every token's bytes merged"))
    m.setattr(R, "rule_cuts", lambda *args: pytest.fail("rule_cuts: every token's bytes merged"), raising=False)


def _refused(merges, k, parts):
    """The constructor's message for merge k of `merges`, made by the ranks rule from `parts`."""
    a, b = merges[k]
    return re.escape(f"merge {k} {merges[k]!r}: {describe_difference(a, b, parts)}")


@pytest.mark.parametrize("path", ["arrays", "python", "shared bytes"])
def test_a_merge_chain_is_refused_by_the_split_trees(monkeypatch, path):
    """A run of one letter with aaa listed as a + aa, where the ranks rule makes aa + a: refused, naming merge 1,
    by the parts the split trees' tables leave each token in (tokens made as listed cost the trees' depth), not by
    merging every token's bytes (recover_merges, rule_cuts: about n^2 log n for a run n long: 47 s for 8,000
    letters, the error path of the arrays' build, of the Python path's (irregular input: here a token's bytes at
    two ids, as GPT-NeoX's "  ") and of from_hf)."""
    vocab, merges = _chain(1000)
    bad = list(merges)
    bad[1] = (b"a", b"aa")
    if path == "shared bytes":
        vocab[max(vocab) + 1] = b"aa"
    with monkeypatch.context() as m:
        _no_full_check(m)
        if path == "python":
            m.setattr(T, "_plain_arrays", lambda packed_vocab, merges: None)
        with pytest.raises(ValueError, match=_refused(bad, 1, (b"aa", b"a"))):
            Tokenizer(dict(vocab), bad)
        if path == "arrays":        # a token the ranks rule cannot make from the tokens before it (aaaaa as
            early = list(merges)    # aa + aaa before aaa: aa, aa, a)
            early[1], early[3] = early[3], early[1]
            with pytest.raises(ValueError, match=_refused(early, 1, None)):
                Tokenizer(dict(vocab), early)


def test_a_merge_chain_listing_each_token_twice_is_checked_by_the_split_trees(monkeypatch):
    """Each token of a run listed with two merges, the ranks rule's second (as lists converted from ranks list a
    token's pairs): the first merges are not the tables' parts, so the rule's check is asked, which compares the
    parts the split trees' tables left (not every token's bytes merged again); the tables ask the later merges'
    pairs too (other_left, other_right), so no token's bytes are merged; the tokenizer is the one of the rule's
    merges alone."""
    vocab, merges = _chain(600)
    twice = []
    for a, b in merges:
        if len(a) > 1 and len(b) > 1:
            twice.append((a[:-1], a[-1:] + b))
        twice.append((a, b))
    plain = Tokenizer(dict(vocab), list(merges))
    import bpe_fast.merge_rule as R

    built = []
    real = R.tables_made_by_merging
    with monkeypatch.context() as m:
        _no_full_check(m)
        m.setattr(R, "tables_made_by_merging", lambda *args, **kwargs: built.append(real(*args, **kwargs)) or built[-1])
        tok = Tokenizer(dict(vocab), twice)
        assert merge_rule_difference(twice) is None
    # the tables by the split trees of each token's merges, the later ones' too: no token's bytes merged (the
    # tokenizer's, the array check's, merge_rule_difference's)
    assert len(built) == 2 and [t.stats()["bytes_merged"] for t in (tok._tables, *built)] == [0, 0, 0]
    for n in (1, 2, 3, 7, 64, 255, 256, 257, 599, 600, 601, 1500):
        assert tok.encode("a" * n) == plain.encode("a" * n), n


def test_from_hf_refuses_a_merge_chain_by_the_split_trees(monkeypatch, tmp_path):
    """from_hf of a run of one letter with merge 1 written "a aa": the file read again in Python names the merge
    (refuse_merges), both checks by the split trees' parts."""
    vocab, merges = _chain(1000)
    path = tmp_path / "tokenizer.json"
    Tokenizer(dict(vocab), list(merges), ["<|endoftext|>"]).export_hf(path)
    doc = json.loads(path.read_text("utf-8"))
    assert doc["model"]["merges"][1] in ("aa a", ["aa", "a"])
    doc["model"]["merges"][1] = "a aa" if isinstance(doc["model"]["merges"][1], str) else ["a", "aa"]
    path.write_text(json.dumps(doc), "utf-8")
    with monkeypatch.context() as m:
        _no_full_check(m)
        with pytest.raises(F.FormatError, match=r"merge 1 \(a aa\): " + re.escape(
                describe_difference(b"a", b"aa", (b"aa", b"a")))):
            Tokenizer.from_hf(path)
