"""bpe_fast side by side with the peers that are installed, on the same input, in one run.

    python benchmarks/compare.py [--corpus PATH | --size 50MB] [--vocab-size 10000[,32000...]] [--processes 2]
                                 [--pattern gpt2|gpt4|o200k|llama3|qwen2|tekken|kimi|REGEX] [--encoding cl100k_base|o200k_base]
                                 [--encode-bytes 20MB] [--repeat N] [--only train|encode]
                                 [--peers rustbpe,tokenizers,tiktoken,gigabpe,bpe_openai]
                                 [--out results.md] [--png chart.png]

Training (same file, vocabulary size and pattern; the special token <|endoftext|> excluded from the counts):
  * bpe_fast.train_bpe with P processes;
  * rustbpe, fed the documents split at <|endoftext|> and asked for vocab_size - 1 tokens (it counts 256 bytes
    plus merges, no special token), so both learn the same number of merges;
  * HF tokenizers' BpeTrainer (ByteLevel alphabet, Split(pattern) + ByteLevel pre-tokenizer), twice: on the
    same documents (train_from_iterator), and on the file itself (train([path]), its own fast path, which
    counts the special token's text as a word, so its merges differ more);
  * gigabpe.train_bpe on the file itself, with P threads, ByteLevel pre-tokenizer (GPT-2's regex, so it runs with
    the gpt2 pattern only). It has no initial alphabet: its vocabulary holds the special token, the bytes seen
    in the file and the merges, so it is asked for vocab_size - 256 + (distinct bytes in the file) tokens, which
    gives the same number of merges. Like HF's train([path]) it reads the file line by line and counts the
    special token's text as a word (its merges are HF's train([path]) merges, which is checked too); and it
    breaks ties HF's way, not CS336's lexicographically greatest pair, so its merges differ from bpe_fast's
    from early on.
  rustbpe and HF run on P rayon threads (RAYON_NUM_THREADS). Each peer's merges are compared with bpe_fast's:
  the share identical at the same rank, and the share found anywhere in bpe_fast's list (ties between pairs
  of equal count are broken differently by each library, which moves later merges around).

Encoding, one thread, the same text (the first --encode-bytes of the corpus, cut at a line end, or with
--encode-text fixtures the real texts in tests/fixtures), with
GPT-2's ranks when tests/fixtures/gpt2_vocab.json exists (and the pattern is GPT-2's), with tiktoken's
cl100k_base or o200k_base given --encoding (their ranks ship in the bpe-openai wheel: bpe_fast loads them with
Tokenizer.from_tiktoken, tiktoken from the same file; bpe-openai, a Rust tokenizer with tiktoken's API, joins the
peers, fed pieces of at most 500,000 characters as it refuses longer texts), else with the
tokenizer bpe_fast trains on the corpus: bpe_fast encode and encode_to_numpy, tiktoken encode (special tokens
allowed) and encode_ordinary (against bpe_fast without special tokens), HF tokenizers encode (tokenizer.json
from bpe_fast.export). Encoding a file with P workers: bpe_fast.encode_file (text file to .npy) against
tiktoken encode_ordinary_batch and HF encode_batch on P threads over the documents of the same file, and
tiktoken encode_batch over 4P large parts of it, each also reading the file and writing the same .npy. Every peer's ids are checked against bpe_fast's.
Decoding, one thread: each library's ids of the same text (its own encoding, made before the clock starts) as
a list back to the text with decode and to bytes with decode_bytes (HF: decode); every result is checked to be
the text.

Each measurement runs in a fresh Python process (this script with --worker): imports and loading (setup)
are not timed; the wall time is taken around the work alone, and the peak resident memory is that of the
process and all its workers together (their summed VmRSS sampled every 10 ms, or the process's own VmHWM or
its largest child's ru_maxrss if larger), so it includes the interpreter and the input text.
Runs are interleaved (every tool once, then again) so machine noise hits all alike; the table shows the
fastest run: the best of --repeat runs (default: 3, or 1 for a tool whose first run took over 10 s).
The ratio is the peer's time over bpe_fast's for the same work (above 1: bpe_fast is faster).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EOT = "<|endoftext|>"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"       # copies of the published files, with their licences
PEERS = {"rustbpe": "rustbpe", "tokenizers": "HF tokenizers", "tiktoken": "tiktoken", "gigabpe": "gigabpe",
         "bpe_openai": "bpe-openai"}
# --encoding: tiktoken's encodings whose ranks ship in the bpe-openai wheel, with their pattern and special tokens
ENCODINGS = {
    "cl100k_base": ("gpt4", {EOT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                             "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
    "o200k_base": ("o200k", {EOT: 199999, "<|endofprompt|>": 200018}),
}
BPE_OPENAI_MAX_CHARS = 500_000      # bpe-openai's encode refuses a text of 1,000,000 characters or more
# A peer named here is treated as not installed (for testing the report of a missing peer).
PRETEND_MISSING_ENV = "BPE_FAST_COMPARE_PRETEND_MISSING"
LONG_RUN_SECONDS = 10.0     # a run this long is not repeated unless --repeat says so
SLOW_SETUP_SECONDS = 1.0   # a setup this long is listed under its table
RESULT_MARK = "@@compare-result@@ "


# ================================================================================================ worker side
# Each job kind is a function(spec) that does the setup (imports, loading) and returns (work, save):
# work() is timed; save(result) writes what the parent checks (merges or ids), after the measurement.

def _documents(path):
    """The documents of a text file split at the special token, streamed (empty ones skipped)."""
    with open(path, encoding="utf-8", newline="") as f:
        tail = ""
        while True:
            block = f.read(1 << 22)
            if not block:
                break
            parts = (tail + block).split(EOT)
            tail = parts.pop()
            yield from (p for p in parts if p)
        if tail:
            yield tail


def _read_text(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def _save_merges(path, merges):
    """Merges as JSON (each token's bytes in hex): nothing read back goes through pickle."""
    with open(path, "w", encoding="ascii") as f:
        json.dump([[a.hex(), b.hex()] for a, b in merges], f)


def _load_merges(path):
    with open(path, encoding="ascii") as f:
        return [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in json.load(f)]


def _pairs_from_ranks(tokens):
    """The merge pairs of a rank-ordered token list (256 single bytes first): each token split the way
    tiktoken would encode it with the lower ranks only, which leaves the two parts its merge joined."""
    rank = {}
    pairs = []
    for r, tok in enumerate(tokens):
        if r >= 256:
            parts = [tok[i:i + 1] for i in range(len(tok))]
            while len(parts) > 2:
                best = min(range(len(parts) - 1), key=lambda i: rank.get(parts[i] + parts[i + 1], 1 << 62))
                parts[best:best + 2] = [parts[best] + parts[best + 1]]
            pairs.append(tuple(parts))
        rank[tok] = r
    return pairs


def _hf_steps(pattern):
    """The HF pre-tokenizer steps that give the pattern's pieces, as bpe_fast's HF export spells them for Oniguruma
    (bpe_fast.hf.pre_tokenizer_to_hf: "{1,3}+" without its "+", DeepSeek V3's three Splits, a custom pattern as a
    Removed, inverted Split, StarCoder's Digits; ByteLevel last), as tokenizers objects; a ValueError for one it
    does not spell (set operations Oniguruma lacks, "--")."""
    from bpe_fast.hf import pre_tokenizer_to_hf
    from tokenizers import Regex, pre_tokenizers

    def made(step):
        if step["type"] == "Split":
            return pre_tokenizers.Split(Regex(step["pattern"]["Regex"]), step["behavior"].lower(),
                                        invert=step["invert"])
        if step["type"] == "Digits":
            return pre_tokenizers.Digits(individual_digits=step["individual_digits"])
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=step["use_regex"])

    return [made(step) for step in pre_tokenizer_to_hf(pattern)]


