"""Per-content graph facts: what a file references, imports and declares as its package.

``extract`` runs once per content at parse time (in the parser processes) and returns rows
``(kind, name, qualifier, alias, line, scope)`` stored in ``refs``, keyed by content like
chunks, so an unchanged file is never looked at again. Kinds:

    call, type, extends, implements   references that become graph edges
    var                               a typed variable, parameter or field: ``name`` has
                                      type ``qualifier`` (alias ``call``: the class or the
                                      return type of that callee); resolves ``x.method()``
    returns                           the declared return type of function ``scope``
    import, reexport                  ``qualifier`` is the module as written, ``name`` the
                                      imported member ('' the module, '*' everything),
                                      ``alias`` the local name when renamed
    package                           the file's package or namespace declaration
    decl                              a C/C++ prototype (declared here, defined elsewhere)

``scope`` is the qualified name of the innermost declaration around the line ('' at file
level). Qualifiers are normalised: ``.`` separators (Rust paths keep ``::``), ``this``
for self/this/$this/Self, ``super`` for super/base/parent, ``<expr>`` for anything that is
not a plain dotted name (a call result, an index).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from typing import Any

from tree_sitter import Node, Query, QueryCursor

from codenav import lang
from codenav.graph import bindings as import_rules
from codenav.graph.patterns import PATTERNS
from codenav.lang import STRUCTURED
from codenav.parse.model import Symbol

log = logging.getLogger("codenav.graph")

Row = tuple[str, str, str, str, int, str]
"""(kind, name, qualifier, alias, line, scope)"""

MAX_REFS = 50_000
"""A file with more references than this keeps the first ones (generated code)."""
EDGE_KINDS = ("call", "type", "extends", "implements")
CLASS_KINDS = frozenset({"class", "interface", "enum", "module"})

_SCOPED_TYPES = frozenset({"scoped_type_identifier", "nested_type_identifier", "qualified_type",
                           "user_type", "qualified_name", "scope_resolution",
                           "qualified_identifier", "namespace_name"})
_DECLARING = frozenset({
    "class_declaration", "interface_declaration", "type_alias_declaration", "enum_declaration",
    "abstract_class_declaration", "type_spec", "type_alias", "struct_item", "enum_item",
    "trait_item", "type_item", "union_item", "struct_specifier", "class_specifier",
    "enum_specifier", "union_specifier", "type_definition", "object_declaration",
    "alias_declaration", "record_declaration", "struct_declaration", "delegate_declaration",
    "concept_definition", "type_parameter"})
_PRIORITY = {"extends": 0, "implements": 0, "new": 1, "call": 2, "super": 2, "decl": 2,
             "bare": 3, "type": 3}
_WS = re.compile(r"\s+")
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_TYPE_PATH = re.compile(r"[A-Za-z_$\\][\w$]*(?:(?:\.|::|\\)[A-Za-z_$][\w$]*)*")
_TYPE_PREFIX = re.compile(
    r"^(?:(?:const|mut|final|readonly|volatile|struct|class|enum|union|typename|dyn|impl|"
    r"ref|out|in|params|unsigned|signed|'\w+)\s+|[&*?^]\s*|\.\.\.\s*)+")
_WRAPPERS = frozenset({"Optional", "Box", "Rc", "Arc", "RefCell", "Cell", "unique_ptr",
                       "shared_ptr", "weak_ptr", "Ref", "RefMut", "Weak", "Nullable",
                       "Lazy", "Provider", "Supplier", "ClassVar", "Final", "Annotated",
                       "Type", "type"})
_THIS = frozenset({"this", "self", "$this", "Self", "static", "cls", "me"})
_SUPER = frozenset({"super", "base", "parent", "super()"})
_NO_TYPE = frozenset({"var", "val", "let", "auto", "None", "void", "Any", "any", "object",
                      "dynamic", "unknown"})


_ROLE_ORDER = ("import", "var.name", "field.name", "ret.name", "tparam", "local", "extends",
               "implements", "new", "call", "decl", "super", "bare", "type")


_COMPILED: set[str] = set()


@cache
def _query(language: str) -> tuple[Query, tuple[str, ...]]:
    """The language's reference and import patterns as one query, and each pattern's role
    (its main capture), so a match is dispatched without probing its captures."""
    from tree_sitter_language_pack import get_language

    source = PATTERNS[language] + "\n" + import_rules.patterns(language)
    query = Query(get_language(STRUCTURED[language]), source)  # type: ignore[arg-type]
    data = source.encode("utf-8")
    roles = []
    for i in range(query.pattern_count):
        text = data[query.start_byte_for_pattern(i):query.end_byte_for_pattern(i)].decode()
        names = set(re.findall(r"@([\w.]+)", text))
        role = next((r for r in _ROLE_ORDER if r in names or
                     (r == "import" and any(n.startswith("import.") for n in names))), "")
        roles.append(role)
    _COMPILED.add(language)
    return query, tuple(roles)


def preload_queries(languages: Iterable[str]) -> None:
    """Compile the patterns of ``languages`` once, before forking parser processes. All 14
    take 0.5 s (and read 30 MB of grammar tables); one 3-134 ms."""
    for language in languages:
        if language in PATTERNS:
            _query(language)


def compiled_queries() -> set[str]:
    """The languages whose patterns this process has compiled (or inherited)."""
    return set(_COMPILED)


class _Enclosing:
    """The innermost declaration around each line, and the class around a declaration."""

    def __init__(self, symbols: Sequence[Symbol], line_count: int) -> None:
        self.kinds = {s.qualname: s.kind for s in symbols}
        self.by_line: list[str] = [""] * (line_count + 2)
        for s in sorted(symbols, key=lambda s: (s.depth, s.start_line)):
            first = max(1, s.start_line)
            last = min(s.end_line, line_count + 1)
            if last >= first:
                self.by_line[first:last + 1] = [s.qualname] * (last - first + 1)

    def at(self, line: int) -> str:
        return self.by_line[line] if 0 <= line < len(self.by_line) else ""

    def class_of(self, scope: str) -> str:
        """The nearest enclosing class-like declaration of ``scope`` (itself included)."""
        while scope:
            if self.kinds.get(scope) in CLASS_KINDS:
                return scope
            scope = scope.rpartition(".")[0]
        return ""


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _strip_generics(text: str) -> str:
    out = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


_CALL_SYNTAX = re.compile(r"""[()\[\]{}"'`]""")
"""The characters ``_collapse_calls`` acts on; it copies the text between them in slices."""


