"""bpe_fast.get_encoding / encoding_for_model: tiktoken's named encodings built from ranks found on the machine.

The tables are compared with tiktoken's own (tiktoken_ext.openai_public, its loaders replaced so that nothing
is downloaded; tiktoken.model), the ids with tiktoken's Encoding built offline from the same ranks."""
import gzip
import hashlib
import importlib.util
import os
import shutil
import threading

import pytest

import bpe_fast
from bpe_fast import registry
from corpora import FIXTURES
from openai_ranks import ranks_path, tiktoken_encoding

TEXT = ("Hello world! It's 2026: naïve café, 12345 numbers, 東京 and Ελληνικά.\n\n  def f(x):\n\treturn x  \n"
        "<|endoftext|> don't STOP'LL")


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No encoding built by another test; no folder, tiktoken cache off, bpe-openai as installed."""
    monkeypatch.setattr(registry, "ENCODINGS", {})
    monkeypatch.setattr(registry, "ENCODING_CONSTRUCTORS", None)
    monkeypatch.delenv(registry.ENV_FOLDERS, raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")


def without_bpe_openai(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(registry.importlib.util, "find_spec",
                        lambda name, *a: None if name == "bpe_openai" else real(name, *a))


def tiktoken_constants():
    """{name: (pat_str, special_tokens, explicit_n_vocab, {(url, sha256)})} from tiktoken_ext.openai_public, its
    loaders replaced by ones that record what they would download."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    seen = []

    def load_tiktoken_bpe(url, expected_hash=None):
        seen.append((url, expected_hash))
        return {}

    def data_gym(vocab_bpe_file, encoder_json_file, vocab_bpe_hash=None, encoder_json_hash=None):
        seen.append((encoder_json_file, encoder_json_hash))       # its ids are the ranks; vocab.bpe only checks
        return {}

    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe)
        patch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", data_gym)
        for name, make in openai_public.ENCODING_CONSTRUCTORS.items():
            seen.clear()
            spec = make()
            out[name] = (spec["pat_str"], spec["special_tokens"], spec.get("explicit_n_vocab"), set(seen))
    return out


def test_every_tiktoken_encoding_is_known_with_its_pattern_specials_and_files():
    constants = tiktoken_constants()
    assert set(constants) == set(registry.NAMED)
    for name, (pat_str, specials, n_vocab, files) in constants.items():
        named = registry.NAMED[name]
        assert (named.pat_str, named.special_tokens, named.explicit_n_vocab) == (pat_str, specials, n_vocab), name
        assert files <= {(f.url, f.sha256) for f in named.files}, name


def test_o200k_harmony_with_its_two_special_tokens_of_one_id():
    # gpt-oss's encoding: <|endofprompt|> and <|reserved_200018|> share 200018; both encode to it, as in tiktoken,
    # and it decodes to the first (tiktoken's decoder gives either, by its hash map's order)
    ranks_path("o200k_base")
    pat_str, specials, _, _ = tiktoken_constants()["o200k_harmony"]
    assert [name for name, i in specials.items() if i == 200018] == ["<|endofprompt|>", "<|reserved_200018|>"]
    tiktoken = pytest.importorskip("tiktoken")
    from openai_ranks import load_ranks

    expected = tiktoken.Encoding("o200k_harmony", pat_str=pat_str, mergeable_ranks=load_ranks("o200k_base"),
                                 special_tokens=specials)
    enc = bpe_fast.get_encoding("o200k_harmony")
    text = "".join(f"{name} x{k} " for k, name in enumerate(specials)) + TEXT
    assert enc.encode(text, allowed_special="all") == expected.encode(text, allowed_special="all")
    for name in ["<|reserved_200018|>", "<|endofprompt|>", "<|call|>"]:
        assert enc.encode_single_token(name) == expected.encode_single_token(name)
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode(f"a {name}")
    assert enc.special_tokens_set == expected.special_tokens_set
    assert (enc.n_vocab, enc.max_token_value) == (expected.n_vocab, expected.max_token_value) == (201088, 201087)
    assert enc.decode_single_token_bytes(200018) == b"<|endofprompt|>"
    assert expected.decode_single_token_bytes(200018) in (b"<|endofprompt|>", b"<|reserved_200018|>")
    ids = [i for i in expected.encode(text, allowed_special="all") if i != 200018]
    assert enc.decode(ids) == expected.decode(ids)


