"""The README's names are the package's: what it tells a user to import or pass exists."""
import re
from pathlib import Path

import bpe_fast
from bpe_fast import patterns

README = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")


def test_every_pattern_constant_the_readme_names_imports_from_bpe_fast():
    # the README named KIMI_PAT_STR, DEEPSEEK3_PATTERN, STARCODER_PATTERN, ... which only bpe_fast.patterns had:
    # `from bpe_fast import KIMI_PAT_STR` was an ImportError (helper-114's README audit)
    named = set(re.findall(r"\b([A-Z][A-Z0-9_]*_(?:PATTERN|PAT_STR))\b", README))
    assert {"GPT2_PATTERN", "KIMI_PAT_STR", "BLOOM_PATTERN"} <= named     # the search finds what it looks for
    for name in sorted(named):
        assert getattr(bpe_fast, name) == getattr(patterns, name), name
        assert name in bpe_fast.__all__, name


def test_the_readme_cli_synopsis_lists_every_pattern_name():
    synopsis = re.search(r"--pattern ([a-z0-9|]+)\|REGEX\]", README)
    assert synopsis is not None
    assert tuple(synopsis.group(1).split("|")) == patterns.SHORT_NAMES
    assert all(name in patterns.PATTERNS for name in patterns.SHORT_NAMES)
