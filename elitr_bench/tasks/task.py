"""The lm-eval task class behind every ELITR-Bench QA task.

A Python class (``class: !function ...`` in the YAML) rather than plain YAML because
YAML cannot express what the benchmark needs: the prompt is built from a transcript
that lives outside the documents, options come from ``--metadata`` with validation,
and prompts are checked against the model's context before generation.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import datasets
from lm_eval.api.task import ConfigurableTask

from elitr_bench import prompts
from elitr_bench.cli_errors import install_excepthook
from elitr_bench.data import Question, load_benchmark
from elitr_bench.data.records import MODES, SETTINGS, SPLITS, Mode, Setting, Split
from elitr_bench.judges.conceal import scrub
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import (
    JUDGE_ERRORS,
    JUDGE_FORMAT_IN_ANSWER,
    JUDGE_UNSCORED,
    judge_filter_name,
    with_score_metric,
)
from elitr_bench.tasks import context, metrics
from elitr_bench.tasks.metrics import rouge_l, token_f1
from elitr_bench.tasks.options import OptionError, TaskOptions
from elitr_bench.tokens import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from elitr_bench.noise import NoisyTranscript

log = logging.getLogger(__name__)
install_excepthook()  # our errors reach the top of lm_eval as one line (see cli_errors)

DocKey = tuple[str, str]
JUDGE_FILTER = "elitr_judge"
#: ``metadata.judge_usage``'s name for s/sqrt(n) of the judge scores (answers taken as
#: independent); ``judge_score_stderr`` in the results is the meeting-clustered one.
INDEPENDENT_STDERR = "judge_score_stderr_independent"


def judge_for(metadata: dict[str, Any]) -> tuple[str, JudgeConfig | None]:
    """The run's judge from ``--metadata judge=...``, ``ELITR_JUDGE`` or the default.

    The spec is parsed here, while lm-eval builds tasks, so that a typo or unknown
    backend fails in the first seconds. With the replay model the replayed system (from
    ``--model_args system=...``, which lm-eval merges into metadata) is passed on to the
    replay judge, because a few released answers are shared by two systems.

    Returns:
        The spec handed to the ``elitr_judge`` filter, concealed because lm-eval writes
        it into the results file (the filter's parse finds the real one in this process),
        and its parsed config (``"none"`` and None when judging is off).
    """
    import elitr_bench.judges.qa.lm_eval_filter  # noqa: F401  (registers the filter)
    from elitr_bench.judges import parse_judge_spec, resolve_judge_spec
    from elitr_bench.judges.conceal import conceal_spec
    from elitr_bench.judges.qa.family import qa_options

    spec = resolve_judge_spec(str(metadata["judge"]) if metadata.get("judge") else None)
    if spec.lower() in ("none", "off", "skip"):
        return "none", None
    config = parse_judge_spec(spec)
    if config.backend == "replay" and not qa_options(config).system and metadata.get("system"):
        from elitr_bench.models.replay import all_systems, canonical_system

        spec = f"{spec},system={canonical_system(str(metadata['system']), all_systems())}"
        config = parse_judge_spec(spec)
    return conceal_spec(spec), config


def record_noise(doc: dict[str, Any], noisy: NoisyTranscript) -> None:
    """Write the noise a document's transcript got into the document.

    QA and minutes tasks both record it, so every result row stays traceable to the
    exact noise (target and achieved WER, seed, rules hash).
    """
    doc["target_wer"] = noisy.target_wer
    doc["effective_wer"] = round(noisy.effective_wer, 4)
    doc["noise_seed"] = noisy.seed
    doc["noise_rules"] = noisy.rules_hash


def question_doc(question: Question, mode: Mode, differs: bool = False) -> dict[str, Any]:
    """One lm-eval document per question; the transcript is referenced, not copied.

    Keeping the 20-60 kB transcript out of the document keeps logged samples small (the
    prompt is logged once, under ``arguments``).
    """
    return {
        "meeting_id": question.meeting_id,
        "question_id": question.question_id,
        "question": question.question,
        "answer": question.answer,
        "question_type": question.question_type,
        "answer_position": question.answer_position,
        "split": question.split,
        "setting": question.setting,
        "mode": mode,
        "turn": question.turn,
        "differs_in_conv": differs,
    }


def doc_key(doc: dict[str, Any]) -> DocKey:
    """Identity of a question within one task."""
    return (str(doc["meeting_id"]), str(doc["question_id"]))


class LmEvalContract:
    """What our task classes owe lm-eval's clients, shared by the QA and minutes tasks.

    * Metrics: ``metric_list`` holds what the run produces and every sample carries each
      listed metric (``None`` when it has no value); :meth:`aggregation` adds the
      meeting-clustered stderr carriers (see :mod:`elitr_bench.tasks.metrics`).
    * ``--predict_only``: lm-eval replaces the metrics by ``bypass``; our
      ``process_results`` then returns what lm-eval's own tasks return.
    * The request cache (``--cache_requests``): its key gets a fingerprint of everything
      our prompts depend on (:meth:`request_kwargs`).
    * Prompts: zero-shot, rendered with the chat template and ``--system_instruction``
      lm-eval asked for (:meth:`render`).
    """

    config: Any
    dataset: Any
    options: Any
    _stderr_of: tuple[str, ...] = ()
    _render_args: tuple[str | None, Callable[..., str] | None]
    _transcripts: dict[str, str]
    _metric_fn_list: dict[str, Any]
    _metric_fn_kwargs: dict[str, Any]
    _aggregation_list: dict[str, Any]
    _higher_is_better: dict[str, Any]

    @property
    def predict_only(self) -> bool:
        """Whether lm-eval's ``--predict_only`` replaced our metrics by ``bypass``."""
        return any(m.get("metric") == "bypass" for m in self.config.metric_list or [])

    def aggregation(self) -> dict[str, Any]:
        """lm-eval's aggregations, means that skip ``None``, and the stderr carriers.

        The carriers are not in ``metric_list``; the means are listed as lm-eval's
        ``mean`` (:func:`.metrics.none_skipping`).
        """
        base: dict[str, Any] = super().aggregation()  # type: ignore[misc]
        if self.predict_only:
            return base
        base = metrics.none_skipping(base, self.config.metric_list or [])
        from lm_eval.api.registry import get_aggregation

        carrier = get_aggregation(metrics.CLUSTER_STDERR)
        return {**base, **{name + metrics.STDERR: carrier for name in self._stderr_of}}

    def declare_metric(self, entry: Mapping[str, Any]) -> None:
        """List a metric the run turns out to produce (e.g. ``prompt_tokens`` once counted).

        Called before any sample is scored, so lm-eval aggregates it and dumps it in the
        task's config like a metric of the YAML.
        """
        name = str(entry["metric"])
        if self.predict_only or name in self.listed_metrics():
            return
        from lm_eval.api.registry import get_aggregation

        self.config.metric_list.append(dict(entry))
        self._metric_fn_list[name] = None
        self._metric_fn_kwargs[name] = {}
        self._aggregation_list[name] = get_aggregation(str(entry["aggregation"]))
        self._higher_is_better[name] = entry.get("higher_is_better")

    def listed_metrics(self) -> list[str]:
        """Names in ``metric_list``, in order."""
        return [str(m["metric"]) for m in self.config.metric_list or []]

    def complete(self, values: Mapping[str, Any], cluster: str) -> dict[str, Any]:
        """``process_results``' return value: every listed metric, then stderr carriers."""
        return metrics.complete_sample(values, self.listed_metrics(), self._stderr_of, cluster)

    # ------------------------------------------------------------- prompts
    def messages(
        self, doc: dict[str, Any], transcript: str | None = None
    ) -> list[prompts.ChatMessage]:
        """Chat messages of a document, with another transcript (section) if given."""
        raise NotImplementedError

    def initial_prompt(self, doc: dict[str, Any]) -> str:
        """The prompt a request is built with."""
        raise NotImplementedError

    def render(self, messages: list[prompts.ChatMessage]) -> str:
        """Render messages as lm-eval asked when building requests.

        With a chat template (``--apply_chat_template``) the model's own template is used,
        otherwise plain text; ``--system_instruction`` is prepended to the system turn.
        """
        system_instruction, chat_template = self._render_args
        if system_instruction:
            if messages and messages[0].role == "system":
                messages = [
                    prompts.ChatMessage(
                        "system", system_instruction + "\n\n" + messages[0].content
                    ),
                    *messages[1:],
                ]
            else:
                messages = [prompts.ChatMessage("system", system_instruction), *messages]
        if chat_template is not None:
            return chat_template([m.as_dict() for m in messages], add_generation_prompt=True)
        return prompts.render_plain(messages)

    def fewshot_context(
        self,
        doc: dict[str, Any],
        num_fewshot: int = 0,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., str] | None = None,
        gen_prefix: str | None = None,
    ) -> str:
        """Build the prompt; ELITR-Bench is zero-shot, so ``num_fewshot`` must be 0."""
        if num_fewshot:
            raise OptionError(f"{self.config.task}: ELITR-Bench is zero-shot; drop --num_fewshot")
        self._render_args = (system_instruction, chat_template if apply_chat_template else None)
        return self.initial_prompt(doc)

    # ------------------------------------------------------------ requests
    def request_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """lm-eval's ``build_all_requests`` arguments, made safe for our prompts.

        The rendering arguments are kept here, not only in ``fewshot_context``: on a
        request-cache hit lm-eval never calls ``fewshot_context``, and a prompt re-rendered
        later (``truncate_middle``, chunks, multi-turn) must still get the chat template
        and ``--system_instruction``. lm-eval's cache key names the task, few-shot count,
        chat-template flag, system instruction and tokenizer, but none of our
        ``--metadata`` options; the key's free-form ``tokenizer_name`` part therefore gets
        :meth:`prompt_fingerprint`. With ``--samples`` the cache is not used: lm-eval
        reads it back without applying ``--samples`` (and writes only the selected
        documents into it), which would pair answers with other questions.
        """
        self._render_args = (
            kwargs.get("system_instruction"),
            kwargs.get("chat_template") if kwargs.get("apply_chat_template") else None,
        )
        if not kwargs.get("cache_requests"):
            return kwargs
        if kwargs.get("samples"):
            log.warning(
                "%s: --cache_requests is not used with --samples (lm-eval's request cache "
                "ignores --samples); requests are built afresh",
                self.config.task,
            )
            return {**kwargs, "cache_requests": False, "rewrite_requests_cache": False}
        name = f"{kwargs.get('tokenizer_name') or ''}-elitr{self.prompt_fingerprint()}"
        return {**kwargs, "tokenizer_name": name}

    def prompt_fingerprint(self) -> str:
        """A hash of everything our prompts depend on beyond lm-eval's own cache key.

        The package version, the task's options (``--metadata``), the generation
        arguments (the context budget), every (noisy) transcript and document, and one
        rendered prompt (chat template and system instruction included).
        """
        from elitr_bench import __version__

        docs = list(self.dataset[self.config.test_split])
        probe = self.render(self.messages(docs[0], "TRANSCRIPT")) if docs else ""
        digest = hashlib.sha256()
        for part in (
            __version__,
            type(self).__name__,
            repr(self.options),
            json.dumps(self.config.generation_kwargs, sort_keys=True, default=str),
            json.dumps(sorted(self._transcripts.items())),
            # the retrieval time varies from run to run; the passages do not
            json.dumps(
                [{k: v for k, v in d.items() if k != "retrieval_s"} for d in docs],
                sort_keys=True,
                default=str,
            ),
            str(probe),
        ):
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()[:16]


