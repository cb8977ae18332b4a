"""Secret redaction (codenav.index.redact): the prefilter never misses what a plugin would flag,
only the secret is cut, lines are kept, and what detect-secrets' filters dismiss stays."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codenav.index import redact


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for d in redact.detectors():
        for pattern in getattr(d.plugin, "denylist", []):
            out.append((d.plugin.secret_type, pattern))
    return out


@pytest.mark.parametrize("kind,pattern", _patterns(), ids=lambda v: str(v)[:40])
def test_every_string_a_plugin_pattern_matches_is_a_prefilter_candidate(
        kind: str, pattern: re.Pattern[str]) -> None:
    index = [d.plugin.secret_type for d in redact.detectors()].index(kind)

    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, fullmatch=True).filter(lambda s: "\n" not in s),
           st.sampled_from(["", "x = ", "  # ", "foo("]))
    def check(match: str, before: str) -> None:
        text = f"first line\n{before}{match}\nlast line\n"
        candidates = redact.candidate_lines(text)
        start = len("first line\n")
        assert index in candidates.get(start, set()), (kind, match)

    check()


def test_a_secret_is_replaced_inside_its_line_and_the_rest_is_kept() -> None:
    text = ('import os\n\nAWS_ACCESS_KEY_ID = "AKIAZ4TB7K5Q9RMVX3PL"  # prod\n'
            'github = "ghp_Zx9Kq2Lm4Np6Rt8Vw1Yb3Cd5Ef7Gh0Jk2Mn4"\nprint(github)\n')
    out, found = redact.redact(text, "conf.py")
    assert out.split("\n")[2] == f'AWS_ACCESS_KEY_ID = "{redact.MARK}"  # prod'
    assert out.split("\n")[3] == f'github = "{redact.MARK}"'
    assert out.count("\n") == text.count("\n")
    assert [(f.line, f.type) for f in found] == [(3, "AWS Access Key"), (4, "GitHub Token")]


def test_what_detect_secrets_dismisses_is_kept() -> None:
    text = ('password = os.environ["DB_PASSWORD"]\n'    # an indirect reference
            'password = "${DB_PASSWORD}"\n'             # templated
            'api_key = "abcdefghijklmnop"\n'            # a sequential string
            'url = "https://user@example.com/x"\n'      # no password in the URL
            'token = "ghp_Zx9Kq2Lm4Np6Rt8Vw1Yb3Cd5Ef7Gh0Jk2Mn4"  # pragma: allowlist secret\n')
    out, found = redact.redact(text, "settings.py")
    assert out == text and found == []


def test_a_private_key_is_redacted_to_its_end_line_and_prose_about_keys_is_not() -> None:
    body = "MIIEowIBAAKCAQEAv3Fq9ZkQd0mYc7Tn2Lp5Xw8Rj4Hs6Gb1Ve3Ku9Oa7Ni2Me5Ld"
    text = (f'KEY = """\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body[::-1]}\n'
            '-----END RSA PRIVATE KEY-----\n"""\n'
            '# a file starts with "-----BEGIN RSA PRIVATE KEY-----" and\n# then has base64\n')
    out, found = redact.redact(text, "keys.py")
    lines = out.split("\n")
    assert body not in out and body[::-1] not in out
    assert lines[2] == lines[3] == redact.MARK
    assert lines[4] == "-----END RSA PRIVATE KEY-----"
    assert lines[-2] == "# then has base64"
    assert [f.line for f in found] == [2, 7]


def test_the_prefilter_is_built_from_the_library_patterns_not_a_list_of_its_own() -> None:
    literals = {lit for d in redact.detectors() for lit in d.literals}
    assert {"akia", "ghp_", "begin rsa private key", "password", "sk_live_"} <= literals
    assert not {d.plugin.secret_type for d in redact.detectors()} & redact.EXCLUDED
    assert len(redact.detectors()) >= 20


def test_a_job_forked_after_preload_redacts_without_building_or_importing_anything() -> None:
    """A worker preloads the detectors before RQ forks a process per job: the job's process
    redacts with what it inherited (no detector built again, no module imported)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import os, sys
        from codenav.index import redact
        redact.preload()
        before = set(sys.modules)
        pid = os.fork()
        if pid == 0:
            _out, found = redact.redact(
                'AWS_ACCESS_KEY_ID = "AKIAZ4TB7K5Q9RMVX3PL"\\n'
                'token = "ghp_Zx9Kq2Lm4Np6Rt8Vw1Yb3Cd5Ef7Gh0Jk2Mn4"  # pragma: allowlist secret\\n',
                "conf.py")
            new = sorted(set(sys.modules) - before)
            built = redact._prefilter.cache_info().misses + redact.detectors.cache_info().misses
            print(len(found), new, built)
            os._exit(0 if len(found) == 1 and not new and built == 2 else 1)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
