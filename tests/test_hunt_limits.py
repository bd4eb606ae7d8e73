"""Size limits and 32-bit boundaries (helper hunt): ids near and past int32, the uint16 dtype boundary, counts near
int64, option values past any real size, and memory that grows with the text where it need not.

The multi-GiB runs (encode of 2.2 and 4.3 GB texts, decode to 4.4 GB, a 2**31 + 1 byte pre-token, encode_file and
train_bpe of a 4.3 GB file) are described in the report of that hunt, not run here: this file stays small."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
import warnings

import numpy as np
import pytest

import bpe_fast.tokenizer as tokenizer_module
from bpe_fast import Encoding, GPT2_PATTERN, PretokenCounts, Tokenizer, encode_file, train_from_counts

BYTES = {i: bytes([i]) for i in range(256)}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    """code in a fresh interpreter (a crash there is a failed assertion here, not a dead test session)."""
    # (run outside the checkout: -c puts the working directory, whose bpe_fast/ is the unbuilt source, first)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          cwd=tempfile.gettempdir())


# ---------------------------------------------------------------------------------------------------- ids

@pytest.mark.parametrize("value", [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 97, 2**63, 2**64 + 97, -1, -(2**63) - 1])
def test_decode_refuses_ids_past_int32_naming_them(value: int) -> None:
    tok = Tokenizer(BYTES, [])
    negative = value < 0
    for ids in ([97, value], np.array([97, value], dtype=object)):
        with pytest.raises(ValueError, match=f"{'negative' if negative else 'unknown'} token id {value} "
                                             r"\(at position 1\)"):
            tok.decode(ids)
        with pytest.raises(ValueError, match=f"token id {value} "):
            tok.decode_bytes(ids)
        with pytest.raises(ValueError, match=f"token id {value} "):
            tok.decode_with_offsets(ids)
    if 0 <= value < 2**64:      # a uint64 array: 2**63 and up are not read back as negative ids
        with pytest.raises(ValueError, match=f"unknown token id {value} "):
            tok.decode(np.array([97, value], dtype=np.uint64))


def test_ids_at_the_int32_edge_are_refused_when_built() -> None:
    with pytest.raises(ValueError, match="out of range 0..2147483646"):
        Tokenizer({**BYTES, 2**31 - 1: b"ab"}, [(b"a", b"b")])
    with pytest.raises(ValueError, match="too sparse"):
        Tokenizer({**BYTES, 2**31 - 2: b"ab"}, [(b"a", b"b")])
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="out of range 0..2147483646"):
        Encoding("x", pat_str=GPT2_PATTERN, mergeable_ranks={**ranks, b"ab": 2**31 - 1}, special_tokens={})
    with pytest.raises(ValueError, match="out of range 0..2147483646"):
        Encoding("x", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<s>": 2**31 - 1})


@pytest.mark.parametrize("value", [2**32, 2**32 + 97, -1, 2**64 + 97])
def test_encoding_decode_ids_past_u32_are_overflow_errors_not_wrapped(value: int) -> None:
    """tiktoken's ids are u32: 2**32 + 97 must not wrap to 97 ('a')."""
    enc = Encoding("x", pat_str=GPT2_PATTERN, mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})
    for call in (enc.decode, enc.decode_bytes, enc.decode_tokens_bytes, enc.decode_with_offsets):
        with pytest.raises(OverflowError):
            call([value])
    with pytest.raises(OverflowError):
        enc.decode_single_token_bytes(value)


# --------------------------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("top", [65535, 65536])
def test_uint16_boundary(top: int, tmp_path) -> None:
    """Ids 0..65535 fit uint16 (the default of encode_file then), 65536 does not (uint32, or an error)."""
    tok = Tokenizer.from_tiktoken({bytes([i]): i for i in range(256)}, "gpt2", special_tokens={"<s>": top})
    assert tok.vocab_size == top + 1
    (tmp_path / "in.txt").write_text("a<s>b")
    encode_file(tok, tmp_path / "in.txt", tmp_path / "out.npy", num_processes=1)
    written = np.load(tmp_path / "out.npy")
    assert written.tolist() == [97, top, 98]
    assert written.dtype == (np.uint16 if top < 65536 else np.uint32)
    if top < 65536:
        assert tok.encode_to_numpy("a<s>", dtype=np.uint16).tolist() == [97, top]
        assert tok.encode_utf8_to_numpy(b"a<s>", dtype=np.uint16).tolist() == [97, top]
    else:
        with pytest.raises(ValueError, match="65536, does not fit in uint16"):
            tok.encode_to_numpy("a<s>", dtype=np.uint16)
        with pytest.raises(ValueError, match="does not fit in uint16"):
            encode_file(tok, tmp_path / "in.txt", tmp_path / "out16.npy", num_processes=1, dtype=np.uint16)


