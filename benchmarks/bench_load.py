"""Loading today's encodings: bpe_fast against tiktoken, the same ranks, the same run, alternating.

Run: python -m pytest benchmarks/bench_load.py -s
For cl100k_base and o200k_base (the ranks the bpe-openai wheel ships; skipped without it), four ways in:
- "file": a `.tiktoken` file (the wheel's, decompressed once): bpe_fast's Tokenizer.from_tiktoken(path) against
  tiktoken's load_tiktoken_bpe(path) and tiktoken.Encoding(...);
- "load": tiktoken's habit for a file (Llama 3's and Qwen's tokenizers): Encoding(..., mergeable_ranks=
  load_tiktoken_bpe(path)), each library's own load_tiktoken_bpe (bpe_fast.load's against tiktoken.load's);
- "dict": the ranks already in a dict, as code written for tiktoken holds them: bpe_fast.Encoding(...) against
  tiktoken.Encoding(...), the same keywords;
- "name": bpe_fast.get_encoding(name) against tiktoken.get_encoding(name), both reading the file from tiktoken's
  cache folder (TIKTOKEN_CACHE_DIR, the file under its URL's SHA-1, as tiktoken leaves it), offline.
Each is timed in alternating rounds (5, or 1 with --benchmark-disable); extra_info has both medians and their
ratio (tiktoken's time over bpe_fast's: above 1, bpe_fast loads faster). Both tokenizers then encode the same
text, which must give the same ids. A fresh tokenizer every round: nothing is cached between them.

GPT-2's files against HF tokenizers (skipped without it), the same way:
- "vocab.json+merges.txt": Tokenizer.from_files(vocab, merges, ["<|endoftext|>"]) against
  tokenizers.Tokenizer(models.BPE.from_file(vocab, merges)) with a ByteLevel pre-tokenizer and decoder and the
  special token added;
- "tokenizer.json": that HF tokenizer saved once; Tokenizer.from_hf(path) against tokenizers.Tokenizer.from_file;
- "o200k_base tokenizer.json": the same for a 200k-token file (o200k_base's ranks, written by export_hf; skipped
  without bpe-openai); "..., ignore_merges": that file with the model's ignore_merges set, as in Llama 3's and
  Qwen's files (HF then looks a pre-token up whole first; bpe_fast checks that this changes no id); "..., every
  split": with ignore_merges and every way of writing a token as two as its merges (446k), as transformers'
  TikTokenConverter writes Llama 3's file (bpe_fast reads it as tiktoken's ranks);
- "dict+list": GPT-2's vocabulary and merges already Python objects, as code written for CS336 holds them:
  Tokenizer(vocab, merges, ["<|endoftext|>"]) against models.BPE(vocab, merges) (their str keys), set up the same.
"""
import gzip
import hashlib
import json
import os
import statistics
import time
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import Tokenizer, registry
from bpe_fast import load as bpe_load
from bpe_fast.patterns import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN
from conftest import FIXTURES

tiktoken = pytest.importorskip("tiktoken")
import tiktoken.registry  # noqa: E402  (after the skip: tiktoken is optional)
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

