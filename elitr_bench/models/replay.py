"""``elitr-replay``: answers with the responses the ELITR-Bench authors released.

It makes the whole pipeline (tasks, judges, reports) runnable offline and lets the
published scores be reproduced through lm-eval itself. On the minutes task
``automin23_en`` it replays the minutes AutoMin 2023 released for one of its 9 English
systems (``system=gpt4``, ``ntr``, ..., ``annot`` = the human reference).
"""

from __future__ import annotations

import difflib
import logging
import sys
from collections.abc import Mapping
from typing import Any

import lm_eval.models  # noqa: F401  (lm-eval's own models first: see below)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from elitr_bench.cli_errors import install_excepthook
from elitr_bench.data import load_released_responses, released_systems
from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.loaders import RELEASED_FILES

_Key = tuple[str, str, str, str, str]  # setting, split, mode, meeting_id, question_id

log = logging.getLogger(__name__)

#: The only ``--model_args`` key of a replay.
SYSTEM_ARG = "system"
#: The key lm-eval names a run after (``GeneralConfigTracker._get_model_name`` looks for
#: ``peft``, ``delta``, ``pretrained``, ``model``, ``path``, ``engine``, else a random id).
NAME_ARG = "model"
#: Keys lm-eval itself may add to any model's arguments (``--trust_remote_code``).
_LM_EVAL_ARGS = frozenset({"trust_remote_code"})
#: lm-eval options that shape prompts, which a replay does not read.
PROMPT_FLAGS = ("--apply_chat_template", "--system_instruction", "--fewshot_as_multiturn")
_said_ignored: set[str] = set()


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


def run_name(system: str) -> str:
    """lm-eval's run name of a replay: ``elitr-replay/<system>``.

    lm-eval turns it into the output folder ``elitr-replay__<system>`` and the Hub card
    title, so two systems never share a folder, and a seed changes neither. The prefix
    keeps a replay apart from a fresh run of the same model through an API.
    """
    return f"elitr-replay/{system}"


def replay_system(args: Mapping[str, Any]) -> str:
    """The ``system=`` of ``--model_args``, refusing missing, unknown or misspelt keys.

    A typo used to fall back silently to GPT-4, so ``sytem=vicuna`` replayed GPT-4's
    answers under a run that looked like Vicuna's.

    Raises:
        ReplayError: No ``system=``, or a key a replay does not take (with the closest
            known key).
    """
    for key, value in args.items():
        if key in (SYSTEM_ARG, NAME_ARG) or key in _LM_EVAL_ARGS:
            continue
        close = difflib.get_close_matches(key, [SYSTEM_ARG], n=1, cutoff=0.5)
        hint = f"did you mean {SYSTEM_ARG}={value}?" if close else "it takes only system=NAME"
        raise ReplayError(
            f"--model_args {key}={value}: elitr-replay has no argument {key!r}; {hint} "
            "(`elitr-bench data info` lists the released systems)"
        )
    system = args.get(SYSTEM_ARG)
    if system is None or not str(system).strip():
        given = args.get(NAME_ARG)
        hint = f"; did you mean system={given}?" if given else ""
        raise ReplayError(
            "--model_args system=NAME is required: the released system to replay, e.g. "
            f"system=gpt-4 (`elitr-bench data info` lists them){hint}"
        )
    return str(system)


def _prompt_flags_in(argv: list[str]) -> list[str]:
    """The prompt options of lm-eval's command line that were given."""
    return [f for f in PROMPT_FLAGS if any(a == f or a.startswith(f + "=") for a in argv)]


def say_prompt_flags_ignored(flags: list[str]) -> None:
    """Log once per process that prompt options do not change a replay."""
    if not flags or _said_ignored:
        return
    _said_ignored.update(flags)
    log.warning(
        "elitr-replay: %s ignored: a replay returns the released answers whatever the "
        "prompt, so answers and scores are those of a run without it",
        ", ".join(flags),
    )


