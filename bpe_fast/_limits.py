"""The limits of the encoder's tables, which are indexed by id: checked by the readers (bpe_fast.formats, which
exports them, and bpe_fast.ranks) and by the Tokenizer. A module of its own, importing nothing, so that building
an Encoding from ranks in a dict does not import the file readers."""

# Ids are stored in int32 buffers; the largest is kept one below INT32_MAX so id + 1 never overflows.
MAX_TOKEN_ID = 2**31 - 2


def sparsity_problem(top: int, n: int) -> str:
    """Why a vocabulary of n tokens whose largest id is top is too sparse for the encoder's tables, which are
    indexed by id (their size follows the largest id), or "". The readers check it, to name the file and line;
    the Tokenizer before it builds the tables."""
    if top >= 4 * n + (1 << 20):
        return f"vocab ids are too sparse: largest id {top} for {n} tokens"
    return ""
