"""Turning what an agent typed into weighted term groups.

``parse auth [login|signin] headers`` becomes groups {parse}, {auth}, {login, signin},
{headers, header}: alternatives inside a group are ORed (brackets, plural forms), groups
are softly ANDed (more groups matched ranks higher). Identifiers are split like the index
splits them, so ``parseHttpHeader`` also yields {parse}, {http}, {header}.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from codenav.errors import InvalidRequest
from codenav.lang import conventions
from codenav.tokens import (
    STOPWORDS,
    identifier_terms,
    query_word_terms,
    singular_variants,
    words,
)

MAX_QUERY_CHARS = 8000
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)

# --- an issue text's environment report ----------------------------------------------------
# Bug templates ask for the versions of everything installed (``xr.show_versions()``,
# ``sklearn.show_versions()``, ``pip list``, "- OS: Linux / - Python version: 3.8"). Those
# lines name packages and platforms, not the code at fault: on SWE-bench Verified the module
# that prints xarray's report was in the top two for three issues whose fix was elsewhere.
_VERSION_VALUE = re.compile(
    r"(?:v?\d+(?:\.\d+)+[\w.+\-]*|\d+\s*(?:\(|$)|none|null|true|false|yes|no|n/?a|unknown|"
    r"any|master|main|dev|latest|not\s+installed|linux|darwin|windows|win32|win64|macos|"
    r"mac\s*os|osx|ubuntu|debian|fedora|centos|arch|x86_64|amd64|arm64|aarch64|i386|little|"
    r"big|utf-?8|en_\w+|c\.utf-?8|blas|cblas|openblas|libopenblas\w*|mkl|openmp|libgomp|"
    r"libiomp\w*|vcomp|pthreads?|haswell|skylake\w*|sandybridge|zen\d?|prescott|nehalem)\b|"
    r"(?:/|~/|[A-Za-z]:\\)\S", re.IGNORECASE)
"""What a report line's value looks like: a version, a platform, None or a yes/no, a BLAS
or threading library and its CPU target, an installation's path."""
_DOTTED = re.compile(r"v?\d+\.\d")
_REPORT_LINE = re.compile(
    r"\s*+(?:[-*+]\s++)?(?:\*\*|__)?(?P<key>[A-Za-z][\w.\-/`']{0,30}(?: [\w.\-/`']{1,30}){0,4})"
    r"(?:\*\*|__)?\s*+(?:\([^)\n]*+\))?\s*+(?:\*\*)?(?::|==|>=)\s*+(?:\*\*)?[`'\"]?"
    r"(?P<value>(?:/|~/|[A-Za-z]:\\)\S{0,300}|\S.{0,100})")
"""``numpy: 1.19.1``, ``- **Python version**: 3.8``, ``numpy==1.19.1``."""
_LISTED_PACKAGE = re.compile(
    r"\s*+[A-Za-z][\w\-.]{0,40}\s++v?\d++(?:\.\d++)++\S*+(?:\s++[A-Za-z_]\S*+){0,2}\s*+")
"""A ``pip list`` / ``conda list`` row: a name, a dotted version, perhaps a build and channel."""
_REPORT_KEY = re.compile(
    r"python|\bos\b|os-release|platform|system|machine|processor|executable|byteorder|"
    r"lc_all|\blang\b|locale|kernel|compiler|version|\bnode\b|\bnpm\b|browser", re.IGNORECASE)
"""Keys only an environment report has; a config block (``timeout: 30``) has none."""
_REPORT_HEADING = re.compile(
    r"\s*+#{1,6}\s*+(?:\*\*)?[\w .\-]{0,30}(?:version|versions|operating system|\bos|platform|"
    r"environment|python|installation|system)\s*+(?:\*\*)?\s*+:?\s*+", re.IGNORECASE)
"""An issue form's heading whose answer is one line (``### Python version`` / ``3.9``)."""
_ANY_HEADING = re.compile(r"\s*#{1,6}\s")
_REPORT_TITLE = re.compile(
    r"\s*+(?:#{1,6}\s.*|\*\*.*\*\*:?|<(?:details|summary)\b.*|\S.{0,60}:|[A-Z][A-Z ]{3,40}|"
    r"\S.{0,60}(?:version|environment|system|platform).{0,20})\s*", re.IGNORECASE)
