"""A/B benchmark of two revisions of bpe_fast: is B faster or slower than A, on this (noisy) machine?

    python benchmarks/ab.py                          # HEAD against the working tree
    python benchmarks/ab.py main~3 HEAD --out ab.md --png ab.png
    python benchmarks/ab.py HEAD HEAD                # the noise floor: every verdict should be "no change"
    python benchmarks/ab.py --against-version dist/bpe_fast-0.1.0-cp311-cp311-linux_x86_64.whl
    python benchmarks/ab.py --instructions           # instruction counts under callgrind (icount.py)

A revision is a git commit (anything `git rev-parse` takes), WORKTREE (the working tree, the default B), a
source folder (holding setup.py and bpe_fast/), or a wheel or sdist of bpe_fast (`--against-version PATH` makes
it A). Each is built into its own folder, cached by commit (or by the hash of the sources, or of the file)
under ~/.cache/bpe_fast-ab (BPE_FAST_AB_CACHE): a commit by `setup.py build_ext` in a git worktree under the
temporary folder, a source folder in a copy there, a package by `pip install --target`; the temporary folders
are removed when done or on error, and the repository's own in-place build is never touched. A compiled module
whose sources an earlier build had is reused. A build that fails keeps its log.

Each benchmark is run in rounds. A round starts a fresh process for A and one for B (PYTHONPATH at its
build); each reads the inputs (made once, by A's build), runs the workload once untimed, then, when asked,
times one run at a time: A B B A A B ... (--reps runs each), so that a drift of the machine's speed hits both
alike; which side goes first alternates from round to round. Times are CPU seconds of the process by default
(on a shared machine wall times stretch with every other job; --clock wall).
Per benchmark the report gives the median time of A and of B, the ratio B/A (the median of the ratios of the
back-to-back runs) with a bootstrap 95% interval (resampling whole rounds, so that what differs from one pair of
processes to the next counts), and a verdict: "slower" when the whole interval lies above 1 + threshold,
"faster" when it lies below 1 / (1 + threshold), else "no change".
"""
import argparse
import atexit
import hashlib
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

EOT = "<|endoftext|>"
REPO = Path(__file__).resolve().parents[1]
TMP_PREFIX = "bpe_fast-ab-"                    # temporary folders: TMP_PREFIX + <pid> + "-" + random
WORKTREE = "WORKTREE"
PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".tgz", ".zip")
SOURCE_FILES = ("setup.py", "pyproject.toml", "setup.cfg", "README.md", "MANIFEST.in")
GENERATED = (".so", ".c", ".cpp", ".html", ".pyc", ".pyd", ".o")
# The fewest rounds whose 95% interval can mean 95%: rounds whose ratios fall either side of the true one alike
# all fall on one side with probability 2 * 0.5 ** n, so even the widest interval n rounds give (lowest round to
# highest) misses it that often, over 5% for n < 6. The bootstrap's interval is narrower still: of 2 rounds it is
# the span of their two medians, which held the true ratio in 48% of simulated runs (6 rounds: 90%, 10: 93%).
MIN_ROUNDS = 6
CHILD_TIMEOUT = 900                            # seconds for one worker process
SCRIPTS = {"dir": Path(__file__).resolve().parent}   # where workers run ab.py / icount.py from (see snapshot)

# Input sizes. "timed": a default run of every benchmark takes a few minutes. "icount": small and fixed, run
# under callgrind (about 50 times slower); the CI gate's baseline was recorded with them.
PROFILES = {
    "timed": {"web_bytes": 2_000_000, "stories_bytes": 4_000_000, "merge_vocab": 5_000, "train_vocab": 5_000,
              "tokenizer_vocab": 10_000, "decode_passes": 4},
    "icount": {"web_bytes": 256_000, "stories_bytes": 256_000, "merge_vocab": 2_000, "train_vocab": 1_000,
               "tokenizer_vocab": 2_000, "decode_passes": 1},
}


class ABError(Exception):
    """A problem the user can fix, said in one line (the script prints it and exits with status 2)."""


# ---------------------------------------------------------------------------------------------------------
# The workloads. Each prepare_* reads the inputs (made by make_inputs) and returns a function that sets up a
# fresh state (a new Tokenizer, no output file) and returns the zero-argument call to time or count; only
# that call is measured. They use the public API only, so any revision can run them.

def _quiet(fn):
    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # "ran out of pairs" on a small corpus
            return fn()
    return call


def _load_counts(inputs):
    """The saved pre-token counts as PretokenCounts (made with [EOT]) where the revision has from_arrays,
    else as a dict {bytes: count} (converted inside train_from_counts)."""
    import numpy as np

    with np.load(inputs / "counts.npz") as z:
        tokens, offsets, counts = z["tokens"], z["offsets"], z["counts"]
    try:
        from bpe_fast.counts import PretokenCounts
        return PretokenCounts.from_arrays(tokens, offsets, counts, special_tokens=[EOT])
    except (ImportError, AttributeError, TypeError):
        data = tokens.tobytes()
        return {data[offsets[i]:offsets[i + 1]]: int(counts[i]) for i in range(len(counts))}


