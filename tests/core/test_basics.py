"""Small pure pieces: settings, git blob ids, decoding, tokens, ignore rules, queries."""

from __future__ import annotations

import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

from codenav.config import Settings
from codenav.errors import ConfigError, InvalidRequest
from codenav.index.blob import decode, git_blob_sha, looks_binary, looks_minified
from codenav.index.ignore import IgnoreRules
from codenav.search.query import parse_query
from codenav.tokens import (
    chunk_tsvector,
    file_term_counts,
    identifier_terms,
    singular_variants,
    term_counts,
    words,
)


def test_settings_read_the_environment_and_fail_loudly_on_bad_values(tmp_path: Path) -> None:
    s = Settings.load(env={"CODENAV_API_PORT": "9000", "CODENAV_ALLOWED_ORIGINS": "a, b"},
                      dotenv=tmp_path / "none")
    assert s.api_port == 9000 and s.allowed_origins == ("a", "b")
    for bad in ({"CODENAV_API_PORT": "many"}, {"CODENAV_API_PORT": "0"},
                {"CODENAV_DATABASE_URL": "not a url"}, {"CODENAV_WATCH_MODE": "psychic"}):
        with pytest.raises(ConfigError):
            Settings.load(env=bad, dotenv=tmp_path / "none")


def test_settings_fall_back_to_a_dotenv_file(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# comment\nexport CODENAV_API_PORT='9100'\nCODENAV_REPO=web\n")
    s = Settings.load(env={"CODENAV_REPO": "api"}, dotenv=dotenv)
    assert s.api_port == 9100 and s.repo == "api"


def test_blob_ids_match_git(tmp_path: Path) -> None:
    for data in (b"", b"hello\n", bytes(range(256)) * 10):
        path = tmp_path / "f"
        path.write_bytes(data)
        expected = subprocess.run(["git", "hash-object", str(path)], capture_output=True,
                                  text=True, check=True).stdout.strip()
        assert git_blob_sha(data) == expected


def test_decoding_never_lets_nul_or_invalid_utf8_through() -> None:
    decoded = decode(b"ok \xff\xfe bad \x00 nul\r\nwindows")
    assert "\x00" not in decoded.text and decoded.replaced
    assert decoded.text == "ok \ufffd\ufffd bad \ufffd nul\nwindows"
    assert decode("caf\u00e9".encode("utf-16")).text == "caf\u00e9"
    assert decode(b"\xef\xbb\xbfbom").text == "bom"


def test_binary_and_minified_detection() -> None:
    assert looks_binary(b"abc\x00def")
    assert not looks_binary(b"x" * 9000 + b"\x00")
    assert not looks_binary("text".encode("utf-16"))
    assert looks_minified("a/app.min.js", b"var a=1")
    assert looks_minified("bundle.js", b"var a=1;" * 1000)
    one_long_line = b"x = 1\n" * 50 + b"s = '" + b"y" * 1200 + b"'\n" + b"z = 2\n" * 50
    assert not looks_minified("mod.py", one_long_line)


def test_identifiers_split_on_case_underscores_and_digits() -> None:
    assert identifier_terms("parseHTTPHeader2") == ("parsehttpheader2", "parse", "http",
                                                    "header", "2")
    assert identifier_terms("parse_http_header") == ("parse_http_header", "parse", "http",
                                                     "header")
    assert identifier_terms("__init__") == ("init",)
    assert identifier_terms("x" * 100) == ()
    tsv, n = chunk_tsvector("def parseHttpHeader(line): return line", "parseHttpHeader",
                            "Parser")
    assert "'parsehttpheader':1" in tsv and "'header':1" in tsv and "'parser':10B" in tsv
    assert n == 5


def test_words_are_runs_of_word_characters_but_a_lone_underscore() -> None:
    """``words`` (and the counts built on it) cut text as ``[^\\W_]\\w*|_\\w+`` does: the
    definition it implements faster. Tricky strings, then every file of the standard
    library."""
    definition = re.compile(r"[^\W_]\w*|_\w+")
    tricky = ["_ = f(_)", "a_ _b __ ___x _1 1_ _", "naïve_Über ñ _é", "x\n_\n_y", "",
              "__init__(self, _, *_args)", "ß_ 変数_名 _٣",
              # ASCII text is split another way (``find_words``): every ASCII character,
              # the separators ``str.split`` cuts at among them
              "".join(map(chr, range(128))) + " a_b", "a\x1cb\x1d_c\x1e\x1fd\x0be\x0cf\x7fg\x00h"]
    for text in tricky:
        assert words(text) == definition.findall(text), text
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))[:400]:
        text = path.read_text(errors="replace")
        assert words(text) == definition.findall(text), path
    tsv, n = chunk_tsvector("_ = read(_, _x)", None, None)
    assert n == 2 and "'read':1" in tsv and "'_x'" not in tsv and "'x':1" in tsv
    assert file_term_counts("_ = read(_, _x) _ _") == {"read": 1}
    assert term_counts("_ x_y _") == {"x_y": 1, "x": 1, "y": 1}


