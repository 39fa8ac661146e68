"""taihu: an MLIR-style compiler stack for heterogeneous deep-learning core groups.

A DNN enters as the ``graph`` dialect and is lowered through ``tile``, ``loop`` and
``sw`` into ``swsim``, whose interpreter models one Sunway SW26010 core group.
The folders of the repository map into this namespace (``taihu.dialects``,
``taihu.passes``, ``taihu.frontends``, ``taihu.backends``, ``taihu.tools``).
"""

__version__ = "0.1.0"