def _load_tokenizer(inputs):
    """A new Tokenizer (so no cache carries over) from tokenizer.json, whatever the revision's file format."""
    from bpe_fast import Tokenizer

    saved = json.loads((inputs / "tokenizer.json").read_text())
    vocab = {int(i): bytes.fromhex(t) for i, t in saved["vocab"].items()}
    merges = [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in saved["merges"]]
    return Tokenizer(vocab, merges, [EOT])


def prepare_count(inputs, profile):
    from bpe_fast import count_pretokens
    return lambda: lambda: count_pretokens(str(inputs / "web.txt"), [EOT], num_processes=1)


def prepare_merge_loop(inputs, profile):
    from bpe_fast import train_from_counts
    counts = _load_counts(inputs)
    vocab = PROFILES[profile]["merge_vocab"]
    return lambda: _quiet(lambda: train_from_counts(counts, vocab, [EOT]))


def _prepare_train(name, vocab_key):
    def prepare(inputs, profile):
        from bpe_fast import train_bpe
        path, vocab = str(inputs / name), PROFILES[profile][vocab_key]
        return lambda: _quiet(lambda: train_bpe(path, vocab, [EOT], num_processes=1))
    return prepare


def prepare_encode(inputs, profile):
    text = (inputs / "web.txt").read_text(encoding="utf-8")

    def fresh():
        tok = _load_tokenizer(inputs)
        return lambda: tok.encode(text)
    return fresh


def prepare_encode_file(inputs, profile):
    from bpe_fast import encode_file
    scratch = Path(tempfile.mkdtemp(prefix=TMP_PREFIX + f"{os.getpid()}-out-"))
    out = scratch / "ids.npy"

    def fresh():
        tok = _load_tokenizer(inputs)
        out.unlink(missing_ok=True)
        return lambda: encode_file(tok, str(inputs / "web.txt"), str(out), num_processes=1)
    atexit.register(shutil.rmtree, scratch, True)
    return fresh


def prepare_decode(inputs, profile):
    tok = _load_tokenizer(inputs)
    ids = tok.encode((inputs / "web.txt").read_text(encoding="utf-8"))
    passes = PROFILES[profile]["decode_passes"]       # decoding is fast: a timed run decodes several times

    def fresh():
        fresh_tok = _load_tokenizer(inputs)
        return lambda: [fresh_tok.decode(ids) for _ in range(passes)]
    return fresh


@dataclass(frozen=True)
class Workload:
    name: str
    prepare: object
    needs_corpus: bool = False


WORKLOADS = [                          # the order of the report
    Workload("count", prepare_count),
    Workload("merge_loop", prepare_merge_loop),
    Workload("train_synthetic", _prepare_train("stories.txt", "train_vocab")),
    Workload("train_corpus", _prepare_train("corpus.txt", "train_vocab"), needs_corpus=True),
    Workload("encode", prepare_encode),
    Workload("encode_file", prepare_encode_file),
    Workload("decode", prepare_decode),
]
WORKLOAD_BY_NAME = {w.name: w for w in WORKLOADS}


def describe_sizes(profile, corpus_bytes=None):
    """One line of the inputs' sizes, for the report."""
    p = PROFILES[profile]
    line = (f"web text {p['web_bytes'] / 1e6:g} MB (bpe_fast.synthetic style web, seed 0), stories "
            f"{p['stories_bytes'] / 1e6:g} MB (seed 0); merge loop to vocab {p['merge_vocab']:,}, training to "
            f"vocab {p['train_vocab']:,}; encoding with a {p['tokenizer_vocab']:,}-token vocabulary trained on "
            f"the web text; decoding {p['decode_passes']} time(s)")
    if corpus_bytes:
        line += f"; real corpus: its first {corpus_bytes / 1e6:g} MB"
    return line