"""A line that introduces a report (``#### Output of xr.show_versions()``, ``INSTALLED
VERSIONS``, ``**Environment info**``, ``System:``): it goes with the report."""
_REPORT_SECTION = re.compile(r"\s*+[A-Za-z][\w .\-]{0,40}:\s*+")
"""A section of a report (``System:``, ``Python dependencies:``, ``threadpoolctl info:``) or
a key left empty (``lib_dirs:``): kept inside a run of report lines, not started by one."""
_INTERPRETER_BANNER = re.compile(
    r"\s*+(?:>>>\s*+)?(?:Python \d+\.\d+\S*+ \([^)\n]{0,120}\)(?: ?\[[^\]\n]{0,120}\])?"
    r"(?: on \w+)?|Type \"help\", \"copyright\", \"credits\" or \"license(?:\(\))?\" for more "
    r"information\.|IPython \d\S* -- An enhanced Interactive Python\..{0,60})\s*")
"""The lines an interactive session opens with (``Python 3.10.4 (main, Apr 2 2022) [GCC
11.2.0] on linux``): which build ran it, never what the issue is about."""
_BANNER_BUILD = re.compile(r"\s*+\[[^\]\n]{0,120}\][^\n]{0,60}")
"""A banner's compiler on the line after it (``[Clang 12.0.0 ] :: Anaconda, Inc. on darwin``)."""
_REPORT_FRAME = re.compile(r"\s*(?:```\w*|~~~\w*|[-=]{3,}[-= ]*|</?details>|)\s*")
"""Blank lines, fences, rules and ``<details>`` between a report and its title."""
REPORT_TITLE_LINES = 2
REPORT_MIN_LINES = 3
"""A run of report lines this long or longer is a report; a lone ``key: 3`` is prose."""


def _report_line(line: str) -> tuple[bool, bool]:
    """Whether ``line`` reads like a line of an environment report, and whether it alone
    says so (a dotted version, or a key only such reports have)."""
    m = _REPORT_LINE.fullmatch(line)
    if m is not None:
        value = m.group("value").strip("`'\" ")
        if not _VERSION_VALUE.match(value):
            return False, False
        return True, bool(_DOTTED.match(value) or _REPORT_KEY.search(m.group("key")))
    listed = bool(_LISTED_PACKAGE.fullmatch(line))
    return listed, listed


def strip_environment(text: str) -> str:
    """``text`` without its environment report: runs of ``REPORT_MIN_LINES`` or more report
    lines (blank lines and section lines between them allowed) of which two or more say so
    alone, with up to ``REPORT_TITLE_LINES`` title lines just above them; issue-form
    headings about versions or the platform whose whole answer is one such value; and an
    interactive interpreter's banner. Every other line is kept
    as it was (a config block of ``timeout: 30`` lines, a table of numbers)."""
    if "\n" not in text and "\r" not in text:  # one line is never a report
        return text
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    marks = [_report_line(line) for line in lines]
    drop = [False] * len(lines)
    i = 0
    while i < len(lines):
        if _REPORT_HEADING.fullmatch(lines[i]):
            body: list[int] = []
            j = i + 1
            while j < len(lines) and not _ANY_HEADING.match(lines[j]) and len(body) < 2:
                if lines[j].strip():
                    body.append(j)
                j += 1
            if len(body) == 1 and (j == len(lines) or _ANY_HEADING.match(lines[j])) and \
                    _VERSION_VALUE.match(lines[body[0]].strip("`'\" *-")):
                drop[i] = drop[body[0]] = True
            i += 1
            continue
        if _INTERPRETER_BANNER.fullmatch(lines[i]):
            drop[i] = True
            if i + 1 < len(lines) and _BANNER_BUILD.fullmatch(lines[i + 1]):
                drop[i + 1] = True  # the compiler, on a line of its own
            i += 1
            continue
        if not marks[i][0]:
            i += 1
            continue
        run: list[int] = []
        sections: list[int] = []
        j = i
        while j < len(lines) and (marks[j][0] or not lines[j].strip() or
                                  _REPORT_SECTION.fullmatch(lines[j])):
            if marks[j][0]:
                run.append(j)
            elif lines[j].strip():
                sections.append(j)
            j += 1
        if len(run) >= REPORT_MIN_LINES and sum(marks[k][1] for k in run) >= 2:
            for k in run + [k for k in sections if k < run[-1]]:
                drop[k] = True
            titles, k = 0, i - 1
            while k >= 0 and titles < REPORT_TITLE_LINES and not drop[k]:
                if _REPORT_FRAME.fullmatch(lines[k]):
                    k -= 1
                    continue
                if not _REPORT_TITLE.fullmatch(lines[k]):
                    break
                drop[k] = True
                titles += 1
                k -= 1
        i = j
    if not any(drop):
        return text
    return "\n".join(line for line, gone in zip(lines, drop, strict=True) if not gone)

