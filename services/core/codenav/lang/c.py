"""C: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import DIR, END, TEST, VENDORED, Convention, Imports, Language
from codenav.lang.spec import LangSpec
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


SPEC = LangSpec(
    grammar="c",
    defs={"function_definition": "function", "struct_specifier": "class",
          "union_specifier": "class", "enum_specifier": "enum",
          "type_definition": "type"},
    bodies=frozenset({"field_declaration_list"}),
    imports=frozenset({"preproc_include"}),
)


def _import_specs(node: Node) -> list[str]:
    if node.type != "preproc_include":
        return []
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