def _collapse_calls(text: str) -> str | None:
    """``a.find(x, f(y)).b`` -> ``a.find().b``: call arguments dropped, so a chain of calls
    stays a path the resolver can follow through return types. None for an index
    expression or unbalanced text. A quote opens a string inside arguments only.

    Only the brackets and quotes are visited (the rest is copied in slices): Apache Kafka's
    45,000 qualifiers with a call took 0.15 s against 0.49 s one character at a time."""
    out = []
    depth = 0
    quote = ""
    copied = 0  # where the text not yet copied starts, at depth 0
    for found in _CALL_SYNTAX.finditer(text):
        ch = found.group()
        if quote:
            if ch == quote:
                quote = ""
            continue
        if depth and ch in "\"'`":
            quote = ch
            continue
        if ch == "(":
            if depth == 0:
                out.append(text[copied:found.start()])
                out.append("()")
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                copied = found.end()
        elif depth == 0 and ch in "[]{}":
            return None
    if depth:
        return None
    out.append(text[copied:])
    return "".join(out)


@lru_cache(maxsize=65536)
def normalize_qualifier(raw: str, language: str) -> str:
    """``self.repo.`` -> ``this.repo``; ``a::b::`` -> ``a.b`` (Rust keeps ``a::b``);
    ``new Foo(x).bar(y).`` -> ``Foo().bar()`` (calls stay, their arguments go)."""
    text = raw.strip()
    if text.startswith("new ") and language not in ("python", "ruby", "go", "rust"):
        text = text[4:]
    if "(" in text:
        if language == "python" and _WS.sub("", text).rstrip(".") == "super()":
            return "super"
        collapsed = _collapse_calls(text)
        if collapsed is None:
            return "<expr>"
        text = collapsed
    text = _WS.sub("", text)
    if not text:
        return ""
    if "<" in text:
        text = _strip_generics(text)
    text = text.replace("::<>", "")
    rust_path = language == "rust" and "::" in text
    while text and text[-1] in ".:->?\\":
        text = text[:-1]
    if not text:
        return ""
    if language == "python" and text == "super()":
        return "super"
    if rust_path:
        text = text.replace(")?.", ").").replace(".", "::")  # Foo::new().bar: one path
        parts = [p for p in text.split("::") if p]
        if parts and parts[0] == "Self":
            parts[0] = "this"
        if parts and all(_IDENT.match(p) or (p.endswith("()") and _IDENT.match(p[:-2]))
                         for p in parts):
            return "::".join(parts)
        return "<expr>"
    text = text.replace(")?.", ").").replace(")!.", ").")  # Rust `?`, TS non-null
    for sep in ("?.", "->", "::", "\\", "!!."):
        text = text.replace(sep, ".")
    text = text.lstrip(".")
    parts = text.split(".")
    out: list[str] = []
    for i, part in enumerate(parts):
        if i == 0 and part.startswith("@") and len(part) > 1:  # Ruby @field
            out += ["this", part[1:]]
            continue
        if part.startswith("$"):
            part = part[1:]
            if part == "this" and i == 0:
                out.append("this")
                continue
        if i == 0 and part in _THIS:
            out.append("this")
        elif i == 0 and part in _SUPER:
            out.append("super")
        elif _IDENT.match(part) or (part.endswith("()") and _IDENT.match(part[:-2])):
            out.append(part)
        else:
            return "<expr>"
    return ".".join(out)


