"""Which language a path is, and how much structure codenav extracts from it."""

from __future__ import annotations

from pathlib import PurePosixPath

# Languages with AST chunking and symbol extraction (tree-sitter grammar name on the right).
STRUCTURED: dict[str, str] = {
    "python": "python",
    "typescript": "typescript",
    "tsx": "tsx",
    "javascript": "javascript",
    "go": "go",
    "java": "java",
    "rust": "rust",
    "c": "c",
    "cpp": "cpp",
    "csharp": "csharp",
    "ruby": "ruby",
    "php": "php",
    "kotlin": "kotlin",
}

_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".rst": "rst",
    ".scala": "scala", ".swift": "swift", ".dart": "dart", ".lua": "lua", ".pl": "perl",
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

_FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "dockerfile",
    "CMakeLists.txt": "cmake", "Rakefile": "ruby", "Gemfile": "ruby", "BUILD": "starlark",
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