ENCODINGS = {
    "cl100k_base": (GPT4_PATTERN, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
    "o200k_base": (O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
TEXT = "Loading <|endoftext|> the ranks: 12345 naïve café, 日本語のテキスト, def f(x): return x ** 2\n" * 20


@pytest.fixture(scope="module")
def ranks_files(tmp_path_factory):
    """{name: path of its plain .tiktoken file}, from the bpe-openai wheel."""
    import importlib.util

    found = importlib.util.find_spec("bpe_openai")
    if found is None:
        pytest.skip("bpe-openai (which ships the cl100k_base and o200k_base ranks) is not installed")
    folder = tmp_path_factory.mktemp("bench_load")
    paths = {}
    for name in ENCODINGS:
        packed = Path(found.origin).parent / "data" / f"{name}.tiktoken.gz"
        if not packed.exists():
            pytest.skip(f"{packed} is missing")
        paths[name] = folder / f"{name}.tiktoken"
        paths[name].write_bytes(gzip.decompress(packed.read_bytes()))
    return paths


def _timed(load):
    start = time.perf_counter()
    made = load()
    return time.perf_counter() - start, made


def _alternate(benchmark, ours, theirs, peer):
    """ours() and theirs() timed in alternating rounds (5, or 1 with --benchmark-disable), ours once more for
    pytest-benchmark; (our last tokenizer, theirs, {name: median s}, peer's median over ours, rounds), the medians
    and ratio also in extra_info."""
    rounds = 1 if benchmark.disabled else 5
    times = {"bpe_fast": [], peer: []}
    for _ in range(rounds):
        took, tok = _timed(ours)
        times["bpe_fast"].append(took)
        took, other = _timed(theirs)
        times[peer].append(took)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median[peer] / median["bpe_fast"]
    benchmark.extra_info.update({"bpe_fast s": round(median["bpe_fast"], 3), f"{peer} s": round(median[peer], 3),
                                 "ratio": round(ratio, 2), "rounds": rounds, "cpus": os.cpu_count()})
    return tok, other, median, ratio, rounds


@pytest.mark.parametrize("name", list(ENCODINGS))
@pytest.mark.parametrize("way", ["file", "load", "dict", "name"])
def test_load(benchmark, ranks_files, name, way, monkeypatch):
    pattern, specials = ENCODINGS[name]
    path = str(ranks_files[name])
    ranks = load_tiktoken_bpe(path)
    if way == "name":           # by name from tiktoken's cache: the file under its URL's SHA-1, as tiktoken leaves it
        cache = ranks_files[name].parent / "cache"
        cache.mkdir(exist_ok=True)
        url = registry.NAMED[name].files[0].url
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(ranks_files[name].read_bytes())
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        monkeypatch.delenv(registry.ENV_FOLDERS, raising=False)
        # each keeps what it built: forgotten before every round (the caches are the modules' own dicts)
        ours = lambda: registry.ENCODINGS.clear() or bpe_fast.get_encoding(name)  # noqa: E731
        theirs = lambda: tiktoken.registry.ENCODINGS.clear() or tiktoken.get_encoding(name)  # noqa: E731
    elif way == "file":
        ours = lambda: Tokenizer.from_tiktoken(path, pattern, specials)  # noqa: E731
        theirs = lambda: tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(path),  # noqa: E731
                                           special_tokens=specials)
    elif way == "load":         # tiktoken's habit (Llama 3's, Qwen's tokenizers), each library's own functions
        ours = lambda: bpe_fast.Encoding(name, pat_str=pattern, mergeable_ranks=bpe_load.load_tiktoken_bpe(path),  # noqa: E731
                                         special_tokens=specials)
        theirs = lambda: tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(path),  # noqa: E731
                                           special_tokens=specials)
    else:
        ours = lambda: bpe_fast.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)  # noqa: E731
        theirs = lambda: tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)  # noqa: E731
    tok, enc, median, ratio, rounds = _alternate(benchmark, ours, theirs, "tiktoken")
    assert tok.encode(TEXT, allowed_special="all") == enc.encode(TEXT, allowed_special="all")
    print(f"\nloading {name} from a {way}: bpe_fast {median['bpe_fast']:.3f} s, tiktoken {tiktoken.__version__} "
          f"{median['tiktoken']:.3f} s ({ratio:.2f}x; medians of {rounds} alternating rounds)")


GPT2_FILES = ("vocab.json+merges.txt", "tokenizer.json", "o200k_base tokenizer.json",
              "o200k_base tokenizer.json, ignore_merges", "o200k_base tokenizer.json, every split", "dict+list")


def _hf_gpt2(models, pre_tokenizers, decoders, tokenizers, model=None):
    """HF's GPT-2 tokenizer from GPT-2's files (or from `model`, a models.BPE made from Python objects)."""
    if model is None:
        model = models.BPE.from_file(str(FIXTURES / "gpt2_vocab.json"), str(FIXTURES / "gpt2_merges.txt"))
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    return hf


