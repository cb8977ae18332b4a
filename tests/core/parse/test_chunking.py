"""Cutting source files into chunks, symbols and imports, per language (no database).

Each fixture under ``tests/fixtures/langs`` is a small realistic file; the tables below pin
what the parser must find in it: every symbol with its kind and line range, which symbols
are exported, the bases of classes, and the imports, as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codenav.lang import language_for
from codenav.parse.chunker import ChunkLimits, parse_file
from codenav.parse.model import Chunk, ParsedFile, Symbol

FIXTURES = Path(__file__).parents[2] / "fixtures" / "langs"
SOURCE_FILES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix not in (".md", ".txt"))
ALL_FILES = sorted(p.name for p in FIXTURES.iterdir())


def _parse(name: str, limits: ChunkLimits = ChunkLimits()) -> ParsedFile:
    return parse_file((FIXTURES / name).read_text(), language_for(name), limits)


def _symbol(parsed: ParsedFile, qualname: str) -> Symbol:
    found = [s for s in parsed.symbols if s.qualname == qualname]
    assert len(found) == 1, (qualname, [s.qualname for s in parsed.symbols])
    return found[0]


def _chunk(parsed: ParsedFile, symbol: str, kind: str | None = None) -> Chunk:
    found = [c for c in parsed.chunks if c.symbol == symbol and (kind is None or c.kind == kind)]
    assert len(found) == 1, (symbol, [(c.symbol, c.kind) for c in parsed.chunks])
    return found[0]


def _lines(name: str, start: int, end: int) -> str:
    return "\n".join((FIXTURES / name).read_text().split("\n")[start - 1:end])


# ---------------------------------------------------------------------------------------------
# What each fixture declares: (qualname, kind, start_line, end_line). A symbol's range starts
# at its declaration node (annotations and attributes that the grammar puts inside it
# included), not at the doc comment or the decorators above it.

SYMBOLS: dict[str, set[tuple[str, str, int, int]]] = {
    "inventory.py": {
        ("Stock", "class", 23, 28),
        ("Warehouse", "class", 31, 58),
        ("Warehouse.__init__", "method", 34, 36),
        ("Warehouse.receive", "method", 38, 43),
        ("Warehouse.total", "method", 46, 47),
        ("Warehouse._audit", "method", 49, 52),
        ("Warehouse.Report", "class", 54, 58),
        ("Warehouse.Report.lines", "method", 57, 58),
        ("parse_location", "function", 62, 64),
        ("_refresh", "function", 67, 68),
        ("Catalog", "class", 71, 72),
    },
    "store.ts": {
        ("Entry", "interface", 11, 14),
        ("Listener", "type", 16, 16),
        ("Mode", "enum", 18, 21),
        ("Store", "class", 26, 51),
        ("Store.constructor", "constructor", 29, 31),
        ("Store.get", "method", 34, 36),
        ("Store.set", "method", 38, 42),
        ("Store.flush", "method", 44, 46),
        ("Store.[Symbol.iterator]", "method", 48, 50),
        ("Backend", "class", 53, 55),
        ("Backend.open", "method", 54, 54),
        ("createStore", "function", 57, 59),
        ("keyOf", "function", 61, 61),
        ("debug", "function", 63, 65),
        ("events", "module", 67, 71),
        ("events.EventEmitter", "interface", 68, 70),
        ("events.EventEmitter.tap", "method", 69, 69),
        ("Internal", "module", 73, 75),
        ("Internal.reset", "function", 74, 74),
    },
    "TodoList.tsx": {
        ("TodoListProps", "interface", 6, 9),
        ("TodoList", "function", 14, 27),
        ("TodoItem", "function", 30, 34),
        ("ErrorBoundary", "class", 36, 46),
        ("ErrorBoundary.getDerivedStateFromError", "method", 39, 41),
        ("ErrorBoundary.render", "method", 43, 45),
    },
    "server.js": {
        ("StaticServer", "class", 13, 36),
        ("StaticServer.constructor", "constructor", 16, 19),
        ("StaticServer.lookup", "method", 22, 27),
        ("StaticServer.#evict", "method", 29, 31),
        ("StaticServer.create", "method", 33, 35),
        ("handler", "function", 39, 41),
        ("toJson", "function", 43, 45),
        ("walk", "function", 47, 49),
        ("StaticServer.reset", "method", 51, 53),
        ("version", "function", 55, 55),
        ("start", "function", 57, 61),
    },
    "Button.jsx": {
        ("Button", "function", 7, 11),
        ("Spinner", "function", 18, 20),
    },
    "cache.go": {
        ("Cache", "class", 21, 26),
        ("Store", "interface", 29, 32),
        ("Store.Load", "method", 30, 30),
        ("Store.Save", "method", 31, 31),
        ("Key", "type", 36, 36),
        ("entry", "class", 37, 40),
        ("Legacy", "type", 44, 44),
        ("New", "function", 47, 49),
        ("Cache.Get", "method", 52, 57),
        ("Cache.evict", "method", 59, 61),
        ("entry.String", "method", 63, 65),
        ("normalize", "function", 67, 67),
    },
    "OrderService.java": {
        ("OrderService", "class", 13, 58),
        ("OrderService.OrderService", "constructor", 22, 24),
        ("OrderService.place", "method", 31, 39),
        ("OrderService.pending", "method", 41, 43),
        ("OrderService.audit", "method", 45, 45),
        ("OrderService.close", "method", 47, 48),
        ("OrderService.Line", "class", 51, 57),
        ("OrderService.Line.Line", "constructor", 54, 56),
        ("Lifecycle", "interface", 61, 67),
        ("Lifecycle.start", "method", 62, 62),
        ("Lifecycle.running", "method", 64, 66),
        ("Status", "enum", 69, 75),
        ("Status.done", "method", 72, 74),
        ("Placed", "class", 77, 77),
    },
    "shapes.rs": {
        ("tests", "module", 8, 8),
        ("Shape", "interface", 11, 18),
        ("Shape.area", "method", 13, 13),
        ("Shape.name", "method", 15, 17),
        ("Circle", "class", 22, 24),
        ("Registry", "class", 26, 26),
        ("Kind", "enum", 28, 31),
        ("Circle.area", "method", 34, 36),
        ("Circle.new", "method", 41, 43),
        ("Circle.scale", "method", 45, 47),
        ("Wrapper.fmt", "method", 51, 53),
        ("total_area", "function", 56, 58),
        ("helper", "function", 60, 60),
        ("square", "macro", 63, 67),
        ("util", "module", 69, 75),
        ("util.close", "function", 72, 74),
    },
    "ring.c": {
        ("alloc_fn", "type", 9, 9),
        ("ring_t", "type", 11, 14),
        ("stats", "class", 16, 19),
        ("ring_error", "enum", 21, 21),
        ("round_up", "function", 26, 32),
        ("ring_new", "function", 37, 44),
        ("ring_put", "function", 46, 52),
        ("ring_freer", "function", 55, 58),
        ("ring_empty", "function", 60, 60),
    },
    "matrix.cpp": {
        ("linalg", "module", 6, 54),
        ("linalg.Matrix", "class", 9, 30),
        ("linalg.Matrix.Matrix", "constructor", 11, 11),
        ("linalg.Matrix.at", "method", 14, 17),
        ("linalg.Matrix.rows", "method", 19, 19),
        ("linalg.Matrix.grow", "method", 24, 26),
        ("linalg.Point", "class", 32, 34),
        ("linalg.Matrix.n", "method", 37, 39),
        ("linalg.clamp", "function", 44, 46),
        ("linalg.detail", "module", 48, 52),
        ("linalg.detail.checked", "function", 49, 51),
        ("operator*", "function", 56, 58),
        ("linalg_version", "function", 60, 60),
    },
    "Accounts.cs": {
        ("Bank.Accounts", "module", 6, 54),
        ("Bank.Accounts.Account", "class", 11, 37),
        ("Bank.Accounts.Account.Owner", "property", 16, 16),
        ("Bank.Accounts.Account.Balance", "property", 18, 18),
        ("Bank.Accounts.Account.Account", "constructor", 20, 23),
        ("Bank.Accounts.Account.Deposit", "method", 26, 30),
        ("Bank.Accounts.Account.Dump", "method", 32, 32),
        ("Bank.Accounts.Account.Audit", "method", 34, 34),
        ("Bank.Accounts.Account.CompareTo", "method", 36, 36),
        ("Bank.Accounts.IEntity", "interface", 39, 43),
        ("Bank.Accounts.IEntity.Id", "property", 41, 41),
        ("Bank.Accounts.IEntity.Touch", "method", 42, 42),
        ("Bank.Accounts.AccountKind", "enum", 45, 45),
        ("Bank.Accounts.Money", "class", 47, 51),
        ("Bank.Accounts.Transfer", "class", 53, 53),
    },
    "Ledger.cs": {
        ("Bank.Ledger", "module", 3, 21),
        ("Bank.Ledger.Ledger", "class", 6, 16),
        ("Bank.Ledger.Ledger.Record", "method", 10, 13),
        ("Bank.Ledger.Ledger.Sum", "method", 15, 15),
        ("Bank.Ledger.LedgerExtensions", "class", 18, 21),
        ("Bank.Ledger.LedgerExtensions.Count", "method", 20, 20),
    },
    "billing.rb": {
        ("Billing", "module", 8, 54),
        ("Billing.Invoice", "class", 12, 47),
        ("Billing.Invoice.initialize", "method", 15, 18),
        ("Billing.Invoice.add", "method", 21, 24),
        ("Billing.Invoice.total", "method", 26, 28),
        ("Billing.Invoice.from_json", "method", 31, 34),
        ("Billing.Invoice.registry", "method", 37, 39),
        ("Billing.Invoice.audit", "method", 44, 46),
        ("Billing.Error", "class", 49, 49),
        ("Billing.configure", "method", 51, 53),
        ("helper", "function", 56, 56),
    },
    "UserRepository.php": {
        ("Cacheable", "interface", 17, 20),
        ("Cacheable.cacheKey", "method", 19, 19),
        ("Timestamps", "class", 22, 30),
        ("Timestamps.touch", "method", 26, 29),
        ("UserRepository", "class", 35, 66),
        ("UserRepository.__construct", "constructor", 42, 44),
        ("UserRepository.find", "method", 47, 50),
        ("UserRepository.load", "method", 52, 55),
        ("UserRepository.table", "method", 57, 60),
        ("UserRepository.cacheKey", "method", 62, 65),
        ("user_repository", "function", 68, 71),
    },
    "Library.kt": {
        ("BookId", "type", 10, 10),
        ("Book", "class", 15, 25),
        ("Book.compareTo", "method", 16, 16),
        ("Book.Companion", "class", 18, 24),
        ("Book.Companion.parse", "method", 20, 23),
        ("Borrowable", "interface", 28, 32),
        ("Borrowable.borrow", "method", 29, 29),
        ("Borrowable.isAvailable", "method", 31, 31),
        ("Library", "class", 34, 47),
        ("Library.borrow", "method", 37, 40),
        ("Library.audit", "method", 42, 42),
        ("Library.reset", "method", 44, 46),
        ("Genre", "enum", 49, 54),
        ("Genre.display", "method", 53, 53),
        ("Catalogue", "class", 56, 58),
        ("main", "function", 60, 62),
        ("log", "function", 64, 64),
        ("Event", "class", 66, 68),
        ("Event.Loaned", "class", 67, 67),
    },
    "Broker.scala": {
        ("Log", "interface", 8, 11),
        ("Log.append", "method", 9, 9),
        ("Log.read", "method", 10, 10),
        ("ReplicaManager", "class", 14, 26),
        ("ReplicaManager.fetch", "method", 18, 21),
        ("ReplicaManager.evict", "method", 23, 23),
        ("ReplicaManager.close", "method", 25, 25),
        ("ReplicaManager", "class", 28, 32),  # the companion object
        ("ReplicaManager.apply", "method", 31, 31),
        ("Record", "class", 34, 36),
        ("Record.compare", "method", 35, 35),
        ("Role", "enum", 38, 40),
        ("Offsets", "type", 42, 42),
        ("describe", "function", 44, 44),
    },
    "Renderer.swift": {
        ("Drawable", "interface", 5, 8),
        ("Drawable.draw", "method", 6, 6),
        ("RenderError", "enum", 11, 14),
        ("Renderer", "class", 17, 44),
        ("Renderer.init", "constructor", 22, 25),
        ("Renderer.deinit", "method", 27, 27),
        ("Renderer.draw", "method", 30, 35),
        ("Renderer.subscript", "method", 39, 39),
        ("Renderer.evict", "method", 41, 43),
        ("Point", "class", 46, 50),  # a struct
        ("Point.distance", "method", 49, 49),
        ("Renderer.reset", "method", 53, 53),  # in an extension of Renderer
        ("Counter", "class", 56, 56),  # an actor
        ("Counter.increment", "method", 56, 56),
        ("Handler", "type", 58, 58),
        ("makeRenderer", "function", 60, 64),
    },
}

# Symbols that are NOT exported; every other symbol of the file is.
NOT_EXPORTED: dict[str, set[str]] = {
    # a leading underscore (dunder names stay public)
    "inventory.py": {"Warehouse._audit", "_refresh"},
    # no `export` (and not exported later by `export default` or `module.exports`); members of
    # an unexported class; `private` and `#private` members
    "store.ts": {"Store.flush", "Backend", "Backend.open", "debug", "events",
                 "events.EventEmitter", "events.EventEmitter.tap", "Internal"},
    "TodoList.tsx": {"TodoItem"},
    "server.js": {"StaticServer.#evict", "handler"},
    "Button.jsx": {"Spinner"},
    # a lower-case first letter
    "cache.go": {"entry", "Cache.evict", "normalize"},
    # neither public nor protected; members of a package-private type
    "OrderService.java": {"OrderService.pending", "OrderService.audit", "OrderService.Line.Line",
                          "Lifecycle", "Lifecycle.start", "Lifecycle.running", "Status",
                          "Status.done", "Placed"},
    # no `pub`; methods of `impl Trait for T` are as public as the trait
    "shapes.rs": {"tests", "Registry", "Circle.scale", "helper", "square"},
    # static
    "ring.c": {"round_up", "ring_empty"},
    # static; below `private:`
    "matrix.cpp": {"linalg.Matrix.grow", "linalg.detail.checked"},
    # neither public nor protected (internal is not visible outside the assembly)
    "Accounts.cs": {"Bank.Accounts.Account.Dump", "Bank.Accounts.Account.Audit",
                    "Bank.Accounts.AccountKind"},
    "Ledger.cs": {"Bank.Ledger.Ledger.Sum", "Bank.Ledger.LedgerExtensions",
                  "Bank.Ledger.LedgerExtensions.Count"},
    # below `private`
    "billing.rb": {"Billing.Invoice.audit"},
    # private or protected
    "UserRepository.php": {"UserRepository.load", "UserRepository.table"},
    # private or internal
    "Library.kt": {"Library.audit", "Library.reset", "log"},
    # private or protected
    "Broker.scala": {"ReplicaManager.evict"},
    # private or fileprivate (internal, the default, is visible to the whole module)
    "Renderer.swift": {"Renderer.evict"},
}

BASES: dict[str, dict[str, tuple[str, ...]]] = {
    "inventory.py": {"Warehouse": ("signals.Emitter",), "Catalog": ("Mapping",),
                     "Stock": ()},
    "store.ts": {"Store": ("EventEmitter", "Iterable"), "Entry": ("Timestamped",)},
    "TodoList.tsx": {"ErrorBoundary": ("React.Component",)},
    "server.js": {"StaticServer": ("BaseServer",)},
    "OrderService.java": {"OrderService": ("AbstractService", "Lifecycle", "AutoCloseable"),
                          "Lifecycle": ("AutoCloseable",), "Placed": ("Event",)},
    "shapes.rs": {"Circle": ("Shape",), "Registry": ()},
    "matrix.cpp": {"linalg.Matrix": ("Shape", "Counted")},
    "Accounts.cs": {"Bank.Accounts.Account": ("Entity", "IComparable")},
    "billing.rb": {"Billing.Invoice": ("Document",), "Billing.Error": ("StandardError",)},
    "UserRepository.php": {
        "UserRepository": ("BaseRepository", "Repository", "Cacheable", "Timestamps")},
    "Library.kt": {"Book": ("Comparable", "java.io.Serializable"), "Library": ("Borrowable",),
                   "Event.Loaned": ("Event",)},
    "Broker.scala": {"Record": ("Ordered",), "Log": ()},
    "Renderer.swift": {"Renderer": ("NSObject", "Drawable"), "Drawable": ("AnyObject",),
                       "RenderError": ("Error",), "Point": ("Equatable",), "Counter": ()},
}

IMPORTS: dict[str, list[str]] = {
    "inventory.py": ["__future__", "logging", "os.path", "collections",
                     "collections.defaultdict", "dataclasses", "dataclasses.dataclass",
                     "dataclasses.field", ".models", ".models.Item", ".models.Location", ".",
                     ".signals", "ujson", "json"],
    "store.ts": ["events", "./codec", "node:path", "fs", "./keys"],
    "TodoList.tsx": ["react", "./types", "./TodoList.css"],
    "server.js": ["http", "path", "express", "./fs-utils.js"],
    "Button.jsx": ["react", "prop-types"],
    "cache.go": ["container/list", "errors", "strings", "sync", "embed", "fmt"],
    "OrderService.java": ["java.util.*", "java.util.concurrent.ConcurrentHashMap",
                          "java.util.Objects.requireNonNull", "com.example.events.EventBus"],
    "shapes.rs": ["std::collections::HashMap", "std::fmt::{self,Display}", "crate::units::*",
                  "serde", "mod tests"],
    "ring.c": ["<stdlib.h>", "<string.h>", '"ring.h"'],
    "matrix.cpp": ["<vector>", "<stdexcept>", '"matrix.hpp"'],
    "Accounts.cs": ["System", "System.Collections.Generic", "System.Math",
                    "System.Text.Json.JsonSerializer"],
    "Ledger.cs": ["Bank.Accounts"],
    "billing.rb": ["json", "./support/money", "set"],
    "UserRepository.php": ["App\\Model\\User", "App\\Contracts\\Repository",
                           "App\\Contracts\\Countable", "App\\Support\\slugify",
                           "./bootstrap.php", "helpers.php"],
    "Library.kt": ["java.time.LocalDate", "kotlin.collections.*", "org.example.util.Clock"],
    "Broker.scala": ["scala.collection.mutable", "org.example.common.{TopicPartition,Uuid=>Id}",
                     "org.example.util._"],
    "Renderer.swift": ["Foundation", "MyKit.Point"],
}


def test_every_source_fixture_has_expectations() -> None:
    assert set(SYMBOLS) == set(SOURCE_FILES)
    assert set(NOT_EXPORTED) == set(SOURCE_FILES)
    assert set(IMPORTS) == set(SOURCE_FILES)


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_each_language_finds_every_declaration_with_its_kind_and_lines(name: str) -> None:
    parsed = _parse(name)
    assert parsed.error == ""
    found = [(s.qualname, s.kind, s.start_line, s.end_line) for s in parsed.symbols]
    assert len(found) == len(set(found)), "a symbol is reported twice"
    assert set(found) == SYMBOLS[name]


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_exported_flags_follow_the_language_visibility_rules(name: str) -> None:
    parsed = _parse(name)
    hidden = {s.qualname for s in parsed.symbols if not s.exported}
    assert hidden == NOT_EXPORTED[name]


@pytest.mark.parametrize("name", sorted(BASES))
def test_classes_list_the_types_they_extend_and_implement(name: str) -> None:
    parsed = _parse(name)
    for qualname, bases in BASES[name].items():
        assert _symbol(parsed, qualname).bases == bases, qualname


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_imports_are_listed_once_in_source_order_as_written(name: str) -> None:
    assert _parse(name).imports == IMPORTS[name]


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_symbols_are_listed_in_outline_order_with_methods_inside_their_parent(
        name: str) -> None:
    parsed = _parse(name)
    by_qualname = {s.qualname: s for s in parsed.symbols}
    for index, symbol in enumerate(parsed.symbols):
        assert 1 <= symbol.start_line <= symbol.end_line <= parsed.line_count
        if symbol.parent is None:
            assert (symbol.depth, symbol.qualname) == (0, symbol.name)
            continue
        assert symbol.qualname.endswith(f"{symbol.parent}.{symbol.name}")
        owner = by_qualname.get(symbol.qualname.removesuffix(f".{symbol.name}"))
        if owner is not None and owner.start_line <= symbol.start_line <= owner.end_line:
            # nested inside its owner: listed after it, one level deeper, within its lines
            assert parsed.symbols.index(owner) < index
            assert symbol.depth == owner.depth + 1
            assert symbol.end_line <= owner.end_line


# ---------------------------------------------------------------------------------------------
# Per language: parents, signatures, docs, and the quirks of each grammar.


def test_python_methods_belong_to_their_class_and_docstrings_become_docs() -> None:
    parsed = _parse("inventory.py")
    receive = _symbol(parsed, "Warehouse.receive")
    assert (receive.parent, receive.depth) == ("Warehouse", 1)
    assert receive.signature == \
        "def receive(self, item: Item, quantity: int, bin_id: str = DEFAULT_BIN) -> Stock"
    assert receive.doc == "Put ``quantity`` of ``item`` into ``bin_id``."
    assert _symbol(parsed, "Warehouse.Report.lines").parent == "Report"
    assert _symbol(parsed, "Warehouse").doc == "A set of bins, each holding stock of many items."
    assert _symbol(parsed, "Catalog").doc == "Read-only view of all stock by SKU."
    # a comment directly above a function is its doc when it has no docstring
    assert _symbol(parsed, "parse_location").doc == 'Parse a location string such as "A-01".'


def test_python_signatures_stop_before_the_body_and_its_comments() -> None:
    parsed = _parse("inventory.py")
    assert _symbol(parsed, "Warehouse._audit").signature == "def _audit(self) -> None"
    assert _symbol(parsed, "_refresh").signature == \
        "async def _refresh(warehouse: Warehouse) -> None"
    assert _symbol(parsed, "Warehouse").signature == \
        "class Warehouse(signals.Emitter, metaclass=type)"


def test_python_decorators_belong_to_the_chunk_of_what_they_decorate() -> None:
    parsed = _parse("inventory.py")
    total = _chunk(parsed, "total")
    assert (total.start_line, total.end_line) == (45, 47)
    assert total.content.startswith("    @property\n    def total(self) -> int:")
    stock = _chunk(parsed, "Stock")
    assert stock.content.startswith("@dataclass\nclass Stock:")


def test_python_docstring_prefixes_and_quotes_are_removed_without_eating_letters() -> None:
    text = ('def f():\n    r"""Read a menu"""\n\n'
            "def g():\n    'Single quoted'\n\n"
            "class A:\n    u'''Spread\n    over lines.'''\n")
    docs = {s.name: s.doc for s in parse_file(text, "python").symbols}
    assert docs == {"f": "Read a menu", "g": "Single quoted", "A": "Spread over lines."}


def test_typescript_declarations_keep_their_export_and_docs() -> None:
    parsed = _parse("store.ts")
    store = _symbol(parsed, "Store")
    assert store.signature == \
        "class Store<T> extends EventEmitter implements Iterable<Entry<T>>"
    assert store.doc == "In-memory store; persists through a codec."
    assert _symbol(parsed, "Store.get").doc == "Read one entry."
    assert _symbol(parsed, "Store.flush").signature == "private flush(): void"
    assert _symbol(parsed, "Listener").signature == \
        "type Listener<T> = (entry: Entry<T>) => void"
    assert _symbol(parsed, "keyOf").signature == \
        "const keyOf = (entry: Entry<unknown>): string =>"
    assert _symbol(parsed, "Internal.reset").parent == "Internal"
    # the export keyword and the doc comment are part of the chunk
    chunk = _chunk(parsed, "createStore")
    assert chunk.content.startswith("export function createStore<T>")
    assert _chunk(parsed, "Entry").content.startswith("/** Something that can be stored. */")


def test_tsx_component_functions_and_arrow_consts_are_declarations() -> None:
    parsed = _parse("TodoList.tsx")
    todo_list = _symbol(parsed, "TodoList")
    assert todo_list.signature == \
        "function TodoList({ todos, onToggle }: TodoListProps): JSX.Element"
    assert todo_list.doc == "Renders a list of todos with a filter box."
    item = _symbol(parsed, "TodoItem")
    assert item.signature == ("const TodoItem = ({ todo, onToggle }: { todo: Todo; "
                              "onToggle?: (id: string) => void }) =>")
    assert item.doc == "One row of the list."
    assert _symbol(parsed, "ErrorBoundary.render").parent == "ErrorBoundary"
    assert "<ul>" in _chunk(parsed, "TodoList").content


def test_javascript_classes_private_methods_and_commonjs_exports() -> None:
    parsed = _parse("server.js")
    assert _symbol(parsed, "StaticServer.#evict").signature == "#evict(name)"
    assert _symbol(parsed, "StaticServer.lookup").doc == \
        "Look a file up, reading it from disk on a miss."
    assert _symbol(parsed, "StaticServer.constructor").kind == "constructor"
    assert _symbol(parsed, "toJson").signature == "const toJson = function (value)"
    assert _symbol(parsed, "walk").signature == "function* walk(dir)"
    # Foo.prototype.bar = function () {...} is a method of Foo
    reset = _symbol(parsed, "StaticServer.reset")
    assert (reset.kind, reset.parent) == ("method", "StaticServer")
    # exports.version = () => ... is an exported function
    assert _symbol(parsed, "version").exported


def test_jsx_arrow_components_are_exported_functions() -> None:
    parsed = _parse("Button.jsx")
    button = _symbol(parsed, "Button")
    assert button.signature == "const Button = ({ busy, children, ...rest }) =>"
    assert button.doc == "A button that shows a spinner while busy."
    assert _chunk(parsed, "Button").content.startswith("/**\n * A button")
    # `Button.propTypes = {...}` and `export default Button;` are module-level code
    blocks = [c for c in parsed.chunks if c.kind == "block"]
    assert any("Button.propTypes" in c.content for c in blocks)


def test_javascript_default_exports_and_exported_names_are_found() -> None:
    text = ("export default function () {}\n"
            "const hidden = () => 1;\n"
            "const shown = () => 2;\n"
            "class Model {}\n"
            "Model.prototype.save = function () {};\n"
            "export { shown };\n"
            "module.exports = Model;\n")
    symbols = {s.qualname: s for s in parse_file(text, "javascript").symbols}
    assert set(symbols) == {"default", "hidden", "shown", "Model", "Model.save"}
    assert {q for q, s in symbols.items() if s.exported} == \
        {"default", "shown", "Model", "Model.save"}


def test_go_methods_belong_to_their_receiver_type_even_when_generic() -> None:
    parsed = _parse("cache.go")
    get = _symbol(parsed, "Cache.Get")
    assert (get.parent, get.depth) == ("Cache", 1)
    assert get.signature == "func (c *Cache[K, V]) Get(key K) (V, bool)"
    assert get.doc == "Get looks a key up and marks it recently used."
    assert _symbol(parsed, "entry.String").parent == "entry"
    assert _symbol(parsed, "Store.Load").signature == "Load(key string) ([]byte, error)"


def test_go_types_are_declared_with_the_type_keyword_and_their_docs() -> None:
    parsed = _parse("cache.go")
    assert _symbol(parsed, "Cache").signature == "type Cache[K comparable, V any] struct"
    assert _symbol(parsed, "Store").signature == "type Store interface"
    assert _symbol(parsed, "Legacy").signature == "type Legacy = Store"
    # a type inside a `type ( ... )` group takes the comment above it
    assert _symbol(parsed, "Key").doc == "Key is a cache key."
    assert _chunk(parsed, "Key").start_line == 35


def test_java_javadoc_annotations_and_constructors() -> None:
    parsed = _parse("OrderService.java")
    service = _symbol(parsed, "OrderService")
    assert service.doc == "Accepts orders and tracks their status. <p>Thread-safe."
    assert service.signature.endswith(
        "public class OrderService extends AbstractService implements Lifecycle, AutoCloseable")
    place = _symbol(parsed, "OrderService.place")
    assert place.doc == "Places an order. @param order the order to place @return its id"
    assert place.signature == \
        "@Override public String place(Order order) throws InvalidOrderException"
    assert _symbol(parsed, "OrderService.OrderService").signature == \
        "public OrderService(EventBus bus)"
    assert _symbol(parsed, "Lifecycle.start").signature == "void start()"
    assert _symbol(parsed, "OrderService.Line.Line").parent == "Line"


def test_java_enum_methods_after_the_constants_are_found() -> None:
    parsed = _parse("OrderService.java")
    done = _symbol(parsed, "Status.done")
    assert (done.kind, done.parent, done.depth) == ("method", "Status", 1)
    assert _chunk(parsed, "done").content.strip().startswith("public boolean done()")


def test_rust_impl_blocks_make_methods_of_their_type_and_traits_its_bases() -> None:
    parsed = _parse("shapes.rs")
    new = _symbol(parsed, "Circle.new")
    assert (new.kind, new.parent, new.depth) == ("method", "Circle", 1)
    assert new.doc == "Makes a circle of the given radius."
    assert new.signature == "pub fn new(radius: f64) -> Self"
    assert _symbol(parsed, "Wrapper.fmt").parent == "Wrapper"
    assert _symbol(parsed, "Shape.area").doc == "The area in square units."
    assert _symbol(parsed, "square").signature == "macro_rules! square"
    assert _symbol(parsed, "total_area").signature == \
        "pub(crate) fn total_area(shapes: &[Box<dyn Shape>]) -> f64"


def test_rust_attributes_and_doc_comments_belong_to_the_item_below() -> None:
    parsed = _parse("shapes.rs")
    circle = _symbol(parsed, "Circle")
    assert circle.doc == "A circle around the origin."
    chunk = _chunk(parsed, "Circle")
    assert chunk.start_line == 20
    assert chunk.content.startswith("/// A circle around the origin.\n#[derive(Debug, Clone)]")


def test_rust_impl_headers_do_not_become_blocks() -> None:
    parsed = _parse("shapes.rs")
    blocks = [c.content for c in parsed.chunks if c.kind == "block"]
    assert not any("impl" in b for b in blocks)
    assert any("pub const EPSILON" in b for b in blocks)


def test_c_typedef_names_come_from_the_declarator() -> None:
    parsed = _parse("ring.c")
    alloc = _symbol(parsed, "alloc_fn")
    assert alloc.signature == "typedef void *(*alloc_fn)(size_t size)"
    assert alloc.doc == "Allocation hooks, replaceable in tests."
    assert _symbol(parsed, "ring_t").signature == "typedef struct ring"


def test_c_functions_returning_function_pointers_are_named_and_static_is_private() -> None:
    parsed = _parse("ring.c")
    freer = _symbol(parsed, "ring_freer")
    assert freer.signature == "void (*ring_freer(void))(ring_t *)"
    assert freer.doc == "Returns the function that frees rings."
    assert _symbol(parsed, "ring_new").doc == "Create a ring holding at least `size` bytes."
    assert _symbol(parsed, "ring_new").signature == "ring_t *ring_new(size_t size)"
    assert _symbol(parsed, "round_up").signature == "static size_t round_up(size_t n)"


def test_cpp_out_of_line_methods_belong_to_their_class() -> None:
    parsed = _parse("matrix.cpp")
    n = _symbol(parsed, "linalg.Matrix.n")
    assert (n.kind, n.parent, n.depth) == ("method", "Matrix", 2)
    assert n.signature == "int Matrix::n() const"
    assert n.doc == "Number of elements."
    assert _symbol(parsed, "linalg.Matrix.at").doc == "Element access with bounds checking."
    assert _symbol(parsed, "linalg.clamp").signature == "T clamp(T value, T lo, T hi)"
    assert _chunk(parsed, "clamp").content.startswith("template <typename T>\n")
    assert _symbol(parsed, "linalg_version").signature == "int linalg_version(void)"


def test_cpp_namespace_braces_do_not_become_blocks() -> None:
    parsed = _parse("matrix.cpp")
    blocks = [c.content for c in parsed.chunks if c.kind == "block"]
    assert not any("namespace" in b for b in blocks), blocks


def test_csharp_namespaces_prefix_qualified_names_in_both_styles() -> None:
    accounts = _parse("Accounts.cs")
    assert _symbol(accounts, "Bank.Accounts.Account").parent == "Bank.Accounts"
    ledger = _parse("Ledger.cs")
    namespace = _symbol(ledger, "Bank.Ledger")
    assert (namespace.kind, namespace.signature) == ("module", "namespace Bank.Ledger")
    record = _symbol(ledger, "Bank.Ledger.Ledger.Record")
    assert (record.parent, record.depth) == ("Ledger", 2)
    assert _symbol(ledger, "Bank.Ledger.Ledger").doc == "Records transfers between accounts."


def test_csharp_xml_doc_comments_lose_their_summary_tags() -> None:
    parsed = _parse("Accounts.cs")
    assert _symbol(parsed, "Bank.Accounts.Account").doc == \
        "A bank account with a running balance."
    deposit = _symbol(parsed, "Bank.Accounts.Account.Deposit")
    assert deposit.doc == "Adds money to the account."
    assert deposit.signature == "public void Deposit(decimal amount)"
    assert _symbol(parsed, "Bank.Accounts.Account.Dump").signature == "internal string Dump()"
    assert _symbol(parsed, "Bank.Accounts.Transfer").signature == \
        "public record Transfer(Account From, Account To, decimal Amount)"


def test_ruby_singleton_methods_and_private_sections() -> None:
    parsed = _parse("billing.rb")
    from_json = _symbol(parsed, "Billing.Invoice.from_json")
    assert (from_json.kind, from_json.parent) == ("method", "Invoice")
    assert from_json.signature == "def self.from_json(text)"
    assert from_json.doc == "Builds an invoice from JSON."
    # methods inside `class << self` are methods of the class too
    assert _symbol(parsed, "Billing.Invoice.registry").parent == "Invoice"
    assert _symbol(parsed, "Billing.Invoice").doc == "An invoice for one customer."
    # a top-level def is a function; `def f(x) = ...` signs without the `=`
    assert _symbol(parsed, "helper").signature == "def helper(x)"


def test_ruby_private_applies_to_the_following_methods_or_the_one_it_wraps() -> None:
    text = ("class A\n  def a; end\n  private\n  def b; end\n  public\n  def c; end\n"
            "  private def d; end\n  def e; end\nend\n")
    exported = {s.name: s.exported for s in parse_file(text, "ruby").symbols}
    assert exported == {"A": True, "a": True, "b": False, "c": True, "d": False, "e": True}


def test_php_traits_interfaces_and_constructors() -> None:
    parsed = _parse("UserRepository.php")
    find = _symbol(parsed, "UserRepository.find")
    assert find.doc == "Find a user by id, or null."
    assert find.signature == "public function find(int $id): ?User"
    assert _symbol(parsed, "UserRepository.__construct").kind == "constructor"
    assert _symbol(parsed, "Cacheable.cacheKey").signature == \
        "public function cacheKey(): string"
    assert _symbol(parsed, "Timestamps").signature == "trait Timestamps"
    assert _symbol(parsed, "UserRepository").doc == "Loads and stores users."


def test_kotlin_companion_objects_constructors_and_expression_bodies() -> None:
    parsed = _parse("Library.kt")
    parse = _symbol(parsed, "Book.Companion.parse")
    assert (parse.kind, parse.parent) == ("method", "Companion")
    assert parse.doc == 'Parses "id;title;year".'
    book = _symbol(parsed, "Book")
    assert book.signature == ("data class Book(val id: BookId, val title: String, val year: "
                              "Int) : Comparable<Book>, java.io.Serializable")
    assert book.doc == "A book in the catalogue."
    assert _symbol(parsed, "Book.compareTo").signature == \
        "override fun compareTo(other: Book): Int"
    assert _symbol(parsed, "log").signature == "private fun log(message: String)"
    assert _symbol(parsed, "BookId").signature == "typealias BookId = String"
    text = "class A(val x: Int) {\n    constructor(s: String) : this(1) {}\n}\n"
    kinds = {s.qualname: s.kind for s in parse_file(text, "kotlin").symbols}
    assert kinds == {"A": "class", "A.constructor": "constructor"}


def test_scala_companion_objects_traits_and_the_types_a_class_mixes_in() -> None:
    parsed = _parse("Broker.scala")
    manager = [s for s in parsed.symbols if s.qualname == "ReplicaManager"]
    assert [(s.start_line, s.signature.split()[0]) for s in manager] == [(14, "class"),
                                                                        (28, "object")]
    assert manager[0].bases == ("Logging", "AutoCloseable")  # extends A with B
    assert manager[0].doc == "Keeps the logs of the partitions this broker leads."
    assert _symbol(parsed, "Log").kind == "interface"  # a trait


def test_swift_extensions_add_members_to_the_type_they_extend_without_a_symbol() -> None:
    parsed = _parse("Renderer.swift")
    assert [s.start_line for s in parsed.symbols if s.qualname == "Renderer"] == [17]
    assert _symbol(parsed, "Renderer.reset").parent == "Renderer"
    assert _chunk(parsed, "reset").parent == "Renderer"
    assert _symbol(parsed, "Renderer").signature == \
        "public final class Renderer: NSObject, Drawable"
    assert _symbol(parsed, "Renderer.draw").doc == "Draws every cached shape."
    assert _symbol(parsed, "Drawable").doc == "A shape that can be drawn."
    assert _symbol(parsed, "Renderer.init").signature == "init(canvas: Canvas)"
    symbols = parse_file(
        "enum E { case a }\nstruct S: Q {}\nactor A {}\nprotocol P {}\nextension S: P {}\n",
        "swift").symbols
    assert {s.qualname: s.kind for s in symbols} == {"E": "enum", "S": "class", "A": "class",
                                                     "P": "interface"}
    assert [s.bases for s in symbols if s.name == "S"] == [("Q", "P")]  # and its extension's


def test_cpp_members_are_private_in_a_class_until_an_access_specifier() -> None:
    text = ("class K {\n  void a() {}\npublic:\n  void b() {}\nprotected:\n  void c() {}\n};\n"
            "struct S {\n  void d() {}\n};\n")
    exported = {s.qualname: s.exported for s in parse_file(text, "cpp").symbols}
    assert exported == {"K": True, "K.a": False, "K.b": True, "K.c": False, "S": True,
                        "S.d": True}


# ---------------------------------------------------------------------------------------------
# Chunks.


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_chunk_lies_within_the_file_and_repeats_its_lines(name: str) -> None:
    parsed = _parse(name)
    assert parsed.chunks
    lines = (FIXTURES / name).read_text().split("\n")
    for chunk in parsed.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= parsed.line_count, chunk
        if chunk.content != "\n".join(lines[chunk.start_line - 1:chunk.end_line]):
            # only class shells differ: their member bodies are elided
            assert chunk.kind in ("class", "interface", "enum", "module"), chunk
            assert "..." in chunk.content


@pytest.mark.parametrize("name", SOURCE_FILES)
def test_every_declaration_line_is_in_a_chunk(name: str) -> None:
    parsed = _parse(name)
    covered = {row for c in parsed.chunks for row in range(c.start_line, c.end_line + 1)}
    for symbol in parsed.symbols:
        if symbol.kind != "module":
            assert symbol.start_line in covered, symbol.qualname


@pytest.mark.parametrize(("name", "cls", "methods"), [
    ("inventory.py", "Warehouse", ["__init__", "receive", "total", "_audit"]),
    ("OrderService.java", "OrderService", ["OrderService", "place", "pending", "audit",
                                           "close"]),
    ("store.ts", "Store", ["constructor", "get", "set", "flush", "[Symbol.iterator]"]),
    ("Accounts.cs", "Account", ["Account", "Deposit", "Dump", "Audit", "CompareTo"]),
    ("billing.rb", "Invoice", ["initialize", "add", "total", "from_json", "registry", "audit"]),
    ("Library.kt", "Library", ["borrow", "audit", "reset"]),
])
def test_a_class_with_methods_yields_a_shell_and_one_chunk_per_method(
        name: str, cls: str, methods: list[str]) -> None:
    parsed = _parse(name)
    shell = _chunk(parsed, cls, "class")
    for method in methods:
        chunk = _chunk(parsed, method) if method != cls else _chunk(parsed, cls, "constructor")
        assert chunk.parent == cls
        assert shell.start_line <= chunk.start_line <= chunk.end_line <= shell.end_line
        # the shell shows the method's signature line, but not its body
        signature_line = _lines(name, chunk.start_line, chunk.end_line).split("\n")
        header = next(line for line in signature_line
                      if method in line and line.strip() != "*" and not line.strip().startswith(
                          ("/", "* ", "#", "@")))
        assert header in shell.content, (method, header)
        body = [line for line in signature_line[signature_line.index(header) + 1:]
                if line.strip() and line.strip() not in ("}", "end", "{")]
        for line in body:
            assert line not in shell.content.split("\n"), (method, line)


def test_a_shell_keeps_fields_and_abstract_members_whole() -> None:
    parsed = _parse("OrderService.java")
    shell = _chunk(parsed, "OrderService", "class")
    assert "    private final EventBus bus;" in shell.content
    assert "    private void audit() {}" in shell.content  # one line: nothing to elide
    assert "throw new InvalidOrderException" not in shell.content
    lifecycle = _chunk(parsed, "Lifecycle")
    assert "    void start();" in lifecycle.content
    # an abstract member has no body of its own, so no chunk of its own
    assert not [c for c in parsed.chunks if c.symbol == "start"]


def test_a_class_shell_elides_a_multi_line_header_only_after_it_ends() -> None:
    text = ("class A {\n"
            "    int add(int a,\n"
            "            int b) {\n"
            "        return a + b;\n"
            "    }\n"
            "}\n")
    parsed = parse_file(text, "java")
    shell = _chunk(parsed, "A")
    assert shell.content == "class A {\n    int add(int a,\n            int b) {\n" \
        "        ...\n}"


def test_a_short_class_without_methods_is_one_chunk() -> None:
    parsed = _parse("shapes.rs")
    circle = [c for c in parsed.chunks if c.symbol == "Circle"]
    assert [(c.kind, c.start_line, c.end_line) for c in circle] == [("class", 20, 24)]


def test_module_level_code_between_declarations_becomes_blocks() -> None:
    parsed = _parse("inventory.py")
    blocks = [(c.start_line, c.end_line) for c in parsed.chunks if c.kind == "block"]
    assert blocks == [(1, 19), (75, 77)]
    first = next(c for c in parsed.chunks if c.kind == "block")
    assert first.content.startswith('"""Inventory bookkeeping')
    assert 'DEFAULT_BIN = "A-01"' in first.content
    go = _parse("cache.go")
    assert [(c.start_line, c.end_line) for c in go.chunks if c.kind == "block"] == [(1, 18)]


