"""The language registry: which language a path is, and how much structure codenav
extracts from it.

Every language with AST chunking has a module here, ``codenav.lang.<language>``, declaring
its ``Language`` (``codenav.lang.base``): extensions, the node tables of its chunks and
symbols, the tree-sitter patterns of its references, how it imports, its resolution
family, and its ecosystem's conventions. The pipeline stages read them through this
registry (``LANGUAGES``, ``get``/``find``, ``SPECS``, ``family``/``members``,
``codenav.graph.patterns.PATTERNS``, ``codenav.lang.conventions``).
Adding a language: its module, a line below, and its fixtures. Other text files are known
by extension (``_TEXT_EXTENSIONS``) and searched in line windows.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from codenav.lang import (
    c,
    cpp,
    csharp,
    go,
    java,
    javascript,
    kotlin,
    php,
    python,
    ruby,
    rust,
    scala,
    swift,
    tsx,
    typescript,
)
from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

LANGUAGES: tuple[Language, ...] = tuple(m.LANGUAGE for m in (
    python, typescript, tsx, javascript, go, java, rust, c, cpp, csharp, ruby, php, kotlin,
    scala, swift,
))
_BY_NAME = {lang.name: lang for lang in LANGUAGES}

STRUCTURED: dict[str, str] = {lang.name: lang.grammar for lang in LANGUAGES}
"""Languages with AST chunking and symbol extraction, and their tree-sitter grammar."""
SPECS: dict[str, LangSpec] = {lang.name: lang.spec for lang in LANGUAGES}
"""Each structured language's node tables (``codenav.lang.spec.LangSpec``)."""


def get(name: str) -> Language:
    return _BY_NAME[name]


def find(name: str) -> Language | None:
    """The structured language of that name, or None (a text language, ``text``)."""
    return _BY_NAME.get(name)


def family(name: str) -> str:
    """A language's resolution family (``codenav.lang.base.FAMILIES``), '' for none."""
    found = _BY_NAME.get(name)
    return found.family if found is not None else ""


def members(family_name: str) -> frozenset[str]:
    """The languages of one resolution family."""
    return frozenset(lang.name for lang in LANGUAGES if lang.family == family_name)


def family_extensions(family_name: str) -> tuple[str, ...]:
    """The file suffixes of one resolution family's languages."""
    return tuple(e for lang in LANGUAGES if lang.family == family_name for e in lang.extensions)


_TEXT_EXTENSIONS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".rst": "rst",
    ".dart": "dart", ".lua": "lua", ".pl": "perl",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ps1": "powershell",
    ".sql": "sql", ".graphql": "graphql", ".proto": "protobuf",
    ".html": "html", ".htm": "html", ".vue": "vue", ".svelte": "svelte", ".css": "css",
    ".scss": "css", ".less": "css",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini",
    ".cfg": "ini", ".xml": "xml", ".gradle": "gradle", ".properties": "properties",
    ".txt": "text", ".cmake": "cmake", ".tf": "terraform", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".clj": "clojure", ".r": "r",
    ".jl": "julia", ".zig": "zig", ".nim": "nim", ".m": "objc", ".mm": "objc",
}

_EXTENSIONS: dict[str, str] = {ext: lang.name for lang in LANGUAGES
                               for ext in lang.extensions} | _TEXT_EXTENSIONS

_FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "dockerfile",
    "CMakeLists.txt": "cmake", **{n: lang.name for lang in LANGUAGES for n in lang.filenames},
    "BUILD": "starlark",
    "WORKSPACE": "starlark", "Jenkinsfile": "groovy", "README": "text", "LICENSE": "text",
}

_SHEBANGS: dict[str, str] = {"python": "python", "node": "javascript", "ruby": "ruby",
                             "bash": "shell", "sh": "shell", "zsh": "shell", "php": "php"}


def language_for(path: str, head: bytes = b"") -> str:
    """The language of ``path`` (repo-relative, POSIX); ``head`` is the file's first bytes."""
    pure = PurePosixPath(path)
    if pure.name in _FILENAMES:
        return _FILENAMES[pure.name]
    lang = _EXTENSIONS.get(pure.suffix.lower())
    if lang:
        return lang
    if head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("ascii", "replace")
        for word, name in _SHEBANGS.items():
            if word in first.rsplit("/", 1)[-1]:
                return name
    return "text"


def is_structured(language: str) -> bool:
    return language in STRUCTURED


def known_languages() -> set[str]:
    return set(_EXTENSIONS.values()) | set(_FILENAMES.values()) | {"text"}
