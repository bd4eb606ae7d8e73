"""A text as its tokens: the pieces and ids of Tokenizer.show, drawn for a terminal (ANSI colours), as plain text
(brackets) or as an HTML page (`bpe-fast show`).

A piece is a token's text: its bytes decoded as UTF-8, or, for a token holding only part of a character's UTF-8
(byte-level BPE splits rare characters), with the bytes that are not whole characters written as \\xNN escapes.
So the pieces join back to the text exactly when no character is split, and the tokens' bytes always do,
unless the pattern leaves some text in no pre-token (a custom one may: that text is in no token or piece).
"""
from __future__ import annotations

import html
import unicodedata
from collections.abc import Container
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["TokenView", "token_view", "split_positions", "render_ansi", "render_plain", "render_html",
           "display_token"]

# backgrounds of the terminal view (xterm-256 colours, light, with black text), taken in turn
_ANSI_BACKGROUNDS = (153, 186, 151, 217, 183)
_HTML_BACKGROUNDS = ("#cfe6fb", "#f5ecb0", "#cdebd3", "#f8d3d3", "#e2d5f3")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class TokenView(NamedTuple):
    """Tokenizer.show's result: `pieces, ids = tok.show(text)`."""
    pieces: list[str]
    ids: list[int]


def piece_of(token: bytes) -> str:
    """A token's text: its UTF-8, with the bytes that are not whole characters as \\xNN escapes.

    >>> piece_of(b" caf\\xc3\\xa9"), piece_of(b"\\xe4\\xb8")
    (' café', '\\\\xe4\\\\xb8')
    """
    return token.decode("utf-8", "backslashreplace")


def token_view(tokenizer: Tokenizer, text: str) -> TokenView:
    """The TokenView of `text`: its ids (tokenizer.encode's: special tokens matched) and each one's piece; a
    special token's is the text it matched, whose span Tokenizer.lengths_in measures (an id special tokens share,
    as o200k_harmony's <|endofprompt|> and <|reserved_200018|>, holds the first's bytes; the text may hold
    another)."""
    found, offsets = tokenizer.encode_with_offsets(text)
    ids = found.tolist()
    vocab, specials = tokenizer.vocab, tokenizer.special_tokens
    special = frozenset(specials.values())
    cache: dict[int, str] = {}
    pieces = []
    for k, i in enumerate(ids):
        if i in special:        # the special token the text holds there (of those with this id, the longest)
            pieces.append(_special_at(text, int(offsets[k]), [t for t, j in specials.items() if j == i]))
            continue
        piece = cache.get(i)
        if piece is None:
            piece = cache[i] = piece_of(vocab[i])
        pieces.append(piece)
    return TokenView(pieces, ids)


def _special_at(text: str, at: int, tokens: list[str]) -> str:
    """Of the special tokens `tokens` (of one id), the longest that `text` holds at character `at`, where the
    text may spell it with surrogates (a pair, or a lone one that is U+FFFD to the tokenizer, as to tiktoken)."""
    if len(tokens) == 1:
        return tokens[0]
    held = [t for t in tokens if text.startswith(t, at)]
    if not held:
        window = text[at:at + 2 * max(map(len, tokens))].encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        held = [t for t in tokens if window.startswith(t)]
    return max(held, key=len)


def split_positions(view: TokenView, tokenizer: Tokenizer) -> set[int]:
    """The set of positions k whose token holds part of a character (its piece has \\xNN escapes)."""
    vocab, specials = tokenizer.vocab, tokenizer.special_tokens     # a special token: whole characters
    return {k for k, (piece, i) in enumerate(zip(view.pieces, view.ids))
            if piece.encode("utf-8") != vocab[i] and specials.get(piece) != i}


# characters that reorder or break the text after them: bidirectional controls (an override such as U+202E
# shows every later piece reversed, "Trojan Source") and the line and paragraph separators
_LAYOUT_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
                             # and format characters that show nothing at all (a token of a zero-width space, a
                             # soft hyphen or a BOM was an empty piece; helper-145): not the joiners U+200C/U+200D,
                             # which shape the script or emoji around them
                             "\u00ad\u180e\u200b\u2060\u2061\u2062\u2063\u2064\u206a\u206b\u206c\u206d"
                             "\u206e\u206f\ufeff\ufff9\ufffa\ufffb")


def _control(ch: str) -> str:
    """A control character other than a newline, carriage return or tab as \\xNN (C1 controls, bidirectional
    controls, U+2028/U+2029 and invisible format characters: \\uNNNN, as display_token writes them); any other
    character as it is. Written raw,
    a terminal would run it (ESC starts an escape sequence, a backspace erases, U+202E reverses what follows) and
    a page would show nothing or the pieces out of order."""
    code = ord(ch)
    if (code < 0x20 and ch not in _ESCAPES) or code == 0x7F:
        return f"\\x{code:02x}"
    if 0x80 <= code <= 0x9F or ch in _LAYOUT_CONTROLS:
        return f"\\u{code:04x}"
    return ch


