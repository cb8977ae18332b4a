"""C: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

import re

from tree_sitter import Node

from codenav.lang.base import DIR, END, TEST, VENDORED, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of, modifiers_text
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(type_identifier) @type
(declaration declarator: (function_declarator declarator: (identifier) @decl))
(declaration type: (_) @var.type declarator: (identifier) @var.name)
(declaration type: (_) @var.type declarator: (init_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @var.name)))
(parameter_declaration type: (_) @var.type declarator: (identifier) @var.name)
(parameter_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(field_declaration type: (_) @var.type declarator: (field_identifier) @var.name)
(field_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (field_identifier) @var.name))
"""
"""C's references, which C++ extends."""


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _join(a: str | None, b: str | None) -> str | None:
    parts = [p for p in (a, b) if p]
    return "::".join(parts) if parts else None


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


def c_name(node: Node) -> tuple[str, str | None] | None:
    """Functions and typedefs are named at the bottom of their declarator chain."""
    if node.type == "function_definition":
        return c_declarator_name(node)
    if node.type == "type_definition":
        declared, _scope = c_declarator_name(node)
        if not declared:  # a declarator the grammar misread: its last identifier
            words = _IDENTIFIER.findall(_text(field_of(node, "declarator")))
            declared = words[-1] if words else ""
        return declared, None
    return None


def c_declaration(node: Node) -> bool:
    """A struct, class, enum or union is declared where it has a body and a name."""
    if node.type in ("struct_specifier", "class_specifier", "enum_specifier",
                     "union_specifier"):
        return field_of(node, "body") is not None and field_of(node, "name") is not None
    return True


def c_exported(node: Node, name: str) -> bool:
    return "static" not in modifiers_text(node).split()


SPEC = LangSpec(
    grammar="c",
    defs={"function_definition": "function", "struct_specifier": "class",
          "union_specifier": "class", "enum_specifier": "enum",
          "type_definition": "type"},
    bodies=frozenset({"field_declaration_list"}),
    imports=frozenset({"preproc_include"}),
    name=c_name,
    declaration=c_declaration,
    exported=c_exported,
)


def _import_specs(node: Node) -> list[str]:
    return [_text(node.child_by_field_name("path")).strip()]


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "u":  # using namespace a::b;
        if not any(not c.is_named and c.type == "namespace" for c in node.children):
            return []
        names = [c for c in node.named_children]
        return [("import", "*", "ns:" + _t(src, names[-1]).replace(" ", ""), "")] if names \
            else []
    path = node.child_by_field_name("path")
    if path is None:
        return []
    return [("import", "", _t(src, path).strip(), "")]


IMPORTS = Imports(
    nodes=frozenset({"preproc_include"}),
    specs=_import_specs,
    query="(preproc_include) @i",
    bindings=_import_bindings,
)

BUILTIN_TYPES = frozenset({"size_t", "ssize_t", "int8_t", "int16_t", "int32_t", "int64_t",
                           "uint8_t", "uint16_t", "uint32_t", "uint64_t", "uintptr_t",
                           "intptr_t", "ptrdiff_t", "bool", "FILE", "va_list"})
CONVENTIONS = (
    Convention(TEST, ("c", "cpp"), DIR + r"[^/]*_unittest\.[A-Za-z0-9]+$", "gtest files"),
    Convention(VENDORED, ("c", "cpp"), DIR + r"deps" + END, "C/C++ vendored deps/"),
)


LANGUAGE = Language("c", (".c", ".h"), SPEC, REFERENCES, family="c", imports=IMPORTS,
                    builtin_types=BUILTIN_TYPES, conventions=CONVENTIONS)
