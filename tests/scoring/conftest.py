"""The judge tests' isolation and loopback server serve these tests too."""

from tests.judges.conftest import _isolated_judge_env, loopback  # noqa: F401
