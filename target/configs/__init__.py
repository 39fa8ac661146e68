"""Shipped machine descriptions (TOML): ``sw26010.toml``; loaded by :mod:`taihu.target.machine`."""