def hf_trainer_and_tokenizer(spec):
    """An HF tokenizers BPE model and BpeTrainer set up as bpe_fast trains (the pattern's pieces, then ByteLevel
    without its regex; vocab_size, <|endoftext|>, all 256 bytes): spec["pattern"], spec["vocab_size"]."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(_hf_steps(spec["pattern"]))
    trainer = trainers.BpeTrainer(vocab_size=spec["vocab_size"], special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tok, trainer


def _save_byte_level_merges(path, pairs):
    """Merges given in HF's byte-level strings (GPT-2's bytes_to_unicode alphabet), saved as bytes."""
    from bpe_fast.formats import str_to_token

    _save_merges(path, [(str_to_token(a), str_to_token(b)) for a, b in pairs])


def _hf_save_merges(spec, tok):
    merges = json.loads(tok.to_str())["model"]["merges"]
    _save_byte_level_merges(spec["out"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges])


def job_train_bpe_fast(spec):
    from bpe_fast import train_bpe

    def work():
        return train_bpe(spec["corpus"], spec["vocab_size"], [EOT], num_processes=spec["processes"],
                         pattern=spec["pattern"])[1]
    return work, lambda merges: _save_merges(spec["out"], list(merges))


def job_train_rustbpe(spec):
    import rustbpe

    from bpe_fast.patterns import tiktoken_anchors        # rustbpe's regex engine is tiktoken's (fancy-regex)

    tok = rustbpe.Tokenizer()
    pattern = tiktoken_anchors(spec["pattern"])

    def work():
        tok.train_from_iterator(_documents(spec["corpus"]), spec["vocab_size"] - 1, pattern=pattern)

    def save(_):
        tokens = [t for t, _ in sorted(tok.get_mergeable_ranks(), key=lambda tr: tr[1])]
        _save_merges(spec["out"], _pairs_from_ranks(tokens))
    return work, save


def job_train_hf_docs(spec):
    tok, trainer = hf_trainer_and_tokenizer(spec)

    def work():
        tok.train_from_iterator(_documents(spec["corpus"]), trainer)
    return work, lambda _: _hf_save_merges(spec, tok)


def job_train_hf_file(spec):
    tok, trainer = hf_trainer_and_tokenizer(spec)

    def work():
        tok.train([spec["corpus"]], trainer)
    return work, lambda _: _hf_save_merges(spec, tok)


def job_train_gigabpe(spec):
    """gigabpe on the file itself, asked for spec["gigabpe_vocab_size"] tokens (its vocabulary holds only the
    bytes seen in the file, see train_jobs); its merges come back in HF's byte-level strings."""
    import gigabpe

    def work():
        return gigabpe.train_bpe([spec["corpus"]], spec["gigabpe_vocab_size"], special_tokens=[EOT],
                                 pretokenizer="bytelevel", threads=spec["processes"])[1]
    return work, lambda merges: _save_byte_level_merges(spec["out"], merges)


def _load_bpe_fast_tokenizer(spec, specials):
    from bpe_fast import Tokenizer

    t = spec["tokenizer"]
    if "dir" in t:
        tok = Tokenizer.load(t["dir"])
        return Tokenizer(dict(tok.vocab), list(tok.merges), specials, tok.pattern) if not specials else tok
    if "tiktoken" in t:         # ranks no merge list says (Llama 3's): read from the ranks file, as tiktoken
        return Tokenizer.from_tiktoken(t["tiktoken"], t["pattern"],
                                       {s: i for s, i in t["special_ids"].items() if s in specials})
    return Tokenizer.from_files(t["vocab"], t["merges"], specials, t["pattern"])


def _save_ids(spec, ids):
    import numpy as np

    np.save(spec["out"], np.asarray(ids, dtype=np.int64))


def _id_dtype(n_vocab):
    import numpy as np

    return np.uint16 if n_vocab <= 1 << 16 else np.uint32


def job_encode_bpe_fast(spec):
    tok = _load_bpe_fast_tokenizer(spec, spec["specials"])
    text = _read_text(spec["text"])
    return (lambda: tok.encode(text)), (lambda ids: _save_ids(spec, ids))


def job_encode_numpy_bpe_fast(spec):
    tok = _load_bpe_fast_tokenizer(spec, spec["specials"])
    text = _read_text(spec["text"])
    dtype = _id_dtype(tok.vocab_size)
    return (lambda: tok.encode_to_numpy(text, dtype)), (lambda ids: _save_ids(spec, ids))


def job_encode_file_bpe_fast(spec):
    from bpe_fast import encode_file

    tok = _load_bpe_fast_tokenizer(spec, spec["specials"])

    def work():
        encode_file(tok, spec["text"], spec["npy"], num_processes=spec["processes"])

    def save(_):
        shutil.copyfile(spec["npy"], spec["out"])
    return work, save


