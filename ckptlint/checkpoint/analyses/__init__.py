"""What a region does that rules ask about: randomness, outer state, norms, home-made recompute."""