def test_declaration_chunks_carry_their_symbol_metadata() -> None:
    parsed = _parse("cache.go")
    get = _chunk(parsed, "Get")
    assert (get.kind, get.parent, get.exported, get.part) == ("method", "Cache", True, 0)
    assert get.signature == "func (c *Cache[K, V]) Get(key K) (V, bool)"
    assert get.doc == "Get looks a key up and marks it recently used."
    assert (get.start_line, get.end_line) == (51, 57)  # the doc comment included


def _long_function(lines: int) -> str:
    body = "".join(f"    total += {i}\n" for i in range(lines - 3))
    return f"x = 1\n\n\ndef long():\n    total = 0\n{body}    return total\n\n\ny = 2\n"


@pytest.mark.parametrize(("length", "max_lines", "overlap"), [
    (121, 120, 10), (300, 120, 10), (250, 40, 5), (12, 10, 3), (50, 10, 0), (30, 5, 9),
    (7, 1, 0),
])
def test_a_long_declaration_is_split_into_overlapping_parts(
        length: int, max_lines: int, overlap: int) -> None:
    text = _long_function(length)
    limits = ChunkLimits(max_lines=max_lines, overlap=overlap)
    parsed = parse_file(text, "python", limits)
    parts = [c for c in parsed.chunks if c.symbol == "long"]
    start, end = 4, 4 + length - 1
    assert len(parts) > 1
    assert [p.part for p in parts] == list(range(1, len(parts) + 1))
    assert parts[0].start_line == start and parts[-1].end_line == end
    effective = min(overlap, max_lines - 1)
    lines = text.split("\n")
    for previous, part in zip(parts, parts[1:], strict=False):
        assert part.start_line == previous.end_line - effective + 1
    for part in parts:
        assert part.end_line - part.start_line + 1 <= max_lines
        assert part.content == "\n".join(lines[part.start_line - 1:part.end_line])
        assert (part.kind, part.signature) == ("function", "def long()")