def _tiktoken_encoding(spec):
    import base64

    import tiktoken

    ranks = {}
    with open(spec["tokenizer"]["tiktoken"], "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    specials = {s: i for s, i in spec["tokenizer"]["special_ids"].items()}
    from bpe_fast.patterns import tiktoken_anchors        # bpe_fast's pattern as tiktoken spells it

    return tiktoken.Encoding("compare", pat_str=tiktoken_anchors(spec["tokenizer"]["pattern"]), mergeable_ranks=ranks,
                             special_tokens=specials)


def job_encode_tiktoken(spec):
    enc = _tiktoken_encoding(spec)
    text = _read_text(spec["text"])
    allowed = set(spec["tokenizer"]["special_ids"])
    return (lambda: enc.encode(text, allowed_special=allowed)), (lambda ids: _save_ids(spec, ids))


def job_encode_ordinary_tiktoken(spec):
    enc = _tiktoken_encoding(spec)
    text = _read_text(spec["text"])
    return (lambda: enc.encode_ordinary(text)), (lambda ids: _save_ids(spec, ids))


def job_encode_hf(spec):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(spec["tokenizer"]["hf_json"])
    text = _read_text(spec["text"])
    return (lambda: tok.encode(text).ids), (lambda ids: _save_ids(spec, ids))


def _pieces_for_bpe_openai(text):
    """The text cut into pieces of at most BPE_OPENAI_MAX_CHARS characters, each cut just after a newline that
    an ASCII letter follows: there the built-in patterns always end a pre-token, so the ids are the same."""
    pieces, start = [], 0
    while len(text) - start > BPE_OPENAI_MAX_CHARS:
        cut = start + BPE_OPENAI_MAX_CHARS
        while cut > start and not (text[cut - 1] == "\n" and text[cut].isascii() and text[cut].isalpha()):
            cut -= 1
        if cut == start:
            raise ValueError("bpe-openai: no newline before a letter to cut the text at")
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def job_encode_bpe_openai(spec):
    import bpe_openai

    enc = bpe_openai.get_encoding(spec["tokenizer"]["encoding"])
    enc._runtime.config.chunk_limit = 0     # it refuses results over 200,000 tokens otherwise
    pieces = _pieces_for_bpe_openai(_read_text(spec["text"]))

    def work():
        ids = []
        for piece in pieces:
            ids += enc.encode(piece, allowed_special="all")
        return ids
    return work, (lambda ids: _save_ids(spec, ids))


def _write_documents_npy(path, per_doc, eot_id, dtype):
    """The ids of the documents joined by the special token's id, written as a .npy (what encode_file
    writes for the whole file)."""
    import numpy as np

    total = sum(map(len, per_doc)) + len(per_doc) - 1
    out = np.empty(max(total, 0), dtype=dtype)
    pos = 0
    for k, ids in enumerate(per_doc):
        if k:
            out[pos] = eot_id
            pos += 1
        out[pos:pos + len(ids)] = ids
        pos += len(ids)
    np.save(path, out)


def job_encode_batch_tiktoken(spec):
    enc = _tiktoken_encoding(spec)
    eot_id = spec["tokenizer"]["special_ids"][EOT]
    dtype = _id_dtype(enc.n_vocab)

    def work():
        docs = _read_text(spec["text"]).split(EOT)
        _write_documents_npy(spec["npy"], enc.encode_ordinary_batch(docs, num_threads=spec["processes"]),
                             eot_id, dtype)
    return work, lambda _: shutil.copyfile(spec["npy"], spec["out"])


def _cut_at_specials(text, pieces):
    """The text in about `pieces` parts, each cut just before a special token (so encoding the parts one by
    one gives the ids of the whole)."""
    cuts = [0]
    for k in range(1, pieces):
        at = text.find(EOT, max(cuts[-1] + 1, len(text) * k // pieces))
        if at < 0:
            break
        cuts.append(at)
    cuts.append(len(text))
    return [text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def job_encode_chunks_tiktoken(spec):
    import numpy as np

    enc = _tiktoken_encoding(spec)
    allowed = set(spec["tokenizer"]["special_ids"])
    dtype = _id_dtype(enc.n_vocab)

    def work():
        parts = _cut_at_specials(_read_text(spec["text"]), 4 * spec["processes"])
        per_part = enc.encode_batch(parts, num_threads=spec["processes"], allowed_special=allowed)
        np.save(spec["npy"], np.concatenate([np.asarray(ids, dtype=dtype) for ids in per_part]))
    return work, lambda _: shutil.copyfile(spec["npy"], spec["out"])


def job_encode_batch_hf(spec):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(spec["tokenizer"]["hf_json"])
    eot_id = spec["tokenizer"]["special_ids"][EOT]
    dtype = _id_dtype(tok.get_vocab_size())

    def work():
        docs = _read_text(spec["text"]).split(EOT)
        per_doc = [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]
        _write_documents_npy(spec["npy"], per_doc, eot_id, dtype)
    return work, lambda _: shutil.copyfile(spec["npy"], spec["out"])


def _decode_job(encode, decode, spec):
    """Decode the ids `encode` gives for the text (made first, not timed) with `decode`; the result, text or
    bytes, is saved as bytes for the check."""
    ids = list(encode(_read_text(spec["text"])))

    def save(out):
        Path(spec["out"]).write_bytes(out if isinstance(out, bytes) else out.encode("utf-8"))
    return (lambda: decode(ids)), save


def job_decode_bpe_fast(spec):
    tok = _load_bpe_fast_tokenizer(spec, [EOT])
    what = tok.decode_bytes if spec["bytes"] else tok.decode
    return _decode_job(tok.encode, what, spec)


def job_decode_tiktoken(spec):
    enc = _tiktoken_encoding(spec)
    what = enc.decode_bytes if spec["bytes"] else enc.decode
    return _decode_job(lambda text: enc.encode(text, allowed_special="all"), what, spec)


def job_decode_hf(spec):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(spec["tokenizer"]["hf_json"])
    return _decode_job(lambda text: tok.encode(text).ids, lambda ids: tok.decode(ids, skip_special_tokens=False),
                       spec)


def job_decode_bpe_openai(spec):
    import bpe_openai

    enc = bpe_openai.get_encoding(spec["tokenizer"]["encoding"])
    enc._runtime.config.chunk_limit = 0

    def encode(text):
        ids = []
        for piece in _pieces_for_bpe_openai(text):
            ids += enc.encode(piece, allowed_special="all")
        return ids
    return _decode_job(encode, enc.decode_bytes if spec["bytes"] else enc.decode, spec)


JOB_KINDS = {
    "train.bpe_fast": job_train_bpe_fast,
    "train.rustbpe": job_train_rustbpe,
    "train.hf_docs": job_train_hf_docs,
    "train.hf_file": job_train_hf_file,
    "train.gigabpe": job_train_gigabpe,
    "encode.bpe_fast": job_encode_bpe_fast,
    "encode_numpy.bpe_fast": job_encode_numpy_bpe_fast,
    "encode_file.bpe_fast": job_encode_file_bpe_fast,
    "encode.tiktoken": job_encode_tiktoken,
    "encode_ordinary.tiktoken": job_encode_ordinary_tiktoken,
    "encode.hf": job_encode_hf,
    "encode.bpe_openai": job_encode_bpe_openai,
    "encode_batch.tiktoken": job_encode_batch_tiktoken,
    "encode_chunks.tiktoken": job_encode_chunks_tiktoken,
    "encode_batch.hf": job_encode_batch_hf,
    "decode.bpe_fast": job_decode_bpe_fast,
    "decode.tiktoken": job_decode_tiktoken,
    "decode.hf": job_decode_hf,
    "decode.bpe_openai": job_decode_bpe_openai,
}


def worker_main():
    """Run one job (its spec as JSON on stdin); print its measurement as one JSON line."""
    import resource

    spec = json.loads(sys.stdin.read())
    t0 = time.perf_counter()
    work, save = JOB_KINDS[spec["kind"]](spec)
    t1 = time.perf_counter()
    sampler = TreeRssSampler()
    result = work()
    t2 = time.perf_counter()
    tree_peak = sampler.stop()
    rss_self = peak_rss_self_kb()
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if spec.get("out"):
        save(result)
    print(RESULT_MARK + json.dumps({"setup": t1 - t0, "seconds": t2 - t1,
                                    "rss_mb": max(tree_peak, rss_self, rss_children) / 1024}), flush=True)
    return 0


class TreeRssSampler:
    """The peak of the summed resident memory of this process and all its descendants, sampled every
    10 ms by a thread (Linux /proc; elsewhere 0): what a tool that forks workers holds at once."""

    def __init__(self, interval=0.01):
        import threading
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval):
        while not self._stop.wait(interval):
            self.peak = max(self.peak, _tree_rss_kb(os.getpid()))

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


def tree_rss_kb(root=None):
    """The summed VmRSS (KB) of process root (default: this one) and all its descendants now (Linux; else 0)."""
    return _tree_rss_kb(os.getpid() if root is None else root)


def _tree_rss_kb(root, children=None):
    """The summed VmRSS (KB) of process root and all its descendants, whichever of their threads started them.
    children: a function pid -> its children's pids (default: _child_lister())."""
    children = children or _child_lister()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError):
            continue
        todo.extend(children(pid))
    return total


def _child_lister():
    """A function pid -> the pids of its children. Linux lists a child under the thread that started it
    (/proc/PID/task/TID/children), so every thread's list is read (a pool started from a thread is not the main
    thread's); a kernel built without those lists (CONFIG_PROC_CHILDREN) is answered from every process's parent
    in /proc/*/stat, read once per sample (about 15 us a process)."""
    if os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return _children_of_every_thread
    return _children_by_parent()


def _children_by_parent():
    """pid -> its children's pids, from every process's parent in /proc/*/stat, as they are now."""
    by_parent = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return lambda pid: ()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rfind(b")") + 2:].split(None, 2)[1])     # after "pid (comm) state"
        except (OSError, ValueError, IndexError):
            continue
        by_parent.setdefault(ppid, []).append(int(name))
    return lambda pid: by_parent.get(pid, ())


def _children_of_every_thread(pid):
    kids = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue            # the thread ended meanwhile (its children went to another of the threads)
    return kids


def peak_rss_self_kb():
    """This process's peak resident memory in KB. On Linux VmHWM, not RUSAGE_SELF's ru_maxrss: the kernel
    carries ru_maxrss over an exec from the process that forked, so a fresh worker would report at least the
    parent script's size."""
    import resource

    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# ================================================================================================ parent side

class Job:
    """One row of a table: a tool doing a piece of work, measured over one or more runs."""

    def __init__(self, section, label, kind, spec, *, tool, baseline=None, reference=None, check=None, env=None,
                 status=None, same_as=None):
        self.section = section
        self.label = label
        self.kind = kind
        self.spec = spec
        self.tool = tool              # "bpe_fast" or a key of PEERS
        self.baseline = baseline      # the bpe_fast Job doing the same work: time / its time
        self.reference = reference or baseline   # the bpe_fast Job whose merges or ids this one must match
        self.check = check            # "merges", "ids" or None
        self.same_as = same_as        # (Job, name): a peer whose merges this one's should equal exactly
        self.env = env or {}
        self.status = status          # None: to run; else why it is not run, or why it failed
        self.runs = []                # (seconds, setup seconds, rss MB)
        self.agreement = ""

    @property
    def best(self):
        return min(r[0] for r in self.runs) if self.runs else None

    @property
    def rss(self):
        return max(r[2] for r in self.runs) if self.runs else None

    @property
    def setup(self):
        return min(r[1] for r in self.runs) if self.runs else None


