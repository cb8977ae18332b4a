"""The indexer's word loop in C (``codenav/_native.c``) against its reference in Python
(``codenav.tokens``): the same binary tsvectors, word counts and whole-file term counts (as a
dict and as COPY rows), on edge cases, on generated text and on real source files; text that
is not ASCII is left to Python; nothing leaks. And the binary tsvectors against Postgres:
each is the value the text form (``tokens.chunk_tsvector``) gives."""

from __future__ import annotations

import random
import sysconfig
import tracemalloc
from pathlib import Path

import psycopg
import pytest

from codenav import tokens
from codenav.db.connect import binary_tsvectors

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


def _named(text: str) -> list[tuple[list[str], list[str]]]:
    """Symbol and parent terms for a body: none, and some of its own (so that lexemes
    merge) with one of neither."""
    own = [t for w in tokens.words(text)[:3] for t in tokens.identifier_terms(w)]
    return [([], []), (own[:2] + ["zz_symbol"], own[1:] + ["zz_parent"])]


def _same(text: str) -> None:
    native = tokens._native
    assert native is not None
    for symbol_terms, parent_terms in _named(text):
        assert native.chunk_tsvector(text, symbol_terms, parent_terms) == \
            tokens.python_chunk_tsvector(text, symbol_terms, parent_terms), repr(text)
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
            assert tokens._native is not None
            assert tokens._native.chunk_tsvector(text, [], []) is None
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
        assert native.chunk_tsvector(text, [], ["x"]) is None
        assert native.file_term_counts(text) is None
        assert tokens.chunk_tsvector_binary(text, "naïveSymbol", "P") == \
            tokens.python_chunk_tsvector(text, list(tokens.identifier_terms("naïveSymbol")),
                                         ["p"])
        assert native.file_term_rows(text, 7) is None
        assert tokens.file_term_counts(text) == tokens.python_file_term_counts(text)
        assert _rows(tokens.file_term_rows(text, 7), 7) == tokens.python_file_term_counts(text)


def test_a_chunks_text_tsvector_spells_its_symbol_and_parent_with_weights() -> None:
    for body, symbol, parent in [("return parseHTTPHeader(x)", "parseHeader", "HttpClient"),
                                 ("", "onlySymbol", None), ("__", "s", "p.q"), ("_", None, "P"),
                                 ("x " * 12, None, None)]:
        items, n_words, n_items = tokens.python_body_items(body)
        expected = [items] if n_items else []
        expected += [f"'{t}':9A" for t in tokens.identifier_terms(symbol or "")] if symbol else []
        expected += [f"'{t}':10B" for part in tokens.words(parent or "")
                     for t in tokens.identifier_terms(part)] if parent else []
        assert tokens.chunk_tsvector(body, symbol, parent) == (" ".join(expected), n_words)
        assert tokens.chunk_tsvector_binary(body, symbol, parent)[1] == n_words


def _cases() -> list[tuple[str, str | None, str | None]]:
    rng = random.Random(7)
    cases: list[tuple[str, str | None, str | None]] = []
    for text in EDGE_CASES + ["naïve café", "größe Größe Straße", "x = 'λ' + lambdaΛ λ λ",
                              "emoji 😀 word", "日本語 text 日本語", "ÀÉÎ àéî"]:
        cases += [(text, None, None), (text, "parseHTTPHeader", "Outer.Inner")]
        if not any(c in text for c in "'\\\x00"):  # see the test below
            cases.append((text, text[:20] or None, "x_y"))
    words = ["get", "Get", "HTTP", "Url", "_", "__", "x9", "Z", "parse", "json", "ID", "v2", "é"]
    for _ in range(300):
        body = " ".join("".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
                        for _ in range(rng.randint(0, 30)))
        cases.append((body, rng.choice([None, "getUrl", "json", "ID_v2"]),
                      rng.choice([None, "Parser", "http.Client", "a.b.getUrl"])))
    for path in sorted((ROOT / "services" / "core" / "codenav").rglob("*.py"))[:40]:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for start in range(0, len(lines), 40):
            cases.append(("".join(lines[start:start + 40]), path.stem, "codenav.module"))
    return cases