def test_plurals_fold_both_ways() -> None:
    assert singular_variants("workspaces") == ("workspaces", "workspace")
    assert singular_variants("policies") == ("policies", "policy")
    assert singular_variants("header") == ("header", "headers")


def test_queries_parse_into_groups_with_alternatives() -> None:
    q = parse_query("[auth|login] payment parseHttpHeader where is Foo defined")
    labels = [g.label for g in q.groups]
    assert labels[0] == "auth|login"
    assert set(q.groups[0].terms) >= {"auth", "login"}
    assert "payment" in labels and "parsehttpheader" in labels and "http" in labels
    assert "where" not in labels
    assert "parseHttpHeader" in q.identifiers
    assert q.definition_intent
    assert parse_query("tests for the parser").wants_tests
    with pytest.raises(InvalidRequest):
        parse_query("   ")
    with pytest.raises(InvalidRequest):
        parse_query("the of and")


def test_a_query_of_one_identifier_too_long_to_be_a_term_searches_by_its_parts() -> None:
    name = ("shouldThrowUnsupportedVersionExceptionOnHandleTxnOffsetCommitRequestWhen"
            "InterBrokerProtocolNotSupported")  # 103 characters; the index keeps 60 at most
    q = parse_query(name)  # it had no term at all: a 400, "query has no searchable words"
    labels = [g.label for g in q.groups]
    assert {"unsupported", "txn", "offset", "broker", "protocol"} <= set(labels)
    assert name.lower() not in labels
    assert q.identifiers == [name]  # still looked up whole among declared names
    with pytest.raises(InvalidRequest):  # a long run of stop words still has none
        parse_query("_".join(["the"] * 30))


def test_ignore_rules_combine_defaults_and_nested_ignore_files(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n/build-out/\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".codenavignore").write_text("secret_stuff.py\n!keep.log\n")
    rules = IgnoreRules.for_root(tmp_path)
    assert rules.check_path("node_modules", True) == "ignored_dir"
    assert rules.check_path("a/node_modules/x.js", False) == "ignored_dir"
    assert rules.check_path("x.log", False) == "gitignored"
    assert rules.check_path("sub/keep.log", False) is None
    assert rules.check_path("sub/secret_stuff.py", False) == "gitignored"
    assert rules.check_path("build-out/a.py", False) == "gitignored"
    assert rules.check_path(".env.production", False) == "secret"
    assert rules.check_path(".env.example", False) is None
    for name in (".env", ".envrc", ".env_local", "config/.env.dev", "prod.env"):
        assert rules.check_path(name, False) == "secret", name
    assert rules.check_path("keys/server.pem", False) == "secret"
    assert rules.check_path("yarn.lock", False) == "lock_file"
    assert rules.check_path("img/logo.png", False) == "binary"
    assert rules.check_path("src/main.py", False) is None


def test_ignore_negations_follow_git(tmp_path: Path) -> None:
    """``*`` / ``!*/`` / ``!*.py`` keeps every .py file at any depth, as git does."""
    from codenav.index.walk import walk

    (tmp_path / ".codenavignore").write_text("*\n!*/\n!*.py\n")
    for rel in ("a.py", "pkg/b.py", "pkg/sub/c.py", "pkg/readme.md", "notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert sorted(f.path for f in walk(tmp_path, 1 << 20).files) == [
        "a.py", "pkg/b.py", "pkg/sub/c.py"]
    (tmp_path / ".codenavignore").write_text("gen-out/\n")
    rules = IgnoreRules.for_root(tmp_path)
    assert rules.check_path("gen-out", True) == "gitignored"
    assert rules.check_path("x/gen-out/a.py", False) == "gitignored"
    assert rules.check_path("x/gen-out.py", False) is None