def test_a_declaration_that_fits_is_not_split() -> None:
    parsed = parse_file(_long_function(120), "python", ChunkLimits(max_lines=120))
    parts = [c for c in parsed.chunks if c.symbol == "long"]
    assert [(p.part, p.start_line, p.end_line) for p in parts] == [(0, 4, 123)]


def test_long_module_level_code_is_cut_into_blocks_within_the_limit() -> None:
    text = "".join(f"value_{i} = compute({i})\n" for i in range(95))
    parsed = parse_file(text, "python", ChunkLimits(max_lines=40, overlap=5))
    spans = [(c.kind, c.start_line, c.end_line) for c in parsed.chunks]
    assert spans == [("block", 1, 32), ("block", 33, 64), ("block", 65, 95)]


def test_markdown_is_cut_by_heading_with_parent_headings() -> None:
    parsed = _parse("guide.md")
    sections = [(c.symbol, c.parent, c.start_line, c.end_line) for c in parsed.chunks]
    assert sections == [
        ("Codenav guide", None, 1, 4),
        ("Installing", "Codenav guide", 5, 13),   # the '#' inside the fence is no heading
        ("From source", "Installing", 14, 17),
        ("Searching", "Codenav guide", 18, 25),   # level 4 stays inside its section
        ("Troubleshooting", "Codenav guide", 26, 30),  # a setext heading
        ("Appendix", None, 31, 33),
    ]
    assert {c.kind for c in parsed.chunks} == {"section"}
    assert parsed.symbols == [] and parsed.imports == []


