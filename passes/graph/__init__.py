"""Graph-level passes (value semantics, tensor ops)."""
