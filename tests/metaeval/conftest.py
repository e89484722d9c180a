"""The judge tests' isolation (no user cache, judge setting or API key) serves these too."""

from tests.judges.conftest import _isolated_judge_env  # noqa: F401
