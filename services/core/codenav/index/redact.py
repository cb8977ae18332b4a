"""Secrets inside files: found with detect-secrets' plugins, redacted before indexing.

A file is redacted once, right after it is read and before it is parsed, so nothing derived
from it (the stored body, chunks, symbols' signatures and docs, tsvectors, whole-file terms,
graph facts, embedded text) can hold the secret. Only the secret is replaced, by ``MARK``,
inside its line (a private key's body line by line): line numbers stay exact. Whole secret
files (``.env``, key files...) are still skipped by the walker and never read.

The rules are detect-secrets' own (a maintained library; none are written here). Running
its plugins on every line costs more than parsing, so a prefilter finds the lines worth
scanning in one pass: an Aho-Corasick automaton over literals that every match of a
plugin's pattern must contain (``AKIA``, ``ghp_``, ``BEGIN RSA PRIVATE KEY``, the keyword
detector's keywords), taken from the patterns with Python's regex parser; the few patterns
without such a literal are matched from their first literal on. Only those lines run the
plugins that could match them, then the library's heuristic filters (templated values,
sequential strings, ids...) and its ``pragma: allowlist secret`` comments.

Left out, with the evidence (``bench/redact_bench.py`` on the Python standard library):
the high-entropy string plugins flag hashes, test vectors and alphabets by the thousand,
and the public IP plugin finds addresses, which are not secrets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from codenav.answers import REDACTED

MARK = REDACTED
"""What a secret is replaced with (``codenav.answers.REDACTED``)."""

EXCLUDED = frozenset({"Base64 High Entropy String", "Hex High Entropy String",
                      "Public IP (ipv4)"})
"""detect-secrets plugins not used (see the module docstring)."""

MIN_FACTOR = 3
"""Shortest literal worth prefiltering on; a pattern without one is matched from its
first literal on, or as it is."""

KEY_BLOCK_MAX = 200
"""Lines of a private key's body redacted after its BEGIN line, at most."""
_KEY_BODY = re.compile(r"""^[\s"'`,+]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: .*)?(?:\\n)?"""
                       r"""[\s"'`,+;)\\]*$""")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY")


@dataclass(frozen=True)
class Found:
    line: int
    type: str


@dataclass(frozen=True)
class _Detector:
    plugin: Any
    literals: tuple[str, ...]
    """Literals (lower case) one of which any match of the plugin's patterns contains,
    ignoring case; they go into the one automaton."""
    others: tuple[Any, ...]
    """For patterns without such literals: parsed regexes (the pattern, or its tail from
    its first literal on) that match wherever the pattern could."""


EXPANSION_LIMIT = 512
"""At most this many literals stand for one part of a pattern."""


def _language(items: Any) -> set[str] | None:
    """Every string a parsed sequence can match, if they are few; else None."""
    from re import _constants as c  # type: ignore[attr-defined]

    out = {""}
    for op, arg in items:
        if op is c.LITERAL:
            part: set[str] | None = {chr(arg)}
        elif op is c.IN and all(o is c.LITERAL for o, _a in arg):
            part = {chr(a) for _o, a in arg}
        elif op is c.IN and all(o in (c.LITERAL, c.RANGE) for o, _a in arg):
            chars = set()
            for o, a in arg:
                chars |= {chr(a)} if o is c.LITERAL else {chr(x) for x in range(a[0], a[1] + 1)}
            part = chars if len(chars) <= 16 else None
        elif op in (c.ASSERT, c.ASSERT_NOT, c.AT):
            part = {""}  # zero-width: ignoring it only widens what could match
        elif op is c.SUBPATTERN:
            part = _language(arg[-1])
        elif op is c.BRANCH:
            part = set()
            for branch in arg[1]:
                sub = _language(branch)
                if sub is None:
                    return None
                part |= sub
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[1] <= 2:
            body = _language(arg[2])
            if body is None:
                return None
            part = set()
            for n in range(arg[0], arg[1] + 1):
                strings = {""}
                for _ in range(n):
                    strings = {a + b for a in strings for b in body}
                part |= strings
        else:
            return None
        if part is None or len(out) * len(part) > EXPANSION_LIMIT:
            return None
        out = {a + b for a in out for b in part}
    return out


