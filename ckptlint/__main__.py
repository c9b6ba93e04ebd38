"""Entry point for ``python -m ckptlint``."""

from ckptlint.cli.app import main

if __name__ == "__main__":
    main()