def _hf_bpe_maker(vocab, merges, specials=()):
    """A function making HF tokenizers' byte-level BPE of a vocabulary and merges (models.BPE from their
    byte-level strings), with `specials` added: what Tokenizer(vocab, merges, specials) is timed against."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    from bpe_fast.formats import token_to_str

    keys = {token_to_str(token): i for i, token in vocab.items()}
    strs = [(token_to_str(a), token_to_str(b)) for a, b in merges]

    def make():
        hf = tokenizers.Tokenizer(models.BPE(keys, strs))
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        if specials:
            hf.add_special_tokens(list(specials))
        return hf

    return make


@pytest.mark.parametrize("way", GPT2_FILES)
def test_load_gpt2_files(benchmark, tmp_path, way, request):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    vocab, merges = FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt"
    if "tokenizer.json" in way:
        path = tmp_path / "tokenizer.json"
        if way == "tokenizer.json":
            _hf_gpt2(models, pre_tokenizers, decoders, tokenizers).save(str(path))
        else:       # a 200k-token file as Llama 3's are: o200k_base's ranks written by export_hf
            pattern, specials = ENCODINGS["o200k_base"]
            ranks = request.getfixturevalue("ranks_files")["o200k_base"]
            Tokenizer.from_tiktoken(ranks, pattern, specials).export_hf(path)
            if way.endswith(("ignore_merges", "every split")):       # set, as in Llama 3's and Qwen's files
                doc = json.loads(path.read_text("utf-8"))
                doc["model"]["ignore_merges"] = True
                if way.endswith("every split"):     # as transformers' TikTokenConverter writes Llama 3's
                    from bpe_fast.formats import token_to_str
                    from bpe_fast.ranks import ranked_tokens
                    doc["model"]["merges"] = [[token_to_str(a), token_to_str(b)]
                                              for a, b in ranked_tokens(ranks).every_split_merges()]
                path.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
        ours = lambda: Tokenizer.from_hf(path)  # noqa: E731
        theirs = lambda: tokenizers.Tokenizer.from_file(str(path))  # noqa: E731
    elif way == "dict+list":       # already Python objects, as CS336's constructor takes them, and HF's
        from bpe_fast.formats import read_merges, read_vocab, token_to_str

        ids = read_vocab(vocab)
        pairs = read_merges(merges, ids)
        keys = {token_to_str(token): i for i, token in ids.items()}
        strs = [(token_to_str(a), token_to_str(b)) for a, b in pairs]
        ours = lambda: Tokenizer(ids, pairs, ["<|endoftext|>"])  # noqa: E731
        theirs = lambda: _hf_gpt2(models, pre_tokenizers, decoders, tokenizers,  # noqa: E731
                                  models.BPE(keys, strs))
    else:
        ours = lambda: Tokenizer.from_files(vocab, merges, ["<|endoftext|>"])  # noqa: E731
        theirs = lambda: _hf_gpt2(models, pre_tokenizers, decoders, tokenizers)  # noqa: E731
    tok, hf, median, ratio, rounds = _alternate(benchmark, ours, theirs, "tokenizers")
    assert tok.encode(TEXT) == hf.encode(TEXT, add_special_tokens=False).ids
    print(f"\nloading {way if way.startswith('o200k') else 'GPT-2' + chr(39) + 's ' + way}: bpe_fast {median['bpe_fast']:.3f} s, HF tokenizers {tokenizers.__version__} "
          f"{median['tokenizers']:.3f} s ({ratio:.2f}x; medians of {rounds} alternating rounds)")


def test_load_long_runs(benchmark, tmp_path):
    # the vocabulary training learns from one letter repeated (10 MB): tokens of 2, 4, ... 8 million bytes and
    # their sums, 86 MB of token bytes. Tokenizer(vocab, merges) checks each token is made of its merge's two
    # tokens by the ranks of the pairs along their split trees, not by merging its bytes (80 s before that);
    # against HF tokenizers' models.BPE(vocab, merges) set up the same
    tokenizers = pytest.importorskip("tokenizers")
    corpus = tmp_path / "run.txt"
    corpus.write_bytes(b"a" * 10_000_000)
    with pytest.warns(UserWarning, match="no pairs left"):
        vocab, merges = bpe_fast.train_bpe(corpus, 300, [])
    tok, hf, median, ratio, rounds = _alternate(benchmark, lambda: Tokenizer(vocab, merges),
                                                _hf_bpe_maker(vocab, merges), "tokenizers")
    text = "a" * 100_000 + " aaa"
    assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids
    print(f"\nTokenizer(vocab, merges) of a one-letter corpus's vocabulary ({sum(map(len, vocab.values())) >> 20} MB "
          f"of tokens): bpe_fast {median['bpe_fast']:.3f} s, HF tokenizers {tokenizers.__version__} "
          f"{median['tokenizers']:.3f} s ({ratio:.2f}x; medians of {rounds} alternating rounds)")


@pytest.mark.parametrize("specials", [[], ["<|endoftext|>"]], ids=["no special token", "a special token added"])
def test_load_merge_chain(benchmark, specials):
    # a run of one letter 8,000 long (tokens of 2..8,000 bytes, the merges the ranks rule makes them by):
    # Tokenizer(vocab, merges, specials) with a special token the vocabulary lacks (it takes the next free id)
    # took the general build, the merge rule's check merging every token's bytes and the tables from the Python
    # objects, 209 s; now as without it (the split trees); against HF tokenizers' models.BPE set up the same
    tokenizers = pytest.importorskip("tokenizers")
    ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, 8001)}
    chain = Tokenizer.from_tiktoken(ranks, "gpt2")
    vocab, merges = dict(chain.vocab), chain.merges
    tok, hf, median, ratio, rounds = _alternate(benchmark, lambda: Tokenizer(vocab, merges, specials),
                                                _hf_bpe_maker(vocab, merges, specials),
                                                "tokenizers")
    text = "a" * 10_000 + "".join(specials) + " aaa"
    assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids
    print(f"\nTokenizer(vocab, merges, {specials}) of a run of one letter 8,000 long: bpe_fast "
          f"{median['bpe_fast']:.3f} s, HF tokenizers {tokenizers.__version__} {median['tokenizers']:.3f} s "
          f"({ratio:.2f}x; medians of {rounds} alternating rounds)")



@pytest.mark.parametrize("case", ["refused", "listed twice"])
def test_load_merge_chain_checked(benchmark, case):
    # a run of one letter 8,000 long whose merges the rule's check is asked of: "refused", aaa listed as a + aa
    # (the ranks rule makes aa + a): the constructor's error path (47 s at c07d020: the check merging every
    # token's bytes, in the tables' thread and again for the message); "listed twice", each token listed with two
    # merges, the rule's second (as lists converted from ranks list a token's pairs), accepted, against HF
    # tokenizers' models.BPE of the same merges
    tokenizers = pytest.importorskip("tokenizers")
    ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, 8001)}
    chain = Tokenizer.from_tiktoken(ranks, "gpt2")
    vocab, merges = dict(chain.vocab), list(chain.merges)
    if case == "refused":
        merges[1] = (b"a", b"aa")

        def refused():
            with pytest.raises(ValueError, match=r"^merge 1 \(b'a', b'aa'\): bpe_fast \(as tiktoken\) makes b'aaa'"):
                Tokenizer(vocab, merges)

        rounds = 1 if benchmark.disabled else 3
        times = [_timed(refused)[0] for _ in range(rounds)]
        benchmark.pedantic(refused, rounds=1, iterations=1)
        benchmark.extra_info.update({"bpe_fast s": round(statistics.median(times), 3), "rounds": rounds})
        print(f"\nTokenizer(vocab, merges) of a run of one letter 8,000 long, merge 1 refused: "
              f"{statistics.median(times):.3f} s (median of {rounds})")
        return
    twice = []
    for a, b in merges:
        if len(a) > 1 and len(b) > 1:
            twice.append((a[:-1], a[-1:] + b))
        twice.append((a, b))
    tok, hf, median, ratio, rounds = _alternate(benchmark, lambda: Tokenizer(vocab, twice),
                                                _hf_bpe_maker(vocab, twice), "tokenizers")
    text = "a" * 10_000 + " aaa"
    assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids == chain.encode(text)
    print(f"\nTokenizer(vocab, merges) of a run of one letter 8,000 long, each token listed twice: bpe_fast "
          f"{median['bpe_fast']:.3f} s, HF tokenizers {tokenizers.__version__} {median['tokenizers']:.3f} s "
          f"({ratio:.2f}x; medians of {rounds} alternating rounds)")

@pytest.mark.parametrize("way", ["dict", "file"])
def test_load_ranks_of_merge_chain(benchmark, tmp_path, way):
    # tiktoken's ranks of a run of one letter 8,000 long (the chain above: a, aa, aaa, ... 32 MB of tokens):
    # "dict", bpe_fast.Encoding against tiktoken.Encoding of the same dict; "file", the ranks written to a
    # .tiktoken file, Tokenizer.from_tiktoken(path) against tiktoken.Encoding(load_tiktoken_bpe(path)). The
    # tables' split search rarely found a long token's split (after a power of two), so its bytes were merged:
    # 5-6 s (1.7-1.9 s on a quieter machine) before its neighbours' splits were asked first
    import base64

    ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, 8001)}
    pattern = GPT2_PATTERN
    if way == "dict":
        ours = lambda: bpe_fast.Encoding("chain", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})  # noqa: E731
        theirs = lambda: tiktoken.Encoding("chain", pat_str=pattern, mergeable_ranks=ranks,  # noqa: E731
                                           special_tokens={})
    else:
        path = tmp_path / "chain.tiktoken"
        path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
        ours = lambda: Tokenizer.from_tiktoken(path, pattern)  # noqa: E731
        theirs = lambda: tiktoken.Encoding("chain", pat_str=pattern,  # noqa: E731
                                           mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})
    tok, enc, median, ratio, rounds = _alternate(benchmark, ours, theirs, "tiktoken")
    text = "a" * 10_000 + " aaa"
    assert tok.encode(text) == enc.encode(text)
    print(f"\nloading tiktoken's ranks of a run of one letter 8,000 long from a {way}: bpe_fast "
          f"{median['bpe_fast']:.3f} s, tiktoken {tiktoken.__version__} {median['tiktoken']:.3f} s ({ratio:.2f}x; "
          f"medians of {rounds} alternating rounds)")


def test_load_small_saved_folder(benchmark, tmp_path, corpus_path):
    # a folder Tokenizer.save wrote for a vocabulary under formats.CACHE_MIN_TOKENS (no bpe_fast.npz; 10,000
    # tokens, as CS336 trains on TinyStories): Tokenizer.load reads its text files natively, as from_files does;
    # against HF tokenizers reading the same vocab.json and merges.txt (models.BPE.from_file)
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    from bpe_fast import formats

    result = bpe_fast.train_bpe(corpus_path, 10_000, ["<|endoftext|>"])     # the benchmarks' corpus (--corpus)
    folder = tmp_path / "tok"
    Tokenizer(*result, ["<|endoftext|>"], training=result.training).save(folder)
    assert not (folder / formats.CACHE_FILE).exists()
    vocab, merges = str(folder / "vocab.json"), str(folder / "merges.txt")
    model = lambda: models.BPE.from_file(vocab, merges)  # noqa: E731
    tok, hf, median, ratio, rounds = _alternate(
        benchmark, lambda: Tokenizer.load(folder),
        lambda: _hf_gpt2(models, pre_tokenizers, decoders, tokenizers, model()), "tokenizers")
    assert tok.encode(TEXT) == hf.encode(TEXT, add_special_tokens=False).ids
    print(f"\nTokenizer.load of a saved {len(tok.vocab):,}-token folder: bpe_fast {median['bpe_fast']:.3f} s, HF "
          f"tokenizers {tokenizers.__version__} {median['tokenizers']:.3f} s ({ratio:.2f}x; medians of {rounds} "
          f"alternating rounds)")


_FRESH = """if True:
    import json, sys, time
    start = time.perf_counter()
    import {module} as lib
    imported = time.perf_counter()
    from tiktoken.load import load_tiktoken_bpe
    ranks = load_tiktoken_bpe({path!r})
    built = time.perf_counter()
    enc = lib.Encoding({name!r}, pat_str={pattern!r}, mergeable_ranks=ranks, special_tokens={specials!r})
    first = time.perf_counter()
    again = lib.Encoding({name!r}, pat_str={pattern!r}, mergeable_ranks=ranks, special_tokens={specials!r})
    second = time.perf_counter()
    json.dump({{"import": imported - start, "first": first - built, "second": second - first,
               "ids": enc.encode({text!r}, allowed_special="all")}}, sys.stdout)
