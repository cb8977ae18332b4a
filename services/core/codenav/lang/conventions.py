"""What each file of a repository is for, by the conventions of its ecosystem.

A code change usually needs the *source*: the files a library or application is made of.
Around them every ecosystem keeps tests and their fixtures, examples and playgrounds,
documentation, benchmarks, generated and vendored code, each in places its tools expect
(Maven/Gradle ``src/test``, Go ``_test.go`` and ``testdata``, JS ``__tests__`` and
``*.spec.ts``, Python ``tests/`` and ``conftest.py``, Rust ``benches/``, C# ``*.Tests``
projects...). ``role(path)`` names which of these a path is; ``find_files`` keeps the
non-source roles out unless the query is about them, and ``search`` ranks them lower.

The table is per ecosystem (a pattern applies to the languages listed with it, or to every
language), so a convention of one ecosystem never misreads another's source: ``spec/`` is
tests in Ruby and JavaScript, ``deps/`` is vendored code in C, ``testing/`` is test helpers
in Python but a library package in Go.
"""

from __future__ import annotations

import re
from functools import lru_cache

from codenav.lang import LANGUAGES, language_for
from codenav.lang.base import (
    BENCH,
    DIR,
    DOCS,
    END,
    EXAMPLE,
    FIXTURE,
    GENERATED,
    ROLES,
    SOURCE,
    TEST,
    VENDORED,
    Convention,
)

__all__ = ["BENCH", "BUILD", "DOCS", "EXAMPLE", "FIXTURE", "GENERATED", "ROLES", "SOURCE",
           "TEST", "VENDORED", "Convention", "asked_roles", "is_build_script", "is_test", "role"]

ANY: tuple[str, ...] = ()
_GENERIC: list[Convention] = [
    # --- fixtures first: test data is a fixture even inside a test tree ------------------
    Convention(FIXTURE, ANY, DIR + r"(fixtures?|__fixtures__|testdata|test[-_]data|"
               r"__snapshots__|__mocks__|mocks?)" + END, "test data and mocks"),
    Convention(FIXTURE, ANY, r"\.snap$", "snapshot files"),
    # --- tests ------------------------------------------------------------------------------
    Convention(TEST, ANY, DIR + r"(tests?|__tests__|e2e|tests?[-_][^/]*|integration[-_]tests?|"
               r"unit[-_]tests?)" + END, "test directories"),
    Convention(TEST, ANY, DIR + r"[^/]*[._-]([Tt]ests?|UnitTests|IntegrationTests|[Ss]pecs?)"
               + END, "test projects (C# Foo.Tests, foo-tests)"),
    Convention(TEST, ANY, DIR + r"(test_[^/]*|[^/]*_test|[^/]*[._-](test|spec)s?)"
               r"\.[A-Za-z0-9]+$", "test_x, x_test, x.test, x.spec files"),
    Convention(TEST, ANY, DIR + r"[^/]*(Tests?|Spec)\.[A-Za-z0-9]+$",
               "FooTest, FooTests, FooSpec classes"),
    # --- examples and playgrounds -----------------------------------------------------------
    Convention(EXAMPLE, ANY, DIR + r"([^/]*[._-])?(examples?|samples?|demos?|playgrounds?|"
               r"sandbox|tutorials?|cookbook|galler(y|ies))" + END,
               "example apps, samples, playgrounds, galleries"),
    # --- documentation ----------------------------------------------------------------------
    Convention(DOCS, ANY, DIR + r"(docs?|documentation|docs_src|website|man)" + END,
               "documentation trees"),
    Convention(DOCS, ANY, r"\.(md|mdx|markdown|rst|adoc|txt)$", "prose files"),
    # --- benchmarks -------------------------------------------------------------------------
    Convention(BENCH, ANY, DIR + r"([^/]*[._-])?(benchmarks?|bench|benches|perf|jmh|"
               r"asv_bench)" + END, "benchmark trees (Rust benches/, JMH, asv)"),
    Convention(BENCH, ANY, DIR + r"[^/]*([._-]bench|Benchmarks?)\.[A-Za-z0-9]+$",
               "benchmark files"),
    # --- generated and vendored code --------------------------------------------------------
    Convention(GENERATED, ANY, DIR + r"(generated|__generated__|autogen|gen-src)" + END,
               "generated trees"),
    Convention(GENERATED, ANY, r"([._-](pb|pb2|generated|gen|min)\.[A-Za-z0-9]+$|_pb2(_grpc)?"
               r"\.py$|(^|/|_)parsetab\.py$|(^|/)lextab\.py$|\.(g|[Dd]esigner)\.cs$)",
               "generated files (protobuf, parser tables, designer files, declarations)"),
    Convention(VENDORED, ANY, DIR + r"(vendor|vendored|_vendor|third[-_]party|node_modules|"
               r"externals?|extern|bower_components)" + END, "vendored dependencies"),
]
"""The conventions of every ecosystem; each language module adds its own
(``Language.conventions``)."""

