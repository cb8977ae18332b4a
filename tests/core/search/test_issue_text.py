"""An issue text's environment report is not part of what the query asks for."""

from __future__ import annotations

from codenav.search.query import MAX_QUERY_CHARS, parse_query, semantic_text, strip_environment

SHOW_VERSIONS = """\
Assigning a Dataset to a DataArray coordinate drops its attrs.

#### Output of ``xr.show_versions()``

<details>
INSTALLED VERSIONS
------------------
commit: None
python: 3.8.13 | packaged by conda-forge | (default, Mar 25 2022, 05:59:00)
python-bits: 64
OS: Linux
OS-release: 5.15.0-52-generic
machine: x86_64
LC_ALL: None
LANG: en_US.UTF-8

xarray: 2022.10.0
pandas: 1.4.3
numpy: 1.23.4
netCDF4: 1.6.1
zarr: None
setuptools: 65.5.0
</details>

Thank you for looking at it.
"""


def _labels(text: str) -> set[str]:
    return {g.label for g in parse_query(text).groups}


def test_a_version_report_leaves_the_query_and_the_prose_around_it_stays() -> None:
    kept = strip_environment(SHOW_VERSIONS)
    for gone in ("netCDF4: 1.6.1", "python-bits: 64", "OS: Linux", "LC_ALL: None",
                 "zarr: None", "INSTALLED VERSIONS", "xr.show_versions()"):  # and its titles
        assert gone not in kept
    for stays in ("drops its attrs", "Thank you for looking at it."):
        assert stays in kept
    labels = _labels(SHOW_VERSIONS)
    assert {"attrs", "dataset", "coordinate"} <= labels
    assert not labels & {"netcdf4", "zarr", "setuptools", "pandas", "byteorder",
                         "show_versions", "installed"}


def test_bullets_pip_lists_and_issue_form_answers_are_reports_too() -> None:
    bullets = ("The legend loses its handles.\n\n**Matplotlib version**\n"
               "  * Operating system: Linux and MacOS\n  * Matplotlib version: 3.1.0\n"
               "  * Python version: 3.7.3\n")
    assert strip_environment(bullets).strip() == "The legend loses its handles."
    listed = "It fails on import with a traceback.\n\n```\nnumpy 1.23.5\n" \
             "scipy 1.10.0 py39h1234_0 conda-forge\npyerfa 2.0.0\n```\n"
    assert strip_environment(listed) == "It fails on import with a traceback.\n\n```\n```\n"
    form = ("### Describe the bug\n\nautodoc skips the overload\n\n### OS\n\nWindows 10\n\n"
            "### Python version\n\n3.9\n\n### Sphinx extensions\n\nsphinx.ext.autodoc\n")
    kept = strip_environment(form)
    assert "Windows 10" not in kept and "### Python version" not in kept and "3.9" not in kept
    assert "sphinx.ext.autodoc" in kept and "### Sphinx extensions" in kept  # not a version
    assert "autodoc skips the overload" in kept
    crlf = "Bug.\r\n- OS: Arch Linux\r\n- Python version: 3.6\r\n- Sphinx version: 1.7.6\r\n"
    assert strip_environment(crlf).strip() == "Bug."


SKLEARN_VERSIONS = """\
IsolationForest warns about feature names when contamination is set.

### Versions

```shell
System:
    python: 3.10.6 (main, Nov 14 2022, 16:10:14) [GCC 11.3.0]
executable: /home/dev/project/.venv/bin/python
   machine: Linux-5.15.0-67-generic-x86_64-with-glibc2.35
BLAS:
  lib_dirs:
cblas_libs: cblas

Python dependencies:
      sklearn: 1.2.1
        numpy: 1.23.5

Built with OpenMP: True

threadpoolctl info:
       user_api: blas
   internal_api: openblas
         prefix: libopenblas
       filepath: /home/dev/project/.venv/lib/python3.10/site-packages/numpy.libs/\
libopenblas64_p-r0-742d56dc.3.20.so
        version: 0.3.20
threading_layer: pthreads
   architecture: Haswell
    num_threads: 12
```
"""


