"""Instruction counts of bpe_fast's hot paths under valgrind's callgrind, and the CI gate on them.

    python benchmarks/icount.py                     # the gate: the installed bpe_fast against the baseline
    python benchmarks/icount.py WORKTREE            # the gate on a build of the working tree
    python benchmarks/icount.py --update-baseline   # record benchmarks/baseline/icounts.json from a build of
                                                    # the working tree (say why in the commit)
    python benchmarks/ab.py --instructions [A] [B]  # two revisions against each other

Each hot path of ab.py (count, merge_loop, train_synthetic, encode, encode_file, decode) runs on small fixed
inputs ("icount" sizes: 256 KB of synthetic text, made by the measured bpe_fast, seed 0) in its own process
under callgrind, with PYTHONHASHSEED=0 and one process. Like ab.py's timed runs it first runs the workload once
unmeasured, then once more measured: only that call is counted. Callgrind starts with instrumentation and
collection off (--instr-atstart=no --collect-atstart=no, about 4 times slower than native instead of 50), and a
tiny C library compiled here from valgrind's callgrind.h turns both on just before the call and off just after
it (client requests), so the interpreter's start, the imports and the reading of the inputs are neither counted
nor slowed down. The count leaves out what realloc does (whether it grows a block in place or copies it depends
on the heap's layout, which shifts with the size of the environment and the paths: up to 1% of the merge loop).
Counts do not drift with the machine's load: two runs agree to within a few instructions, and the same build in
a shell and in CI's venv to within 0.05%, so a 2% change is real.

The gate compares the counts with benchmarks/baseline/icounts.json and fails (exit 1) when a hot path takes
more than --max-increase (3%) more instructions. Counts depend on the compiler, Python, Cython and NumPy, so
when the baseline's recorded environment differs from the running one it prints a warning and skips the
comparison (exit 0). When the inputs differ from the baseline's (bpe_fast.synthetic or the training changed
them) it fails: record the baseline again in the same commit. --update-baseline measures twice and refuses to
write when the two runs differ by more than 0.5%.
"""
import argparse
import concurrent.futures
import ctypes
import datetime
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab  # noqa: E402  (ab.py, beside this file: the workloads, builds and child processes)
from ab import ABError  # noqa: E402

BASELINE = Path(__file__).resolve().parent / "baseline" / "icounts.json"
HOT_PATHS = [w.name for w in ab.WORKLOADS if not w.needs_corpus]
MAX_INCREASE = 0.03
REPEAT_TOLERANCE = 0.005          # two runs of the same build must agree to within this
ENVIRONMENT_KEYS = ("python", "compiler", "cython", "numpy", "platform")
INSTALL_HINT = "valgrind not found: install it with `apt-get install valgrind`"
SHIM = r"""
#include <valgrind/callgrind.h>
void icount_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void icount_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def valgrind_command():
    """The callgrind command line before the program; ABError saying how to install valgrind when absent."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise ABError(INSTALL_HINT)
    return [valgrind, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no"]


def compile_shim(folder):
    """Compile the start/stop library into folder; its path. Needs a C compiler and valgrind's headers."""
    import sysconfig

    source, lib = Path(folder) / "icount_shim.c", Path(folder) / "icount_shim.so"
    source.write_text(SHIM)
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(source)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["?"])[0]
        raise ABError(f"cannot compile the callgrind start/stop library with {cc} ({first}): valgrind's "
                      f"headers come with it: apt-get install valgrind")
    return lib


# ---------------------------------------------------------------------------------------------------------
# In the measured process.

def run_marked(call, shim):
    """call() with callgrind's instrumentation and collection on (the shim's client requests); its result."""
    lib = ctypes.PyDLL(str(shim))             # PyDLL: the calls keep the GIL (nothing between them and call)
    start, stop = lib.icount_start, lib.icount_stop
    start()
    try:
        return call()
    finally:
        stop()


