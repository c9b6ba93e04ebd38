"""Checkpoint sites: which calls checkpoint what, with which options (``site_index``)."""
