"""The package's seams (issue 15): no import cycle between its modules, and no module reaching into another's
private names. Read from the source with `ast`, so a new violation fails here with its file and line."""
import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "bpe_fast"
BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
SUBMODULES = {p.stem for p in PACKAGE.glob("*.py")} | {p.stem for p in PACKAGE.glob("*.pyx")}
# Reaching into the standard library's internals, each for a documented reason.
ALLOWED = {
    ("procs.py", "_result_queue"),       # terminate(): unblock ProcessPoolExecutor's manager thread (see there)
    ("procs.py", "_writer"),
    ("procs.py", "_processes"),          # the executor's worker processes, to see whether one has died
    ("procs.py", "_reader"),             # discard_queue: a multiprocessing queue's read end (and its feeder thread,
                                         # by getattr), drained so that the feeder ends once the readers are gone
    ("procs.py", "_thread"),             # _shut_down: a pool's tasks' queue's (_call_queue, by getattr) feeder,
                                         # ended before the write end it leaves open (EPIPE) is closed
}


def modules():
    return sorted(PACKAGE.glob("*.py"))


def type_checking_only(tree):
    """The nodes inside `if TYPE_CHECKING:` blocks: imports for annotations only, which never run."""
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and
            ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for stmt in node.body for inner in ast.walk(stmt)}


def package_imports(path):
    """(line, imported module name) for every import of a bpe_fast module in the file, at any depth (but in an
    `if TYPE_CHECKING:` block: a module may name another's types in its annotations without importing it)."""
    tree = ast.parse(path.read_text())
    typing_only = type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                yield node.lineno, node.module.split(".")[0]
            elif node.level == 1:
                for alias in node.names:
                    yield node.lineno, alias.name
            elif node.module and node.module.startswith("bpe_fast."):
                yield node.lineno, node.module.split(".")[1]


def test_no_import_cycle():
    graph = {p.stem: {name for _, name in package_imports(p) if name in SUBMODULES and name != p.stem}
             for p in modules()}
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)