def test_binary_tsvectors_are_the_values_of_their_text_form_in_postgres(
        conn: psycopg.Connection) -> None:
    """What the index stores (binary COPY, as ``Ingester`` sends it) equals what the text
    form gives through Postgres's own parser: lexemes, positions and weights."""
    cases = _cases()
    binary_tsvectors(conn)
    conn.execute("CREATE TEMP TABLE tsv_check (i int4, b tsvector, t tsvector)")
    with conn.cursor().copy("COPY tsv_check (i, b) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "tsvector"])
        for i, (body, symbol, parent) in enumerate(cases):
            copy.write_row((i, tokens.chunk_tsvector_binary(body, symbol, parent)[0]))
    with conn.cursor() as cur:
        cur.executemany("UPDATE tsv_check SET t = %s::tsvector WHERE i = %s",
                        [(tokens.chunk_tsvector(body, symbol, parent)[0], i)
                         for i, (body, symbol, parent) in enumerate(cases)])
    differ = conn.execute("SELECT i, b::text, t::text FROM tsv_check "
                          "WHERE b IS DISTINCT FROM t OR b::text <> t::text").fetchall()
    assert not differ, [(cases[i], b, t) for i, b, t in differ[:3]]
    row = conn.execute("SELECT count(*), count(*) FILTER (WHERE length(b) > 0) "
                       "FROM tsv_check").fetchone()
    assert row is not None and row[0] == len(cases) > 500 and row[1] > 400


def test_a_symbol_with_quotes_or_backslashes_keeps_them_in_binary(
        conn: psycopg.Connection) -> None:
    """The text form needs quotes and backslashes escaped, and ``chunk_tsvector`` does not
    (a symbol is an identifier in every grammar, in practice): ``'can't':9A`` reads as two
    lexemes, ``'a\\b'`` as ``ab``. The binary form needs no escaping and keeps them."""
    binary_tsvectors(conn)
    conn.execute("CREATE TEMP TABLE tsv_quotes (b tsvector)")
    with conn.cursor().copy("COPY tsv_quotes (b) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["tsvector"])
        copy.write_row((tokens.chunk_tsvector_binary("x", "can't", None)[0],))
        copy.write_row((tokens.chunk_tsvector_binary("x", "a\\b", None)[0],))
    rows = conn.execute("SELECT b::text FROM tsv_quotes").fetchall()
    assert rows == [("'can':9A 'can''t':9A 't':9A 'x':1",),
                    ("'a':9A 'a\\\\b':9A 'b':9A 'x':1",)]


def test_a_lexeme_keeps_its_largest_frequency_and_its_weights() -> None:
    value, n_words = tokens.chunk_tsvector_binary("fooBar foo foo fooBar fooBar fooBar",
                                                  "foo", "Bar")
    # foobar ×4; foo ×2 on its own but ×4 through fooBar: positions 1-4, and 9A as the symbol
    assert n_words == 6
    assert value == tokens.python_chunk_tsvector(
        "fooBar foo foo fooBar fooBar fooBar", ["foo"], ["bar"])[0]
    assert value.startswith(b"\x00\x00\x00\x03bar\x00\x00\x05")  # bar, foo, foobar


def test_the_word_loop_takes_only_str() -> None:
    native = tokens._native
    assert native is not None
    for wrong in (b"bytes", None, 3):
        with pytest.raises(TypeError):
            native.chunk_tsvector(wrong, [], [])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native.file_term_counts(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native.file_term_rows(wrong, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.file_term_rows("text", "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.file_term_rows("text")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        native.chunk_tsvector("text", ("a",), [])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.chunk_tsvector("text", [b"a"], [])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        native.chunk_tsvector("text", [])  # type: ignore[call-arg]


def test_the_word_loop_keeps_no_memory_between_calls() -> None:
    native = tokens._native
    assert native is not None
    text = (ROOT / "services" / "core" / "codenav" / "tokens.py").read_text()
    for _ in range(50):  # warm up the interpreter's caches
        native.chunk_tsvector(text, ["sym"], ["par"]), native.file_term_counts(text)
        native.file_term_rows(text, 1)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2_000):
            native.chunk_tsvector(text, ["sym"], ["par"]), native.file_term_counts(text)
            native.file_term_rows(text, 1)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes kept after 2,000 calls"
