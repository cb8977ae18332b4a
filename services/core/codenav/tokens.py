"""The code-aware token stream shared by indexing and querying.

An identifier yields itself and its parts, split on ``_``, camelCase and digit boundaries:
``parseHTTPHeader2`` gives ``parsehttpheader2``, ``parse``, ``http``, ``header``, ``2``.
So a query for "http header" finds ``parseHttpHeader`` and a query for ``parse_http_header``
finds code that spells it ``parseHttpHeader``.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from functools import lru_cache

try:
    from codenav import _native
except ImportError:  # built without a C compiler (setup.py): the same results, in Python
    _native = None  # type: ignore[assignment]

NATIVE = _native is not None
"""Whether ASCII text goes through the word loop in C (``codenav/_native.c``): a chunk's
tsvector about six times faster, a file's term counts about four times (bench/README.md,
"The word loop in C"). The Python functions below stay the reference for its results."""

_WORD = re.compile(r"\w+", re.UNICODE)
"""A word: a maximal run of word characters, except a lone ``_`` (``words`` drops it). The
same words as ``[^\\W_]\\w*|_\\w+``, which spells the exception out, in 70% of its time:
tokenising Apache Kafka's chunks took 1.9 s against 2.7 s."""
_NOT_WORD = str.maketrans({c: " " for c in map(chr, range(128))
                           if not (c.isalnum() or c == "_")})
"""ASCII characters outside ``\\w``, each to a space (``find_words``)."""
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
MAX_TERM_LEN = 60

# English words that carry no meaning in a search over code; used on the query side only.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have
    how i if in into is it its itself me my no not of on or our should so some such than that
    the their them then there these they this those to too very was we were what when where
    which while who why will with would you your just also any all one get got want using use
    used like make made need needs please thanks hi hello""".split()
)


@lru_cache(maxsize=200_000)
def identifier_terms(word: str) -> tuple[str, ...]:
    """The lower-cased terms of one identifier: the whole word first, then its parts."""
    whole = word.lower().strip("_")
    if not whole or len(whole) > MAX_TERM_LEN:
        return ()
    parts = [p.lower() for p in _PART.findall(word)]
    if len(parts) <= 1:
        return (whole,)
    seen = {whole}
    out = [whole]
    for part in parts:
        if part not in seen:
            seen.add(part)
            out.append(part)
    return tuple(out)


@lru_cache(maxsize=10_000)
def query_word_terms(word: str) -> tuple[str, ...]:
    """A query word's terms: ``identifier_terms``, or for an identifier too long to be a
    term (``shouldThrowUnsupportedVersionExceptionOnHandleTxnOffsetCommitRequestWhen...``,
    over ``MAX_TERM_LEN``) its parts, which the code around it spells too. The index keeps
    no such word whole, so a query made of one had no term at all."""
    terms = identifier_terms(word)
    if terms or len(word.strip("_")) <= MAX_TERM_LEN:
        return terms
    parts = (p.lower() for p in _PART.findall(word))
    return tuple(dict.fromkeys(p for p in parts if len(p) <= MAX_TERM_LEN))


def find_words(text: str) -> list[str]:
    """Every maximal run of word characters in ``text``, as ``_WORD.findall`` finds them.
    ASCII text (nearly all code) is split by ``str.translate`` and ``str.split`` instead,
    with the same result in 43% of the time: on Apache Kafka's 83,751 chunks, 0.43 s
    against 1.0 s. Among ASCII characters ``\\w`` is letters, digits and ``_``, and every
    character ``str.split`` splits on is outside it, so both find the same runs."""
    if text.isascii():
        return text.translate(_NOT_WORD).split()
    return _WORD.findall(text)


def words(text: str) -> list[str]:
    found = find_words(text)
    return [w for w in found if w != "_"] if "_" in found else found


def _word_counts(text: str) -> tuple[Counter[str], int]:
    """How often each word of ``text`` occurs, and how many words it has."""
    found = find_words(text)
    counts = Counter(found)
    return counts, len(found) - counts.pop("_", 0)


def term_counts(text: str) -> Counter[str]:
    """Term frequencies of ``text`` as the index sees it."""
    counts: Counter[str] = Counter()
    for word in words(text):
        counts.update(identifier_terms(word))
    return counts


_POSITIONS = [""] + [",".join(str(i) for i in range(1, n + 1)) for n in range(1, 9)]


def python_body_items(body: str) -> tuple[str, int, int]:
    """A chunk body's tsvector items in Postgres's text syntax, space-separated, its length
    in words and how many words were rendered (a word with no term renders empty)."""
    found, n_words = _word_counts(body)
    items = []
    for word, count in found.items():
        positions = _POSITIONS[count if count < 8 else 8]
        items.append(" ".join(f"'{t}':{positions}" for t in identifier_terms(word)))
    return " ".join(items), n_words, len(items)


def chunk_tsvector(body: str, symbol: str | None, parent: str | None) -> tuple[str, int]:
    """A chunk's tsvector in Postgres's text syntax, and its length in words: the reference
    for ``chunk_tsvector_binary``, which the index stores.

    Body terms carry their frequency (as up to 8 positions, weight D); the symbol's own
    terms get weight A and its parent's weight B, so declarations outrank mentions.
    Body terms are ``\\w`` runs, so they never need escaping inside the quotes; a symbol's
    terms are not escaped either, so one holding a quote or a backslash reads otherwise
    here (the binary form keeps it). Postgres merges the positions of a lexeme that
    several words (or the symbol) give.
    """
    text, n_words, n_items = python_body_items(body)
    items = [text] if n_items else []
    if symbol:
        items += [f"'{t}':9A" for t in identifier_terms(symbol)]
    if parent:
        items += [f"'{t}':10B" for t in _parent_terms(parent)]
    return " ".join(items), n_words


def _parent_terms(parent: str) -> list[str]:
    return [t for part in words(parent) for t in identifier_terms(part)]


_SYMBOL, _PARENT, _FREQ = 16, 32, 15
"""A lexeme's flags in ``python_chunk_tsvector``: one of the symbol's terms, one of the
parent's, and its frequency in the body (capped at 8)."""
_WEIGHT_A, _WEIGHT_B = 3 << 14, 2 << 14


