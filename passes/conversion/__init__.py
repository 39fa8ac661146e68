"""Conversion passes between taihu levels, named ``X_to_Y``."""
