"""File retrieval on a repository's own history: commit subject -> the files it modified.

The development suite: 17 public repositories in 13 languages (``LANGUAGE``). A commit
qualifies when it has one parent, touches 1 to ``--max-files`` files, modifies at least one
existing *source* file (``codenav.lang.conventions``: not a test, fixture, example, doc,
benchmark, generated or vendored file) in a language codenav parses (the gold), and its
subject does not name a gold file (by file name, stem or path without extension). The
newest ``--commits`` qualifying commits on the first-parent line of ``--ref`` are taken,
oldest first; each is answered from an index of its parent (the tree before the change),
indexed incrementally commit by commit. The query
is the subject with a trailing pull-request number (``(#1234)``) removed. Only files of the
languages codenav parses are indexed. Same rankers and file metrics as eval_swebench.py,
plus hit@k per language; writes bench/out/eval_history.md and .json, and the file ranker's
features per repository to bench/out/features/ (``bench/train_ranker.py``).

    .venv/bin/python bench/eval_history.py                           # the suite
    .venv/bin/python bench/eval_history.py --repos gin-gonic/gin --commits 30   # quicker
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import evalkit
from codenav.lang import conventions, is_structured, language_for
from evalkit import Checkout, Query, RepoTiming, Runner

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
LANGUAGE = {
    "gin-gonic/gin": "go", "colinhacks/zod": "typescript", "expressjs/express": "javascript",
    "square/okhttp": "kotlin", "apache/commons-lang": "java", "tokio-rs/tokio": "rust",
    "pallets/click": "python", "psf/black": "python", "rack/rack": "ruby",
    "laravel/framework": "php", "JamesNK/Newtonsoft.Json": "csharp", "redis/redis": "c",
    "fmtlib/fmt": "cpp", "square/moshi": "kotlin", "square/retrofit": "java",
    "Alamofire/Alamofire": "swift", "apple/swift-argument-parser": "swift",
    "libuv/libuv": "c", "gabime/spdlog": "cpp", "AutoMapper/AutoMapper": "csharp",
    "labstack/echo": "go", "nodejs/undici": "javascript", "composer/composer": "php",
    "jekyll/jekyll": "ruby", "BurntSushi/ripgrep": "rust", "vuejs/core": "typescript",
}
"""The development suite: 26 repositories, 13 languages, at least two per language (Apache
Kafka, the speed corpus, is left out on purpose; the two Swift repositories joined when
Swift got its structure, after the ranker's weights were last tuned; the last nine on
2026-12-07, a second repository for each language that had one, first scored by models
that had never seen them). A repository not listed is reported under its main language
(the language most of its parsed files are in: spdlog's headers would read as C)."""
DEFAULT_REPOS = list(LANGUAGE)
REPEATED_SUBJECT = 10
"""A repository more of whose selected commits than this begin with the same three words is
flagged in the report: clap's "chore: Release" (63 of 80), hono's "Merge commit from fork"
(27) and Polly's "Fix CA1062 warnings" (21, and 4 in the singular) said little about finding
files, and the suite took another repository of their language instead (bench/README.md,
2026-12-07). apache/commons-lang, in the suite from the start, has 20 commits "Javadoc"."""
PR_SUFFIX = re.compile(r"\s*\(#\d+\)\s*$")
"""A trailing pull-request number, taken off a subject to make the query."""


@dataclass
class Commit:
    sha: str
    parent: str
    subject: str
    touched: int
    gold: list[str]


def code_extensions(mirror: Path, ref: str) -> dict[str, int]:
    """File extensions in ``ref``'s tree that codenav parses into chunks and symbols, with
    how many files have each."""
    names = evalkit.git(mirror, "ls-tree", "-r", "--name-only", ref).splitlines()
    counts: dict[str, int] = {}
    for name in names:
        suffix = PurePosixPath(name).suffix.lower()
        if suffix and is_structured(language_for("x" + suffix)):
            counts[suffix] = counts.get(suffix, 0) + 1
    return counts


def names_a_gold_file(subject: str, gold: list[str]) -> bool:
    """True if the subject mentions a gold file by name, stem or extension-less path."""
    lowered = subject.lower()
    for path in gold:
        pure = PurePosixPath(path)
        for form in {pure.name, pure.stem, str(pure.with_suffix(""))}:
            if re.search(rf"(?<!\w){re.escape(form.lower())}(?!\w)", lowered):
                return True
    return False


def select(mirror: Path, ref: str, wanted: int, max_files: int,
           extensions: set[str]) -> tuple[list[Commit], dict[str, int]]:
    """The newest ``wanted`` qualifying commits on the first-parent line, oldest first, and
    how many commits each rule dropped on the way."""
    log_text = evalkit.git(mirror, "log", "--first-parent", "--no-renames", "--name-status",
                           "--format=%x1e%H%x1f%P%x1f%s", ref)
    dropped = {"merge": 0, "no_or_too_many_files": 0, "no_eligible_file": 0,
               "subject_names_file": 0}
    chosen: list[Commit] = []
    for entry in log_text.split("\x1e")[1:]:
        head, _, body = entry.partition("\n")
        sha, parents, subject = head.split("\x1f", 2)
        changes = [line.split("\t") for line in body.splitlines() if "\t" in line]
        if len(parents.split()) != 1:
            dropped["merge"] += 1
            continue
        if not changes or len(changes) > max_files:
            dropped["no_or_too_many_files"] += 1
            continue
        gold = [parts[-1] for parts in changes if parts[0] == "M" and
                PurePosixPath(parts[-1]).suffix.lower() in extensions and
                conventions.role(parts[-1]) == conventions.SOURCE]
        if not gold:
            dropped["no_eligible_file"] += 1
            continue
        if names_a_gold_file(subject, gold):
            dropped["subject_names_file"] += 1
            continue
        chosen.append(Commit(sha, parents.strip(), subject, len(changes), gold))
        if len(chosen) == wanted:
            break
    return chosen[::-1], dropped


def language_of(record: dict[str, Any]) -> str:
    """A history record's language: the one ``LANGUAGE`` gives its repository, over a label
    a run stored before the list named it (gabime/spdlog's early runs said C)."""
    return LANGUAGE.get(record["repo"], record.get("language", "?"))


def main_language(extensions: dict[str, int]) -> str:
    """The language most of the parsed files are in (ties: by name)."""
    files: dict[str, int] = {}
    for suffix, count in extensions.items():
        language = language_for("x" + suffix)
        files[language] = files.get(language, 0) + count
    return min(files, key=lambda lang: (-files[lang], lang)) if files else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repos", nargs="*", help="owner/name (default: the suite, LANGUAGE)")
    parser.add_argument("--repos", dest="repo_list", nargs="*", default=[],
                        help="the same, as an option")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                        help="directory of git mirrors, <owner>+<name>/repo")
    parser.add_argument("--workdir", type=Path, default=Path("/work/eval-work"),
                        help="working copies and stores (never inside this repository)")
    parser.add_argument("--ref", default="HEAD", help="newest commit considered")
    parser.add_argument("--commits", type=int, default=150, help="qualifying commits per repo")
    parser.add_argument("--max-files", type=int, default=10)
    parser.add_argument("--rankers", nargs="*", help="subset of: " +
                        ", ".join(r.name for r in evalkit.RANKERS))
    parser.add_argument("--processes", type=int, default=0, help="parser processes")
    parser.add_argument("--exclude-tests", action="store_true",
                        help="leave test files out of the index (gold never contains them); "
                        "halves the embedding work of the semantic modes")
    parser.add_argument("--reuse-index", action="store_true",
                        help="keep each repository's store from a previous run")
    parser.add_argument("--out", type=Path, default=OUT / "eval_history")
    parser.add_argument("--features", type=Path, default=OUT / "features",
                        help="directory for the ranker's features per repository "
                        "(bench/train_ranker.py reads them)")
    parser.add_argument("--merge", type=Path,
                        help="a previous run's .json: its repositories' results are kept "
                        "and those repositories are not run again (a run in parts)")
    args = parser.parse_args()
    args.repos = args.repos + args.repo_list or DEFAULT_REPOS
    workdir = args.workdir.resolve()
    if workdir == ROOT or ROOT in workdir.parents:
        raise SystemExit(f"--workdir must be outside {ROOT}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S")
    evalkit.log.setLevel(logging.INFO)

    rankers, skipped = evalkit.select_rankers(args.rankers)
    runner = Runner(rankers, skipped)
    records: list[dict[str, Any]] = []
    timing: dict[str, RepoTiming] = {}
    selection: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    meta = {"repos": args.repos, "ref": args.ref, "commits_per_repo": args.commits,
            "max_files": args.max_files, "exclude_tests": args.exclude_tests,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            **evalkit.code_version()}
    if args.merge:
        previous = json.loads(args.merge.read_text(encoding="utf-8"))
        done = set(previous["timing"])
        records += [r for r in previous["instances"] if r["repo"] in done]
        for r in records:
            r["language"] = language_of(r)
        timing.update({repo: RepoTiming(**t) for repo, t in previous["timing"].items()})
        selection.update(previous["meta"].get("selection", {}))
        meta["merged"] = {"from": str(args.merge), "repos": sorted(done),
                          "codenav_commit": previous["meta"]["codenav_commit"]}
        meta["repos"] = sorted(done | set(args.repos))
    for repo in args.repos:
        if repo in timing:
            continue
        slug = repo.replace("/", "+")
        mirror = args.mirrors / slug / "repo"
        if not mirror.is_dir():
            raise SystemExit(f"no mirror of {repo} at {mirror}")
        extensions = code_extensions(mirror, args.ref)
        commits, dropped = select(mirror, args.ref, args.commits, args.max_files,
                                  set(extensions))
        if not commits:
            raise SystemExit(f"{repo}: no qualifying commit")
        span = [evalkit.commit_time(mirror, c.sha) for c in (commits[0], commits[-1])]
        selection[repo] = {"extensions": sorted(extensions), "dropped": dropped,
                           "selected": len(commits),
                           "from": time.strftime("%Y-%m-%d", time.gmtime(span[0])),
                           "to": time.strftime("%Y-%m-%d", time.gmtime(span[1]))}
        evalkit.log.info("%s: %d commits (%s), indexing %s", repo, len(commits), dropped,
                         " ".join(sorted(extensions)))
        checkout = Checkout.prepare(mirror, workdir / "repos" / slug, set(extensions),
                                    exclude_tests=args.exclude_tests,
                                    test_excludes=evalkit.ALL_TEST_EXCLUDES)
        steps = [(c.parent, [Query(c.sha, PR_SUFFIX.sub("", c.subject), {"files": c.gold},
                                   {"subject": c.subject, "touched": c.touched})])
                 for c in commits]
        got, timing[repo] = evalkit.evaluate_repository(
            repo, checkout, steps, workdir / "stores" / f"history-{slug}", runner,
            fresh=not args.reuse_index, processes=args.processes,
            features_path=args.features / f"history-{slug}.jsonl.gz" if args.features else None,
            info={"language": LANGUAGE.get(repo, main_language(extensions))})
        records += got
        write(args.out, meta, selection, records, runner, timing, time.perf_counter() - started)
    print(write(args.out, meta, selection, records, runner, timing,
                time.perf_counter() - started))
    return 0