def test_the_walk_keeps_what_git_keeps_under_many_kinds_of_ignore_pattern(tmp_path: Path,
                                                                         ) -> None:
    """Anchored, directory-only, ``**``, character classes, escapes and negations in nested
    ignore files: the walk indexes exactly the files ``git ls-files`` lists (less the
    built-in skips), so the one-regex shortcut for paths no pattern matches changes nothing."""
    from codenav.index.defaults import path_reason
    from codenav.index.walk import walk

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(
        "*.log\n/top-only.py\ngen/\n**/deep/**/x.py\ndata[0-9].py\n!data7.py\n"
        "\\#hash.py\nspace\\ .py\ndoc/*.txt\n!doc/keep.txt\nnested/**\n!nested/**/\n"
        "!nested/**/*.go\n?.js\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".gitignore").write_text("*.py\n!main.py\n/local/\n")
    names = ["top-only.py", "a/top-only.py", "gen/a.py", "src/gen/b.py", "src/generated.py",
             "deep/x.py", "a/deep/b/x.py", "a/deep/b/y.py", "data1.py", "data7.py",
             "data10.py", "#hash.py", "space .py", "doc/a.txt", "doc/keep.txt",
             "doc/sub/b.txt", "nested/a.py", "nested/b/c.go", "nested/b/d.py", "a.js",
             "ab.js", "pkg/x.py", "pkg/main.py", "pkg/local/y.go", "pkg/sub/local/z.go",
             "pkg/sub/q.py", "run.log", "src/ok.py", "src/Ok.java"]
    for rel in names:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                            cwd=tmp_path, check=True, capture_output=True).stdout.decode()
    expected = sorted(p for p in listed.split("\0") if p and not path_reason(p)
                      and not p.endswith(".gitignore"))
    walked = sorted(f.path for f in walk(tmp_path, 1 << 20).files
                    if not f.path.endswith(".gitignore"))
    assert walked == expected
    assert "src/ok.py" in walked and "data7.py" in walked and "data1.py" not in walked


def test_freshness_flags_stale_paths_anywhere_in_an_answer() -> None:
    from codenav import freshness

    answer = {
        "results": [{"path": "a.py", "content": "path a.py"}, {"path": "b.py"}],
        "verified": [{"path": "c.py", "line": 3}],
        "chains": [[{"path": "a.py", "symbol": "f"}, {"path": "d.py", "symbol": "g"}]],
        "files": ["d.py", "e.py"],
    }
    paths = freshness.answer_paths(answer)
    assert set(paths) == {"a.py", "b.py", "c.py", "d.py", "e.py"}
    stale = {"a.py": "changed", "c.py": "changed", "e.py": "deleted"}
    freshness.annotate(answer, stale, 3, 0, None)
    assert [r.get("stale") for r in answer["results"]] == [True, None]
    assert answer["verified"][0]["stale"] is True
    assert answer["chains"][0][0]["stale"] is True and "stale" not in answer["chains"][0][1]
    assert answer["stale_paths"] == ["e.py"]
    assert answer["pending_changes"] == 3


def test_embed_client_reads_base64_and_float_vectors_alike() -> None:
    import base64
    from array import array

    from codenav.embed.client import _decode

    values = [0.25, -1.5, 3.0]
    packed = base64.b64encode(array("f", values).tobytes()).decode("ascii")
    assert _decode(packed) == values
    assert _decode(values) == values  # an endpoint that ignores encoding_format
    with pytest.raises(Exception, match="vector of type"):
        _decode({"not": "a vector"})


def test_the_embedding_backlog_does_not_keep_the_index_from_being_fresh() -> None:
    watcher = {"mode": "events", "at": 1e18, "watched_dirs": 3}
    from codenav import freshness

    state = freshness.repo_freshness({}, {"embed": "embed-1-abc"}, {"state": "done"}, watcher)
    assert state["fresh"] is True  # the index is current; the vectors are reported apart
    assert state["embedding"] == "queued"
    busy = freshness.repo_freshness({}, {"embed": "embed-1-abc", "paths": "paths-1-def"},
                                    {"state": "done"}, watcher)
    assert busy["fresh"] is False and busy["queued_jobs"] == {"paths": "paths-1-def"}


def test_a_watch_that_is_starting_keeps_the_index_from_being_fresh() -> None:
    """Changes made before a watch was up raise no event; until the full reconcile that
    follows its start, the repository is not fresh, and says why."""
    from codenav import freshness

    watcher = {"mode": "events", "at": 1e18, "watched_dirs": 3}
    starting = freshness.repo_freshness({}, {}, {"state": "done"},
                                        {**watcher, "catching_up": True})
    assert starting["fresh"] is False
    assert any("watch is starting" in r for r in starting["reasons"])
    up = freshness.repo_freshness({}, {}, {"state": "done"}, {**watcher, "catching_up": False})
    assert up["fresh"] is True


def test_status_says_what_is_degraded_while_a_service_is_down() -> None:
    from codenav.status import health

    assert health(None, {"index": 1, "embed": 1}, "ok")["degraded"] == []
    down = health("ConnectionError", None, "the embedder did not answer within 0.5s")
    assert down["queue"] == "unreachable (ConnectionError)"
    assert [d.split(" (")[0] for d in down["degraded"]] == ["queue unreachable",
                                                           "embedder unavailable"]
    no_workers = health(None, {"index": 0, "embed": 0}, "ok")["degraded"]
    assert any("no index worker" in d for d in no_workers)
    assert any("no embedding worker" in d for d in no_workers)
    assert health(None, {"index": 1, "embed": 0}, None)["degraded"] == []  # no embedder here