def run_once(job, save, timeout):
    spec = dict(job.spec, kind=job.kind)
    if not save:
        spec.pop("out", None)
    env = dict(os.environ, **job.env)
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"], input=json.dumps(spec),
                              capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        job.status = f"failed: no result within {timeout:.0f} s"
        return
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            r = json.loads(line[len(RESULT_MARK):])
            job.runs.append((r["seconds"], r["setup"], r["rss_mb"]))
            return
    err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    job.status = f"failed (exit {proc.returncode}): {err[-1] if err else 'no output'}"
    sys.stderr.write(f"{job.label} failed:\n{proc.stderr}\n")


def run_section(jobs, repeat, timeout, log):
    """Every job once, in turn; then again (all of them with --repeat, else those under LONG_RUN_SECONDS)
    until each has its runs."""
    todo = [j for j in jobs if j.status is None]
    rounds = repeat or 3
    for r in range(rounds):
        for job in todo:
            if job.status is not None:
                continue
            if r > 0 and repeat is None and job.best is not None and job.best > LONG_RUN_SECONDS:
                continue
            run_once(job, save=(r == 0), timeout=timeout)
            if job.runs and job.status is None:
                s, setup, rss = job.runs[-1]
                log(f"  run {r + 1}: {job.label}: {s:.2f} s (setup {setup:.2f} s), {rss:.0f} MB")


def peer_status(peer, wanted):
    import importlib.util

    if peer not in wanted:
        return "not run (--peers)"
    pretend = {p.strip() for p in os.environ.get(PRETEND_MISSING_ENV, "").split(",") if p.strip()}
    if peer in pretend or importlib.util.find_spec(peer) is None:
        return "not installed"
    return None


def prepare_corpus(args, workdir, log):
    from bpe_fast.synthetic import generate, parse_size

    if args.corpus:
        path = Path(args.corpus).resolve()
        if not path.is_file():
            raise SystemExit(f"compare.py: --corpus {args.corpus}: no such file")
        if path.stat().st_size == 0:        # every row "0.0 MB/s", ratios of no work, peers' jobs crashing
            raise SystemExit(f"compare.py: --corpus {args.corpus}: empty; give a corpus with text in it")
        return path, f"{path} ({path.stat().st_size / 1e6:.1f} MB)"
    size = parse_size(args.size)
    path = workdir / "corpus.txt"
    t = time.perf_counter()
    generate(path, size, seed=args.seed)
    log(f"generated {size / 1e6:.1f} MB synthetic corpus (seed {args.seed}) in {time.perf_counter() - t:.1f} s")
    return path, f"bpe_fast.synthetic, {size / 1e6:.1f} MB, seed {args.seed} (TinyStories-like, mixed-language)"


FIXTURE_TEXTS = ["corpus.en", "tinystories_sample.txt", "german.txt", "address.txt"]


def prepare_encode_text(source, corpus, nbytes, workdir):
    """(path, bytes, description) of the text the encoding rows encode: the first nbytes of the corpus, cut
    after its last newline (so never inside a character), or the fixture texts joined by newlines."""
    if source == "fixtures":
        missing = [n for n in FIXTURE_TEXTS if not (FIXTURES / n).exists()]
        if missing:
            raise SystemExit(f"compare.py: --encode-text fixtures: {', '.join(missing)} not in {FIXTURES}")
        data = b"\n".join((FIXTURES / n).read_bytes() for n in FIXTURE_TEXTS)
        what = f"the fixture texts ({', '.join(FIXTURE_TEXTS)}), {len(data) / 1e3:.0f} KB"
    else:
        with open(corpus, "rb") as f:
            data = f.read(nbytes)
        cut = data.rfind(b"\n") + 1
        if cut:
            data = data[:cut]
        else:
            data = data.decode("utf-8", "ignore").encode("utf-8")
        what = f"the first {len(data) / 1e6:.1f} MB of the corpus (cut at a line end)"
    path = workdir / "encode.txt"
    path.write_bytes(data)
    return path, len(data), what


def prepare_tokenizer(args, pattern, corpus, workdir, trained_merges, log):
    """The tokenizer for the encoding jobs, written in each library's format: (spec, description)."""
    from bpe_fast import Tokenizer, export, train_bpe
    from bpe_fast.patterns import GPT2_PATTERN

    vocab_json, merges_txt = FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt"
    if args.encoding:
        return _prepare_encoding(args.encoding, pattern, workdir)
    if args.ranks:
        return _prepare_ranks(args.ranks, pattern, workdir)
    if pattern == GPT2_PATTERN and vocab_json.exists() and merges_txt.exists():
        tok = Tokenizer.from_files(vocab_json, merges_txt, [EOT], pattern)
        spec = {"vocab": str(vocab_json), "merges": str(merges_txt)}
        what = f"GPT-2's ranks ({tok.vocab_size:,} tokens, from {FIXTURES})"
    else:
        if trained_merges is None:
            log("training the encoding tokenizer with bpe_fast (no GPT-2 fixtures)")
            vocab, merges = train_bpe(corpus, args.vocab_size, [EOT], num_processes=args.processes,
                                      pattern=pattern)
        else:
            merges = trained_merges
            vocab = {i: bytes([i]) for i in range(256)}
            vocab[256] = EOT.encode()
            vocab.update({257 + k: a + b for k, (a, b) in enumerate(merges)})
        tok = Tokenizer(vocab, merges, [EOT], pattern)
        tok.save(workdir / "tokenizer")
        spec = {"dir": str(workdir / "tokenizer")}
        why = "no GPT-2 fixtures" if pattern == GPT2_PATTERN else "pattern is not GPT-2's"
        what = f"a {tok.vocab_size:,}-token vocabulary bpe_fast trained on the corpus ({why})"
    spec["pattern"] = pattern
    spec["tiktoken"] = str(workdir / "ranks.tiktoken")
    export.export_tiktoken(tok, spec["tiktoken"])
    spec["special_ids"] = dict(tok.special_tokens)
    if hasattr(export, "export_hf"):
        spec["hf_json"] = str(workdir / "tokenizer.json")
        export.export_hf(tok, spec["hf_json"])
    return spec, what


def _prepare_encoding(name, pattern, workdir):
    """The tokenizer spec for tiktoken's encoding `name`, its ranks read from the bpe-openai wheel: bpe_fast
    loads them with Tokenizer.from_tiktoken, tiktoken from the same file, HF from bpe_fast's export."""
    import gzip
    import importlib.util

    found = importlib.util.find_spec("bpe_openai")
    if found is None:
        raise SystemExit(f"compare.py: --encoding {name} reads its ranks from the bpe-openai package: "
                         "pip install bpe-openai (or '.[bench]')")
    source = Path(found.origin).parent / "data" / f"{name}.tiktoken.gz"
    ranks = workdir / f"{name}.tiktoken"
    with gzip.open(source, "rb") as f:
        ranks.write_bytes(f.read())
    spec, tok = _ranks_spec(ranks, pattern, ENCODINGS[name][1], workdir)
    spec["encoding"] = name
    return spec, f"{name}'s ranks ({tok.vocab_size:,} tokens, from {source})"


def _prepare_ranks(path, pattern, workdir):
    """The tokenizer spec for a tiktoken ranks file of one's own (--ranks: a .tiktoken file, as Llama 3's and
    Llama 4's tokenizer.model), its one special token <|endoftext|> after the ranks."""
    import gzip

    ranks = workdir / "ranks.tiktoken"
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as f:
        ranks.write_bytes(f.read())
    count = sum(1 for line in ranks.read_bytes().splitlines() if line.strip())
    spec, tok = _ranks_spec(ranks, pattern, {EOT: count}, workdir)
    return spec, f"the ranks of {path} ({tok.vocab_size:,} tokens)"


