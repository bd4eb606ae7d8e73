"""The typed public API (issue 15 item 8): mypy finds no error in the installed package (its annotations, the
py.typed marker and the .pyi stubs of the compiled modules, with the [tool.mypy] settings of pyproject.toml); every
public function, method and property is annotated; the stubs name what the compiled modules hold."""
import ast
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(bpe_fast.__file__).resolve().parent          # the installed package (the tests run on it)
COMPILED = ["_encode", "_inspect", "_ranks", "_runs", "_scan", "_train"]


def _python_path(cwd):
    """sys.path of a fresh interpreter started in `cwd` (where mypy looks for installed packages)."""
    out = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"], cwd=cwd,
                         capture_output=True, text=True, check=True)
    return [os.path.realpath(p) for p in json.loads(out.stdout) if p]


def test_mypy_finds_no_error_in_the_installed_package(tmp_path):
    pytest.importorskip("mypy")         # the `test` extra installs it: CI runs this
    env = dict(os.environ)
    env.pop("MYPYPATH", None)
    if os.path.realpath(PACKAGE.parent) not in _python_path(tmp_path):
        # An editable install (pip install -e): the package is found through an import hook, which mypy does
        # not follow. Its files are the source folder's: point mypy at them.
        env["MYPYPATH"] = str(PACKAGE.parent)
    # Run outside the repository (its source folder would be found first): mypy reads the installed package as
    # any installed library, so it needs py.typed and the stubs (and reports -p's errors, which it does not silence).
    result = subprocess.run([sys.executable, "-m", "mypy", "-p", "bpe_fast", "--config-file",
                             str(ROOT / "pyproject.toml"), "--no-error-summary"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"mypy on {PACKAGE}:\n{result.stdout}{result.stderr}"


def test_the_typing_files_are_installed():
    assert (PACKAGE / "py.typed").is_file()
    for name in COMPILED:
        assert (PACKAGE / f"{name}.pyi").is_file(), f"{name}.pyi is not installed beside the compiled module"


# ---- annotations of the public API -----------------------------------------------------------------------------

def _missing_annotations(func, is_method):
    """The names of func's parameters without an annotation (self / cls not counted), and "return" if its return
    has none."""
    signature = inspect.signature(func)
    params = list(signature.parameters.values())[1 if is_method else 0:]
    missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _class_members(cls):
    """(name, function, is_method) for the public methods and properties a class defines, and its __init__."""
    for name, value in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(value, property):
            yield name, value.fget, True
        elif isinstance(value, staticmethod):
            yield name, value.__func__, False
        elif isinstance(value, classmethod):
            yield name, value.__func__, True
        elif hasattr(value, "func") and hasattr(value, "attrname"):        # functools.cached_property
            yield name, value.func, True
        elif inspect.isfunction(value):
            yield name, value, True


def _public_objects(module):
    """The public functions and classes a module defines (its __all__, else the names without "_")."""
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        value = getattr(module, name)
        if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__:
            yield name, value


def _unannotated(objects):
    bad = []
    for name, value in objects:
        if inspect.isclass(value):
            for member, func, is_method in _class_members(value):
                missing = _missing_annotations(func, is_method)
                if missing:
                    bad.append(f"{value.__module__}.{name}.{member}: {', '.join(missing)}")
        elif inspect.isfunction(value):
            missing = _missing_annotations(value, False)
            if missing:
                bad.append(f"{value.__module__}.{name}: {', '.join(missing)}")
    return bad


def test_the_names_bpe_fast_exports_are_annotated():
    objects = [(name, getattr(bpe_fast, name)) for name in bpe_fast.__all__]
    assert [name for name, value in objects if inspect.isfunction(value) or inspect.isclass(value)]
    assert _unannotated(objects) == []


PUBLIC_MODULES = sorted(f"bpe_fast.{m.name}" for m in pkgutil.iter_modules(bpe_fast.__path__)
                        if not m.name.startswith("_"))


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_function_and_method_is_annotated(name):
    assert _unannotated(_public_objects(importlib.import_module(name))) == []


def test_the_annotation_check_finds_what_is_missing():
    class Example:
        def typed(self, a: int, *args: int, b: str = "", **kw: object) -> None: ...

        def untyped(self, a, b: int = 0): ...

        @property
        def size(self): ...

        def _private(self, a): ...

    def function(a: int, b) -> int: ...

    assert _unannotated([("Example", Example), ("function", function)]) == [
        f"{__name__}.Example.untyped: a, return", f"{__name__}.Example.size: return", f"{__name__}.function: b"]


# ---- the stubs of the compiled modules ----------------------------------------------------------------------------

def _stub_names(path):
    """{top-level name: [names its class body defines]} of a .pyi (names starting with "_" are the stub's own
    aliases, left out)."""
    names = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            members = [n.name for n in node.body if isinstance(n, ast.FunctionDef)] + \
                [n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)] \
                if isinstance(node, ast.ClassDef) else []
            names[node.name] = members
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = []
        elif isinstance(node, ast.Assign):
            names.update((t.id, []) for t in node.targets if isinstance(t, ast.Name))
    return {name: members for name, members in names.items() if not name.startswith("_")}


@pytest.mark.parametrize("name", COMPILED)
def test_the_stubs_name_what_the_compiled_module_holds(name):
    module = importlib.import_module(f"bpe_fast.{name}")
    assert not module.__file__.endswith(".py"), f"{module.__file__}: not the compiled module"
    stubs = _stub_names(PACKAGE / f"{name}.pyi")
    missing = [n for n in stubs if not hasattr(module, n)]
    missing += [f"{n}.{m}" for n, members in stubs.items() for m in members if not hasattr(getattr(module, n, None), m)]
    assert missing == [], f"named in {name}.pyi but not in the compiled module"
    public = [n for n, value in vars(module).items() if not n.startswith("_") and not inspect.ismodule(value)]
    assert sorted(set(public) - set(stubs)) == [], f"in the compiled module but not in {name}.pyi"
