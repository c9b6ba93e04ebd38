"""Configuration and file selection: config files, settings per file, discovery, ``--since``."""