def _ranks_spec(ranks, pattern, specials, workdir):
    """(spec, bpe_fast tokenizer) for a ranks file: bpe_fast loads it with Tokenizer.from_tiktoken (and saves it),
    tiktoken reads the same file, HF bpe_fast's export (when it spells the pattern for Oniguruma)."""
    from bpe_fast import Tokenizer, export

    tok = Tokenizer.from_tiktoken(ranks, pattern, special_tokens=specials)
    spec = {"pattern": pattern, "tiktoken": str(ranks), "special_ids": dict(specials),
            "hf_json": str(workdir / "tokenizer.json")}
    if not tok.by_ranks_only:       # (one that is cannot be saved: its jobs read the ranks file)
        tok.save(workdir / "tokenizer")
        spec["dir"] = str(workdir / "tokenizer")
    try:
        export.export_hf(tok, spec["hf_json"])
    except ValueError as exc:           # a pattern the export does not spell for Oniguruma, ranks no merge says
        del spec["hf_json"]
        spec["hf_why"] = f"not run (bpe_fast's HF export refuses it: ...{str(exc)[-70:]})"
    return spec, tok


def byte_alphabet_size(path):
    """How many distinct byte values the file holds (read in blocks; the special token's bytes included)."""
    import numpy as np

    seen = np.zeros(256, dtype=bool)
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            seen |= np.bincount(np.frombuffer(block, dtype=np.uint8), minlength=256) > 0
    return int(seen.sum())


def train_jobs(args, pattern, corpus, workdir, wanted, vocab_size, alphabet_size=None):
    """The training rows for one vocabulary size. alphabet_size (the file's distinct bytes) sizes gigabpe's
    vocabulary; computed here when gigabpe runs and it is None."""
    from bpe_fast.patterns import GPT2_PATTERN

    common = {"corpus": str(corpus), "vocab_size": vocab_size, "pattern": pattern, "processes": args.processes}
    threads = {"RAYON_NUM_THREADS": str(args.processes)}
    base = Job("train", f"bpe_fast `train_bpe` ({args.processes} processes)", "train.bpe_fast",
               dict(common, out=str(workdir / f"merges.bpe_fast.{vocab_size}.json")), tool="bpe_fast")
    jobs = [base]
    for peer, kind, label in [
        ("rustbpe", "train.rustbpe", f"rustbpe `train_from_iterator` ({args.processes} threads)"),
        ("tokenizers", "train.hf_docs", f"HF tokenizers BpeTrainer, `train_from_iterator` ({args.processes} threads)"),
        ("tokenizers", "train.hf_file", f"HF tokenizers BpeTrainer, `train([file])` ({args.processes} threads)"),
    ]:
        status = peer_status(peer, wanted)
        if status is None and peer == "tokenizers":
            try:
                _hf_steps(pattern)
            except ValueError as exc:
                status = f"not run (bpe_fast's HF export refuses the pattern: {str(exc)[-60:]})"
        jobs.append(Job("train", label, kind, dict(common, out=str(workdir / f"merges.{kind}.{vocab_size}.json")),
                        tool=peer, baseline=base, check="merges", env=threads, status=status))
    # gigabpe's vocabulary is the special token, the byte-level characters seen in the file (no initial
    # alphabet of all 256) and the merges: ask for as many merges as bpe_fast learns (vocab_size - 257)
    status = peer_status("gigabpe", wanted)
    if status is None and pattern != GPT2_PATTERN:
        status = "not run (its pre-tokenizer is GPT-2's pattern only)"
    spec = dict(common, out=str(workdir / f"merges.train.gigabpe.{vocab_size}.json"))
    if status is None:
        spec["gigabpe_vocab_size"] = vocab_size - 257 + 1 + (alphabet_size or byte_alphabet_size(corpus))
    hf_file = next(j for j in jobs if j.kind == "train.hf_file")
    jobs.append(Job("train", f"gigabpe `train_bpe` ({args.processes} threads)", "train.gigabpe", spec,
                    tool="gigabpe", baseline=base, check="merges", env=threads, status=status,
                    same_as=(hf_file, "HF `train([file])`")))
    return jobs


def encode_jobs(args, tokenizer, text_path, workdir, wanted):
    from bpe_fast.patterns import resolve_pattern

    P = args.processes
    common = {"tokenizer": tokenizer, "text": str(text_path), "processes": P}
    one = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    many = {"RAYON_NUM_THREADS": str(P), "TOKENIZERS_PARALLELISM": "true"}

    def spec(name, **extra):
        return dict(common, out=str(workdir / f"ids.{name}.npy"), **extra)

    bpe_openai_status = (peer_status("bpe_openai", wanted)
                         or ("not run (only with --encoding cl100k_base|o200k_base)" if "encoding" not in tokenizer
                             else None if tokenizer["pattern"] == resolve_pattern(ENCODINGS[tokenizer["encoding"]][0])
                             else "not run (its encodings have their own patterns)"))
    enc = Job("encode", "bpe_fast `encode`", "encode.bpe_fast", spec("bpe_fast", specials=[EOT]), tool="bpe_fast")
    plain = Job("encode", "bpe_fast `encode`, no special tokens", "encode.bpe_fast",
                spec("bpe_fast_plain", specials=[]), tool="bpe_fast")
    jobs = [
        enc,
        Job("encode", "bpe_fast `encode_to_numpy`", "encode_numpy.bpe_fast", spec("bpe_fast_numpy", specials=[EOT]),
            tool="bpe_fast", reference=enc, check="ids"),
        Job("encode", "tiktoken `encode` (allowed_special)", "encode.tiktoken", spec("tiktoken"), tool="tiktoken",
            baseline=enc, check="ids", status=peer_status("tiktoken", wanted)),
        Job("encode", "HF tokenizers `encode`", "encode.hf", spec("hf"), tool="tokenizers", baseline=enc,
            check="ids", env=one, status=peer_status("tokenizers", wanted)
            or (None if "hf_json" in tokenizer else tokenizer.get("hf_why", "no HF exporter in bpe_fast.export"))),
        Job("encode", f"bpe-openai `encode` (allowed_special, in pieces of {BPE_OPENAI_MAX_CHARS:,} characters)",
            "encode.bpe_openai", spec("bpe_openai"), tool="bpe_openai", baseline=enc, check="ids",
            status=bpe_openai_status),
        plain,
        Job("encode", "tiktoken `encode_ordinary`", "encode_ordinary.tiktoken", spec("tiktoken_ordinary"),
            tool="tiktoken", baseline=plain, check="ids", status=peer_status("tiktoken", wanted)),
    ]
    fenc = Job("encode_file", f"bpe_fast `encode_file` ({P} workers)", "encode_file.bpe_fast",
               spec("bpe_fast_file", specials=[EOT], npy=str(workdir / "file.bpe_fast.npy")), tool="bpe_fast",
               reference=enc, check="ids")
    jobs += [
        fenc,
        Job("encode_file", f"tiktoken `encode_ordinary_batch` ({P} threads)", "encode_batch.tiktoken",
            spec("tiktoken_batch", npy=str(workdir / "file.tiktoken.npy")), tool="tiktoken", baseline=fenc,
            check="ids", status=peer_status("tiktoken", wanted)),
        Job("encode_file", f"tiktoken `encode_batch` ({P} threads, the text in {4 * P} parts)",
            "encode_chunks.tiktoken", spec("tiktoken_chunks", npy=str(workdir / "file.tiktoken_chunks.npy")),
            tool="tiktoken", baseline=fenc, check="ids", status=peer_status("tiktoken", wanted)),
        Job("encode_file", f"HF tokenizers `encode_batch` ({P} threads)", "encode_batch.hf",
            spec("hf_batch", npy=str(workdir / "file.hf.npy")), tool="tokenizers", baseline=fenc, check="ids",
            env=many, status=peer_status("tokenizers", wanted)
            or (None if "hf_json" in tokenizer else tokenizer.get("hf_why", "no HF exporter in bpe_fast.export"))),
    ]
    for as_bytes, call in ((False, "decode"), (True, "decode_bytes")):
        def dspec(name):
            return spec(f"{name}_{call}", bytes=as_bytes) | {"out": str(workdir / f"decoded.{name}.{call}")}
        dec = Job("decode", f"bpe_fast `{call}`", "decode.bpe_fast", dspec("bpe_fast"), tool="bpe_fast",
                  check="text")
        jobs += [dec,
                 Job("decode", f"tiktoken `{call}`", "decode.tiktoken", dspec("tiktoken"), tool="tiktoken",
                     baseline=dec, check="text", status=peer_status("tiktoken", wanted)),
                 Job("decode", f"bpe-openai `{call}`", "decode.bpe_openai", dspec("bpe_openai"), tool="bpe_openai",
                     baseline=dec, check="text", status=bpe_openai_status)]
        if not as_bytes:
            jobs.append(Job("decode", "HF tokenizers `decode`", "decode.hf", dspec("hf"), tool="tokenizers",
                            baseline=dec, check="text", env=one, status=peer_status("tokenizers", wanted)
                            or (None if "hf_json" in tokenizer
                                else tokenizer.get("hf_why", "no HF exporter in bpe_fast.export"))))
    return jobs