def test_markdown_front_matter_and_rules_are_not_headings() -> None:
    text = "---\ntitle: x\n---\n\nIntro line.\n\n---\n\n## Real\n\nBody.\n"
    parsed = parse_file(text, "markdown")
    assert [(c.symbol, c.start_line, c.end_line) for c in parsed.chunks] == \
        [(None, 1, 8), ("Real", 9, 11)]


def test_plain_text_is_cut_into_overlapping_line_windows() -> None:
    parsed = _parse("notes.txt", ChunkLimits(window=20, overlap=10))
    windows = [(c.kind, c.start_line, c.end_line) for c in parsed.chunks]
    # windows of equal length; their overlap is at most a quarter of the window
    assert windows == [("text", 1, 19), ("text", 15, 33), ("text", 29, 45)]
    whole = _parse("notes.txt")
    assert [(c.start_line, c.end_line) for c in whole.chunks] == [(1, 45)]


@pytest.mark.parametrize("language", ["python", "typescript", "tsx", "javascript", "go", "java",
                                      "rust", "c", "cpp", "csharp", "ruby", "php", "kotlin",
                                      "scala", "swift", "markdown", "text"])
@pytest.mark.parametrize("text", ["", "\n", "\n\n   \n"])
def test_an_empty_file_yields_no_chunks(language: str, text: str) -> None:
    parsed = parse_file(text, language)
    assert (parsed.chunks, parsed.symbols, parsed.imports, parsed.error) == ([], [], [], "")