def chunk_tsvector_binary(body: str, symbol: str | None,
                          parent: str | None) -> tuple[bytes, int]:
    """``chunk_tsvector``'s value in Postgres's binary COPY format (``tsvectorsend``'s): a
    count, then each lexeme NUL-terminated with its positions (weight in the top two
    bits), lexemes in Postgres's order and each once. The server stores it without parsing
    text or sorting: on Apache Kafka's 83,752 chunks its COPY took 2-3 s less of the
    backend's CPU than the text form (bench/README.md, "Chunks' tsvectors sent in binary").
    ASCII bodies go through ``_native.chunk_tsvector``; ``python_chunk_tsvector`` is its
    reference, and the way for other text."""
    symbol_terms = list(identifier_terms(symbol)) if symbol else []
    parent_terms = _parent_terms(parent) if parent else []
    done = _native.chunk_tsvector(body, symbol_terms, parent_terms) \
        if _native is not None else None
    return done if done is not None else \
        python_chunk_tsvector(body, symbol_terms, parent_terms)


def python_chunk_tsvector(body: str, symbol_terms: list[str],
                          parent_terms: list[str]) -> tuple[bytes, int]:
    """``chunk_tsvector_binary`` in Python, from the symbol's and parent's terms."""
    found, n_words = _word_counts(body)
    lexemes: dict[str, int] = {}
    for word, count in found.items():
        freq = count if count < 8 else 8
        for term in identifier_terms(word):
            held = lexemes.get(term, 0)
            if held & _FREQ < freq:
                lexemes[term] = held & ~_FREQ | freq
    for term in symbol_terms:
        lexemes[term] = lexemes.get(term, 0) | _SYMBOL
    for term in parent_terms:
        lexemes[term] = lexemes.get(term, 0) | _PARENT
    encoded = sorted((term.encode("utf-8"), flags) for term, flags in lexemes.items())
    out = [struct.pack("!i", len(encoded))]
    for lexeme, flags in encoded:
        positions = list(range(1, (flags & _FREQ) + 1))
        if flags & _SYMBOL:
            positions.append(_WEIGHT_A | 9)
        if flags & _PARENT:
            positions.append(_WEIGHT_B | 10)
        out.append(lexeme + struct.pack(f"!xH{len(positions)}H", len(positions), *positions))
    return b"".join(out), n_words


def file_term_counts(text: str) -> dict[str, int]:
    """Term frequencies of a whole file (identifiers and their parts), for file-level BM25.
    Single characters and one- or two-digit numbers are left out: they rank nothing and
    were a fifth of all postings. ASCII text is counted by ``_native.file_term_counts``,
    which gives what ``python_file_term_counts`` gives."""
    done = _native.file_term_counts(text) if _native is not None else None
    return done if done is not None else python_file_term_counts(text)


def file_term_rows(text: str, content_id: int) -> str:
    """``file_term_counts`` as COPY text rows ``term<TAB>content_id<TAB>tf`` (the columns of
    ``q.FILE_TERMS_COPY``), for a whole file at once rather than a ``write_row`` per term. A
    term is word characters: nothing in a row needs escaping."""
    done = _native.file_term_rows(text, content_id) if _native is not None else None
    if done is not None:
        return done
    return "".join(f"{term}\t{content_id}\t{tf}\n"
                   for term, tf in python_file_term_counts(text).items())


def python_file_term_counts(text: str) -> dict[str, int]:
    """``file_term_counts`` in Python: the reference, and the way for text not ASCII."""
    counts: dict[str, int] = {}
    for word, n in _word_counts(text)[0].items():
        for term in identifier_terms(word):
            if len(term) < 2 or (len(term) < 3 and term.isdigit()):
                continue
            counts[term] = counts.get(term, 0) + n
    return counts


def path_terms(path: str) -> list[str]:
    """Terms of a repo-relative path: directory and file names, split like identifiers."""
    out: list[str] = []
    for word in words(path):
        out += identifier_terms(word)
    return out


def path_tsvector(path: str) -> str:
    terms = path_terms(path)
    name_terms = set(path_terms(path.rsplit("/", 1)[-1]))
    return " ".join(f"'{t}':1A" if t in name_terms else f"'{t}'" for t in dict.fromkeys(terms))


def singular_variants(term: str) -> tuple[str, ...]:
    """Cheap plural folding for queries: ``workspaces`` also matches ``workspace``."""
    variants = [term]
    if len(term) > 4 and term.endswith("ies"):
        variants.append(term[:-3] + "y")
    elif len(term) > 4 and term.endswith(("ses", "xes", "ches", "shes")):
        variants.append(term[:-2])
    elif len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        variants.append(term[:-1])
    else:
        variants.append(term + "s")
    return tuple(variants)
