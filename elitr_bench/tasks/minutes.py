"""The lm-eval task class of the minuting tasks (AutoMin Task A on ELITR meetings).

``elitr_minutes_dev`` / ``elitr_minutes_test`` (the 18 ELITR-Bench meetings) and
``automin23_en`` (AutoMin 2023's 12 English test meetings): one document per meeting, the
prompt is AutoMin's English baseline prompt followed by the transcript, and the minutes
are scored against the human reference minutes (ROUGE, optional BERTScore/BARTScore,
Table 5 statistics) and, when a minutes judge is chosen, by that judge.

Options (``--metadata``; one-line errors while the task is built):

* ``overlength``: ``error`` (default), ``skip``, ``truncate_middle`` as in the QA tasks, or
  ``chunked``: the organisers' own method for their GPT baselines (Sec. 5.2: "split each
  one into smaller sections, have the LLMs process these sections separately, and then
  simply concatenate the results"). A transcript whose prompt does not fit is cut at line
  boundaries into sections that fit; every section gets the same prompt, and the bullet
  lists are joined in order with a newline. Sections do not depend on each other, so all
  sections of all meetings go to the model in lm-eval's one ``generate_until`` call
  (batched across meetings; no turn-by-turn driver is needed); lm-eval then sees one
  response per meeting again. ``chunk_tokens=N`` caps a section's transcript at N tokens
  even when the context is larger (e.g. 7000 to mimic the organisers' 8k GPT-4); API
  models (no tokenizer) need it and measure tokens as words x 4/3.
* ``wer``: noisy transcripts at a target word error rate (as ``elitr_qa``).
* ``prompt_role``: ``user`` (prompt and transcript in one user turn) or ``system`` (the
  instruction as system message, the transcript as the user turn).
* ``bertscore`` / ``bartscore`` (true/false, default false) and ``bertscore_model`` /
  ``bartscore_model``: the heavy reference metrics.
* ``judge``: a minutes judge spec (``openai:gpt-4-0613,rubric=gpt-afgr``, ``rubric=gpt-art``,
  ``method=mesa``) or ``none``. **Default: none** — every minutes judge is a paid or slow
  LLM and no free default exists, so a run computes the reference metrics unless a judge
  is asked for explicitly. ``ELITR_JUDGE`` is used only when it names a minutes method
  (it usually holds the QA judge).
"""

from __future__ import annotations

import functools
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import datasets
from lm_eval.api.task import ConfigurableTask

from elitr_bench import prompts
from elitr_bench.data.minutes import (
    AUTOMIN_SPLIT,
    MINUTES_KIND,
    load_automin_meetings,
    load_elitr_minutes_meetings,
)
from elitr_bench.data.records import MinutesMeeting
from elitr_bench.judges.conceal import scrub
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import judge_filter_name
from elitr_bench.tasks import context, metrics
from elitr_bench.tasks.minutes_metrics import (
    DEFAULT_BARTSCORE_MODEL,
    DEFAULT_BERTSCORE_MODEL,
    bartscore,
    bertscore_f1,
    minutes_metric_list,
    output_stats,
    rouge_scores,
)
from elitr_bench.tasks.options import PROMPT_ROLES, OptionError, as_bool, choice
from elitr_bench.tasks.task import LmEvalContract, record_noise

if TYPE_CHECKING:
    from elitr_bench.judges.summary.base import MinutesMethod

log = logging.getLogger(__name__)

# AutoMin 2023 overview, Sec. 5.2 ("GPT-4 and GPT-3 Baselines"), the prompt for English
# project meetings, printed as: "Summarize the following project meeting in the form of
# 5 - 10 bullet points: <meeting transcript section>". The transcript follows after the
# single space the paper prints.
MINUTES_PROMPT = "Summarize the following project meeting in the form of 5 - 10 bullet points:"
PROMPT_SEPARATOR = " "
#: How chunked sections' bullet lists are joined ("simply concatenate the results").
CHUNK_JOINER = "\n"
#: Tokens per word assumed when no tokenizer is available (API models).
TOKENS_PER_WORD = 4 / 3

MinutesOverlength = Literal["error", "skip", "truncate_middle", "chunked"]
_OVERLENGTH: tuple[str, ...] = ("error", "skip", "truncate_middle", "chunked")
_SOURCES: tuple[str, ...] = ("dev", "test2", AUTOMIN_SPLIT)