def count_worker(name, inputs, shim):
    fresh = ab.WORKLOAD_BY_NAME[name].prepare(Path(inputs), "icount")
    fresh()()                                 # unmeasured: lazy imports, first-call work
    call = fresh()
    # Python's cyclic garbage collector runs when the objects allocated since its last run pass a threshold,
    # which depends on everything the process did before (the modules imported, the inputs made): a full
    # collection landing in the measured call added 1.4 M instructions (+8%) to train_synthetic in a clean
    # clone's venv and none in the working tree's. It is not the hot path's work: collected before, off during.
    gc.collect()
    gc.disable()
    try:
        run_marked(call, shim)
    finally:
        gc.enable()


def environment():
    """What the counts depend on besides the code: the Python, the compiler and Cython that built the
    extensions (read from the compiled modules), NumPy and the platform."""
    import numpy

    import bpe_fast
    compilers, cythons = set(), set()
    for so in sorted(Path(bpe_fast.__file__).parent.glob("_*.so")):
        data = so.read_bytes()
        compilers.update(m.decode() for m in re.findall(rb"(GCC: \([^\0]*?\) [^\0]+|clang version [^\0]+)", data))
        cythons.update(m.decode().replace("_", ".") for m in re.findall(rb"_cython_(\d+_\d+_\w+?)\.", data))
    libc = " ".join(platform.libc_ver())
    return {
        "python": f"{platform.python_implementation()} {sys.version}",
        "compiler": "; ".join(sorted(compilers)) or "unknown",
        "cython": ", ".join(sorted(cythons)) or "unknown",
        "numpy": numpy.__version__,
        "platform": f"{platform.system()} {platform.machine()} {libc}".strip(),
    }


# ---------------------------------------------------------------------------------------------------------
# In the parent.

REALLOC = {"realloc", "__libc_realloc", "__GI___libc_realloc"}


def read_callgrind(path):
    """(instructions counted, those inside calls to realloc) from callgrind's output file. Whether realloc can
    grow a block in place, or copies it, depends on the heap's layout, which shifts with the environment's size
    and the paths (the same build differs by up to 1% in the merge loop between a shell and CI), so the gate
    leaves realloc out: everything else repeats to within a few instructions."""
    names, total, realloc = {}, None, 0
    callee, cost_of_call = None, False
    with open(path, errors="replace") as f:
        for line in f:
            if cost_of_call:                       # the line after calls=: position and inclusive cost
                cost_of_call = False
                if callee in REALLOC:
                    realloc += int(line.split()[-1])
            elif line.startswith(("fn=", "cfn=")):
                name = _function_name(line.split("=", 1)[1].strip(), names)
                if line.startswith("cfn="):
                    callee = name
            elif line.startswith("calls="):
                cost_of_call = True
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    if total is None:                              # (its "summary:" says 0 when instrumentation started late)
        raise ABError(f"{path}: no instruction total in callgrind's output")
    return total, realloc


def _function_name(spec, names):
    """A function's name from "(id) name" (defining id), "(id)" (using it) or "name"."""
    if not spec.startswith("("):
        return spec
    key, _, rest = spec[1:].partition(")")
    if rest.strip():
        names[key] = rest.strip()
    return names.get(key)


def _count_one(build_path, name, inputs, folder, valgrind, shim, run):
    out = folder / f"callgrind.{name}.{run}.out"
    args = [ab.script("icount.py"), "--worker", name, "--inputs", str(inputs), "--shim", str(shim)]
    if build_path is not None:
        args += ["--expect", str(build_path)]
    ab.run_child(args, build_path, f"{name} under callgrind",
                 prefix=[*valgrind, f"--callgrind-out-file={out}"], hash_seed=0)
    total, realloc = read_callgrind(out)
    if total == 0:
        raise ABError(f"{name}: callgrind counted nothing (the start/stop library did not take effect)")
    return total - realloc, realloc