"""


@pytest.mark.parametrize("name", ["cl100k_base"])
def test_load_in_a_fresh_process(benchmark, ranks_files, name):
    """What a script that builds one encoding pays: in a fresh interpreter, the import of the library, then its
    first Encoding from a dict of ranks (the encoding modules' own imports and tables made once a process: the
    scanner's Unicode tables, ...), then a second one; each library in its own process, alternating, 5 rounds
    (medians). Neither brings NumPy in, not even bpe_fast's first Encoding (its ranks' and tables' arrays are
    array.array buffers made natively: NumPy was 50-60 ms of it until eb96161), nor, since helper-190's branch
    (dbb57cb..202a52c), `regex`, concurrent.futures or bpe_fast's file readers (the built-in pattern is scanned
    natively; here tiktoken's loader, imported before the clock starts, has brought concurrent.futures)."""
    import subprocess
    import sys

    pattern, specials = ENCODINGS[name]
    path = str(ranks_files[name])
    rounds = 1 if benchmark.disabled else 5
    runs: dict[str, list[dict]] = {"bpe_fast": [], "tiktoken": []}

    def fresh(module):
        code = _FRESH.format(module=module, path=path, name=name, pattern=pattern, specials=specials, text=TEXT)
        # (run from the ranks' folder: `-c` puts the working directory first on sys.path, and a source checkout's
        # bpe_fast, without its compiled modules, would be imported instead of the installed one)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(path))
        return json.loads(done.stdout)

    for _ in range(rounds):
        for module in runs:
            runs[module].append(fresh(module))
    assert runs["bpe_fast"][0]["ids"] == runs["tiktoken"][0]["ids"]
    median = {(module, step): statistics.median(run[step] for run in found) * 1000
              for module, found in runs.items() for step in ("import", "first", "second")}
    benchmark.extra_info.update({f"{module} {step} ms": round(ms, 1) for (module, step), ms in median.items()})
    # (the sums of the medians: bpe_fast's import leaves NumPy to the first Encoding, so the two go together)
    ours_total, theirs_total = (median[module, "import"] + median[module, "first"] for module in runs)
    benchmark.pedantic(fresh, args=("bpe_fast",), rounds=1, iterations=1)
    print(f"\n{name} in a fresh process (medians of {rounds}): import bpe_fast {median['bpe_fast', 'import']:.0f} ms, "
          f"tiktoken {median['tiktoken', 'import']:.0f} ms; first Encoding {median['bpe_fast', 'first']:.1f} against "
          f"{median['tiktoken', 'first']:.1f} ms; second {median['bpe_fast', 'second']:.1f} against "
          f"{median['tiktoken', 'second']:.1f} ms; import and first Encoding {ours_total:.0f} against "
          f"{theirs_total:.0f} ms")