class ElitrQATask(LmEvalContract, ConfigurableTask):
    """Single-turn ELITR-Bench question answering over one meeting transcript.

    The YAML chooses the question set (``dataset_name``: ``qa``/``conv``), the split
    (``test_split``: ``dev``/``test2``) and the mode (``dataset_kwargs.mode``).
    """

    #: What the task judges: the start-up judge check reads it from the class a task's YAML
    #: names (``class:``), so a task from an ``--include_path`` folder that reuses this class
    #: is checked like ours.
    task_kind: ClassVar[str] = "qa"

    def __init__(
        self,
        data_dir: str | None = None,
        cache_dir: str | None = None,
        download_mode: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        cfg = {k: v for k, v in (config or {}).items() if k != "class"}
        self.options = TaskOptions.from_metadata(cfg.get("metadata"))
        self.setting = cast(Setting, self._pick(cfg, "dataset_name", SETTINGS))
        self.split = cast(Split, self._pick(cfg, "test_split", SPLITS))
        dataset_kwargs = cfg.get("dataset_kwargs") or {}
        mode = dataset_kwargs.get("mode", "st")
        self.mode = cast(Mode, mode if mode in MODES else "st")
        self.target_wer = self._target_wer(cfg, dataset_kwargs.get("wer"))
        self.retrieval = self._retrieval(cfg, dataset_kwargs.get("retrieval"))
        self._transcripts: dict[str, str] = {}
        #: Each question's retrieved passages (retrieval tasks), by document.
        self._passages: dict[DocKey, str] = {}
        self._budgeted = False
        #: Transcript tokens each meeting keeps under ``context_budget`` (its cut's tokens).
        self._kept: dict[str, int] = {}
        self._prompt_tokens: dict[DocKey, int] = {}
        self._overlength: dict[DocKey, str] = {}
        self._held_back: list[Any] = []
        #: (--system_instruction, chat template or None), as lm-eval builds requests.
        self._render_args: tuple[str | None, Callable[..., str] | None] = (None, None)
        self.judge_spec, self.judge_config = judge_for(cfg.get("metadata") or {})
        # Recorded in the results file: what the scores depend on (no credentials).
        identity = self.judge_config.identity() if self.judge_config else {"backend": "none"}
        cfg["metadata"] = {**scrub(cfg.get("metadata") or {}), "judge_identity": identity}
        cfg["filter_list"] = [
            {
                "name": judge_filter_name(identity),  # the key says who judged
                "filter": [
                    {"function": "take_first"},
                    {"function": JUDGE_FILTER, "judge": self.judge_spec},
                ],
            }
        ]
        # Our process_results computes every metric; saying so in the config stops
        # lm-eval from looking metric names up in HF `evaluate` (a network call).
        cfg["process_results"] = type(self).process_results
        cfg["metric_list"] = with_score_metric(  # lexical writes lexical_score
            metrics.qa_metric_list(
                judged=self.judge_config is not None, noisy=self.target_wer is not None
            ),
            identity.get("backend"),
        )
        self._stderr_of = metrics.clustered(cfg["metric_list"])
        self._selected_docs: datasets.Dataset | None = None
        # lm-eval ignores --num_fewshot silently for a task whose config says 0; leaving
        # it unset makes lm-eval hand the value to set_config, which refuses it.
        cfg.pop("num_fewshot", None)
        super().__init__(
            data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=cfg
        )

    def _target_wer(self, cfg: dict[str, Any], fixed: Any) -> float | None:
        """The task's noise level: fixed by a ``elitr_qa_werNN`` task, else ``--metadata wer``."""
        if fixed is None:
            return self.options.wer
        if self.options.wer is not None and abs(self.options.wer - float(fixed)) > 1e-9:
            raise OptionError(
                f"task {cfg.get('task')} has a fixed WER of {fixed}; --metadata "
                f"wer={self.options.wer} applies to the clean tasks (elitr_qa_dev/test) only"
            )
        return float(fixed)

    def _retrieval(self, cfg: dict[str, Any], method: Any) -> str | None:
        """The YAML's ``dataset_kwargs.retrieval`` (``bm25``), or None for the whole transcript."""
        if method is None:
            return None
        from elitr_bench.tasks.retrieval import METHODS, check_chunk

        if str(method) not in METHODS:
            raise OptionError(
                f"task {cfg.get('task')}: dataset_kwargs.retrieval={method!r} in its YAML, "
                f"expected one of {METHODS}"
            )
        check_chunk(self.options.rag_budget, self.options.rag_chunk)
        return str(method)

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        """lm-eval's config setter; refuses ``--num_fewshot`` > 0 (the benchmark is zero-shot)."""
        if key == "num_fewshot" and value:
            raise OptionError(
                f"{self.config.task}: ELITR-Bench is zero-shot (the paper's setting); "
                f"drop --num_fewshot {value} or pass --num_fewshot 0"
            )
        super().set_config(key, value, update=update)

    @staticmethod
    def _pick(cfg: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
        value = cfg.get(key)
        if value not in allowed:
            raise OptionError(
                f"task {cfg.get('task')}: {key}={value!r} in its YAML, expected one of {allowed}"
            )
        return str(value)

    # ------------------------------------------------------------------ data
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Build the documents from the pinned ELITR-Bench files (no HF hub access)."""
        bench = load_benchmark()
        questions = bench.questions(self.setting, self.split)
        self._transcripts = {
            q.meeting_id: bench.meetings[q.meeting_id].transcript for q in questions
        }
        other: Setting = "conv" if self.setting == "qa" else "qa"
        other_text = {
            (q.meeting_id, q.question_id): q.question for q in bench.questions(other, self.split)
        }
        docs = [
            question_doc(q, self.mode, other_text[(q.meeting_id, q.question_id)] != q.question)
            for q in questions
        ]
        if self.target_wer is not None:
            self._add_noise(docs)
        self.dataset = datasets.DatasetDict({self.split: datasets.Dataset.from_list(docs)})

    def _add_noise(self, docs: list[dict[str, Any]]) -> None:
        """Swap in noisy transcripts (generated on first use, then cached on disk).

        The documents record the target and the achieved WER of their meeting, the
        seed and the rules hash, so results stay traceable to the exact noise.
        """
        from elitr_bench.noise import noisy_transcript

        assert self.target_wer is not None
        achieved: dict[str, Any] = {}
        for meeting_id, clean in sorted(self._transcripts.items()):
            noisy = noisy_transcript(
                clean, self.target_wer, seed=self.options.noise_seed, rules=self.options.noise_rules
            )
            self._transcripts[meeting_id] = noisy.text
            achieved[meeting_id] = noisy
        for doc in docs:
            record_noise(doc, achieved[doc["meeting_id"]])

    def full_docs(self) -> datasets.Dataset:
        """Every question of the split, whatever ``differing_only`` selects."""
        return self.dataset[self.split]

    def test_docs(self) -> datasets.Dataset:
        """The questions this run asks and logs.

        All of them, or with ``differing_only`` those whose QA and Conv wordings differ
        (App. C.2). The others are not asked at all (single-turn) or asked only as
        conversation context (multi-turn), and never logged: every logged sample is scored.
        """
        full = self.full_docs()
        if not self.options.differing_only:
            return full
        if self._selected_docs is None:
            keep = [i for i, doc in enumerate(full) if doc["differs_in_conv"]]
            self._selected_docs = full.select(keep)
        return self._selected_docs

    def transcript(self, doc: dict[str, Any]) -> str:
        """Transcript the document's question is asked about (retrieval: its passages)."""
        passages = self._passages.get(doc_key(doc))
        return passages if passages is not None else self._transcripts[str(doc["meeting_id"])]

    def cut_group(self, doc: dict[str, Any]) -> str:
        """Documents that share one transcript cut: a meeting's (retrieval: one question)."""
        meeting = str(doc["meeting_id"])
        return f"{meeting}/{doc['question_id']}" if self.retrieval else meeting

    # ---------------------------------------------------- budget and retrieval
    def prepare_context(self, counter: context.ModelTokenizer | None) -> None:
        """Apply ``context_budget`` or retrieve passages, before any prompt is built.

        The results record what the prompts were built from: the model's window
        (``context_window``), the budget, and the retrieval settings; the documents record
        each question's passages (turn ranges), their tokens and the retrieval time. Under
        a budget every sample records ``transcript_tokens``, the tokens its meeting's cut
        kept (the results their mean): the score-versus-context curve plots those.
        """
        meta = self.config.metadata if isinstance(self.config.metadata, dict) else {}
        if counter is not None:
            meta["context_window"] = counter.max_length
        budget = self.options.context_budget
        if budget is not None and self.retrieval:
            # one --metadata for elitr_qa and elitr_qa_rag compares them at one budget
            log.info(
                "%s retrieves passages: context_budget does not apply, rag_budget=%d does",
                self.config.task,
                self.options.rag_budget,
            )
        elif budget is not None and not self._budgeted:
            if counter is None:
                raise OptionError(
                    f"{self.config.task}: --metadata context_budget counts tokens with the "
                    "model's tokenizer, which lm-eval does not expose for API models; run a "
                    "local model (--model hf, vllm or hf-prefix) or drop context_budget"
                )
            self._transcripts = {
                m: context.budget_cut(counter, text, budget)
                for m, text in self._transcripts.items()
            }
            self._kept = {m: counter.count(text) for m, text in self._transcripts.items()}
            self._budgeted = True
            meta["context_budget"] = budget
        if self._kept:
            self.declare_metric(metrics.TRANSCRIPT_TOKENS)
        if self.retrieval and not self._passages:
            self._retrieve(counter)
            meta["retrieval"] = {
                "method": self.retrieval,
                "rag_budget": self.options.rag_budget,
                "rag_chunk": self.options.rag_chunk,
                "tokens": "model"
                if counter is not None
                else f"approximate ({CHARS_PER_TOKEN} characters/token)",
            }

    def _retrieve(self, counter: context.ModelTokenizer | None) -> None:
        """Retrieve every question's passages and record them in its document."""
        from elitr_bench.tasks import retrieval

        if counter is not None:
            encode = counter.encode

            def count(text: str) -> int:
                return len(encode(text))
        else:
            log.warning(
                "%s: the model's tokenizer is unknown (API model): rag_budget and rag_chunk "
                "count about %d characters per token",
                self.config.task,
                CHARS_PER_TOKEN,
            )
            count = retrieval.approximate_tokens
        indexes = {
            m: retrieval.MeetingIndex(text, count, self.options.rag_chunk)
            for m, text in sorted(self._transcripts.items())
        }
        retrieval.check_budget(indexes, self.options.rag_budget)
        docs = []
        for doc in self.dataset[self.split]:
            got = indexes[str(doc["meeting_id"])].retrieve(
                str(doc["question"]), self.options.rag_budget
            )
            self._passages[doc_key(doc)] = got.text
            docs.append(
                {
                    **doc,
                    "rag_passages": [list(t) for t in got.turns],
                    "rag_tokens": got.tokens,
                    "retrieval_s": round(got.seconds, 6),
                }
            )
        self.dataset = datasets.DatasetDict({self.split: datasets.Dataset.from_list(docs)})
        self._selected_docs = None

    # ---------------------------------------------------------------- prompts
    def messages(
        self, doc: dict[str, Any], transcript: str | None = None
    ) -> list[prompts.ChatMessage]:
        """Chat messages for one document (single-turn: Fig. 5 plus the question)."""
        return prompts.conversation(
            self.transcript(doc) if transcript is None else transcript,
            [str(doc["question"])],
            [],
            prompt_role=self.options.prompt_role,
            qa_markers=self.options.qa_markers,
        )

    def initial_prompt(self, doc: dict[str, Any]) -> str:
        """The prompt a request is built with (single-turn: its final prompt)."""
        return self.render(self.messages(doc))

    # ------------------------------------------------------- context checks
    def build_all_requests(self, **kwargs: Any) -> None:
        """Check the judge is usable, build requests as lm-eval does, fit them to the context.

        The start-up hook checked the judge before lm-eval built the model
        (:mod:`elitr_bench.tasks.preflight`); the check is repeated here, after
        ``--predict_only`` is known and before any generation, for ``evaluate()`` callers
        and runs without the hook (the preflight request is sent once per process).
        """
        if not self.predict_only and self.judge_config is not None:
            from elitr_bench.judges import check_judge_ready
            from elitr_bench.tasks.replay_fit import alternatives, check_replay_fits

            lm = context.active_model()
            check_replay_fits(self.judge_config, lm)
            check_judge_ready(self.judge_config, network=True, alternative=alternatives("qa", lm))
        counter = context.token_counter(context.active_model())
        self.prepare_context(counter)
        super().build_all_requests(**self.request_kwargs(kwargs))
        if counter is None:
            return
        self.declare_metric(metrics.PROMPT_TOKENS)
        self._other_ranks = self._docs_of_other_ranks(kwargs)
        self._fit_to_context(counter)

    def _docs_of_other_ranks(self, kwargs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """The run's documents that other ranks ask about, by meeting ({} in one process).

        Under ``accelerate launch`` lm-eval deals a single-turn task's documents out
        across ranks; a meeting's transcript cut (``truncate_middle``) must still be sized
        for all of its questions in the run, or prompts (and answers) would depend on the
        number of processes.
        """
        if int(kwargs.get("world_size") or 1) <= 1:
            return {}
        mine = {doc_key(inst.doc) for inst in getattr(self, "_instances", None) or []}
        everyone = self.doc_iterator(
            rank=0, limit=kwargs.get("limit"), world_size=1, samples=kwargs.get("samples")
        )
        others: dict[str, list[dict[str, Any]]] = {}
        for _, doc in everyone:
            if doc_key(doc) not in mine:
                others.setdefault(self.cut_group(doc), []).append(doc)
        return others

    def _excess(self, inst: Any, counter: context.ModelTokenizer) -> int:
        """Tokens by which a request's prompt overruns its budget (<= 0: it fits)."""
        n_tokens = len(counter.encode(inst.args[0]))
        self._prompt_tokens[doc_key(inst.doc)] = n_tokens
        return n_tokens - counter.budget(inst.args[1])

    def fit_instance(self, inst: Any, counter: context.ModelTokenizer) -> str:
        """Apply the overlength policy to one request; returns its status.

        Returns:
            ``ok`` (fits), ``over`` (too long, policy ``error``: the caller raises),
            ``skipped`` or ``truncated`` (its prompt now has the transcript's middle cut).
        """
        excess = self._excess(inst, counter)
        if excess <= 0:
            return "ok"
        if self.options.overlength == "error":
            return "over"
        if self.options.overlength == "skip":
            self._overlength[doc_key(inst.doc)] = "skipped"
            return "skipped"
        self._cut_to_fit([inst], counter)
        return "truncated"

    def _fit_to_context(self, counter: context.ModelTokenizer) -> None:
        over: list[tuple[str, int]] = []
        keep: list[Any] = []
        instances: list[Any] = list(getattr(self, "_instances", None) or [])
        by_meeting: dict[str, list[Any]] = {}
        for inst in instances:
            by_meeting.setdefault(self.cut_group(inst.doc), []).append(inst)
        for meeting_id, insts in by_meeting.items():
            excess = {id(i): self._excess(i, counter) for i in insts}
            worst = max(excess.values())
            if self.options.overlength == "truncate_middle":  # other ranks' questions too
                budget = counter.budget(insts[0].args[1])
                for doc in self._peers(meeting_id):
                    n_tokens = len(counter.encode(self.initial_prompt(doc)))
                    worst = max(worst, n_tokens - budget)
            if worst <= 0:
                keep += insts
            elif self.options.overlength == "error":
                over += [
                    (str(i.doc["meeting_id"]), self._prompt_tokens[doc_key(i.doc)])
                    for i in insts
                    if excess[id(i)] > 0
                ]
            elif self.options.overlength == "skip":
                for inst in insts:
                    if excess[id(inst)] > 0:
                        self._overlength[doc_key(inst.doc)] = "skipped"
                        self._held_back.append(inst)
                    else:
                        keep.append(inst)
            else:  # truncate_middle: one cut per meeting, sized for its longest prompt
                self._cut_to_fit(insts, counter, self._peers(meeting_id))
                keep += insts
        if over:
            raise context.ContextLengthError(
                context.overlength_message(
                    str(self.config.task), over, counter.max_length, counter.positions
                )
            )
        if not keep:
            raise context.ContextLengthError(
                f"{self.config.task}: every prompt exceeds the model's context of "
                f"{counter.max_length} tokens and overlength=skip left nothing to run"
            )
        kept = {id(inst) for inst in keep}
        self._instances = [inst for inst in instances if id(inst) in kept]
        if self._overlength:
            log.warning(
                "%s: %d prompt(s) over the context were %s",
                self.config.task,
                len(self._overlength),
                self.options.overlength,
            )

    def _peers(self, meeting_id: str) -> list[dict[str, Any]]:
        return getattr(self, "_other_ranks", {}).get(meeting_id, [])

    def _cut_to_fit(
        self,
        insts: list[Any],
        counter: context.ModelTokenizer,
        peers: list[dict[str, Any]] | None = None,
    ) -> None:
        """Cut the middle of the requests' shared transcript until every prompt fits.

        All requests of a meeting get the same cut transcript, so they see the same
        context and keep a common prefix (which ``hf-prefix`` and vLLM reuse); ``peers``
        (the meeting's documents on other ranks) must fit it too, so that every rank
        cuts alike.
        """
        budget = counter.budget(insts[0].args[1])
        built: dict[str, list[tuple[str, int]]] = {}

        def excess(cut: str) -> int:
            mine = [self.render(self.messages(inst.doc, cut)) for inst in insts]
            built[cut] = [(p, counter.count(p)) for p in mine]
            others = [counter.count(self.render(self.messages(d, cut))) for d in peers or []]
            return max(
                [n - counter.budget(i.args[1]) for (_, n), i in zip(built[cut], insts, strict=True)]
                + [n - budget for n in others]
            )

        cut = context.fit_middle(counter, self.transcript(insts[0].doc), excess)
        if cut is None:
            raise context.ContextLengthError(
                f"{self.config.task}: cannot fit {insts[0].doc['meeting_id']} into the model's "
                f"{counter.max_length} tokens even after cutting its transcript; raise "
                "max_length or lower max_gen_toks"
            )
        for inst, (prompt, n) in zip(insts, built[cut], strict=True):
            inst.arguments = (prompt, inst.args[1])
            self._overlength[doc_key(inst.doc)] = "truncated"
            self._prompt_tokens[doc_key(inst.doc)] = n

    def apply_filters(self) -> list[Any] | None:
        """Put skipped requests back (with an empty answer) before lm-eval scores them.

        lm-eval 0.4.x collects ``task.instances`` for the model right after
        ``build_all_requests`` but expects one request per document when it logs
        samples, so skipped requests are held back from the model and returned here.
        """
        if self._held_back:
            for inst in self._held_back:
                if not inst.resps:  # skipped: never sent to the model
                    inst.resps = [""] * (inst.repeats or 1)
            current: list[Any] = list(getattr(self, "_instances", None) or [])
            self._instances = sorted([*current, *self._held_back], key=lambda i: (i.doc_id, i.idx))
            self._held_back = []
        if self.predict_only:  # --predict_only: keep the answers, skip the paid judge
            from lm_eval.filters import build_filter_ensemble

            self._filters = [build_filter_ensemble("none", [["take_first", None]])]
        result = super().apply_filters()
        if not self.predict_only and self.judge_config is not None:
            self._record_judge_usage()
        return result

    def _record_judge_usage(self) -> None:
        """Put the judge's token usage and estimated cost into the results file.

        lm-eval dumps task configs after scoring, so metadata set here lands in the
        ``configs`` section of ``results_*.json`` next to the judge's identity.
        """
        from elitr_bench.judges.qa.lm_eval_filter import last_run

        run = last_run()
        if run is not None and isinstance(self.config.metadata, dict):
            summary = dict(run.summary)
            if "judge_score_stderr" in summary:
                # s/sqrt(n), as if answers were independent; the results' judge_score_stderr
                # is the meeting-clustered one. One name per quantity.
                summary[INDEPENDENT_STDERR] = summary.pop("judge_score_stderr")
            self.config.metadata["judge_usage"] = {
                **run.usage,
                "seconds": round(run.elapsed_s, 3),
                **summary,
            }

    # --------------------------------------------------------------- scoring
    def process_results(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        """Every listed metric of one question (``None`` where it has none).

        A skipped prompt has no answer, so no F1, ROUGE or judge score; it counts in
        ``overlength_skipped``. Under ``--predict_only`` this returns what lm-eval's own
        tasks return there (``bypass``), so no metric is computed or aggregated.
        """
        if self.predict_only:
            return {"bypass": None}
        key = doc_key(doc)
        status = self._overlength.get(key)
        values: dict[str, Any] = {
            "overlength_skipped": float(status == "skipped" or not results),
            "overlength_truncated": float(status == "truncated"),
            "effective_wer": doc.get("effective_wer"),
            "prompt_tokens": self._prompt_tokens.get(key),
            "transcript_tokens": self._kept.get(str(doc["meeting_id"])),
        }
        if self.judge_config is not None:
            values.update({JUDGE_UNSCORED: 0.0, JUDGE_ERRORS: 0.0, JUDGE_FORMAT_IN_ANSWER: 0.0})
        if status != "skipped" and results:
            values.update(self._answer_metrics(doc, results[0]))
        return self.complete(values, str(doc["meeting_id"]))

    def _answer_metrics(self, doc: dict[str, Any], response: Any) -> dict[str, float]:
        """F1 and ROUGE-L against the reference, and the judge's metrics when judged."""
        from elitr_bench.judges import judge_metrics
        from elitr_bench.judges.metrics import parse_filtered

        judged = parse_filtered(response)
        if judged is not None and not {"response", "judge"} <= judged.keys():
            judged = None  # a model answer that happens to look like a dict
        text = str(judged["response"]) if judged is not None else str(response)
        values = {
            "f1": token_f1(text, str(doc["answer"])),
            "rouge_l": rouge_l(text, str(doc["answer"])),
        }
        if judged is not None and self.judge_config is not None:
            values.update(judge_metrics(judged))
        return values
