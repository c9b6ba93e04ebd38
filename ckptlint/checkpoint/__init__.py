"""Checkpointing semantics rules query: sites, options, regions, randomness, outer state."""
