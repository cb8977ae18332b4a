"""TSX (TypeScript with JSX): its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.javascript import CONVENTIONS, JS_DEFS, JS_PARTS, JSX, NOT_CALLS, ts_name
from codenav.lang.spec import LangSpec
from codenav.lang.typescript import IMPORTS, REFERENCES

SPEC = LangSpec(grammar="tsx", defs=JS_DEFS, name=ts_name, **JS_PARTS)  # type: ignore[arg-type]


LANGUAGE = Language("tsx", (".tsx",), SPEC, REFERENCES + JSX, family="js", imports=IMPORTS,
                    not_calls=NOT_CALLS, conventions=CONVENTIONS)
