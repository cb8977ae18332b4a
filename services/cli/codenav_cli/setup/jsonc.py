"""JSON and JSON with comments, edited in place.

A harness's config file is the user's file: ``codenav setup`` changes the one member it owns
and no other byte, so comments, key order, indentation and other servers survive, and
``--remove`` gives back the bytes that were there before. ``parse`` reads strict JSON and
JSONC (``//`` and ``/* */`` comments, trailing commas) keeping the offsets of every member;
``upsert``/``delete`` edit one member (and the containers on its path) by splicing text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from codenav.errors import ConfigError

_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


@dataclass
class Node:
    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    value: Any
    items: list[Item] = field(default_factory=list)


@dataclass
class Item:
    """A member of an object (``key`` set) or an element of an array."""

    start: int  # where the key (or the element) begins
    key: str | None
    node: Node
    comma: int | None = None  # offset of the comma after it


class _Parser:
    def __init__(self, text: str) -> None:
        self.t = text
        self.i = 0

    def fail(self, message: str) -> ConfigError:
        line = self.t.count("\n", 0, self.i) + 1
        col = self.i - (self.t.rfind("\n", 0, self.i) + 1) + 1
        return ConfigError(f"line {line} column {col}: {message}")

    def peek(self) -> str:
        return self.t[self.i] if self.i < len(self.t) else ""

    def skip(self) -> None:
        t = self.t
        while self.i < len(t):
            if t[self.i] in " \t\r\n\ufeff":
                self.i += 1
            elif t.startswith("//", self.i):
                end = t.find("\n", self.i)
                self.i = len(t) if end < 0 else end
            elif t.startswith("/*", self.i):
                end = t.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                self.i = end + 2
            else:
                return

    def string(self) -> str:
        match = _STRING.match(self.t, self.i)
        if not match:
            raise self.fail("invalid string")
        self.i = match.end()
        value: str = json.loads(match.group())
        return value

    def value(self) -> Node:
        self.skip()
        start, c = self.i, self.peek()
        if c in "{[":
            return self.container()
        if c == '"':
            text = self.string()
            return Node("scalar", start, self.i, text)
        match = _SCALAR.match(self.t, self.i)
        if not match:
            raise self.fail("expected a value")
        self.i = match.end()
        return Node("scalar", start, self.i, json.loads(match.group()))

    def container(self) -> Node:
        start, is_object = self.i, self.peek() == "{"
        close = "}" if is_object else "]"
        self.i += 1
        node = Node("object" if is_object else "array", start, start, {} if is_object else [])
        while True:
            self.skip()
            if self.peek() == close:
                break
            item_start, key = self.i, None
            if is_object:
                if self.peek() != '"':
                    raise self.fail("expected a quoted key")
                key = self.string()
                self.skip()
                if self.peek() != ":":
                    raise self.fail("expected ':'")
                self.i += 1
            child = self.value()
            item = Item(item_start, key, child)
            node.items.append(item)
            if key is not None:
                node.value[key] = child.value
            else:
                node.value.append(child.value)
            self.skip()
            if self.peek() == ",":
                item.comma = self.i
                self.i += 1
                continue
            if self.peek() != close:
                raise self.fail(f"expected ',' or '{close}'")
        self.i += 1
        node.end = self.i
        return node


def parse(text: str) -> Node:
    """The document's tree with offsets; ConfigError (with line and column) when malformed."""
    parser = _Parser(text)
    root = parser.value()
    parser.skip()
    if parser.i != len(text):
        raise parser.fail("unexpected text after the document")
    return root


def loads(text: str) -> Any:
    """The value of a JSON or JSONC document."""
    return parse(text).value


def has_comments(text: str) -> bool:
    """Whether the text holds a comment outside strings."""
    stripped = _STRING.sub('""', text)
    return "//" in stripped or "/*" in stripped


# --- editing -----------------------------------------------------------------------------

def _line_start(t: str, pos: int) -> int:
    return t.rfind("\n", 0, pos) + 1


def _line_end(t: str, pos: int) -> int:
    """Where the line holding ``pos`` ends, before its ``\n`` or ``\r\n``."""
    end = t.find("\n", pos)
    if end < 0:
        return len(t)
    return end - 1 if end > 0 and t[end - 1] == "\r" else end


