"""Run the real ``lm_eval`` CLI with a model whose construction leaves a marker file.

``python -m tests.support.marker_model MARKER LM_EVAL_ARGS...`` registers ``marker-lm``
(it writes MARKER when lm-eval builds it and answers every request with a fixed text),
then runs lm-eval's own CLI entry point with the remaining arguments. A test can then
prove what happened before the model under test was built: the marker is absent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

ANSWER = "They decided to meet again on Friday."


@register_model("marker-lm")
class MarkerLM(LM):
    """A model that marks its construction; generation returns :data:`ANSWER`."""

    marker: Path | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        if self.marker is not None:
            self.marker.write_text("built", encoding="utf-8")

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
    """Mark construction at ``argv[0]``, then run ``lm_eval`` with ``argv[1:]``."""
    MarkerLM.marker = Path(argv[0])
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *argv[1:]]
    cli_evaluate()


if __name__ == "__main__":
    main(sys.argv[1:])
