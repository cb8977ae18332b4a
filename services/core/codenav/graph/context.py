"""What resolution reads, loaded lazily and cached for one graph build.

A build resolves the references of some files (the *build set*); to do so it reads the
declarations, imports and typed variables of those files and of the files they reach. The
``Loader`` fetches them in batches from the database; ``Context`` caches them and builds
each file's ``FileScope`` on first use.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from codenav.graph.modules import C_FAMILY, ModuleIndex


class Sym(NamedTuple):
    name: str
    qual: str
    kind: str
    depth: int
    exported: bool
    line: int


class Fact(NamedTuple):
    """One row of ``refs``: a reference, import, typed variable or package line."""

    ord: int
    kind: str
    name: str
    qualifier: str
    alias: str
    line: int
    scope: str


class Target(NamedTuple):
    """What a name denotes: a declaration (``qual``) or a whole file (``qual == ''``)."""

    path: str
    qual: str
    how: str


SymRow = tuple[str, str, str, str, int, bool, int]
"""(path, name, qualname, kind, depth, exported, start_line)"""
FactRow = tuple[str, int, str, str, str, str, int, str]
"""(path, ord, kind, name, qualifier, alias, line, scope)"""
BaseRow = tuple[str, str, str, str]
"""(path, class qualname, base path, base qualname)"""


class Loader(Protocol):
    def symbols(self, paths: list[str]) -> Iterable[SymRow]: ...
    def facts(self, paths: list[str], kinds: tuple[str, ...]) -> Iterable[FactRow]: ...
    def references(self, paths: list[str], kinds: tuple[str, ...]) -> dict[str, list[Fact]]: ...
    def stored_bases(self, paths: list[str]) -> Iterable[BaseRow]: ...
    def definitions(self, names: list[str], languages: tuple[str, ...]) -> Iterable[SymRow]: ...


T = TypeVar("T")

CLASS_LIKE = frozenset({"class", "interface", "enum", "module"})
TYPE_KINDS = frozenset({"class", "interface", "enum", "type", "module"})
CALL_KINDS = frozenset({"function", "method", "constructor", "class", "enum", "type",
                        "macro", "property"})
HERITAGE_KINDS = frozenset({"class", "interface", "type", "module", "enum"})
FACT_KINDS = ("import", "reexport", "var", "extends", "implements", "decl", "package",
              "returns")


class SymbolTable:
    """One file's declarations by qualified name (top-level names have no dot)."""

    def __init__(self, path: str, language: str, package: str, syms: list[Sym]) -> None:
        self.path = path
        self.language = language
        self.by_qual: dict[str, list[Sym]] = defaultdict(list)
        for s in syms:
            self.by_qual[s.qual].append(s)
            if language == "php" and package and s.qual.startswith(package + "."):
                self.by_qual[s.qual[len(package) + 1:]].append(s)  # namespace { ... }

    def get(self, qual: str, kinds: frozenset[str] | None = None) -> list[Sym]:
        found = self.by_qual.get(qual)
        if not found:
            return []
        if kinds is not None:
            if len(found) == 1:  # most names: no new list when it is kept
                return found if found[0].kind in kinds else []
            return [s for s in found if s.kind in kinds]
        return found

    def kind(self, qual: str) -> str:
        found = self.by_qual.get(qual)
        return found[0].kind if found else ""

    def classes(self) -> list[Sym]:
        return [s for syms in self.by_qual.values() for s in syms if s.kind in CLASS_LIKE]


@dataclass
class FileFacts:
    path: str
    imports: list[Fact] = field(default_factory=list)
    variables: dict[tuple[str, str], list[Fact]] = field(default_factory=dict)
    """Typed variables of the file's top level and its classes (fields), by (scope, name)."""
    locals: dict[tuple[str, str], list[Fact]] | None = None
    """Typed variables of its functions and blocks: read when the file is resolved (or asked
    for), and let go after; other files follow fields, not locals."""
    heritage: dict[str, list[Fact]] = field(default_factory=dict)
    decls: set[str] = field(default_factory=set)
    returns: dict[str, str] = field(default_factory=dict)
    """Function qualname -> the type it declares it returns."""


class _PerFile(Generic[T]):
    """Per-file values of one build, read in batches by ``load`` (which answers for every
    path it is given) the first time a file is asked for."""

    def __init__(self, load: Callable[[list[str]], dict[str, T]]) -> None:
        self._load = load
        self._held: dict[str, T] = {}

    def __contains__(self, path: str) -> bool:
        return path in self._held

    def get(self, path: str) -> T:
        found = self._held.get(path)
        if found is None:
            self.ensure([path])
            found = self._held[path]
        return found

    def ensure(self, paths: Iterable[str]) -> None:
        wanted = [p for p in dict.fromkeys(paths) if p not in self._held]
        if wanted:
            self._held.update(self._load(wanted))