BROKEN = {
    "python": "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass C(\n",
    "typescript": "export function ok(): number { return 1; }\nclass {{ broken\n",
    "tsx": "export const A = () => <div><span></div>;\nfunction ok() { return 1; }\n",
    "javascript": "function ok() { return 1; }\nconst = ;\nclass X { m( { }\n",
    "go": "package x\n\nfunc Ok() int { return 1 }\n\nfunc broken( {\n",
    "java": "class A {\n  void ok() {}\n  void broken( {\n}\n",
    "rust": "fn ok() -> i32 { 1 }\nimpl for {\nfn broken(\n",
    "c": "int ok(void) { return 1; }\nint broken( {\n#include\n",
    "cpp": "namespace { int ok() { return 1; }\nclass X : { void m( };\n",
    "csharp": "namespace N { class A { void Ok() {} void Broken( } \n",
    "ruby": "def ok\n  1\nend\nclass Broken <\n  def x(\n",
    "php": "<?php\nfunction ok() { return 1; }\nclass X extends { function m( }\n",
    "kotlin": "fun ok() = 1\nclass X : {\n  fun broken(\n",
    "swift": "func ok() -> Int { 1 }\nextension : {\n  func broken(\n",
}


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_a_file_with_invalid_syntax_still_yields_chunks(language: str) -> None:
    text = BROKEN[language]
    parsed = parse_file(text, language)
    assert parsed.chunks
    lines = text.split("\n")
    for chunk in parsed.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= parsed.line_count
        if chunk.kind not in ("class", "interface", "enum", "module"):
            assert chunk.content == "\n".join(lines[chunk.start_line - 1:chunk.end_line])


