"""Resolving references to declarations, the way each language looks names up.

A bare name is looked up in the enclosing declarations (class members where the language
has an implicit ``this``), then the file's top level, then its imports, then what its
wildcard imports, package, namespace or includes make visible; in C and C++ a function
declared by an included prototype resolves to its one non-static definition (linkage).

A qualified name ``q.name`` first resolves ``q``: ``this``/``super`` (the enclosing class
and its bases), a typed variable or field (``x: Foo`` -> ``Foo``), an imported module or
package alias, a class (static members), a Python dotted module, a fully qualified name;
then ``name`` is looked up as a member, through the base classes (resolved across files).

One candidate makes a verified edge, with ``how`` naming the rule that proved it. Several
candidates at the same step make potential edges (``ambiguous``). No candidate: no edge;
the reference stays a *potential* match for any declaration of that name, found at query
time with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from codenav.graph.context import (
    CALL_KINDS,
    CLASS_LIKE,
    HERITAGE_KINDS,
    TYPE_KINDS,
    Context,
    Fact,
    Sym,
    SymbolTable,
    Target,
)
from codenav.graph.modules import C_FAMILY, JS, JVM
from codenav.graph.scope import EdgeRow, FileScope, ScopeBuilder
from codenav.lang import LANGUAGES

IMPLICIT_THIS = frozenset(language.name for language in LANGUAGES if language.implicit_this)
"""Languages where a bare name inside a class body can be a member of that class."""
MAX_BASES = 8
MAX_CANDIDATES = 5
MAX_NESTING = 12
MAX_STEPS = 2000
"""Qualifier steps one reference may take. Type chains fan out (several owners, several
typed variables each), so depth alone does not bound the work: sympy has references whose
chains took hours. A reference out of steps stays unresolved (a potential edge)."""
"""Qualifiers resolved inside qualifiers (a field's type's field...) stop this deep."""
_CLASSES = frozenset({"class", "interface", "enum"})
_Members = tuple[tuple[str, str, str], ...]
"""Where a member was found: (path, qualname, how), cached per class and name."""


def _parent(qual: str) -> str:
    return qual.rpartition(".")[0]


@lru_cache(maxsize=65536)
def _chain(scope: str) -> tuple[str, ...]:
    """``a.b.c`` -> (``a.b.c``, ``a.b``, ``a``)."""
    out = []
    while scope:
        out.append(scope)
        scope = _parent(scope)
    return tuple(out)


def _unique(targets: Iterable[Target]) -> list[Target]:
    if isinstance(targets, list) and len(targets) < 2:
        return targets
    seen: dict[tuple[str, str], Target] = {}
    for t in targets:
        seen.setdefault((t.path, t.qual), t)
    return list(seen.values())


class _Group:
    """Names declared by a group of files: directly under each member's prefix, and (for
    namespace lookups, built on first use) by qualified name."""

    def __init__(self, ctx: Context, members: tuple[tuple[str, str], ...]) -> None:
        self.ctx = ctx
        self.members = members
        self.names: dict[str, list[tuple[str, Sym]]] = {}
        self._quals: dict[str, list[tuple[str, Sym]]] | None = None
        for path, prefix in members:
            table = ctx.symbols(path)
            start = len(prefix) + 1 if prefix else 0
            for qual, syms in table.by_qual.items():
                if prefix:
                    if not qual.startswith(prefix) or len(qual) <= start or \
                            qual[start - 1] != "." or "." in qual[start:]:
                        continue
                elif "." in qual:
                    continue
                self.names.setdefault(qual[start:], []).append((path, syms[0]))

    def quals(self) -> dict[str, list[tuple[str, Sym]]]:
        if self._quals is None:
            self._quals = {}
            for path, _prefix in self.members:
                for qual, syms in self.ctx.symbols(path).by_qual.items():
                    self._quals.setdefault(qual, []).append((path, syms[0]))
        return self._quals


class Resolver:
    def __init__(self, ctx: Context, scopes: ScopeBuilder) -> None:
        self.ctx = ctx
        self.scopes = scopes
        self.index = ctx.index
        self._bases: dict[tuple[str, str], list[Target]] = {}
        self._in_bases: set[tuple[str, str]] = set()
        self._depth = 0
        self._steps = MAX_STEPS
        self._groups: dict[tuple[str, ...], _Group] = {}
        self._var_types: dict[tuple[str, str, str], list[Target]] = {}
        self._member_paths: dict[str, list[str]] = {}
        self._members: dict[tuple[str, str, str, frozenset[str]], _Members] = {}

    # --- edges of one file -------------------------------------------------------------------
    def edges(self, path: str, refs: list[Fact]) -> list[EdgeRow]:
        """Edges for the heritage facts and the call/type references of one file."""
        sc = self.scopes.scope(path)
        table = self.ctx.symbols(path)
        self._var_types.clear()  # keyed by this file's scopes: no use for the next file
        out: list[EdgeRow] = list(sc.import_edges)
        for cls, facts in self.ctx.facts(path).heritage.items():
            for fact in facts:
                out += self._edge_rows(path, fact, self._heritage(sc, table, cls, fact), table)
        memo: dict[tuple[str, str, str, str], list[Target]] = {}
        for fact in refs:
            if fact.kind not in ("call", "type"):
                continue
            key = (fact.kind, fact.name, fact.qualifier, fact.scope)
            found = memo.get(key)
            if found is None:
                found = memo[key] = self.resolve(sc, table, fact)
            out += self._edge_rows(path, fact, found, table)
        return out

    def _edge_rows(self, path: str, fact: Fact, found: list[Target],
                   table: SymbolTable) -> list[EdgeRow]:
        found = [t for t in _unique(found) if not (t.path == path and t.qual == fact.scope
                                                    and fact.kind != "call")]
        if not found:
            return []
        kind = fact.kind
        if kind in ("extends", "implements"):
            kind = self._heritage_kind(fact, found[0], table)
        if len(found) == 1:
            t = found[0]
            return [(path, fact.ord, fact.line, fact.scope, kind, t.path, t.qual, True, t.how)]
        reason = f"ambiguous: {len(found)} declarations visible ({found[0].how})"
        return [(path, fact.ord, fact.line, fact.scope, kind, t.path, t.qual, False, reason)
                for t in found[:MAX_CANDIDATES]]

    def _heritage_kind(self, fact: Fact, target: Target, table: SymbolTable) -> str:
        """Where the syntax does not say (C# base lists, Kotlin supertypes), the base's kind
        does: an interface is implemented (or extended, by an interface)."""
        base_kind = self.ctx.symbols(target.path).kind(target.qual)
        if base_kind == "interface":
            return "extends" if table.kind(fact.scope) == "interface" else "implements"
        if fact.kind == "implements" and base_kind == "class" and table.language == "kotlin":
            return "extends"
        return fact.kind

    # --- inheritance -----------------------------------------------------------------------
    def bases(self, path: str, cls: str) -> list[Target]:
        """The resolved base classes, interfaces and mixins of class ``cls`` in ``path``."""
        key = (path, cls)
        found = self._bases.get(key)
        if found is not None:
            return found
        if key in self._in_bases:
            return []
        if path not in self.ctx.build_set:
            found = self.ctx.stored_bases(path).get(cls, [])
        else:
            self._in_bases.add(key)
            try:
                sc = self.scopes.scope(path)
                table = self.ctx.symbols(path)
                found = []
                for fact in self.ctx.facts(path).heritage.get(cls, []):
                    hits = self._heritage(sc, table, cls, fact)
                    if len(hits) == 1:
                        found.append(hits[0])
            finally:
                self._in_bases.discard(key)
        self._bases[key] = found
        return found

    def _heritage(self, sc: FileScope, table: SymbolTable, cls: str, fact: Fact) -> list[Target]:
        """A base type name is resolved in the scope around the class, not inside it."""
        outer = Fact(fact.ord, fact.kind, fact.name, fact.qualifier, fact.alias, fact.line,
                     _parent(cls))
        hits = self.resolve(sc, table, outer, HERITAGE_KINDS)
        return [t for t in hits if not (t.path == sc.path and t.qual == cls)]

    # --- one reference ----------------------------------------------------------------------
    def resolve(self, sc: FileScope, table: SymbolTable, fact: Fact,
                kinds: frozenset[str] | None = None) -> list[Target]:
        if kinds is None:
            kinds = TYPE_KINDS if fact.kind == "type" else CALL_KINDS
        q = fact.qualifier
        if not q:
            return self.bare(sc, table, fact.name, fact.scope, kinds)
        if q == "<expr>":
            return []
        owners = self.qualifier(sc, table, q, fact.scope)
        out: list[Target] = []
        for owner in owners:
            out += self.lookup(owner, fact.name, kinds, owner.how)
            if out and len(owners) > 1 and owner.how == "module":
                break  # a Go package spans files: the first file declaring it
        return _unique(out)

    def bare(self, sc: FileScope, table: SymbolTable, name: str, scope: str,
             kinds: frozenset[str]) -> list[Target]:
        lang = sc.language
        path = sc.path
        for prefix in _chain(scope):
            kind = table.kind(prefix)
            if kind in _CLASSES:
                if lang in IMPLICIT_THIS:
                    hits = self.member(Target(path, prefix, "member"), name, kinds)
                    if hits:
                        return hits
                continue
            if kind:
                nested = table.get(f"{prefix}.{name}", kinds)
                if nested:
                    return [Target(path, nested[0].qual, "local")]
            elif lang in IMPLICIT_THIS and prefix != scope:
                owner = self.find_type(sc, table, prefix)
                if owner is not None:
                    hits = self.member(Target(owner.path, owner.qual, "member"), name, kinds)
                    if hits:
                        return hits
        top = table.get(name, kinds)
        if top:
            return [Target(path, top[0].qual, "local")]
        bound = sc.names.get(name)
        if bound:
            out = []
            for target in bound:
                if not target.qual:
                    if lang in JS:  # a CommonJS module used as a value: its default export
                        found = self.scopes.export_target(target.path, "default")
                        if found is not None:
                            out.append(Target(found.path, found.qual, "import"))
                    continue
                if self.ctx.symbols(target.path).get(target.qual, kinds):
                    out.append(Target(target.path, target.qual, target.how))
            if out:
                return _unique(out)
        hits_wild = self._wild(sc, table, name, scope, kinds)
        if hits_wild:
            return hits_wild
        if lang in C_FAMILY:
            return self._linkage(sc, name)
        return []

    def _namespaces(self, sc: FileScope, table: SymbolTable, scope: str) -> list[str]:
        """Namespace and module prefixes around ``scope`` (C#, C++, Ruby, Rust, TS)."""
        out = [p for p in _chain(scope) if table.kind(p) == "module"]
        return out + sc.namespaces

    def _group(self, key: tuple[str, ...], members: tuple[tuple[str, str], ...]) -> _Group:
        """The names a group of files (a package, a wildcard import) declares, indexed once
        and shared by every file that sees the group."""
        found = self._groups.get(key)
        if found is None:
            self.ctx.ensure_symbols(p for p, _prefix in members)
            found = _Group(self.ctx, members)
            self._groups[key] = found
        return found

    def _wild(self, sc: FileScope, table: SymbolTable, name: str, scope: str,
              kinds: frozenset[str]) -> list[Target]:
        if not sc.groups and not sc.namespaces:
            return []
        namespaces = self._namespaces(sc, table, scope)
        for ns in sc.namespaces:  # using namespace X: X's names in this file too
            hits = table.get(f"{ns}.{name}", kinds)
            if hits:
                return [Target(sc.path, hits[0].qual, "wildcard")]
        out: list[Target] = []
        for key, how, members in sc.groups:
            group = self._group(key, members)
            for path, sym in group.names.get(name, ()):
                if path != sc.path and sym.kind in kinds:
                    out.append(Target(path, sym.qual, how))
            for ns in namespaces:
                for path, sym in group.quals().get(f"{ns}.{name}", ()):
                    if path != sc.path and sym.kind in kinds:
                        out.append(Target(path, sym.qual, how))
        return _unique(out)

    def _linkage(self, sc: FileScope, qual: str) -> list[Target]:
        """A C/C++ function declared by a prototype here or in an included header, defined
        (not static) in exactly one place."""
        declared = qual in self.ctx.facts(sc.path).decls or any(
            qual in self.ctx.facts(w.path).decls for w in sc.wild if w.how == "include")
        if not declared:
            return []
        defs = [(p, s) for p, s in self.ctx.definitions(qual)
                if s.exported and s.kind in ("function", "method", "constructor")]
        return _unique(Target(p, s.qual, "linkage") for p, s in defs)

    # --- qualifiers --------------------------------------------------------------------------
    def enclosing_class(self, sc: FileScope, table: SymbolTable, scope: str) -> Target | None:
        for prefix in _chain(scope):
            kind = table.kind(prefix)
            if kind in CLASS_LIKE:
                return Target(sc.path, prefix, "this")
            if not kind and prefix != scope:
                found = self.find_type(sc, table, prefix)
                if found is not None:
                    return Target(found.path, found.qual, "this")
        return None

    def find_type(self, sc: FileScope, table: SymbolTable, qual: str) -> Target | None:
        """A type named by the owner part of a declaration (``Cache`` of Go's
        ``func (c *Cache) Get``, ``la.Dense`` of C++'s ``Dense::n``) declared elsewhere."""
        name = qual.rsplit(".", 1)[-1]
        if table.get(qual, TYPE_KINDS):
            return Target(sc.path, qual, "local")
        for target in sc.names.get(name, []):
            if target.qual and self.ctx.symbols(target.path).get(target.qual, TYPE_KINDS):
                return target
        for key, how, members in sc.groups:
            group = self._group(key, members)
            for path, sym in list(group.quals().get(qual, ())) + list(group.names.get(name, ())):
                if sym.kind in TYPE_KINDS:
                    return Target(path, sym.qual, how)
        return None

    def qualifier(self, sc: FileScope, table: SymbolTable, q: str, scope: str,
                  typing: bool = False) -> list[Target]:
        """What the qualifier of a reference denotes: classes (members follow) or modules
        (``qual == ''``: top-level names follow). ``typing``: ``q`` is the path of a type
        name, so its first segment is a module or class, never a variable."""
        if self._depth == 0:  # a new reference (or a new chain of it): a fresh budget
            self._steps = MAX_STEPS
        self._steps -= 1
        self._depth += 1
        try:
            if self._depth > MAX_NESTING or self._steps < 0:
                return []
            return self._qualifier(sc, table, q, scope, typing)
        finally:
            self._depth -= 1

    def _qualifier(self, sc: FileScope, table: SymbolTable, q: str, scope: str,
                   typing: bool) -> list[Target]:
        if sc.language == "rust" and "::" in q:
            return self._rust_qualifier(sc, table, q, scope)
        segs = q.split(".")
        first = segs[0]
        owners: list[Target] = []
        rest = segs[1:]
        if first.endswith("()"):  # foo().bar, Foo().bar: what the call returns
            owners = self._call_type(sc, table, first[:-2], scope)
        elif first == "this":
            cls = self.enclosing_class(sc, table, scope)
            owners = [cls] if cls is not None else []
        elif first == "super":
            cls = self.enclosing_class(sc, table, scope)
            owners = [Target(b.path, b.qual, "super") for b in
                      self.bases(cls.path, cls.qual)] if cls is not None else []
        else:
            for k in range(len(segs), 0, -1):
                dotted = ".".join(segs[:k])
                if k > 1 and dotted in sc.dotted:
                    owners, rest = list(sc.dotted[dotted]), segs[k:]
                    break
            else:
                owners = self.name_owner(sc, table, first, scope, typing)
                if not owners and len(segs) > 1:
                    owners, rest = self._qualified_name(sc, segs)
        for seg in rest:
            if not owners:
                break
            owners = self.step(owners, seg)
        return owners

    def _qualified_name(self, sc: FileScope, segs: list[str]) -> tuple[list[Target], list[str]]:
        """A fully qualified qualifier: ``org.a.B`` (Java), ``A.B.C`` (C#), a PHP
        namespace of functions."""
        lang = sc.language
        for k in range(len(segs), 1, -1):
            dotted = ".".join(segs[:k])
            if lang in JVM:
                path, qual = self.scopes.jvm_class(lang, dotted)
                if path and qual and qual.rsplit(".", 1)[-1] == segs[k - 1]:
                    return [Target(path, qual, "qualified")], segs[k:]
            elif lang == "csharp":
                found = self.scopes.csharp_class(dotted)
                if found is not None:
                    return [Target(found.path, found.qual, "qualified")], segs[k:]
            elif lang == "php":
                files = self.index.package_files("php", dotted.replace(".", "\\"))
                if files:
                    return [Target(p, "", "qualified") for p in files], segs[k:]
                found_files = self.index.resolve_php_class(dotted.replace(".", "\\"))
                for path in found_files:
                    syms = self.ctx.symbols(path).get(segs[k - 1], TYPE_KINDS)
                    if syms:
                        return [Target(path, syms[0].qual, "qualified")], segs[k:]
        return [], []

    def name_owner(self, sc: FileScope, table: SymbolTable, name: str, scope: str,
                   typing: bool = False) -> list[Target]:
        """What a simple identifier used as a receiver denotes."""
        if not typing:
            typed = self.variable_type(sc, table, name, scope)
            if typed:
                return typed
        bound = sc.names.get(name)
        if bound:
            out = []
            for t in bound:
                if not t.qual:
                    out.append(Target(t.path, "", "module"))
                elif self.ctx.symbols(t.path).get(t.qual, TYPE_KINDS):
                    out.append(Target(t.path, t.qual, "static"))
            if out:
                return out
        hits = self.bare(sc, table, name, scope, TYPE_KINDS)
        return [Target(t.path, t.qual, "static") for t in hits]

    def variable_type(self, sc: FileScope, table: SymbolTable, name: str,
                      scope: str) -> list[Target]:
        """The class of a typed local, parameter or (implicit-this) field."""
        key = (sc.path, name, scope)
        found = self._var_types.get(key)
        if found is None:
            found = self._var_types[key] = self._variable_type(sc, table, name, scope)
        return found

    def _variable_type(self, sc: FileScope, table: SymbolTable, name: str,
                       scope: str) -> list[Target]:
        implicit = sc.language in IMPLICIT_THIS
        for prefix in [*_chain(scope), ""]:
            if prefix and not implicit and table.kind(prefix) in CLASS_LIKE:
                continue  # Python/JS/Go/Rust/PHP: fields need self./this.
            found = self.ctx.variables(sc.path, prefix, name)
            if found:
                for var in found:
                    typed = self.type_of(sc, table, var)
                    if typed:
                        return typed
                return []
        if implicit:  # a field inherited from a base class (own fields are in the chain)
            cls = self.enclosing_class(sc, table, scope)
            if cls is not None:
                return self.field_type(cls, name, inherited_only=cls.path == sc.path)
        return []

    def type_of(self, sc: FileScope, table: SymbolTable, var: Fact) -> list[Target]:
        typ = var.qualifier
        if not typ:
            return []
        if var.alias == "call":
            return self._call_type(sc, table, typ, var.scope)
        if sc.language == "rust" and "::" in typ:
            owner, _sep, last = typ.rpartition("::")
            owners = self._rust_qualifier(sc, table, owner, var.scope)
            hits = [t for o in owners for t in self.lookup(o, last, TYPE_KINDS, "receiver")]
        elif "." in typ:
            owner, _dot, last = typ.rpartition(".")
            owners = self.qualifier(sc, table, owner, var.scope, typing=True)
            hits = [t for o in owners for t in self.lookup(o, last, TYPE_KINDS, "receiver")]
        else:
            hits = self.bare(sc, table, typ, var.scope, TYPE_KINDS)
        out = []
        for t in _unique(hits):
            if self.ctx.symbols(t.path).kind(t.qual) in TYPE_KINDS:
                out.append(Target(t.path, t.qual, "receiver"))
        return out

    def _call_type(self, sc: FileScope, table: SymbolTable, callee: str,
                   scope: str) -> list[Target]:
        """What a call returns: an instance of the class it constructs, or the type its
        function declares it returns (resolved in that function's own file)."""
        if sc.language == "rust" and "::" in callee:
            qualifier, _sep, name = callee.rpartition("::")
        else:
            qualifier, _dot, name = callee.rpartition(".")
        hits = self.resolve(sc, table, Fact(0, "call", name, qualifier, "", 0, scope))
        if len(hits) != 1:
            return []
        return self._returned(hits[0])

    def _returned(self, target: Target) -> list[Target]:
        """What calling ``target`` gives: an instance of it (a class), or the type its
        declaration says it returns, resolved in its own file."""
        other = self.ctx.symbols(target.path)
        if other.kind(target.qual) in TYPE_KINDS:
            return [Target(target.path, target.qual, "receiver")]
        returned = self.ctx.facts(target.path).returns.get(target.qual)
        if not returned:
            return []
        if returned in ("Self", "self", "static", "this"):
            owner = _parent(target.qual)
            return [Target(target.path, owner, "receiver")] if owner else []
        where = self.scopes.scope(target.path)
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                return []
            return self.type_of(where, other, Fact(0, "var", "", returned, "", 0, target.qual))
        finally:
            self._depth -= 1

    def field_type(self, cls: Target, name: str, inherited_only: bool = False,
                   depth: int = 0) -> list[Target]:
        """The class of field ``name`` of class ``cls`` (or one of its bases)."""
        if depth > MAX_BASES:
            return []
        if not inherited_only:
            var = self.ctx.variables(cls.path, cls.qual, name)
            if var:
                sc = self.scopes.scope(cls.path)
                table = self.ctx.symbols(cls.path)
                for v in var:
                    typed = self.type_of(sc, table, v)
                    if typed:
                        return typed
                return []
        for base in self.bases(cls.path, cls.qual):
            typed = self.field_type(base, name, False, depth + 1)
            if typed:
                return typed
        return []

    def step(self, owners: list[Target], seg: str) -> list[Target]:
        """From ``owner`` to ``owner.seg``: a nested class, a module's class or submodule,
        a field's type, or (``seg()``) what a method returns."""
        out: list[Target] = []
        if seg.endswith("()"):
            for o in owners:
                called = self.lookup(o, seg[:-2], CALL_KINDS, o.how)
                if len(called) == 1:
                    out += self._returned(called[0])
            return _unique(out)
        for o in owners:
            table = self.ctx.symbols(o.path)
            if not o.qual:
                hits = table.get(seg, TYPE_KINDS)
                if hits:
                    out.append(Target(o.path, hits[0].qual, o.how))
                    continue
                if self.index.language(o.path) == "python":
                    sub = self.index.resolve_python(o.path, "." + seg) if \
                        o.path.rsplit("/", 1)[-1].startswith("__init__.") else None
                    if sub:
                        out.append(Target(sub, "", o.how))
                        continue
                found = self.scopes.export_target(o.path, seg)
                if found is not None:
                    out.append(Target(found.path, found.qual, o.how))
                continue
            hits = table.get(f"{o.qual}.{seg}", TYPE_KINDS)
            if hits:
                out.append(Target(o.path, hits[0].qual, o.how))
                continue
            out += self.field_type(Target(o.path, o.qual, o.how), seg)
        return _unique(out)

    def _rust_qualifier(self, sc: FileScope, table: SymbolTable, q: str,
                        scope: str) -> list[Target]:
        segs = q.split("::")
        first = segs[0]
        if first.endswith("()"):
            owners, rest = self._call_type(sc, table, first[:-2], scope), segs[1:]
        elif first == "this":
            cls = self.enclosing_class(sc, table, scope)
            owners = [cls] if cls is not None else []
            rest = segs[1:]
        elif first in sc.names:
            owners = [Target(t.path, t.qual, "module" if not t.qual else "static")
                      for t in sc.names[first]]
            rest = segs[1:]
        else:
            resolved = self.scopes.rust_path(sc.path, segs)
            if resolved is not None and resolved[0] != sc.path:
                owners, rest = [Target(resolved[0], "", "module")], resolved[1]
            else:
                hits = self.bare(sc, table, first, scope, TYPE_KINDS)
                owners = [Target(t.path, t.qual, "static") for t in hits]
                rest = segs[1:]
        for seg in rest:
            if not owners:
                break
            owners = self.step(owners, seg)
        return owners

    # --- members -----------------------------------------------------------------------------
    def lookup(self, owner: Target, name: str, kinds: frozenset[str], how: str) -> list[Target]:
        if not owner.qual:  # a module: its top-level names, or what it re-exports
            table = self.ctx.symbols(owner.path)
            hits = table.get(name, kinds)
            if hits:
                return [Target(owner.path, hits[0].qual, how)]
            found = self.scopes.export_target(owner.path, name)
            if found is not None and found.qual and \
                    self.ctx.symbols(found.path).get(found.qual, kinds):
                return [Target(found.path, found.qual, how)]
            return []
        return self.member(Target(owner.path, owner.qual, how), name, kinds)

    def _member_files(self, owner: Target) -> list[str]:
        """Where members of a type can be declared: its file; for Go its package; for Rust
        the impl blocks in its directory."""
        found = self._member_paths.get(owner.path)
        if found is None:
            found = self._member_paths[owner.path] = self._member_files_of(owner)
        return found

    def _member_files_of(self, owner: Target) -> list[str]:
        lang = self.index.language(owner.path)
        if lang == "go":
            directory = owner.path.rpartition("/")[0]
            package = self.index.package(owner.path)
            return [owner.path] + [p for p in self.index.dirs.get(directory, [])
                                   if p != owner.path and p.endswith(".go") and
                                   self.index.package(p) == package]
        if lang == "rust":
            directory = owner.path.rpartition("/")[0]
            return [owner.path] + [p for p in self.index.dirs.get(directory, [])
                                   if p != owner.path and p.endswith(".rs")]
        return [owner.path]

    def member(self, owner: Target, name: str, kinds: frozenset[str]) -> list[Target]:
        """Member ``name`` of class ``owner``, or inherited from one of its bases."""
        key = (owner.path, owner.qual, name, kinds)
        found = self._members.get(key)
        if found is None:
            found = self._members[key] = self._member(owner.path, owner.qual, name, kinds, 0,
                                                      set())
        return [Target(p, qq, owner.how if how == "own" else how) for p, qq, how in found]

    def _member(self, path: str, cls: str, name: str, kinds: frozenset[str], depth: int,
                seen: set[tuple[str, str]]) -> _Members:
        if depth > MAX_BASES or (path, cls) in seen:
            return ()
        seen.add((path, cls))
        qual = f"{cls}.{name}"
        files = self._member_files(Target(path, cls, ""))
        if len(files) > 1:
            self.ctx.ensure_symbols(files)
        for where in files:
            hits = self.ctx.symbols(where).get(qual, kinds)
            if hits:
                return ((where, hits[0].qual, "own" if depth == 0 else "inherited"),)
        if self.index.language(path) in C_FAMILY and qual in self.ctx.facts(path).decls:
            defs = [(p, s.qual, "linkage") for p, s in self.ctx.definitions(qual)
                    if s.kind in ("function", "method", "constructor")]
            if defs:
                return tuple(dict.fromkeys(defs))
        for base in self.bases(path, cls):
            found = self._member(base.path, base.qual, name, kinds, depth + 1, seen)
            if found:
                return tuple((p, qq, "inherited" if how != "linkage" else how)
                             for p, qq, how in found)
        return ()  # the one empty tuple: Apache Kafka caches 160,000 misses
