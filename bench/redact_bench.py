"""Secret redaction: its cost next to a bare parse, and what each detect-secrets plugin finds.

Not a test: it prints numbers measured in this run. On a corpus (default: the Python
standard library of this interpreter, ``--corpus PATH`` for another) it reads every file
the index would read, then in alternating rounds (``--rounds``, medians reported) times

- ``bare parse``: the sequential tree-sitter parse of the structured files, as
  ``index_bench.py`` times it (the baseline issue 18's indexer target is measured against);
- ``redact``: ``codenav.index.redact.redact`` on every file the index would store (what
  indexing adds), and its prefilter alone.

With ``--evidence`` it also runs every plugin detect-secrets ships on every line (slow:
minutes) and prints, per plugin, how many lines it flags and a few of them: the evidence
for the plugins ``codenav.index.redact.EXCLUDED`` leaves out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

from codenav.index import redact
from codenav.index.blob import decode, looks_binary, looks_minified
from codenav.index.walk import walk
from codenav.lang import STRUCTURED, language_for
from codenav.parse.chunker import parser_for


def load(root: Path, max_bytes: int) -> tuple[list[tuple[str, str, bytes]], int]:
    """(path, language, bytes) of every file the index would store, and the total size."""
    out = []
    for entry in walk(root, max_bytes).files:
        data = (root / entry.path).read_bytes()
        if len(data) > max_bytes or looks_binary(data) or looks_minified(entry.path, data):
            continue
        out.append((entry.path, language_for(entry.path, data[:128]), data))
    return out, sum(len(d) for _p, _l, d in out)


def time_parse(files: list[tuple[str, str, bytes]]) -> float:
    structured = [(lang, data) for _p, lang, data in files if lang in STRUCTURED]
    for lang in {lang for lang, _d in structured}:
        parser_for(lang)
    started = time.perf_counter()
    for lang, data in structured:
        parser_for(lang).parse(data)
    return time.perf_counter() - started


def time_redact(texts: list[tuple[str, str]]) -> tuple[float, float, Counter[str], int]:
    started = time.perf_counter()
    candidates = sum(len(redact.candidate_lines(text)) for _p, text in texts)
    prefilter = time.perf_counter() - started
    kinds: Counter[str] = Counter()
    started = time.perf_counter()
    for path, text in texts:
        kinds.update(f.type for f in redact.redact(text, path)[1])
    return time.perf_counter() - started, prefilter, kinds, candidates


def evidence(texts: list[tuple[str, str]]) -> None:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = {name: cls() for name, cls in get_mapping_from_secret_type_to_class().items()}
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for path, text in texts:
        for number, line in enumerate(text.split("\n"), start=1):
            for name, plugin in plugins.items():
                if plugin.analyze_line(filename=path, line=line, line_number=number):
                    counts[name] += 1
                    if len(examples.setdefault(name, [])) < 3:
                        examples[name].append(f"{path}:{number}: {line.strip()[:90]}")
    print("\nevery plugin on every line (lines flagged; * = left out by codenav.index.redact):")
    for name in sorted(plugins, key=lambda n: -counts[n]):
        mark = "*" if name in redact.EXCLUDED else " "
        print(f" {mark} {counts[name]:7d}  {name}")
        for example in examples.get(name, []):
            print(f"              {example}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--evidence", action="store_true",
                        help="also run every plugin on every line (minutes)")
    args = parser.parse_args(argv)
    files, total = load(args.corpus, args.max_bytes)
    texts = [(path, decode(data).text) for path, _lang, data in files]
    print(f"corpus {args.corpus}: {len(files)} files, {total / 1e6:.1f} MB "
          f"({sum(1 for _p, lang, _d in files if lang in STRUCTURED)} parsed by tree-sitter)")
    redact.detectors()  # build the prefilter outside the timing
    redact.candidate_lines("")
    parse_s, redact_s, prefilter_s = [], [], []
    kinds: Counter[str] = Counter()
    candidates = 0
    for _ in range(args.rounds):  # alternating, so both see the same machine load
        parse_s.append(time_parse(files))
        seconds, pre, kinds, candidates = time_redact(texts)
        redact_s.append(seconds)
        prefilter_s.append(pre)
    ratios = [r / p for r, p in zip(redact_s, parse_s, strict=True)]
    print(f"bare parse   median {statistics.median(parse_s):.3f} s  "
          f"({', '.join(f'{s:.2f}' for s in parse_s)})")
    print(f"redact       median {statistics.median(redact_s):.3f} s  "
          f"({', '.join(f'{s:.2f}' for s in redact_s)}); prefilter alone median "
          f"{statistics.median(prefilter_s):.3f} s")
    print(f"redact / bare parse, paired per round: median {statistics.median(ratios):.3f} "
          f"({', '.join(f'{r:.3f}' for r in ratios)})")
    print(f"candidate lines {candidates}; redactions {sum(kinds.values())}: "
          + (", ".join(f"{k} {v}" for k, v in kinds.most_common()) or "none"))
    if args.evidence:
        evidence(texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
