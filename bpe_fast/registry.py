"""tiktoken's named encodings, offline: ``get_encoding("cl100k_base")`` and ``encoding_for_model("gpt-4o")`` as
tiktoken's, returning bpe_fast.Encoding, with nothing downloaded.

tiktoken downloads an encoding's ranks the first time it is asked for one and keeps them in a cache folder.
bpe_fast reads ranks already on this machine, first found first, each file checked against the SHA-256 that
OpenAI published for it (tiktoken checks the same): a file that does not match is passed over and named if
nothing else is found.

1. the folders named by the environment variable BPE_FAST_ENCODINGS (os.pathsep between folders), holding
   ``NAME.tiktoken`` or ``NAME.tiktoken.gz`` (for gpt2: ``r50k_base.tiktoken``, or GPT-2's ``encoder.json``,
   also under HF's name ``vocab.json``);
2. tiktoken's cache, where tiktoken left them: the folder of TIKTOKEN_CACHE_DIR, else DATA_GYM_CACHE_DIR, else
   ``data-gym-cache`` in the temporary folder (tiktoken's rule; the one of them set to "" turns it off);
3. the data of the ``bpe-openai`` package, when installed (cl100k_base and o200k_base).

An encoding is built once a process and shared, as tiktoken's are. gpt2 and r50k_base have the same ranks.

The module's tables are tiktoken.registry's, for code that patches them to work offline: ``ENCODINGS`` holds the
encodings built so far (one put there is what get_encoding returns for its name; clearing it builds them anew),
``ENCODING_CONSTRUCTORS`` (None until ``_find_constructors()`` fills it, as tiktoken's) maps each name to a
function returning Encoding's keyword arguments. It holds bpe_fast's encodings (offline, above) and those of the
``tiktoken_ext`` plugins installed beside tiktoken (their ENCODING_CONSTRUCTORS; tiktoken's own plugin,
``tiktoken_ext.openai_public``, aside: its encodings are the ones above, which it would download).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pkgutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from .encoding import Encoding
from .formats import FormatError, read_vocab
from .patterns import GPT4_PATTERN, O200K_PATTERN, R50K_PATTERN
from .procs import renewed_in_child
from .ranks import read_tiktoken, read_tiktoken_bytes

__all__ = ["get_encoding", "list_encoding_names", "encoding_name_for_model", "encoding_for_model"]

ENV_FOLDERS = "BPE_FAST_ENCODINGS"
_PUBLIC = "https://openaipublic.blob.core.windows.net/"


class RanksFile(NamedTuple):
    """One published file an encoding's ranks can be read from."""
    names: tuple[str, ...]      # its names in a folder (a ``.gz`` of a `.tiktoken` file is read too)
    url: str                    # where OpenAI publishes it: tiktoken's cache keys it by this
    sha256: str                 # of its (uncompressed) contents
    kind: str                   # "tiktoken" or "encoder.json" (GPT-2's vocabulary: its ids are the ranks)


class Named(NamedTuple):
    """An encoding tiktoken knows by name: tiktoken_ext.openai_public's constants."""
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None
    files: tuple[RanksFile, ...]    # any one of them gives the ranks


def _tiktoken_file(name: str, sha256: str) -> RanksFile:
    return RanksFile((f"{name}.tiktoken",), f"{_PUBLIC}encodings/{name}.tiktoken", sha256, "tiktoken")


