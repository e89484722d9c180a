"""Run the real ``lm_eval`` CLI with a model whose construction leaves a marker file.

``python tests/support/marker_model.py LM_EVAL_ARGS...`` registers ``marker-lm`` (it writes
"built" to the file ``ELITR_TEST_MARKER`` names when lm-eval builds it, and answers every
request with a fixed text), then runs lm-eval's own CLI entry point with the arguments.
A forked launch imports this file before the CLI instead (``run_lm_eval(...,
model_script=SCRIPT)`` in tests/conftest.py). A test can then prove what happened before
the model under test was built: the marker is absent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

ANSWER = "They decided to meet again on Friday."
#: The environment variable naming the marker file.
MARKER_ENV = "ELITR_TEST_MARKER"
#: This file, the ``model_script`` of a launch with ``marker-lm``.
SCRIPT = Path(__file__)


@register_model("marker-lm")
class MarkerLM(LM):
    """A model that marks its construction; generation returns :data:`ANSWER`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        marker = os.environ.get(MARKER_ENV)
        if marker:
            Path(marker).write_text("built", encoding="utf-8")

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: Any = None) -> MarkerLM:
        """lm-eval's constructor for string model args."""
        return cls()

    @classmethod
    def create_from_arg_obj(cls, arg_dict: Any, additional_config: Any = None) -> MarkerLM:
        """lm-eval's constructor for dict model args (the CLI's)."""
        return cls()

    def loglikelihood(self, requests: Any) -> Any:
        """Not used by the generation tasks."""
        raise NotImplementedError

    def loglikelihood_rolling(self, requests: Any) -> Any:
        """Not used by the generation tasks."""
        raise NotImplementedError

    def generate_until(self, requests: Any) -> list[str]:
        """The same answer to every request."""
        return [ANSWER for _ in requests]


def main(argv: list[str]) -> None:
    """Run ``lm_eval`` with ``argv``, ``marker-lm`` registered."""
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *argv]
    cli_evaluate()


if __name__ == "__main__":
    main(sys.argv[1:])
