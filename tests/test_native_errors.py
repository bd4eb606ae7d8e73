"""No native function swallows a C++ exception.

A function Cython runs as `noexcept` cannot raise: when a C++ call in it that Cython declares `except +` throws
(std::vector's push_back, resize, assign, insert: std::bad_alloc), Cython's code catches it, prints it as an
"unraisable" exception and returns as if the call had worked, the vector not grown and the caller's tables
wrong. Such functions grow their vectors with _revec.pxd's push_or_end, resize_or_end, assign_or_end and
append_or_end instead (C++ noexcept: running out of memory ends the process, as ReVec's growing does); functions
that can raise (`except -1`) use Cython's calls and raise MemoryError. Checked on the C++ Cython writes for each
module, with setup.py's directives: no function's error path writes an unraisable exception caught from C++.
"""
import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bpe_fast"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.pyx"))
# std algorithms on integers and plain structs: they never throw (no allocation), but Cython declares them
# `except +`, so their calls carry the same path
NEVER_THROW = re.compile(r"std::(sort|is_sorted|upper_bound|lower_bound)<")
FUNCTION = re.compile(r"\nstatic[^\n;]*?\b(__pyx_f_\w+)\([^;{]*\)\s*\{(.*?)\n\}\n", re.S)
WRAPPED = re.compile(r"try \{\s*\n\s*([^\n]*?)\n")


def directives():
    """setup.py's compiler_directives (setup.py owns them), read with ast."""
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg == "compiler_directives":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py passes no compiler_directives")


def translate(sources, out):
    """Cython's C++ for each .pyx of `sources` into the folder `out`, all at once."""
    options = ",".join(f"{name}={value}" for name, value in directives().items())
    runs = [subprocess.Popen([sys.executable, "-m", "cython", "--cplus", "-3", "-I", str(ROOT), "-X", options,
                              str(pyx), "-o", str(out / f"{pyx.stem}.cpp")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for pyx in sources]
    for pyx, run in zip(sources, runs):
        _, err = run.communicate()
        assert run.returncode == 0, f"cython {pyx.name}: {err[-2000:]}"


def swallowing(cpp):
    """{Cython function: [C++ calls]} for the calls whose thrown exception the function's error path writes as
    unraisable (the algorithms that never throw left out)."""
    found = {}
    for match in FUNCTION.finditer(cpp):
        name, body = match.groups()
        if "catch(...)" not in body or "__Pyx_WriteUnraisable" not in body:
            continue
        calls = sorted({call.strip() for call in WRAPPED.findall(body) if not NEVER_THROW.search(call)})
        if calls:
            found[name] = calls
    return found


@pytest.fixture(scope="module")
def translated(tmp_path_factory):
    pytest.importorskip("Cython", reason="the test extras install Cython: this check reads the C++ it writes")
    out = tmp_path_factory.mktemp("cpp")
    translate([PACKAGE / f"{module}.pyx" for module in MODULES], out)
    return out


@pytest.mark.parametrize("module", MODULES)
def test_no_native_function_swallows_a_cpp_exception(translated, module):
    found = swallowing((translated / f"{module}.cpp").read_text())
    assert not found, (f"{module}.pyx: noexcept functions whose C++ calls (std::bad_alloc) Cython would print and "
                       f"ignore: {found}; grow vectors there with _revec.pxd's push_or_end and the rest")


def test_the_check_finds_what_it_is_for(tmp_path):
    pytest.importorskip("Cython", reason="the test extras install Cython: this check reads the C++ it writes")
    (tmp_path / "grows.pyx").write_text(
        "from libcpp.vector cimport vector\n"
        "from bpe_fast._revec cimport push_or_end\n\n"
        "cdef void grow(vector[int]& v) noexcept nogil:\n"
        "    v.push_back(1)\n\n"
        "cdef void grow_or_end(vector[int]& v) noexcept nogil:\n"
        "    push_or_end(v, 1)\n\n"
        "cdef int grow_or_raise(vector[int]& v) except -1 nogil:\n"
        "    v.push_back(1)\n"
        "    return 0\n\n"
        "def run():\n"
        "    cdef vector[int] v\n"
        "    grow(v)\n"
        "    grow_or_end(v)\n"
        "    grow_or_raise(v)\n")
    translate([tmp_path / "grows.pyx"], tmp_path)
    found = swallowing((tmp_path / "grows.cpp").read_text())
    assert list(found) == ["__pyx_f_5grows_grow"] and "push_back" in found["__pyx_f_5grows_grow"][0]
