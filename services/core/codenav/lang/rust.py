"""Rust: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import DIR, TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of, modifiers_text
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (scoped_identifier name: (identifier) @call) @call.expr)
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(call_expression function: (generic_function function: (identifier) @call) @call.expr)
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @call)) @call.expr)
(macro_invocation macro: (identifier) @call)
(struct_expression name: (type_identifier) @new)
(struct_expression name: (scoped_type_identifier name: (type_identifier) @new) @new.expr)
(impl_item trait: (type_identifier) @implements)
(impl_item trait: (generic_type type: (type_identifier) @implements))
(impl_item trait: (scoped_type_identifier name: (type_identifier) @implements) @implements.expr)
(trait_item bounds: (trait_bounds (type_identifier) @extends))
(type_identifier) @type
(scoped_type_identifier name: (type_identifier) @type) @type.expr
(type_parameter name: (type_identifier) @tparam)
(let_declaration pattern: (identifier) @var.name type: (_) @var.type)
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (scoped_identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (field_expression) @var.call))
(function_item name: (identifier) @ret.name return_type: (_) @ret.type)
(let_declaration pattern: (identifier) @var.name value: (struct_expression name: (_) @var.type))
(parameter pattern: (identifier) @var.name type: (_) @var.type)
(field_declaration name: (field_identifier) @var.name type: (_) @var.type)
"""


def _bases(node: Node) -> list[str]:
    trait = field_of(node, "trait") if node.type == "impl_item" else None
    return [_text(trait)] if trait is not None else []


def _name(node: Node) -> tuple[str, str | None] | None:
    if node.type == "impl_item":
        return _text(field_of(node, "type")).split("<")[0], None
    return None


def _exported(node: Node, name: str) -> bool:
    return any(m.startswith("pub") for m in modifiers_text(node).split())


SPEC = LangSpec(
    grammar="rust",
    defs={"function_item": "function", "function_signature_item": "function",
          "struct_item": "class", "union_item": "class", "enum_item": "enum",
          "trait_item": "interface", "type_item": "type", "macro_definition": "macro"},
    scopes={"mod_item": "module", "impl_item": ""},
    bodies=frozenset({"declaration_list"}),
    comments=frozenset({"line_comment", "block_comment"}),
    imports=frozenset({"use_declaration", "extern_crate_declaration"}),
    attached=frozenset({"attribute_item"}),
    bases=_bases,
    name=_name,
    exported=_exported,
)


def _import_specs(node: Node) -> list[str]:
    if node.type == "use_declaration":
        arg = node.child_by_field_name("argument")
        return [_text(arg).replace(" ", "").replace("\n", "")] if arg is not None else []
    if node.type == "extern_crate_declaration":
        return [_text(node.child_by_field_name("name"))]
    if node.type == "mod_item" and node.child_by_field_name("body") is None:
        return [f"mod {_text(node.child_by_field_name('name'))}"]
    return []


def _rust_use(node: Node, src: bytes, prefix: str, kind: str, out: list[Binding]) -> None:
    t = node.type
    if t in ("scoped_identifier", "identifier", "crate", "self", "super", "metavariable"):
        path = _t(src, node).replace(" ", "")
        full = f"{prefix}::{path}" if prefix else path
        last = full.rsplit("::", 1)[-1]
        if last == "self":
            full = full.rsplit("::", 1)[0]
            last = full.rsplit("::", 1)[-1]
        out.append((kind, last, full, ""))
    elif t == "use_as_clause":
        path = _t(src, node.child_by_field_name("path")).replace(" ", "")
        full = f"{prefix}::{path}" if prefix else path
        alias = _t(src, node.child_by_field_name("alias"))
        last = full.rsplit("::", 1)[-1]
        out.append((kind, last, full, alias if alias != last else ""))
    elif t == "use_wildcard":
        inner = [c for c in node.named_children]
        path = _t(src, inner[0]).replace(" ", "") if inner else ""
        full = f"{prefix}::{path}" if prefix and path else (prefix or path)
        out.append((kind, "*", full, ""))
    elif t == "scoped_use_list":
        path_node = node.child_by_field_name("path")
        path = _t(src, path_node).replace(" ", "") if path_node is not None else ""
        full = f"{prefix}::{path}" if prefix and path else (prefix or path)
        lst = node.child_by_field_name("list")
        if lst is not None:
            for child in lst.named_children:
                _rust_use(child, src, full, kind, out)
    elif t == "use_list":
        for child in node.named_children:
            _rust_use(child, src, prefix, kind, out)


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "m":
        if node.child_by_field_name("body") is not None:
            return []
        name = _t(src, node.child_by_field_name("name"))
        return [("import", name, f"mod:{name}", "")]
    if cap == "x":
        name = _t(src, node.child_by_field_name("name"))
        return [("import", "", name, "")]
    public = any(c.type == "visibility_modifier" for c in node.named_children)
    arg = node.child_by_field_name("argument")
    out: list[Binding] = []
    if arg is not None:
        _rust_use(arg, src, "", "reexport" if public else "import", out)
    return out


IMPORTS = Imports(
    nodes=frozenset({"use_declaration", "extern_crate_declaration", "mod_item"}),
    specs=_import_specs,
    query="(use_declaration) @i (mod_item) @m (extern_crate_declaration) @x",
    bindings=_import_bindings,
)

CONVENTIONS = (Convention(TEST, ("rust",), DIR + r"tests\.rs$", "Rust test modules"),)


LANGUAGE = Language("rust", (".rs",), SPEC, REFERENCES, family="rust", imports=IMPORTS,
                    conventions=CONVENTIONS)