@lru_cache(maxsize=65536)
def base_type(text: str, language: str) -> str:
    """The class a declared type names: ``Optional[List[Foo]]`` -> ``List``,
    ``*st.Store`` -> ``st.Store``, ``std::unique_ptr<Foo>`` -> ``Foo``."""
    text = text.strip().strip("\"'")
    for _ in range(4):
        text = _TYPE_PREFIX.sub("", text)
        head = _TYPE_PATH.match(text)
        if head is None:
            return ""
        rest = text[head.end():].lstrip()
        name = head.group(0)
        last = re.split(r"\.|::|\\", name)[-1]
        if last in _WRAPPERS and rest[:1] in ("<", "["):
            inner = rest[1:]
            depth = 0
            cut = len(inner)
            for i, ch in enumerate(inner):
                if ch in "<[(":
                    depth += 1
                elif ch in ">])":
                    if depth == 0:
                        cut = i
                        break
                    depth -= 1
                elif ch == "," and depth == 0:
                    cut = i
                    break
            text = inner[:cut]
            continue
        if rest.startswith("[") and language != "python":
            return ""  # an array: its elements' type is not the variable's
        if language == "python" and "|" in rest:
            alternatives = [a.strip() for a in text.split("|")]
            named = [a for a in alternatives if a and a != "None"]
            if named and named[0] != text:
                text = named[0]
                continue
        break
    else:
        return ""
    name = name.lstrip("\\")
    if language != "rust":
        name = name.replace("::", ".").replace("\\", ".")
    if name in _NO_TYPE:
        return ""
    return name


def _callee(src: bytes, node: Node, language: str) -> str:
    """The callee of a call that initialises a variable, as a dotted path (``st.NewStore``,
    ``this.repo.find``; Rust ``Foo::new`` -> ``Foo``): its class, or what it returns, is the
    variable's type. '' when the callee is not a plain path."""
    args = node.child_by_field_name("arguments")
    end = args.start_byte if args is not None and args.start_byte > node.start_byte else \
        node.end_byte
    text = _WS.sub("", src[node.start_byte:end].decode("utf-8", "replace"))
    if language == "rust" and "::" in text:
        parts = text.split("::")
        if len(parts) >= 2 and parts[-2][:1].isupper():
            return "::".join(parts[:-1])  # Foo::new(), Foo::with_capacity(): a Foo
        return text if all(_IDENT.match(p) for p in parts) else ""
    path = normalize_qualifier(text, language)
    return "" if path == "<expr>" else path


def _return_type(text: str, language: str) -> str:
    """A declared return type's class; Go's ``(*Item, error)`` -> ``Item``."""
    text = text.strip()
    if text.startswith("(") and language == "go":
        text = text[1:].split(",", 1)[0].strip().rstrip(")")
        parts = text.split()
        text = parts[-1] if parts else ""
    return base_type(text, language)


