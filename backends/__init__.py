"""Execution back ends: numpy reference, core-group simulator, analytic model."""