@pytest.mark.parametrize("what", ["export_hf", "save", "export_hf, a run of one letter"])
def test_export_and_save(benchmark, ranks_files, tmp_path, what):
    # writing a big tokenizer: o200k_base's export_hf (tokenizer.json) against HF tokenizers' Tokenizer.save of
    # the same file read back; Tokenizer.save (vocab.json, merges.txt, bpe_fast.json and the cache) against HF
    # saving the same; a merge list making a run of one letter 8,000 long (tokens of 2..8,000 bytes:
    # merge_rule_difference proves it by the split trees, 13 s when it merged every token's bytes) exported
    tokenizers = pytest.importorskip("tokenizers")
    if what.endswith("one letter"):
        ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, 8001)}
        tok = Tokenizer.from_tiktoken(ranks, "gpt2")
    else:
        pattern, specials = ENCODINGS["o200k_base"]
        tok = Tokenizer.from_tiktoken(ranks_files["o200k_base"], pattern, specials)
    tok.merges      # (made when first asked for: not part of the write)
    tok.export_hf(tmp_path / "ours.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "ours.json"))
    if what == "save":
        ours = lambda: tok.save(tmp_path / "saved")  # noqa: E731
    else:
        ours = lambda: tok.export_hf(tmp_path / "ours.json")  # noqa: E731
    _, _, median, ratio, rounds = _alternate(benchmark, ours, lambda: hf.save(str(tmp_path / "theirs.json")),
                                             "tokenizers")
    print(f"\n{what} ({len(tok.vocab):,} tokens): bpe_fast {median['bpe_fast']:.3f} s, HF tokenizers' save "
          f"{tokenizers.__version__} {median['tokenizers']:.3f} s ({ratio:.2f}x; medians of {rounds} alternating "
          "rounds)")
