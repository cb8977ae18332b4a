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
from dataclasses import dataclass
from functools import lru_cache

from codenav.lang import language_for

SOURCE = "source"
TEST = "test"
FIXTURE = "fixture"
EXAMPLE = "example"
DOCS = "docs"
BENCH = "bench"
GENERATED = "generated"
VENDORED = "vendored"
ROLES = (SOURCE, TEST, FIXTURE, EXAMPLE, DOCS, BENCH, GENERATED, VENDORED)

JVM = ("java", "kotlin", "scala")
JS = ("javascript", "typescript", "tsx")
C = ("c", "cpp")
ANY: tuple[str, ...] = ()


@dataclass(frozen=True)
class Convention:
    role: str
    languages: tuple[str, ...]
    """The languages it applies to (empty: every language)."""
    pattern: str
    """A regular expression searched in the repo-relative path."""
    why: str


_DIR = r"(^|/)"
_END = r"(/|$)"

CONVENTIONS: list[Convention] = [
    # --- fixtures first: test data is a fixture even inside a test tree ------------------
    Convention(FIXTURE, ANY, _DIR + r"(fixtures?|__fixtures__|testdata|test[-_]data|"
               r"__snapshots__|__mocks__|mocks?)" + _END, "test data and mocks"),
    Convention(FIXTURE, ANY, r"\.snap$", "snapshot files"),
    # --- tests ------------------------------------------------------------------------------
    Convention(TEST, ANY, _DIR + r"(tests?|__tests__|e2e|tests?[-_][^/]*|integration[-_]tests?|"
               r"unit[-_]tests?)" + _END, "test directories"),
    Convention(TEST, ANY, _DIR + r"[^/]*[._-]([Tt]ests?|UnitTests|IntegrationTests|[Ss]pecs?)"
               + _END, "test projects (C# Foo.Tests, foo-tests)"),
    Convention(TEST, ANY, _DIR + r"(test_[^/]*|[^/]*_test|[^/]*[._-](test|spec)s?)"
               r"\.[A-Za-z0-9]+$", "test_x, x_test, x.test, x.spec files"),
    Convention(TEST, ANY, _DIR + r"[^/]*(Tests?|Spec)\.[A-Za-z0-9]+$",
               "FooTest, FooTests, FooSpec classes"),
    Convention(TEST, JVM, _DIR + r"[^/]*(Suite|IT)\.[A-Za-z0-9]+$", "FooSuite, FooIT classes"),
    Convention(TEST, JVM, r"(^|/)src/(test|it|integrationTest|testFixtures|androidTest|"
               r"commonTest|jvmTest|jsTest|nativeTest)/", "Maven/Gradle test source sets"),
    Convention(TEST, ("python",), _DIR + r"(testing|conftest\.py$)", "pytest helpers"),
    Convention(TEST, ("python",), _DIR + r"tests\.py$", "Django-style tests.py"),
    Convention(TEST, ("rust",), _DIR + r"tests\.rs$", "Rust test modules"),
    Convention(TEST, ("ruby", *JS), _DIR + r"(spec|specs|features|cypress|playwright)" + _END,
               "RSpec, Cucumber and browser-test trees"),
    Convention(TEST, ("c", "cpp"), _DIR + r"[^/]*_unittest\.[A-Za-z0-9]+$", "gtest files"),
    Convention(TEST, ("go",), r"_test\.go$", "Go tests"),
    # --- examples and playgrounds -----------------------------------------------------------
    Convention(EXAMPLE, ANY, _DIR + r"([^/]*[._-])?(examples?|samples?|demos?|playgrounds?|"
               r"sandbox|tutorials?|cookbook|galler(y|ies))" + _END,
               "example apps, samples, playgrounds, galleries"),
    Convention(EXAMPLE, JS, r"\.stories\.[A-Za-z0-9]+$", "Storybook stories"),
    # --- documentation ----------------------------------------------------------------------
    Convention(DOCS, ANY, _DIR + r"(docs?|documentation|docs_src|website|man)" + _END,
               "documentation trees"),
    Convention(DOCS, ANY, r"\.(md|mdx|markdown|rst|adoc|txt)$", "prose files"),
    # --- benchmarks -------------------------------------------------------------------------
    Convention(BENCH, ANY, _DIR + r"([^/]*[._-])?(benchmarks?|bench|benches|perf|jmh|"
               r"asv_bench)" + _END, "benchmark trees (Rust benches/, JMH, asv)"),
    Convention(BENCH, ANY, _DIR + r"[^/]*([._-]bench|Benchmarks?)\.[A-Za-z0-9]+$",
               "benchmark files"),
    # --- generated and vendored code --------------------------------------------------------
    Convention(GENERATED, ANY, _DIR + r"(generated|__generated__|autogen|gen-src)" + _END,
               "generated trees"),
    Convention(GENERATED, ANY, r"([._-](pb|pb2|generated|gen|min)\.[A-Za-z0-9]+$|_pb2(_grpc)?"
               r"\.py$|(^|/|_)parsetab\.py$|(^|/)lextab\.py$|\.(g|[Dd]esigner)\.cs$)",
               "generated files (protobuf, parser tables, designer files, declarations)"),
    Convention(GENERATED, ("python",), r"(^|/)migrations/\d{4}_[^/]*\.py$",
               "Django/Alembic migration files"),
    Convention(VENDORED, ANY, _DIR + r"(vendor|vendored|_vendor|third[-_]party|node_modules|"
               r"externals?|extern|bower_components)" + _END, "vendored dependencies"),
    Convention(VENDORED, C, _DIR + r"deps" + _END, "C/C++ vendored deps/"),
]
"""Checked in order; the first convention that matches names the role."""

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
}
_ASKS[FIXTURE] = _ASKS[TEST]
_ASKS[VENDORED] = _ASKS[GENERATED]


def asked_roles(text: str) -> set[str]:
    """The non-source roles a query is about (``fix the example app`` -> example)."""
    return {name for name, pattern in _ASKS.items() if pattern.search(text)}
