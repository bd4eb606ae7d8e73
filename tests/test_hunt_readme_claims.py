"""The README's claims, tried as written (helper's README audit): each test names the claim it checks. Expected
values come from tiktoken, HF tokenizers, `regex` or reasoning, never from bpe_fast's own output."""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import regex

import bpe_fast
from bpe_fast import Encoding, Tokenizer, compression_curve, pretokenize, train_bpe
from bpe_fast.patterns import GPT2_PATTERN, GPT4_PATTERN
from corpora import EOT, FIXTURES, gpt2_decode
from openai_ranks import load_ranks, tiktoken_encoding

tiktoken = pytest.importorskip("tiktoken")
README = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
BYTE_RANKS = {bytes([i]): i for i in range(256)}


def _cli(*args, **kwargs):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(kwargs.pop("env", {}))
    kwargs.setdefault("cwd", tempfile.gettempdir())     # (not the checkout, whose bpe_fast/ -m would import)
    return subprocess.run([sys.executable, "-m", "bpe_fast", *args], capture_output=True, text=True, env=env,
                          timeout=60, **kwargs)


# --- continuing a tokenizer (README: "vocab, merges = train_bpe("code.parquet", 52_000, initial=...)") ---

def test_continuing_gpt2_from_its_files_as_the_readme_shows(gpt2):
    # the README's line was initial=Tokenizer.from_files("vocab.json", "merges.txt"): with GPT-2's files that is a
    # ValueError (<|endoftext|>, id 50256, is then a plain token no merge makes); given as a special token, it runs
    lines = (FIXTURES / "gpt2_merges.txt").read_text("utf-8").splitlines()
    published = [tuple(gpt2_decode(part) for part in line.split(" ")) for line in lines
                 if line and not line.startswith("#version")]
    assert len(published) == 50_000
    initial = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", special_tokens=[EOT])
    texts = ["zqxj zqxj zqxj vwvw vwvw " * 20] * 5
    vocab, merges = train_bpe(iter(texts), 50_260, initial=initial)
    assert [tuple(m) for m in merges[:50_000]] == published          # every merge kept, in order
    assert vocab[50256] == EOT.encode()                               # every id kept
    assert len(vocab) == 50_260 and min(set(vocab) - set(range(50257))) == 50257   # new ids after the largest
    plain = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt")
    with pytest.raises(ValueError, match="50256"):     # the README's parenthesis: read as a plain token, refused
        train_bpe(iter(texts), 50_260, initial=plain)


# --- ids too sparse (README, "Special tokens": what tiktoken takes and bpe_fast refuses) ---

def test_ids_too_sparse_are_refused_where_tiktoken_takes_them():
    n = 257
    limit = 4 * n + (1 << 20)          # the README: 4 x the number of tokens + 1,048,576
    for top in (limit, 2_147_483_646):
        ranks = {**BYTE_RANKS, b"ab": top}
        assert tiktoken.Encoding("t", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={}).encode("ab") == [top]
        with pytest.raises(ValueError, match="vocab ids are too sparse"):
            Encoding("b", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    ranks = {**BYTE_RANKS, b"ab": limit - 1}      # one below: taken, tiktoken's ids
    assert Encoding("b", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={}).encode("xab") == [120, limit - 1]
    with pytest.raises(ValueError, match="vocab ids are too sparse"):    # a special token's id counts too
        Encoding("b", pat_str=GPT4_PATTERN, mergeable_ranks=BYTE_RANKS, special_tokens={"<|x|>": 4 * 257 + (1 << 20)})


# --- the API block ---

def test_pretokenize_is_regex_finditer_and_text_no_match_covers_is_skipped_as_tiktoken():
    assert pretokenize("Hello, world!") == ["Hello", ",", " world", "!"]
    text = "ab, cd!! ef"
    assert pretokenize(text, r"\w+") == [m.group() for m in regex.finditer(r"\w+", text)] == ["ab", "cd", "ef"]
    tt = tiktoken.Encoding("w", pat_str=r"\w+", mergeable_ranks=BYTE_RANKS, special_tokens={})
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=r"\w+")
    assert tok.encode(text) == tt.encode(text) == list(b"abcdef")


