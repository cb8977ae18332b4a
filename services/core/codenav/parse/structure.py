"""Walking a tree-sitter tree down to declarations, without visiting function bodies.

The walk touches only the top level, wrappers, scopes and class bodies, so its cost grows
with the number of declarations, not with the size of the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from codenav.parse.langs import (
    CLASS_LIKE,
    LangSpec,
    bases_of,
    exported_of,
    is_declaration,
    name_of,
    refine_kind,
)

_WS = re.compile(r"\s+")
MAX_SIGNATURE = 240
MAX_DOC = 600


@dataclass
class Decl:
    node: Node
    kind: str
    name: str
    parent: str | None
    qualname: str
    start_row: int
    """First row of the declaration including its decorators, export keyword and doc."""
    end_row: int
    exported: bool
    signature: str
    doc: str
    body: Node | None
    depth: int
    bases: tuple[str, ...] = ()
    members: list[Decl] = field(default_factory=list)
    scope_only: bool = False
    """A namespace/module/impl: its members get chunks, the scope itself none."""


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _body(spec: LangSpec, node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in spec.bodies:
            return child
    return None


def _signature(src: bytes, node: Node, body: Node | None) -> str:
    if body is not None and body.start_byte > node.start_byte:
        data = src[node.start_byte:min(body.start_byte, node.start_byte + 2000)]
    else:
        data = src[node.start_byte:min(node.end_byte, node.start_byte + 2000)]
        brace = data.find(b"{")
        data = data[:brace] if 0 <= brace < 200 else data.split(b"\n", 1)[0]
    text = _WS.sub(" ", data.decode("utf-8", "replace")).strip().rstrip("{:").strip()
    return text[:MAX_SIGNATURE]


def _clean_comment(text: str) -> str:
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        for prefix in ("/**", "/*!", "/*", "*/", "///", "//!", "//", "#", "*"):
            if line.startswith(prefix):
                line = line[len(prefix):]
                break
        line = line.removesuffix("*/").strip()
        if line:
            lines.append(line)
    return " ".join(lines)


def _python_docstring(body: Node | None) -> str:
    if body is None:
        return ""
    for child in body.named_children:
        if child.type == "comment":
            continue
        if child.type == "expression_statement" and child.named_children and \
                child.named_children[0].type == "string":
            child = child.named_children[0]
        if child.type == "string":
            raw = _text(child)
            return _WS.sub(" ", raw.strip("\"'rbuRBU").strip()).strip()[:MAX_DOC]
        return ""
    return ""


def _leading_comments(spec: LangSpec, outer: Node) -> tuple[int, str]:
    """Comments directly above ``outer`` (no blank line between): first row and text."""
    rows = outer.start_point[0]
    texts: list[str] = []
    prev = outer.prev_named_sibling
    first = rows
    while prev is not None and prev.type in spec.comments and prev.end_point[0] >= first - 1:
        if prev.end_point[0] == prev.start_point[0] and prev.start_point[0] == first and \
                prev.start_point[1] > 0:
            break
        texts.append(_text(prev))
        first = prev.start_point[0]
        prev = prev.prev_named_sibling
    texts.reverse()
    return first, _clean_comment("\n".join(texts))[:MAX_DOC]


class Walker:
    def __init__(self, spec: LangSpec, src: bytes) -> None:
        self.spec = spec
        self.src = src

    def walk(self, root: Node) -> list[Decl]:
        return self._members(root, [], None, 0, in_class=False)

    def _members(self, container: Node, scope: list[str], parent: str | None, depth: int,
                 in_class: bool) -> list[Decl]:
        out: list[Decl] = []
        for child in container.named_children:
            out += self._visit(child, child, scope, parent, depth, False, in_class)
        return out

    def _visit(self, node: Node, outer: Node, scope: list[str], parent: str | None,
               depth: int, exported: bool, in_class: bool) -> list[Decl]:
        spec = self.spec
        t = node.type
        if t in spec.wrappers:
            wrapped_exported = exported or t in spec.export_wrappers
            inner = node.child_by_field_name("definition") or node.child_by_field_name(
                "declaration")
            candidates = [inner] if inner is not None else list(node.named_children)
            out: list[Decl] = []
            for cand in candidates:
                if cand is None:
                    continue
                if cand.type in spec.defs or cand.type in spec.scopes or \
                        cand.type in spec.wrappers:
                    out += self._visit(cand, outer, scope, parent, depth, wrapped_exported,
                                       in_class)
            return out
        if t in spec.scopes:
            return self._scope(node, outer, scope, parent, depth, exported)
        if t in spec.defs and is_declaration(spec, node):
            decl = self._decl(node, outer, scope, parent, depth, exported, in_class)
            return [decl] if decl is not None else []
        return []

    def _scope(self, node: Node, outer: Node, scope: list[str], parent: str | None,
               depth: int, exported: bool) -> list[Decl]:
        """Namespaces and modules (kind set) nest their members; impl blocks and groups
        (kind '') pass their members through, impl members owned by the impl's type."""
        spec = self.spec
        kind = spec.scopes[node.type]
        name, _owner = name_of(spec, node)
        body = _body(spec, node)
        if kind and name:
            inner_scope, inner_parent, inner_depth, in_class = scope + [name], name, depth + 1, \
                False
        elif name:  # impl block: members are methods of `name`
            inner_scope, inner_parent, inner_depth, in_class = scope + [name], name, depth + 1, \
                True
        else:
            inner_scope, inner_parent, inner_depth, in_class = scope, parent, depth, False
        if body is not None:
            members = self._members(body, inner_scope, inner_parent, inner_depth, in_class)
        else:
            members = []
            children = node.named_children
            for child in children:
                members += self._visit(child, outer if len(children) == 1 else child,
                                       inner_scope, inner_parent, inner_depth, exported,
                                       in_class)
        if not (kind and name):
            return members
        first_row, doc = _leading_comments(spec, outer)
        return [Decl(
            node=node, kind=kind, name=name, parent=parent,
            qualname=".".join(inner_scope), start_row=first_row, end_row=node.end_point[0],
            exported=exported_of(spec, node, name, exported), signature=_signature(self.src, node, body),
            doc=doc, body=body, depth=depth, members=members, scope_only=True,
        )]

    def _decl(self, node: Node, outer: Node, scope: list[str], parent: str | None,
              depth: int, exported: bool, in_class: bool) -> Decl | None:
        spec = self.spec
        name, owner = name_of(spec, node)
        if not name:
            return None
        kind = refine_kind(spec, node, spec.defs[node.type])
        qual = [*scope, name]
        if owner:
            owner_short = owner.replace("::", ".").split(".")[-1]
            qual = [*scope, *owner.replace("::", ".").split("."), name]
            parent = owner_short
            in_class = True
        if kind == "function" and in_class:
            kind = "method"
        body = _body(spec, node)
        first_row, doc = _leading_comments(spec, outer)
        if spec.python_docstrings:
            doc = _python_docstring(body) or doc
        decl = Decl(
            node=node, kind=kind, name=name, parent=parent, qualname=".".join(qual),
            start_row=first_row, end_row=node.end_point[0],
            exported=exported_of(spec, node, name, exported),
            signature=_signature(self.src, node, body), doc=doc, body=body, depth=depth,
        )
        if kind in CLASS_LIKE:
            decl.bases = bases_of(spec, node)
            if body is not None:
                decl.members = self._members(body, qual, name, depth + 1, in_class=True)
                for member in decl.members:
                    member.exported = _member_exported(spec, decl, member, self.src)
        return decl


def _member_exported(spec: LangSpec, owner: Decl, member: Decl, src: bytes) -> bool:
    """A member is visible outside when its class is, and it is not private itself."""
    if not owner.exported:
        return False
    if owner.kind == "interface":
        return True
    if spec.grammar in ("javascript", "typescript", "tsx"):
        mods = src[member.node.start_byte:member.node.start_byte + 16].decode("utf-8", "replace")
        return not member.name.startswith("#") and not mods.startswith(("private", "#"))
    return member.exported
