"""Command-line tools and the xDSL universe plugin."""