def make_inputs(folder, profile, corpus=None, corpus_bytes=None):
    """Write the workloads' inputs into folder with the bpe_fast importable here: web.txt, stories.txt,
    counts.npz (the pre-token counts of web.txt), tokenizer.json (a vocabulary trained on web.txt, as hex)
    and, given a real corpus, corpus.txt (its first corpus_bytes, cut at a line end)."""
    import numpy as np

    from bpe_fast import count_pretokens, train_bpe
    from bpe_fast.synthetic import generate

    folder, p = Path(folder), PROFILES[profile]
    generate(folder / "web.txt", p["web_bytes"], seed=0, style="web")
    generate(folder / "stories.txt", p["stories_bytes"], seed=0)
    counts = count_pretokens(str(folder / "web.txt"), [EOT], num_processes=1)
    items = sorted(counts.items())
    tokens = np.frombuffer(b"".join(t for t, _ in items), dtype=np.uint8)
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(t) for t, _ in items], out=offsets[1:])
    np.savez(folder / "counts.npz", tokens=tokens, offsets=offsets,
             counts=np.array([c for _, c in items], dtype=np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train_bpe(str(folder / "web.txt"), p["tokenizer_vocab"], [EOT], num_processes=2)
    (folder / "tokenizer.json").write_text(json.dumps({
        "vocab": {str(i): t.hex() for i, t in sorted(vocab.items())},
        "merges": [[a.hex(), b.hex()] for a, b in merges]}))
    if corpus is not None:
        with open(corpus, "rb") as src:
            data = src.read(corpus_bytes)
        cut = data.rfind(b"\n") + 1 or len(data)
        (folder / "corpus.txt").write_bytes(data[:cut])


def inputs_digest(folder):
    """sha256 of the input files (their names and bytes), to tell whether two runs had the same inputs."""
    h = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if path.is_file():
            h.update(path.name.encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def check_imported_from(expect):
    """Stop unless bpe_fast was imported from the build folder `expect` (None: from anywhere)."""
    import bpe_fast
    where = Path(bpe_fast.__file__).resolve()
    if expect is not None and Path(expect).resolve() not in where.parents:
        raise SystemExit(f"bpe_fast was imported from {where}, not from the build {expect}")
    return str(where)


def serve_workload(name, inputs, profile="timed"):
    """The worker of a round: prepare and warm up, say "ready", then time one run for each "run" line read
    from stdin, answering with one JSON line {"wall": s, "cpu": s}, until "quit" or the end of input."""
    fresh = WORKLOAD_BY_NAME[name].prepare(Path(inputs), profile)
    fresh()()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        call = fresh()
        w0, c0 = time.perf_counter(), time.process_time()
        call()
        cpu = time.process_time() - c0
        wall = time.perf_counter() - w0
        print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


# ---------------------------------------------------------------------------------------------------------
# Revisions and builds.

@dataclass
class Source:
    """What a revision argument names: kind is "commit", "tree" (a source folder) or "package"."""
    label: str
    kind: str
    ref: str                 # the commit's sha, the folder, or the package file
    about: str               # one line for the report


@dataclass
class Build:
    source: Source
    key: str
    path: Path               # the folder to put on PYTHONPATH


def git(*args, cwd=REPO, check=True):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)


def resolve(rev, repo=REPO):
    """The Source a revision argument names; ABError when it names nothing."""
    if rev in (None, WORKTREE):
        head = git("log", "-1", "--format=%h %ad %s", "--date=short", cwd=repo, check=False).stdout.strip()
        changed = git("status", "--porcelain", "--", "bpe_fast", "setup.py", cwd=repo, check=False).stdout.strip()
        on = f" (HEAD {head[:90]}{'; with changes to bpe_fast/ or setup.py' if changed else ''})" if head else ""
        return Source(WORKTREE, "tree", str(repo), f"the working tree of {repo}{on}")
    path = Path(rev).expanduser()
    if path.is_file():
        if not path.name.endswith(PACKAGE_SUFFIXES):
            raise ABError(f"{rev}: a file that is not a wheel or sdist ({', '.join(PACKAGE_SUFFIXES)})")
        return Source(rev, "package", str(path.resolve()), f"the package {path.name}")
    if path.is_dir() and (path / "setup.py").is_file() and (path / "bpe_fast").is_dir():
        return Source(rev, "tree", str(path.resolve()), f"the source folder {path.resolve()}")
    found = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=repo, check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise ABError(f"unknown revision {rev!r}: not a commit of {repo}, a source folder or a wheel/sdist")
    sha = found.stdout.strip()
    subject = git("log", "-1", "--format=%h %ad %s", "--date=short", sha, cwd=repo).stdout.strip()
    return Source(rev, "commit", sha, subject[:110])


def toolchain_tag():
    """The part of the cache's path that a build depends on besides its sources: the Python, Cython and
    NumPy that build it (a cached build from another toolchain is never reused)."""
    import sysconfig

    try:
        import Cython
        cython = Cython.__version__
    except ImportError:
        cython = "none"
    try:
        import numpy
        numpy_version = numpy.__version__
    except ImportError:
        numpy_version = "none"
    what = f"{sys.version}|{sysconfig.get_platform()}|{sysconfig.get_config_var('CXX')}|{cython}|{numpy_version}"
    return f"{sys.implementation.cache_tag}-{hashlib.sha256(what.encode()).hexdigest()[:12]}"


def cache_root():
    return Path(os.environ.get("BPE_FAST_AB_CACHE") or "~/.cache/bpe_fast-ab").expanduser() / toolchain_tag()


def _copy_sources(src, dst):
    """Copy a source folder's build inputs (the files setup.py needs and bpe_fast/ without generated files)."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True)
    for name in SOURCE_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    shutil.copytree(src / "bpe_fast", dst / "bpe_fast",
                    ignore=lambda d, names: [n for n in names if n.endswith(GENERATED) or n == "__pycache__"])


def _tree_digest(folder):
    """The hash of a copied source folder's build inputs (the README, copied for setuptools, is left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.name not in ("README.md",)):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def _file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def new_temp_dir():
    return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))


def script(name):
    """The path of ab.py or icount.py for a worker process."""
    return str(SCRIPTS["dir"] / name)