_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures",
                         "mock", "mocks", "pytest", "junit", "unittest"})
_DEF_INTENT = re.compile(r"\b(where|which)\b.*\b(defined|declared|implemented|definition)\b|"
                         r"^\s*(def|class|func|function|interface|struct|type)\s+\w+",
                         re.IGNORECASE)


@dataclass
class Group:
    terms: tuple[str, ...]
    """Alternatives, any of which satisfies the group."""
    label: str
    """How the agent wrote it, for explanations."""
    idf: float = 1.0
    df: int = 0
    count: int = 1
    """How often the query says it (long queries repeat what matters)."""


@dataclass
class ParsedQuery:
    raw: str
    groups: list[Group] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    """Identifier-like words as typed (``parseHttpHeader``, ``Foo.bar``), for exact matches."""
    wants_tests: bool = False
    definition_intent: bool = False
    words: int = 0
    """How many words the query typed that carry meaning: an identifier counts once, a
    bracketed group once, stop words not at all."""

    @property
    def all_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for g in self.groups:
            for t in g.terms:
                seen.setdefault(t, None)
        return list(seen)


def _group_for(word_terms: list[str], label: str) -> Group | None:
    alts: dict[str, None] = {}
    for term in word_terms:
        for variant in singular_variants(term):
            alts.setdefault(variant, None)
    return Group(terms=tuple(alts), label=label) if alts else None


@lru_cache(maxsize=64)
def _cleaned(text: str) -> tuple[str, str]:
    """``text`` without an issue template's comments, and without its environment report
    as well; before the text is cut to ``MAX_QUERY_CHARS``, so that they do not spend the
    length kept. Cached: a hybrid query's terms and its vector both start here."""
    uncommented = _HTML_COMMENT.sub(" ", text[:4 * MAX_QUERY_CHARS].replace("\0", " "))
    return uncommented, strip_environment(uncommented)


def semantic_text(text: str) -> str:
    """What of a query is embedded: the text its terms come from. A template's comment
    often opens an issue text (``<!-- Please check that the development version still
    produces the same bug -->``), and an embedding reads only the first tokens (64 for the
    default model): the vector was the template's."""
    return _cleaned(text)[1].strip()[:MAX_QUERY_CHARS] or text[:MAX_QUERY_CHARS]


def parse_query(text: str) -> ParsedQuery:
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest("query is empty", hint="describe what you are looking for")
    uncommented, cleaned = _cleaned(text)
    parsed = _parse(cleaned[:MAX_QUERY_CHARS])
    if parsed is None:  # nothing but a report: then the report is what was asked about
        parsed = _parse(uncommented[:MAX_QUERY_CHARS])
    if parsed is None:
        raise InvalidRequest("query has no searchable words",
                             hint="use identifiers or words that appear in the code")
    return parsed


