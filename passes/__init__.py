"""taihu passes, one per file; conversions live in ``conversion/``."""
