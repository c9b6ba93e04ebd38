"""Generic Python analysis: tree walks, the semantic model, module analysis, the project."""