def test_special_tokens_of_one_id_survive_pickling_and_are_refused_by_files(tmp_path):
    import pickle

    ranks_path("o200k_base")
    tok = bpe_fast.get_encoding("o200k_harmony").tokenizer
    again = pickle.loads(pickle.dumps(tok))
    assert again.special_tokens == tok.special_tokens and again.special_tokens["<|reserved_200018|>"] == 200018
    assert again.encode("<|reserved_200018|><|endofprompt|>") == [200018, 200018]
    for write in [lambda: tok.save(tmp_path / "t"), lambda: tok.export_hf(tmp_path / "t.json")]:
        with pytest.raises(ValueError, match=r"'<\|endofprompt\|>' and '<\|reserved_200018\|>' share the id 200018"):
            write()
    assert list(tmp_path.iterdir()) == []


def test_cli_shows_each_special_token_of_one_id_as_the_text_holds_it(capsys):
    from bpe_fast.cli import main

    ranks_path("o200k_base")
    text = "a <|reserved_200018|> b <|endofprompt|>"
    assert main(["show", "-t", "o200k_harmony", "--plain", "--ids", text]) == 0
    out, err = capsys.readouterr()
    assert out == "[a|64][ |220][<|reserved_200018|>|200018][ b|287][ |220][<|endofprompt|>|200018]\n"
    assert f"6 tokens, {len(text)} bytes" in err


def test_model_names_map_as_tiktoken_maps_them():
    model = pytest.importorskip("tiktoken.model")
    names = [*model.MODEL_TO_ENCODING, *(prefix + "2026-x" for prefix in model.MODEL_PREFIX_TO_ENCODING),
             *model.MODEL_PREFIX_TO_ENCODING, "ft:gpt-4o-mini:org", "gpt-4o", "gpt-4-turbo", "llama", "", "gpt",
             "o1", "o1-preview", "gpt-oss-20b", "text-embedding-3-small-v2"]
    for name in names:
        try:
            expected = model.encoding_name_for_model(name)
        except KeyError:
            with pytest.raises(KeyError):
                bpe_fast.encoding_name_for_model(name)
        else:
            assert bpe_fast.encoding_name_for_model(name) == expected, name


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_from_bpe_openai_the_ids_are_tiktokens(name):
    ranks_path(name)            # skips without bpe-openai
    enc = bpe_fast.get_encoding(name)
    expected = tiktoken_encoding(name)
    assert enc.name == name
    assert enc.encode(TEXT, allowed_special="all") == expected.encode(TEXT, allowed_special="all")
    assert enc.encode_ordinary(TEXT) == expected.encode_ordinary(TEXT)
    assert enc.n_vocab == expected.n_vocab and enc.max_token_value == expected.max_token_value
    assert enc._special_tokens == expected._special_tokens
    assert bpe_fast.get_encoding(name) is enc       # built once
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(TEXT)


def test_encoding_for_model():
    ranks_path("o200k_base")
    assert bpe_fast.encoding_for_model("gpt-4o-mini") is bpe_fast.get_encoding("o200k_base")
    with pytest.raises(KeyError, match="llama-3"):
        bpe_fast.encoding_for_model("llama-3")