def snapshot_scripts(folder):
    """Copy ab.py and icount.py into folder and run the workers from there, so that editing them (or checking
    out another branch) during a run does not change the workloads half-way."""
    here = Path(__file__).resolve().parent
    for name in ("ab.py", "icount.py"):
        shutil.copy2(here / name, Path(folder) / name)
    SCRIPTS["dir"] = Path(folder)


def remove_stale_worktrees(repo=REPO):
    """Remove the worktrees and temporary folders of earlier runs of these scripts whose process is gone
    (killed before cleaning up)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    for top in tmp.glob(f"{TMP_PREFIX}*"):
        pid = top.name[len(TMP_PREFIX):].split("-")[0]
        if top.is_dir() and pid.isdigit() and not _alive(int(pid)) and not (top / "src" / ".git").is_file():
            shutil.rmtree(top, ignore_errors=True)
    listing = git("worktree", "list", "--porcelain", cwd=repo, check=False).stdout
    for line in listing.splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line[len("worktree "):])
        top = path.parent
        if top.parent != tmp or not top.name.startswith(TMP_PREFIX):
            continue
        pid = top.name[len(TMP_PREFIX):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            git("worktree", "remove", "--force", str(path), cwd=repo, check=False)
            shutil.rmtree(top, ignore_errors=True)
    git("worktree", "prune", cwd=repo, check=False)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build(source, jobs=None, say=print, repo=REPO):
    """Build a Source into its cache folder (or find it there) and return the Build. Temporary folders are
    removed whatever happens; a failed build's log is kept (ABError names it)."""
    root = cache_root()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    tmp = new_temp_dir()
    try:
        if source.kind == "commit":
            key = source.ref
        elif source.kind == "package":
            key = "pkg-" + _file_digest(source.ref)
        else:
            _copy_sources(source.ref, tmp / "src")
            key = "tree-" + _tree_digest(tmp / "src")
        done = root / key
        if (done / "build.json").is_file():
            return Build(source, key, done)
        log = root / "logs" / f"{key}.log"
        say(f"building {source.label} ({key[:16]}) ... log: {log}")
        start = time.perf_counter()
        stage = tmp / "stage"
        if source.kind == "package":
            command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                       "--disable-pip-version-check", "--target", str(stage), source.ref]
            _run_build(command, tmp, log, source)
        else:
            if source.kind == "commit":
                added = git("worktree", "add", "--detach", str(tmp / "src"), source.ref, cwd=repo, check=False)
                if added.returncode != 0:
                    log.write_text(added.stdout + added.stderr)
                    raise ABError(f"revision {source.label!r}: git worktree add failed (log: {log})")
            src, lib = tmp / "src", tmp / "lib"
            reused = reuse_extensions(src, lib, root)
            command = [sys.executable, "setup.py", "build_ext", "--build-lib", str(lib), "--build-temp",
                       str(tmp / "temp"), "-j", str(jobs or os.cpu_count() or 1)]
            _run_build(command, src, log, source, reused)
            keep_extensions(src, lib, root)
            shutil.copytree(src / "bpe_fast", stage / "bpe_fast",
                            ignore=lambda d, names: [n for n in names if n.endswith(GENERATED) or n == "__pycache__"])
            for so in (lib / "bpe_fast").glob("*.so"):
                shutil.copy2(so, stage / "bpe_fast" / so.name)
        (stage / "build.json").write_text(json.dumps({
            "label": source.label, "kind": source.kind, "ref": source.ref, "about": source.about,
            "seconds": round(time.perf_counter() - start, 1), "built": time.strftime("%Y-%m-%d %H:%M:%S")}))
        shutil.copy2(log, stage / "build.log")
        try:
            os.rename(stage, done)
        except OSError:
            if not (done / "build.json").is_file():      # another run finished the same build first: use it
                raise
        say(f"built {source.label} in {time.perf_counter() - start:.0f} s")
        return Build(source, key, done)
    finally:
        if (tmp / "src" / ".git").is_file():              # a worktree: unregister it as well
            git("worktree", "remove", "--force", str(tmp / "src"), cwd=repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        if source.kind == "commit":
            git("worktree", "prune", cwd=repo, check=False)


def _extension_keys(src):
    """{module: key} for the tree's .pyx modules: a module's key is the hash of all it is compiled from (its
    .pyx, every .pxd/.pxi of the package, setup.py); with the cache's toolchain, equal keys give equal builds."""
    pkg = Path(src) / "bpe_fast"
    shared = hashlib.sha256((Path(src) / "setup.py").read_bytes())
    for path in sorted(list(pkg.glob("*.pxd")) + list(pkg.glob("*.pxi"))):
        shared.update(path.name.encode() + b"\0" + path.read_bytes())
    return {pyx.stem: f"{pyx.stem}-" + hashlib.sha256(shared.digest() + pyx.read_bytes()).hexdigest()[:16]
            for pyx in sorted(pkg.glob("*.pyx"))}


def reuse_extensions(src, lib, root):
    """Put the cached .cpp (into the tree) and .so (into the build's lib folder) of every module whose sources
    are unchanged since an earlier build, newer than its sources, so that cythonize and build_ext skip it (a
    one-module change compiles one module). Returns the modules reused."""
    reused = []
    stamp = time.time() + 60
    for module, key in _extension_keys(src).items():
        cached = root / "ext" / key
        if not (cached / "done").is_file():
            continue
        for path in sorted(p for p in cached.iterdir() if p.name != "done"):
            target = (_mkdir(Path(lib) / "bpe_fast") if path.suffix == ".so" else Path(src) / "bpe_fast") / path.name
            shutil.copy2(path, target)
            when = stamp + (10 if path.suffix == ".so" else 0)
            os.utime(target, (when, when))
        reused.append(module)
    return reused


def keep_extensions(src, lib, root):
    """Cache each module's .cpp and .so of a successful build (see reuse_extensions)."""
    for module, key in _extension_keys(src).items():
        target = root / "ext" / key
        if (target / "done").is_file():
            continue
        files = [p for p in (Path(src) / "bpe_fast").glob(f"{module}.cpp")]
        files += [p for p in (Path(lib) / "bpe_fast").glob(f"{module}.*.so")]
        if len(files) != 2:
            continue
        stage = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=_mkdir(root / "ext")))
        for path in files:
            shutil.copy2(path, stage / path.name)
        (stage / "done").write_text("")
        try:
            os.rename(stage, target)
        except OSError:
            shutil.rmtree(stage, ignore_errors=True)