def _head(items: Any) -> set[str]:
    """Strings one of which every match of the parsed sequence starts with: the strings of
    its longest finite stretch from the start, then the heads of the next item."""
    from re import _constants as c  # type: ignore[attr-defined]

    out = {""}
    for op, arg in items:
        part = _language([(op, arg)])
        if part is None:
            if op is c.BRANCH:
                part = set().union(*(_head(branch) for branch in arg[1]))
            elif op is c.SUBPATTERN:
                part = _head(arg[-1])
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
                part = _head(arg[2])
            else:
                part = {""}
        if len(out) * len(part) > EXPANSION_LIMIT:
            break
        out = {a + b for a in out for b in part}
        if _language([(op, arg)]) is None:
            break
    return out


def _factors(items: Any) -> set[str] | None:
    """A set of literals at least one of which every match of the parsed sequence
    contains: the best found (longest shortest member, then fewest), or None. Candidates
    are the heads of every suffix of the sequence, and the factors of its parts."""
    from re import _constants as c  # type: ignore[attr-defined]

    best: set[str] | None = None

    def offer(found: set[str] | None) -> None:
        nonlocal best
        if not found or "" in found:
            return
        found = {s for s in found if not any(o != s and o in s for o in found)}
        key = (min(len(s) for s in found), -len(found))
        if best is None or key > (min(len(s) for s in best), -len(best)):
            best = found

    items = list(items)
    for i, (op, arg) in enumerate(items):
        offer(_head(items[i:]))
        if op is c.SUBPATTERN:
            offer(_factors(arg[-1]))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
            offer(_factors(arg[2]))
        elif op is c.BRANCH:
            union: set[str] = set()
            for branch in arg[1]:
                found = _factors(branch)
                if not found:
                    union = set()
                    break
                union |= found
            offer(union or None)
    return best


def _triggers(pattern: re.Pattern[str]) -> tuple[set[str], list[Any]]:
    """What to look for so that every match of ``pattern`` is found: literals it must
    contain (lower case), or else a parsed regex: the pattern's tail from its first literal
    on (which the regex engine finds fast), or the pattern itself."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern.pattern, pattern.flags)
    found = _factors(parsed)
    if found and min(len(s) for s in found) >= MIN_FACTOR:
        return {s.lower() for s in found}, []
    items = list(parsed)
    first = next((i for i, (op, _a) in enumerate(items) if op is c.LITERAL), 0)
    return set(), [_anonymous(items[first:], parsed.state)]


def _anonymous(items: list[Any], state: Any) -> Any:
    """Parsed items as a pattern of their own: capturing groups made non-capturing (the
    tail of a pattern holds no group numbering), the pattern's flags kept (``state``: its
    ``\\d`` is a Unicode digit, as in the library's own pattern)."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    out = []
    for op, arg in items:
        if op is c.SUBPATTERN:
            arg = (None, arg[1], arg[2], _anonymous(list(arg[3]), state))
        elif op is c.BRANCH:
            arg = (None, [_anonymous(list(b), state) for b in arg[1]])
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            arg = (arg[0], arg[1], _anonymous(list(arg[2]), state))
        elif op in (c.ASSERT, c.ASSERT_NOT):
            arg = (arg[0], _anonymous(list(arg[1]), state))
        elif op in (c.GROUPREF, c.GROUPREF_EXISTS):
            raise ValueError("a back reference cannot stand alone")
        out.append((op, arg))
    return _parser.SubPattern(state, out)