def published_copy(name, folder, file_name):
    """The published `name`.tiktoken (uncompressed) written to folder/file_name; its path."""
    with gzip.open(ranks_path(name)) as f:
        data = f.read()
    path = os.path.join(folder, file_name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_read_from_tiktokens_cache(monkeypatch, tmp_path):
    url = registry.NAMED["cl100k_base"].files[0].url
    published_copy("cl100k_base", tmp_path, hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    without_bpe_openai(monkeypatch)
    assert bpe_fast.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    tiktoken = pytest.importorskip("tiktoken")
    # tiktoken finds the same file there, offline (it would download only when it is missing or wrong)
    assert tiktoken.get_encoding("cl100k_base").encode(TEXT, allowed_special="all") == \
        bpe_fast.get_encoding("cl100k_base").encode(TEXT, allowed_special="all")


def test_the_default_cache_folder_is_tiktokens(monkeypatch, tmp_path):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert registry._tiktoken_cache() == str(tmp_path / "gym")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setattr(registry.tempfile, "gettempdir", lambda: str(tmp_path))
    assert registry._tiktoken_cache() == str(tmp_path / "data-gym-cache")


@pytest.mark.parametrize("file_name", ["o200k_base.tiktoken", "o200k_base.tiktoken.gz"])
def test_read_from_a_named_folder(monkeypatch, tmp_path, file_name):
    folder = tmp_path / "mine"
    folder.mkdir()
    if file_name.endswith(".gz"):
        shutil.copy(ranks_path("o200k_base"), folder / file_name)
    else:
        published_copy("o200k_base", folder, file_name)
    monkeypatch.setenv(registry.ENV_FOLDERS, os.pathsep.join([str(tmp_path / "missing"), str(folder)]))
    without_bpe_openai(monkeypatch)
    assert bpe_fast.get_encoding("o200k_base").encode(TEXT, allowed_special="all") == \
        tiktoken_encoding("o200k_base").encode(TEXT, allowed_special="all")


def test_gpt2_from_its_encoder_json_as_tiktoken_reads_it(monkeypatch, tmp_path):
    if not (FIXTURES / "gpt2_vocab.json").exists():
        pytest.skip("tests/fixtures/gpt2_vocab.json is missing")
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    shutil.copy(FIXTURES / "gpt2_vocab.json", tmp_path / "vocab.json")      # the published encoder.json's bytes
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    enc = bpe_fast.get_encoding("gpt2")
    # tiktoken's reader of the published files, their hashes checked: vocab.bpe is merges.txt with its header
    vocab_bpe = tmp_path / "vocab.bpe"
    vocab_bpe.write_bytes(b"#version: 0.2\n" + (FIXTURES / "gpt2_merges.txt").read_bytes())
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(FIXTURES / "gpt2_vocab.json"),
                                            vocab_bpe_hash="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
                                            encoder_json_hash=registry.NAMED["gpt2"].files[0].sha256)
    expected = tiktoken.Encoding("gpt2", pat_str=enc._pat_str, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)
    assert enc.encode(TEXT, allowed_special="all") == expected.encode(TEXT, allowed_special="all")
    assert enc._mergeable_ranks == ranks
    assert enc.n_vocab == 50257


def test_a_file_not_as_published_is_passed_over_and_named(monkeypatch, tmp_path):
    path = published_copy("cl100k_base", tmp_path, "cl100k_base.tiktoken")
    with open(path, "ab") as f:
        f.write(b"IQ== 100277\n")       # one more line: still a good .tiktoken file, not cl100k_base
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    enc = bpe_fast.get_encoding("cl100k_base")      # bpe-openai's copy instead
    assert enc.n_vocab == 100277
    monkeypatch.setattr(registry, "ENCODINGS", {})
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"Passed over .*cl100k_base\.tiktoken: its SHA-256 is"):
        bpe_fast.get_encoding("cl100k_base")


def test_a_broken_gzip_file_is_passed_over_and_named(monkeypatch, tmp_path):
    (tmp_path / "cl100k_base.tiktoken.gz").write_bytes(b"\x1f\x8b\x08\x00broken")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"Passed over .*cl100k_base\.tiktoken\.gz: .*cannot read") as info:
        bpe_fast.get_encoding("cl100k_base")
    assert str(info.value).count(str(tmp_path / "cl100k_base.tiktoken.gz")) == 1       # it was said twice


