"""Hypothesis profiles of the fuzz tests (the default run: ~40 s for the whole test/fuzz folder).

- ``DEFAULT``: the bounded profile of the default test run: few examples, derandomized (the
  examples are a fixed function of the test, so CI is deterministic), no example database.
- ``LONG``: ``pytest -m fuzz`` (tests marked ``fuzz``): ``TAIHU_FUZZ_EXAMPLES`` examples per test
  (default 1000); derandomized too unless ``TAIHU_FUZZ_RANDOM=1`` asks for a fresh random round.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def default(max_examples: int) -> settings:
    """The bounded profile: ``max_examples`` derandomized examples, no shrinking (a failure
    prints its case; re-run it under ``pytest -m fuzz`` to shrink)."""
    return settings(max_examples=max_examples, derandomize=True,
                    phases=[Phase.explicit, Phase.generate], **_COMMON)


def long() -> settings:
    """The long profile (see the module docstring)."""
    return settings(max_examples=int(os.environ.get("TAIHU_FUZZ_EXAMPLES", "1000")),
                    derandomize=os.environ.get("TAIHU_FUZZ_RANDOM") != "1", **_COMMON)
