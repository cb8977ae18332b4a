"""The polyglot fixture repository, plus the bad inputs that must never break indexing.

Bad inputs are generated at test time (a huge file, a symlink loop and a secret do not
belong in git)."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "polyglot"

BAD_FILES = {
    "assets/logo.png": "binary",
    "lib/blob.dat.txt": "binary",
    "data/huge.txt": "too_large",
    "web/static/app.min.js": "minified",
    "web/static/bundle.js": "minified",
    ".env": "secret",
    "loop": "symlink",
}


def make_polyglot(dest: Path) -> Path:
    """Copy the fixture repository to ``dest`` and add the bad inputs."""
    root = dest / "polyglot"
    shutil.copytree(FIXTURE, root)
    (root / "assets").mkdir()
    (root / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\0" * 64)
    (root / "lib" / "blob.dat.txt").write_bytes(b"header\x00\x01\x02 binary payload")
    (root / "data").mkdir()
    (root / "data" / "huge.txt").write_text("all work and no play\n" * 80_000)
    (root / "web" / "static").mkdir(parents=True)
    (root / "web" / "static" / "app.min.js").write_text("var a=1;")
    (root / "web" / "static" / "bundle.js").write_text("function f(){return 1};" * 400)
    (root / ".env").write_text("DATABASE_PASSWORD=canary-do-not-index-7731\n")
    (root / "loop").symlink_to(root)
    (root / "src" / "legacy.py").write_bytes(
        "# -*- coding: latin-1 -*-\ndef legacy_caf\xe9():\n    return 1\n".encode("latin-1"))
    padding = b"".join(b"# padding line %d to push the NUL past 8 KiB\n" % i for i in range(300))
    (root / "src" / "mixed.py").write_bytes(b"def before_nul():\n    return 1\n" + padding
                                            + b"# \x00 late nul\ndef after_nul():\n    pass\n")
    return root
