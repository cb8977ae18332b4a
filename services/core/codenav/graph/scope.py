"""What the names of one file mean: its import bindings, resolved per language.

``ScopeBuilder.scope(path)`` turns a file's import facts into a ``FileScope``:

- ``names``: a local name bound by an import to a declaration or to a whole module
  (``import x as m``, ``from a import B``, ``import { B as C } from "./a"``, ``use a::B``,
  ``import a.b.C;``, Go package names),
- ``dotted``: dotted module paths usable as qualifiers (Python ``import a.b.c``),
- ``wild``: files (or classes, namespaces) whose top-level names are visible unqualified
  (wildcard imports, the file's own package or namespace, C includes, Ruby requires),
- ``imports``: one ``graph_imports`` row per import and file it reaches (``None``: external),
- ``import_edges``: import statements that name a declaration, as edges (rename impact).

Re-exports are followed (``export { X } from``, ``from .x import X`` in ``__init__.py``,
``pub use``) so a name imported through a barrel file resolves to its declaration.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from codenav.graph.context import TYPE_KINDS, Context, Fact, Target
from codenav.graph.modules import JS, JVM
from codenav.lang import family, family_extensions

EdgeRow = tuple[str, int, int, str, str, str, str, bool, str]
"""(src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified, how)"""
ImportRow = tuple[str, int, str, int, str | None]
"""(src_path, ord, spec, line, dst_path or None)"""

_JVM_EXTENSIONS = family_extensions("jvm")

MAX_FOLLOW = 6
"""How many re-export hops are followed from an import to its declaration."""


@dataclass
class FileScope:
    path: str
    language: str
    package: str
    names: dict[str, list[Target]] = field(default_factory=dict)
    dotted: dict[str, list[Target]] = field(default_factory=dict)
    wild: list[Target] = field(default_factory=list)
    groups: list[tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]] = \
        field(default_factory=list)
    """``wild`` as shareable groups (key, how, (path, prefix) members): the files of one
    package are one group, indexed once for every file of the package."""
    namespaces: list[str] = field(default_factory=list)
    """C++ ``using namespace`` prefixes looked up in this file and its includes."""
    imports: list[ImportRow] = field(default_factory=list)
    import_edges: list[EdgeRow] = field(default_factory=list)

    def add_wild(self, key: tuple[str, ...], how: str,
                 members: Sequence[tuple[str, str]]) -> None:
        """Make the top-level names of ``members`` (or the names directly under a prefix:
        a namespace, a class for static imports) visible unqualified."""
        if not members:
            return
        self.groups.append((key, how, tuple(members)))
        if key[0] != "package":  # a package's files are only ever looked up as a group
            self.wild += [Target(p, prefix, how) for p, prefix in members if p != self.path]

    def release_rows(self) -> None:
        """Forget the rows of the file's own imports once the build has them (a full build
        keeps every file's scope: 14 MB of rows on Apache Kafka)."""
        self.imports = []
        self.import_edges = []

    def bind(self, name: str, targets: list[Target]) -> None:
        if name and targets:
            self.names.setdefault(name, [])
            self.names[name] += [t for t in targets if t not in self.names[name]]


def local_name(language: str, fact: Fact) -> str:
    """The identifier an import fact binds in its file ('' for none)."""
    if language == "python" and not fact.name:
        return fact.alias or fact.qualifier.split(".")[0]
    if fact.name == "*":
        return ""
    if language in JS and not fact.name:
        return fact.alias
    return fact.alias or fact.name


