"""Counting the same corpus arriving in each form: a text file, .gz, JSON lines, Parquet, an iterator of
documents (issue 14's targets: iterator within 1.3x of the file, .gz within 1.5x, Parquet within 1.3x), and a
folder holding each document as a file of its own (a source tree, a dataset saved one document a file), as text
("folder") or as a one-record JSON lines file ("jsonl-folder").

    pytest benchmarks/bench_inputs.py                                   # the session corpus (see conftest.py)
    pytest benchmarks/bench_inputs.py --corpus /data/real.txt --corpus-bytes all
    python benchmarks/bench_inputs.py --corpus /data/real.txt --out benchmarks/results/inputs.md   # the table

Each form is made once from the corpus (documents split at <|endoftext|>); the rounds alternate the forms so that
machine noise hits all alike, and the ratios come from the medians. The iterator reads the text file in 1 MB blocks
and yields its documents as it goes (a streaming source: it never holds the corpus). The form "list" (not run
unless asked: --forms file,list) is an iterator over a list of the documents read into memory before the clock
starts (the caller holds the corpus; its peak memory includes the list). The form "bytes" (not run unless asked)
is the streaming iterator yielding each document's bytes undecoded, as train_bpe also takes them: the caller's
own work without decoding to str (bpe_fast checks the UTF-8 in its workers). The form "dicts" (not run unless
asked) is the streaming iterator yielding {"text": str} records, as HF datasets and JSON readers give them;
"lists" (not run unless asked) yields each document in a list of its own, "columns" (neither) 8 documents a batch
as HF datasets' iter(batch_size=8) gives them ({"text": [...], "id": [...]}): batches, as train_from_iterator
takes them. The
form "shards" (not run unless asked) is a folder of 10 text files, the documents cut into 10 runs of about the
same size (a corpus as dataset shards).

    python benchmarks/bench_inputs.py --corpus stories2g.txt --train 10000 --forms file,list,iterator \
        --baseline-build /tmp/old      # each form but the file also with the bpe_fast built in /tmp/old

--peers tokenizers,rustbpe (with --train) also trains the peers that take documents from Python on the same
source in every round, each in a process of its own (their ties differ from bpe_fast's, so their merges are not
compared; their threads: --processes, RAYON_NUM_THREADS): HF tokenizers' `train_from_iterator` on the forms
"iterator", "lists" and "columns" (batches are its documented form; a "columns" batch is given as its "text"
list, HF takes no dicts), and rustbpe's `train_from_iterator` on "iterator" (it takes `str` items only).

    python benchmarks/bench_inputs.py --corpus stories400m.txt --train 10000 \
        --forms file,iterator,lists,columns --peers tokenizers,rustbpe

--baseline-build DIR runs each form other than "file" a second time in every round with DIR first on PYTHONPATH
(DIR holding a built bpe_fast/ of another revision, e.g. `git worktree add /tmp/old REV` then `python setup.py
build_ext --inplace` there): an A/B of two revisions in one run, each against the same file time.
"""
import argparse
import gzip
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import pytest
except ImportError:          # run as a script
    pytest = None

EOT = "<|endoftext|>"
FORMS = ("file", "iterator", "gz", "parquet", "jsonl", "folder", "jsonl-folder")


def stream_documents(path, block=1 << 20, decode=True):
    """The documents of a text file (split at EOT), read block by block: str, or with decode=False bytes."""
    sep = EOT.encode()
    carry = b""
    with open(path, "rb") as f:
        while True:
            data = f.read(block)
            if not data:
                break
            parts = (carry + data).split(sep)
            carry = parts.pop()
            if decode:
                for part in parts:
                    yield part.decode("utf-8")
            else:
                yield from parts
    yield carry.decode("utf-8") if decode else carry


