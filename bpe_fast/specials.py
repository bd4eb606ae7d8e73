"""Special tokens: validation and splitting text on them (longest match first)."""
import regex


def check_special_tokens(special_tokens):
    """Return special_tokens as a tuple of str, or raise ValueError/TypeError naming the bad one."""
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a list of str, not a single string")
    tokens = tuple(special_tokens)
    seen = set()
    for tok in tokens:
        if not isinstance(tok, str):
            raise TypeError(f"special token {tok!r} is not a str")
        if not tok:
            raise ValueError("special tokens must not be empty strings")
        if tok in seen:
            raise ValueError(f"duplicate special token {tok!r}")
        seen.add(tok)
    return tokens


def special_regex(special_tokens):
    """A compiled regex matching any special token, the longest first where one is a prefix of another."""
    if not special_tokens:
        return None
    ordered = sorted(special_tokens, key=lambda t: (-len(t), t))
    return regex.compile("|".join(regex.escape(t) for t in ordered))


def split_on_specials(text, special_regex):
    """Yield (piece, is_special) in order; empty text pieces are skipped."""
    if special_regex is None:
        if text:
            yield text, False
        return
    pos = 0
    for m in special_regex.finditer(text):
        if m.start() > pos:
            yield text[pos:m.start()], False
        yield m.group(), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False