def _positive_int(name: str, value: Any) -> int | None:
    if value is None or str(value).strip() in ("", "none"):
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"--metadata {name}={value!r}: expected a positive integer") from None
    if number < 1:
        raise OptionError(f"--metadata {name}={value!r}: expected a positive integer")
    return number


@dataclass(frozen=True)
class MinutesTaskOptions:
    """Options of the minutes tasks (see the module docstring)."""

    prompt_role: prompts.PromptRole = "user"
    overlength: MinutesOverlength = "error"
    chunk_tokens: int | None = None
    wer: float | None = None
    noise_seed: int = 2023
    noise_rules: str | None = None
    bertscore: bool = False
    bertscore_model: str = DEFAULT_BERTSCORE_MODEL
    bartscore: bool = False
    bartscore_model: str = DEFAULT_BARTSCORE_MODEL

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> MinutesTaskOptions:
        """Parse the options this task owns; other keys are left to lm-eval and the judges.

        Near misses of any ELITR option (``chunk_token``, ``bert_score``, ``judg``) are
        refused, as on the QA tasks: a misspelt key would otherwise be ignored silently.
        """
        from elitr_bench.tasks.options import TaskOptions, check_option_keys

        meta = dict(metadata or {})
        check_option_keys(meta)
        # wer / noise_* share the QA tasks' parsing (one definition of a valid WER).
        noise = TaskOptions.from_metadata(
            {k: meta[k] for k in ("wer", "noise_seed", "noise_rules") if k in meta}
        )
        return cls(
            prompt_role=cast(
                prompts.PromptRole,
                choice("prompt_role", meta.get("prompt_role", "user"), PROMPT_ROLES),
            ),
            overlength=cast(
                MinutesOverlength,
                choice("overlength", meta.get("overlength", "error"), _OVERLENGTH),
            ),
            chunk_tokens=_positive_int("chunk_tokens", meta.get("chunk_tokens")),
            wer=noise.wer,
            noise_seed=noise.noise_seed,
            noise_rules=noise.noise_rules,
            bertscore=as_bool("bertscore", meta.get("bertscore", False)),
            bertscore_model=str(meta.get("bertscore_model") or DEFAULT_BERTSCORE_MODEL),
            bartscore=as_bool("bartscore", meta.get("bartscore", False)),
            bartscore_model=str(meta.get("bartscore_model") or DEFAULT_BARTSCORE_MODEL),
        )


def minutes_messages(
    transcript: str, prompt_role: prompts.PromptRole = "user"
) -> list[prompts.ChatMessage]:
    """The AutoMin baseline prompt with a transcript (section), as chat messages."""
    if prompt_role == "system":
        return [
            prompts.ChatMessage("system", MINUTES_PROMPT),
            prompts.ChatMessage("user", transcript),
        ]
    return [prompts.ChatMessage("user", MINUTES_PROMPT + PROMPT_SEPARATOR + transcript)]


def split_sections(transcript: str, count: Callable[[str], int], budget: int) -> list[str]:
    """Cut a transcript at line boundaries into sections of at most ``budget`` tokens.

    Lines are packed greedily in order; a single line longer than the budget is cut by
    words. ``count`` measures a piece of text in tokens. Pure, so it is tested directly.

    Raises:
        ValueError: ``budget`` < 1.
    """
    if budget < 1:
        raise ValueError("split_sections needs a positive budget")
    pieces: list[str] = []
    for line in transcript.splitlines():
        if count(line) <= budget:
            pieces.append(line)
            continue
        words = line.split(" ")
        current: list[str] = []
        for word in words:
            if current and count(" ".join([*current, word])) > budget:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
        if current:
            pieces.append(" ".join(current))
    sections: list[str] = []
    current_lines: list[str] = []
    used = 0
    for piece in pieces:
        n = count(piece) + 1  # + the newline
        if current_lines and used + n > budget:
            sections.append("\n".join(current_lines))
            current_lines, used = [], 0
        current_lines.append(piece)
        used += n
    if current_lines:
        sections.append("\n".join(current_lines))
    return [s for s in sections if s.strip()]