@lru_cache(maxsize=1)
def detectors() -> tuple[_Detector, ...]:
    """Every detect-secrets plugin in use, with its prefilter."""
    from re import _parser  # type: ignore[attr-defined]

    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.base import RegexBasedDetector

    out = []
    plugins: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    for secret_type, cls in sorted(plugins.items()):
        if secret_type in EXCLUDED:
            continue
        plugin = cls()
        if isinstance(plugin, RegexBasedDetector):
            patterns = list(plugin.denylist)
        elif isinstance(plugin, keyword.KeywordDetector):
            patterns = [re.compile("|".join(keyword.DENYLIST), re.IGNORECASE)]
        else:  # a kind of plugin this module does not know: every line is a candidate
            out.append(_Detector(plugin, (), (_any_line(),)))
            continue
        literals: set[str] = set()
        others: list[Any] = []
        for pattern in patterns:
            try:
                found, regexes = _triggers(pattern)
            except Exception:  # noqa: BLE001 - a pattern this cannot take apart: as it is
                found, regexes = set(), [_parser.parse(pattern.pattern, pattern.flags)]
            literals |= found
            others += regexes
        out.append(_Detector(plugin, tuple(sorted(literals)), tuple(others)))
    return tuple(out)


def _any_line() -> Any:
    from re import _parser  # type: ignore[attr-defined]

    return _parser.parse("^", re.MULTILINE)


@dataclass(frozen=True)
class _Prefilter:
    automaton: Any
    """Aho-Corasick over every detector's literals, run on the lower-cased UTF-8 text:
    it finds a superset of the exact matches, in one pass."""
    owners: tuple[tuple[int, ...], ...]
    """For each literal of the automaton, the detectors it comes from."""
    others: tuple[tuple[re.Pattern[str], int], ...]
    """The triggers that are not literals, each with its detector (one regex each: each
    starts with a literal the engine searches fast, which a joined regex would not)."""


@lru_cache(maxsize=1)
def _prefilter() -> _Prefilter:
    from re import _compiler  # type: ignore[attr-defined]

    import ahocorasick_rs

    owners: dict[bytes, set[int]] = {}
    others = []
    for i, d in enumerate(detectors()):
        for literal in d.literals:
            owners.setdefault(literal.encode("utf-8"), set()).add(i)
        others += [(_compiler.compile(tail, re.MULTILINE), i) for tail in d.others]
    literals = sorted(owners)
    automaton = ahocorasick_rs.BytesAhoCorasick(
        literals, implementation=ahocorasick_rs.Implementation.DFA) if literals else None
    return _Prefilter(automaton, tuple(tuple(sorted(owners[lit])) for lit in literals),
                      tuple(others))


def preload() -> None:
    """Build the detectors and their prefilter now (detect-secrets and its filters are
    imported on the way): a forking worker calls this once, so every job's process inherits
    them (building them took 0.2-0.3 s in each job that redacted a file)."""
    _prefilter()


def candidate_lines(text: str) -> dict[int, set[int]]:
    """The lines some detector's prefilter matches (by the offset where each starts in
    ``text``), with those detectors."""
    pre = _prefilter()
    hits: dict[int, set[int]] = {}
    if pre.automaton is not None:
        data = text.encode("utf-8", "surrogatepass").lower()
        matches = pre.automaton.find_matches_as_indexes(data, overlapping=True)
        ascii_only = len(data) == len(text)
        at_byte = at_char = 0
        for literal, start, _end in sorted(matches, key=lambda m: m[1]):
            line = data.rfind(b"\n", 0, start) + 1
            if not ascii_only:  # byte offsets are not offsets: count the characters
                at_char += len(data[at_byte:line].decode("utf-8", "surrogatepass"))
                at_byte = line
                line = at_char
            hits.setdefault(line, set()).update(pre.owners[literal])
    for regex, owner in pre.others:
        for m in regex.finditer(text):
            hits.setdefault(text.rfind("\n", 0, m.start()) + 1, set()).add(owner)
    return hits


def _line_starts(text: str | bytes) -> list[int]:
    newline: Any = b"\n" if isinstance(text, bytes) else "\n"
    starts = [0]
    at = text.find(newline)
    while at >= 0:
        starts.append(at + 1)
        at = text.find(newline, at + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset) - 1


def _filtered(secret: str, line: str, plugin: Any) -> bool:
    """detect-secrets' heuristic filters: values that are not secrets."""
    from detect_secrets.filters import heuristic

    return (heuristic.is_sequential_string(secret) or heuristic.is_potential_uuid(secret)
            or heuristic.is_likely_id_string(secret, line, plugin)
            or heuristic.is_templated_secret(secret)
            or heuristic.is_prefixed_with_dollar_sign(secret)
            or heuristic.is_not_alphanumeric_string(secret))


