"""warn_caller: a warning attributed to the first frame outside bpe_fast (the user's line), however deep in the
package it is raised and by which public function it was reached."""
import inspect
import os
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    level, frame = 1, inspect.currentframe()      # this function's frame: stacklevel 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
