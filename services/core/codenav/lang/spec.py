"""Per-language knowledge for the AST walker: which nodes declare what.

Each ``LangSpec`` is data: node types that declare symbols (and the kind they declare),
transparent wrappers (decorators, ``export``, templates), scopes (namespaces, modules, impl
blocks) whose members the walker visits, and the body node types of class-like declarations.
Language quirks that data cannot express live in small hook functions below.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
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
    bases: Callable[[Node], list[str]] | None = None
    """The types a class-like declaration node extends or implements, as written."""


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


def c_declarator_name(node: Node) -> tuple[str, str | None]:
    """Name (and qualifier, for ``A::f``) at the bottom of a C/C++ declarator chain."""
    current: Node | None = field_of(node, "declarator")
    for _ in range(12):
        if current is None:
            return "", None
        if current.type in ("identifier", "field_identifier", "type_identifier",
                            "operator_name", "destructor_name"):
            return _text(current), None
        if current.type == "qualified_identifier":
            scope = field_of(current, "scope")
            name = field_of(current, "name")
            inner_name, inner_scope = ("", None)
            if name is not None and name.type == "qualified_identifier":
                inner_name, inner_scope = c_declarator_name_from_qualified(name)
                return inner_name, _join(_text(scope), inner_scope)
            return _text(name), _text(scope) or None
        current = field_of(current, "declarator") or (
            current.named_children[0] if current.named_children else None)
    return "", None


def c_declarator_name_from_qualified(node: Node) -> tuple[str, str | None]:
    scope = field_of(node, "scope")
    name = field_of(node, "name")
    if name is not None and name.type == "qualified_identifier":
        inner, inner_scope = c_declarator_name_from_qualified(name)
        return inner, _join(_text(scope), inner_scope)
    return _text(name), _text(scope) or None


def _join(a: str | None, b: str | None) -> str | None:
    parts = [p for p in (a, b) if p]
    return "::".join(parts) if parts else None


def _go_receiver_type(node: Node) -> str | None:
    """``Cache`` from ``func (c *Cache[K, V]) Get()``."""
    receiver = field_of(node, "receiver")
    param = first_of(receiver, ("parameter_declaration",)) if receiver is not None else None
    current = field_of(param, "type") if param is not None else None
    for _ in range(4):
        if current is None:
            return None
        if current.type == "type_identifier":
            return _text(current)
        if current.type == "pointer_type":
            current = current.named_children[0] if current.named_children else None
        else:
            current = field_of(current, "type")
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
    t = node.type
    g = spec.grammar
    if g in ("c", "cpp") and t == "function_definition":
        return c_declarator_name(node)
    if g in ("c", "cpp") and t == "type_definition":
        declared, _scope = c_declarator_name(node)
        if not declared:  # a declarator the grammar misread: its last identifier
            words = _IDENTIFIER.findall(_text(field_of(node, "declarator")))
            declared = words[-1] if words else ""
        return declared, None
    if g == "go" and t == "method_declaration":
        return _text(field_of(node, "name")), _go_receiver_type(node)
    if g == "kotlin":
        if t == "secondary_constructor":
            return "constructor", None
        found = first_of(node, ("type_identifier", "simple_identifier"))
        if found is None and t == "companion_object":
            return "Companion", None
        return _text(found), None
    if g == "ruby" and t == "singleton_method":
        return _text(field_of(node, "name")), None
    if g == "rust" and t == "impl_item":
        return _text(field_of(node, "type")).split("<")[0], None
    if t in ("lexical_declaration", "variable_declaration"):
        decl = first_of(node, ("variable_declarator",))
        return (_text(field_of(decl, "name")) if decl else ""), None
    if t == "assignment_expression":
        target, owner, _exported = _js_assignment_target(node)
        return target, owner
    name = field_of(node, "name")
    if name is None:
        parent = node.parent
        if g in ("javascript", "typescript", "tsx") and parent is not None and \
                parent.type == "export_statement" and field_of(parent, "value") == node:
            return "default", None  # export default function () {...}
        return "", None
    if g == "typescript" or g == "tsx":
        return _text(name).strip("\"'"), None
    return _text(name), None


def is_constructor(spec: LangSpec, node: Node, name: str, parent: str | None) -> bool:
    """Methods that construct their class, where the kind table cannot tell."""
    g = spec.grammar
    if g in ("javascript", "typescript", "tsx"):
        return node.type == "method_definition" and name == "constructor"
    if g == "php":
        return name == "__construct"
    if g == "cpp":
        return parent is not None and name == parent
    return False


def refine_kind(spec: LangSpec, node: Node, kind: str) -> str:
    """Adjust the kind the table gives when the node itself says more."""
    g = spec.grammar
    if g == "kotlin" and node.type == "class_declaration":
        words = {c.type for c in node.children if not c.is_named}
        if "interface" in words:
            return "interface"
        if "enum" in words:
            return "enum"
    if node.type in ("lexical_declaration", "variable_declaration", "assignment_expression"):
        value = js_value(node)
        if value is not None and value.type == "class":
            return "class"
    if g == "go" and node.type == "type_spec":
        typ = field_of(node, "type")
        if typ is not None and typ.type == "interface_type":
            return "interface"
        if typ is not None and typ.type == "struct_type":
            return "class"
    return kind


def is_declaration(spec: LangSpec, node: Node) -> bool:
    """Filters nodes the table lists but that declare nothing worth a chunk."""
    g = spec.grammar
    if node.type in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(decls) != 1:
            return False
        value = field_of(decls[0], "value")
        return value is not None and value.type in _JS_FUNCTION_VALUES
    if node.type == "assignment_expression":
        return js_value(node) is not None and bool(_js_assignment_target(node)[0])
    if g in ("c", "cpp") and node.type in ("struct_specifier", "class_specifier",
                                           "enum_specifier", "union_specifier"):
        return field_of(node, "body") is not None and field_of(node, "name") is not None
    return True


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
    g = spec.grammar
    if wrapped_exported:
        return True
    if node.type == "assignment_expression":
        return _js_assignment_target(node)[2]
    if g == "csharp" and node.type in ("namespace_declaration",
                                       "file_scoped_namespace_declaration"):
        return True
    if g == "python":
        return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
    if g == "go":
        return name[:1].isupper()
    if g in ("typescript", "tsx", "javascript"):
        return False
    mods = modifiers_text(node).split()
    if g == "rust":
        return any(m.startswith("pub") for m in mods)
    if g in ("c", "cpp"):
        return "static" not in mods
    if spec.public_keywords:
        return any(k in mods for k in spec.public_keywords)
    if spec.private_keywords:
        return not any(k in mods for k in spec.private_keywords)
    return spec.exported_default


# Declarations inside a class body that stay in the class shell instead of their own chunk.
MEMBER_ONLY = frozenset({"property"})

_VISIBILITY = frozenset({"public", "private", "protected"})


def visibility_marker(spec: LangSpec, node: Node) -> tuple[str, Node | None]:
    """For a class-body statement that sets visibility (C++ ``private:``, Ruby ``private``
    or ``private def x``): the word, and the one declaration it applies to (None: it applies
    to what follows). ``("", None)`` for any other statement."""
    if node.type == "access_specifier":
        return _text(node).strip(), None
    if node.type == "identifier" and spec.grammar == "ruby":
        word = _text(node)
        return (word, None) if word in _VISIBILITY else ("", None)
    if node.type == "call" and spec.grammar == "ruby" and field_of(node, "receiver") is None:
        word = _text(field_of(node, "method"))
        args = field_of(node, "arguments")
        if word in _VISIBILITY and args is not None and len(args.named_children) == 1 and \
                args.named_children[0].type in ("method", "singleton_method"):
            return word, args.named_children[0]
    return "", None

ImportExtractor = Callable[[Node], list[str]]


def js_exported_names(root: Node) -> set[str]:
    """Top-level names exported apart from their declaration: ``export { a, b as c }``,
    ``export default a``, ``export = a``, ``module.exports = a`` or ``= { a, b: c }``."""
    names: set[str] = set()
    for child in root.named_children:
        if child.type == "export_statement":
            if field_of(child, "declaration") is not None or field_of(child, "source") is not None:
                continue
            for part in child.named_children:
                if part.type == "export_clause":
                    names.update(_text(field_of(s, "name")) for s in part.named_children
                                 if s.type == "export_specifier")
                elif part.type == "identifier":
                    names.add(_text(part))
        elif child.type == "expression_statement" and child.named_children:
            assign = child.named_children[0]
            if assign.type != "assignment_expression" or \
                    _text(field_of(assign, "left")) != "module.exports":
                continue
            right = field_of(assign, "right")
            if right is None:
                continue
            if right.type == "identifier":
                names.add(_text(right))
            elif right.type == "object":
                for prop in right.named_children:
                    if prop.type == "shorthand_property_identifier":
                        names.add(_text(prop))
                    elif prop.type == "pair":
                        value = field_of(prop, "value")
                        if value is not None and value.type == "identifier":
                            names.add(_text(value))
    names.discard("")
    return names
