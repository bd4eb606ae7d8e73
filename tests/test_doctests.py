"""The examples in the docstrings of every bpe_fast module (found with pkgutil, compiled ones too) run and give
what they show. An example marked `# doctest: +SKIP` stays skipped.

A module whose examples are known to fail goes in FAILING with the reason: its test is then expected to fail
(strict: once the examples are fixed the test fails until the entry is removed).
"""
import doctest
import importlib
import pkgutil

import pytest

import bpe_fast

# module name -> why its examples fail (none today)
FAILING = {}
# modules that have examples: finding none there means the examples stopped being found
WITH_EXAMPLES = ["bpe_fast._ranks", "bpe_fast.encoding", "bpe_fast.formats", "bpe_fast.hf", "bpe_fast.pretokenize",
                 "bpe_fast.ranks", "bpe_fast.shards", "bpe_fast.specials", "bpe_fast.synthetic", "bpe_fast.tokenizer"]


def module_names():
    return ["bpe_fast"] + sorted(f"bpe_fast.{m.name}" for m in pkgutil.iter_modules(bpe_fast.__path__)
                                 if m.name != "__main__")


def run_examples(name):
    """(attempted, failed, report) for the examples of module `name`."""
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    return attempted, failed, "".join(report)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(reason=FAILING[name], strict=True)) if name in FAILING else name
    for name in module_names()])
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)             # an example that writes a file writes it here
    attempted, failed, report = run_examples(name)
    assert failed == 0, f"{failed} of {attempted} examples of {name} fail:\n{report}"
    if name in WITH_EXAMPLES:
        assert attempted > 0, f"no examples found in {name}"


def test_every_module_is_found():
    names = module_names()
    assert set(WITH_EXAMPLES) | set(FAILING) <= set(names)
    assert {"bpe_fast.tokenizer", "bpe_fast._encode", "bpe_fast.cli"} <= set(names)
