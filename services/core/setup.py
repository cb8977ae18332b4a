"""The core's one compiled part: the indexer's word loop in C (``codenav/_native.c``;
bench/README.md, "The word loop in C"). Everything else is in pyproject.toml.

The extension is optional: without a C compiler the install goes on, and ``codenav.tokens``
does the same work in Python, about six times slower."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("codenav._native", ["codenav/_native.c"], optional=True,
                             extra_compile_args=["-O2"])])
