"""Tokenizer: constructor, files, save/load and exports with awkward inputs (found by review).

Expected values come from the oracle (encode_oracle), HF tokenizers, tiktoken, or by hand."""
import pytest

from bpe_fast import Tokenizer

BYTES = {i: bytes([i]) for i in range(256)}


def test_export_tiktoken_refuses_special_tokens_tiktoken_would_match_otherwise(tmp_path):
    """export_tiktoken is refused "as to_tiktoken is": with "<|end" and "<|endoftext|>", tiktoken (given the
    ranks file and these special tokens, as the docstring says to build it) finds "<|end" first in
    "<|endoftext|>", where the tokenizer gives the one id of "<|endoftext|>". to_tiktoken refused it;
    export_tiktoken wrote the file."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    specials = {"<|end": 256, "<|endoftext|>": 257}
    enc = tiktoken.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks={v: i for i, v in BYTES.items()},
                            special_tokens=specials)
    if enc.encode("<|endoftext|>", allowed_special="all") == [257]:
        pytest.skip("this tiktoken tries the longer special token first")
    tok = Tokenizer(BYTES, [], list(specials))
    assert tok.encode("<|endoftext|>") == [257]
    with pytest.raises(ValueError, match=r"special tokens '<\|end' and '<\|endoftext\|>'"):
        tok.to_tiktoken()
    with pytest.raises(ValueError, match=r"special tokens '<\|end' and '<\|endoftext\|>'"):
        tok.export_tiktoken(tmp_path / "out.tiktoken")
    assert not (tmp_path / "out.tiktoken").exists()


EURO = "€".encode()


@pytest.mark.parametrize("vocab, merges, specials", [
    # "€" is an ordinary token (made by merge 1) and a special token at its id: its key in HF's vocab, "âĤ¬",
    # was left out (an added token's text is "€"), and the merge making it named a token of no vocab
    (BYTES | {256: EURO[:2], 257: EURO}, [(EURO[:1], EURO[1:2]), (EURO[:2], EURO[2:])], ["€"]),
    # "ab", made by merge 0, is a special token; "<|a b|>" (not its byte-level form) at 256 needs the vocab
    # without "ab" for HF to give it 256: "ab" was left out of the vocab, and merge 0 made no token
    (BYTES | {256: b"<|a b|>", 257: b"ab"}, [(b"a", b"b")], ["<|a b|>", "ab"]),
])
def test_export_hf_keeps_the_tokens_merges_need_or_refuses(tmp_path, vocab, merges, specials):
    """A special token that is also a token the merges make: export_hf wrote a tokenizer.json whose merges name a
    token missing from its vocab (HF tokenizers panicked or refused it, from_hf refused it). It must write a
    file HF reads and encodes as the oracle does, or refuse naming the special token."""
    tokenizers = pytest.importorskip("tokenizers")
    from encode_oracle import oracle_encode

    tok = Tokenizer(vocab, merges, specials)
    text = "xab€€<|a b|>abc €"
    expected = oracle_encode(text, vocab, merges, specials)
    path = tmp_path / "tokenizer.json"
    try:
        tok.export_hf(path)
    except ValueError as exc:
        assert any(repr(s) in str(exc) for s in specials), exc
        assert not path.exists()
        return
    assert Tokenizer.from_hf(path).encode(text) == expected
    assert tokenizers.Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids == expected


def test_special_tokens_given_as_a_dict_keep_their_ids_or_are_refused(tmp_path):
    """special_tokens as tiktoken's {str: id} (from_tiktoken's form) in the constructor or from_files: the ids
    were dropped without a word ({"<|eot|>": 5} gave "<|eot|>" the id 256, the next free one, where the caller
    asked for 5). Ids the tokenizer gives anyway are accepted; others are refused naming the token."""
    tok = Tokenizer(BYTES, [], {"<|eot|>": 256, "<|pad|>": 257})
    assert tok.special_tokens == {"<|eot|>": 256, "<|pad|>": 257}
    assert Tokenizer(BYTES | {300: b"<|eot|>"}, [], {"<|eot|>": 300}).encode("a<|eot|>") == [97, 300]
    with pytest.raises(ValueError, match=r"special token '<\|eot\|>'.* 5\b"):
        Tokenizer(BYTES, [], {"<|eot|>": 5})
    Tokenizer(BYTES, []).save(tmp_path)
    files = (tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert Tokenizer.from_files(*files, {"<|eot|>": 256}).encode("<|eot|>") == [256]
    with pytest.raises(ValueError, match=r"special token '<\|eot\|>'.* 50256\b"):
        Tokenizer.from_files(*files, {"<|eot|>": 50256})


def test_merges_whitespace_only_lines_are_blank_lines(tmp_path):
    """read_merges skips blank lines: a line of two spaces or a tab was skipped, one of a single space (the split
    gives two empty tokens) was an error, "a merge line must hold two tokens"."""
    from bpe_fast.formats import read_merges

    path = tmp_path / "merges.txt"
    for blank in [" ", "  ", "\t", " \r", "\r"]:
        path.write_bytes(f"#version: 0.2\nĠ t\n{blank}\nh e\n".encode())
        assert read_merges(path) == [(b" ", b"t"), (b"h", b"e")], repr(blank)


def test_to_tiktoken_names_a_single_byte_that_is_a_special_token(tmp_path):
    """A special token of one byte ("a", id 97) is left out of tiktoken's ranks, which need all 256 bytes: the
    refusal said the byte "has no token", where it has one, the special token: it now names it."""
    tok = Tokenizer(BYTES, [], ["a"])
    assert tok.special_tokens == {"a": 97}
    for export in (tok.to_tiktoken, lambda: tok.export_tiktoken(tmp_path / "out.tiktoken")):
        with pytest.raises(ValueError, match=r"single byte b'a' is the special token 'a' \(id 97\)"):
            export()


@pytest.mark.parametrize("make", [set, frozenset])
def test_merges_without_an_order_are_refused(make):
    """Merges are applied in their order: a set of them took the set's order, which follows the process's hash
    seed ({(a, b), (b, c)} encoded "abc" as [256, 99] in some runs and [97, 257] in others)."""
    merges = make([(b"a", b"b"), (b"b", b"c")])
    with pytest.raises(TypeError, match="merges must be a list"):
        Tokenizer(BYTES | {256: b"ab", 257: b"bc"}, merges)


class _Named(Tokenizer):
    """A subclass as a user writes one: an attribute of its own, set after the base's constructor."""

    def __init__(self, vocab, merges, special_tokens=None, name="mine"):
        super().__init__(vocab, merges, special_tokens)
        self.name = name

    def hello(self):
        return f"{self.name}: {self.encode('ab<|eot|>')}"