def judge_for_minutes(metadata: Mapping[str, Any]) -> tuple[str, JudgeConfig | None]:
    """The minutes judge of a run: ``--metadata judge=...``; default none (see module doc).

    Raises:
        OptionError: The spec names a QA judge rather than a minutes method.
    """
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.spec import ENV_JUDGE
    from elitr_bench.judges.summary.registry import MINUTES_RUBRICS, known_methods, method_name

    explicit = str(metadata.get("judge") or "").strip()
    spec = explicit
    if not spec:
        env = os.environ.get(ENV_JUDGE, "").strip()
        if env and env.lower() not in ("none", "off", "skip"):
            try:
                spec = env if method_name(parse_judge_spec(env)) else ""
            except ValueError:
                spec = ""
    if not spec or spec.lower() in ("none", "off", "skip"):
        return "none", None
    config = parse_judge_spec(spec)
    if method_name(config) is None:
        methods = "|".join(m for m in known_methods() if m not in MINUTES_RUBRICS)
        raise OptionError(
            f"--metadata judge {config.spec!r} is a QA judge; minutes tasks need a minutes "
            f"method (rubric={'|'.join(MINUTES_RUBRICS)} or method={methods}) or "
            """--metadata '{"judge": "none"}'"""
        )
    # Concealed: lm-eval writes the filter's spec into the results (see judges/conceal.py).
    return config.spec, config


def meeting_doc(meeting: MinutesMeeting) -> dict[str, Any]:
    """One lm-eval document per meeting; the transcript is referenced, not copied.

    The references are kept (a few kB) so that a sample log is enough to recompute
    reference metrics and for judges that compare against them.
    """
    return {
        "meeting_id": meeting.meeting_id,
        "split": meeting.split,
        "task_kind": MINUTES_KIND,
        "references": [r.text for r in meeting.references],
        "reference_names": [r.system for r in meeting.references],
    }


