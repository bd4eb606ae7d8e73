"""tiktoken.model's names, for code that imports them from there (`from tiktoken.model import
encoding_name_for_model`, `tiktoken.model.MODEL_TO_ENCODING`): the same tables and functions, owned by
bpe_fast.registry."""
from .encoding import Encoding
from .registry import (MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING, encoding_for_model, encoding_name_for_model,
                       get_encoding)

__all__ = ["Encoding", "MODEL_PREFIX_TO_ENCODING", "MODEL_TO_ENCODING", "encoding_for_model",
           "encoding_name_for_model", "get_encoding"]