def test_a_misspelt_name_and_unreadable_patterns_are_refused():
    with pytest.raises(ValueError, match="misspelt|not a built-in pattern's name"):
        pretokenize("ab cd", pattern="GPT2")
    with pytest.raises(ValueError, match=r"\\K"):
        pretokenize("ab cd", pattern=r"\w+\K")
    with pytest.raises(ValueError, match=r"\(\?r\)"):
        pretokenize("ab cd", pattern=r"(?r)\w+")


def test_encode_refuses_a_disallowed_special_token_and_swapping_the_core_as_tiktoken():
    ranks = load_ranks("o200k_base")
    from bpe_fast.patterns import O200K_PATTERN
    made = []
    for make, module in ((tiktoken.Encoding, tiktoken), (Encoding, bpe_fast)):
        enc = make("o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 199999})
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode("hi <|endoftext|>")
        enc._special_tokens = {**enc._special_tokens, "<|im_start|>": 200264}
        enc._core_bpe = module._tiktoken.CoreBPE(enc._mergeable_ranks, enc._special_tokens, enc._pat_str)
        made.append((enc.encode("<|im_start|>user", allowed_special={"<|im_start|>"}),
                     enc.encode("<|im_start|>user", allowed_special="all"), enc.encode("<|im_start|>user")))
    assert made[1] == made[0]
    assert made[0][0] == [200264, 1428]


def test_decode_replaces_by_default_and_takes_strict_and_ignore(gpt2):
    ids = gpt2.encode_pieces([b"a\xffb"])[0]
    assert gpt2.decode(ids) == b"a\xffb".decode("utf-8", "replace")
    assert gpt2.decode(ids, errors="ignore") == "ab"
    with pytest.raises(UnicodeDecodeError):
        gpt2.decode(ids, errors="strict")


def test_encode_with_unstable_and_decode_with_offsets_as_tiktoken():
    tt = tiktoken_encoding("cl100k_base")
    enc = bpe_fast.Encoding("cl100k_base", pat_str=tt._pat_str, mergeable_ranks=load_ranks("cl100k_base"),
                            special_tokens=tt._special_tokens)
    stable, completions = enc.encode_with_unstable("hello fant")
    t_stable, t_completions = tt.encode_with_unstable("hello fant")
    assert stable == t_stable and sorted(map(tuple, completions)) == sorted(map(tuple, t_completions))
    text = "héllo wörld 🎉 日本語"
    assert enc.decode_with_offsets(enc.encode(text)) == tt.decode_with_offsets(tt.encode(text))
    assert enc._encode_bytes(b"caf\xc3") == tt._encode_bytes(b"caf\xc3")


def test_merge_pieces_never_looks_a_piece_up_whole():
    # ranks where b"aaa" is ranked but b"aa" is not: merging a, a, a joins nothing; looked up whole it is one token
    ranks = {**BYTE_RANKS, b"aaa": 256}
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"readme_claims_{os.getpid()}.tiktoken"
    path.write_text("".join(f"{base64.b64encode(k).decode()} {v}\n" for k, v in ranks.items()))
    try:
        tok = Tokenizer.from_tiktoken(path, "gpt4")
    finally:
        path.unlink()
    tt = tiktoken.Encoding("r", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert tok.encode_pieces([b"aaa"]) == [tt._encode_single_piece(b"aaa")] == [[256]]
    assert tok.merge_pieces([b"aaa"]) == [[97, 97, 97]]


# --- "Compatibility with tiktoken and HF tokenizers" ---

def test_a_subclass_is_called_as_tiktoken_calls_it():
    ranks = load_ranks("cl100k_base")
    seen = {}
    for base in (tiktoken.Encoding, Encoding):
        calls = []

        class Sub(base):
            def encode(self, text, **kw):
                calls.append("encode")
                return super().encode(text, **kw)

            def encode_ordinary(self, text):
                calls.append("encode_ordinary")
                return super().encode_ordinary(text)

            def decode_single_token_bytes(self, token):
                calls.append("decode_single_token_bytes")
                return b"X"

        enc = Sub("c", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
        enc.encode_batch(["a", "b"])
        enc.encode_ordinary_batch(["c"])
        decoded = enc.decode_tokens_bytes([64, 65])
        seen[base] = (calls, decoded)
    assert seen[Encoding] == seen[tiktoken.Encoding]
    assert seen[Encoding][1] == [b"X", b"X"]


def test_special_tokens_tiktoken_takes_and_bpe_fast_refuses():
    ranks = load_ranks("cl100k_base")

    def refused(specials, words):
        tiktoken.Encoding("t", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens=specials)   # taken there
        with pytest.raises(ValueError, match=words):
            Encoding("b", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens=specials)

    refused({"<|a|>": 100257, "<|a|>b": 100258}, r"<\|a\|>b.*<\|a\|>")
    refused({"": 100257}, "special tokens must not be empty strings")
    refused({"hello": 100257}, "its bytes are a ranked token")
    refused({"<|x|>": 5}, re.escape("its id 5 is the rank of b'&'"))
    # Tokenizer takes the nested pair, longest first
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], special_tokens={"<|a|>": 256, "<|a|>b": 257})
    assert tok.encode("<|a|>b<|a|>") == [257, 256]


def test_ranks_tiktoken_takes_and_bpe_fast_refuses():
    for ranks, words in (({k: v for k, v in BYTE_RANKS.items() if k != b"&"}, re.escape("b'&'")),
                         ({**BYTE_RANKS, b"": 256}, "empty token"),
                         ({**BYTE_RANKS, b"ab": 2_147_483_647}, "2147483647")):
        tiktoken.Encoding("t", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})
        with pytest.raises(ValueError, match=words):
            Encoding("b", pat_str=GPT4_PATTERN, mergeable_ranks=ranks, special_tokens={})