def _next_line(t: str, pos: int) -> int:
    """Where the line after the one holding ``pos`` starts."""
    end = t.find("\n", pos)
    return len(t) if end < 0 else end + 1


def _newline(t: str) -> str:
    return "\r\n" if "\r\n" in t else "\n"


def _indent(t: str, pos: int) -> str:
    start = end = _line_start(t, pos)
    while end < len(t) and t[end] in " \t":
        end += 1
    return t[start:end]


def _own_line(t: str, pos: int) -> bool:
    return t[_line_start(t, pos):pos].strip(" \t") == ""


def _unit(t: str, root: Node) -> str:
    """The file's indentation step (two spaces when nothing says otherwise)."""
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.items and _own_line(t, node.items[0].start):
            inner, outer = _indent(t, node.items[0].start), _indent(t, node.start)
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer):]
        stack.extend(item.node for item in node.items if item.node.kind != "scalar")
    return "  "


def _dump(value: Any, unit: str, base: str, nl: str = "\n") -> str:
    """JSON for ``value`` starting at indentation ``base``: objects one member a line, arrays
    of plain values on one line (``"args": ["mcp"]``)."""
    if isinstance(value, dict) and value:
        inner = base + unit
        members = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_dump(v, unit, inner, nl)}"
                   for k, v in value.items()]
        return "{" + nl + ("," + nl).join(members) + nl + base + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        inner = base + unit
        parts = [inner + _dump(v, unit, inner, nl) for v in value]
        return "[" + nl + ("," + nl).join(parts) + nl + base + "]"
    return json.dumps(value, ensure_ascii=False)


def _head(key: str | None) -> str:
    return "" if key is None else json.dumps(key, ensure_ascii=False) + ": "


def _insert(t: str, node: Node, key: str | None, value: Any, unit: str) -> str:
    """Add an item at the end of a container; ``_remove`` of it gives ``t`` back."""
    nl = _newline(t)
    if not node.items:
        inner = t[node.start + 1:node.end - 1]
        outer = _indent(t, node.start)
        line = outer + unit
        member = _head(key) + _dump(value, unit, line, nl)
        if inner.strip() == "":
            return t[:node.start + 1] + nl + line + member + nl + outer + t[node.end - 1:]
        return t[:node.start + 1] + nl + line + member + t[node.start + 1:]
    last = node.items[-1]
    if not _own_line(t, node.items[0].start):  # a one-line container
        member = ", " + _head(key) + json.dumps(value, ensure_ascii=False)
        return t[:last.node.end] + member + t[last.node.end:]
    line = _indent(t, last.start)
    member = nl + line + _head(key) + _dump(value, unit, line, nl)
    if last.comma is not None:  # a trailing comma: the new item gets one too
        eol = min(_line_end(t, last.comma), node.end - 1)
        return t[:eol] + member + "," + t[eol:]
    eol = min(_line_end(t, last.node.end), node.end - 1)
    return t[:last.node.end] + "," + t[last.node.end:eol] + member + t[eol:]


def _remove(t: str, node: Node, index: int) -> str:
    items = node.items
    item = items[index]
    after = item.comma + 1 if item.comma is not None else item.node.end
    if len(items) == 1:
        rest = t[node.start + 1:item.start] + t[after:node.end - 1]
        if rest.strip() == "":
            return t[:node.start + 1] + t[node.end - 1:]
        if t[node.start + 1:item.start].strip() == "":
            start = node.start + 1
        elif _own_line(t, item.start):
            start = _line_start(t, item.start)
        else:
            start = item.start
        return t[:start] + t[after:]
    if index == len(items) - 1:
        prev = items[index - 1]
        assert prev.comma is not None
        if _own_line(t, item.start) and _line_start(t, item.start) > prev.comma:
            start = _line_end(t, _line_start(t, item.start) - 1)
            if item.comma is not None:
                return t[:start] + t[item.comma + 1:]
            return t[:prev.comma] + t[prev.comma + 1:start] + t[item.node.end:]
        return t[:prev.comma] + t[item.node.end:]
    nxt = items[index + 1]
    assert item.comma is not None
    if _own_line(t, item.start) and _own_line(t, nxt.start):
        return t[:_line_start(t, item.start)] + t[_next_line(t, item.comma):]
    return t[:item.start] + t[nxt.start:]


