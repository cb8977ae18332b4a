"""The language registry: each structured language is one module of ``codenav.lang``, and
the pipeline stages read it from there."""

from __future__ import annotations

import pkgutil
from collections import Counter
from importlib import import_module
from pathlib import Path

import codenav.lang
from codenav.graph import bindings, modules
from codenav.graph.patterns import PATTERNS
from codenav.graph.resolve import IMPLICIT_THIS
from codenav.lang import LANGUAGES, SPECS, STRUCTURED, conventions, language_for
from codenav.lang.base import FAMILIES, Language

FIXTURES = Path(__file__).parents[2] / "fixtures" / "langs"
NOT_LANGUAGES = {"base", "conventions", "spec", "syntax"}


def test_every_language_module_declares_a_language_and_is_registered() -> None:
    modules = [m.name for m in pkgutil.iter_modules(codenav.lang.__path__)
               if m.name not in NOT_LANGUAGES]
    declared = [import_module(f"codenav.lang.{m}").LANGUAGE for m in modules]
    assert all(isinstance(lang, Language) for lang in declared)
    assert {lang.name for lang in declared} == {lang.name for lang in LANGUAGES}
    assert sorted(modules) == sorted(lang.name for lang in LANGUAGES)


def test_the_stages_read_the_registry() -> None:
    assert STRUCTURED == {lang.name: lang.grammar for lang in LANGUAGES}
    assert SPECS == {lang.name: lang.spec for lang in LANGUAGES}
    assert PATTERNS == {lang.name: lang.references for lang in LANGUAGES if lang.references}


def test_no_extension_or_file_name_belongs_to_two_languages() -> None:
    claimed = Counter(e for lang in LANGUAGES for e in (*lang.extensions, *lang.filenames))
    assert [e for e, n in claimed.items() if n > 1] == []
    for lang in LANGUAGES:
        for ext in lang.extensions:
            assert ext == ext.lower() and ext.startswith(".")
            assert language_for(f"src/a{ext}") == lang.name


def test_every_structured_language_has_a_chunking_fixture() -> None:
    covered = {language_for(p.name) for p in FIXTURES.iterdir()}
    assert {lang.name for lang in LANGUAGES} <= covered


def test_every_graphed_language_declares_its_imports_and_resolution_family() -> None:
    for lang in LANGUAGES:
        if not lang.references:
            continue
        assert lang.family in FAMILIES, lang.name
        assert lang.imports is not None and lang.imports.nodes, lang.name
        assert bindings.patterns(lang.name).count("@import.") >= 1, lang.name


def test_the_graph_and_the_conventions_read_the_registry() -> None:
    assert modules.JVM == {lang.name for lang in LANGUAGES if lang.family == "jvm"}
    assert modules.JS == {lang.name for lang in LANGUAGES if lang.family == "js"}
    assert IMPLICIT_THIS == {lang.name for lang in LANGUAGES if lang.implicit_this}
    declared = {c for lang in LANGUAGES for c in lang.conventions}
    assert declared <= set(conventions.CONVENTIONS)
    assert conventions.role("core/src/test/java/a/FooTest.java") == conventions.TEST
    assert conventions.role("pkg/testing/helpers.py") == conventions.TEST
    assert conventions.role("pkg/testing/helpers.go") == conventions.SOURCE


def test_a_language_outside_the_registry_has_no_imports_or_family() -> None:
    from codenav.lang import family, find
    from codenav.parse.imports import extract_imports

    assert find("markdown") is None and family("markdown") == ""
    assert bindings.patterns("markdown") == ""
    assert extract_imports("markdown", None) == []  # type: ignore[arg-type]


def test_every_resolution_family_binds_imports() -> None:
    from codenav.graph.scope import _BINDERS

    assert set(_BINDERS) == set(FAMILIES)
