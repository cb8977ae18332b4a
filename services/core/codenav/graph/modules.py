"""Which files of a repository an import names, per language.

``ModuleIndex`` knows every indexed path with its language and package declaration, plus
the configuration files that change resolution (``go.mod``, ``tsconfig.json``,
``package.json`` workspaces, ``Cargo.toml``, ``composer.json``), read from the index itself.
Its ``resolve_*`` methods map one import spec to the files it names; an empty answer means
external (a library, the standard library, or a file that is not indexed).
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from codenav.lang import members, swift

CONFIG_RE = (r"(^|/)(go\.mod|tsconfig[^/]*\.json|jsconfig\.json|package\.json|Cargo\.toml|"
             r"composer\.json|Package\.swift)$")
"""Files whose content changes how imports resolve (a change rebuilds the whole graph)."""
_CONFIG = re.compile(CONFIG_RE)

JVM = members("jvm")
JS = members("js")
C_FAMILY = members("c")
_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_PY_EXTS = (".py", ".pyi")
_JSON_COMMENT = re.compile(r'//[^\n"]*$|/\*.*?\*/', re.S | re.M)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def is_config(path: str) -> bool:
    return bool(_CONFIG.search(path))


def _json(text: str) -> dict[str, Any]:
    """JSON as tsconfig writes it: comments and trailing commas allowed."""
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = json.loads(_TRAILING_COMMA.sub(r"\1", _JSON_COMMENT.sub("", text)))
        except ValueError:
            return {}
    return data if isinstance(data, dict) else {}


def _dir(path: str) -> str:
    return posixpath.dirname(path)


def _join(*parts: str) -> str:
    joined = posixpath.normpath(posixpath.join(*[p for p in parts if p]))
    return "" if joined == "." else joined


@dataclass
class _TsConfig:
    dir: str
    base_url: str | None
    paths: list[tuple[str, list[str]]]


@dataclass
class ModuleIndex:
    files: dict[str, tuple[str, str]] = field(default_factory=dict)
    """path -> (language, package declaration or '')."""
    configs: dict[str, str] = field(default_factory=dict)
    """path -> text of the configuration files."""

    def __post_init__(self) -> None:
        self.dirs: dict[str, list[str]] = defaultdict(list)
        self.packages: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.stems: dict[str, list[str]] = defaultdict(list)
        self._types: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        targets = {d: name for p, text in sorted(self._configs_named("Package.swift"))
                   for d, name in swift.package_targets(p, text)}
        for path, (language, package) in sorted(self.files.items()):
            if language == "swift":  # a Swift file's module is its build target's
                package = swift.module_of(path, targets)
                self.files[path] = (language, package)
            self.dirs[_dir(path)].append(path)
            family = "jvm" if language in JVM else language
            stem = posixpath.basename(path).split(".", 1)[0]
            if package:
                self.packages[(family, package)].append(path)
                self._types[(family, package, stem)].append(path)
            self.stems[stem].append(path)
        self._py: dict[str, list[str]] | None = None
        self._go = self._go_modules()
        self._ts = self._ts_configs()
        self._workspaces = self._js_workspaces()
        self._crates = self._rust_crates()
        self._psr4 = self._composer()

    # --- shared --------------------------------------------------------------------------
    def _configs_named(self, name: str) -> Iterator[tuple[str, str]]:
        """(path, text) of the configuration files called ``name`` (``go.mod``)."""
        return ((p, t) for p, t in self.configs.items() if posixpath.basename(p) == name)

    def language(self, path: str) -> str:
        entry = self.files.get(path)
        return entry[0] if entry else ""

    def package(self, path: str) -> str:
        entry = self.files.get(path)
        return entry[1] if entry else ""

    def package_files(self, language: str, package: str) -> list[str]:
        family = "jvm" if language in JVM else language
        return self.packages.get((family, package), [])

    def peers(self, path: str) -> list[str]:
        """The files that see a new file's declarations without importing it: its
        directory's (a Go or JVM package, a C# namespace's usual home) and, for Swift, its
        module's."""
        peers = self.dirs.get(_dir(path), [])
        language, package = self.files.get(path, ("", ""))
        if language == "swift" and package:
            return sorted({*peers, *self.package_files("swift", package)})
        return peers

    def has_package(self, language: str, package: str) -> bool:
        return bool(self.package_files(language, package))

    # --- Python --------------------------------------------------------------------------
    def _is_package(self, directory: str) -> bool:
        return any(_join(directory, f"__init__{ext}") in self.files for ext in _PY_EXTS)

    def _python_index(self) -> dict[str, list[str]]:
        """Dotted module name (from the first directory up that is not a package) -> path."""
        if self._py is None:
            index: dict[str, list[str]] = defaultdict(list)
            for path, (language, _pkg) in self.files.items():
                if language != "python":
                    continue
                stem = posixpath.basename(path).rsplit(".", 1)[0]
                parts = [] if stem == "__init__" else [stem]
                directory = _dir(path)
                while directory and self._is_package(directory):
                    parts.insert(0, posixpath.basename(directory))
                    directory = _dir(directory)
                if parts:
                    index[".".join(parts)].append(path)
            self._py = index
        return self._py

    def _python_at(self, root: str, parts: list[str]) -> str | None:
        base = _join(root, *parts)
        for candidate in [base + ext for ext in _PY_EXTS] + \
                [_join(base, "__init__" + ext) for ext in _PY_EXTS]:
            if candidate in self.files:
                return candidate
        return None

    def resolve_python(self, src: str, spec: str) -> str | None:
        """The file of module ``spec`` (``a.b``, ``.m``, ``..p.q``, ``.``) imported from
        ``src``: relative to the package, else from the non-package directories above
        ``src`` (sys.path roots), else by the module's full dotted name."""
        dots = len(spec) - len(spec.lstrip("."))
        parts = [p for p in spec.lstrip(".").split(".") if p]
        if dots:
            base = _dir(src)
            for _ in range(dots - 1):
                base = _dir(base)
            return self._python_at(base, parts)
        if not parts:
            return None
        roots = []
        directory = _dir(src)
        while True:
            if not self._is_package(directory):
                roots.append(directory)
            if not directory:
                break
            directory = _dir(directory)
        for root in roots:
            found = self._python_at(root, parts)
            if found:
                return found
        candidates = self._python_index().get(".".join(parts), [])
        return _closest(src, candidates)

    # --- JavaScript / TypeScript -----------------------------------------------------------
    def _probe_js(self, base: str) -> str | None:
        if base in self.files and posixpath.splitext(base)[1]:
            return base
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):  # TS ESM: import "./x.js" means x.ts
            for alt in (".ts", ".tsx", ".mts", ".cts"):
                if stem + alt in self.files:
                    return stem + alt
        for ext in _JS_EXTS:
            if base + ext in self.files:
                return base + ext
        for ext in _JS_EXTS:
            candidate = _join(base, "index" + ext)
            if candidate in self.files:
                return candidate
        return None

    def _ts_configs(self) -> list[_TsConfig]:
        out = []
        for path, text in self.configs.items():
            name = posixpath.basename(path)
            if not (name.startswith("tsconfig") or name == "jsconfig.json"):
                continue
            options = _json(text).get("compilerOptions") or {}
            if not isinstance(options, dict):
                continue
            base_url = options.get("baseUrl")
            paths = options.get("paths") or {}
            mapping = [(k, [t for t in v if isinstance(t, str)]) for k, v in paths.items()
                       if isinstance(v, list)] if isinstance(paths, dict) else []
            if base_url is None and not mapping:
                continue
            out.append(_TsConfig(_dir(path), base_url if isinstance(base_url, str) else None,
                                 mapping))
        out.sort(key=lambda c: -len(c.dir))
        return out

    def _js_workspaces(self) -> dict[str, tuple[str, list[str]]]:
        """Package name -> (directory, entry files named in its package.json)."""
        out: dict[str, tuple[str, list[str]]] = {}
        for path, text in self._configs_named("package.json"):
            data = _json(text)
            name = data.get("name")
            if not isinstance(name, str) or not name:
                continue
            entries = []
            for key in ("source", "types", "typings", "module", "main"):
                value = data.get(key)
                if isinstance(value, str):
                    entries.append(value)
            exports = data.get("exports")
            if isinstance(exports, str):
                entries.append(exports)
            elif isinstance(exports, dict):
                dot = exports.get(".", exports)
                if isinstance(dot, str):
                    entries.append(dot)
                elif isinstance(dot, dict):
                    entries += [v for v in dot.values() if isinstance(v, str)]
            out[name] = (_dir(path), entries)
        return out

    def resolve_js(self, src: str, spec: str) -> str | None:
        if spec.startswith((".", "/")):
            return self._probe_js(_join(_dir(src), spec))
        for config in self._ts:
            if config.dir and not src.startswith(config.dir + "/"):
                continue
            base = _join(config.dir, config.base_url or ".")
            for pattern, targets in config.paths:
                prefix, star, suffix = pattern.partition("*")
                if star and spec.startswith(prefix) and spec.endswith(suffix) and \
                        len(spec) >= len(prefix) + len(suffix):
                    middle = spec[len(prefix):len(spec) - len(suffix)] if suffix else \
                        spec[len(prefix):]
                    for target in targets:
                        found = self._probe_js(_join(base, target.replace("*", middle)))
                        if found:
                            return found
                elif not star and spec == pattern:
                    for target in targets:
                        found = self._probe_js(_join(base, target))
                        if found:
                            return found
            if config.base_url is not None:
                found = self._probe_js(_join(base, spec))
                if found:
                    return found
        for name, (directory, entries) in self._workspaces.items():
            if spec == name:
                for entry in entries:
                    found = self._probe_js(_join(directory, entry))
                    if found:
                        return found
                return self._probe_js(_join(directory, "src", "index")) or \
                    self._probe_js(_join(directory, "index"))
            if spec.startswith(name + "/"):
                rest = spec[len(name) + 1:]
                return self._probe_js(_join(directory, rest)) or \
                    self._probe_js(_join(directory, "src", rest))
        return None

    # --- Go ------------------------------------------------------------------------------
    def _go_modules(self) -> list[tuple[str, str]]:
        out = []
        for path, text in self._configs_named("go.mod"):
            match = re.search(r"^\s*module\s+(\S+)", text, re.M)
            if match:
                out.append((match.group(1).strip('"'), _dir(path)))
        out.sort(key=lambda m: -len(m[0]))
        return out

    def go_package_dir(self, spec: str) -> str | None:
        for module, directory in self._go:
            if spec == module or spec.startswith(module + "/"):
                rel = spec[len(module):].lstrip("/")
                target = _join(directory, rel)
                return target if self._go_files(target) else None
        parts = spec.split("/")  # no go.mod: the longest suffix of the path that is a dir
        for i in range(1, len(parts)):
            target = "/".join(parts[i:])
            if self._go_files(target):
                return target
        return None

    def _go_files(self, directory: str) -> list[str]:
        return [p for p in self.dirs.get(directory, []) if p.endswith(".go")]

    def resolve_go(self, spec: str) -> list[str]:
        directory = self.go_package_dir(spec)
        if directory is None:
            return []
        files = self._go_files(directory)
        plain = [p for p in files if not p.endswith("_test.go")]
        return plain or files

    def go_package_name(self, files: list[str], spec: str) -> str:
        for path in files:
            package = self.package(path)
            if package and not package.endswith("_test"):
                return package
        return spec.rstrip("/").rsplit("/", 1)[-1]

    # --- Java / Kotlin / C# / PHP: packages and namespaces --------------------------------
    def type_files(self, language: str, package: str, name: str) -> list[str]:
        """Files of ``package`` named after type ``name`` (``Foo.java`` for ``Foo``)."""
        family = "jvm" if language in JVM else language
        return self._types.get((family, package, name), [])

    def by_path_suffix(self, parts: list[str], exts: Iterable[str]) -> list[str]:
        """Files whose path ends with ``a/b/C.<ext>`` (files without a package line)."""
        stem = parts[-1]
        tail = "/".join(parts)
        out = []
        for path in self.stems.get(stem, []):
            base, ext = posixpath.splitext(path)
            if ext in exts and (base == tail or base.endswith("/" + tail)):
                out.append(path)
        return out

    def _composer(self) -> list[tuple[str, str]]:
        out = []
        for path, text in self._configs_named("composer.json"):
            data = _json(text)
            for section in ("autoload", "autoload-dev"):
                psr4 = (data.get(section) or {}).get("psr-4") or {}
                if not isinstance(psr4, dict):
                    continue
                for prefix, dirs in psr4.items():
                    for d in dirs if isinstance(dirs, list) else [dirs]:
                        if isinstance(d, str):
                            out.append((prefix.strip("\\"), _join(_dir(path), d)))
        out.sort(key=lambda e: -len(e[0]))
        return out

    def resolve_php_class(self, fqn: str) -> list[str]:
        """``App\\Models\\User`` -> its file, by namespace declaration, PSR-4 or path."""
        parts = [p for p in fqn.strip("\\").split("\\") if p]
        if not parts:
            return []
        namespace = "\\".join(parts[:-1])
        found = self.type_files("php", namespace, parts[-1])
        if found:
            return found
        for prefix, directory in self._psr4:
            if fqn.startswith(prefix + "\\"):
                rest = fqn[len(prefix) + 1:].replace("\\", "/")
                candidate = _join(directory, rest + ".php")
                if candidate in self.files:
                    return [candidate]
        return self.by_path_suffix(parts, (".php",))

    # --- Rust ----------------------------------------------------------------------------
    def _rust_crates(self) -> dict[str, str]:
        """Crate name -> its root source file (src/lib.rs or src/main.rs)."""
        out: dict[str, str] = {}
        for path, text in self._configs_named("Cargo.toml"):
            try:
                data = tomllib.loads(text)
            except (tomllib.TOMLDecodeError, ValueError):
                continue
            package = data.get("package") or {}
            name = package.get("name") if isinstance(package, dict) else None
            lib = data.get("lib") or {}
            root = _dir(path)
            candidates = []
            if isinstance(lib, dict) and isinstance(lib.get("path"), str):
                candidates.append(_join(root, lib["path"]))
            candidates += [_join(root, "src/lib.rs"), _join(root, "src/main.rs")]
            for candidate in candidates:
                if candidate in self.files and isinstance(name, str):
                    out[name.replace("-", "_")] = candidate
                    break
        return out

    def rust_crate_root(self, src: str) -> str | None:
        """The crate root file (lib.rs/main.rs) of the crate ``src`` belongs to."""
        best = None
        for root in self._crates.values():
            if src.startswith(_dir(root) + "/") and (best is None or len(root) > len(best)):
                best = root
        if best is not None:
            return best
        directory = _dir(src)
        while True:  # no Cargo.toml indexed: the nearest lib.rs/main.rs above
            for name in ("lib.rs", "main.rs"):
                candidate = _join(directory, name)
                if candidate in self.files:
                    return candidate
            if not directory:
                return None
            directory = _dir(directory)

    def rust_crate(self, name: str) -> str | None:
        return self._crates.get(name)

    def rust_module_dir(self, path: str) -> str:
        """The directory where the submodules of the module in ``path`` live."""
        name = posixpath.basename(path)
        if name in ("lib.rs", "main.rs", "mod.rs"):
            return _dir(path)
        return _join(_dir(path), name[:-3])

    def rust_submodule(self, path: str, name: str) -> str | None:
        base = self.rust_module_dir(path)
        for candidate in (_join(base, name + ".rs"), _join(base, name, "mod.rs")):
            if candidate in self.files:
                return candidate
        return None

    def rust_parent_module(self, path: str) -> str | None:
        """The file of the parent module of the module in ``path`` (``super``)."""
        name = posixpath.basename(path)
        if name in ("lib.rs", "main.rs"):
            return None
        owner_dir = _dir(_dir(path)) if name == "mod.rs" else _dir(path)
        for candidate in (_join(owner_dir, "mod.rs"), _join(owner_dir, "lib.rs"),
                          _join(owner_dir, "main.rs")):
            if candidate in self.files:
                return candidate
        candidate = owner_dir + ".rs"
        return candidate if candidate in self.files else None

    # --- C / C++ -------------------------------------------------------------------------
    def resolve_include(self, src: str, spec: str) -> str | None:
        quoted = spec.startswith('"')
        name = spec.strip('"<> ')
        if not name:
            return None
        if quoted:
            local = _join(_dir(src), name)
            if local in self.files:
                return local
        parts = name.split("/")
        candidates = [p for p in self.stems.get(parts[-1].split(".", 1)[0], [])
                      if p == name or p.endswith("/" + name)]
        return _closest(src, candidates)

    # --- Ruby ----------------------------------------------------------------------------
    def resolve_ruby(self, src: str, spec: str) -> str | None:
        name = spec if spec.endswith(".rb") else spec + ".rb"
        if spec.startswith("."):
            candidate = _join(_dir(src), name)
            return candidate if candidate in self.files else None
        for root in ("lib", "app", ""):
            candidate = _join(root, name)
            if candidate in self.files:
                return candidate
        candidates = [p for p in self.stems.get(posixpath.basename(name)[:-3], [])
                      if p.endswith("/lib/" + name)]
        return _closest(src, candidates)

    def resolve_php_file(self, src: str, spec: str) -> str | None:
        candidate = _join(_dir(src), spec) if spec.startswith(".") else _join(spec)
        return candidate if candidate in self.files else None


def _closest(src: str, candidates: list[str]) -> str | None:
    """The candidate sharing the longest directory prefix with ``src``."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]

    def shared(path: str) -> int:
        a, b = src.split("/"), path.split("/")
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    return sorted(candidates, key=lambda p: (-shared(p), len(p), p))[0]
