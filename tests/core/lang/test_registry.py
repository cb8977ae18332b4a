"""The language registry: each structured language is one module of ``codenav.lang``, and
the pipeline stages read it from there."""

from __future__ import annotations

import pkgutil
from collections import Counter
from importlib import import_module
from pathlib import Path

import codenav.lang
from codenav.graph.patterns import PATTERNS
from codenav.lang import LANGUAGES, SPECS, STRUCTURED, language_for
from codenav.lang.base import Language

FIXTURES = Path(__file__).parents[2] / "fixtures" / "langs"
NOT_LANGUAGES = {"base", "conventions", "spec"}


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
