"""Build the Cython extensions: every bpe_fast/*.pyx becomes bpe_fast/<name>.so (C++, -O3).

The modules are translated by Cython and compiled by the C++ compiler several at a time, one a core (a build of
all of them took 60 s on this project's 2-core machine one at a time). BPE_FAST_BUILD_JOBS=N sets how many.
"""
import glob
import multiprocessing
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        "bpe_fast." + os.path.splitext(os.path.basename(path))[0],
        [path],
        language="c++",
        include_dirs=[np.get_include()],
        extra_compile_args=["-O3", "-std=c++17"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sorted(glob.glob(os.path.join("bpe_fast", "*.pyx")))
]


def _build_jobs():
    """How many modules are translated and compiled at once: BPE_FAST_BUILD_JOBS, else one a core."""
    text = os.environ.get("BPE_FAST_BUILD_JOBS", "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise SystemExit(f"BPE_FAST_BUILD_JOBS must be a whole number >= 1, got {text!r}")
        return int(text)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _forks():
    """Whether multiprocessing starts its processes by fork here (Linux's default until Python 3.14)."""
    method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
    return method == "fork"


JOBS = _build_jobs()

setup(
    ext_modules=cythonize(
        extensions,
        # (Cython's pool of processes only where they fork: started otherwise, they would run this file again)
        nthreads=JOBS if JOBS > 1 and _forks() else 0,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    options={"build_ext": {"parallel": JOBS}},      # (setuptools compiles the extensions in JOBS threads)
)