# lm-eval fills its model table (``lm_eval.models``) only while the table is empty, so a
# class registered first would hide ``hf``, ``vllm`` and the rest from a Python session
# that imports this module before lm-eval's models: hence the import at the top.
@register_model("elitr-replay")
class ReplayLM(LM):
    """Replays one system's released answers for ELITR-Bench documents.

    Args:
        system: Released system name, e.g. ``gpt-4`` or ``Vicuna-13B-v1.5``.
        model: The run name lm-eval logged for an earlier replay (``elitr-replay/<system>``),
            accepted when it names the same system.
    """

    def __init__(self, system: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        from elitr_bench.data.minutes import AUTOMIN_SYSTEMS

        system = replay_system({**kwargs, SYSTEM_ARG: system} if system else kwargs)
        self.requested = system
        self._minutes: dict[str, str] | None = None
        self._answers: dict[_Key, str] = {}
        automin = self.requested.strip().lower() in AUTOMIN_SYSTEMS
        if automin:
            self.system = self.requested.strip().lower()
        else:
            try:
                self.system = canonical_system(self.requested, all_systems())
            except ReplayError as exc:
                raise ReplayError(
                    f"{exc}; or, on the minutes task automin23_en, one of "
                    f"{', '.join(AUTOMIN_SYSTEMS)}"
                ) from None
        self.run_name = run_name(self.system)
        named = kwargs.get(NAME_ARG)
        if named is not None and str(named).lower() != self.run_name.lower():
            raise ReplayError(
                f"--model_args model={named}: elitr-replay picks the replayed system with "
                f"system= and names its run {self.run_name}; drop model= (did you mean "
                f"system={named}?)"
            )
        say_prompt_flags_ignored(_prompt_flags_in(sys.argv[1:]))
        if automin:
            return  # an AutoMin system: serves the minutes task automin23_en only
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
        """Build from a ``k=v,...`` string; batch size, device and the like are ignored.

        lm-eval names a run from this same string, which a model cannot change: Python
        callers who want the run named after the system pass a dict (see
        :meth:`create_from_arg_obj`) or ``model=elitr-replay/<system>`` themselves.
        """
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(arg_string) if arg_string else {}
        return cls(**args)

    @classmethod
    def create_from_arg_obj(
        cls, arg_dict: dict[str, Any], additional_config: dict[str, Any] | None = None
    ) -> ReplayLM:
        """Build from the ``--model_args`` dict (lm-eval's CLI path) and name the run.

        lm-eval names the output folder and the Hub card after a ``model`` key of this very
        dict (``GeneralConfigTracker._get_model_name``) and draws a random id without
        one, which differed per ``--seed`` and said nothing of the system. Recording
        ``model=elitr-replay/<system>`` in it is how an lm-eval model names its run; the
        results file's ``config.model_args`` then shows it next to ``system``.
        """
        lm = cls(**arg_dict)
        arg_dict[NAME_ARG] = lm.run_name
        return lm

    # -------------------------------------------------- prompt options (irrelevant)
    @property
    def tokenizer_name(self) -> str:
        """Part of lm-eval's request-cache key under ``--apply_chat_template``."""
        return "elitr-replay"

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """No template: a replay reads no prompt (lm-eval logs None)."""
        if chat_template:
            say_prompt_flags_ignored(["--apply_chat_template"])
        return None

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The turns as plain text, as without ``--apply_chat_template``.

        The released answers do not depend on the prompt; rendering it as a run without
        the flag does keeps the logged prompts (and lm-eval's prompt hashes) identical.
        """
        from elitr_bench.prompts import TURN_SEPARATOR

        say_prompt_flags_ignored(["--apply_chat_template"])
        return TURN_SEPARATOR.join(str(turn.get("content", "")) for turn in chat_history)

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
            if "rag_passages" in doc:
                raise ReplayError(
                    f"elitr-replay: task {request.task_name} shows the model retrieved "
                    "passages, and the released answers were written from whole transcripts; "
                    "run a real model on the retrieval tasks"
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