class PairCounter:
    """Counts of pairs after a prefix of bpe_fast's merges, from the corpus's pre-token counts: tells whether
    the first merge where a peer differs was a tie (same count, broken the other way) or not. The merges are
    replayed by bpe_fast's merge engine, whose merges are checked to be the ones given (the engine's exactness
    is what the test suite checks against a plain-Python oracle), so this takes seconds on any corpus."""

    def __init__(self, corpus, pattern, processes):
        self.corpus, self.pattern, self.processes = corpus, pattern, processes
        self.counts = None

    def counts_at(self, merges, rank, pairs):
        """{pair: count} for `pairs` once merges[:rank] are applied; None if the engine does not make those
        merges (then they are not bpe_fast's)."""
        from bpe_fast._train import MergeEngine

        if self.counts is None:
            from bpe_fast import count_pretokens

            self.counts = count_pretokens(self.corpus, [EOT], pattern=self.pattern, num_processes=self.processes)
        engine = MergeEngine(self.counts.tokens, self.counts.offsets, self.counts.counts)
        engine.run(rank)
        if engine.merges() != list(merges[:rank]):
            return None
        return {pair: engine.pair_count(*pair) for pair in pairs}


def check_merges(job, pair_counter):
    agreement = _check_merges_with_ours(job, pair_counter)
    twin, name = job.same_as or (None, "")
    if agreement and twin is not None and twin.runs:
        ours, theirs = _load_merges(twin.spec["out"]), _load_merges(job.spec["out"])
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
        if first is None and len(ours) == len(theirs):
            agreement += f"; identical to {name}'s"
        else:
            first = min(len(ours), len(theirs)) if first is None else first
            agreement += f"; NOT identical to {name}'s (first difference at rank {first:,})"
    return agreement


def _not_checked(job):
    """None when job can be checked (it ran, and so did the bpe_fast run it is checked against); else the cell
    to show: empty when there is nothing to check, or why it was not checked."""
    if not job.runs or job.reference is None:
        return ""
    if not job.reference.runs:
        return "not checked (bpe_fast's run failed)"
    return None


def _check_merges_with_ours(job, pair_counter):
    reason = _not_checked(job)
    if reason is not None:
        return reason
    ours = _load_merges(job.reference.spec["out"])
    theirs = _load_merges(job.spec["out"])
    n = len(ours)
    if not n:
        return "no merges"
    same_rank = sum(a == b for a, b in zip(ours, theirs)) / n
    anywhere = len(set(ours) & set(theirs)) / n
    if same_rank == 1 and len(theirs) == n:
        return "yes (all identical)"
    extra = "" if len(theirs) == n else f"; {len(theirs):,} merges vs {n:,}"
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    if first is not None:
        ours_pair, their_pair = ours[first], theirs[first]
        counts = pair_counter.counts_at(ours, first, [ours_pair, their_pair])
        extra += f"; first difference at rank {first:,}"
        if counts is not None:
            c1, c2 = counts[ours_pair], counts[their_pair]
            extra += (f", a tie ({c1:,} each)" if c1 == c2 else
                      f", not a tie ({_show_pair(ours_pair)} {c1:,}, {_show_pair(their_pair)} {c2:,})")
    return f"{same_rank:.1%} at the same rank, {anywhere:.1%} anywhere{extra}"


def _show_pair(pair):
    from bpe_fast.formats import token_to_str

    return "`" + " ".join(token_to_str(t) for t in pair) + "`"


def check_ids(job):
    import numpy as np

    reason = _not_checked(job)
    if reason is not None:
        return reason
    ours = np.load(job.reference.spec["out"]).astype(np.int64)
    theirs = np.load(job.spec["out"]).astype(np.int64)
    if len(ours) == len(theirs) and np.array_equal(ours, theirs):
        return f"yes ({len(ours):,} ids)"
    m = min(len(ours), len(theirs))
    diff = np.flatnonzero(ours[:m] != theirs[:m])
    first = int(diff[0]) if len(diff) else m
    return f"NO ({len(theirs):,} ids vs {len(ours):,}, first difference at {first:,})"


def check_text(job):
    """Whether what the job decoded is the text encoded (the ids were its own encoding's of it)."""
    if not job.runs:
        return ""
    text = Path(job.spec["text"]).read_bytes()
    got = Path(job.spec["out"]).read_bytes()
    if got == text:
        return f"yes ({len(text):,} bytes)"
    m = min(len(got), len(text))
    first = next((i for i in range(m) if got[i] != text[i]), m)
    return f"NO ({len(got):,} bytes vs {len(text):,}, first difference at byte {first:,})"


# ------------------------------------------------------------------------------------------------ report

def machine_info():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return cpu, cores, usable


