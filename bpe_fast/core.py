"""tiktoken.core's names, for code that imports them from there: `from bpe_fast.core import Encoding` where it
had `from tiktoken.core import Encoding`."""
from .encoding import Encoding
from .specials import disallowed_special_error

__all__ = ["Encoding", "raise_disallowed_special_token"]


def raise_disallowed_special_token(token: str) -> None:
    """Raise the ValueError encode raises for a disallowed special token found in the text, as tiktoken.core's."""
    raise disallowed_special_error(token)