def test_a_broken_symbolic_link_is_passed_over_and_named(monkeypatch, tmp_path):
    # a link the user made to the ranks, pointing at nothing, was skipped without a word
    (tmp_path / "cl100k_base.tiktoken").symlink_to(tmp_path / "moved" / "cl100k_base.tiktoken")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"Passed over .*cl100k_base\.tiktoken: a symbolic link to "
                                                r".*moved.*, which does not exist"):
        bpe_fast.get_encoding("cl100k_base")


def test_nothing_found_names_every_place_and_downloads_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path / "mine"))
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError) as info:
        bpe_fast.get_encoding("p50k_edit")
    message = str(info.value)
    for part in [str(tmp_path / "mine"), str(tmp_path / "cache"), "bpe-openai's data (not installed)",
                 "p50k_base.tiktoken", "downloads nothing", registry.ENV_FOLDERS]:
        assert part in message
    assert "p50k_edit" not in registry.ENCODINGS


def test_names_it_does_not_know():
    with pytest.raises(ValueError, match="Unknown encoding 'cl100k'"):
        bpe_fast.get_encoding("cl100k")
    # tiktoken.get_encoding(None) raises ValueError ("Expected a string in get_encoding"): the same type here
    for not_a_str in (None, 1, b"cl100k_base"):
        with pytest.raises(ValueError, match="must be a str"):
            bpe_fast.get_encoding(not_a_str)
    assert bpe_fast.list_encoding_names() == list(registry.NAMED)


