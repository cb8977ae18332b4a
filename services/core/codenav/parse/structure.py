"""Walking a tree-sitter tree down to declarations, without visiting function bodies.

The walk touches only the top level, wrappers, scopes and class bodies, so its cost grows
with the number of declarations, not with the size of the code. Nesting deeper than
``MAX_DEPTH`` is not walked (its code stays in the chunk of the enclosing declaration), so
pathological input cannot exhaust the Python stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from codenav.lang.spec import (
    CLASS_LIKE,
    LangSpec,
    bases_of,
    exported_of,
    is_constructor,
    is_declaration,
    js_value,
    name_of,
    refine_kind,
    scope_kind,
    visibility_marker,
)

_WS = re.compile(r"\s+")
_PY_STRING_START = re.compile(r"[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")
_XML_DOC_TAGS = re.compile(r"</?(?:summary|remarks|para)>")
MAX_SIGNATURE = 240
MAX_DOC = 600
MAX_DEPTH = 40
"""Declarations nested deeper than this stay inside their enclosing declaration's chunk."""


@dataclass(eq=False)  # compared by identity: field-wise equality is slow and meaningless
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
    header_end_row: int = -1
    """Last row of the header (the signature); the body starts after it."""


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def end_row(node: Node) -> int:
    """The last row ``node`` has text on (a node that ends with a newline ends at column 0
    of the row below)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _body(spec: LangSpec, node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    value = js_value(node)  # const f = () => {...}; exports.f = function () {...}
    if value is not None:
        return value.child_by_field_name("body")
    for child in node.named_children:
        if child.type in spec.bodies:
            return child
    return None


def _header_end(spec: LangSpec, node: Node, body: Node | None) -> tuple[int, int]:
    """End byte and row of the declaration's header: up to its body, without comments that
    sit between the two."""
    if body is None or body.start_byte <= node.start_byte:
        return node.end_byte, end_row(node)
    prev = body.prev_sibling
    while prev is not None and prev.type in spec.comments:
        prev = prev.prev_sibling
    if prev is None or prev.end_byte <= node.start_byte:
        return body.start_byte, body.start_point[0]
    return prev.end_byte, end_row(prev)


def _signature(spec: LangSpec, src: bytes, node: Node, body: Node | None,
               header_end: int | None = None) -> str:
    if node.type in spec.signature_whole:
        body = None
    if body is not None and body.start_byte > node.start_byte:
        end = header_end if header_end is not None else _header_end(spec, node, body)[0]
        data = src[node.start_byte:min(end, node.start_byte + 2000)]
    else:
        data = src[node.start_byte:min(node.end_byte, node.start_byte + 2000)]
        brace = data.find(b"{")
        data = data[:brace] if 0 <= brace < 200 else data.split(b"\n", 1)[0]
    text = _WS.sub(" ", data.decode("utf-8", "replace")).strip().rstrip("{:; ")
    if text.endswith(" ="):  # Ruby/Kotlin/Scala-style `def f(x) = ...`
        text = text[:-2].rstrip()
    if node.type in spec.signature_prefix:
        text = f"{spec.signature_prefix[node.type]} {text}"
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
    text = " ".join(lines)
    if "<" in text:  # C# XML doc: <summary>...</summary>
        text = _WS.sub(" ", _XML_DOC_TAGS.sub(" ", text)).strip()
    return text


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
            quote = _PY_STRING_START.match(raw)
            if quote is not None:
                raw = raw[quote.end():].removesuffix(quote.group(1))
            return _WS.sub(" ", raw).strip()[:MAX_DOC]
        return ""
    return ""


def _leading_comments(spec: LangSpec, outer: Node) -> tuple[int, str]:
    """Comments (and attached attributes) directly above ``outer``, with no blank line
    between: their first row, and the comments' text."""
    first = outer.start_point[0]
    texts: list[str] = []
    prev = outer.prev_named_sibling
    while prev is not None and end_row(prev) >= first - 1:
        if prev.type in spec.comments:
            before = prev.prev_sibling
            if before is not None and before.type not in spec.comments and \
                    before.end_point[0] == prev.start_point[0]:
                break  # a trailing comment of the code on its line
            texts.append(_text(prev))
        elif prev.type not in spec.attached:
            break
        first = prev.start_point[0]
        prev = prev.prev_named_sibling
    texts.reverse()
    return first, _clean_comment("\n".join(texts))[:MAX_DOC]