def _declares(node: Node) -> bool:
    """Whether a type-name node is the name a declaration introduces (``class Foo``)."""
    parent = node.parent
    if parent is not None and parent.type == "generic_type" and parent.parent is not None \
            and parent.parent.type == "impl_item":
        parent, node = parent.parent, parent
    if parent is not None and parent.type == "impl_item":  # impl Trait for Foo: not a use
        target = parent.child_by_field_name("type")
        return target is not None and target.start_byte == node.start_byte
    if parent is None or parent.type not in _DECLARING:
        return False
    if parent.type in ("struct_specifier", "class_specifier", "enum_specifier",
                       "union_specifier") and parent.child_by_field_name("body") is None:
        return False  # `struct ring *r`: a use
    for field in ("name", "declarator"):
        named = parent.child_by_field_name(field)
        if named is not None and named.start_byte == node.start_byte:
            return True
    first = next((c for c in parent.named_children if c.type == node.type), None)
    return parent.type == "class_declaration" and first is not None and \
        first.start_byte == node.start_byte and node.type == "type_identifier" and \
        parent.child_by_field_name("name") is None


def _type_qualifier(src: bytes, node: Node, language: str) -> tuple[str, bool]:
    """For a type name inside ``a.b.Foo``: the qualifier ``a.b``; and whether the node is a
    leading segment of such a path rather than its last name."""
    parent = node.parent
    if parent is None or parent.type not in _SCOPED_TYPES:
        return "", False
    same = [c for c in parent.named_children if c.type == node.type]
    if same and same[-1].start_byte != node.start_byte:
        return "", True
    if parent.start_byte >= node.start_byte:
        return "", False
    return normalize_qualifier(src[parent.start_byte:node.start_byte].decode(
        "utf-8", "replace"), language), False


def _references(language: str, root: Node, src: bytes, enclosing: _Enclosing) -> list[Row]:
    """One walk of the tree: every match dispatched on its pattern's role."""
    query, roles = _query(language)
    candidates: dict[int, tuple[int, str, str, Node]] = {}
    variables: list[tuple[str, str, str, int, bool]] = []
    tparams: set[str] = set()
    locals_: set[tuple[str, str]] = set()
    returns: list[tuple[str, str, int]] = []
    rows: list[Row] = []
    by_line = enclosing.by_line

    def by_scope(node: Node) -> str:
        line = node.start_point[0] + 1
        return by_line[line] if line < len(by_line) else ""

    for index, caps in QueryCursor(query).matches(root):
        role = roles[index]
        if role == "import":
            for cap, nodes in caps.items():
                if cap.startswith("import."):
                    rows += import_rules.rows(language, cap[7:], nodes[0], src, enclosing.at)
            continue
        if role == "var.name" or role == "field.name":
            field = role == "field.name"
            prefix = "field" if field else "var"
            name_node = caps[role][0]
            name = _text(src, name_node).lstrip("$@")
            found = caps.get(prefix + ".type")
            if found:
                typ, alias = base_type(_text(src, found[0]), language), ""
            elif prefix + ".call" in caps:
                typ, alias = _callee(src, caps[prefix + ".call"][0], language), "call"
            elif prefix + ".from" in caps:  # self.x = x: the parameter's type, if typed
                typ, alias = "=" + _text(src, caps[prefix + ".from"][0]), "param"
            else:
                continue
            if typ and name:
                variables.append((name, typ, alias, name_node.start_point[0] + 1, field))
            continue
        if role == "tparam":
            tparams.add(_text(src, caps["tparam"][0]))
            continue
        if role == "ret.name":
            typ = _return_type(_text(src, caps["ret.type"][0]), language)
            if typ:
                node = caps["ret.name"][0]
                returns.append((_text(src, node), typ, node.start_point[0] + 1))
            continue
        if role == "local":
            node = caps["local"][0]
            locals_.add((by_scope(node), _text(src, node)))
            continue
        if not role:
            continue
        node = caps[role][0]
        prio = _PRIORITY[role]
        held = candidates.get(node.start_byte)
        if held is not None and held[0] <= prio:
            continue
        qualifier = ""
        expr = caps.get(role + ".expr")
        if expr:
            start = expr[0].start_byte
            if start < node.start_byte:
                qualifier = normalize_qualifier(
                    src[start:node.start_byte].decode("utf-8", "replace"), language)
        candidates[node.start_byte] = (prio, role, qualifier, node)
    known = lang.find(language)
    not_calls = known.not_calls if known is not None else frozenset()
    builtins = known.builtin_types if known is not None else frozenset()
    for _prio, cap, qualifier, node in candidates.values():
        line = node.start_point[0] + 1
        scope = by_line[line] if line < len(by_line) else ""
        if cap == "super":
            method = scope.rpartition(".")[2]
            if method:
                rows.append(("call", method, "super", "", line, scope))
            continue
        name = _text(src, node)
        if cap == "bare":  # Ruby: `total` calls a method unless `total` is a local here
            if (scope, name) in locals_ or name in not_calls:
                continue
            cap = "call"
        if cap == "call":
            if name in not_calls and not qualifier:
                continue
            if language == "ruby" and name == "new" and qualifier and qualifier != "<expr>":
                qualifier, _dot, name = qualifier.rpartition(".")  # Foo.new: makes a Foo
        elif cap == "type":
            if name in tparams or name in _NO_TYPE or name in builtins or _declares(node):
                continue
            if "." in name and language == "python":  # a string annotation: "models.User"
                qualifier, _dot, name = name.rpartition(".")
            if not qualifier:
                qualifier, leading = _type_qualifier(src, node, language)
                if leading and not name[:1].isupper():
                    continue  # a package segment of a qualified type name
        elif cap == "extends" or cap == "implements":
            if not qualifier:
                qualifier, leading = _type_qualifier(src, node, language)
                if leading:
                    continue
            owner = _heritage_owner(node, src, language)
            scope = _qualname_in(enclosing, scope, owner) if owner else \
                (enclosing.class_of(scope) or scope)
        rows.append(("call" if cap == "new" else cap, name, qualifier, "", line, scope))
    declared = {(enclosing.at(line), name): typ for name, typ, alias, line, field in variables
                if not field and not alias}
    for name, typ, alias, line, field in variables:
        scope = enclosing.at(line)
        if alias == "param":  # self.x = x: the type the parameter x is declared with
            typ = declared.get((scope, typ.lstrip("=")), "")
            alias = ""
            if not typ:
                continue
        if field:
            scope = enclosing.class_of(scope)
        if typ in tparams or typ.split(".")[-1] in tparams or typ in builtins:
            continue
        rows.append(("var", name, typ, alias, line, scope))
    for name, typ, line in returns:
        scope = enclosing.at(line)
        if scope.rpartition(".")[2] == name and typ not in tparams and typ not in builtins:
            rows.append(("returns", name, typ, "", line, scope))
    return rows


