"""Frontends that produce graph-dialect modules."""
