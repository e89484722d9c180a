"""``elitr-replay``: answers with the responses the ELITR-Bench authors released.

It makes the whole pipeline (tasks, judges, reports) runnable offline and lets the
published scores be reproduced through lm-eval itself. On the minutes task
``automin23_en`` it replays the minutes AutoMin 2023 released for one of its 9 English
systems (``system=gpt4``, ``ntr``, ..., ``annot`` = the human reference).
"""

from __future__ import annotations

import logging
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from elitr_bench.cli_errors import install_excepthook
from elitr_bench.data import load_released_responses, released_systems
from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.loaders import RELEASED_FILES

_Key = tuple[str, str, str, str, str]  # setting, split, mode, meeting_id, question_id


class ReplayError(ElitrBenchError):
    """Unknown system, or a question the system has no released answer for."""


def canonical_system(name: str, available: list[str]) -> str:
    """Match a user's system name to a released one, case-insensitively.

    ``gpt-4`` matches ``GPT-4`` and ``vicuna-13b`` matches ``Vicuna-13B-v1.5``; an
    ambiguous or unknown name is an error listing what exists.
    """
    wanted = name.strip().lower()
    exact = [s for s in available if s.lower() == wanted]
    if exact:
        return exact[0]
    prefixed = [s for s in available if s.lower().startswith(wanted + "-v")]
    if len(prefixed) == 1:
        return prefixed[0]
    raise ReplayError(
        f"--model_args system={name!r}: no released responses of that system; "
        f"choose one of {', '.join(available)} (`elitr-bench data info` lists them per file)"
    )


def all_systems() -> list[str]:
    """Every system with released responses, in released order."""
    names = (name for systems in released_systems().values() for name in systems)
    return list(dict.fromkeys(names))


@register_model("elitr-replay")
class ReplayLM(LM):
    """Replays one system's released answers for ELITR-Bench documents.

    Args:
        system: Released system name, e.g. ``gpt-4`` or ``Vicuna-13B-v1.5``.
    """

    def __init__(self, system: str = "gpt-4", **kwargs: Any) -> None:
        super().__init__()
        from elitr_bench.data.minutes import AUTOMIN_SYSTEMS

        self.requested = str(system)
        self._minutes: dict[str, str] | None = None
        self._answers: dict[_Key, str] = {}
        if self.requested.strip().lower() in AUTOMIN_SYSTEMS:
            # An AutoMin system: serves the minutes task automin23_en only.
            self.system = self.requested.strip().lower()
            return
        try:
            self.system = canonical_system(self.requested, all_systems())
        except ReplayError as exc:
            raise ReplayError(
                f"{exc}; or, on the minutes task automin23_en, one of {', '.join(AUTOMIN_SYSTEMS)}"
            ) from None
        for setting, split, mode, source in RELEASED_FILES:
            if source != "gpt-4-eval":
                continue
            for resp in load_released_responses(setting, split, mode, source):
                if resp.system == self.system:
                    key = (setting, split, mode, resp.meeting_id, resp.question_id)
                    self._answers[key] = resp.response

    @classmethod
    def create_from_arg_string(
        cls, arg_string: str, additional_config: dict[str, Any] | None = None
    ) -> ReplayLM:
        """Build from ``--model_args``; batch size, device and the like are ignored."""
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(arg_string) if arg_string else {}
        return cls(**args)

    @classmethod
    def create_from_arg_obj(
        cls, arg_dict: dict[str, Any], additional_config: dict[str, Any] | None = None
    ) -> ReplayLM:
        """Build from an argument dict (lm-eval's programmatic path)."""
        return cls(**arg_dict)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """Look every request's question up in the released files."""
        out = []
        for request in requests:
            doc = request.doc
            if doc.get("task_kind") == "minutes":
                out.append(self._released_minutes(request))
                continue
            if not self._answers:
                raise ReplayError(
                    f"elitr-replay: system={self.requested!r} is an AutoMin minutes system; "
                    f"task {request.task_name} needs an ELITR-Bench system "
                    f"({', '.join(all_systems())})"
                )
            for field in ("setting", "split", "mode", "meeting_id", "question_id"):
                if field not in doc:
                    raise ReplayError(
                        f"elitr-replay: task {request.task_name} is not an ELITR-Bench task "
                        f"(its documents lack {field!r}); replay only serves elitr_* tasks"
                    )
            if doc.get("target_wer") is not None:
                raise ReplayError(
                    f"elitr-replay: task {request.task_name} uses noisy transcripts "
                    f"(WER {doc['target_wer']}), and no responses on noisy transcripts were "
                    "released; run a real model on noisy tasks"
                )
            if doc.get("language", "en") != "en":
                raise ReplayError(
                    f"elitr-replay: task {request.task_name} asks the {doc['language']} "
                    "questions, and only answers to the English questions were released; "
                    "run a real model on these tasks"
                )
            key = (
                doc["setting"],
                doc["split"],
                doc["mode"],
                doc["meeting_id"],
                str(doc["question_id"]),
            )
            if key not in self._answers:
                raise ReplayError(
                    f"elitr-replay: {self.system} released no {key[2]} answer for "
                    f"{key[0]}_{key[1]} {key[3]} q{key[4]}; pick a task/system pair that was "
                    "released (`elitr-bench data info`)"
                )
            out.append(self._answers[key])
        return out

    def _released_minutes(self, request: Any) -> str:
        """The released minutes of the replayed AutoMin system for a minutes document."""
        from elitr_bench.data.minutes import AUTOMIN_SPLIT, AUTOMIN_SYSTEMS, load_automin_minutes

        doc = request.doc
        if doc.get("split") != AUTOMIN_SPLIT:
            raise ReplayError(
                f"elitr-replay: no minutes were released for {doc.get('meeting_id')} "
                f"(task {request.task_name}); replay serves the minutes task automin23_en"
            )
        if self.system not in AUTOMIN_SYSTEMS:
            raise ReplayError(
                f"--model_args system={self.requested!r}: no AutoMin 2023 minutes of that "
                f"system; choose one of {', '.join(AUTOMIN_SYSTEMS)}"
            )
        if doc.get("target_wer") is not None:
            raise ReplayError(
                f"elitr-replay: task {request.task_name} uses noisy transcripts, and no "
                "minutes of noisy transcripts were released; run a real model"
            )
        if self._minutes is None:
            self._minutes = {m.meeting_id: m.text for m in load_automin_minutes([self.system])}
            if self.system == "annot":  # a surprise otherwise: ROUGE 1.0 "wins" the task
                logging.getLogger(__name__).warning(
                    "elitr-replay system=annot replays the human reference minutes, which are "
                    "also the task's references: ROUGE/BERTScore compare them with themselves; "
                    "only judge scores of this run are informative"
                )
        return self._minutes[str(doc["meeting_id"])]

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        """Not available: released files hold answers, not log-probabilities."""
        raise ReplayError("elitr-replay only serves generate_until tasks (ELITR-Bench)")

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        """Not available: released files hold answers, not log-probabilities."""
        raise ReplayError("elitr-replay only serves generate_until tasks (ELITR-Bench)")


# Model construction (bad --model_args, missing data) runs before any task module loads:
# our errors raised there are one line too.
install_excepthook()
