"""Per-language knowledge for the AST walker: which nodes declare what.

Each ``LangSpec`` is data: node types that declare symbols (and the kind they declare),
transparent wrappers (decorators, ``export``, templates), scopes (namespaces, modules, impl
blocks) whose members the walker visits, and the body node types of class-like declarations.
Language quirks that data cannot express are hooks (``bases``, ``name``, ``kind``,
``constructor``, ``declaration``, ``exported``, ``visibility``) that each language's module
sets; the functions below apply them, with the rules every language shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

CLASS_LIKE = frozenset({"class", "interface", "enum", "module"})
CALLABLE = frozenset({"function", "method", "constructor"})


@dataclass(frozen=True)
class LangSpec:
    grammar: str
    defs: dict[str, str]
    """Node type -> kind for declarations."""
    wrappers: frozenset[str] = frozenset()
    """Nodes that wrap one declaration and extend its range (decorators, export, template)."""
    scopes: dict[str, str] = field(default_factory=dict)
    """Namespace-like nodes: node type -> symbol kind ('' records no symbol)."""
    bodies: frozenset[str] = frozenset()
    """Body node types of class-like declarations and scopes."""
    comments: frozenset[str] = frozenset({"comment"})
    imports: frozenset[str] = frozenset()
    """Top-level node types whose text is an import."""
    export_wrappers: frozenset[str] = frozenset()
    """Wrappers that make the wrapped declaration exported."""
    public_keywords: frozenset[str] = frozenset()
    """Modifier words that make a member exported (empty: see ``exported_default``)."""
    private_keywords: frozenset[str] = frozenset()
    exported_default: bool = True
    python_docstrings: bool = False
    attached: frozenset[str] = frozenset()
    """Sibling nodes above a declaration that belong to it (Rust ``#[attributes]``)."""
    file_scopes: frozenset[str] = frozenset()
    """Scopes declared by a statement that covers the rest of the file (C# ``namespace X;``)."""
    visibility_markers: bool = False
    """Class bodies hold statements that set the visibility of what follows (C++, Ruby)."""
    scope_kind: Callable[[Node], str | None] | None = None
    """For a node the ``defs`` table lists: the ``scopes`` kind it has instead, when the
    node itself says it only opens a scope (a Swift ``extension`` shares its node type with
    classes: '' makes its members the extended type's, as an impl block's); None: a
    declaration."""
    bases: Callable[[Node], list[str]] | None = None
    """The types a class-like declaration node extends or implements, as written."""
    name: Callable[[Node], tuple[str, str | None] | None] | None = None
    """The declared name and owner where the node's ``name`` field does not tell (None: it
    does)."""
    kind: Callable[[Node, str], str] | None = None
    """The kind of a declaration when the node says more than the table (a Kotlin
    ``interface``, a Go struct type)."""
    constructor: Callable[[Node, str, str | None], bool] | None = None
    """Whether a method (node, name, its class) constructs its class."""
    declaration: Callable[[Node], bool] | None = None
    """Whether a node the table lists declares something worth a chunk (default: yes)."""
    exported: Callable[[Node, str], bool | None] | None = None
    """Whether a declaration (node, name) is visible outside (None: the modifier words
    decide, ``public_keywords``/``private_keywords``/``exported_default``)."""
    visibility: Callable[[Node], tuple[str, Node | None]] | None = None
    """A class-body statement that sets visibility: the word and the one declaration it
    applies to (None: what follows); ``("", None)`` for any other statement."""
    private_members: frozenset[str] = frozenset()
    """Class-like node types whose members are private until said otherwise (C++ ``class``)."""
    members_export_alone: bool = False
    """A member's own visibility decides, whatever its type's (Go: capitalization)."""
    member_exported: Callable[[Node, str, bytes], bool] | None = None
    """Whether a member (node, name, the file's bytes) of an exported class is visible
    outside (None: its own modifiers decide)."""
    exported_names: Callable[[Node], set[str]] | None = None
    """Top-level names a file exports apart from their declarations (from the root node)."""
    bare_methods_are_functions: bool = False
    """A method declared outside a class is a function (a top-level Ruby ``def``)."""
    signature_prefix: dict[str, str] = field(default_factory=dict)
    """Node types whose text lacks the keyword that declares them, and that keyword (a Go
    ``type_spec`` is ``type``'s child)."""
    signature_whole: frozenset[str] = frozenset()
    """Node types whose signature is their whole first line: the body the walker finds is
    part of the declaration itself (a Go interface or struct type)."""


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def field_of(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def first_of(node: Node, types: tuple[str, ...]) -> Node | None:
    for child in node.named_children:
        if child.type in types:
            return child
    return None


_JS_FUNCTION_VALUES = ("arrow_function", "function_expression", "function",
                       "generator_function", "class")


def js_value(node: Node) -> Node | None:
    """The function or class a ``const x = ...`` or ``exports.x = ...`` declares."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        decl = first_of(node, ("variable_declarator",))
        value = field_of(decl, "value") if decl is not None else None
    elif node.type == "assignment_expression":
        value = field_of(node, "right")
    else:
        return None
    return value if value is not None and value.type in _JS_FUNCTION_VALUES else None


def _js_assignment_target(node: Node) -> tuple[str, str | None, bool]:
    """For ``exports.x = f``, ``module.exports.x = f``, ``A.prototype.x = f``:
    (name, owner, exported); empty name for any other assignment."""
    left = field_of(node, "left")
    if left is None or left.type != "member_expression":
        return "", None, False
    prop = _text(field_of(left, "property"))
    obj = _text(field_of(left, "object"))
    if obj in ("exports", "module.exports"):
        return prop, None, True
    if obj.endswith(".prototype") and obj.count(".") == 1:
        return prop, obj.removesuffix(".prototype"), False
    return "", None, False


def name_of(spec: LangSpec, node: Node) -> tuple[str, str | None]:
    """The declared name and, when the declaration names its owner (``func (s *S) M``,
    ``A::f``, ``A.prototype.f = ...``), that owner."""
    name, owner = _name_of(spec, node)
    if "\n" in name:  # error recovery can stretch a name node over several lines
        name = name.split("\n", 1)[0].strip()
    if owner is not None and "\n" in owner:
        owner = owner.split("\n", 1)[0].strip() or None
    return name, owner


def _name_of(spec: LangSpec, node: Node) -> tuple[str, str | None]:
    if spec.name is not None:
        found = spec.name(node)
        if found is not None:
            return found
    t = node.type
    if t in ("lexical_declaration", "variable_declaration"):
        decl = first_of(node, ("variable_declarator",))
        return (_text(field_of(decl, "name")) if decl else ""), None
    if t == "assignment_expression":
        target, owner, _exported = _js_assignment_target(node)
        return target, owner
    return _text(field_of(node, "name")), None


def is_constructor(spec: LangSpec, node: Node, name: str, parent: str | None) -> bool:
    """Methods that construct their class, where the kind table cannot tell."""
    return spec.constructor is not None and spec.constructor(node, name, parent)


def refine_kind(spec: LangSpec, node: Node, kind: str) -> str:
    """Adjust the kind the table gives when the node itself says more."""
    if node.type in ("lexical_declaration", "variable_declaration", "assignment_expression"):
        value = js_value(node)
        if value is not None and value.type == "class":
            return "class"
    return spec.kind(node, kind) if spec.kind is not None else kind


def scope_kind(spec: LangSpec, node: Node) -> str | None:
    """The scope kind of ``node`` (``LangSpec.scopes``, or its ``scope_kind`` hook for a
    declaration node that opens a scope only), None for a node that opens no scope."""
    if node.type in spec.scopes:
        return spec.scopes[node.type]
    if spec.scope_kind is not None and node.type in spec.defs:
        return spec.scope_kind(node)
    return None


def is_declaration(spec: LangSpec, node: Node) -> bool:
    """Filters nodes the table lists but that declare nothing worth a chunk."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(decls) != 1:
            return False
        value = field_of(decls[0], "value")
        return value is not None and value.type in _JS_FUNCTION_VALUES
    if node.type == "assignment_expression":
        return js_value(node) is not None and bool(_js_assignment_target(node)[0])
    return spec.declaration is None or spec.declaration(node)


def bases_of(spec: LangSpec, node: Node) -> tuple[str, ...]:
    """Names a class-like declaration extends or implements, as written (each language's
    ``LangSpec.bases`` reads them), without type arguments."""
    found = spec.bases(node) if spec.bases is not None else []
    return tuple(o.split("<")[0].strip() for o in found if o)


def modifiers_text(node: Node) -> str:
    parts = []
    for child in node.children:
        if child.type in ("modifiers", "modifier", "visibility_modifier",
                          "storage_class_specifier", "accessibility_modifier",
                          "member_modifier"):
            parts.append(_text(child))
        elif not child.is_named and child.type in ("public", "private", "protected", "static",
                                                   "internal", "export", "pub"):
            parts.append(child.type)
    return " ".join(parts)


def exported_of(spec: LangSpec, node: Node, name: str, wrapped_exported: bool) -> bool:
    if wrapped_exported:
        return True
    if node.type == "assignment_expression":
        return _js_assignment_target(node)[2]
    if spec.exported is not None:
        decided = spec.exported(node, name)
        if decided is not None:
            return decided
    mods = modifiers_text(node).split()
    if spec.public_keywords:
        return any(k in mods for k in spec.public_keywords)
    if spec.private_keywords:
        return not any(k in mods for k in spec.private_keywords)
    return spec.exported_default


# Declarations inside a class body that stay in the class shell instead of their own chunk.
MEMBER_ONLY = frozenset({"property"})

def visibility_marker(spec: LangSpec, node: Node) -> tuple[str, Node | None]:
    """For a class-body statement that sets visibility (C++ ``private:``, Ruby ``private``
    or ``private def x``): the word, and the one declaration it applies to (None: it applies
    to what follows). ``("", None)`` for any other statement."""
    if node.type == "access_specifier":
        return _text(node).strip(), None
    return spec.visibility(node) if spec.visibility is not None else ("", None)

ImportExtractor = Callable[[Node], list[str]]
