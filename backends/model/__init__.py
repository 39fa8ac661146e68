"""Analytic performance model (seed formulas): see :mod:`taihu.backends.model.analytic`."""