def _visible(piece: str) -> str:
    """A piece with newlines, carriage returns and tabs written as \\n, \\r, \\t (a line break follows \\n),
    other control characters as \\xNN (_control)."""
    out = []
    for ch in piece:
        escape = _ESCAPES.get(ch)
        out.append(_control(ch) if escape is None else escape)
    return "".join(out)


def _line_breaks(piece: str) -> str:
    return "\n" * piece.count("\n")


def render_plain(view: TokenView, *, ids: bool = False) -> str:
    """The view as plain text: each piece in brackets (with its id after a "|" when `ids`), newlines, carriage
    returns and tabs written as \\n, \\r, \\t; the text's line breaks are kept after the piece that holds them.

    >>> render_plain(TokenView(["Hello", " world", "\\n"], [15496, 995, 198]), ids=True)
    '[Hello|15496][ world|995][\\\\n|198]\\n'
    """
    out = []
    for piece, i in zip(view.pieces, view.ids):
        label = f"|{i}" if ids else ""
        out.append(f"[{_visible(piece)}{label}]{_line_breaks(piece)}")
    text = "".join(out)
    return text if text.endswith("\n") or not text else text + "\n"


def render_ansi(view: TokenView, *, ids: bool = False, split: Container[int] = frozenset(),
                special_ids: Container[int] = frozenset()) -> str:
    """The view for a terminal: pieces on backgrounds of alternating colours (a piece of a split character
    underlined, a special token bold), ids in grey after each piece when `ids`."""
    out = []
    for k, (piece, i) in enumerate(zip(view.pieces, view.ids)):
        style = f"\x1b[48;5;{_ANSI_BACKGROUNDS[k % len(_ANSI_BACKGROUNDS)]}m\x1b[38;5;16m"
        if k in split:
            style += "\x1b[4m"
        if i in special_ids:
            style += "\x1b[1m"
        label = f"\x1b[38;5;244m{i}\x1b[0m" if ids else ""
        out.append(f"{style}{_visible(piece)}\x1b[0m{label}{_line_breaks(piece)}")
    text = "".join(out)
    return text if text.endswith("\n") or not text else text + "\n"


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
.view {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap;
        line-height: 1.9; word-break: break-all; }}
.view span {{ border-radius: 2px; padding: 1px 0; }}
.view .split {{ outline: 1px dashed #a33; }}
.view .special {{ font-weight: bold; outline: 1px solid #555; }}
.view sub {{ color: #777; font-size: 0.65em; margin: 0 2px 0 1px; }}
.note {{ color: #555; }}
{colours}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="note">{summary}</p>
<div class="view">{body}</div>
</body>
</html>
"""


def render_html(view: TokenView, *, ids: bool = False, split: Container[int] = frozenset(),
                special_ids: Container[int] = frozenset(), title: str = "Tokens", summary: str = "") -> str:
    """The view as a self-contained HTML page (no script, no external resource): pieces on alternating
    backgrounds, each with its id in its tooltip (and after it when `ids`); a piece of a split character has
    a dashed outline, a special token a solid one; newlines show as \u21b5 before the line break."""
    colours = "\n".join(f".c{k} {{ background: {c}; }}" for k, c in enumerate(_HTML_BACKGROUNDS))
    spans = []
    for k, (piece, i) in enumerate(zip(view.pieces, view.ids)):
        classes = [f"c{k % len(_HTML_BACKGROUNDS)}"]
        if k in split:
            classes.append("split")
        if i in special_ids:
            classes.append("special")
        shown = html.escape("".join(map(_control, piece))).replace("\r", "\u240d").replace("\n", "\u21b5\n")
        label = f"<sub>{i}</sub>" if ids else ""
        spans.append(f'<span class="{" ".join(classes)}" title="id {i}">{shown}</span>{label}')
    return _PAGE.format(title=html.escape(title), summary=html.escape(summary), colours=colours,
                        body="".join(spans))


def display_token(token: bytes) -> str:
    """A token's bytes as a short, unambiguous label for tables: UTF-8 text with spaces as ␣, newlines and
    tabs as \\n, \\t, other whitespace and control or format characters (and ␣ itself) as \\xNN / \\uNNNN, a
    backslash as \\\\, and bytes that are not whole characters as \\xNN.

    >>> print(display_token(b" the\\n"), display_token(b"\\xe4\\xb8"), display_token(b"\\\\x\\xc2\\xa0"))
    ␣the\\n \\xe4\\xb8 \\\\x\\u00a0
    """
    out = []
    for ch in token.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if ch == " ":
            out.append("␣")
        elif ch == "␣":                            # the sign itself: escaped, so that a label means one token
            out.append("\\u2423")
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:            # a byte that is not part of a whole character
            out.append(f"\\x{code - 0xDC00:02x}")
        elif _control(ch) != ch:                    # C0 and C1 controls, DEL
            out.append(_control(ch))
        elif ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn"):
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)