def _allowlisted(path: str, line: str, previous: str) -> bool:
    """A ``pragma: allowlist secret`` comment on the line (or ``nextline`` above it)."""
    from detect_secrets.filters.allowlist import _get_allowlist_regexes_for_file

    for payload, regexes in zip([line, previous], _get_allowlist_regexes_for_file(path),
                                strict=False):
        if any(regex.search(payload) for regex in regexes):
            return True
    return False


SECRET_GROUP_MIN = 8
"""A pattern's group shorter than this is a prefix it captured (``ghp`` of a GitHub token),
not the secret: the whole match is redacted then."""


def _redacted_text(plugin: Any, line: str, values: set[str]) -> list[str]:
    """What to cut out of ``line`` for the secrets a plugin reported (``values``, as the
    library reports them: a pattern's groups, or its whole match). For a regex plugin,
    each reporting match's secret group, or the whole match when its group is only a
    prefix; for other plugins (keyword assignments), the values themselves."""
    if not values:
        return []
    patterns = getattr(plugin, "denylist", None)
    if patterns is None:
        return [v for v in values if v in line]
    out = []
    for pattern in patterns:
        for m in pattern.finditer(line):
            groups = [g for g in m.groups() if g]
            if not (set(groups) | {m.group(0)}) & values:
                continue
            secret = max(groups, key=len) if groups else ""
            out.append(secret if len(secret) >= SECRET_GROUP_MIN else m.group(0))
    return out or [v for v in values if v in line]


def redact(text: str, path: str) -> tuple[str, list[Found]]:
    """``text`` with every secret the detectors find replaced by ``MARK`` (lines kept),
    and where each one was. (detect-secrets' default settings never verify a secret
    over the network.)"""
    candidates = candidate_lines(text)
    if not candidates:
        return text, []
    every = detectors()
    changed: dict[int, tuple[int, str, list[str]]] = {}  # line start -> (end, line, kinds)
    for start in sorted(candidates):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        secrets: dict[str, str] = {}
        for index in sorted(candidates[start]):
            plugin = every[index].plugin
            try:
                hits = plugin.analyze_line(filename=path, line=line, line_number=0)
            except Exception:  # noqa: BLE001 - a plugin's bug must not stop indexing
                continue
            values = {hit.secret_value for hit in hits if hit.secret_value
                      and not _filtered(hit.secret_value, line, plugin)}
            for cut in _redacted_text(plugin, line, values):
                secrets.setdefault(cut, plugin.secret_type)
        if not secrets:
            continue
        previous = text[text.rfind("\n", 0, max(start - 1, 0)) + 1:max(start - 1, 0)]
        if _allowlisted(path, line, previous):
            continue
        for value in sorted(secrets, key=len, reverse=True):
            line = line.replace(value, MARK)
        changed[start] = (end, line, sorted(set(secrets.values())))
    if not changed:
        return text, []
    lines = text.split("\n")
    starts = _line_starts(text)
    found: list[Found] = []
    block_until = -1
    for start, (_end, line, kinds) in sorted(changed.items()):
        number = _line_of(starts, start)
        if number <= block_until:
            continue
        lines[number] = line
        found += [Found(number + 1, kind) for kind in kinds]
        if "Private Key" in kinds:
            block_until = _redact_key_block(lines, number)
    return "\n".join(lines), found


def _redact_key_block(lines: list[str], begin: int) -> int:
    """A private key's body after its BEGIN line (base64 and header lines, up to its END
    line), redacted line by line; returns the last line redacted."""
    last = begin
    for j in range(begin + 1, min(len(lines), begin + 1 + KEY_BLOCK_MAX)):
        if _KEY_END.search(lines[j]) or not lines[j].strip() or not _KEY_BODY.match(lines[j]):
            return last
        lines[j] = MARK
        last = j
    return last


def describe(found: list[Found]) -> list[dict[str, Any]]:
    """Stored with the content: each redaction's line and kind of secret."""
    return [{"line": f.line, "type": f.type} for f in found]
