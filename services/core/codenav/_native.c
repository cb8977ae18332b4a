/* codenav._native: the indexer's word loop in C, for ASCII text.
 *
 * The same results as the pure-Python functions of codenav/tokens.py, which stay the
 * reference (tests/core/index/test_native_tokens.py compares the two on real and generated
 * text):
 *
 *   chunk_tsvector(body, symbol_terms, parent_terms) -> (tsvector, n_words) | None
 *       `tokens.chunk_tsvector_binary`: a chunk's tsvector as Postgres's binary COPY format
 *       has it (tsvectorsend's), lexemes sorted as Postgres sorts them, so the server
 *       neither parses nor sorts it. A body lexeme has positions 1..its frequency (capped
 *       at 8; a lexeme of several words, the largest), weight D; the symbol's terms
 *       position 9, weight A; the parent's position 10, weight B. `n_words` as
 *       `_word_counts` counts them.
 *   file_term_counts(text) -> dict | None
 *       `tokens.file_term_counts`.
 *   file_term_rows(text, content_id) -> str | None
 *       the same counts as COPY text rows `term, content_id, tf` (`q.FILE_TERMS_COPY`).
 *
 * All return None for text that is not ASCII: `\w` is then Unicode's, which the Python
 * side handles.
 *
 * A word is a maximal run of [A-Za-z0-9_]; a lone "_" is not a word. Its terms: the word
 * lower-cased with leading and trailing "_" stripped (none when that is empty or longer than
 * MAX_TERM_LEN), then, when the word has more than one part, each new part. The parts are
 * what `tokens._PART` finds: an upper-case run before a capitalised word ("HTTP" in
 * "HTTPHeader"), an optionally capitalised lower-case run, an upper-case run, a digit run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_TERM_LEN 60
#define MAX_PARTS (MAX_TERM_LEN + 1)

static inline int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_word(unsigned char c) {
    return is_lower(c) || is_upper(c) || is_digit(c) || c == '_';
}

/* ---- a growable byte buffer ---- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    char *data = PyMem_Realloc(b->data, cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline void buf_put(Buf *b, const char *s, size_t n) {  /* after buf_reserve */
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

/* ---- the distinct words of a text, counted, in first-occurrence order ---- */

typedef struct {
    const unsigned char *start;
    Py_ssize_t len;
    uint64_t hash;
    Py_ssize_t count;
} Word;

typedef struct {
    Word *words;
    Py_ssize_t n, cap;
    Py_ssize_t *slots; /* index + 1 into words; 0 is empty */
    size_t mask;
    Py_ssize_t n_found;      /* every run, "_" included */
    Py_ssize_t n_underscore; /* the runs that are a lone "_" */
} Counts;

/* The interpreter's own keyed hash (SipHash, seeded per process like str's): a file made
 * of words that collide cannot make counting quadratic. */
static inline uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
#if PY_VERSION_HEX >= 0x030E0000
    return (uint64_t)Py_HashBuffer(s, n);
#else
    return (uint64_t)_Py_HashBytes(s, n);
#endif
}

static void counts_free(Counts *c) {
    PyMem_Free(c->words);
    PyMem_Free(c->slots);
}

static int counts_grow_slots(Counts *c, size_t size) {
    Py_ssize_t *slots = PyMem_Calloc(size, sizeof(Py_ssize_t));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    size_t mask = size - 1;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        size_t at = (size_t)c->words[i].hash & mask;
        while (slots[at])
            at = (at + 1) & mask;
        slots[at] = i + 1;
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->mask = mask;
    return 0;
}

/* Counts `inc` more of the `n` bytes at `s`, which must outlive `c`. Returns the word's
 * index, or -1 on error. */