def test_a_reports_sections_paths_and_blas_libraries_go_with_it() -> None:
    # as pasted: the long path on one line, the empty key with its trailing space
    kept = strip_environment(SKLEARN_VERSIONS.replace("\\\n", "").replace("dirs:", "dirs: "))
    assert kept.startswith("IsolationForest warns about feature names")
    for gone in ("System:", "executable", "lib_dirs", "BLAS:", "Python dependencies:",
                 "OpenMP", "threadpoolctl", "openblas", "Haswell", "num_threads",
                 "### Versions"):
        assert gone not in kept
    assert [line for line in kept.split("\n") if line.strip()] == [
        "IsolationForest warns about feature names when contamination is set.", "```shell",
        "```"]


def test_an_interactive_sessions_banner_leaves_and_its_code_stays() -> None:
    session = ("Units are lost in the sum.\n\n```\nPython 3.9.12 (main, Jun  1 2022, 11:38:51) \n"
               "[GCC 7.5.0] :: Anaconda, Inc. on linux\n"
               'Type "help", "copyright", "credits" or "license" for more information.\n'
               ">>> from astropy import units as u\n>>> (1 * u.m).sum()\n```\n")
    assert strip_environment(session) == ("Units are lost in the sum.\n\n```\n"
                                          ">>> from astropy import units as u\n"
                                          ">>> (1 * u.m).sum()\n```\n")
    ipython = ("Python 3.10.2 (main, Jan 21 2022, 19:45:54) [Clang 13.0.0 (clang-1300.0.29.30)]"
               "\nIPython 7.30.1 -- An enhanced Interactive Python. Type '?' for help.\n"
               "In [1]: Q(x__in=[])\n")
    assert strip_environment(ipython) == "In [1]: Q(x__in=[])\n"


def test_config_blocks_tables_of_numbers_and_lone_versions_are_kept() -> None:
    for text in (
        "retries are ignored with this config:\ntimeout: 30\nretries: 3\nenabled: true\n",
        "the paths are not read:\ncache_dir: /tmp/cache\nlog_file: /var/log/app.log\n"
        "Steps:\nretries: 3\n",
        "the fit drifts:\nID0001     70.99200   38.51040\nID0001     13.05120   28.19240\n"
        "ID0001     3.83610    10.98370\n",
        "Since version: 2.1 the parser rejects it.\nfoo: 1.0\n",
        "### Expected behavior\n\nThe version is printed\n\n### Actual\n\nnothing\n",
        "a single line without a newline: 3.1",
    ):
        assert strip_environment(text) == text


def test_a_long_report_does_not_use_up_the_length_a_query_keeps() -> None:
    report = "".join(f"package{i}: 1.{i}.0\n" for i in range(1000))
    assert MAX_QUERY_CHARS < len(report) < 3 * MAX_QUERY_CHARS
    labels = _labels("python: 3.11.4\n" + report + "zarr store loses chunk encoding\n")
    assert {"zarr", "store", "chunk", "encoding"} <= labels
    assert not any(label.startswith("package") for label in labels)


def test_a_query_that_is_nothing_but_a_report_is_searched_as_it_is() -> None:
    labels = _labels("numpy: 1.23.4\nscipy: 1.9.3\nnetCDF4: 1.6.1\n")
    assert {"numpy", "scipy", "netcdf4"} <= labels


def test_what_is_embedded_leaves_out_the_templates_comment_and_the_report() -> None:
    text = "<!-- Please fill in the form below -->\nThe legend loses its handles.\n" \
           "\n### Versions\n\npython: 3.11.4\nnumpy: 1.26.0\nrequests: 2.31.0\n"
    assert semantic_text(text) == "The legend loses its handles."
    assert semantic_text("<!-- only a comment -->") == "<!-- only a comment -->"
    assert len(semantic_text("x " * 40_000)) == MAX_QUERY_CHARS