def versions():
    from importlib import metadata

    import bpe_fast

    package = Path(bpe_fast.__file__).resolve().parent
    out = {"bpe_fast": f"{bpe_fast.__version__} ({package}{git_commit(package)})"}
    for name in ("rustbpe", "tokenizers", "tiktoken", "gigabpe", "bpe-openai", "numpy", "regex", "matplotlib"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_commit(package):
    """", commit SHA" (and whether the checkout has uncommitted changes) of the git checkout the imported bpe_fast
    package is part of; "" for a package git does not track there (installed into site-packages, even a
    virtualenv inside a checkout): the commit of the checkout this script sits in says nothing about it."""
    root = Path(package).parent
    try:
        tracked = subprocess.run(["git", "-C", str(root), "ls-files", "--error-unmatch", "--",
                                  f"{Path(package).name}/__init__.py"], capture_output=True, text=True, timeout=10)
        if tracked.returncode:
            return ""
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if head.returncode:
        return ""
    return f", commit {head.stdout.strip()}{' + uncommitted changes' if dirty.stdout.strip() else ''}"


def fmt_time(s):
    return f"{s:.3f}" if s < 10 else f"{s:.1f}"


def _cell(text):
    """text for a Markdown table's cell: its "|" escaped (one in a status split the row into one cell more)."""
    return str(text).replace("|", "\\|")


def table(jobs, nbytes, check_title):
    lines = [f"| tool | time (s) | MB/s | peak RSS (MB) | time / bpe_fast | {check_title} |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for job in jobs:
        if job.status is not None and not job.runs:
            lines.append(f"| {_cell(job.label)} | {_cell(job.status)} | | | | |")
            continue
        if job.best is None:
            continue
        ratio = ""
        if job.baseline is not None and job.baseline.best:
            ratio = f"{job.best / job.baseline.best:.2f}x"
        elif any(j.baseline is job for j in jobs):
            ratio = "baseline"
        runs = f" (best of {len(job.runs)})" if len(job.runs) > 1 else ""
        status = f"; {job.status}" if job.status else ""
        lines.append(f"| {_cell(job.label)} | {fmt_time(job.best)}{runs} | {nbytes / job.best / 1e6:.1f} | "
                     f"{job.rss:.0f} | {ratio} | {_cell(job.agreement + status)} |")
    return lines


def setup_note(jobs):
    slow = [f"{j.label} {j.setup:.1f} s" for j in jobs if j.setup is not None and j.setup >= SLOW_SETUP_SECONDS]
    return [f"Setup before the timed work (imports, loading tokenizer and text), not in the times: "
            f"{'; '.join(slow)}."] if slow else []


def draw_chart(path, sections, title):
    try:
        import matplotlib
    except ImportError:
        return "PNG chart skipped: matplotlib is not installed (pip install matplotlib, or the [bench] extra)."
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [(name, [j for j in jobs if j.best], nbytes) for name, jobs, nbytes in sections]
    shown = [s for s in shown if s[1]]
    if not shown:
        return "PNG chart skipped: nothing was measured."
    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 1.2 + sum(0.45 * len(s[1]) + 0.8 for s in shown)),
                             squeeze=False, gridspec_kw={"height_ratios": [len(s[1]) + 1 for s in shown]})
    for ax, (name, jobs, nbytes) in zip(axes[:, 0], shown):
        labels = [j.label.replace("`", "") for j in jobs][::-1]
        speeds = [nbytes / j.best / 1e6 for j in jobs][::-1]
        colors = ["#1f77b4" if j.tool == "bpe_fast" else "#aaaaaa" for j in jobs][::-1]
        bars = ax.barh(labels, speeds, color=colors)
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in speeds], padding=3, fontsize=8)
        ax.set_title(name, fontsize=10, loc="left")
        ax.set_xlabel("MB/s (higher is better)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_xlim(0, max(speeds) * 1.15)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"Chart: {path}"


def wait_for_load(limit, max_wait, log):
    deadline = time.monotonic() + max_wait
    while os.getloadavg()[0] > limit and time.monotonic() < deadline:
        log(f"load {os.getloadavg()[0]:.2f} > {limit}: waiting")
        time.sleep(15)


# matplotlib 3.10's formats: what --png is checked against where matplotlib is not installed (the report then
# says it is missing)
_CHART_SUFFIXES = (".avif", ".eps", ".gif", ".jpeg", ".jpg", ".pdf", ".pgf", ".png", ".ps", ".raw", ".rgba", ".svg",
                   ".svgz", ".tif", ".tiff", ".webp")


def chart_suffixes():
    """The file suffixes matplotlib writes charts as: what --png may end in."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return _CHART_SUFFIXES
    return tuple(sorted("." + kind for kind in FigureCanvasBase.get_supported_filetypes()))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--corpus", help="a UTF-8 text file with documents separated by <|endoftext|>")
    src.add_argument("--size", default="50MB", help="size of the synthetic corpus made when no --corpus "
                                                    "(default 50MB)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpus (default 0)")
    p.add_argument("--vocab-size", "--vocab-sizes", dest="vocab_size", default="10000", metavar="N[,N...]",
                   help="vocabulary size, <|endoftext|> included; several, comma-separated, give one training "
                        "table each (the encoding rows use the first) (default 10000)")
    p.add_argument("--processes", type=int, default=2, help="workers for training (bpe_fast: processes) and "
                                                            "file encoding (bpe_fast and peers: threads) "
                                                            "(default 2)")
    p.add_argument("--pattern", help="gpt2, gpt4, o200k, llama3, qwen2, tekken, kimi or a regex (default gpt2, or with --encoding "
                                     "the encoding's own)")
    p.add_argument("--encoding", choices=sorted(ENCODINGS),
                   help="encode with tiktoken's encoding of this name (ranks from the bpe-openai package; sets "
                        "the special tokens, and the pattern unless --pattern is given: --encoding cl100k_base "
                        "--pattern llama3 is Llama 3's pattern on cl100k's ranks) instead of GPT-2's or a trained "
                        "vocabulary")
    p.add_argument("--ranks", metavar="FILE",
                   help="encode with the tiktoken ranks in FILE (.tiktoken, .tiktoken.gz, or Llama 3's and Llama 4's "
                        "tokenizer.model), the special token <|endoftext|> after them, with --pattern (Llama 4's "
                        "is o200k)")
    p.add_argument("--encode-bytes", default="20MB", help="how much of the corpus to encode (default 20MB)")
    p.add_argument("--encode-text", choices=["corpus", "fixtures"], default="corpus",
                   help="encode the corpus's first --encode-bytes (default), or the real texts in "
                        "tests/fixtures (about 140 KB)")
    p.add_argument("--repeat", type=int, help="runs of each tool (default: 3, or 1 if the first took over "
                                              f"{LONG_RUN_SECONDS:.0f} s)")
    p.add_argument("--only", choices=["train", "encode"])
    p.add_argument("--peers", default=",".join(PEERS), help=f"peers to run (default {','.join(PEERS)})")
    p.add_argument("--out", help="also write the Markdown here")
    p.add_argument("--png", help="draw a bar chart of MB/s here (needs matplotlib)")
    p.add_argument("--workdir", help="keep the corpus and outputs here (default: a temporary folder, removed)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds allowed for one run (default 3600)")
    p.add_argument("--wait-for-load", type=float, metavar="LOAD",
                   help="first wait (up to --max-wait seconds) until the 1-minute load average is at most LOAD")
    p.add_argument("--max-wait", type=float, default=300, help="see --wait-for-load (default 300)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        args.vocab_sizes = [int(v) for v in args.vocab_size.split(",") if v.strip()]
    except ValueError:
        p.error(f"--vocab-size: expected integers separated by commas, got {args.vocab_size!r}")
    if not args.vocab_sizes or min(args.vocab_sizes) < 257:
        p.error("--vocab-size must be at least 257 (256 bytes and <|endoftext|>)")
    args.vocab_size = args.vocab_sizes[0]
    if args.processes < 1:
        p.error("--processes must be at least 1")
    if args.repeat is not None and args.repeat < 1:
        p.error("--repeat must be at least 1")
    if not args.timeout > 0:
        p.error(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.worker:         # a peer's worker imports no bpe_fast: that would count in the peer's memory
        return args
    for option, path in (("--out", args.out), ("--png", args.png)):
        if path is not None:          # said now, not as a traceback once everything is measured
            path = Path(path).expanduser()
            if path.is_dir():
                p.error(f"{option} {path}: a folder, not a file")
            if not path.parent.is_dir():
                p.error(f"{option} {path}: no such folder {path.parent}")
    if args.png is not None:        # matplotlib's "Format 'md' is not supported" came after every measurement
        suffixes = chart_suffixes()
        if Path(args.png).suffix.lower() not in suffixes:
            p.error(f"--png {args.png}: a chart file ends in {', '.join(suffixes)}")
        if args.out is not None and os.path.realpath(args.png) == os.path.realpath(args.out):
            p.error(f"--png {args.png}: is --out too; give the chart a file of its own")
    from bpe_fast.patterns import compile_pattern
    from bpe_fast.synthetic import parse_size

    for option, text in (("--size", None if args.corpus else args.size), ("--encode-bytes", args.encode_bytes)):
        if text is None:
            continue
        try:
            size = parse_size(text)
        except ValueError:
            p.error(f"{option}: not a size: {text!r} (say 5MB, 500KB or a number of bytes)")
        if size <= 0:
            p.error(f"{option} must be more than 0 bytes, got {text!r}")
    if args.ranks and args.encoding:
        p.error("--ranks and --encoding: give one")
    if args.ranks and not os.path.isfile(args.ranks):
        p.error(f"--ranks {args.ranks}: no such file")
    if args.pattern is None:
        args.pattern = ENCODINGS[args.encoding][0] if args.encoding else "gpt2"
    else:
        try:
            compile_pattern(args.pattern)
        except ValueError as exc:
            p.error(f"--pattern: {exc}")
    unknown = {s.strip() for s in args.peers.split(",") if s.strip()} - set(PEERS)
    if unknown:
        p.error(f"--peers: unknown {sorted(unknown)}; known: {', '.join(PEERS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main()

    from bpe_fast.patterns import resolve_pattern
    from bpe_fast.synthetic import parse_size

    def log(msg):
        print(f"[compare] {msg}", file=sys.stderr, flush=True)

    pattern = resolve_pattern(args.pattern)
    pattern_name = {"gpt2": "GPT-2's", "gpt4": "GPT-4's (cl100k)", "o200k": "o200k's", "llama3": "Llama 3's",
                    "qwen2": "Qwen2's", "tekken": "Tekken's", "deepseek3": "DeepSeek V3's"}.get(args.pattern, "custom")
    wanted = {s.strip() for s in args.peers.split(",") if s.strip()}
    if args.wait_for_load is not None:
        wait_for_load(args.wait_for_load, args.max_wait, log)
    load_start = os.getloadavg()
    started = datetime.datetime.now().astimezone()
    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bpe_fast_compare_") if own_workdir else args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        corpus, corpus_what = prepare_corpus(args, workdir, log)
        corpus_bytes = corpus.stat().st_size
        sections = []
        trained_merges = None
        if args.only in (None, "train"):
            from bpe_fast.patterns import GPT2_PATTERN

            gigabpe_runs = peer_status("gigabpe", wanted) is None and pattern == GPT2_PATTERN
            alphabet = byte_alphabet_size(corpus) if gigabpe_runs else None
            trainings = []
            for vocab_size in args.vocab_sizes:
                jobs = train_jobs(args, pattern, corpus, workdir, wanted, vocab_size, alphabet)
                log(f"training: {corpus_bytes / 1e6:.1f} MB, vocab {vocab_size}, load {os.getloadavg()[0]:.2f}")
                run_section(jobs, args.repeat, args.timeout, log)
                trainings.append((vocab_size, jobs))
            # checked after every run, so the pre-token counts it holds (about 1 GB for 330 MB of real text)
            # are not in memory while anything is timed; counted once for all the vocabulary sizes
            pair_counter = PairCounter(corpus, pattern, args.processes)
            for vocab_size, jobs in trainings:
                for job in jobs:
                    if job.check == "merges":
                        job.agreement = check_merges(job, pair_counter)
                if trained_merges is None and jobs[0].runs:
                    trained_merges = _load_merges(jobs[0].spec["out"])
                title = "Training" if len(args.vocab_sizes) == 1 else f"Training, vocab {vocab_size:,}"
                sections.append((title, jobs, corpus_bytes, "merges = bpe_fast's",
                                 f"Training on the whole corpus ({corpus_bytes / 1e6:.1f} MB), vocab "
                                 f"{vocab_size:,}, {pattern_name} pattern, special token {EOT}. Libraries "
                                 f"break ties between pairs of equal count differently, and one different choice "
                                 f"moves later merges; the tie check replays bpe_fast's merges on its pre-token "
                                 f"counts. HF's `train([file])` reads the file line by line and counts {EOT} as "
                                 f"a word (it learns merges inside it), so it counts pairs differently from the "
                                 f"start."
                                 + (f" gigabpe (ByteLevel pre-tokenizer, GPT-2's regex) reads the file the same "
                                    f"way and breaks ties HF's way, not CS336's lexicographically greatest pair: "
                                    f"its merges should be HF `train([file])`'s, not bpe_fast's; its vocabulary "
                                    f"holds only the {alphabet} byte values present in the file, so it is asked "
                                    f"for {vocab_size - 256 + alphabet:,} tokens, which is {vocab_size - 257:,} "
                                    f"merges." if alphabet else "")))
            del pair_counter
        if args.only in (None, "encode"):
            text_path, text_bytes, text_what = prepare_encode_text(args.encode_text, corpus,
                                                                   parse_size(args.encode_bytes), workdir)
            tokenizer, tok_what = prepare_tokenizer(args, pattern, corpus, workdir, trained_merges, log)
            jobs = encode_jobs(args, tokenizer, text_path, workdir, wanted)
            log(f"encoding {text_what} with {tok_what}, load {os.getloadavg()[0]:.2f}")
            run_section(jobs, args.repeat, args.timeout, log)
            for job in jobs:
                if job.check == "ids":
                    job.agreement = check_ids(job)
                elif job.check == "text":
                    job.agreement = check_text(job)
            single = [j for j in jobs if j.section == "encode"]
            multi = [j for j in jobs if j.section == "encode_file"]
            sections.append(("Encoding, one thread", single, text_bytes, "ids = bpe_fast's",
                             f"Encoding {text_what}, in one call, one thread, with {tok_what}. "
                             f"`encode_ordinary` treats {EOT} as "
                             f"text, so it is compared with bpe_fast built without special tokens."))
            sections.append((f"Encoding a file, {args.processes} workers", multi, text_bytes,
                             "ids = bpe_fast's",
                             f"The same text as a file, to a .npy of token ids: "
                             f"bpe_fast.encode_file with {args.processes} workers (threads); the peers read the file, "
                             f"split it at {EOT}, encode the documents on {args.processes} threads and write "
                             f"the ids joined by {EOT}'s id (the same array); all of it is timed. tiktoken "
                             f"also encodes the text cut into {4 * args.processes} parts just before a {EOT} "
                             f"(special tokens allowed): fewer, larger calls than one per document."))
            sections.append(("Decoding, one thread", [j for j in jobs if j.section == "decode"], text_bytes,
                             "text = the text encoded",
                             f"The ids of the same text (each library's own encoding of it, {EOT} allowed: the "
                             f"same ids, made before the clock starts) as a Python list, back to text (`decode`: "
                             f"a str, invalid UTF-8 replaced) and to bytes (`decode_bytes`), one call, one "
                             f"thread. MB/s = bytes of text out."))
        load_end = os.getloadavg()
    finally:
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    cpu, cores, usable = machine_info()
    vers = versions()
    md = [f"# bpe_fast compared with its peers ({started:%Y-%m-%d %H:%M %Z})", "",
          f"- Machine: {cpu}, {cores} cores ({usable} usable), {platform.system()} {platform.release()}; "
          f"load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load_start)} at the start, "
          f"{', '.join(f'{x:.2f}' for x in load_end)} at the end",
          f"- Python {platform.python_version()}; " + "; ".join(f"{k} {v}" for k, v in vers.items()),
          f"- Corpus: {corpus_what}",
          f"- Command: `python benchmarks/compare.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
          "- Each run in a fresh process; time = wall time of the work alone (best run); MB/s = input bytes / "
          "time; peak RSS = all the tool's processes together (summed VmRSS sampled every 10 ms, or VmHWM if larger), interpreter and input included; "
          "time / bpe_fast above 1 means bpe_fast is faster.", ""]
    for title, jobs, nbytes, check_title, what in sections:
        md += [f"## {title}", "", what, ""]
        md += table(jobs, nbytes, check_title)
        md += [""] + setup_note(jobs) + ([""] if setup_note(jobs) else [])
    if args.png:
        md += [draw_chart(args.png, [(t, j, n) for t, j, n, _, _ in sections],
                          f"bpe_fast vs peers - {cpu}, {args.processes} workers"), ""]
    text = "\n".join(md).rstrip() + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    failed = [j for _, jobs, _, _, _ in sections for j in jobs if j.status and j.status.startswith("failed")]
    bpe_failed = [j for j in failed if j.tool == "bpe_fast"]
    # ids or text that differ from bpe_fast's (the same ranks: tiktoken's ids are the promise) fail the run too:
    # they were a "NO" in the table only, exit 0 (helper-149). Training merges may differ by ties: not here.
    differ = [(title, j) for title, jobs, _, _, _ in sections for j in jobs
              if j.check in ("ids", "text") and j.agreement.startswith("NO")]
    for title, job in differ:
        print(f"compare.py: {title}: {job.label}: {job.agreement}", file=sys.stderr)
    return 1 if bpe_failed or differ else 0


if __name__ == "__main__":
    sys.exit(main())