def _restrict(decls: list[Decl], visibility: str) -> None:
    """Hide declarations that follow ``private:``/``protected:`` (C++) or ``private`` (Ruby)."""
    if visibility != "public":
        for decl in decls:
            decl.exported = False


class Walker:
    def __init__(self, spec: LangSpec, src: bytes) -> None:
        self.spec = spec
        self.src = src
        self.scope_rows: list[tuple[int, int]] = []
        """Header and footer rows of scopes (``namespace x {``, ``}``): no code of their own."""
        self._impl_traits: dict[str, list[str]] = {}
        self._open_scopes = 0

    def walk(self, root: Node) -> list[Decl]:
        decls = self._members(root, [], None, 0, in_class=False)
        if self._impl_traits:
            self._add_impl_traits(decls)
        if self.spec.exported_names is not None:
            names = self.spec.exported_names(root)
            for decl in decls:
                if decl.name in names and not decl.exported and not decl.scope_only:
                    decl.exported = True
                    for member in decl.members:
                        member.exported = _member_exported(self.spec, decl, member, self.src)
            exported = {d.name for d in decls if d.exported and d.parent is None}
            for decl in decls:  # Foo.prototype.bar = function () {...}
                if decl.parent is not None and decl.parent in exported:
                    decl.exported = True
        return decls

    def _members(self, container: Node, scope: list[str], parent: str | None, depth: int,
                 in_class: bool) -> list[Decl]:
        spec = self.spec
        if depth > MAX_DEPTH:
            return []
        markers = in_class and spec.visibility_markers
        visibility = _default_visibility(spec, container) if markers else "public"
        out: list[Decl] = []
        children = container.named_children
        for i, child in enumerate(children):
            if child.type in spec.file_scopes:
                out += self._file_scope(child, children[i + 1:], scope, parent, depth)
                break
            if markers:
                word, target = visibility_marker(spec, child)
                if word and target is None:
                    visibility = word
                    continue
                if target is not None:
                    found = self._visit(target, child, scope, parent, depth, False, in_class)
                    _restrict(found, word)
                    out += found
                    continue
            found = self._visit(child, child, scope, parent, depth, False, in_class)
            _restrict(found, visibility)
            out += found
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
        kind = scope_kind(spec, node)
        if kind is not None:
            if self._open_scopes > MAX_DEPTH:  # scopes that pass members through nest too
                return []
            self._open_scopes += 1
            try:
                return self._scope(node, kind, outer, scope, parent, depth, exported,
                                   in_class)
            finally:
                self._open_scopes -= 1
        if t in spec.defs and is_declaration(spec, node):
            decl = self._decl(node, outer, scope, parent, depth, exported, in_class)
            return [decl] if decl is not None else []
        return []

    def _scope(self, node: Node, kind: str, outer: Node, scope: list[str],
               parent: str | None, depth: int, exported: bool, in_class: bool) -> list[Decl]:
        """Namespaces and modules (kind set) nest their members; impl blocks, extensions
        and groups (kind '') pass their members through, owned by the impl's type."""
        spec = self.spec
        name, _owner = name_of(spec, node)
        body = _body(spec, node)
        first_row, doc = _leading_comments(spec, outer)
        inner_scope, inner_parent, inner_depth, inner_class = scope, parent, depth, in_class
        if name:  # a namespace nests its members; an impl block makes them methods of `name`
            inner_scope, inner_parent, inner_depth, inner_class = scope + [name], name, \
                depth + 1, not kind
        if body is not None and (body.type in spec.defs or body.type in spec.wrappers):
            # extern "C" int f(void) {...}: the scope wraps a single declaration
            members = self._visit(body, outer, inner_scope, inner_parent, inner_depth,
                                  exported, inner_class)
        elif body is not None:
            self.scope_rows.append((first_row, body.start_point[0]))
            self.scope_rows.append((end_row(body), end_row(node)))
            members = self._members(body, inner_scope, inner_parent, inner_depth,
                                    inner_class)
        else:
            members = []
            children = node.named_children
            if len(children) > 1:
                self.scope_rows.append((first_row, node.start_point[0]))
                self.scope_rows.append((end_row(node), end_row(node)))
            for child in children:
                own = len(children) == 1 and child.start_point[0] == node.start_point[0]
                members += self._visit(child, outer if own else child, inner_scope,
                                       inner_parent, inner_depth, exported, inner_class)
        if node.type == "impl_item" and name:
            trait = node.child_by_field_name("trait")
            if trait is not None:  # impl Trait for T: T's bases; methods public as the trait
                self._impl_traits.setdefault(name, []).append(_text(trait).split("<")[0])
                for member in members:
                    member.exported = True
        elif name and node.type not in spec.scopes:  # an extension (``scope_kind``): what
            # it conforms to is the extended type's too
            self._impl_traits.setdefault(name, []).extend(bases_of(spec, node))
        if not (kind and name):
            return members
        body_for_sig = body if body is not None and body.type not in spec.defs else None
        return [Decl(
            node=node, kind=kind, name=name, parent=parent,
            qualname=".".join(inner_scope), start_row=first_row, end_row=end_row(node),
            exported=exported_of(spec, node, name, exported),
            signature=_signature(spec, self.src, node, body_for_sig),
            doc=doc, body=body, depth=depth, members=members, scope_only=True,
        )]

    def _file_scope(self, node: Node, rest: list[Node], scope: list[str], parent: str | None,
                    depth: int) -> list[Decl]:
        """``namespace X;``: everything after it in the file is a member of X."""
        spec = self.spec
        name, _owner = name_of(spec, node)
        first_row, doc = _leading_comments(spec, node)
        self.scope_rows.append((first_row, end_row(node)))
        inner = scope + [name] if name else scope
        members: list[Decl] = []
        for child in rest:
            members += self._visit(child, child, inner, name or parent,
                                   depth + 1 if name else depth, False, False)
        if not name:
            return members
        last_row = max([end_row(node)] + [end_row(c) for c in rest])
        return [Decl(
            node=node, kind="module", name=name, parent=parent, qualname=".".join(inner),
            start_row=first_row, end_row=last_row,
            exported=exported_of(spec, node, name, False),
            signature=_signature(spec, self.src, node, None), doc=doc, body=None,
            depth=depth, members=members, scope_only=True,
        )]

    def _decl(self, node: Node, outer: Node, scope: list[str], parent: str | None,
              depth: int, exported: bool, in_class: bool) -> Decl | None:
        spec = self.spec
        name, owner = name_of(spec, node)
        if not name:
            return None
        kind = refine_kind(spec, node, spec.defs[node.type])
        qual = [*scope, name]
        if owner:  # func (c *Cache) Get, int Matrix::n(), Foo.prototype.bar = ...
            owner_parts = owner.replace("::", ".").split(".")
            qual = [*scope, *owner_parts, name]
            parent = owner_parts[-1]
            depth += len(owner_parts)
            in_class = True
        if kind == "function" and in_class:
            kind = "method"
        elif kind == "method" and not in_class and spec.bare_methods_are_functions:
            kind = "function"
        if kind in ("function", "method") and in_class and \
                is_constructor(spec, node, name, parent):
            kind = "constructor"
        body = _body(spec, node)
        first_row, doc = _leading_comments(spec, outer)
        if spec.python_docstrings:
            doc = _python_docstring(body) or doc
        header_end, header_end_row = _header_end(spec, node, body)
        decl = Decl(
            node=node, kind=kind, name=name, parent=parent, qualname=".".join(qual),
            start_row=first_row, end_row=end_row(node),
            exported=exported_of(spec, node, name, exported),
            signature=_signature(spec, self.src, node, body, header_end), doc=doc, body=body,
            depth=depth, header_end_row=header_end_row,
        )
        if kind in CLASS_LIKE:
            decl.bases = bases_of(spec, node)
            if body is not None:
                decl.members = self._members(body, qual, name, depth + 1, in_class=True)
                for member in decl.members:
                    member.exported = _member_exported(spec, decl, member, self.src)
        return decl

    def _add_impl_traits(self, decls: list[Decl]) -> None:
        for decl in decls:
            traits = self._impl_traits.get(decl.name)
            if traits and decl.kind in ("class", "enum"):
                decl.bases = tuple(dict.fromkeys([*decl.bases, *traits]))
            if decl.members:
                self._add_impl_traits(decl.members)


def _default_visibility(spec: LangSpec, container: Node) -> str:
    """Members are public until said otherwise, but in ``spec.private_members`` (C++
    ``class``; a ``struct``'s are public)."""
    owner = container.parent
    if owner is not None and owner.type in spec.private_members:
        return "private"
    return "public"


def _member_exported(spec: LangSpec, owner: Decl, member: Decl, src: bytes) -> bool:
    """A member is visible outside when its class is, and it is not private itself."""
    if spec.members_export_alone:
        return member.exported
    if not owner.exported:
        return False
    if owner.kind == "interface":
        return True
    if spec.member_exported is not None:
        return spec.member_exported(member.node, member.name, src)
    return member.exported