def _heritage_owner(node: Node, src: bytes, language: str) -> str:
    """The type a Rust ``impl Trait for Type`` block implements the trait for, or a Swift
    ``extension Type: Protocol`` conforms to the protocol."""
    if language not in ("rust", "swift"):
        return ""
    block = "impl_item" if language == "rust" else "class_declaration"
    cur: Node | None = node
    while cur is not None and cur.type != block:
        cur = cur.parent
    if cur is None:
        return ""
    if language == "swift":  # a class, struct... declares its own bases
        word = cur.child_by_field_name("declaration_kind")
        if word is None or _text(src, word) != "extension":
            return ""
    typ = cur.child_by_field_name("type" if language == "rust" else "name")
    return base_type(_text(src, typ), language) if typ is not None else ""


def _qualname_in(enclosing: _Enclosing, scope: str, name: str) -> str:
    """``name`` qualified like the declarations around ``scope`` (a Rust impl's type)."""
    prefix = scope
    while True:
        candidate = f"{prefix}.{name}" if prefix else name
        if candidate in enclosing.kinds:
            return candidate
        if not prefix:
            return name
        prefix = prefix.rpartition(".")[0]


def extract(text: str, language: str, symbols: Sequence[Symbol], tree: Any = None,
            src: bytes = b"") -> list[Row]:
    """Reference, import and package rows for one file (empty for unstructured languages,
    and when the file cannot be parsed). ``tree``/``src``: the chunker's parse, reused."""
    if language not in PATTERNS:
        return []
    try:
        from codenav.parse.chunker import parser_for

        if tree is None or not src:
            src = text.encode("utf-8")
            tree = parser_for(language).parse(src)
        root = tree.root_node
        line_count = text.count("\n") + 1
        enclosing = _Enclosing(symbols, line_count)
        rows = _references(language, root, src, enclosing)
    except (RecursionError, ValueError, UnicodeError) as exc:
        log.warning("graph facts skipped for a %s file: %s", language, exc)
        return []
    return _dedupe(rows)[:MAX_REFS]


def _dedupe(rows: Iterable[Row]) -> list[Row]:
    order = {"package": 0, "import": 1, "reexport": 1, "extends": 2, "implements": 2,
             "var": 3, "decl": 3, "returns": 3, "call": 4, "type": 4}
    unique = dict.fromkeys(rows)
    return sorted(unique, key=lambda r: (order.get(r[0], 9), r[4], r[0], r[1], r[2], r[3]))