def _parse(text: str) -> ParsedQuery | None:
    parsed = ParsedQuery(raw=text)
    seen: dict[str, Group] = {}

    def add(group: Group | None) -> None:
        if group is None:
            return
        key = group.terms[0]
        if key in seen:
            seen[key].count += 1
            return
        seen[key] = group
        parsed.groups.append(group)

    for match in _BRACKET.finditer(text):
        alternatives = [a.strip() for a in match.group(1).split("|") if a.strip()]
        alt_terms: list[str] = []
        for alt in alternatives:
            for w in words(alt):
                alt_terms += list(identifier_terms(w)[:1])
        add(_group_for(alt_terms, "|".join(alternatives)))
        parsed.words += bool(alt_terms)
    rest = _BRACKET.sub(" ", text)
    all_words = words(text)
    lowered_words = {w.lower() for w in all_words}
    # A short query about tests wants them; an issue text that mentions pytest does not.
    parsed.wants_tests = bool(lowered_words & _TEST_WORDS) and len(all_words) <= 12
    parsed.definition_intent = bool(_DEF_INTENT.search(text))
    for raw_word in re.findall(r"[\w.:$#]+", rest):
        meaningful = False
        for w in words(raw_word):
            terms = query_word_terms(w)
            if not terms:
                continue
            is_identifier = len(terms) > 1 or any(ch.isupper() for ch in w[1:]) or "_" in w
            if is_identifier and w not in parsed.identifiers and len(w) > 2:
                parsed.identifiers.append(w)
            for term in terms:
                if term in STOPWORDS or len(term) < 2 and not term.isdigit():
                    continue
                meaningful = True
                add(_group_for([term], term))
        parsed.words += meaningful
        if ("." in raw_word or "::" in raw_word) and raw_word.strip(".:") not in \
                parsed.identifiers and len(raw_word) > 3:
            parsed.identifiers.append(raw_word.strip(".:"))
    return parsed if parsed.groups else None


def tsquery_for(terms: tuple[str, ...] | list[str]) -> str:
    """A tsquery (input syntax) matching any of ``terms``; terms are \\w runs."""
    return " | ".join(f"'{t}'" for t in terms)


def asked_roles(query: ParsedQuery, text: str) -> set[str]:
    """The non-source roles a short query is about (``conventions.asked_roles``, with
    ``BUILD`` for dependencies, versions and the build); an issue text's passing mention of
    a test or the docs does not count (``ParsedQuery.wants_tests`` says the same for
    tests)."""
    if len(query.groups) >= 12:
        return set()
    asked = conventions.asked_roles(text)
    if not query.wants_tests:
        asked -= {conventions.TEST, conventions.FIXTURE}
    return asked


_REFS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_RELEASE = re.compile(
    r"""^\W*(?:
        v?\d+(?:\.\d+)+\S*\W*$                                 # "4.4.2"
      | (?:\S+\s+){0,3}release[sd]?\b.*?\bv?\d+\.\d+            # "Ready release gin 1.9.1"
      | .*\bv?\d+\.\d+\S*\s+release\b                          # "finalize Gin v1.12.0 release"
      | (?:\S+\s+){0,2}(?:start|prepare|bump|update|set|new)\s+(?:the\s+)?version
        (?:\s+(?:to|for))?\s+v?\d+\.\d+                          # "start version 8.0"
    )""", re.IGNORECASE | re.VERBOSE)
_VERSION_WORD = re.compile(r"v?\d+(?:\.\d+)+[\w.+-]*\W*", re.IGNORECASE)
"""A version number as a word ("6.0", "v1.12.0", "6.1-dev", "8.0.1.dev0,")."""
RELEASE_WORDS = 8
"""A release query is short: a longer text that names a release is about something else."""

VERSION_DECLARED = (
    r"(^|[^a-z0-9_])(__version__|version|[a-z0-9]*_version)[\"']?[ \t]*(=|:|=>)[ \t]*[\"']?"
    r"v?[0-9]+\.[0-9]+"
    r"|#define[ \t]+[a-z0-9_]*_version[ \t]+\"v?[0-9]+\.[0-9]+"
    r"|<version>v?[0-9]+\.[0-9]+")
"""A line that declares a version (a Postgres regular expression, case-insensitive): a
name that is the version (``version``, ``__version__``, ``APP_VERSION``, not
``minVersion``) given a number (``__version__ = "8.0"``, ``const VERSION = '13.2.0'``,
``"version": "4.4.1"``, ``version=4.1.0``), a C macro, Maven's ``<version>``."""


def is_release(text: str) -> bool:
    """Whether a short query asks for a release or a version bump ("release 7.0", "start
    version 8.0.1.dev0", "4.4.2", "This is 6.0"): the files that declare the version are what it
    changes, and its words name nothing else."""
    bare = _REFS.sub(" ", text).strip()
    if len(bare.split()) > RELEASE_WORDS:
        return False
    # "This is 6.0": nothing but stop words and a version names nothing but the version
    named = [w for w in bare.split() if w.lower().strip(".,:;!?") not in STOPWORDS]
    if named and all(_VERSION_WORD.fullmatch(w) for w in named):
        return True
    return _RELEASE.match(bare) is not None