def _run_build(command, cwd, log, source, reused=()):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with open(log, "w") as out:
        if reused:
            out.write(f"reused the compiled {', '.join(reused)} (unchanged sources) of an earlier build\n")
        out.write(f"$ cd {cwd} && {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    if done.returncode != 0:
        raise ABError(f"revision {source.label!r} ({source.about}) does not build: see its build log {log}")


# ---------------------------------------------------------------------------------------------------------
# Running workers.

def child_env(build_path, hash_seed=None):
    """The environment of a worker: PYTHONPATH at the build; with build_path None (icount.py's 'installed', the
    bpe_fast this process imports) this process's PYTHONPATH, its entries made absolute (workers start in the
    temporary folder, where "." or a relative path would name another folder)."""
    env = dict(os.environ)
    if build_path is not None:
        env["PYTHONPATH"] = str(build_path)
    elif env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep))
    if hash_seed is not None:       # reproducible runs: Python's hashes, and the key of bpe_fast's hash_bytes
        env["PYTHONHASHSEED"] = str(hash_seed)      # (fixed at the value it had before it was drawn at random)
        env["BPE_FAST_HASH_SEED"] = str(0x9E3779B97F4A7C15 + hash_seed)
    env.setdefault("BPE_FAST_NUM_PROCESSES", "1")
    return env


def run_child(args, build_path, label, timeout=CHILD_TIMEOUT, prefix=(), hash_seed=None):
    """Run this script (or icount.py: args[0]) in a fresh process with PYTHONPATH at the build; ABError with the
    child's last line on failure."""
    command = [*prefix, sys.executable, *args]
    try:
        done = subprocess.run(command, env=child_env(build_path, hash_seed), capture_output=True, text=True,
                              timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        raise ABError(f"{label}: no result after {timeout} s") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith("==")]
        raise ABError(f"{label}: failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
    return done


def prepare_inputs_for(builds, profile, corpus=None, corpus_bytes=None, say=print):
    """The inputs folder (cached) made by the first build that can make them."""
    spec = json.dumps([PROFILES[profile], str(corpus), corpus_bytes,
                       corpus and os.stat(corpus).st_mtime_ns], sort_keys=True)
    errors = []
    for b in builds:
        key = hashlib.sha256(f"{b.key}|{spec}".encode()).hexdigest()[:16]
        folder = cache_root() / "inputs" / f"{profile}-{key}"
        if (folder / "done").is_file():
            return folder
        stage = Path(tempfile.mkdtemp(prefix=f"{profile}-{key}.", dir=_mkdir(folder.parent)))
        try:
            say(f"making the {profile} inputs with {b.source.label}")
            args = [script("ab.py"), "--make-inputs", str(stage), "--profile", profile, "--expect", str(b.path)]
            if corpus is not None:
                args += ["--corpus", str(corpus), "--corpus-bytes", str(corpus_bytes)]
            run_child(args, b.path, f"making the inputs with {b.source.label}")
            (stage / "done").write_text("")
            try:
                os.rename(stage, folder)
            except OSError:
                if not (folder / "done").is_file():
                    raise
            return folder
        except ABError as exc:
            errors.append(str(exc))
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    raise ABError(errors[-1])


def _mkdir(path):
    path.mkdir(parents=True, exist_ok=True)
    return path


class Server:
    """A worker process of one round (serve_workload): PYTHONPATH at a build, its workload prepared and
    warmed up, timing one run each time it is asked."""

    def __init__(self, build, name, inputs):
        self.label = f"{name} with {build.source.label}"
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, script("ab.py"), "--worker", name, "--inputs", str(inputs),
             "--expect", str(build.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
            text=True, env=child_env(build.path), cwd=tempfile.gettempdir())

    def _answer(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], CHILD_TIMEOUT)
        line = self.proc.stdout.readline() if ready else None
        if not line:
            self.proc.kill()
            self.proc.wait()
            self.errors.seek(0)
            lines = [ln for ln in self.errors.read().splitlines() if ln.strip()]
            why = lines[-1] if lines else (f"no answer after {CHILD_TIMEOUT} s" if line is None
                                           else f"exit status {self.proc.returncode}")
            raise ABError(f"{self.label}: failed: {why}")
        return line.strip()

    def ready(self):
        if self._answer() != "ready":
            raise ABError(f"{self.label}: the worker did not start")

    def run(self):
        """Time one run: {"wall": s, "cpu": s}."""
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return json.loads(self._answer())

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