class ScopeBuilder:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self._scopes: dict[str, FileScope] = {}
        self._following: set[tuple[str, str]] = set()
        self._packages: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}

    def scope(self, path: str) -> FileScope:
        found = self._scopes.get(path)
        if found is None:
            found = self._build(path)
            self._scopes[path] = found
        return found

    def forget(self, path: str) -> None:
        self._scopes.pop(path, None)

    # --- building one scope ----------------------------------------------------------------
    def _build(self, path: str) -> FileScope:
        language = self.index.language(path)
        package = self.index.package(path)
        sc = FileScope(path, language, package)
        facts = self.ctx.facts(path)
        bind = _BINDERS.get(family(language))
        if bind is not None:
            for fact in facts.imports:
                bind(self, sc, fact)
        self._implicit(sc)
        return sc

    def _row(self, sc: FileScope, fact: Fact, dsts: list[str] | None,
             spec: str | None = None) -> None:
        spec = fact.qualifier if spec is None else spec
        if fact.name == "*":  # wildcards end in '*' (an incremental build looks for them)
            spec += "::*" if sc.language == "rust" else ".*"
        if dsts and all(d == sc.path for d in dsts):
            return
        dsts = [d for d in dict.fromkeys(dsts or []) if d != sc.path]
        if dsts:
            for dst in dsts:
                sc.imports.append((sc.path, fact.ord, spec, fact.line, dst))
        else:
            sc.imports.append((sc.path, fact.ord, spec, fact.line, None))

    def _edge(self, sc: FileScope, fact: Fact, target: Target | None) -> None:
        if target is not None and target.qual:
            sc.import_edges.append((sc.path, fact.ord, fact.line, fact.scope, fact.kind,
                                    target.path, target.qual, True, "import"))

    def _implicit(self, sc: FileScope) -> None:
        """Names visible without an import: the file's own package or namespace."""
        lang = sc.language
        if lang in JVM and sc.package:
            self._package(sc, ("package", "jvm", sc.package),
                          lambda: self.index.package_files(lang, sc.package))
        elif lang == "go":
            directory = posixpath.dirname(sc.path)
            self._package(sc, ("package", "go", directory, sc.package),
                          lambda: [p for p in self.index.dirs.get(directory, [])
                                   if p.endswith(".go") and self.index.package(p) == sc.package])
        elif lang == "csharp" and sc.package:
            parts = sc.package.split(".")
            for i in range(len(parts), 0, -1):
                ns = ".".join(parts[:i])
                self._package(sc, ("package", "csharp", ns),
                              partial(self.index.package_files, "csharp", ns), ns)
        elif lang == "swift" and sc.package:
            self._package(sc, ("package", "swift", sc.package),
                          lambda: self.index.package_files("swift", sc.package))
        elif lang == "php" and sc.package:
            self._package(sc, ("package", "php", sc.package),
                          lambda: self.index.package_files("php", sc.package))

    def _package(self, sc: FileScope, key: tuple[str, ...], files: Callable[[], list[str]],
                 prefix: str = "") -> None:
        """The files of a package as one group, its members made once for the build and
        shared by every file of the package: per file, a package of n files cost n tuples
        (Apache Kafka: 440,000 of them, 24 MB)."""
        members = self._packages.get(key)
        if members is None:
            members = self._packages[key] = tuple((p, prefix) for p in files())
        sc.add_wild(key, "package", members)

    # --- following a name to its declaration -----------------------------------------------
    def export_target(self, path: str, name: str, depth: int = 0) -> Target | None:
        """The declaration ``name`` denotes when imported from the file ``path``: declared
        there, or re-exported from another file."""
        if depth > MAX_FOLLOW or (path, name) in self._following:
            return None
        table = self.ctx.symbols(path)
        found = table.get(name)
        if found:
            return Target(path, found[0].qual, "import")
        language = self.index.language(path)
        self._following.add((path, name))
        try:
            return self._reexported(path, language, name, depth)
        finally:
            self._following.discard((path, name))

    def _reexported(self, path: str, language: str, name: str, depth: int) -> Target | None:
        facts = self.ctx.facts(path)
        wildcards: list[str] = []
        for fact in facts.imports:
            if language in JS:
                if fact.kind != "reexport":
                    continue
                exported = fact.alias or fact.name
                if fact.name == "*" and fact.qualifier:
                    found = self.index.resolve_js(path, fact.qualifier)
                    if found:
                        wildcards.append(found)
                    continue
                if exported != name:
                    continue
                if not fact.qualifier:  # export { a as b } / export default a
                    if fact.name == name:
                        return self._local_import(path, language, name, depth)
                    return self.export_target(path, fact.name, depth + 1) or \
                        self._local_import(path, language, fact.name, depth)
                return self._js_from(path, fact, depth)
            if language == "python":
                if fact.name == "*":
                    found = self.index.resolve_python(path, fact.qualifier)
                    if found:
                        wildcards.append(found)
                    continue
                if local_name(language, fact) != name:
                    continue
                return self._python_from(path, fact, depth)
            if language == "rust" and fact.kind == "reexport":
                if fact.name == "*":
                    resolved = self.rust_path(path, fact.qualifier.split("::"))
                    if resolved is not None and not resolved[1]:
                        wildcards.append(resolved[0])
                    continue
                if local_name(language, fact) == name:
                    return self._rust_target(path, fact, depth)
        for source in wildcards:
            found_target = self.export_target(source, name, depth + 1)
            if found_target is not None:
                return found_target
        return None

    def _local_import(self, path: str, language: str, name: str, depth: int) -> Target | None:
        """``import { X } from "./x"; export { X }``: X through the file's own import."""
        for fact in self.ctx.facts(path).imports:
            if fact.kind == "import" and local_name(language, fact) == name and fact.qualifier:
                return self._js_from(path, fact, depth)
        return None

    def _js_from(self, path: str, fact: Fact, depth: int) -> Target | None:
        """What ``fact`` (``from "./x"``: a name, or the whole module) names in the file it
        resolves to."""
        found = self.index.resolve_js(path, fact.qualifier)
        if found is None:
            return None
        if not fact.name:
            return Target(found, "", "module")
        return self.export_target(found, fact.name, depth + 1)

    # --- per language ----------------------------------------------------------------------
    def _python_from(self, path: str, fact: Fact, depth: int = 0) -> Target | None:
        """What ``from <spec> import <name>`` (or ``import <spec>``) denotes."""
        if not fact.name:
            found = self.index.resolve_python(path, fact.qualifier)
            return Target(found, "", "module") if found else None
        spec = fact.qualifier
        sub = spec + fact.name if spec.endswith(".") else f"{spec}.{fact.name}"
        module = self.index.resolve_python(path, sub)
        if module is not None:
            return Target(module, "", "module")
        base = self.index.resolve_python(path, spec)
        if base is None:
            return None
        return self.export_target(base, fact.name, depth + 1)

    def bind_python(self, sc: FileScope, fact: Fact) -> None:
        index = self.index
        if not fact.name:  # import a.b.c [as m]
            found = index.resolve_python(sc.path, fact.qualifier)
            self._row(sc, fact, [found] if found else None)
            if fact.alias:
                if found:
                    sc.bind(fact.alias, [Target(found, "", "module")])
                return
            parts = fact.qualifier.split(".")
            for k in range(1, len(parts) + 1):
                dotted = ".".join(parts[:k])
                module = found if k == len(parts) else index.resolve_python(sc.path, dotted)
                if module:
                    sc.dotted.setdefault(dotted, [Target(module, "", "module")])
            if parts[0] in sc.dotted:
                sc.bind(parts[0], sc.dotted[parts[0]])
            return
        if fact.name == "*":
            found = index.resolve_python(sc.path, fact.qualifier)
            self._row(sc, fact, [found] if found else None)
            if found:
                sc.add_wild(("file", found, ""), "wildcard", [(found, "")])
            return
        spec = fact.qualifier
        sub = spec + fact.name if spec.endswith(".") else f"{spec}.{fact.name}"
        module = index.resolve_python(sc.path, sub)
        if module is not None:
            self._row(sc, fact, [module], sub)
            sc.bind(fact.alias or fact.name, [Target(module, "", "module")])
            return
        base = index.resolve_python(sc.path, spec)
        self._row(sc, fact, [base] if base else None)
        if base is None:
            return
        target = self.export_target(base, fact.name)
        if target is not None:
            local = Target(target.path, target.qual, "import")
            sc.bind(fact.alias or fact.name, [local])
            self._edge(sc, fact, local)

    def bind_js(self, sc: FileScope, fact: Fact) -> None:
        if not fact.qualifier:
            return  # export { a as b } of a local name: not an import
        found = self.index.resolve_js(sc.path, fact.qualifier)
        self._row(sc, fact, [found] if found else None)
        if found is None:
            return
        if fact.kind == "reexport":
            if fact.name not in ("", "*"):
                self._edge(sc, fact, self.export_target(found, fact.name))
            return
        local = local_name(sc.language, fact)
        if not fact.name:
            if local:
                sc.bind(local, [Target(found, "", "module")])
            return
        target = self.export_target(found, fact.name)
        if target is not None:
            sc.bind(local, [Target(target.path, target.qual, "import")])
            self._edge(sc, fact, target)

    def bind_go(self, sc: FileScope, fact: Fact) -> None:
        files = self.index.resolve_go(fact.qualifier)
        self._row(sc, fact, files)
        if not files or fact.alias == "_":
            return
        if fact.alias == ".":
            sc.add_wild(("go", fact.qualifier), "wildcard", [(p, "") for p in files])
            return
        name = fact.alias or self.index.go_package_name(files, fact.qualifier)
        sc.bind(name, [Target(p, "", "module") for p in files])

    def jvm_class(self, language: str, fqn: str) -> tuple[str | None, str]:
        """(file, qualname) of a fully qualified JVM name; qualname '' when only the file is
        known (a static field, an unindexed member)."""
        parts = fqn.split(".")
        for i in range(len(parts) - 1, 0, -1):
            package = ".".join(parts[:i])
            files = self.index.package_files(language, package)
            if not files:
                continue
            head, rest = parts[i], parts[i + 1:]
            candidates = self.index.type_files(language, package, head)
            found = self._jvm_in(candidates, head, rest)
            if found is not None:
                return found
            others = [p for p in files if p not in candidates]
            self.ctx.ensure_symbols(others)
            found = self._jvm_in(others, head, rest)
            if found is not None:
                return found
            break
        for k in range(len(parts), min(3, len(parts)) - 1, -1):  # by path (no package line)
            found_paths = self.index.by_path_suffix(parts[:k], _JVM_EXTENSIONS)
            if found_paths:
                located = self._jvm_in(found_paths, parts[k - 1], parts[k:])
                return located if located is not None else (found_paths[0], "")
        return None, ""

    def _jvm_in(self, paths: list[str], head: str, rest: list[str]) -> tuple[str, str] | None:
        """The first of ``paths`` declaring type ``head``, with the deepest of its members
        named by ``rest`` that is declared."""
        for path in paths:
            table = self.ctx.symbols(path)
            if not table.get(head):
                continue
            qual = head
            for part in rest:
                deeper = f"{qual}.{part}"
                if not table.get(deeper):
                    break
                qual = deeper
            return path, qual
        return None

    def bind_jvm(self, sc: FileScope, fact: Fact) -> None:
        lang = sc.language
        if fact.name == "*":
            files = self.index.package_files(lang, fact.qualifier)
            if files:
                self._row(sc, fact, files)
                sc.add_wild(("package", "jvm", fact.qualifier), "wildcard",
                            [(p, "") for p in files])
                return
            path, qual = self.jvm_class(lang, fact.qualifier)
            self._row(sc, fact, [path] if path else None)
            if path and qual:
                sc.add_wild(("file", path, qual), "wildcard", [(path, qual)])
            return
        path, qual = self.jvm_class(lang, fact.qualifier)
        self._row(sc, fact, [path] if path else None)
        if path and qual and qual.rsplit(".", 1)[-1] == fact.name:
            target = Target(path, qual, "import")
            sc.bind(fact.alias or fact.name, [target])
            self._edge(sc, fact, target)

    def bind_swift(self, sc: FileScope, fact: Fact) -> None:
        """``import Shop`` sees every declaration of module ``Shop`` (its build target's
        files, ``codenav.lang.swift.module_of``); ``import struct Shop.Item`` binds one."""
        if fact.name == "*":
            files = self.index.package_files("swift", fact.qualifier)
            self._row(sc, fact, files or None)
            if files:
                sc.add_wild(("package", "swift", fact.qualifier), "wildcard",
                            [(p, "") for p in files])
            return
        module, _dot, name = fact.qualifier.rpartition(".")
        for path in self.index.package_files("swift", module):
            if self.ctx.symbols(path).get(name):
                target = Target(path, name, "import")
                self._row(sc, fact, [path])
                sc.bind(fact.alias or fact.name, [target])
                self._edge(sc, fact, target)
                return
        self._row(sc, fact, None)

    def csharp_class(self, fqn: str) -> Target | None:
        namespace, _dot, _name = fqn.rpartition(".")
        for ns in (namespace, fqn):
            files = self.index.package_files("csharp", ns)
            self.ctx.ensure_symbols(files)
            for path in files:
                if self.ctx.symbols(path).get(fqn, TYPE_KINDS):
                    return Target(path, fqn, "import")
        return None

    def bind_csharp(self, sc: FileScope, fact: Fact) -> None:
        if fact.name == "*":
            files = self.index.package_files("csharp", fact.qualifier)
            if files:
                self._row(sc, fact, files)
                sc.add_wild(("package", "csharp", fact.qualifier), "wildcard",
                            [(p, fact.qualifier) for p in files])
                return
            target = self.csharp_class(fact.qualifier)  # using static A.B.C
            self._row(sc, fact, [target.path] if target else None)
            if target is not None:
                sc.add_wild(("file", target.path, target.qual), "wildcard",
                            [(target.path, target.qual)])
            return
        target = self.csharp_class(fact.qualifier)
        self._row(sc, fact, [target.path] if target else None)
        if target is not None:
            sc.bind(fact.alias or fact.name, [target])
            self._edge(sc, fact, target)

    def bind_php(self, sc: FileScope, fact: Fact) -> None:
        spec = fact.qualifier
        if spec.startswith((".", "/")) or spec.endswith(".php"):
            found = self.index.resolve_php_file(sc.path, spec)
            self._row(sc, fact, [found] if found else None)
            if found:
                sc.add_wild(("file", found, ""), "include", [(found, "")])
            return
        files = self.index.resolve_php_class(spec)
        if self._bind_first(sc, fact, files, TYPE_KINDS):
            return
        namespace = spec.rpartition("\\")[0]  # use function A\b; use const A\B
        nfiles = self.index.package_files("php", namespace)
        self.ctx.ensure_symbols(nfiles)
        if self._bind_first(sc, fact, nfiles):
            return
        self._row(sc, fact, files[:1] or None)

    def _bind_first(self, sc: FileScope, fact: Fact, paths: list[str],
                    kinds: frozenset[str] | None = None) -> bool:
        """Bind the import to the first of ``paths`` declaring its name (of ``kinds``);
        whether one does."""
        for path in paths:
            syms = self.ctx.symbols(path).get(fact.name, kinds)
            if syms:
                self._row(sc, fact, [path])
                target = Target(path, syms[0].qual, "import")
                sc.bind(fact.alias or fact.name, [target])
                self._edge(sc, fact, target)
                return True
        return False

    def bind_ruby(self, sc: FileScope, fact: Fact) -> None:
        found = self.index.resolve_ruby(sc.path, fact.qualifier)
        self._row(sc, fact, [found] if found else None)
        if not found:
            return
        sc.add_wild(("file", found, ""), "require", [(found, "")])
        for inner in self.ctx.facts(found).imports:  # what the required file requires
            nested = self.index.resolve_ruby(found, inner.qualifier)
            if nested and nested != sc.path and all(w.path != nested for w in sc.wild):
                sc.add_wild(("file", nested, ""), "require", [(nested, "")])

    def bind_c(self, sc: FileScope, fact: Fact) -> None:
        if fact.qualifier.startswith("ns:"):
            sc.namespaces.append(fact.qualifier[3:].replace("::", "."))
            return
        found = self.index.resolve_include(sc.path, fact.qualifier)
        self._row(sc, fact, [found] if found else None)
        if not found:
            return
        sc.add_wild(("file", found, ""), "include", [(found, "")])
        for inner in self.ctx.facts(found).imports:  # what the header includes, one level
            if inner.qualifier.startswith("ns:"):
                continue
            nested = self.index.resolve_include(found, inner.qualifier)
            if nested and nested != sc.path and all(w.path != nested for w in sc.wild):
                sc.add_wild(("file", nested, ""), "include", [(nested, "")])

    def rust_path(self, src: str, segs: list[str]) -> tuple[str, list[str]] | None:
        """(module file, remaining segments) of a Rust path used from ``src``."""
        index = self.index
        segs = [s for s in segs if s]
        if not segs:
            return None
        first = segs[0]
        current: str | None
        if first == "crate":
            current, segs = index.rust_crate_root(src), segs[1:]
        elif first == "self":
            current, segs = src, segs[1:]
        elif first == "super":
            current = src
            while segs and segs[0] == "super" and current is not None:
                current, segs = index.rust_parent_module(current), segs[1:]
        elif index.rust_crate(first):
            current, segs = index.rust_crate(first), segs[1:]
        else:
            current = index.rust_submodule(src, first)
            if current is None:
                root = index.rust_crate_root(src)
                current = index.rust_submodule(root, first) if root else None
            if current is None:
                return None
            segs = segs[1:]
        if current is None:
            return None
        while segs:
            nxt = index.rust_submodule(current, segs[0])
            if nxt is None:
                break
            current, segs = nxt, segs[1:]
        return current, segs

    def _rust_target(self, src: str, fact: Fact, depth: int = 0) -> Target | None:
        resolved = self.rust_path(src, fact.qualifier.split("::"))
        if resolved is None:
            return None
        path, rest = resolved
        if not rest:
            return Target(path, "", "module")
        qual = ".".join(rest)
        if self.ctx.symbols(path).get(qual):
            return Target(path, qual, "import")
        if len(rest) == 1:
            return self.export_target(path, rest[0], depth + 1)
        return None

    def bind_rust(self, sc: FileScope, fact: Fact) -> None:
        if fact.qualifier.startswith("mod:"):
            found = self.index.rust_submodule(sc.path, fact.name)
            self._row(sc, fact, [found] if found else None)
            if found:
                sc.bind(fact.name, [Target(found, "", "module")])
            return
        if fact.name == "*":
            resolved = self.rust_path(sc.path, fact.qualifier.split("::"))
            self._row(sc, fact, [resolved[0]] if resolved else None)
            if resolved is not None:
                path, rest = resolved
                sc.add_wild(("file", path, ".".join(rest)), "wildcard",
                            [(path, ".".join(rest))])
            return
        resolved = self.rust_path(sc.path, fact.qualifier.split("::"))
        self._row(sc, fact, [resolved[0]] if resolved else None)
        target = self._rust_target(sc.path, fact)
        if target is not None:
            sc.bind(local_name("rust", fact), [target])
            self._edge(sc, fact, target)


_BINDERS = {
    "python": ScopeBuilder.bind_python,
    "js": ScopeBuilder.bind_js,
    "go": ScopeBuilder.bind_go,
    "jvm": ScopeBuilder.bind_jvm,
    "csharp": ScopeBuilder.bind_csharp,
    "php": ScopeBuilder.bind_php,
    "ruby": ScopeBuilder.bind_ruby,
    "c": ScopeBuilder.bind_c,
    "rust": ScopeBuilder.bind_rust,
    "swift": ScopeBuilder.bind_swift,
}

