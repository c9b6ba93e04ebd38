"""Write one corpus folder from a git repository: the files of ``REV`` (default ``HEAD``)
whose names end in ``.py``, ``.pyi``, ``.ipynb``, ``.toml`` or ``.cfg``, and every
``.gitignore``, without ``.git`` and without symbolic links.

Usage: ``python benchmarks/extract_corpus.py GIT_DIR DEST [REV]`` (``GIT_DIR``: a clone's
``.git`` folder or a bare repository). Uses ``git ls-tree -r`` and ``git cat-file --batch``;
prints ``DEST`` and the number of files written.
"""

from __future__ import annotations

import os
import subprocess
import sys

SUFFIXES = (".py", ".pyi", ".ipynb", ".toml", ".cfg")


def extract(git_dir: str, dest: str, rev: str = "HEAD") -> int:
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", rev], capture_output=True, check=True).stdout
    wanted: list[tuple[bytes, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, raw_path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and (path.endswith(SUFFIXES) or os.path.basename(path) == ".gitignore"):
            wanted.append((sha, path))
    batch = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    written = 0
    for sha, path in wanted:
        batch.stdin.write(sha + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[1] == b"missing":
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
        written += 1
    batch.stdin.close()
    batch.wait()
    return written


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    print(sys.argv[2], extract(*sys.argv[1:]))
