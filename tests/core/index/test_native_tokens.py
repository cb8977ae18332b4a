"""The indexer's word loop in C (``codenav/_native.c``) against its reference in Python
(``codenav.tokens``): the same tsvector items, word counts and whole-file term counts (as a
dict and as COPY rows), on edge cases, on generated text and on real source files; text that
is not ASCII is left to Python; nothing leaks."""

from __future__ import annotations

import random
import sysconfig
import tracemalloc
from pathlib import Path

import pytest

from codenav import tokens

ROOT = Path(__file__).resolve().parents[3]

EDGE_CASES = [
    "", " ", "_", "__", "_ _ _", "a", "A", "9", "99", "123", "a9", "x_", "_x_", "__init__",
    "HTTPHeader", "parseHTTPHeader2", "parseHttpHeader", "ABCdef", "ABC", "aB", "AbC", "aBC",
    "XMLHttpRequest2Go", "get_X_value", "snake_case_name", "CONSTANT_NAME_2", "x" * 60,
    "x" * 61, "_" * 70 + "x", "a" * 59 + "B", "a1b2C3dD", "ab" * 40, "getX getX getX",
    "hit " * 7, "hit " * 8, "hit " * 9, "hit " * 100, "Level levels LEVEL level",
    "a__b", "A_B_C", "1_000_000", "v2", "V2Beta", "utf8Decode", "I18N", "IOError",
    "'quoted' \"words\" {braces} [x] (y) <z>", "tabs\tand\nnewlines\r\n", "\x00nul\x00",
    "\x7f del", "can't won't", "http://example.com/path?q=1&r=2#frag",
]


def _rows(rows: str, content_id: int) -> dict[str, int]:
    """COPY text rows ``term, content_id, tf`` read back, each term once."""
    assert rows == "" or rows.endswith("\n")
    parsed: dict[str, int] = {}
    for line in rows.splitlines():
        term, cid, tf = line.split("\t")
        assert cid == str(content_id) and term not in parsed
        parsed[term] = int(tf)
    return parsed


def _same(text: str) -> None:
    native = tokens._native
    assert native is not None
    assert native.body_tsvector(text) == tokens.python_body_items(text), repr(text)
    counts = tokens.python_file_term_counts(text)
    assert native.file_term_counts(text) == counts, repr(text)
    rows = native.file_term_rows(text, 9_000_000_001)
    assert rows is not None and _rows(rows, 9_000_000_001) == counts, repr(text)


def test_the_install_builds_the_word_loop_in_c() -> None:
    assert tokens.NATIVE, "codenav._native is missing: was the core installed without gcc?"


@pytest.mark.parametrize("text", EDGE_CASES)
def test_c_and_python_give_the_same_terms_on_edge_cases(text: str) -> None:
    _same(text)


def test_c_and_python_give_the_same_terms_on_generated_text() -> None:
    rng = random.Random(18)
    alphabet = "aAbBzZ09_ _HTTPHeaderXMLhttp2_\n\t.-'x:/"
    for _ in range(20_000):
        _same("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 48))))
    words = ["get", "Get", "HTTP", "Url", "_", "__", "x9", "Z", "parse", "json", "ID", "v2"]
    for _ in range(2_000):
        _same(" ".join("".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
                       for _ in range(rng.randint(1, 40))))


def test_c_and_python_give_the_same_terms_on_a_file_of_many_distinct_words() -> None:
    _same(" ".join(f"w{i:06d} camelWord{i} x{i % 97}" for i in range(40_000)))


def test_c_and_python_give_the_same_terms_on_real_source_files() -> None:
    paths = sorted((ROOT / "services").rglob("*.py")) + sorted((ROOT / "services").rglob("*.c"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths += [stdlib / name for name in ("typing.py", "argparse.py", "difflib.py",
                                         "email/_header_value_parser.py")]
    checked = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        if not text.isascii():
            assert tokens._native is not None and tokens._native.body_tsvector(text) is None
            continue
        _same(text)
        lines = text.splitlines(keepends=True)
        for start in range(0, len(lines), 40):  # chunk-sized pieces too
            _same("".join(lines[start:start + 40]))
        checked += 1
    assert checked > 100


def test_text_that_is_not_ascii_is_left_to_python_with_the_same_results() -> None:
    native = tokens._native
    assert native is not None
    for text in ("naïve café", "größe Größe", "x = 'λ' + lambdaΛ", "emoji 😀 word", "日本語 text"):
        assert native.body_tsvector(text) is None
        assert native.file_term_counts(text) is None
        items, n_words, n_items = tokens.python_body_items(text)
        assert tokens.chunk_tsvector(text, None, None) == (items, n_words)
        assert native.file_term_rows(text, 7) is None
        assert tokens.file_term_counts(text) == tokens.python_file_term_counts(text)
        assert _rows(tokens.file_term_rows(text, 7), 7) == tokens.python_file_term_counts(text)


def test_a_chunks_tsvector_is_the_same_with_its_symbol_and_parent_either_way() -> None:
    for body, symbol, parent in [("return parseHTTPHeader(x)", "parseHeader", "HttpClient"),
                                 ("", "onlySymbol", None), ("__", "s", "p.q"), ("_", None, "P"),
                                 ("x " * 12, None, None)]:
        items, n_words, n_items = tokens.python_body_items(body)
        expected = [items] if n_items else []
        expected += [f"'{t}':9A" for t in tokens.identifier_terms(symbol or "")] if symbol else []
        expected += [f"'{t}':10B" for part in tokens.words(parent or "")
                     for t in tokens.identifier_terms(part)] if parent else []
        assert tokens.chunk_tsvector(body, symbol, parent) == (" ".join(expected), n_words)


def test_the_word_loop_takes_only_str() -> None:
    native = tokens._native
    assert native is not None
    for wrong in (b"bytes", None, 3):
        with pytest.raises(TypeError):
            native.body_tsvector(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native.file_term_counts(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native.file_term_rows(wrong, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.file_term_rows("text", "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.file_term_rows("text")  # type: ignore[call-arg]


def test_the_word_loop_keeps_no_memory_between_calls() -> None:
    native = tokens._native
    assert native is not None
    text = (ROOT / "services" / "core" / "codenav" / "tokens.py").read_text()
    for _ in range(50):  # warm up the interpreter's caches
        native.body_tsvector(text), native.file_term_counts(text)
        native.file_term_rows(text, 1)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2_000):
            native.body_tsvector(text), native.file_term_counts(text)
            native.file_term_rows(text, 1)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes kept after 2,000 calls"