static Py_ssize_t counts_add(Counts *c, const unsigned char *s, Py_ssize_t n,
                             Py_ssize_t inc) {
    uint64_t h = hash_bytes(s, n);
    size_t at = (size_t)h & c->mask;
    for (Py_ssize_t k; (k = c->slots[at]); at = (at + 1) & c->mask) {
        Word *w = &c->words[k - 1];
        if (w->hash == h && w->len == n && memcmp(w->start, s, (size_t)n) == 0) {
            w->count += inc;
            return k - 1;
        }
    }
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap * 2;
        Word *words = PyMem_Realloc(c->words, (size_t)cap * sizeof(Word));
        if (!words) {
            PyErr_NoMemory();
            return -1;
        }
        c->words = words;
        c->cap = cap;
    }
    c->words[c->n] = (Word){s, n, h, inc};
    c->n++;
    c->slots[at] = c->n;
    if ((size_t)c->n * 2 > c->mask + 1 && counts_grow_slots(c, (c->mask + 1) * 2) < 0)
        return -1;
    return c->n - 1;
}

static int counts_init(Counts *c) {
    memset(c, 0, sizeof(*c));
    c->cap = 64;
    c->words = PyMem_Malloc((size_t)c->cap * sizeof(Word));
    if (!c->words) {
        PyErr_NoMemory();
        return -1;
    }
    return counts_grow_slots(c, 128);
}

static int count_words(const unsigned char *s, Py_ssize_t n, Counts *c) {
    if (counts_init(c) < 0)
        return -1;
    Py_ssize_t i = 0;
    while (i < n) {
        if (!is_word(s[i])) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < n && is_word(s[j]))
            j++;
        c->n_found++;
        if (j - i == 1 && s[i] == '_')
            c->n_underscore++;
        else if (counts_add(c, s + i, j - i, 1) < 0)
            return -1;
        i = j;
    }
    return 0;
}

/* ---- one word's terms ---- */

/* The terms of word `w` (length `n`), as offsets into `low` (the word lower-cased, which
 * the caller provides, `n` bytes): `starts[i]`, `lens[i]`. Returns how many. */
static int word_terms(const unsigned char *w, Py_ssize_t n, const char *low,
                      Py_ssize_t *starts, Py_ssize_t *lens) {
    Py_ssize_t a = 0, b = n;
    while (a < b && w[a] == '_')
        a++;
    while (b > a && w[b - 1] == '_')
        b--;
    if (b == a || b - a > MAX_TERM_LEN)
        return 0;
    Py_ssize_t pstart[MAX_PARTS], plen[MAX_PARTS];
    int parts = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char ch = w[i];
        Py_ssize_t end;
        if (is_upper(ch)) {
            Py_ssize_t j = i + 1;
            while (j < n && is_upper(w[j]))
                j++;
            if (j - i >= 2 && j < n && is_lower(w[j]))
                end = j - 1; /* "HTTP" of "HTTPHeader" */
            else if (i + 1 < n && is_lower(w[i + 1])) {
                end = i + 1;
                while (end < n && is_lower(w[end]))
                    end++;
            } else
                end = j;
        } else if (is_lower(ch)) {
            end = i + 1;
            while (end < n && is_lower(w[end]))
                end++;
        } else if (is_digit(ch)) {
            end = i + 1;
            while (end < n && is_digit(w[end]))
                end++;
        } else {
            i++; /* "_" */
            continue;
        }
        if (parts < MAX_PARTS) {
            pstart[parts] = i;
            plen[parts] = end - i;
        }
        parts++;
        i = end;
    }
    starts[0] = a;
    lens[0] = b - a;
    if (parts <= 1)
        return 1;
    int out = 1;
    for (int p = 0; p < parts && p < MAX_PARTS; p++) {
        int seen = 0;
        for (int q = 0; q < out && !seen; q++)
            seen = lens[q] == plen[p] && memcmp(low + starts[q], low + pstart[p],
                                                (size_t)plen[p]) == 0;
        if (!seen) {
            starts[out] = pstart[p];
            lens[out] = plen[p];
            out++;
        }
    }
    return out;
}