# --------------------------------------------------------------------------------------------- counts

def test_counts_at_int64_limits() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert train_from_counts({b"ab": 2**63 - 1}, 257).training["merge_counts"] == [2**63 - 1]
        # two words whose pair counts add up to 2**63 - 2: the same pair, no wrap to a negative count
        result = train_from_counts({b"ab": 2**62, b" ab": 2**61 - 1}, 260)
    assert all(c >= 0 for c in result.training["merge_counts"])
    assert result.training["merge_counts"][0] == 2**62 + 2**61 - 1
    with pytest.raises(ValueError, match="does not fit int64"):
        train_from_counts({b"ab": 2**63}, 257)
    with pytest.raises(ValueError, match="overflow int64"):
        train_from_counts({b"ab": 2**62, b"xab": 2**61}, 258)      # 2**62 + 2 * 2**61 pair occurrences
    with pytest.raises(ValueError, match="more than int64 holds"):
        PretokenCounts({b"ab": 2**62}) + PretokenCounts({b"ab": 2**62})
    assert PretokenCounts({b"ab": 2**62, b"cd": 2**62, b"ef": 2**62}).total() == 3 * 2**62


@pytest.mark.parametrize("values", [[1, 2**63], [2**64 - 1, 5], [1.0, 2**63]])
def test_from_arrays_counts_past_int64_in_a_list_name_the_int(values: list) -> None:
    """A list of ints past int64 becomes a float64 array in NumPy: the error said "(a float64 array)" of ints,
    and the cast's RuntimeWarning ("invalid value encountered in cast") escaped first (an error under -W error)."""
    tokens = np.frombuffer(b"abcd", dtype=np.uint8)
    expected = "an int past int64" if all(type(v) is int for v in values) else "a float64 array"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"counts: values that int64 cannot hold \\({expected}\\)"):
            PretokenCounts.from_arrays(tokens, [0, 2, 4], values)
        with pytest.raises(ValueError, match="counts: values that int64 cannot hold"):
            PretokenCounts.from_arrays(tokens, [0, 2, 4], np.array([np.nan, 2.0**70]))
    assert dict(PretokenCounts.from_arrays(tokens, [0, 2, 4], [1, 2**63 - 1]).items()) == {b"ab": 1, b"cd": 2**63 - 1}


@pytest.mark.parametrize("option", ["vocab", "min_frequency", "max_token_length", "pad_vocab_to_multiple_of"])
@pytest.mark.parametrize("value", [2**31, 2**32, 2**63, 2**64, 10**30])
def test_training_options_past_any_size(option: str, value: int) -> None:
    counts = {b"hello": 5, b"help": 2, b" world": 3}
    kwargs = {} if option == "vocab" else {option: value}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train_from_counts(counts, value if option == "vocab" else 300, **kwargs)
        every = len(train_from_counts(counts, 300)[1])
    assert len(merges) == (0 if option == "min_frequency" else every)
    assert len(vocab) == 256 + len(merges)


# --------------------------------------------------------------------------------- long pre-tokens (native)

