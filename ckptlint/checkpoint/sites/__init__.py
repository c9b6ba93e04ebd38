"""Checkpoint sites: which calls checkpoint what, with which options (``ast_site_index``)."""
