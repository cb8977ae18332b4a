"""Java: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import DIR, TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of, first_of
from codenav.lang.syntax import Binding, dotted_binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(method_invocation name: (identifier) @call) @call.expr
(method_reference (identifier) @call .) @call.expr
(object_creation_expression type: (type_identifier) @new)
(object_creation_expression type: (generic_type (type_identifier) @new))
(object_creation_expression type: (scoped_type_identifier (type_identifier) @new .) @new.expr)
(object_creation_expression type: (generic_type (scoped_type_identifier (type_identifier) @new .) @new.expr))
(superclass (type_identifier) @extends)
(superclass (generic_type (type_identifier) @extends))
(superclass (scoped_type_identifier (type_identifier) @extends .) @extends.expr)
(super_interfaces (type_list (type_identifier) @implements))
(super_interfaces (type_list (generic_type (type_identifier) @implements)))
(super_interfaces (type_list (scoped_type_identifier (type_identifier) @implements .) @implements.expr))
(extends_interfaces (type_list (type_identifier) @extends))
(extends_interfaces (type_list (generic_type (type_identifier) @extends)))
(type_identifier) @type
(type_parameter (type_identifier) @tparam)
(local_variable_declaration type: (_) @var.type declarator: (variable_declarator name: (identifier) @var.name))
(local_variable_declaration type: (type_identifier) @_var (#eq? @_var "var")
  declarator: (variable_declarator name: (identifier) @var.name
                                   value: (object_creation_expression type: (_) @var.type)))
(field_declaration type: (_) @var.type declarator: (variable_declarator name: (identifier) @var.name))
(formal_parameter type: (_) @var.type name: (identifier) @var.name)
(enhanced_for_statement type: (_) @var.type name: (identifier) @var.name)
(resource type: (_) @var.type name: (identifier) @var.name)
(local_variable_declaration type: (type_identifier) @_var (#eq? @_var "var")
  declarator: (variable_declarator name: (identifier) @var.name value: (method_invocation) @var.call))
(method_declaration type: (_) @ret.type name: (identifier) @ret.name)
"""


def _bases(node: Node) -> list[str]:
    out: list[str] = []
    sup = field_of(node, "superclass")
    if sup is not None:
        out += [_text(c) for c in sup.named_children]
    part = field_of(node, "interfaces")
    if part is not None:
        for tl in part.named_children:
            out += [_text(c) for c in tl.named_children]
    ext = first_of(node, ("extends_interfaces",))
    if ext is not None:
        for tl in ext.named_children:
            out += [_text(c) for c in tl.named_children]
    return out


SPEC = LangSpec(
    grammar="java",
    defs={"class_declaration": "class", "interface_declaration": "interface",
          "enum_declaration": "enum", "record_declaration": "class",
          "annotation_type_declaration": "interface", "method_declaration": "method",
          "constructor_declaration": "constructor",
          "compact_constructor_declaration": "constructor"},
    scopes={"enum_body_declarations": ""},
    bodies=frozenset({"class_body", "interface_body", "enum_body",
                      "enum_body_declarations", "annotation_type_body"}),
    comments=frozenset({"block_comment", "line_comment", "comment"}),
    imports=frozenset({"import_declaration"}),
    public_keywords=frozenset({"public", "protected"}),
    bases=_bases,
)


def _import_specs(node: Node) -> list[str]:
    text = _text(node).strip().removeprefix("import").strip().removesuffix(";").strip()
    text = text.removeprefix("static ").strip()
    return [text.replace(" ", "")] if text else []


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    named = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
    if not named:
        return []
    return dotted_binding(cap, _t(src, named[0]).replace(" ", ""),
                          any(c.type == "asterisk" for c in node.named_children))


IMPORTS = Imports(
    nodes=frozenset({"import_declaration"}),
    specs=_import_specs,
    query="(import_declaration) @i (package_declaration) @p",
    bindings=_import_bindings,
)

JVM_NAMES = ("java", "kotlin", "scala")
CONVENTIONS = (
    Convention(TEST, JVM_NAMES, DIR + r"[^/]*(Suite|IT)\.[A-Za-z0-9]+$", "FooSuite, FooIT classes"),
    Convention(TEST, JVM_NAMES, r"(^|/)src/(test|it|integrationTest|testFixtures|androidTest|"
               r"commonTest|jvmTest|jsTest|nativeTest)/", "Maven/Gradle test source sets"),
)
"""The JVM ecosystem's (Maven and Gradle layouts, for Kotlin and Scala too)."""


LANGUAGE = Language("java", (".java",), SPEC, REFERENCES, family="jvm", imports=IMPORTS,
                    implicit_this=True, conventions=CONVENTIONS)