def run_round(builds, name, inputs, reps, first):
    """One round of a benchmark: a fresh worker for A and one for B (side `first` started first), then reps
    runs of each, alternating (first, other, other, first, ...); {"a": [...], "b": [...]}, each run
    {"wall": s, "cpu": s}."""
    servers = [None, None]
    try:
        for side in (first, 1 - first):
            servers[side] = Server(builds[side], name, inputs)
        for s in servers:
            s.ready()
        runs = ([], [])
        for i in range(reps):
            for side in ((first, 1 - first) if i % 2 == 0 else (1 - first, first)):
                runs[side].append(servers[side].run())
        return {"a": runs[0], "b": runs[1]}
    finally:
        for s in servers:
            if s is not None:
                s.close()


# ---------------------------------------------------------------------------------------------------------
# Statistics.

def bootstrap_ratio(a, b, resamples=4000, confidence=0.95, seed=0):
    """(ratio, low, high) for the times a[i][k], b[i][k] of run k of A and of B in round i (run back to back):
    the ratio is the median of all b[i][k] / a[i][k], the interval the bootstrap percentile interval of that
    median, resampling whole rounds (so that what differs between one pair of processes and the next counts)."""
    import numpy as np

    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except ValueError:
        a = b = np.zeros(0)                        # rounds of different lengths
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 1:
        raise ValueError("a and b must be paired times: rounds (at least 2) x runs, the same for both")
    if (a <= 0).any() or (b <= 0).any():
        raise ValueError("times must be positive")
    ratios = b / a
    rng = np.random.default_rng(seed)
    picks = ratios[rng.integers(0, len(ratios), size=(resamples, len(ratios)))]
    medians = np.median(picks.reshape(resamples, -1), axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(medians, [tail, 1 - tail])
    return float(np.median(ratios)), float(low), float(high)


def verdict(low, high, threshold):
    """"slower" when the interval lies above 1 + threshold, "faster" when below 1 / (1 + threshold), else
    "no change" (symmetric: swapping A and B swaps the verdicts)."""
    if low > 1 + threshold:
        return "slower"
    if high < 1 / (1 + threshold):
        return "faster"
    return "no change"


def parse_percent(text):
    """"5%" or "0.05" -> 0.05."""
    s = str(text).strip()
    try:
        value = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (say 5% or 0.05)") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"a threshold between 0% and 100%, got {text!r}")
    return value


def summarize(name, a, b, threshold):
    """The row of a benchmark from the times a[i][k], b[i][k] of its rounds' runs."""
    import numpy as np

    ratio, low, high = bootstrap_ratio(a, b)
    return {"benchmark": name, "a": float(np.median(a)), "b": float(np.median(b)), "ratio": ratio,
            "low": low, "high": high, "verdict": verdict(low, high, threshold), "rounds": len(a)}


def run_times(rounds, clock):
    """The times of the runs of A and of B, a list a round: (a, b)."""
    return ([[run[clock] for run in r["a"]] for r in rounds], [[run[clock] for run in r["b"]] for r in rounds])


# ---------------------------------------------------------------------------------------------------------
# The report.

def machine_lines():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import platform
    return [f"machine: {cpu}, {os.cpu_count()} cores, {platform.platform()}",
            f"python: {sys.version.split()[0]} ({sys.executable})"]


def _seconds(s):
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.3f} s"


def report(rows, a, b, header_lines, threshold, clock):
    lines = ["# bpe_fast A/B", ""]
    lines += [f"- A: `{a.source.label}`: {a.source.about} (build {a.key[:22]})",
              f"- B: `{b.source.label}`: {b.source.about} (build {b.key[:22]})"]
    lines += [f"- {line}" for line in header_lines]
    lines += ["", f"| benchmark | A median | B median | B/A | 95% interval | verdict (±{threshold:.0%}) |",
              "| --- | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['benchmark']} | {_seconds(r['a'])} | {_seconds(r['b'])} | {r['ratio']:.3f} | "
                     f"{r['low']:.3f} – {r['high']:.3f} | {r['verdict']} |")
    lines += ["", f"Medians of all runs, in {'CPU' if clock == 'cpu' else 'wall'} seconds; B/A: the median of the "
              f"ratios of back-to-back runs of B and A, with a bootstrap 95% interval (resampling rounds). "
              f"A verdict needs the whole interval beyond 1 ± {threshold:.0%}."]
    return "\n".join(lines) + "\n"