def test_threads_asking_at_once_share_one_encoding():
    ranks_path("cl100k_base")
    got = []
    threads = [threading.Thread(target=lambda: got.append(bpe_fast.get_encoding("cl100k_base"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(enc is got[0] for enc in got)


def test_pickled_by_name_as_tiktoken_does():
    import pickle

    ranks_path("cl100k_base")
    enc = bpe_fast.get_encoding("cl100k_base")
    data = pickle.dumps(enc)
    assert len(data) < 200         # the name, not 100k ranks
    assert pickle.loads(data) is enc        # this process has it
    registry.ENCODINGS.clear()                 # another process: built there from its name
    again = pickle.loads(data)
    assert again is not enc and isinstance(again, bpe_fast.Encoding) and again.name == "cl100k_base"
    assert again.encode(TEXT, allowed_special="all") == enc.encode(TEXT, allowed_special="all")
    # one made by hand is pickled by value (its name is not a promise of its ranks)
    mine = bpe_fast.Encoding("cl100k_base", pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks,
                             special_tokens={})
    assert len(pickle.dumps(mine)) > 100_000


def test_cli_takes_an_encodings_name(tmp_path, capsys):
    from bpe_fast.cli import main
    import numpy as np

    ranks_path("o200k_base")
    src = tmp_path / "in.txt"
    src.write_text(TEXT * 3, encoding="utf-8")
    out = tmp_path / "ids.npy"
    assert main(["encode", "-t", "o200k_base", str(src), "-o", str(out), "--dtype", "uint32"]) == 0
    assert np.load(out).tolist() == tiktoken_encoding("o200k_base").encode(TEXT * 3, allowed_special="all")
    assert main(["encode", "-t", "o200k", str(src), "-o", str(tmp_path / "x.npy")]) == 1
    assert "no such tokenizer directory (nor one of tiktoken's encodings: gpt2, " in capsys.readouterr().err
    # a tokenizer.json that is not there is a file, not a folder (review helper-141)
    assert main(["encode", "-t", str(tmp_path / "missing.json"), str(src), "-o", str(tmp_path / "x.npy")]) == 1
    assert f"-t {tmp_path / 'missing.json'}: no such file (nor one of tiktoken's encodings: gpt2, " \
        in capsys.readouterr().err


def test_cli_names_where_it_looked(monkeypatch, tmp_path, capsys):
    from bpe_fast.cli import main

    without_bpe_openai(monkeypatch)
    src = tmp_path / "in.txt"
    src.write_text("hello", encoding="utf-8")
    assert main(["encode", "-t", "cl100k_base", str(src), "-o", str(tmp_path / "ids.npy")]) == 1
    err = capsys.readouterr().err
    assert "the ranks of cl100k_base are not on this machine" in err and "bpe-openai's data (not installed)" in err
    assert list(tmp_path.iterdir()) == [src]


def test_an_empty_data_gym_cache_dir_turns_the_cache_off_as_in_tiktoken(monkeypatch, tmp_path):
    # tiktoken.load.read_file_cached: cache_dir == "" (from TIKTOKEN_CACHE_DIR or DATA_GYM_CACHE_DIR) disables it
    url = registry.NAMED["cl100k_base"].files[0].url
    published_copy("cl100k_base", tmp_path, hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.chdir(tmp_path)         # "" joined to the file's name is a path in the current folder
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", "")
    without_bpe_openai(monkeypatch)
    assert registry._tiktoken_cache() is None
    with pytest.raises(FileNotFoundError, match=r"not tiktoken's cache \(DATA_GYM_CACHE_DIR is empty\)"):
        bpe_fast.get_encoding("cl100k_base")


@pytest.mark.parametrize("value", ["", os.pathsep, os.pathsep * 2])
def test_a_folder_list_of_empty_entries_is_named_where_it_looked(monkeypatch, value):
    monkeypatch.setenv(registry.ENV_FOLDERS, value)
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError) as info:
        bpe_fast.get_encoding("cl100k_base")
    assert f"{registry.ENV_FOLDERS}'s folders (it names none)" in str(info.value)


def test_one_already_built_is_returned_while_another_is_being_built(monkeypatch):
    # tiktoken.get_encoding returns a built encoding without its lock: a first build elsewhere does not hold it up
    building, release = threading.Event(), threading.Event()

    real = registry._arguments

    def slow_build(name, named):
        building.set()
        release.wait(10)
        return real(name, named)

    built = object()
    registry.ENCODINGS["cl100k_base"] = built
    monkeypatch.setattr(registry, "_arguments", slow_build)
    slow = threading.Thread(target=bpe_fast.get_encoding, args=("o200k_base",))
    slow.start()
    try:
        assert building.wait(10)
        got = []
        quick = threading.Thread(target=lambda: got.append(bpe_fast.get_encoding("cl100k_base")))
        quick.start()
        quick.join(2)
        assert got == [built]
    finally:
        release.set()
        slow.join()


def test_gpt2s_encoder_json_is_built_from_the_bytes_checked(monkeypatch, tmp_path):
    # the file is read once: replaced after its SHA-256 was checked, the checked bytes are the ones used
    if not (FIXTURES / "gpt2_vocab.json").exists():
        pytest.skip("tests/fixtures/gpt2_vocab.json is missing")
    shutil.copy(FIXTURES / "gpt2_vocab.json", tmp_path / "encoder.json")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    real = registry.read_tiktoken_bytes

    def read_then_replaced(path):
        data = real(path)
        with open(path, "w") as f:
            f.write('{"!": 0, "\\"": 1}')       # another vocabulary, written after the check
        return data

    monkeypatch.setattr(registry, "read_tiktoken_bytes", read_then_replaced)
    enc = bpe_fast.get_encoding("gpt2")
    assert enc.n_vocab == 50257 and enc.encode("hello world") == [31373, 995]


def r50k_file(folder):
    """r50k_base.tiktoken rebuilt from GPT-2's encoder.json (tests/fixtures/gpt2_vocab.json: the published file's
    bytes): its ids are the ranks, <|endoftext|> aside, one "base64 rank" line each in rank order."""
    import base64
    import json

    from corpora import gpt2_decode

    if not (FIXTURES / "gpt2_vocab.json").exists():
        pytest.skip("tests/fixtures/gpt2_vocab.json is missing")
    encoder = json.loads((FIXTURES / "gpt2_vocab.json").read_text(encoding="utf-8"))
    ranks = sorted((i, gpt2_decode(token)) for token, i in encoder.items() if token != "<|endoftext|>")
    path = folder / "r50k_base.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(token) + b" %d\n" % i for i, token in ranks))
    return path


def test_r50k_base_and_gpt2_from_the_published_r50k_file(monkeypatch, tmp_path):
    path = r50k_file(tmp_path)
    # rebuilt byte for byte: the SHA-256 OpenAI published for r50k_base.tiktoken
    assert hashlib.sha256(path.read_bytes()).hexdigest() == registry.NAMED["r50k_base"].files[0].sha256
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    for name in ["r50k_base", "gpt2"]:
        enc = bpe_fast.get_encoding(name)
        expected = tiktoken.Encoding(name, pat_str=registry.NAMED[name].pat_str,
                                     mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={"<|endoftext|>": 50256},
                                     explicit_n_vocab=50257)
        assert enc.encode(TEXT, allowed_special="all") == expected.encode(TEXT, allowed_special="all"), name
        assert enc.n_vocab == 50257


def test_places_are_tried_in_order(monkeypatch, tmp_path):
    # a named folder before tiktoken's cache before bpe-openai's data: the first good file is the one read
    folder, cache = tmp_path / "mine", tmp_path / "cache"
    folder.mkdir()
    cache.mkdir()
    url = registry.NAMED["cl100k_base"].files[0].url
    published_copy("cl100k_base", cache, hashlib.sha1(url.encode()).hexdigest())
    published_copy("cl100k_base", folder, "cl100k_base.tiktoken")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setenv(registry.ENV_FOLDERS, str(folder))
    read = []
    real = registry.read_tiktoken_bytes

    def spy(path):
        data = real(path)
        read.append(path)           # the files read (a place without the file raises above)
        return data

    monkeypatch.setattr(registry, "read_tiktoken_bytes", spy)
    bpe_fast.get_encoding("cl100k_base")
    assert read == [str(folder / "cl100k_base.tiktoken")]
    monkeypatch.setattr(registry, "ENCODINGS", {})
    monkeypatch.delenv(registry.ENV_FOLDERS)
    read.clear()
    bpe_fast.get_encoding("cl100k_base")
    assert read == [str(cache / hashlib.sha1(url.encode()).hexdigest())]
    monkeypatch.setattr(registry, "ENCODINGS", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    read.clear()
    bpe_fast.get_encoding("cl100k_base")
    assert len(read) == 1 and read[0] == ranks_path("cl100k_base")


def test_an_encodings_special_tokens_are_its_own():
    ranks_path("o200k_base")
    enc = bpe_fast.get_encoding("o200k_base")
    enc._special_tokens["<|mine|>"] = 1
    assert "<|mine|>" not in registry.NAMED["o200k_base"].special_tokens


def test_a_named_pipe_is_passed_over_not_read(monkeypatch, tmp_path):
    # open() of a FIFO blocks until a writer comes: get_encoding would hang
    os.mkfifo(tmp_path / "cl100k_base.tiktoken")
    monkeypatch.setenv(registry.ENV_FOLDERS, str(tmp_path))
    without_bpe_openai(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"Passed over .*cl100k_base\.tiktoken: not a regular file"):
        bpe_fast.get_encoding("cl100k_base")


def test_tiktokens_module_functions_are_all_here():
    # code written for tiktoken's module (`import tiktoken`) runs with `import bpe_fast as tiktoken`: every public
    # name of tiktoken's top level is bpe_fast's too, and Encoding has every public method
    tiktoken = pytest.importorskip("tiktoken")
    import types

    names = {n for n in dir(tiktoken) if not n.startswith("_")
             and not isinstance(getattr(tiktoken, n), types.ModuleType)}      # not its submodules (core, load...)
    assert names <= set(dir(bpe_fast)), names - set(dir(bpe_fast))
    methods = {n for n in dir(tiktoken.Encoding) if not n.startswith("_")} | {"_encode_single_piece"}
    assert methods <= set(dir(bpe_fast.Encoding)), methods - set(dir(bpe_fast.Encoding))
    ranks_path("cl100k_base")
    import bpe_fast as tiktoken_alike

    enc = tiktoken_alike.encoding_for_model("gpt-4")
    assert enc.decode(enc.encode("hello world")) == "hello world" and enc.name == "cl100k_base"


def test_tiktokens_submodules_names_are_all_here(tmp_path):
    # code that imports from tiktoken's submodules (`from tiktoken.core import Encoding`, `from tiktoken.model
    # import MODEL_TO_ENCODING`, `from tiktoken.load import read_file`) or reaches them by attribute after
    # `import tiktoken` runs with bpe_fast in tiktoken's place: each of their functions, classes and model tables
    tiktoken = pytest.importorskip("tiktoken")
    import importlib
    import inspect
    import subprocess
    import sys

    for sub in ("core", "load", "model", "registry"):
        theirs = importlib.import_module(f"tiktoken.{sub}")
        ours = importlib.import_module(f"bpe_fast.{sub}")
        names = {n for n, v in vars(theirs).items() if not n.startswith("_") and (
            (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__.startswith("tiktoken")
            or n.startswith("MODEL_"))}
        assert names <= set(dir(ours)), (sub, names - set(dir(ours)))
    from bpe_fast import core, model
    assert core.Encoding is bpe_fast.Encoding and model.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING
    assert model.MODEL_PREFIX_TO_ENCODING == tiktoken.model.MODEL_PREFIX_TO_ENCODING
    with pytest.raises(ValueError) as ours_error:
        core.raise_disallowed_special_token("<|eot|>")
    with pytest.raises(ValueError) as theirs_error:
        tiktoken.core.raise_disallowed_special_token("<|eot|>")
    assert str(ours_error.value) == str(theirs_error.value)
    # by attribute in a fresh interpreter, where nothing imported them first
    code = ("import bpe_fast as t; print(t.model.encoding_name_for_model('gpt-4o'), t.core.Encoding.__name__, "
            "t.load.read_file.__name__, t.registry.list_encoding_names()[0], 'model' in dir(t))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout.split()       # (not the repository: its bpe_fast/ may be uncompiled)
    assert out == ["o200k_base", "Encoding", "read_file", "gpt2", "True"]


def test_load_read_file_reads_a_local_file_and_downloads_nothing(tmp_path, monkeypatch):
    from bpe_fast.load import read_file

    (tmp_path / "f.bin").write_bytes(b"\x00abc")
    assert read_file(str(tmp_path / "f.bin")) == b"\x00abc"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="downloads nothing"):
        read_file("https://example.invalid/x.tiktoken")


# tiktoken.registry's tables: code written for tiktoken registers, clears and constructs encodings through them
# (to work offline, or to add its own); the same code is run on tiktoken's module and on bpe_fast's

def _tiny_arguments(name):
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257, b" ab": 258}
    return {"name": name, "pat_str": r" ?\w+|\s+", "mergeable_ranks": ranks, "special_tokens": {"<|eot|>": 259}}


@pytest.fixture
def tiktoken_registry(monkeypatch):
    """tiktoken.registry, its tables emptied for the test."""
    tiktoken = pytest.importorskip("tiktoken")
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setattr(tiktoken.registry, "ENCODING_CONSTRUCTORS", None)
    return tiktoken.registry


def test_an_encoding_put_in_encodings_is_what_get_encoding_returns(tiktoken_registry):
    for module in (tiktoken_registry, registry):
        mine = module.Encoding(**_tiny_arguments("mine"))
        module.ENCODINGS["mine"] = mine
        assert module.get_encoding("mine") is mine
        module.ENCODINGS.clear()
        with pytest.raises(ValueError, match="Unknown encoding"):
            module.get_encoding("mine")


def test_clearing_encodings_builds_them_anew():
    ranks_path("cl100k_base")
    first = bpe_fast.get_encoding("cl100k_base")
    assert registry.ENCODINGS == {"cl100k_base": first}
    registry.ENCODINGS.clear()
    again = bpe_fast.get_encoding("cl100k_base")
    assert again is not first and again.encode(TEXT, allowed_special="all") == first.encode(TEXT, allowed_special="all")


def test_a_constructor_added_to_encoding_constructors_is_built_by_get_encoding(tiktoken_registry):
    got = {}
    for module in (tiktoken_registry, registry):
        assert module.ENCODING_CONSTRUCTORS is None        # until found, as tiktoken's
        module._find_constructors()
        module.ENCODING_CONSTRUCTORS["mine"] = lambda: _tiny_arguments("mine")
        assert "mine" in module.list_encoding_names() and "cl100k_base" in module.list_encoding_names()
        enc = module.get_encoding("mine")
        assert module.ENCODINGS["mine"] is enc and module.get_encoding("mine") is enc
        got[module] = enc.encode("abc ab abd<|eot|>", allowed_special="all")
    assert got[registry] == got[tiktoken_registry] == [257, 258, 258, 100, 259]


def test_registered_encodings_are_pickled_by_name_others_by_value():
    import pickle

    mine = bpe_fast.Encoding(**_tiny_arguments("mine"))
    assert len(pickle.dumps(mine)) > 1000
    registry.ENCODINGS["mine"] = mine
    assert pickle.loads(pickle.dumps(mine)) is mine
    registry.ENCODINGS["mine"] = bpe_fast.Encoding(**_tiny_arguments("mine"))     # another under its name
    assert len(pickle.dumps(mine)) > 1000


PLUGIN = '''
def tiny():
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257, b" ab": 258}
    return {"name": "tiny_plugin", "pat_str": r" ?\\w+|\\s+", "mergeable_ranks": ranks, "special_tokens": {}}
ENCODING_CONSTRUCTORS = {"tiny_plugin": tiny}
'''


def run_with_plugins(tmp_path, plugins, code):
    """Run `code` in a fresh Python whose path has a tiktoken_ext folder with `plugins` ({module: source})."""
    import subprocess
    import sys

    folder = tmp_path / "plugins" / "tiktoken_ext"
    folder.mkdir(parents=True)
    for module, source in plugins.items():
        (folder / f"{module}.py").write_text(source)
    # (the folder added to the path Python has: sys.path here may hold a source tree whose extensions are not built)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path / "plugins"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


def test_tiktoken_ext_plugins_are_found_as_tiktoken_finds_them(tmp_path):
    pytest.importorskip("tiktoken")
    code = ("import sys, bpe_fast, tiktoken\n"
            "names = bpe_fast.list_encoding_names()\n"
            "assert 'tiny_plugin' in names and 'cl100k_base' in names, names\n"
            "assert 'tiktoken_ext.openai_public' not in sys.modules\n"     # its encodings would be downloaded
            "ours = bpe_fast.get_encoding('tiny_plugin').encode('abc ab abd')\n"
            "theirs = tiktoken.get_encoding('tiny_plugin').encode('abc ab abd')\n"
            "print(ours, theirs)\n")
    done = run_with_plugins(tmp_path, {"tiny": PLUGIN}, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("] [") == ["[257, 258, 258, 100", "257, 258, 258, 100]\n"]


@pytest.mark.parametrize("source, message", [
    ("X = 1\n", "tiktoken plugin tiktoken_ext.bad does not define ENCODING_CONSTRUCTORS"),
    (PLUGIN.replace('{"tiny_plugin": tiny}', '{"cl100k_base": tiny}'),
     "Duplicate encoding name cl100k_base in tiktoken plugin tiktoken_ext.bad"),
])
def test_a_plugin_that_is_not_one_is_refused_every_time(tmp_path, source, message):
    code = ("import bpe_fast\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        bpe_fast.get_encoding('cl100k_base')\n"
            "    except ValueError as exc:\n"
            "        print(exc)\n")
    done = run_with_plugins(tmp_path, {"bad": source}, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{message}\n" * 2