static void lower_into(char *dst, const unsigned char *src, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        dst[i] = (char)(is_upper(src[i]) ? src[i] + 32 : src[i]);
}

/* Whether `text` is an ASCII str: 1, with its bytes in `*s` and length in `*n`; 0 when it
 * is a str with other characters (Python's part); -1 with TypeError when it is no str. */
static int ascii_of(PyObject *text, const unsigned char **s, Py_ssize_t *n) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected str");
        return -1;
    }
    if (PyUnicode_READY(text) < 0)
        return -1;
    if (!PyUnicode_IS_ASCII(text))
        return 0;
    *n = PyUnicode_GET_LENGTH(text);
    *s = (const unsigned char *)PyUnicode_DATA(text);
    return 1;
}

/* A function's answer for text `ascii_of` did not take: None, or the error it set. */
static PyObject *not_ascii(int taken) { return taken < 0 ? NULL : Py_NewRef(Py_None); }

/* ---- chunk_tsvector: a chunk's tsvector in binary COPY format ---- */

#define SYMBOL_BIT 16 /* the term is one of the symbol's: position 9, weight A */
#define PARENT_BIT 32 /* one of the parent's: position 10, weight B */
#define FREQ_MASK 15  /* the body's frequency, capped at 8: positions 1..freq, weight D */

static inline void put_u16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* Lexemes in Postgres's order (compareentry: memcmp, then the shorter first). */
static const Word *sort_base;
static int lexeme_order(const void *a, const void *b) {
    const Word *x = &sort_base[*(const Py_ssize_t *)a], *y = &sort_base[*(const Py_ssize_t *)b];
    Py_ssize_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->start, y->start, (size_t)n);
    return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

/* Adds the str items of `terms` (a list) with `bit` to `lex`; their bytes live as long as
 * the list's items. */
static int add_named(Counts *lex, PyObject *terms, int bit) {
    if (!PyList_Check(terms)) {
        PyErr_SetString(PyExc_TypeError, "expected a list of str");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(terms); i++) {
        Py_ssize_t len;
        const char *term = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(terms, i), &len);
        if (!term)
            return -1;
        Py_ssize_t k = counts_add(lex, (const unsigned char *)term, len, 0);
        if (k < 0)
            return -1;
        lex->words[k].count |= bit;
    }
    return 0;
}