def test_a_tiktoken_file_listing_a_token_twice_names_both_lines(tmp_path):
    lines = [f"{base64.b64encode(bytes([i])).decode()} {i}" for i in range(256)]
    lines += [f"{base64.b64encode(b'ab').decode()} 256", f"{base64.b64encode(b'cd').decode()} 257",
              f"{base64.b64encode(b'ab').decode()} 258"]
    path = tmp_path / "dup.tiktoken"
    path.write_text("\n".join(lines) + "\n")
    import tiktoken.load
    assert tiktoken.load.load_tiktoken_bpe(str(path))[b"ab"] == 258      # tiktoken keeps the last rank
    with pytest.raises(bpe_fast.formats.FormatError) as caught:
        bpe_fast.load.load_tiktoken_bpe(str(path))
    assert "dup.tiktoken:259" in str(caught.value) and "257" in str(caught.value)
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("\n".join(lines[:10] + ["garbage"] + lines[10:256]) + "\n")
    with pytest.raises(bpe_fast.formats.FormatError, match="bad.tiktoken:11"):     # names the file and line
        Tokenizer.from_tiktoken(bad, "gpt4")


def test_custom_pat_str_readings_and_refusals_as_tiktoken():
    same = [(r"[[:alpha:]]+|.", "abcé def"), (r"\h+|\S+", "a \t b"), (r"\x{e9}+|.", "éé a"), (r"\e|.", "\x1ba"),
            (r"[\p{L}&&[^\p{Han}]]+|.", "ab日本cd"), (r"a|(?=b)|b", "ab")]
    for pat, text in same:
        tt = tiktoken.Encoding("t", pat_str=pat, mergeable_ranks=BYTE_RANKS, special_tokens={})
        be = Encoding("b", pat_str=pat, mergeable_ranks=BYTE_RANKS, special_tokens={})
        assert be.encode(text) == tt.encode(text), pat
    assert Encoding("b", pat_str=r"a|(?=b)|b", mergeable_ranks=BYTE_RANKS, special_tokens={}).encode("ab") == [97]
    for pat in (r"(?:a*|b)+", r"(?U)a+", r"\Ga", r"\p{Print}+", r"\N|.", r"[^\s\S]|."):
        with pytest.raises(ValueError):
            Encoding("b", pat_str=pat, mergeable_ranks=BYTE_RANKS, special_tokens={})