_SECTIONS = (FIXTURE, TEST, EXAMPLE, DOCS, BENCH, GENERATED, VENDORED)
"""Fixtures first (test data is a fixture even inside a test tree), then the rest."""

CONVENTIONS: list[Convention] = sorted(
    dict.fromkeys(_GENERIC + [c for lang in LANGUAGES for c in lang.conventions]),
    key=lambda c: (_SECTIONS.index(c.role), c.languages != ANY))
"""Checked in order; the first convention that matches names the role (within a role,
the order does not change the answer)."""

_COMPILED = [(c.role, frozenset(c.languages), re.compile(c.pattern)) for c in CONVENTIONS]


@lru_cache(maxsize=65536)
def role(path: str) -> str:
    """The role of a repo-relative path: ``source`` unless a convention says otherwise."""
    language = language_for(path)
    for name, languages, pattern in _COMPILED:
        if languages and language not in languages:
            continue
        if pattern.search(path):
            return name
    return SOURCE


def is_test(path: str) -> bool:
    """Tests and their fixtures."""
    return role(path) in (TEST, FIXTURE)


BUILD = "build"
"""Not a role: a build script is source (a task about the build changes it, and nothing
else will), but a query can ask for it (``asked_roles``), like a role."""
_BUILD_SCRIPTS = re.compile(
    r"(^|/)[^/]*\.gradle(\.kts)?$|(^|/)(buildSrc|build-logic)/"  # Gradle, its convention plugins
    r"|(^|/)build\.rs$"  # Cargo build scripts
    r"|(^|/)(setup|noxfile)\.py$"  # setuptools, nox
    r"|(^|/)(Rakefile|Gemfile)$|\.(gemspec|rake)$"  # Rake, Bundler, gem specs
    r"|(^|/)[^/]*\.config\.[cm]?[jt]s$|(^|/)([Gg]runtfile|gulpfile)\.[cm]?[jt]s$"  # JS tools
    r"|(^|/)CMakeLists\.txt$|\.cmake$|(^|/)meson\.build$"  # C and C++
    r"|(^|/)Package(@swift-[0-9.]+)?\.swift$")  # Swift Package Manager manifests
"""Build scripts by the conventions of each ecosystem (Gradle, Cargo, setuptools, Rake and
Bundler, JS tool configs, CMake and Meson, SwiftPM); the names are unambiguous across
ecosystems."""


@lru_cache(maxsize=65536)
def is_build_script(path: str) -> bool:
    """A build script: how the project is built, versioned and published."""
    return bool(_BUILD_SCRIPTS.search(path))


_ASKS = {
    TEST: re.compile(r"\b(tests?|testing|spec|specs|fixtures?|mocks?|pytest|junit|unittest|"
                     r"e2e|snapshots?)\b", re.IGNORECASE),
    EXAMPLE: re.compile(r"\b(examples?|samples?|demos?|playgrounds?|tutorials?|gallery)\b",
                        re.IGNORECASE),
    DOCS: re.compile(r"\b(docs?|documentation|readme|guide|tutorial|changelog|architecture|"
                     r"overview|docstrings?)\b", re.IGNORECASE),
    BENCH: re.compile(r"\b(bench|benchmarks?|perf|performance)\b", re.IGNORECASE),
    GENERATED: re.compile(r"\b(generated|codegen|regenerate|protobuf|vendor(ed)?)\b",
                          re.IGNORECASE),
    BUILD: re.compile(r"\b(dependenc(y|ies)|deps|bump(s|ed)?|upgrades?|release|versions?|"
                      r"plugins?|gradle|maven|gemspec|rakefile|cmake|webpack|publish(ing)?|"
                      r"packaging|toolchains?|jdk|ci|builds?|renovate|dependabot|monorepo|"
                      r"to v\d+)\b", re.IGNORECASE),
}
_ASKS[FIXTURE] = _ASKS[TEST]
_ASKS[VENDORED] = _ASKS[GENERATED]


def asked_roles(text: str) -> set[str]:
    """The non-source roles a query is about (``fix the example app`` -> example), and
    ``BUILD`` when it is about dependencies, versions or the build."""
    return {name for name, pattern in _ASKS.items() if pattern.search(text)}