def make_forms(text_path, folder):
    """{form: input} for the corpus at text_path, the derived files written into folder."""
    import pyarrow
    import pyarrow.parquet as pq
    folder = Path(folder)
    gz, jsonl, parquet = folder / "corpus.txt.gz", folder / "corpus.jsonl", folder / "corpus.parquet"
    docs = list(stream_documents(text_path))
    with gzip.open(gz, "wb", compresslevel=6) as f:
        f.write(EOT.join(docs).encode())
    with open(jsonl, "w", encoding="utf-8", newline="") as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    # row groups of about 64 MB, as dataset writers make them
    rows = max(1, int(len(docs) * 64e6 / max(1, os.path.getsize(text_path))))
    pq.write_table(pyarrow.table({"text": docs}), parquet, row_group_size=rows)
    shards = folder / "shards"            # 10 text files of consecutive documents (a corpus as shards)
    shards.mkdir()
    per = -(-len(docs) // 10)
    for k in range(10):
        (shards / f"shard-{k:02d}.txt").write_bytes(EOT.join(docs[k * per:(k + 1) * per]).encode())
    files = folder / "documents"
    files.mkdir()
    records = folder / "records"          # the same, a JSON lines file a document (as a dataset saved a record a file)
    records.mkdir()
    for k, d in enumerate(docs):
        (files / f"{k:07d}.txt").write_bytes(d.encode())
        (records / f"{k:07d}.jsonl").write_text(json.dumps({"text": d}, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"file": str(text_path), "gz": str(gz), "jsonl": str(jsonl), "parquet": str(parquet),
            "folder": str(files), "jsonl-folder": str(records), "shards": str(shards)}


def disk_size(path):
    """A file's size, or a folder's files' together."""
    if os.path.isdir(path):
        return sum(entry.stat().st_size for entry in os.scandir(path))
    return os.path.getsize(path)


def count_form(form, inputs, text_path, processes, vocab_size=None, docs=None):
    """count_pretokens of the form (or with vocab_size, train_bpe: returns its merges); docs: the documents in
    memory, for the form "list"."""
    from bpe_fast import count_pretokens, train_bpe
    source = (stream_documents(text_path) if form == "iterator" else stream_documents(text_path, decode=False)
              if form == "bytes" else ({"text": d} for d in stream_documents(text_path)) if form == "dicts"
              else ([d] for d in stream_documents(text_path)) if form == "lists"
              else _columns(stream_documents(text_path), 8) if form == "columns"
              else iter(docs) if form == "list" else inputs[form])
    if vocab_size:
        return train_bpe(source, vocab_size, [EOT], num_processes=processes)[1]
    return count_pretokens(source, [EOT], num_processes=processes)


PEER_FORMS = {"tokenizers": ("iterator", "lists", "columns"), "rustbpe": ("iterator",)}
PEER_NAMES = {"tokenizers": "HF tokenizers `train_from_iterator`", "rustbpe": "rustbpe `train_from_iterator`"}


def train_peer(peer, form, text_path, processes, vocab_size):
    """Train `peer` on the form's documents streamed from the file (as count_form's source: a "columns" batch
    given as its "text" list), GPT-2's pattern, vocab_size tokens with <|endoftext|>; returns its vocabulary's
    size. The threads: RAYON_NUM_THREADS, set by the caller's environment."""
    from compare import hf_trainer_and_tokenizer

    from bpe_fast.patterns import GPT2_PATTERN, tiktoken_anchors

    documents = stream_documents(text_path)
    if peer == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(documents, vocab_size - 1, pattern=tiktoken_anchors(GPT2_PATTERN))
        return len(tok.get_mergeable_ranks()) + 1
    source = (documents if form == "iterator" else ([d] for d in documents) if form == "lists"
              else (batch["text"] for batch in _columns(documents, 8)))
    tok, trainer = hf_trainer_and_tokenizer({"pattern": GPT2_PATTERN, "vocab_size": vocab_size})
    tok.train_from_iterator(source, trainer)
    return tok.get_vocab_size()


def _columns(documents, size):
    """Batches of `size` documents as HF datasets' iter(batch_size=size) gives them: {"text": [...], "id": [...]}."""
    batch = []
    for k, document in enumerate(documents):
        batch.append(document)
        if len(batch) == size:
            yield {"text": batch, "id": list(range(k + 1 - size, k + 1))}
            batch = []
    if batch:
        yield {"text": batch, "id": list(range(k + 1 - len(batch), k + 1))}


def _pytest_fixture():
    @pytest.fixture(scope="module")
    def forms(corpus_path, tmp_path_factory):
        pytest.importorskip("pyarrow")
        return make_forms(corpus_path, tmp_path_factory.mktemp("forms"))
    return forms


if pytest is not None:
    forms = _pytest_fixture()

    def test_count_every_input_form(benchmark, corpus_path, forms):
        """Every form once a round, alternating; extra_info: each form's median time over the file's."""
        times = {form: [] for form in FORMS}
        results = {}

        def one_round():
            for form in FORMS:
                start = time.perf_counter()
                results[form] = count_form(form, forms, corpus_path, 2)
                times[form].append(time.perf_counter() - start)

        benchmark.pedantic(one_round, rounds=3, iterations=1)
        assert all(results[form] == results["file"] for form in FORMS)
        if benchmark.stats is not None:
            median = {form: statistics.median(t) for form, t in times.items()}
            benchmark.extra_info.update({f"{form} / file": round(median[form] / median["file"], 3) for form in FORMS})
            print("\n" + ", ".join(f"{form} {median[form]:.2f} s" for form in FORMS))


def _vm_hwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _worker(form, inputs, text_path, processes, vocab_size):
    """Run one count in this process; print its time and peak memory: this process's + its largest child's
    (with 2 processes, the peak of both), or the summed resident memory of the process and all its workers
    sampled every 10 ms if larger. The sampling is what sees workers a forkserver starts (bpe_fast does so
    once the caller holds over 512 MB, as with the form "list" of a large corpus): they are the forkserver's
    children, which this process never waits for, so RUSAGE_CHILDREN leaves them out."""
    from compare import TreeRssSampler

    form, _, peer = form.partition("@")
    docs = list(stream_documents(text_path)) if form == "list" else None
    before = resource.getrusage(resource.RUSAGE_SELF)
    sampler = TreeRssSampler()
    start = time.perf_counter()
    if peer:
        counts = train_peer(peer, form, text_path, processes, vocab_size)
    else:
        counts = count_form(form, inputs, text_path, processes, vocab_size, docs)
    took = time.perf_counter() - start
    tree = sampler.stop()
    own = _vm_hwm_kb()         # ru_maxrss would keep the peak of the process this one was exec'd from
    after = resource.getrusage(resource.RUSAGE_SELF)    # this process's CPU while counting: the caller's work
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # the merges (bytes hashes differ between processes: sha256 of their repr), or the distinct pre-tokens
    digest = (f"vocabulary {counts}" if peer else hashlib.sha256(repr(counts).encode()).hexdigest()[:16]
              if vocab_size else len(counts))
    import bpe_fast
    print(json.dumps({"seconds": took, "peak_kb": max(own + child, tree), "distinct": digest,
                      "caller_cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                      "bpe_fast": str(Path(bpe_fast.__file__).resolve())}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a UTF-8 text file, documents separated by <|endoftext|>")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train", type=int, metavar="VOCAB", help="train to this vocabulary size, not only count")
    parser.add_argument("--forms", default=",".join(FORMS), help="which forms, comma-separated (file first)")
    parser.add_argument("--out", help="write the Markdown table here")
    parser.add_argument("--baseline-build", metavar="DIR",
                        help="also run each form but the file with the bpe_fast built in DIR (an A/B in one run)")
    parser.add_argument("--peers", default="", help="with --train: also train these peers on the iterator forms "
                        "(tokenizers, rustbpe; comma-separated)")
    parser.add_argument("--worker", nargs=2, metavar=("FORM", "INPUTS_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], json.loads(args.worker[1]), args.corpus, args.processes, args.train)
        return
    forms = args.forms.split(",")
    # (the others: documents in memory or streamed; "lists", each in a list of its own; "columns", 8 a batch as
    # HF datasets' iter(batch_size=8) gives them)
    known = FORMS + ("list", "bytes", "dicts", "lists", "columns")
    unknown = [form for form in forms if form not in known]
    if unknown:
        parser.error(f"--forms: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    if "file" not in forms:         # (the run ended in KeyError: 'file' once every round was done)
        parser.error("--forms: give file too: every form's time is given against the text file's")
    if not os.path.isfile(args.corpus):
        parser.error(f"--corpus {args.corpus}: no such file")
    if os.path.getsize(args.corpus) == 0:
        parser.error(f"--corpus {args.corpus}: empty")
    # a DIR with no bpe_fast in it was a run of this build against itself, labelled as the baseline (helper-149)
    if args.baseline_build and not os.path.isfile(os.path.join(args.baseline_build, "bpe_fast", "__init__.py")):
        parser.error(f"--baseline-build {args.baseline_build}: holds no bpe_fast/ (build one there: git archive, "
                     f"then python setup.py build_ext --inplace)")
    peers = [peer for peer in args.peers.split(",") if peer]
    unknown = [peer for peer in peers if peer not in PEER_FORMS]
    if unknown:
        parser.error(f"--peers: unknown {', '.join(unknown)}; known: {', '.join(PEER_FORMS)}")
    if peers and not args.train:
        parser.error("--peers: give --train VOCAB too (the peers have no count of their own)")
    peer_labels = [f"{form}@{peer}" for form in forms for peer in peers if form in PEER_FORMS[peer]]
    if peers and not peer_labels:
        parser.error(f"--peers: none of them takes any of the forms {args.forms} "
                     f"({'; '.join(f'{p}: ' + ', '.join(PEER_FORMS[p]) for p in peers)})")
    builds = {form: None for form in forms}          # form label -> PYTHONPATH for it (None: as this script runs)
    if args.baseline_build:
        builds.update({f"{form}@baseline": os.path.abspath(args.baseline_build) for form in forms if form != "file"})
    builds.update({label: None for label in peer_labels})
    with tempfile.TemporaryDirectory(prefix="bpe_fast-inputs-", dir=os.path.dirname(os.path.abspath(args.corpus))) \
            as folder:
        inputs = (make_forms(args.corpus, folder) if set(forms) - {"file", "iterator", "list", "bytes", "dicts"}
                  else {"file": args.corpus})
        runs = {label: [] for label in builds}
        for _ in range(args.rounds):
            for label, path in builds.items():
                form = label.split("@")[0]
                extra = ["--train", str(args.train)] if args.train else []
                env = None if path is None else dict(os.environ, PYTHONPATH=path)
                if label in peer_labels:
                    env = dict(os.environ, RAYON_NUM_THREADS=str(args.processes))
                done = subprocess.run([sys.executable, __file__, "--corpus", args.corpus, "--processes",
                                       str(args.processes), *extra, "--worker", label if label in peer_labels else form,
                                       json.dumps(inputs)],
                                      capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    last = done.stderr.strip().splitlines()[-1:] or ["no output"]
                    raise SystemExit(f"bench_inputs.py: the {label} run failed (exit {done.returncode}): {last[0]}")
                runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
                if label in peer_labels:
                    pass
                elif path is not None and Path(path).resolve() not in Path(runs[label][-1]["bpe_fast"]).parents:
                    raise SystemExit(f"bench_inputs.py: the {label} run imported bpe_fast from "
                                     f"{runs[label][-1]['bpe_fast']}, not from {path}")
                print(label, runs[label][-1], file=sys.stderr)
        sizes = {form: disk_size(inputs[form]) for form in inputs}
    median = {label: statistics.median(r["seconds"] for r in runs[label]) for label in builds}
    distinct = {r["distinct"] for label in builds if label not in peer_labels for r in runs[label]}
    made = {label: {r["distinct"] for r in runs[label]} for label in peer_labels}
    for label, sizes_made in made.items():     # a peer that stopped short (pairs ran out) would be faster
        assert sizes_made == {f"vocabulary {args.train}"}, f"{label} made a vocabulary of {sizes_made}"

    assert len(distinct) == 1, f"the forms (or the builds) gave different results: {distinct}"
    size = os.path.getsize(args.corpus)
    what = (f"Training to {args.train:,} tokens on {size / 1e6:.0f} MB (the same merges from every form)"
            if args.train else f"Counting {size / 1e6:.0f} MB ({distinct.pop():,} distinct pre-tokens)")
    distinct.clear()
    lines = [f"{what} arriving in each form, "
             f"{args.processes} processes, median of {args.rounds} alternating rounds, "
             f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores.", "",
             "| input | on disk | time | vs the text file | peak memory | CPU of the calling process |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for label in builds:
        form = label.split("@")[0]
        peak = max(r["peak_kb"] for r in runs[label]) / 1024
        disk = f"{sizes[form] / 1e6:.0f} MB" if form in sizes else "(in memory)" if form == "list" else "(streamed)"
        peer = label.split("@")[1] if label in peer_labels else None
        name = (f"{form}, {PEER_NAMES[peer]}" if peer else f"{form}, {args.baseline_build}" if "@" in label
                else form)
        if peer:       # against bpe_fast's time on the same form
            name += f" ({median[label] / median[form]:.2f}x bpe_fast's)"

        cpu = statistics.median(r["caller_cpu"] for r in runs[label])
        lines.append(f"| {name} | {disk} | {median[label]:.2f} s | {median[label] / median['file']:.2f}x | "
                     f"{peak:.0f} MB | {cpu:.2f} s |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        Path(args.out).write_text(table)


if __name__ == "__main__":
    main()