def test_a_merge_list_read_otherwise_is_refused_naming_the_line_or_the_merge(tmp_path):
    from bpe_fast.formats import bytes_to_unicode
    spell = bytes_to_unicode()
    vocab = {spell[i]: i for i in range(256)} | {"ab": 256, "abc": 257, "bc": 258}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\nab c\nb c\na bc\n")
    with pytest.raises(bpe_fast.formats.FormatError, match=r"merges.txt:5"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    v = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc", 258: b"bc"}
    with pytest.raises(ValueError, match=re.escape("(b'a', b'bc')")):
        Tokenizer(v, [(b"a", b"b"), (b"ab", b"c"), (b"b", b"c"), (b"a", b"bc")])


def test_lstrip_takes_unicode_white_space_as_hf(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(FIXTURES / "gpt2_vocab.json"),
                                                              str(FIXTURES / "gpt2_merges.txt")))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = Tokenizer.from_hf(path)
    assert tok.special_lstrip == frozenset({"<mask>"})
    for text in ["a <mask>", "a\u3000\t <mask>b", "a\x1c <mask>", "a\x1c<mask>", "x\u0085<mask>", "x\u200b<mask>"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)


def test_compression_curve_equals_encoding_with_the_tokenizer_cut_to_each_size():
    text = (FIXTURES / "tinystories_sample.txt").read_text("utf-8")
    vocab, merges = train_bpe(iter([text]), 800, [EOT])
    tok = Tokenizer(vocab, merges, special_tokens=[EOT])
    sizes = [257, 300, 555, 800]
    curve = compression_curve(tok, [text], vocab_sizes=sizes)
    n_bytes, n_words = len(text.encode()), len(regex.findall(r"\S+", text))
    for size, bpt, tpw in zip(curve.vocab_sizes, curve.bytes_per_token, curve.tokens_per_word):
        cut = Tokenizer({i: vocab[i] for i in range(size)}, merges[:size - 257], special_tokens=[EOT])
        n = len(cut.encode(text))
        assert bpt == pytest.approx(n_bytes / n) and tpw == pytest.approx(n / n_words), size


# --- "Command line" ---

def test_every_flag_of_the_readme_synopsis_is_in_its_commands_help():
    synopsis = re.search(r"## Command line\n.*?```\n(.*?)```", README, re.S).group(1)
    flags = {}
    command = None
    for line in synopsis.splitlines():
        if line.startswith("bpe-fast "):
            found = re.match(r"bpe-fast (\w+)", line)
            command = found.group(1) if found else None
        for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", line.split("#")[0]):
            flags.setdefault(command, set()).add(flag)
    assert {"train", "encode", "decode", "export", "count", "synth", "show", "report"} <= set(flags)
    assert "--continue-from" in flags["train"] and "--eos-token" in flags["export"]
    for command, names in flags.items():
        if command is None:
            continue
        shown = _cli(command, "--help").stdout
        for name in names:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", shown), (command, name)


def test_dash_o_dash_is_refused_for_a_file_output_and_processes_are_at_most_1024(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world " * 50)
    done = _cli("count", str(corpus), "-o", "-", "-q")
    assert done.returncode != 0 and "./-" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = _cli("count", str(corpus), "-o", "./-", "-q", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "-").is_file()
    done = _cli("-j", "1025", "count", str(corpus), "-o", str(tmp_path / "x.npz"))
    assert done.returncode != 0 and "1024" in done.stderr
    done = _cli("count", str(corpus), "-o", str(tmp_path / "x.npz"), env={"BPE_FAST_NUM_PROCESSES": "1025"})
    assert done.returncode != 0 and "1024" in done.stderr


def test_stdout_whose_reader_stops_early_ends_with_status_141():
    done = subprocess.run(f"{sys.executable} -m bpe_fast synth --size 20MB -o - -q | head -c 10 >/dev/null; "
                          "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True, text=True,
                          timeout=60, cwd=tempfile.gettempdir())
    assert done.stdout.strip() == "141"


def test_encode_gives_a_special_tokens_text_its_id_and_ordinary_does_not(tmp_path, gpt2):
    folder = tmp_path / "tok"
    gpt2.save(folder)
    text = tmp_path / "t.txt"
    text.write_text("hi<|endoftext|>there")
    import numpy as np
    for extra, expected in (((), gpt2.encode("hi") + [50256] + gpt2.encode("there")),
                            (("--ordinary",), gpt2.encode_ordinary("hi<|endoftext|>there"))):
        out = tmp_path / "t.npy"
        done = _cli("encode", "-t", str(folder), str(text), "-o", str(out), "-q", *extra)
        assert done.returncode == 0, done.stderr
        assert np.load(out).tolist() == expected
    assert 50256 not in gpt2.encode_ordinary("hi<|endoftext|>there")