def _find(node: Node, key: str) -> int | None:
    found = None
    for index, item in enumerate(node.items):
        if item.key == key:
            found = index
    return found


def _walk(t: str, path: list[str]) -> tuple[Node, Node | None]:
    """(the root, the object at ``path``, or None when a step is missing)."""
    root = parse(t)
    if root.kind != "object":
        raise ConfigError("the file's top level is not a JSON object")
    node: Node | None = root
    for depth, key in enumerate(path):
        assert node is not None
        index = _find(node, key)
        if index is None:
            return root, None
        node = node.items[index].node
        if node.kind != "object":
            raise ConfigError(f"{'.'.join(path[:depth + 1])} is not a JSON object")
    return root, node


def upsert(t: str, path: list[str], value: Any) -> str:
    """Set the member at ``path`` (creating the objects on the way) to ``value``."""
    root, _ = _walk(t, [])
    unit = _unit(t, root)
    node = root
    for depth, key in enumerate(path):
        index = _find(node, key)
        if index is None:
            nested = value
            for outer_key in reversed(path[depth + 1:]):
                nested = {outer_key: nested}
            return _insert(t, node, key, nested, unit)
        item = node.items[index]
        if depth == len(path) - 1:
            if item.node.value == value:
                return t
            line = _indent(t, item.start)
            return (t[:item.node.start] + _dump(value, unit, line, _newline(t))
                    + t[item.node.end:])
        if item.node.kind != "object":
            raise ConfigError(f"{'.'.join(path[:depth + 1])} is not a JSON object")
        node = item.node
    return t


def upsert_element(t: str, path: list[str], ident: str, value: dict[str, Any]) -> str:
    """Set the element of the array at ``path`` whose ``ident`` matches ``value``'s."""
    root, parent = _walk(t, path[:-1])
    if parent is None:
        return upsert(t, path, [value])
    index = _find(parent, path[-1])
    if index is None:
        return upsert(t, path, [value])
    array = parent.items[index].node
    if array.kind != "array":
        raise ConfigError(f"{'.'.join(path)} is not a JSON array")
    for item in array.items:
        if isinstance(item.node.value, dict) and item.node.value.get(ident) == value[ident]:
            if item.node.value == value:
                return t
            line = _indent(t, item.start)
            return (t[:item.node.start] + _dump(value, _unit(t, root), line, _newline(t))
                    + t[item.node.end:])
    return _insert(t, array, None, value, _unit(t, root))


def _empty(t: str, node: Node) -> bool:
    return not node.items and t[node.start + 1:node.end - 1].strip() == ""


def delete(t: str, path: list[str]) -> str:
    """Remove the member at ``path``, then each object on the path it leaves empty."""
    for cut in range(len(path), 0, -1):
        _, parent = _walk(t, path[:cut - 1])
        if parent is None:
            return t
        index = _find(parent, path[cut - 1])
        if index is None:
            return t
        if cut < len(path) and not _empty(t, parent.items[index].node):
            return t
        t = _remove(t, parent, index)
    return t


def delete_element(t: str, path: list[str], ident: str, value: str) -> str:
    """Remove the element of the array at ``path`` whose ``ident`` is ``value``, and the
    array (and objects on the path) when that leaves it empty."""
    _, parent = _walk(t, path[:-1])
    index = None if parent is None else _find(parent, path[-1])
    if parent is None or index is None:
        return t
    array = parent.items[index].node
    if array.kind != "array":
        return t
    for at, item in enumerate(array.items):
        if isinstance(item.node.value, dict) and item.node.value.get(ident) == value:
            t = _remove(t, array, at)
            _, parent = _walk(t, path[:-1])
            assert parent is not None
            index = _find(parent, path[-1])
            if index is not None and _empty(t, parent.items[index].node):
                t = delete(t, path)
            return t
    return t
