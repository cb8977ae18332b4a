"""Scala: its files, the nodes its chunks and symbols come from
(``SPEC``), the tree-sitter patterns of the references its code makes, and its imports
(the JVM family: packages as in Java and Kotlin)."""


from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.java import CONVENTIONS
from codenav.lang.spec import LangSpec, field_of
from codenav.lang.syntax import Binding, dotted_binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (field_expression field: (identifier) @call)) @call.expr
(instance_expression (type_identifier) @new)
(instance_expression (generic_type (type_identifier) @new))
(extends_clause (type_identifier) @extends)
(extends_clause (generic_type (type_identifier) @extends))
(type_identifier) @type
(type_parameters name: (identifier) @tparam)
(val_definition pattern: (identifier) @var.name type: (_) @var.type)
(var_definition pattern: (identifier) @var.name type: (_) @var.type)
(parameter name: (identifier) @var.name type: (_) @var.type)
(class_parameter name: (identifier) @var.name type: (_) @var.type)
(function_definition name: (identifier) @ret.name return_type: (_) @ret.type)
"""


def _bases(node: Node) -> list[str]:
    ext = field_of(node, "extend")
    if ext is None:
        return []
    return [_text(c).split("[")[0] for c in ext.named_children
            if c.type.endswith("type_identifier") or c.type.endswith("_type")]


SPEC = LangSpec(
    grammar="scala",
    defs={"class_definition": "class", "object_definition": "class",
          "trait_definition": "interface", "enum_definition": "enum",
          "function_definition": "function", "function_declaration": "function",
          "type_definition": "type"},
    bodies=frozenset({"template_body", "enum_body"}),
    comments=frozenset({"comment", "block_comment"}),
    imports=frozenset({"import_declaration"}),
    private_keywords=frozenset({"private", "protected"}),
    bases=_bases,
)


def _import_specs(node: Node) -> list[str]:
    text = "".join(_text(node).removeprefix("import").split())
    return [text] if text else []


def _path(src: bytes, node: Node) -> str:
    """The dotted prefix of an import: its identifiers before any selector or wildcard."""
    return ".".join(_t(src, c) for c in node.named_children if c.type == "identifier")


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        package = _t(src, node.child_by_field_name("name")).replace(" ", "")
        return dotted_binding(cap, package) if package else []
    path = _path(src, node)
    if not path:
        return []
    out: list[Binding] = []
    for child in node.named_children:
        if child.type == "namespace_wildcard":
            return dotted_binding(cap, path, wildcard=True)
        if child.type == "namespace_selectors":
            for sel in child.named_children:
                if sel.type == "identifier":
                    out.append(("import", _t(src, sel), f"{path}.{_t(src, sel)}", ""))
                elif sel.type == "arrow_renamed_identifier":
                    name = _t(src, sel.child_by_field_name("name"))
                    alias = _t(src, sel.child_by_field_name("alias"))
                    if name and alias != "_":
                        out.append(("import", name, f"{path}.{name}", alias))
                elif sel.type == "namespace_wildcard":
                    out.append(("import", "*", path, ""))
            return out
    return dotted_binding(cap, path)


IMPORTS = Imports(
    nodes=frozenset({"import_declaration"}),
    specs=_import_specs,
    query="(import_declaration) @i (package_clause) @p",
    bindings=_import_bindings,
)

LANGUAGE = Language("scala", (".scala",), SPEC, REFERENCES, family="jvm", imports=IMPORTS,
                    implicit_this=True, conventions=CONVENTIONS)