def test_a_subclass_pickles_and_copies_as_itself():
    """A subclass of Tokenizer came back from pickle (multiprocessing), copy.copy and copy.deepcopy as a plain
    Tokenizer, without its attributes: a worker process calling the subclass's methods failed."""
    import copy
    import pickle

    tok = _Named(BYTES | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"], name="x")
    for clone in (pickle.loads(pickle.dumps(tok)), copy.copy(tok), copy.deepcopy(tok)):
        assert type(clone) is _Named
        assert clone.hello() == "x: [256, 257]"
    view = tok.restricted_to(frozenset())
    clone = pickle.loads(pickle.dumps(view))
    assert type(clone) is _Named and clone.name == "x" and clone.encode("<|eot|>") == view.encode("<|eot|>")


def test_a_plain_tokenizers_attributes_are_all_its_own():
    """What a subclass's pickle carries is its instance's attributes less the Tokenizer's own (rebuilt from the
    vocabulary, merges and special tokens): every attribute a Tokenizer sets must be listed as its own."""
    import numpy as np

    from bpe_fast.tokenizer import _OWN_ATTRIBUTES

    tok = Tokenizer(BYTES | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"])
    tok.lengths_in(b"ab", np.array([256]))
    tok.encode_with_offsets("ab<|eot|>")
    tok.restricted_to(frozenset()).encode("<|eot|>")
    assert tok._ids_of and tok.merges
    assert set(vars(tok)) <= _OWN_ATTRIBUTES


class _Initialised(Tokenizer):
    """A subclass whose __init__ sets attributes (one from a keyword of its own) and passes its arguments on."""

    def __init__(self, vocab, merges, special_tokens=None, pattern="gpt2", *, training=None, note="default"):
        super().__init__(vocab, merges, special_tokens, pattern, training=training)
        self.note = note
        self.given = (dict(vocab), list(merges), list(special_tokens or ()), pattern)


class _WithPad(Tokenizer):
    """A subclass whose __init__ changes an argument: it adds a special token."""

    def __init__(self, vocab, merges, special_tokens=None, pattern="gpt2"):
        super().__init__(vocab, merges, [*(special_tokens or ()), "<|pad|>"], pattern)


def _each_constructor(tmp_path, monkeypatch, cls):
    """{name: cls built by each class-method constructor} from one tokenizer's files ("abc" in 3 merges, <|eot|>,
    GPT-4's pattern); load with and without the binary cache."""
    from bpe_fast import formats

    tok = Tokenizer(BYTES | {256: b"ab", 257: b"bc", 258: b"abc"}, [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c")],
                    ["<|eot|>"], "gpt4")
    tok.save(tmp_path / "plain")
    monkeypatch.setattr(formats, "CACHE_MIN_TOKENS", 0)
    tok.save(tmp_path / "cached")
    assert (tmp_path / "cached" / formats.CACHE_FILE).exists()
    tok.export_hf(tmp_path / "tokenizer.json")
    ranks = {token: i for i, token in tok.vocab.items() if i < 259}
    return tok, {
        "from_files": cls.from_files(tmp_path / "plain" / "vocab.json", tmp_path / "plain" / "merges.txt",
                                     ["<|eot|>"], "gpt4"),
        "load": cls.load(tmp_path / "plain"),
        "load (cache)": cls.load(tmp_path / "cached"),
        "from_hf": cls.from_hf(tmp_path / "tokenizer.json"),
        "from_tiktoken": cls.from_tiktoken(ranks, "gpt4", {"<|eot|>": 259}),
    }


def test_class_method_constructors_run_a_subclass_init(tmp_path, monkeypatch):
    """from_files, load, from_hf and from_tiktoken made a subclass's instance without calling its __init__: the
    attributes it sets were missing (AttributeError at first use). Its __init__ now runs with what was read."""
    tok, made = _each_constructor(tmp_path, monkeypatch, _Initialised)
    expected = (dict(tok.vocab), list(tok.merges), ["<|eot|>"], tok.pattern)
    for name, sub in made.items():
        assert type(sub) is _Initialised, name
        assert sub.note == "default", name
        assert sub.given == expected, name
        assert sub.encode("abcab<|eot|>") == [258, 256, 259], name


def test_class_method_constructors_honour_what_a_subclass_init_changes(tmp_path, monkeypatch):
    """A subclass's __init__ that adds a special token: the class-method constructors' tokenizers have it too,
    as the subclass's constructor's has."""
    tok, made = _each_constructor(tmp_path, monkeypatch, _WithPad)
    assert _WithPad(dict(tok.vocab), tok.merges, ["<|eot|>"], "gpt4").special_tokens == {"<|eot|>": 259,
                                                                                         "<|pad|>": 260}
    for name, sub in made.items():
        assert sub.special_tokens == {"<|eot|>": 259, "<|pad|>": 260}, name
        assert sub.encode("abc<|pad|>") == [258, 260], name


def test_a_subclass_that_adds_a_special_token_loads_what_it_saved(tmp_path):
    """_WithPad appends <|pad|> to the special tokens it is given; load gives it the saved ones, <|pad|> among
    them, so it was given <|pad|> twice and refused it ("duplicate special token"). A token named twice now
    counts once: it loads as saved, with the same ids, from files and from load."""
    tok = _WithPad(BYTES | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"], "gpt4")
    assert tok.special_tokens == {"<|eot|>": 257, "<|pad|>": 258}
    tok.save(tmp_path / "tok")
    for loaded in (_WithPad.load(tmp_path / "tok"),
                   _WithPad.from_files(tmp_path / "tok" / "vocab.json", tmp_path / "tok" / "merges.txt",
                                       ["<|eot|>", "<|pad|>"], "gpt4")):
        assert type(loaded) is _WithPad
        assert loaded.special_tokens == tok.special_tokens and loaded.vocab == tok.vocab
        assert loaded.encode("ab<|pad|>a<|eot|>") == [256, 258, 97, 257]


def test_a_tokenizers_copies_hold_every_attribute_it_has():
    """Views and copies (restricted_to, with_normalizer, with_unicode) copy a plain Tokenizer's attributes by the
    names in _OWN_ATTRIBUTES, not through __dict__: each must hold all the attributes of the tokenizer it was made
    from, the caches made before it (token_lengths, token_pool) included; a subclass's its own too."""
    import numpy as np

    for tok in [Tokenizer(BYTES | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>", "<|x|>"]),
                _Named(BYTES | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>", "<|x|>"], name="n")]:
        tok.token_lengths()
        tok.token_pool()
        tok.lengths_in(b"ab", np.array([256]))
        made = [tok.restricted_to(frozenset({"<|eot|>"})), tok.with_normalizer("NFC"), tok.with_unicode("16.0")]
        for view in made:
            assert view.encode("ab<|eot|>") == [256, 257]
            assert set(vars(view)) == set(vars(tok)), type(tok)
            for name in ("_tables", "_pool", "_lengths", "_token_pool", "_vocab"):
                assert getattr(view, name) is getattr(tok, name)
        if type(tok) is _Named:
            assert all(view.name == "n" for view in made)