def measure(build_path, names=None, repeat=1, jobs=None, say=print, label=None):
    """Measure the bpe_fast on build_path (None: the importable one) and return the document the baseline
    holds: environment, inputs_sha256, counts {hot path: instructions} (the first run's), runs (every run's)."""
    valgrind = valgrind_command()
    names = list(names or HOT_PATHS)
    label = label or (str(build_path) if build_path else "the installed bpe_fast")
    folder = Path(tempfile.mkdtemp(prefix=f"{ab.TMP_PREFIX}{os.getpid()}-icount-"))
    try:
        shim = compile_shim(folder)
        inputs = folder / "inputs"
        inputs.mkdir()
        args = [ab.script("ab.py"), "--make-inputs", str(inputs), "--profile", "icount"]
        if build_path is not None:
            args += ["--expect", str(build_path)]
        ab.run_child(args, build_path, f"making the instruction-count inputs with {label}")
        env_args = [ab.script("icount.py"), "--environment"]
        where = ab.run_child(env_args, build_path, f"reading the environment of {label}").stdout
        env = json.loads(where.strip().splitlines()[-1])
        runs, realloc = {n: [] for n in names}, {}
        start = time.perf_counter()
        jobs = jobs or os.cpu_count() or 1
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for r in range(repeat):
                futures = {n: pool.submit(_count_one, build_path, n, inputs, folder, valgrind, shim, r)
                           for n in names}
                for n in names:
                    count, realloc[n] = futures[n].result()
                    runs[n].append(count)
        where = env.pop("bpe_fast")
        say(f"counted {len(names)} hot paths of {label} ({Path(where).parent}) under callgrind"
            f"{f', {repeat} times' if repeat > 1 else ''} in {time.perf_counter() - start:.0f} s")
        return {"environment": env, "bpe_fast": where, "inputs_sha256": ab.inputs_digest(inputs),
                "counts": {n: runs[n][0] for n in names}, "runs": runs, "realloc": realloc}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def spread(runs):
    """The largest relative difference between two runs of one hot path."""
    return max((max(v) - min(v)) / min(v) for v in runs.values())


def environment_differences(recorded, running):
    return [f"{k}: baseline {recorded.get(k)!r}, here {running.get(k)!r}"
            for k in ENVIRONMENT_KEYS if recorded.get(k) != running.get(k)]


def compare(baseline, measured, max_increase=MAX_INCREASE):
    """The gate's decision: (status, lines) with status "pass", "fail" or "skip" (the environments differ:
    the lines are the warning)."""
    differences = environment_differences(baseline.get("environment", {}), measured["environment"])
    if differences:
        return "skip", (["warning: the instruction-count baseline was recorded in another environment, so the "
                         "comparison is skipped (record it here with --update-baseline):"]
                        + [f"  {d}" for d in differences])
    if baseline.get("inputs_sha256") != measured["inputs_sha256"]:
        return "fail", ["the instruction-count inputs differ from the baseline's (bpe_fast.synthetic or the "
                        "training changed them): record the baseline again with "
                        "`python benchmarks/icount.py --update-baseline` in this commit and say why"]
    old, new = baseline.get("counts", {}), measured["counts"]
    bad = bad_count(old)
    if bad:
        raise ABError(f"the instruction-count baseline: {bad}")
    lines = [f"| hot path | baseline | now | change | verdict (+{max_increase:.0%} fails) |",
             "| --- | ---: | ---: | ---: | --- |"]
    failed = False
    for name, count in new.items():
        if name not in old:
            failed = True
            lines.append(f"| {name} | – | {count:,} | – | not in the baseline: record it (--update-baseline) |")
            continue
        change = count / old[name] - 1
        if change > max_increase:
            failed, word = True, "MORE INSTRUCTIONS"
        elif change < -max_increase:
            word = "fewer (consider --update-baseline)"
        else:
            word = "ok"
        lines.append(f"| {name} | {old[name]:,} | {count:,} | {change:+.2%} | {word} |")
    for name in old:
        if name not in new:
            failed = True
            lines.append(f"| {name} | {old[name]:,} | – | – | in the baseline, not measured: record it again |")
    return ("fail" if failed else "pass"), lines


