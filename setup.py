"""Build the Cython extensions: every bpe_fast/*.pyx becomes bpe_fast/<name>.so (C++, -O3)."""
import glob
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

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
