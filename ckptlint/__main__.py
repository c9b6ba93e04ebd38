"""Entry point for ``python -m ckptlint``."""

from ckptlint.cli.app import run

if __name__ == "__main__":
    run()