class MinutesTask(LmEvalContract, ConfigurableTask):
    """Write the minutes of one meeting per document (``dataset_name``: ``elitr``/``automin``).

    ``test_split`` chooses the meetings: ``dev`` or ``test2`` (ELITR-Bench) or ``test2023``
    (AutoMin 2023 English).
    """

    #: What the task judges (see :attr:`elitr_bench.tasks.task.ElitrQATask.task_kind`); also
    #: written into every document, where ``report`` and ``score`` find it in the samples.
    task_kind: ClassVar[str] = MINUTES_KIND

    def __init__(
        self,
        data_dir: str | None = None,
        cache_dir: str | None = None,
        download_mode: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        cfg = {k: v for k, v in (config or {}).items() if k != "class"}
        metadata = dict(cfg.get("metadata") or {})
        self.options = MinutesTaskOptions.from_metadata(metadata)
        self.split = choice("test_split", cfg.get("test_split"), _SOURCES)
        self._transcripts: dict[str, str] = {}
        self._prompt_tokens: dict[str, int] = {}
        self._status: dict[str, str] = {}
        self._sections: dict[str, int] = {}
        self._held_back: list[Any] = []
        self._chunk_parts: dict[str, list[Any]] = {}
        self._render_args: tuple[str | None, Callable[..., str] | None] = (None, None)
        self.judge_spec, self.judge_config = judge_for_minutes(metadata)
        identity = self.judge_config.identity() if self.judge_config else {"backend": "none"}
        cfg["metadata"] = {**scrub(metadata), "judge_identity": identity}
        cfg["filter_list"] = [  # the filter name says who judged (judge_filter_name)
            {"name": judge_filter_name(identity), "filter": self._filters_spec(metadata)}
        ]
        cfg["metric_list"] = self._metric_list()
        self._stderr_of = metrics.clustered(cfg["metric_list"])
        cfg["process_results"] = type(self).process_results
        super().__init__(
            data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=cfg
        )

    def _filters_spec(self, metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
        """take_first, then the minutes judge filter when a judge is chosen.

        The judge filter keeps the minutes text in its JSON (``response``), so reference
        metrics are computed from the same text the judge saw.
        """
        steps: list[dict[str, Any]] = [{"function": "take_first"}]
        if self.judge_config is not None:
            from elitr_bench.judges.summary.lm_eval_filter import FILTER_NAME

            steps.append(
                {
                    "function": FILTER_NAME,
                    "judge": self.judge_spec,
                    "system": str(metadata.get("system") or ""),
                }
            )
        return steps

    def _metric_list(self) -> list[dict[str, Any]]:
        """The run's metrics (:func:`.minutes_metrics.minutes_metric_list`)."""
        judge: list[dict[str, Any]] = []
        if self.judge_config is not None:
            from elitr_bench.judges.summary.lm_eval_filter import metric_list

            judge = metric_list(self.judge_config)
        return minutes_metric_list(
            noisy=self.options.wer is not None,
            chunked=self.options.overlength == "chunked",
            bertscore=self.options.bertscore,
            bartscore=self.options.bartscore,
            judge=judge,
        )

    # ------------------------------------------------------------------ data
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Build one document per meeting from the pinned files (no HF hub access)."""
        if self.split == AUTOMIN_SPLIT:
            meetings = load_automin_meetings()
        else:
            meetings = load_elitr_minutes_meetings(cast(Any, self.split))
        self._transcripts = {m.meeting_id: m.transcript for m in meetings}
        docs = [meeting_doc(m) for m in meetings]
        if self.options.wer is not None:
            self._add_noise(docs)
        self.dataset = datasets.DatasetDict({self.split: datasets.Dataset.from_list(docs)})

    def _add_noise(self, docs: list[dict[str, Any]]) -> None:
        from elitr_bench.noise import noisy_transcript

        assert self.options.wer is not None
        for doc in docs:
            meeting_id = str(doc["meeting_id"])
            noisy = noisy_transcript(
                self._transcripts[meeting_id],
                self.options.wer,
                seed=self.options.noise_seed,
                rules=self.options.noise_rules,
            )
            self._transcripts[meeting_id] = noisy.text
            record_noise(doc, noisy)

    def transcript(self, doc: Mapping[str, Any]) -> str:
        """The (possibly noisy) transcript of the document's meeting."""
        return self._transcripts[str(doc["meeting_id"])]

    # --------------------------------------------------------------- prompts
    def messages(
        self, doc: Mapping[str, Any], transcript: str | None = None
    ) -> list[prompts.ChatMessage]:
        """AutoMin's prompt with the meeting's transcript (or a section of it)."""
        text = self.transcript(doc) if transcript is None else transcript
        return minutes_messages(text, self.options.prompt_role)

    def initial_prompt(self, doc: dict[str, Any]) -> str:
        """The prompt of the whole meeting (what ``fewshot_context`` returns)."""
        return self.render(self.messages(doc))

    # ------------------------------------------------------- context policy
    def build_all_requests(self, **kwargs: Any) -> None:
        """Check the judge, build requests as lm-eval does, then apply ``overlength``."""
        if not self.predict_only and self.judge_config is not None:
            from elitr_bench.judges import check_judge_ready
            from elitr_bench.tasks.replay_fit import alternatives

            # As the QA tasks do (the start-up hook checked it before the model was built);
            # the QA-only keyless judges (replay, lexical) are no way out here.
            check_judge_ready(
                self.judge_config,
                network=True,
                alternative=alternatives("minutes", context.active_model()),
            )
        if int(self.config.repeats or 1) != 1:
            raise OptionError(f"{self.config.task}: minutes tasks need repeats=1")
        self._load_metric_models()
        super().build_all_requests(**self.request_kwargs(kwargs))
        if not self.predict_only and self.judge_config is not None:
            self._check_judge_context()
        counter = context.token_counter(context.active_model())
        if counter is not None:
            self.declare_metric(metrics.PROMPT_TOKENS)
        if counter is None and self.options.overlength == "chunked":
            if self.options.chunk_tokens is None:
                raise OptionError(
                    f"{self.config.task}: overlength=chunked cannot measure this model's "
                    "context (no tokenizer, e.g. an API model); pass "
                    """--metadata '{"chunk_tokens": N}'"""
                )
            self._apply_policy(None)
        elif counter is not None:
            self._apply_policy(counter)

    def _check_judge_context(self) -> None:
        """Stop before generation when a meeting's judge prompt cannot fit its window.

        The minutes are not written yet, so each meeting is checked with empty minutes
        (a lower bound): such a meeting could only end with a judge error after paying
        for its generation.
        """
        from elitr_bench.judges.summary.lm_eval_filter import item_from_doc
        from elitr_bench.judges.summary.registry import get_method
        from elitr_bench.judges.summary.run import check_context

        assert self.judge_config is not None
        docs = {str(i.doc["meeting_id"]): i.doc for i in getattr(self, "_instances", None) or []}
        items = [item_from_doc(doc, "") for _, doc in sorted(docs.items())]
        what = f"{self.config.task}: the minutes judge (with empty minutes, before generation)"
        check_context(items, get_method(self.judge_config), self.judge_config, what)

    def _load_metric_models(self) -> None:
        """Load BERTScore/BARTScore models now, so a missing one fails before generation."""
        from elitr_bench.tasks import minutes_metrics

        if self.options.bertscore:
            minutes_metrics._bert_scorer(self.options.bertscore_model)
        if self.options.bartscore:
            minutes_metrics._bart(self.options.bartscore_model)

    def _count(self, counter: context.ModelTokenizer | None) -> Callable[[str], int]:
        if counter is None:
            # API chat prompts arrive as lm-eval's JsonChatStr (messages as JSON text).
            return lambda text: math.ceil(
                len(str(getattr(text, "prompt", text)).split()) * TOKENS_PER_WORD
            )
        return lambda text: len(counter.encode(text))

    def _apply_policy(self, counter: context.ModelTokenizer | None) -> None:
        count = self._count(counter)
        instances: list[Any] = list(getattr(self, "_instances", None) or [])
        keep: list[Any] = []
        over: list[tuple[str, int]] = []
        for inst in instances:
            meeting_id = str(inst.doc["meeting_id"])
            n_tokens = count(inst.args[0])
            if counter is not None:  # an estimate otherwise: not logged as prompt_tokens
                self._prompt_tokens[meeting_id] = n_tokens
            budget = counter.budget(inst.args[1]) if counter is not None else None
            fits = budget is None or n_tokens <= budget
            forced = (
                self.options.overlength == "chunked"
                and self.options.chunk_tokens is not None
                and count(self.transcript(inst.doc)) > self.options.chunk_tokens
            )
            if fits and not forced:
                keep.append(inst)
                continue
            policy = self.options.overlength
            if policy == "error":
                over.append((meeting_id, n_tokens))
            elif policy == "skip":
                self._status[meeting_id] = "skipped"
                self._held_back.append(inst)
            elif policy == "truncate_middle":
                assert counter is not None and budget is not None
                self._truncate(inst, counter)
                keep.append(inst)
            else:
                keep.extend(self._chunk(inst, count, budget))
        if over:
            assert counter is not None
            raise context.ContextLengthError(
                context.overlength_message(
                    str(self.config.task), over, counter.max_length, counter.positions
                )
            )
        self._instances = keep
        if self._status:
            log.warning(
                "%s: %d meeting(s) over the context: %s",
                self.config.task,
                len(self._status),
                ", ".join(f"{m} {s}" for m, s in sorted(self._status.items())),
            )

    def _truncate(self, inst: Any, counter: context.ModelTokenizer) -> None:
        meeting_id = str(inst.doc["meeting_id"])
        built: dict[str, tuple[str, int]] = {}

        def excess(cut: str) -> int:
            prompt = self.render(self.messages(inst.doc, cut))
            built[cut] = (prompt, counter.count(prompt))
            return built[cut][1] - counter.budget(inst.args[1])

        cut = context.fit_middle(counter, self.transcript(inst.doc), excess)
        if cut is None:
            raise context.ContextLengthError(
                f"{self.config.task}: cannot fit {meeting_id} into the model's "
                f"{counter.max_length} tokens even after cutting its transcript; raise "
                "max_length or lower max_gen_toks"
            )
        prompt, n_tokens = built[cut]
        inst.arguments = (prompt, inst.args[1])
        self._status[meeting_id] = "truncated"
        self._prompt_tokens[meeting_id] = n_tokens

    def _chunk(self, inst: Any, count: Callable[[str], int], budget: int | None) -> list[Any]:
        """Replace a meeting's request by one request per transcript section.

        The sections' requests carry the meeting's doc and ``idx`` 0..n-1; lm-eval sends
        them with every other request in its one model call, and :meth:`apply_filters`
        joins their answers back into the meeting's single response.
        """
        from lm_eval.api.instance import Instance

        meeting_id = str(inst.doc["meeting_id"])
        limits = (
            [] if budget is None else [budget - count(self.render(self.messages(inst.doc, "")))]
        )
        if self.options.chunk_tokens is not None:
            limits.append(self.options.chunk_tokens)
        section_budget = min(limits) - 16  # joined text may tokenise longer than its parts
        for _ in range(4):
            if section_budget < 64:
                raise context.ContextLengthError(
                    f"{self.config.task}: {meeting_id}: only {section_budget} tokens are left "
                    "for a transcript section after the prompt and max_gen_toks; raise "
                    "max_length, lower max_gen_toks or raise chunk_tokens"
                )
            sections = split_sections(self.transcript(inst.doc), count, section_budget)
            prompts_ = [self.render(self.messages(inst.doc, s)) for s in sections]
            worst = 0 if budget is None else max(count(p) for p in prompts_) - budget
            if worst <= 0:
                break
            section_budget -= worst + 16
        else:
            raise context.ContextLengthError(
                f"{self.config.task}: {meeting_id}: cannot cut the transcript into sections "
                "that fit the model's context; raise max_length or lower max_gen_toks"
            )
        parts = [
            Instance(
                request_type=inst.request_type,
                doc=inst.doc,
                arguments=(prompt, inst.args[1]),
                idx=idx,
                metadata=inst.metadata,
                repeats=inst.repeats,
            )
            for idx, prompt in enumerate(prompts_)
        ]
        self._status[meeting_id] = "chunked"
        self._sections[meeting_id] = len(parts)
        self._chunk_parts[meeting_id] = parts
        return parts

    def apply_filters(self) -> list[Any] | None:
        """Join chunked answers, put skipped meetings back, then filter (and judge).

        lm-eval logs one record per document from ``task.instances``, so each meeting
        must be one request again before filtering: a chunked meeting's first request
        gets the joined minutes as its response and the whole meeting's prompt as its
        arguments, the other section requests are dropped (their answers are in the
        joined text, their count in ``sections``).
        """
        current: list[Any] = list(getattr(self, "_instances", None) or [])
        if self._chunk_parts:
            drop: set[int] = set()
            for meeting_id, parts in self._chunk_parts.items():
                answers = [str(p.resps[0]).strip() if p.resps else "" for p in parts]
                first = parts[0]
                first.resps = [CHUNK_JOINER.join(a for a in answers if a)]
                first.arguments = (self.initial_prompt(first.doc), first.args[1])
                drop.update(id(p) for p in parts[1:])
                log.info(
                    "%s: %s minutes joined from %d sections",
                    self.config.task,
                    meeting_id,
                    len(parts),
                )
            current = [i for i in current if id(i) not in drop]
            self._chunk_parts = {}
        if self._held_back:
            for inst in self._held_back:
                if not inst.resps:
                    inst.resps = [""]
            current = sorted([*current, *self._held_back], key=lambda i: (i.doc_id, i.idx))
            self._held_back = []
        self._instances = current
        if self.predict_only:  # --predict_only: keep the minutes, skip the judge
            from lm_eval.filters import build_filter_ensemble

            self._filters = [build_filter_ensemble("none", [["take_first", None]])]
        result = super().apply_filters()
        if not self.predict_only and self.judge_config is not None:
            from elitr_bench.judges.summary.lm_eval_filter import usage_metadata

            usage = usage_metadata()
            if usage is not None and isinstance(self.config.metadata, dict):
                self.config.metadata["judge_usage"] = usage
        return result

    # --------------------------------------------------------------- scoring
    def process_results(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        """Every listed metric of one meeting's minutes (``None`` where it has none).

        Reference metrics, Table 5 statistics and (if judged) the judge's metrics; a
        skipped meeting has no minutes and counts in ``overlength_skipped`` only. Under
        ``--predict_only``: lm-eval's ``bypass``, as for its own tasks.
        """
        if self.predict_only:
            return {"bypass": None}
        meeting_id = str(doc["meeting_id"])
        status = self._status.get(meeting_id)
        values: dict[str, Any] = {
            "overlength_skipped": float(status == "skipped" or not results),
            "overlength_truncated": float(status == "truncated"),
            "effective_wer": doc.get("effective_wer"),
            "prompt_tokens": self._prompt_tokens.get(meeting_id),
        }
        if status != "skipped" and results:
            values.update(self._minutes_metrics(doc, results[0]))
            if self.options.overlength == "chunked":
                values["sections"] = float(self._sections.get(meeting_id, 1))
        return self.complete(values, meeting_id)

    def _minutes_metrics(self, doc: dict[str, Any], response: Any) -> dict[str, Any]:
        from elitr_bench.judges.filtering import first_text
        from elitr_bench.judges.summary.lm_eval_filter import assessment_of, minutes_judge_metrics

        found = assessment_of(response)
        text = found[0] if found is not None else first_text(response)
        references = [str(r) for r in doc.get("references") or []]
        values: dict[str, Any] = {**rouge_scores(text, references), **output_stats(text)}
        if self.options.bertscore:
            values["bertscore_f1"] = bertscore_f1(text, references, self.options.bertscore_model)
        if self.options.bartscore:
            values["bartscore"] = bartscore(text, references, self.options.bartscore_model)
        if found is not None and self.judge_config is not None:
            values.update(minutes_judge_metrics(response, self._judge_method))
        return values

    @functools.cached_property
    def _judge_method(self) -> MinutesMethod:
        """The judge's minutes method, built once: it values its own per-sample fields."""
        from elitr_bench.judges.summary.registry import get_method

        assert self.judge_config is not None
        return get_method(self.judge_config)
