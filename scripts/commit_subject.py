"""The ``commit-msg`` hook of the project's own repository: a commit subject (the first line
of the message) of at most 72 characters, so that ``git log --oneline`` stays readable; the
details go in the body, after a blank line.

pre-commit runs it with the path of the message file (``.git/COMMIT_EDITMSG``). Leading blank
lines and ``#`` comment lines, which git removes from the message, are not the subject.
Exit status 1, with the subject's length on stderr, when it is longer; else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72


def subject(message: str) -> str:
    """The subject of a commit message: its first line that is neither blank nor a comment,
    without trailing whitespace (``""`` when there is none)."""
    for line in message.splitlines():
        if line.strip() and not line.startswith("#"):
            return line.rstrip()
    return ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: commit_subject.py MESSAGE_FILE", file=sys.stderr)
        return 2
    text = Path(args[0]).read_text(encoding="utf-8", errors="replace")
    first = subject(text)
    if len(first) > MAX_SUBJECT:
        print(
            f"commit subject is {len(first)} characters; at most {MAX_SUBJECT} (details go in the body, "
            f"after a blank line):\n  {first}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
