"""The evaluator: what an expression denotes, which branch runs, what a site recomputes."""
