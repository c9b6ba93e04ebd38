"""Checkpointing semantics that rules query, in three parts whose imports point one way:

- :mod:`~ckptlint.checkpoint.sites`: which calls checkpoint what, with which options
  (``site_index``), home-made and reversible recompute, helpers that checkpoint a parameter;
- :mod:`~ckptlint.checkpoint.evaluator`: what an expression denotes, which branch runs, what a
  site recomputes (``RegionBuilder``);
- :mod:`~ckptlint.checkpoint.analyses`: what a region does that rules ask about (randomness,
  outer reads and writes, norms and their switches, grad mode, keywords the function refuses).
"""
