"""bpe_fast.specials.SpecialTokens: the one checked value of a run's special tokens, against plain-Python oracles."""
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_fast import Tokenizer
from bpe_fast.specials import SpecialTokens

SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# few distinct characters, so tokens overlap, share prefixes and occur in the texts
alphabet = st.sampled_from("<|>ab é日")
tokens = st.lists(st.text(alphabet, min_size=1, max_size=5), max_size=5, unique=True)
texts = st.text(alphabet, max_size=40)


def leftmost_longest(data, utf8_tokens):
    """[(start, end)] of the tokens in data, scanning left to right: at each position the longest token that
    starts there, else move on one byte (what an alternation tried longest first does)."""
    out, pos = [], 0
    while pos < len(data):
        here = [t for t in utf8_tokens if data.startswith(t, pos)]
        if here:
            end = pos + max(map(len, here))
            out.append((pos, end))
            pos = end
        else:
            pos += 1
    return out


@SOME
@given(tokens, texts)
def test_the_forms_agree_with_an_oracle(toks, text):
    ids = list(range(1000, 1000 + len(toks)))
    specials = SpecialTokens(toks, ids)
    assert specials.tokens == tuple(toks) and list(specials) == toks and len(specials) == len(toks)
    # utf8: every token's UTF-8 exactly once, never a shorter one before a longer one
    assert sorted(specials.utf8) == sorted(t.encode() for t in toks)
    assert [len(b) for b in specials.utf8] == sorted((len(t.encode()) for t in toks), reverse=True)
    # ids follow their tokens in every order
    assert specials.ids == dict(zip(toks, ids))
    assert [specials.id_of_utf8[b] for b in specials.utf8] == list(specials.utf8_ids)
    assert all(specials.ids[b.decode()] == i for b, i in zip(specials.utf8, specials.utf8_ids))
    # the str regex, the native matcher and the oracle find the same tokens
    data = text.encode()
    expected = leftmost_longest(data, [t.encode() for t in toks])
    if toks:
        assert specials.matcher.matches(data) == expected
        found = [(len(text[:m.start()].encode()), len(text[:m.end()].encode())) for m in specials.regex.finditer(text)]
        assert found == expected
    else:
        assert specials.regex is None and expected == []


def test_bad_tokens_are_named():
    with pytest.raises(TypeError, match="single string"):
        SpecialTokens("<|endoftext|>")
    with pytest.raises(TypeError, match="b'x' is not a str"):
        SpecialTokens(["a", b"x"])
    with pytest.raises(ValueError, match="empty"):
        SpecialTokens(["a", ""])
    with pytest.raises(ValueError, match="duplicate special token 'a'"):
        SpecialTokens(["a", "b", "a"])
    with pytest.raises(ValueError, match=r"special token '<\\ud800\|>' holds a lone surrogate at index 1"):
        SpecialTokens(["a", "<\ud800|>"])
    with pytest.raises(ValueError, match="lone surrogate"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], ["\udfff"])
    with pytest.raises(ValueError, match="2 special tokens but 1 ids"):
        SpecialTokens(["a", "b"], [5])


def test_a_value_is_passed_on_not_rebuilt():
    specials = SpecialTokens(["<|a|>", "<|b|>"], [7, 8])
    assert SpecialTokens.of(specials) is specials
    assert SpecialTokens.of(None) == SpecialTokens() and not SpecialTokens.of(None)
    copy = pickle.loads(pickle.dumps(specials))
    assert copy == specials and copy.utf8_ids == specials.utf8_ids and copy is not specials
    assert specials != SpecialTokens(["<|a|>", "<|b|>"])          # the same tokens without ids
    kept = specials.restricted_to({"<|b|>", "<|c|>"})
    assert kept.tokens == ("<|b|>",) and kept.ids == {"<|b|>": 8}


def test_a_tokenizer_and_its_views_hold_one_value_each():
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|a|>", "<|a|>b"])
    assert tok._specials == SpecialTokens(["<|a|>", "<|a|>b"], [256, 257])
    view = tok.restricted_to(frozenset(["<|a|>"]))
    assert view._specials == SpecialTokens(["<|a|>"], [256])
    assert view.encode("<|a|>b") == [256, 98] and tok.encode("<|a|>b") == [257]


