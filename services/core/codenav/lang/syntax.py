"""Small readers of tree-sitter nodes that the language modules share."""

from __future__ import annotations

from tree_sitter import Node

Binding = tuple[str, str, str, str]
"""What one import binds: (kind, name, spec, alias); see ``codenav.graph.bindings``."""


def node_text(node: Node | None) -> str:
    """A node's text (the tree keeps it)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def span(src: bytes, node: Node | None) -> str:
    """A node's text, cut from the source it was parsed from."""
    if node is None:
        return ""
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def unquote(text: str) -> str:
    return text.strip().strip("\"'`")


def dotted_binding(cap: str, path: str, wildcard: bool = False, alias: str = "") -> list[Binding]:
    """The binding of a JVM-style line naming dotted ``path``: the file's package (capture
    ``p``), a wildcard import of everything in ``path``, or an import of its last name (bound
    as ``alias`` when it has one)."""
    if cap == "p":
        return [("package", path, "", "")]
    if wildcard:
        return [("import", "*", path, "")]
    return [("import", path.rsplit(".", 1)[-1], path, alias)]