def repeated_subjects(records: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(repository, commits, words) for each repository more than ``REPEATED_SUBJECT`` of
    whose commits begin with the same three words."""
    starts: dict[str, Counter[str]] = {}
    for r in records:
        starts.setdefault(r["repo"], Counter())[" ".join(r["subject"].split()[:3])] += 1
    out = []
    for repo, counter in starts.items():
        words, count = counter.most_common(1)[0]
        if count > REPEATED_SUBJECT:
            out.append((repo, count, words))
    return out


def write(out: Path, meta: dict[str, Any], selection: dict[str, dict[str, Any]],
          records: list[dict[str, Any]], runner: Runner, timing: dict[str, RepoTiming],
          seconds: float) -> str:
    notes = [f"{len(records)} commits from {len(timing)} repositories; codenav "
             f"{meta['codenav_commit']}, chunker v{meta['chunker_version']}; run took "
             f"{seconds / 60:.1f} min.", ""]
    for repo, sel in selection.items():
        notes.append(f"- {repo}: {sel['selected']} commits {sel['from']} .. {sel['to']}, "
                     f"indexed {' '.join(sel['extensions'])}; dropped on the way: " +
                     ", ".join(f"{k} {v}" for k, v in sel["dropped"].items()))
    for repo, count, words in repeated_subjects(records):
        notes.append(f"- {repo}: {count} of its commits begin \"{words}\" (more than "
                     f"{REPEATED_SUBJECT}): a weak repository for this suite")
    if meta.get("merged"):
        notes.append(f"Run in parts: {', '.join(meta['merged']['repos'])} come from "
                     f"{meta['merged']['from']} (codenav {meta['merged']['codenav_commit']}).")
    text = evalkit.report("Commit-history retrieval (query: subject, gold: modified source "
                          "files)", records, runner, timing, notes, by_repo=True,
                          by_language=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    body = evalkit.results_json({**meta, "selection": selection, "seconds": round(seconds, 1)},
                                records, runner, timing)
    out.with_suffix(".json").write_text(json.dumps(body, indent=1), encoding="utf-8")
    return text


if __name__ == "__main__":
    sys.exit(main())