def test_long_pretokens_merge_alike_either_side_of_small_piece() -> None:
    """merge_small (up to 128 bytes) and merge_large (the heap and the rank queue, positions in int32) give the
    same ids; the refusal of 2**31 bytes or more is shown in the hunt's report (2 GiB of text)."""
    tok = Tokenizer({**BYTES, 256: b"aa"}, [(b"a", b"a")])
    for n in (127, 128, 129, 1000, 100_001):
        ids = tok.encode("a" * n)
        assert ids == [256] * (n // 2) + [97] * (n % 2)


def test_a_pretoken_of_2_gib_is_refused_before_its_scratch_is_asked_for() -> None:
    """A pre-token of 2**31 bytes or more is refused (merge_piece keeps positions in 32 bits); the encoder used
    to ask for its scratch first, 4 bytes a byte (8 GiB here), and ran out of memory instead where that much
    is not to be had: here the address space is limited to 3 GiB more than the text's."""
    code = textwrap.dedent("""
        import resource
        from bpe_fast import Tokenizer
        tok = Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: b"aa"}, [(b"a", b"a")])
        assert tok.encode("a" * 1001) == [256] * 500 + [97]
        text = "a" * (2**31 + 1)                  # one pre-token of letters (ASCII: its UTF-8 is the str's own)
        vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + (3 << 30), resource.RLIM_INFINITY))
        try:
            tok.encode(text)
        except ValueError as exc:
            print("refused:", exc)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=tempfile.gettempdir())       # (as _run: not the checkout's unbuilt bpe_fast/)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == ("refused: a pre-token of 2147483649 bytes: the encoder merges pre-tokens of "
                                   "less than 2**31 bytes"), done.stdout


# ------------------------------------------------------------------------------ encode_with_offsets' memory

def _offsets_reference(data: bytes, starts: list[int]) -> list[int]:
    """The character holding each token's first byte, as tiktoken's decode_with_offsets counts it."""
    out = []
    for s in starts:
        chars = sum(1 for b in data[:s] if b & 0xC0 != 0x80)
        out.append(max(chars - (data[s] & 0xC0 == 0x80), 0))
    return out


@pytest.mark.parametrize("block", [None, 1, 3, 7, 64])
def test_char_offsets_exact_across_blocks(block: int | None, monkeypatch) -> None:
    if block is not None:
        monkeypatch.setattr(tokenizer_module, "_OFFSET_BLOCK", block, raising=False)
    # "\xa9a" starts inside "é" (c3 a9): a token whose first byte continues a character
    tok = Tokenizer({**BYTES, 256: b"\xa9a", 257: b"aa"}, [(b"\xa9", b"a"), (b"a", b"a")])
    rng = np.random.default_rng(5)
    alphabet = ["a", " ", "é", "€", "😀", "\n", "中"]
    for _ in range(200):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(1, 30))))
        ids, offsets = tok.encode_with_offsets(text)
        data = text.encode("utf-8")
        starts = np.concatenate([[0], np.cumsum(tok.lengths_in(data, ids))[:-1]]).tolist()
        assert offsets.tolist() == _offsets_reference(data, starts), text
        assert offsets.tolist() == tok.decode_with_offsets(ids.tolist())[1]


def test_encode_with_offsets_memory_does_not_grow_eight_bytes_a_byte() -> None:
    """encode_with_offsets held a cumulative count of characters an int64 a byte of text (and NumPy's int64 copy
    of the mask to sum it): about 17 bytes a byte at its peak, so that a 1 GB text needed over 12 GB (a
    MemoryError under a 12 GB limit, where encode_to_numpy took 1.5 GB) and a 2 GB text over 35 GB. Per-token
    arrays (8 bytes a 16-byte token here) and the UTF-8 copy remain."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train_from_counts({b" " + b"a" * 15: 10}, 400)
    tok = Tokenizer(vocab, merges)
    text = (" " + "a" * 15) * (1 << 20)         # 16 MB, 1,048,576 tokens
    tok.encode_with_offsets("warm up")
    tracemalloc.start()
    try:
        ids, offsets = tok.encode_with_offsets(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(ids) == 1 << 20 and offsets[-1] == len(text) - 16 and offsets[1] == 16
    assert peak < 6 * len(text), f"peak {peak / 1e6:.0f} MB for {len(text) / 1e6:.0f} MB of text"


def test_an_encoder_does_not_keep_four_bytes_a_byte_of_its_longest_pretoken() -> None:
    """One pre-token of 25 MB (a run of letters: a DNA sequence, a long word of a corpus that is no prose) left the
    tokenizer's encoder holding 100 MB after the call. The scratch is given back when a call that encodes ends:
    encode (through _encode_bytes), encode_batch on one thread and on two (its threads' encoders kept theirs until
    _trim_scratch), encode_documents_utf8 (the same)."""
    done = _run("""
        import gc, os
        import numpy as np
        from bpe_fast import Tokenizer
        def rss():
            return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"aa"}, [(b"a", b"a")])
        text = "a" * 25_000_000
        data = text.encode()
        tok.encode("warm up")
        tok.encode_batch(["warm up"] * 4, num_threads=2)
        calls = {"encode": lambda: tok.encode(text),
                 "encode_batch 1": lambda: tok.encode_batch([text, "b"], num_threads=1)[0],
                 "encode_batch 2": lambda: tok.encode_batch([text, "b"], num_threads=2)[0],
                 "documents": lambda: tok.encode_documents_utf8(data, np.array([0, len(data)]))}
        for name, call in calls.items():
            gc.collect()
            before = rss()
            ids = call()
            assert len(ids) == 12_500_000, (name, len(ids))
            del ids
            gc.collect()
            print(name, rss() - before)
    """)
    assert done.returncode == 0, done.stderr
    kept = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in done.stdout.splitlines()}
    assert len(kept) == 4, done.stdout
    assert all(n < 40_000_000 for n in kept.values()), f"bytes kept after each call: {kept}"
