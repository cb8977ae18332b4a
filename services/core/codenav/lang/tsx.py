"""TSX (TypeScript with JSX): its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.javascript import JS_DEFS, JS_PARTS, JSX
from codenav.lang.spec import LangSpec
from codenav.lang.typescript import REFERENCES

SPEC = LangSpec(grammar="tsx", defs=JS_DEFS, **JS_PARTS)  # type: ignore[arg-type]

LANGUAGE = Language("tsx", (".tsx",), SPEC, REFERENCES + JSX)