def draw(rows, threshold, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.5 * len(rows) + 1.5))
    ys = list(range(len(rows)))[::-1]
    colours = {"slower": "tab:red", "faster": "tab:green", "no change": "tab:gray"}
    ax.axvspan(1 / (1 + threshold), 1 + threshold, color="0.92", label=f"±{threshold:.0%}")
    ax.axvline(1, color="0.5", lw=0.8)
    for y, r in zip(ys, rows):
        ax.errorbar(r["ratio"], y, xerr=[[r["ratio"] - r["low"]], [r["high"] - r["ratio"]]], fmt="o",
                    color=colours[r["verdict"]], capsize=4)
    ax.set_yticks(ys, [f"{r['benchmark']} ({r['verdict']})" for r in rows])
    ax.set_xlabel("time B / time A (95% interval)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------
# The command line.

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("rev_a", nargs="?", default=None, metavar="REV_A",
                   help="commit, WORKTREE, source folder or wheel/sdist (default: HEAD)")
    p.add_argument("rev_b", nargs="?", default=None, metavar="REV_B",
                   help="the same kinds (default: WORKTREE, the working tree)")
    p.add_argument("--against-version", metavar="PATH",
                   help="A is this wheel or sdist of bpe_fast (built into its own folder); B is REV_A if given")
    p.add_argument("--rounds", type=int, default=10,
                   help=f"rounds; each starts a fresh process for A and for B (default 10, at least {MIN_ROUNDS})")
    p.add_argument("--reps", type=int, default=16,
                   help="timed runs of A and of B in a round, taking turns (default 16)")
    p.add_argument("--threshold", type=parse_percent, default=None,
                   help="the smallest change given a verdict: default 5%% (3%% with --instructions)")
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated, of {', '.join(WORKLOAD_BY_NAME)}")
    p.add_argument("--corpus", metavar="PATH", help="a real corpus: adds train_corpus (training on its prefix)")
    p.add_argument("--corpus-bytes", metavar="SIZE", default="4MB", help="how much of --corpus: default 4MB")
    p.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                   help="the process's CPU time (default: a busy machine stretches wall times most) or wall time")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a benchmark is slower")
    p.add_argument("--instructions", action="store_true",
                   help="compare instruction counts under valgrind's callgrind instead of times (icount.py)")
    p.add_argument("--out", metavar="FILE", help="also write the Markdown report here")
    p.add_argument("--png", metavar="FILE", help="draw the ratios and their intervals (needs matplotlib)")
    p.add_argument("--jobs", type=int, default=None, help="parallel compile jobs of a build (default: cores)")
    # worker modes (this script run in a fresh process, PYTHONPATH at a build)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    p.add_argument("--expect", help=argparse.SUPPRESS)
    p.add_argument("--make-inputs", help=argparse.SUPPRESS)
    p.add_argument("--profile", default="timed", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        p.error(f"--rounds must be at least {MIN_ROUNDS} for a 95% interval (got {args.rounds}): fewer rounds "
                f"cannot cover the ratio 95% of the time")
    if args.reps < 1:
        p.error(f"--reps must be at least 1, got {args.reps}")
    if args.jobs is not None and args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.against_version and args.rev_b is not None:
        p.error(f"--against-version is A: give one revision, B, not two ({args.rev_a} {args.rev_b})")
    check_output_paths(p, (("--out", args.out), ("--png", args.png),
                           # (the raw times' file beside --out: none with --instructions)
                           ("--out's .json", None if args.out is None or args.instructions
                            else Path(args.out).with_suffix(".json"))))
    if args.out and not args.instructions and Path(args.out).suffix == ".json":
        p.error(f"--out {args.out}: the raw times are written beside the Markdown, as the same name with .json, "
                f"which would overwrite it: name the report .md")
    return args


def check_output_paths(parser, options, inputs=()):
    """parser.error (one line) for an output file option whose folder does not exist, or that names a folder,
    or the file of another output or of an input option (`inputs`, (option, path) too): said before anything
    runs, not as a traceback once the benchmarks are done (icount.py --json BASELINE replaced the baseline; ab.py
    --png x.json --out x.md wrote the raw times over the chart: helper-149)."""
    seen = {}
    for option, path in inputs:
        if path is not None:
            seen[os.path.realpath(Path(path).expanduser())] = option
    for option, path in options:
        if path is None:
            continue
        path = Path(path).expanduser()
        if path.is_dir():
            parser.error(f"{option} {path}: a folder, not a file")
        if not path.parent.is_dir():
            parser.error(f"{option} {path}: no such folder {path.parent}")
        real = os.path.realpath(path)
        if real in seen:
            parser.error(f"{option} {path}: is {seen[real]} too; give each output a file of its own")
        seen[real] = option


def selected(only, corpus):
    names = [w.name for w in WORKLOADS if corpus is not None or not w.needs_corpus]
    if only:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in WORKLOAD_BY_NAME]
        if unknown:
            raise ABError(f"--only: unknown benchmark {unknown[0]!r} (known: {', '.join(WORKLOAD_BY_NAME)})")
        if "train_corpus" in wanted and corpus is None:
            raise ABError("--only train_corpus needs --corpus PATH")
        names = [n for n in names if n in wanted]
    return names