def test_a_tokenizers_special_token_set_is_read_only():
    """special_token_set is the tokenizer's own value: tok.special_token_set.ids["<y>"] = 5 changed what
    tok.special_tokens said (a plain dict). Its mappings are read-only views and its attributes cannot be set."""
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<y>", "<y>z", "<w>"])
    specials = tok.special_token_set
    before = tok.special_tokens
    with pytest.raises(TypeError):
        specials.ids["<y>"] = 5
    with pytest.raises(TypeError):
        specials.id_of_utf8[b"<y>"] = 5
    with pytest.raises(TypeError):
        specials.shared[256] = None
    for name in ["ids", "tokens", "utf8", "utf8_ids", "id_of_utf8", "lstrip", "regex"]:
        with pytest.raises(AttributeError, match="read-only"):
            setattr(specials, name, None)
        with pytest.raises(AttributeError, match="read-only"):
            delattr(specials, name)
    assert tok.special_tokens == before == {"<y>": 256, "<y>z": 257, "<w>": 258}
    tok.special_tokens["<y>"] = 5           # a copy of its own, a dict
    assert tok.special_tokens == before and type(tok.special_tokens) is dict
    # everything still works: encoding, the views, copies, equality
    assert tok.encode("a<y>z<y><w>", allowed_special="all") == [97, 257, 256, 258]
    assert tok.restricted_to(frozenset(["<y>"])).encode("<y>z<w>") == [256, 122, 60, 119, 62]
    assert specials.ids == {"<y>": 256, "<y>z": 257, "<w>": 258} and dict(specials.id_of_utf8)[b"<y>z"] == 257
    copy = pickle.loads(pickle.dumps(specials))
    assert copy == specials and copy.ids == specials.ids and copy.regex.findall("<y>z") == ["<y>z"]
    assert pickle.loads(pickle.dumps(tok)).special_tokens == before
    shared = SpecialTokens(["<|a|>", "<|b|>"], [7, 7])
    assert dict(shared.shared) == {7: (("<|a|>", "<|b|>"), "<|a|>")}
    assert shared.restricted_to({"<|b|>"}).shared[7].holder == "<|a|>"
    assert SpecialTokens(["<|a|>"]).ids is None and not SpecialTokens(["<|a|>"]).id_of_utf8


def test_special_tokens_given_as_a_set_get_the_same_ids_in_every_process(tmp_path):
    """A set's order follows the process's string hashes: the ids of the special tokens a tokenizer adds and
    training gives changed from run to run (found by the encoding review, PYTHONHASHSEED 1 and 3)."""
    import subprocess
    import sys

    code = ("from bpe_fast import Tokenizer, train_bpe\n"
            "tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], {'<|c|>', '<|a|>', '<|b|>', '<|d|>'})\n"
            "vocab, _ = train_bpe(iter(['ab ab']), 262, {'<|c|>', '<|a|>', '<|b|>', '<|d|>'})\n"
            "print(tok.special_tokens, [vocab[i] for i in range(256, 260)])\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                           env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin"}, check=True).stdout
            for seed in (1, 2, 3, 4)}
    assert outs == {"{'<|a|>': 256, '<|b|>': 257, '<|c|>': 258, '<|d|>': 259} "
                    "[b'<|a|>', b'<|b|>', b'<|c|>', b'<|d|>']\n"}


@SOME
@given(st.lists(st.text(alphabet, min_size=1, max_size=5), max_size=20, unique=True), texts)
def test_check_disallowed_finds_the_leftmost_longest_of_few_or_many(toks, text):
    # up to 8 tokens are searched one by one, more by the native trie in the text's UTF-8 (o200k_harmony's 1,091
    # took 0.2 s a MB one by one, and a regex of them 0.5 s a MB of text full of "<|"): either way, an error
    # exactly when a token is in the text, naming the leftmost, the longest there
    from bpe_fast.specials import check_disallowed

    expected = leftmost_longest(text.encode(), [t.encode() for t in toks])
    if not expected:
        check_disallowed(text, frozenset(toks))
        return
    start, end = expected[0]
    with pytest.raises(ValueError) as raised:
        check_disallowed(text, frozenset(toks))
    assert str(raised.value).startswith(f"Encountered text corresponding to disallowed special token "
                                        f"{text.encode()[start:end].decode()!r}.")


def test_check_disallowed_of_many_tokens_in_text_full_of_their_start():
    # o200k_harmony's 1,091 disallowed tokens all start with "<|": Haskell's "<|>" made the regex of them try
    # each at every "<|" (1 MB in 0.5 s, as tiktoken); the trie walks each "<|" as far as a token goes. Also a
    # token with a lone surrogate (no UTF-8): searched in the str, as tiktoken does
    from bpe_fast.specials import check_disallowed

    many = frozenset(f"<|reserved_{i}|>" for i in range(1000)) | {"<|>x", "<|>xy"}
    check_disallowed("a <|> b <|  <|reserved_1000|> <|reserved_99", many)
    with pytest.raises(ValueError, match=r"disallowed special token '<\|>xy'"):
        check_disallowed("a <|> b <|>xy <|reserved_5|>", many)          # the longest at the leftmost
    with pytest.raises(ValueError, match=r"disallowed special token '<\|reserved_17\|>'"):
        check_disallowed("\ud800 <|reserved_17|>", many)
    odd = frozenset(f"<|t{i}|>" for i in range(10)) | {"<|\udc80|>"}
    with pytest.raises(ValueError, match=r"disallowed special token '<\|\\udc80\|>'"):
        check_disallowed("x <|\udc80|>", odd)
    check_disallowed("x <|\udc81|>", odd)