static PyObject *chunk_tsvector(PyObject *Py_UNUSED(module), PyObject *const *args,
                                Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "chunk_tsvector(body, symbol_terms, parent_terms)");
        return NULL;
    }
    Py_ssize_t n;
    const unsigned char *s;
    int taken = ascii_of(args[0], &s, &n);
    if (taken <= 0)
        return not_ascii(taken);
    Counts c, lex;
    memset(&lex, 0, sizeof(lex));
    char *low = NULL;
    Py_ssize_t *order = NULL;
    PyObject *result = NULL;
    if (count_words(s, n, &c) < 0 || counts_init(&lex) < 0)
        goto done;
    /* the lexemes point into the words' lower-cased copies: sized once, so they stay put */
    size_t room = 1;
    for (Py_ssize_t k = 0; k < c.n; k++)
        room += (size_t)c.words[k].len;
    low = PyMem_Malloc(room);
    if (!low) {
        PyErr_NoMemory();
        goto done;
    }
    size_t used = 0;
    Py_ssize_t starts[MAX_PARTS + 1], lens[MAX_PARTS + 1];
    for (Py_ssize_t k = 0; k < c.n; k++) {
        Word *w = &c.words[k];
        char *word = low + used;
        lower_into(word, w->start, w->len);
        int found = word_terms(w->start, w->len, word, starts, lens);
        Py_ssize_t freq = w->count < 8 ? w->count : 8;
        for (int t = 0; t < found; t++) {
            /* a lexeme of several words keeps the most positions (Postgres merges them) */
            Py_ssize_t at = counts_add(&lex, (const unsigned char *)word + starts[t], lens[t], 0);
            if (at < 0)
                goto done;
            if ((lex.words[at].count & FREQ_MASK) < freq)
                lex.words[at].count = (lex.words[at].count & ~(Py_ssize_t)FREQ_MASK) | freq;
        }
        if (found)
            used += (size_t)w->len;
    }
    if (add_named(&lex, args[1], SYMBOL_BIT) < 0 || add_named(&lex, args[2], PARENT_BIT) < 0)
        goto done;
    order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(lex.n ? lex.n : 1));
    if (!order) {
        PyErr_NoMemory();
        goto done;
    }
    size_t size = 4;
    for (Py_ssize_t k = 0; k < lex.n; k++) {
        Py_ssize_t f = lex.words[k].count;
        order[k] = k;
        size += (size_t)lex.words[k].len + 3 +
                2 * (size_t)((f & FREQ_MASK) + !!(f & SYMBOL_BIT) + !!(f & PARENT_BIT));
    }
    sort_base = lex.words; /* the interpreter lock is held: no other call sorts meanwhile */
    qsort(order, (size_t)lex.n, sizeof(Py_ssize_t), lexeme_order);
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!bytes)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(bytes);
    p[0] = (unsigned char)(lex.n >> 24);
    p[1] = (unsigned char)(lex.n >> 16);
    put_u16(p + 2, (unsigned)(lex.n & 0xffff));
    p += 4;
    for (Py_ssize_t k = 0; k < lex.n; k++) {
        const Word *w = &lex.words[order[k]];
        Py_ssize_t f = w->count, freq = f & FREQ_MASK;
        memcpy(p, w->start, (size_t)w->len);
        p += w->len;
        *p++ = 0;
        put_u16(p, (unsigned)(freq + !!(f & SYMBOL_BIT) + !!(f & PARENT_BIT)));
        p += 2;
        for (Py_ssize_t i = 1; i <= freq; i++, p += 2)
            put_u16(p, (unsigned)i); /* weight D: 0 */
        if (f & SYMBOL_BIT) {
            put_u16(p, (3u << 14) | 9);
            p += 2;
        }
        if (f & PARENT_BIT) {
            put_u16(p, (2u << 14) | 10);
            p += 2;
        }
    }
    result = Py_BuildValue("(Nn)", bytes, c.n_found - c.n_underscore);
done:
    PyMem_Free(order);
    PyMem_Free(low);
    counts_free(&lex);
    counts_free(&c);
    return result;
}

/* ---- a file's terms, for whole-file BM25 ---- */

/* The terms of `text`'s words with their frequencies, single characters and one- or
 * two-digit numbers left out, into `terms` (whose bytes live in `*arena`, which the caller
 * frees). Returns -1 on error. */
static int count_file_terms(const unsigned char *s, Py_ssize_t n, Counts *terms,
                            char **arena) {
    Counts c;
    *arena = NULL;
    memset(terms, 0, sizeof(*terms));
    if (count_words(s, n, &c) < 0 || counts_init(terms) < 0) {
        counts_free(&c);
        return -1;
    }
    /* A word's terms point into its lower-cased copy. Sized once for every word, so the
     * terms' addresses stay put. */
    size_t room = 1;
    for (Py_ssize_t k = 0; k < c.n; k++)
        room += (size_t)c.words[k].len;
    char *low = PyMem_Malloc(room);
    *arena = low;
    if (!low) {
        PyErr_NoMemory();
        counts_free(&c);
        return -1;
    }
    size_t used = 0;
    Py_ssize_t starts[MAX_PARTS + 1], lens[MAX_PARTS + 1];
    for (Py_ssize_t k = 0; k < c.n; k++) {
        Word *w = &c.words[k];
        char *word = low + used;
        lower_into(word, w->start, w->len);
        int found = word_terms(w->start, w->len, word, starts, lens);
        int kept = 0;
        for (int t = 0; t < found; t++) {
            const char *term = word + starts[t];
            Py_ssize_t len = lens[t];
            if (len < 2 || (len < 3 && is_digit((unsigned char)term[0]) &&
                            is_digit((unsigned char)term[len - 1])))
                continue;
            if (counts_add(terms, (const unsigned char *)term, len, w->count) < 0) {
                counts_free(&c);
                return -1;
            }
            kept = 1;
        }
        if (kept)
            used += (size_t)w->len; /* the terms point into this copy: keep it */
    }
    counts_free(&c);
    return 0;
}