_R50K = _tiktoken_file("r50k_base", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = _tiktoken_file("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_GPT2_ENCODER = RanksFile(("encoder.json", "vocab.json"), f"{_PUBLIC}gpt-2/encodings/main/encoder.json",
                          "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783", "encoder.json")
_ENDOFTEXT = "<|endoftext|>"
_FIM = {"<|fim_prefix|>": 0, "<|fim_middle|>": 1, "<|fim_suffix|>": 2}

NAMED: dict[str, Named] = {
    "gpt2": Named(R50K_PATTERN, {_ENDOFTEXT: 50256}, 50257, (_GPT2_ENCODER, _R50K)),
    "r50k_base": Named(R50K_PATTERN, {_ENDOFTEXT: 50256}, 50257, (_R50K, _GPT2_ENCODER)),
    "p50k_base": Named(R50K_PATTERN, {_ENDOFTEXT: 50256}, 50281, (_P50K,)),
    "p50k_edit": Named(R50K_PATTERN, {_ENDOFTEXT: 50256} | {k: 50281 + v for k, v in _FIM.items()}, None, (_P50K,)),
    "cl100k_base": Named(GPT4_PATTERN, {_ENDOFTEXT: 100257} | {k: 100258 + v for k, v in _FIM.items()}
                         | {"<|endofprompt|>": 100276}, None,
                         (_tiktoken_file("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),)),
    "o200k_base": Named(O200K_PATTERN, {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018}, None,
                        (_tiktoken_file("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),)),
}
# o200k_harmony (gpt-oss): o200k_base's ranks, its two special tokens, the harmony format's, and the rest of
# 199998..201087 reserved (<|reserved_N|>), in tiktoken_ext's order. <|reserved_200018|> shares 200018 with
# <|endofprompt|>: both encode to it, it decodes to <|endofprompt|> (tiktoken's decoder to either, by its hash map)
_HARMONY_NAMED = {"<|startoftext|>": 199998, _ENDOFTEXT: 199999, "<|reserved_200000|>": 200000,
                  "<|reserved_200001|>": 200001, "<|return|>": 200002, "<|constrain|>": 200003,
                  "<|reserved_200004|>": 200004, "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
                  "<|message|>": 200008, "<|reserved_200009|>": 200009, "<|reserved_200010|>": 200010,
                  "<|reserved_200011|>": 200011, "<|call|>": 200012}
NAMED["o200k_harmony"] = Named(
    O200K_PATTERN, {**NAMED["o200k_base"].special_tokens, **_HARMONY_NAMED}
    | {f"<|reserved_{i}|>": i for i in range(200013, 201088)}, None, NAMED["o200k_base"].files)

# model names, and prefixes of model names, to encodings: tiktoken.model's table (tests compare the two)
_O200K_MODELS = ("o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o")
_CL100K_MODELS = ("gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
                  "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large")
_P50K_MODELS = ("text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001", "code-cushman-002",
                "code-cushman-001", "davinci-codex", "cushman-codex")
_R50K_MODELS = ("text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci", "curie",
                "babbage", "ada", *(f"text-similarity-{m}-001" for m in ("davinci", "curie", "babbage", "ada")),
                *(f"text-search-{m}-doc-001" for m in ("davinci", "curie", "babbage", "ada")),
                "code-search-babbage-code-001", "code-search-ada-code-001")
MODEL_TO_ENCODING: dict[str, str] = (
    dict.fromkeys(_O200K_MODELS, "o200k_base") | dict.fromkeys(_CL100K_MODELS, "cl100k_base")
    | dict.fromkeys(_P50K_MODELS, "p50k_base") | dict.fromkeys(_R50K_MODELS, "r50k_base")
    | dict.fromkeys(("text-davinci-edit-001", "code-davinci-edit-001"), "p50k_edit")
    | {"gpt2": "gpt2", "gpt-2": "gpt2"})
# tried in this order, the first that starts the name wins
MODEL_PREFIX_TO_ENCODING: dict[str, str] = (
    dict.fromkeys(("o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-"), "o200k_base")
    | dict.fromkeys(("gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"), "cl100k_base") | {"gpt-oss-": "o200k_harmony"}
    | {"ft:gpt-4o": "o200k_base"}
    | dict.fromkeys(("ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"), "cl100k_base"))

# tiktoken.registry's tables (see the module's notes)
ENCODINGS: dict[str, Encoding] = {}
ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] | None = None
_OPENAI_PLUGIN = "tiktoken_ext.openai_public"     # tiktoken's own: NAMED's encodings, downloaded
_lock = threading.RLock()


renewed_in_child(globals(), "_lock", threading.RLock)   # (an encoding being built at a fork: built again if asked)


def _plugin_modules() -> list[str]:
    """The names of the tiktoken_ext plugins installed (tiktoken_ext is a namespace package), tiktoken's own aside."""
    try:
        spec = importlib.util.find_spec("tiktoken_ext")
    except ValueError:          # a tiktoken_ext module without a spec (made by hand)
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return []
    return [name for _, name, _ in pkgutil.iter_modules(list(spec.submodule_search_locations), "tiktoken_ext.")
            if name != _OPENAI_PLUGIN]


def _find_constructors() -> None:
    """Fill ENCODING_CONSTRUCTORS, once (as tiktoken's): NAMED's encodings, then each plugin's. A plugin without
    ENCODING_CONSTRUCTORS, or naming an encoding already known, is a ValueError (tiktoken's), and the table stays
    None so that the next call raises it again."""
    global ENCODING_CONSTRUCTORS
    with _lock:
        if ENCODING_CONSTRUCTORS is not None:
            return
        found: dict[str, Callable[[], dict[str, Any]]] = {name: _named_constructor(name) for name in NAMED}
        for module_name in _plugin_modules():
            module = importlib.import_module(module_name)
            constructors = getattr(module, "ENCODING_CONSTRUCTORS", None)
            if constructors is None:
                raise ValueError(f"tiktoken plugin {module_name} does not define ENCODING_CONSTRUCTORS")
            for name, constructor in constructors.items():
                if name in found:
                    raise ValueError(f"Duplicate encoding name {name} in tiktoken plugin {module_name}")
                found[name] = constructor
        ENCODING_CONSTRUCTORS = found


def _named_constructor(name: str) -> Callable[[], dict[str, Any]]:
    def construct() -> dict[str, Any]:
        return _arguments(name, NAMED[name])
    construct.__name__ = construct.__qualname__ = name      # tiktoken_ext.openai_public names them so
    return construct


def list_encoding_names() -> list[str]:
    """The names get_encoding knows (tiktoken's, and the installed tiktoken_ext plugins' encodings)."""
    with _lock:
        _find_constructors()
        assert ENCODING_CONSTRUCTORS is not None
        return list(ENCODING_CONSTRUCTORS)


def get_encoding(encoding_name: str) -> Encoding:
    """The Encoding tiktoken.get_encoding(encoding_name) gives (the same ids), from ranks already on this machine
    (see the module's notes), built once a process and kept in ENCODINGS. ValueError for a name it does not know,
    or one that is not a str (as tiktoken); FileNotFoundError naming every place looked in (and each file found
    there that is not the published one) when no ranks are found: bpe_fast downloads nothing.

    >>> get_encoding("cl100k_base").encode("hello world")       # doctest: +SKIP
    [15339, 1917]
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"encoding_name must be a str, got {type(encoding_name).__name__}")     # tiktoken's type
    enc = ENCODINGS.get(encoding_name)      # built: without the lock (another may be building), as tiktoken
    if enc is not None:
        return enc
    with _lock:
        enc = ENCODINGS.get(encoding_name)
        if enc is None:
            _find_constructors()
            assert ENCODING_CONSTRUCTORS is not None
            constructor = ENCODING_CONSTRUCTORS.get(encoding_name)
            if constructor is None:
                raise ValueError(f"Unknown encoding {encoding_name!r}: bpe_fast knows "
                                 f"{', '.join(ENCODING_CONSTRUCTORS)}")
            enc = ENCODINGS[encoding_name] = Encoding(**constructor())
        return enc


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding a model uses, as tiktoken.encoding_name_for_model: the model's own entry, else the
    first known prefix of its name; KeyError when neither is known."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(f"Could not automatically map {model_name!r} to a tokeniser: use bpe_fast.get_encoding with the "
                   f"encoding's name ({', '.join(NAMED)})")


def encoding_for_model(model_name: str) -> Encoding:
    """get_encoding(encoding_name_for_model(model_name))."""
    return get_encoding(encoding_name_for_model(model_name))


def _arguments(name: str, named: Named) -> dict[str, Any]:
    """Encoding's keyword arguments for the encoding `name`, its ranks read from the first good file found."""
    passed: list[str] = []      # files found and not used, and why
    looked: list[str] = []
    for path, ranks_file in _candidates(named, looked):
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):     # a named pipe would block the read for good
                passed.append(f"{path}: not a regular file")
                continue
            data = read_tiktoken_bytes(path)
        except FileNotFoundError:
            if os.path.islink(path):        # a link to nothing: said, as the user made it to be read
                passed.append(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist")
            continue
        except (OSError, FormatError) as exc:
            why = str(exc) if not isinstance(exc, OSError) or exc.strerror is None else exc.strerror
            passed.append(why if why.startswith(f"{path}:") else f"{path}: {why}")     # the path once
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != ranks_file.sha256:
            passed.append(f"{path}: its SHA-256 is {digest[:16]}..., not the published {ranks_file.url}'s "
                          f"{ranks_file.sha256[:16]}...")
            continue
        if ranks_file.kind == "tiktoken":
            ranks = read_tiktoken(path, data)
        else:       # GPT-2's encoder.json: its ids are the ranks, <|endoftext|> aside
            ranks = {token: i for i, token in read_vocab(path, data).items() if i not in named.special_tokens.values()}
        return {"name": name, "pat_str": named.pat_str, "mergeable_ranks": ranks,
                "special_tokens": dict(named.special_tokens),       # its own: the table here stays as it is
                "explicit_n_vocab": named.explicit_n_vocab}
    files = " or ".join(f"{ranks_file.names[0]} ({ranks_file.url})" for ranks_file in named.files)
    raise FileNotFoundError(
        f"the ranks of {name} are not on this machine, and bpe_fast downloads nothing. Looked in: "
        f"{'; '.join(looked)}." + "".join(f" Passed over {p}." for p in passed)
        + f" Put {files} in a folder named by {ENV_FOLDERS}, or pip install bpe-openai (cl100k_base and o200k_base),"
        f" or run tiktoken.get_encoding({name!r}) once where the network is reachable (its cache is read here).")


def _candidates(named: Named, looked: list[str]) -> Iterator[tuple[str, RanksFile]]:
    """(path, file) of every place named's ranks may be, in the order they are tried; appends each place's
    description to `looked` as it is reached."""
    folders = [folder for folder in os.environ.get(ENV_FOLDERS, "").split(os.pathsep) if folder]
    for folder in folders:
        looked.append(f"{folder} ({ENV_FOLDERS})")
        for ranks_file in named.files:
            for file_name in ranks_file.names:
                yield os.path.join(folder, file_name), ranks_file
                if ranks_file.kind == "tiktoken":
                    yield os.path.join(folder, file_name + ".gz"), ranks_file
    if not folders:
        looked.append(f"{ENV_FOLDERS}'s folders (it is not set)" if ENV_FOLDERS not in os.environ else
                      f"{ENV_FOLDERS}'s folders (it names none)")
    cache = _tiktoken_cache()
    if cache is None:
        empty = "TIKTOKEN_CACHE_DIR" if "TIKTOKEN_CACHE_DIR" in os.environ else "DATA_GYM_CACHE_DIR"
        looked.append(f"not tiktoken's cache ({empty} is empty)")
    else:
        looked.append(f"{cache} (tiktoken's cache)")
        for ranks_file in named.files:
            yield os.path.join(cache, hashlib.sha1(ranks_file.url.encode()).hexdigest()), ranks_file
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        looked.append("bpe-openai's data (not installed)")
        return
    data = os.path.join(list(spec.submodule_search_locations)[0], "data")
    looked.append(f"{data} (bpe-openai's data)")
    for ranks_file in named.files:
        if ranks_file.kind == "tiktoken":
            yield os.path.join(data, ranks_file.names[0] + ".gz"), ranks_file


def tiktoken_cache_file(url: str) -> str | None:
    """Where tiktoken's read_file_cached keeps what it read from `url` (its cache folder and the SHA-1 of the url),
    or None when the cache is off."""
    cache = _tiktoken_cache()
    return None if cache is None else os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())


def _tiktoken_cache() -> str | None:
    """tiktoken's cache folder, by tiktoken's rule; None when TIKTOKEN_CACHE_DIR="" (or, unset, DATA_GYM_CACHE_DIR="")
    turns the cache off."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"] or None
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")