class Context:
    """Caches symbol tables, facts and stored inheritance for one build."""

    def __init__(self, index: ModuleIndex, loader: Loader, build_set: set[str]) -> None:
        self.index = index
        self.loader = loader
        self.build_set = build_set
        self._symbols = _PerFile(self._read_symbols)
        self._facts = _PerFile(self._read_facts)
        self._stored_bases: dict[str, dict[str, list[Target]]] = {}
        self._definitions: dict[str, list[tuple[str, Sym]]] = {}

    # --- symbols -------------------------------------------------------------------------
    def preload(self, paths: Iterable[str]) -> None:
        """Load symbols and facts of many files at once (a full build reads everything)."""
        wanted = [p for p in paths if p not in self._symbols and p in self.index.files]
        self._symbols.ensure(wanted)
        self._facts.ensure(wanted)

    def _read_symbols(self, paths: list[str]) -> dict[str, SymbolTable]:
        grouped: dict[str, list[Sym]] = {p: [] for p in paths}
        for path, name, qual, kind, depth, exported, line in self.loader.symbols(paths):
            grouped.setdefault(path, []).append(Sym(name, qual, kind, depth, exported, line))
        return {path: SymbolTable(path, self.index.language(path), self.index.package(path),
                                  syms) for path, syms in grouped.items()}

    def symbols(self, path: str) -> SymbolTable:
        return self._symbols.get(path)

    def ensure_symbols(self, paths: Iterable[str]) -> None:
        self._symbols.ensure(paths)

    # --- facts ---------------------------------------------------------------------------
    def _read_facts(self, paths: list[str]) -> dict[str, FileFacts]:
        grouped = {p: FileFacts(p) for p in paths}
        self._symbols.ensure(paths)
        for path, ord_, kind, name, qualifier, alias, line, scope in \
                self.loader.facts(paths, FACT_KINDS):
            facts = grouped.setdefault(path, FileFacts(path))
            if kind == "var" and self._local(path, scope):
                continue  # 84% of Apache Kafka's typed variables: read per batch
            fact = Fact(ord_, kind, name, qualifier, alias, line, scope)
            if kind in ("import", "reexport"):
                facts.imports.append(fact)
            elif kind == "var":
                facts.variables.setdefault((scope, name), []).append(fact)
            elif kind in ("extends", "implements"):
                facts.heritage.setdefault(scope, []).append(fact)
            elif kind == "decl":
                facts.decls.add(f"{scope}.{name}" if scope else name)
            elif kind == "returns":
                facts.returns.setdefault(scope, qualifier)
        return grouped

    def facts(self, path: str) -> FileFacts:
        return self._facts.get(path)

    def _local(self, path: str, scope: str) -> bool:
        return bool(scope) and self.symbols(path).kind(scope) not in CLASS_LIKE

    def variables(self, path: str, scope: str, name: str) -> list[Fact] | None:
        """The typed variables ``name`` declared directly in ``scope`` of the file."""
        facts = self.facts(path)
        if not self._local(path, scope):
            return facts.variables.get((scope, name))
        if facts.locals is None:
            self.ensure_locals([path])
        return facts.locals.get((scope, name)) if facts.locals is not None else None

    def ensure_locals(self, paths: Iterable[str]) -> None:
        """Read the locals of ``paths`` (a batch about to be resolved) in one statement."""
        wanted = [p for p in paths if p in self.index.files and self.facts(p).locals is None]
        if not wanted:
            return
        found: dict[str, dict[tuple[str, str], list[Fact]]] = {p: {} for p in wanted}
        for path, ord_, kind, name, qualifier, alias, line, scope in \
                self.loader.facts(wanted, ("var",)):
            if self._local(path, scope):
                found[path].setdefault((scope, name), []).append(
                    Fact(ord_, kind, name, qualifier, alias, line, scope))
        for path, held in found.items():
            for facts in held.values():
                if len(facts) > 1:  # source order, whatever order the rows came in
                    facts.sort(key=lambda fact: fact.ord)
            self.facts(path).locals = held

    def drop_locals(self, paths: Iterable[str]) -> None:
        for path in paths:
            if path in self._facts:
                self.facts(path).locals = None

    def ensure_facts(self, paths: Iterable[str]) -> None:
        self._facts.ensure(paths)

    # --- inheritance stored by an earlier build --------------------------------------------
    def stored_bases(self, path: str) -> dict[str, list[Target]]:
        found = self._stored_bases.get(path)
        if found is None:
            found = {}
            for _path, cls, base_path, base_qual in self.loader.stored_bases([path]):
                found.setdefault(cls, []).append(Target(base_path, base_qual, "stored"))
            self._stored_bases[path] = found
        return found

    # --- C/C++ definitions by name (external linkage) --------------------------------------
    def definitions(self, qual: str) -> list[tuple[str, Sym]]:
        """Non-static C/C++ definitions with this qualified name, anywhere in the repo."""
        found = self._definitions.get(qual)
        if found is None:
            name = qual.rsplit(".", 1)[-1]
            rows = self.loader.definitions([name], tuple(sorted(C_FAMILY)))
            found = [(p, Sym(n, q, k, d, e, ln)) for p, n, q, k, d, e, ln in rows
                     if q == qual or q.endswith("." + qual)]
            self._definitions[qual] = found
        return found