static PyObject *file_term_counts(PyObject *Py_UNUSED(module), PyObject *text) {
    Py_ssize_t n;
    const unsigned char *s;
    int taken = ascii_of(text, &s, &n);
    if (taken <= 0)
        return not_ascii(taken);
    Counts terms;
    char *arena;
    PyObject *counts = NULL;
    if (count_file_terms(s, n, &terms, &arena) < 0)
        goto done;
    counts = PyDict_New();
    for (Py_ssize_t k = 0; counts && k < terms.n; k++) {
        Word *t = &terms.words[k];
        PyObject *key = PyUnicode_DecodeASCII((const char *)t->start, t->len, NULL);
        PyObject *value = key ? PyLong_FromSsize_t(t->count) : NULL;
        if (!value || PyDict_SetItem(counts, key, value) < 0)
            Py_CLEAR(counts);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
done:
    counts_free(&terms);
    PyMem_Free(arena);
    return counts;
}

/* file_term_rows(text, content_id) -> str | None: the postings of one file as COPY text
 * rows `term<TAB>content_id<TAB>tf<NEWLINE>`. Terms are letters, digits and "_": nothing
 * to escape. */
static PyObject *file_term_rows(PyObject *Py_UNUSED(module), PyObject *const *args,
                                Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "file_term_rows(text, content_id)");
        return NULL;
    }
    long long content_id = PyLong_AsLongLong(args[1]);
    if (content_id == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n;
    const unsigned char *s;
    int taken = ascii_of(args[0], &s, &n);
    if (taken <= 0)
        return not_ascii(taken);
    char middle[32];
    int middle_len = snprintf(middle, sizeof(middle), "\t%lld\t", content_id);
    Counts terms;
    char *arena;
    Buf out = {0};
    PyObject *result = NULL;
    if (count_file_terms(s, n, &terms, &arena) < 0)
        goto done;
    for (Py_ssize_t k = 0; k < terms.n; k++) {
        Word *t = &terms.words[k];
        char tf[24];
        int tf_len = snprintf(tf, sizeof(tf), "%zd\n", t->count);
        if (buf_reserve(&out, (size_t)t->len + (size_t)middle_len + (size_t)tf_len) < 0)
            goto done;
        buf_put(&out, (const char *)t->start, (size_t)t->len);
        buf_put(&out, middle, (size_t)middle_len);
        buf_put(&out, tf, (size_t)tf_len);
    }
    result = PyUnicode_DecodeASCII(out.data ? out.data : "", (Py_ssize_t)out.len, NULL);
done:
    counts_free(&terms);
    PyMem_Free(arena);
    PyMem_Free(out.data);
    return result;
}

static PyMethodDef methods[] = {
    {"chunk_tsvector", (PyCFunction)(void (*)(void))chunk_tsvector, METH_FASTCALL,
     "A chunk's tsvector in binary COPY format and its word count; None if not ASCII."},
    {"file_term_counts", file_term_counts, METH_O,
     "A file's term frequencies for whole-file BM25; None if not ASCII."},
    {"file_term_rows", (PyCFunction)(void (*)(void))file_term_rows, METH_FASTCALL,
     "A file's postings as COPY text rows (term, content id, tf); None if not ASCII."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "codenav._native",
                                    "The indexer's word loop in C (see codenav.tokens).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    return PyModule_Create(&module);
}