def write_baseline(measured, path, what):
    commit = ab.git("rev-parse", "HEAD", check=False).stdout.strip() or None
    dirty = bool(ab.git("status", "--porcelain", "--", "bpe_fast", "setup.py", check=False).stdout.strip())
    document = {
        "about": "Instruction counts of bpe_fast's hot paths (benchmarks/icount.py). Update with "
                 "`python benchmarks/icount.py --update-baseline`, in a commit that says why.",
        "recorded": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "measured": what, "commit": commit, "bpe_fast_sources_modified": dirty,
        "environment": measured["environment"],
        "inputs": ab.describe_sizes("icount"),
        "inputs_sha256": measured["inputs_sha256"],
        "counts": measured["counts"],
        "repeat_spread": round(spread(measured["runs"]), 6),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, path)


def ab_instructions(builds, names, threshold, say):
    """ab.py --instructions: the hot paths of builds A and B under callgrind; (Markdown, any increase beyond
    threshold)."""
    names = [n for n in names if n in HOT_PATHS]
    a, b = (measure(x.path, names, say=say, label=x.source.label) for x in builds)
    lines = ["# bpe_fast A/B: instruction counts", "",
             f"- A: `{builds[0].source.label}`: {builds[0].source.about}",
             f"- B: `{builds[1].source.label}`: {builds[1].source.about}",
             f"- inputs: {ab.describe_sizes('icount')}"]
    for k in environment_differences(a["environment"], b["environment"]):
        lines.append(f"- environments differ: {k}")
    if a["inputs_sha256"] != b["inputs_sha256"]:
        lines.append("- note: the two builds make different inputs; both ran A's")
    lines += ["", f"| hot path | A | B | B/A | verdict (±{threshold:.0%}) |", "| --- | ---: | ---: | ---: | --- |"]
    worse = []
    for n in names:
        ratio = b["counts"][n] / a["counts"][n]
        if ratio > 1 + threshold:
            word = "more instructions"
            worse.append(n)
        elif ratio < 1 / (1 + threshold):
            word = "fewer instructions"
        else:
            word = "no change"
        lines.append(f"| {n} | {a['counts'][n]:,} | {b['counts'][n]:,} | {ratio:.4f} | {word} |")
    return "\n".join(lines) + "\n", worse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("rev", nargs="?", default=None, metavar="REV",
                   help="what to measure: 'installed' (the importable bpe_fast; the gate's default) or a revision "
                        "as ab.py takes them (a commit, WORKTREE, a source folder, a wheel/sdist), built in "
                        "ab.py's cache (--update-baseline's default: WORKTREE)")
    p.add_argument("--update-baseline", action="store_true", help="measure (twice) and write the baseline")
    p.add_argument("--baseline", type=Path, default=BASELINE, help=f"default: {BASELINE.relative_to(ab.REPO)}")
    p.add_argument("--max-increase", type=ab.parse_percent, default=MAX_INCREASE, help="default: 3%%")
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated, of {', '.join(HOT_PATHS)}")
    p.add_argument("--repeat", type=int, default=None,
                   help="runs of each hot path (default 1; 2 with --update-baseline, which must agree)")
    p.add_argument("--json", type=Path, help="also write the measured counts here")
    p.add_argument("--jobs", type=int, default=None, help="hot paths measured at once (default: cores)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    p.add_argument("--expect", help=argparse.SUPPRESS)
    p.add_argument("--shim", help=argparse.SUPPRESS)
    p.add_argument("--environment", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        p.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.jobs is not None and args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    ab.check_output_paths(p, (("--json", args.json),), inputs=(("--baseline", args.baseline),))
    return args


def read_baseline(path):
    """The baseline document; ABError (one line) when it is not a JSON object with counts."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ABError(f"--baseline {path}: cannot read it ({exc}): record one with --update-baseline") from None
    if not isinstance(document, dict) or not isinstance(document.get("counts"), dict):
        raise ABError(f"--baseline {path}: not an instruction-count baseline (no counts): record one with "
                      f"--update-baseline")
    bad = bad_count(document["counts"])
    if bad:
        raise ABError(f"--baseline {path}: {bad}")
    return document


def bad_count(counts):
    """What is wrong with the first count of {hot path: instructions} that is not a positive integer (a change
    relative to it would divide by zero or mean nothing), or None."""
    for name, count in counts.items():
        if type(count) is not int or count <= 0:
            return (f"the count of hot path {name!r} is {count!r}, not a positive number of instructions: record "
                    f"the baseline again with `python benchmarks/icount.py --update-baseline`")
    return None


def gate_main(args, say):
    names = HOT_PATHS
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in HOT_PATHS]
        if unknown:
            raise ABError(f"--only: unknown hot path {unknown[0]!r} (known: {', '.join(HOT_PATHS)})")
    repeat = args.repeat or (2 if args.update_baseline else 1)
    if args.update_baseline and repeat < 2:
        raise ABError("--update-baseline measures at least twice (--repeat 2 or more)")
    valgrind_command()
    if not args.update_baseline and not args.baseline.is_file():
        raise ABError(f"no baseline at {args.baseline}: record one with --update-baseline")
    # read before measuring: the gate compares with it, and --update-baseline --only keeps its other counts
    baseline = read_baseline(args.baseline) if not args.update_baseline or (
        args.only and args.baseline.is_file()) else None
    start = time.perf_counter()
    rev = args.rev or (ab.WORKTREE if args.update_baseline else "installed")
    if rev == "installed":
        build_path, what = None, "the installed bpe_fast"
    else:
        source = ab.resolve(rev)
        ab.remove_stale_worktrees()
        built = ab.build(source, say=say)
        build_path, what = built.path, f"{rev} ({source.about}; build {built.key[:16]})"
    measured = measure(build_path, names, repeat, args.jobs, say, label=what)
    if args.json:
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(measured, indent=2) + "\n")
        os.replace(tmp, args.json)
    if repeat > 1:
        say(f"the runs agree to within {spread(measured['runs']):.4%}")
    if args.update_baseline:
        if spread(measured["runs"]) > REPEAT_TOLERANCE:
            raise ABError(f"two runs differ by {spread(measured['runs']):.3%} (more than "
                          f"{REPEAT_TOLERANCE:.1%}): the counts are not repeatable, baseline not written")
        if baseline is not None:
            kept = baseline
            if kept.get("environment") == measured["environment"] and \
                    kept.get("inputs_sha256") == measured["inputs_sha256"]:
                measured["counts"] = {**kept["counts"], **measured["counts"]}
        write_baseline(measured, args.baseline, what)
        for n, c in measured["counts"].items():
            print(f"{n}: {c:,}")
        say(f"wrote {args.baseline}: commit it with a message that says why the counts changed")
        return 0
    if args.only:
        baseline = {**baseline, "counts": {n: c for n, c in baseline.get("counts", {}).items() if n in names}}
    status, lines = compare(baseline, measured, args.max_increase)
    print("\n".join(lines))
    took = time.perf_counter() - start
    if status == "skip":
        return 0
    if status == "fail":
        print(f"instruction-count gate: FAILED ({took:.0f} s; baseline {args.baseline.name} of "
              f"{str(baseline.get('commit'))[:12]})")
        return 1
    print(f"instruction-count gate: passed ({took:.0f} s; no hot path more than {args.max_increase:.0%} above "
          f"the baseline of {str(baseline.get('commit'))[:12]})")
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        ab.check_imported_from(args.expect)
        count_worker(args.worker, args.inputs, args.shim)
        return 0
    if args.environment:
        where = ab.check_imported_from(args.expect)
        print(json.dumps({**environment(), "bpe_fast": where}))
        return 0
    return ab.run_main(gate_main, args, "icount.py")


if __name__ == "__main__":
    sys.exit(main())