def parse_size(text):
    """"4MB", "500KB", "1.5GB" or a number of bytes -> bytes."""
    s = str(text).strip().upper().replace(" ", "")
    for suffix, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if s.endswith(suffix):
            s, factor = s[:-len(suffix)], scale
            break
    else:
        factor = 1
    try:
        value = int(float(s) * factor)
    except (ValueError, OverflowError):           # (inf, 1e400: OverflowError)
        raise ABError(f"not a size: {text!r} (say 4MB)") from None
    if value <= 0:
        raise ABError(f"a size must be positive, got {text!r}")
    return value


def ab_main(args, say):
    if args.against_version:
        rev_a, rev_b = args.against_version, args.rev_a or WORKTREE
        if not Path(args.against_version).expanduser().is_file():
            raise ABError(f"--against-version {args.against_version}: no such wheel or sdist")
    else:
        rev_a, rev_b = args.rev_a or "HEAD", args.rev_b or WORKTREE
    corpus = None
    corpus_bytes = None
    size = parse_size(args.corpus_bytes)        # checked even without --corpus: a typo is said
    if args.corpus:
        corpus = Path(args.corpus).expanduser().resolve()
        if not corpus.is_file():
            raise ABError(f"--corpus {args.corpus}: no such file")
        corpus_bytes = size
    names = selected(args.only, corpus)
    if args.instructions:
        import icount
        if not [n for n in names if n in icount.HOT_PATHS]:
            raise ABError(f"--instructions counts {', '.join(icount.HOT_PATHS)}; --only {args.only} has none of "
                          f"them")
        icount.valgrind_command()                 # says how to install valgrind before anything is built
    sources = [resolve(rev_a), resolve(rev_b)]
    remove_stale_worktrees()
    builds = [build(s, args.jobs, say) for s in sources]
    if args.instructions:
        import icount
        threshold = 0.03 if args.threshold is None else args.threshold
        text, worse = icount.ab_instructions(builds, names, threshold, say)
        _emit(text, args.out, say)
        return 1 if worse and args.fail_on_regression else 0

    threshold = 0.05 if args.threshold is None else args.threshold
    inputs = prepare_inputs_for(builds, "timed", corpus, corpus_bytes, say)
    load_before = os.getloadavg()
    rounds = {n: [] for n in names}
    start = time.perf_counter()
    for r in range(args.rounds):
        for n in names:
            rounds[n].append(run_round(builds, n, inputs, args.reps, first=r % 2))
        done = ", ".join(f"{n} {statistics.median(y / x for x, y in zip(a[0], b[0])):.2f}" for n in names
                         for a, b in [run_times(rounds[n][-1:], args.clock)])
        say(f"round {r + 1}/{args.rounds} ({time.perf_counter() - start:.0f} s), B/A: {done}")
    rows = [summarize(n, *run_times(rounds[n], args.clock), threshold) for n in names]
    header = machine_lines() + [
        f"load average (1 min): {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after",
        f"{args.rounds} rounds of {args.reps} runs of A and of B (A B B A ..., a fresh process for each "
        f"side in each round); {len(names)} benchmarks, {time.perf_counter() - start:.0f} s",
        "inputs: " + describe_sizes("timed", corpus_bytes if corpus else None)]
    text = report(rows, builds[0], builds[1], header, threshold, args.clock)
    _emit(text, args.out, say)
    if args.png:
        draw(rows, threshold, args.png, f"B = {builds[1].source.label} against A = {builds[0].source.label}")
        say(f"wrote {args.png}")
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps({"rows": rows, "rounds": rounds}, indent=1))
    slower = [r["benchmark"] for r in rows if r["verdict"] == "slower"]
    return 1 if slower and args.fail_on_regression else 0


def _emit(text, out, say):
    print(text, end="", flush=True)
    if out:
        Path(out).write_text(text)
        say(f"wrote {out}")


def _on_sigterm(signum, frame):
    raise SystemExit(128 + signum)                 # runs the finally blocks that remove temporary folders


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        check_imported_from(args.expect)
        serve_workload(args.worker, args.inputs, args.profile)
        return 0
    if args.make_inputs:
        check_imported_from(args.expect)
        size = int(args.corpus_bytes) if args.corpus else None
        make_inputs(args.make_inputs, args.profile, args.corpus, size)
        return 0
    return run_main(ab_main, args, "ab.py")


def run_main(body, args, program):
    """Run body(args, say) with the scripts snapshot in a temporary folder (removed however it ends); an
    ABError is printed as one line and exit status 2."""
    signal.signal(signal.SIGTERM, _on_sigterm)

    def say(msg):
        print(msg, file=sys.stderr, flush=True)
    run_dir = new_temp_dir()
    try:
        snapshot_scripts(run_dir)
        return body(args, say)
    except ABError as exc:
        print(f"{program}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    # run as the module `ab`, the one icount.py imports (one ABError class, one set of workloads)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ab
    sys.exit(ab.main())