def test_invalid_utf8_and_binary_noise_do_not_raise() -> None:
    noise = bytes(range(256)).decode("latin-1") * 4
    for language in BROKEN:
        parse_file(noise + "\n" + BROKEN[language], language)


DEEP = {
    "javascript": "const value = " + "(" * 5000 + "1" + ")" * 5000 + ";\n",
    "python": "result = obj" + ".attr" * 5000 + "\n",
    "php": "<?php\n$value = " + "[" * 5000 + "]" * 5000 + ";\n",
    "java": "class A {\n" * 3000 + "void f() {}\n" + "}\n" * 3000,
    "cpp": "namespace a {\n" * 3000 + "int f() { return 1; }\n" + "}\n" * 3000,
    "ruby": "class A\n" + "class << self\n" * 3000 + "def f; end\n" + "end\n" * 3001,
    "c": "int f(void) {" + "{" * 5000 + "}" * 5000 + "}\n",
    # extensions are scopes (LangSpec.scope_kind): nested ones pass members through
    "swift": "extension A {\n" * 3000 + "func f() {}\n" + "}\n" * 3000,
}


@pytest.mark.parametrize("language", sorted(DEEP))
def test_deeply_nested_input_does_not_raise(language: str) -> None:
    text = DEEP[language]
    parsed = parse_file(text, language, ChunkLimits(max_lines=50, overlap=5))
    assert parsed.chunks
    for chunk in parsed.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= parsed.line_count


def test_deeply_nested_classes_keep_their_outer_structure() -> None:
    parsed = parse_file(DEEP["java"], "java")
    assert parsed.error == ""
    assert parsed.symbols[0].qualname == "A"
    assert max(s.depth for s in parsed.symbols) < 100