def defined_private_names(tree):
    """The private names a module defines: functions, classes, module or class variables, self._x attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    for node in ast.walk(tree):                     # __slots__ = ("_dict", ...)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__slots__" for t in node.targets):
            names.update(elt.value for elt in getattr(node.value, "elts", []) if isinstance(elt, ast.Constant))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_reaches(path, package_modules=SUBMODULES):
    """(line, what) for each private name of another module this file uses: `from .m import _x` (unless _x is
    a module of its own), or `obj._x` where the file does not define _x itself."""
    tree = ast.parse(path.read_text())
    own = defined_private_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("bpe_fast")):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and alias.name not in package_modules:
                    found.append((node.lineno, f"from {'.' * node.level}{node.module or ''} import {alias.name}"))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if node.attr not in own and (path.name, node.attr) not in ALLOWED:
                found.append((node.lineno, ast.unparse(node)))
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.name)
def test_no_module_uses_another_modules_private_names(path):
    assert private_reaches(path) == []


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_benchmarks_import_no_private_names(path):
    tree = ast.parse(path.read_text())
    bad = [(node.lineno, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
           for alias in node.names if alias.name.startswith("_") and node.module in {p.stem for p in
                                                                                     BENCHMARKS.glob("*.py")}]
    assert bad == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    # the detectors themselves, on a file written to break both rules
    bad = tmp_path / "bad.py"
    bad.write_text("from .tokenizer import _map_threads\nfrom . import _scan\n"
                   "def f(tokenizer):\n    return tokenizer._segmenter, tokenizer.encode\n"
                   "class A:\n    def g(self, other):\n        self._x = 1\n        return other._x\n")
    assert private_reaches(bad) == [(1, "from .tokenizer import _map_threads"), (4, "tokenizer._segmenter")]


def test_imports_for_annotations_only_are_not_dependencies(tmp_path):
    path = tmp_path / "typed.py"
    path.write_text("from typing import TYPE_CHECKING\nfrom .formats import read_vocab\n"
                    "if TYPE_CHECKING:\n    from .tokenizer import Tokenizer\n")
    assert list(package_imports(path)) == [(2, "formats")]


def test_native_layer_reads_no_python_class_private_fields():
    text = (PACKAGE / "_encode.pyx").read_text()
    assert re.findall(r"\btokenizer\._\w+", text) == []


def _run_in_a_child(code: str, folder) -> None:
    """Run `code` in a fresh interpreter from `folder`, importing the bpe_fast this process tests (the installed,
    compiled one in CI; from the clone's root the source tree, without its .so files, would come first): it
    must exit 0."""
    import os
    import subprocess
    import sys

    import bpe_fast

    where = os.path.dirname(os.path.dirname(os.path.abspath(bpe_fast.__file__)))
    check = f"import bpe_fast\nassert bpe_fast.__file__ == {bpe_fast.__file__!r}, bpe_fast.__file__\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", check + code], capture_output=True, text=True, cwd=folder, env=env)
    assert proc.returncode == 0, proc.stderr


def test_importing_the_package_loads_nothing_heavy(tmp_path):
    # `import bpe_fast` imports none of its modules: NumPy, `regex` and the encoding modules come with the first
    # name that needs them (a fresh process's import was 60 ms, 45 of them NumPy's); and each public name (and
    # the submodules it used to import) is still there, bpe_fast.pretokenize the function. The child imports the
    # package this process tests (the installed, compiled one in CI: not the source tree, which has no .so there)
    code = ("import sys, types, bpe_fast\n"
            "loaded = sorted(m for m in ('numpy', 'regex', 'tokenizers') if m in sys.modules)\n"
            "assert loaded == [], loaded\n"
            "assert [m for m in sys.modules if m.startswith('bpe_fast.')] == []\n"
            "assert set(bpe_fast.__all__) == set(bpe_fast._EXPORTS), set(bpe_fast.__all__) ^ set(bpe_fast._EXPORTS)\n"
            "assert bpe_fast.patterns.GPT2_PATTERN == bpe_fast.GPT2_PATTERN\n"
            "assert bpe_fast.specials and bpe_fast.procs and bpe_fast._types\n"
            "import bpe_fast.pretokenize\n"
            "assert isinstance(bpe_fast.pretokenize, types.FunctionType)\n"
            "assert bpe_fast.pretokenize is sys.modules['bpe_fast.pretokenize'].pretokenize\n"
            "ns = {}\n"
            "exec('from bpe_fast import *', ns)\n"
            "assert set(bpe_fast.__all__) <= set(ns) and ns['pretokenize'] is bpe_fast.pretokenize\n")
    _run_in_a_child(code, tmp_path)


def test_building_an_encoding_loads_no_numpy(tmp_path):
    # bpe_fast.Encoding from a dict of ranks (tiktoken's habit) or a .tiktoken file (from_tiktoken_file, as
    # get_encoding reads one) with a built-in pattern, and its encoding and decoding, import no NumPy: it was
    # 50-70 ms of a fresh process's first Encoding (tiktoken's whole first Encoding of cl100k_base is about 60).
    # NumPy comes with what gives NumPy arrays (encode_to_numpy), and with a custom pattern's `regex` path.
    # In a child process, of the package this process tests (see the test above)
    code = ("import base64, sys, bpe_fast\n"
            "from bpe_fast.patterns import GPT4_PATTERN, O200K_PATTERN\n"
            "ranks = {bytes([b]): b for b in range(256)} | {b'ab': 256, b' ab': 257}\n"
            "for pattern in (GPT4_PATTERN, O200K_PATTERN):\n"
            "    enc = bpe_fast.Encoding('e', pat_str=pattern, mergeable_ranks=ranks, special_tokens={'<|x|>': 300})\n"
            "    assert enc.encode('ab ab<|x|>', allowed_special='all') == [256, 257, 300]\n"
            "    assert enc.decode([256, 257, 300]) == 'ab ab<|x|>'\n"
            "with open('ranks.tiktoken', 'wb') as f:\n"
            "    f.write(b''.join(base64.b64encode(t) + b' %d\\n' % r for t, r in ranks.items()))\n"
            "enc = bpe_fast.Encoding.from_tiktoken_file('e', 'ranks.tiktoken', GPT4_PATTERN)\n"
            "assert enc.encode_ordinary(' ab') == [257]\n"
            "assert 'numpy' not in sys.modules\n"
            "enc.encode_to_numpy('ab')\n"
            "assert 'numpy' in sys.modules\n")
    _run_in_a_child(code, tmp_path)


def test_building_an_encoding_from_ranks_loads_no_readers_regex_or_futures(tmp_path):
    # bpe_fast.Encoding from a dict of ranks (or a good .tiktoken file) with a built-in pattern (scanned natively,
    # with Unicode 16.0's tables) imports neither `regex` (8-11 ms) nor concurrent.futures (with logging, 4-12 ms;
    # its tables are built in a procs.ThreadJob), nor the file readers and what they import (bpe_fast.formats,
    # merge_rule, atomic: 5-8 ms): those were most of what a fresh process's first Encoding took beyond tiktoken's.
    # A custom pattern brings `regex`. In a child process, of the package this process tests (see the tests above)
    code = ("import base64, sys, bpe_fast\n"
            "from bpe_fast.patterns import GPT4_PATTERN, O200K_PATTERN\n"
            "ranks = {bytes([b]): b for b in range(256)} | {b'ab': 256, b' ab': 257}\n"
            "unwanted = ('regex', 'concurrent.futures', 'bpe_fast.formats', 'bpe_fast.merge_rule', 'bpe_fast.atomic')\n"
            "for pattern in (GPT4_PATTERN, O200K_PATTERN):\n"
            "    enc = bpe_fast.Encoding('e', pat_str=pattern, mergeable_ranks=ranks, special_tokens={'<|x|>': 300})\n"
            "    assert enc.encode('ab ab<|x|>', allowed_special='all') == [256, 257, 300]\n"
            "    assert enc.encode_ordinary('ab ab<|x|>')[:2] == [256, 257]\n"
            "    assert enc.decode([256, 257, 300]) == 'ab ab<|x|>'\n"
            "    assert enc._core_bpe._tokenizer.unicode == '16.0'\n"
            "    loaded = [m for m in unwanted if m in sys.modules]\n"
            "    assert loaded == [], loaded\n"
            "with open('ranks.tiktoken', 'wb') as f:\n"      # a good file: its readers' errors are formats'
            "    f.write(b''.join(base64.b64encode(t) + b' %d\\n' % r for t, r in ranks.items()))\n"
            "enc = bpe_fast.Encoding.from_tiktoken_file('e', 'ranks.tiktoken', GPT4_PATTERN)\n"
            "assert enc.encode_ordinary(' ab') == [257]\n"
            "loaded = [m for m in unwanted if m in sys.modules]\n"
            "assert loaded == [], loaded\n"
            "enc = bpe_fast.Encoding('e', pat_str=r' ?\\S+|\\s+', mergeable_ranks=ranks, special_tokens={})\n"
            "assert enc.encode('ab ab') == [256, 257] and 'regex' in sys.modules\n")
    _run_in_a_child(code, tmp_path)
