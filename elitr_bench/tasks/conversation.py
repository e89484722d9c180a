"""Multi-turn ELITR tasks: all questions of a meeting in one conversation.

The model's *own* earlier answers form the history (paper Sec. 4-5), so turn k cannot
be built before turn k-1 is answered. lm-eval 0.4.x builds every request before any
generation and calls each model method once, so a stock task cannot express this
(upstream #2179 was declined). We chose a task-side driver over a wrapper model so
that users keep typing the stock ``--model hf|vllm|local-chat-completions|...``:

1. ``build_all_requests`` builds one request per question as usual, then holds them
   all back from lm-eval's single model call (``task.instances`` is empty while the
   evaluator collects requests) and registers the task with the model that
   ``evaluate()`` is running.
2. When lm-eval reaches the first multi-turn task's ``apply_filters`` (after its model
   call), the driver plays every registered conversation of every multi-turn task
   turn by turn: turn k of all meetings goes to the model in one ``generate_until``
   call, so a run makes as many calls as its longest conversation has turns, and
   nothing is generated twice.
3. The answered requests are handed back to lm-eval, which filters (judges), scores
   and logs them like single-turn ones: one record per question.

Limits: this relies on lm-eval's ``evaluate()`` calling ``task.build_all_requests``
and later ``task.apply_filters`` (checked for lm-eval 0.4.13..0.4.x; anything else
fails with a clear message); ``--cache_requests`` is ignored for multi-turn tasks, and
``repeats`` must be 1. With ``--metadata history=gold`` the history is the reference
answers, every prompt is known up front, and the stock single-call path is used.

``--samples``, ``--limit`` and ``differing_only`` choose which questions are logged, not
which conversation they are asked in: the earlier turns of every chosen question are
played too (as requests lm-eval never sees), so turn k always follows turns 1..k-1.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from tqdm.auto import tqdm

from elitr_bench import prompts
from elitr_bench.tasks import context
from elitr_bench.tasks.options import OptionError
from elitr_bench.tasks.task import ElitrQATask, doc_key

log = logging.getLogger(__name__)

#: Multi-turn tasks waiting for their conversations, by ``id()`` of the running model.
_PENDING: dict[int, list[ConversationTask]] = defaultdict(list)

TESTED_LM_EVAL = ">=0.4.13,<0.5"
#: Stand-in prompt of a request whose turn has not been played yet.
PENDING_PROMPT = "<elitr: rendered when this turn is played>"


class ConversationTask(ElitrQATask):
    """ELITR-Bench in multi-turn mode (``elitr_qa_mt_*`` and ``elitr_conv_*``)."""

    def __init__(
        self,
        data_dir: str | None = None,
        cache_dir: str | None = None,
        download_mode: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(data_dir, cache_dir, download_mode, config)
        #: Answers given so far in each meeting's conversation (the history).
        self._history: dict[str, list[str]] = defaultdict(list)
        #: The one transcript cut of each conversation (None: it fits uncut).
        self._cuts: dict[str, str | None] = {}
        #: Questions of each meeting in conversation order up to the last one this run
        #: logs, the earlier ones included even when --samples/--limit/differing_only
        #: leave them out of the log: they are the conversation's context.
        self._order: dict[str, list[dict[str, Any]]] = {}
        self._waiting: list[Any] = []
        #: ``id()`` of requests played only as context (answered, never logged).
        self._context_only: set[int] = set()
        self._lm: Any = None
        if int(self.config.repeats or 1) != 1:
            raise OptionError(f"{self.config.task}: multi-turn tasks need repeats=1")

    # ----------------------------------------------------------- documents
    def doc_iterator(
        self,
        *,
        rank: int = 0,
        limit: int | None = None,
        world_size: int = 1,
        samples: list[int] | None = None,
    ) -> Any:
        """Documents of this rank: whole meetings, never a conversation split across ranks."""
        docs = list(self.eval_docs)
        if samples:
            chosen = list(enumerate(d for i, d in enumerate(docs) if i in samples))
        else:
            chosen = list(enumerate(docs))[: int(limit) if limit else None]
        if world_size > 1:
            meetings = list(dict.fromkeys(d["meeting_id"] for _, d in chosen))
            mine = {m for i, m in enumerate(meetings) if i % world_size == rank}
            chosen = [(i, d) for i, d in chosen if d["meeting_id"] in mine]
        return iter(chosen)

    # ------------------------------------------------------------- prompts
    def messages(
        self, doc: dict[str, Any], transcript: str | None = None
    ) -> list[prompts.ChatMessage]:
        """Fig. 5, the earlier questions with their answers, then this question."""
        meeting = str(doc["meeting_id"])
        earlier = [d for d in self._order.get(meeting, []) if d["turn"] < doc["turn"]]
        if self.options.history == "gold":
            answers = [str(d["answer"]) for d in earlier]
        else:
            answers = self._history[meeting][: len(earlier)]
            if len(answers) < len(earlier):
                raise RuntimeError(f"{meeting}: turn {doc['turn']} built before its history")
        return prompts.conversation(
            self.transcript(doc) if transcript is None else transcript,
            [str(d["question"]) for d in earlier] + [str(doc["question"])],
            answers,
            prompt_role=self.options.prompt_role,
            qa_markers=self.options.qa_markers,
        )

    # ------------------------------------------------------------ requests
    def initial_prompt(self, doc: dict[str, Any]) -> str:
        """With the model's own history, the prompt is rendered when its turn is played."""
        if self.options.history == "gold":
            return super().initial_prompt(doc)
        return PENDING_PROMPT

    def build_all_requests(self, **kwargs: Any) -> None:
        """Build requests, then hold them back for the turn-by-turn driver."""
        self._order = self._conversation_order(kwargs)
        if self.options.history == "gold":  # every prompt is known now: stock path
            super().build_all_requests(**kwargs)
            return
        lm = context.active_model()
        if lm is None:
            import lm_eval

            raise RuntimeError(
                f"{self.config.task}: multi-turn tasks must run inside lm-eval's evaluate() "
                f"(tested with lm-eval {TESTED_LM_EVAL}; this is "
                f"{getattr(lm_eval, '__version__', 'unknown')}); use "
                """--metadata '{"history": "gold"}' or a tested lm-eval release"""
            )
        kwargs["cache_requests"] = False
        super().build_all_requests(**kwargs)
        logged = list(getattr(self, "_instances", None) or [])
        context_turns = self._context_requests(logged)
        self._context_only = {id(inst) for inst in context_turns}
        self._waiting = logged + context_turns
        self._instances = []
        self._lm = lm
        self._check_first_turns(context.token_counter(lm))
        _PENDING[id(lm)].append(self)

    def _check_first_turns(self, counter: context.ModelTokenizer | None) -> None:
        """Fail before any generation when a conversation cannot even start.

        Conversations are played after every other task of the run has generated; an
        over-long first turn found only then would waste all that work.
        """
        if counter is None or self.options.overlength != "error":
            return
        over = []
        for conversation in self.conversations():
            first = conversation[0]
            if self.prepare_turn(first, counter) == "over":
                over.append((str(first.doc["meeting_id"]), self.prompt_tokens(first)))
        if over:
            raise context.ContextLengthError(
                context.overlength_message(
                    f"{self.config.task} (turn 1)", over, counter.max_length, counter.positions
                )
            )

    def _conversation_order(self, kwargs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """Each meeting's questions from turn 1 to the last turn this run logs.

        ``--samples``, ``--limit`` and ``differing_only`` choose which questions are
        logged; a chosen turn k is still asked after turns 1..k-1 of its conversation,
        so its prompt is the multi-turn prompt of the full benchmark.
        """
        iterator = self.doc_iterator(
            rank=kwargs.get("rank", 0),
            limit=kwargs.get("limit"),
            world_size=kwargs.get("world_size", 1),
            samples=kwargs.get("samples"),
        )
        last: dict[str, int] = {}
        for _, doc in iterator:
            meeting = str(doc["meeting_id"])
            last[meeting] = max(int(doc["turn"]), last.get(meeting, 0))
        order: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for doc in self.full_docs():
            meeting = str(doc["meeting_id"])
            if meeting in last and int(doc["turn"]) <= last[meeting]:
                order[meeting].append(doc)
        for docs in order.values():
            docs.sort(key=lambda d: int(d["turn"]))
        return dict(order)

    def _context_requests(self, logged: list[Any]) -> list[Any]:
        """Requests for the earlier turns the run plays but does not log.

        They carry ``doc_id`` -1 and never reach lm-eval: :meth:`apply_filters` hands
        back only the logged requests, so lm-eval scores and logs exactly the chosen
        questions.
        """
        chosen = {doc_key(inst.doc) for inst in logged}
        extra = [
            self.construct_requests(doc=doc, ctx=PENDING_PROMPT, metadata=(self.config.task, -1, 1))
            for docs in self._order.values()
            for doc in docs
            if doc_key(doc) not in chosen
        ]
        if extra:
            log.info(
                "%s: %d earlier turn(s) are played as conversation context and not logged",
                self.config.task,
                len(extra),
            )
        return extra

    def _fit_to_context(self, counter: context.ModelTokenizer) -> None:
        # Multi-turn prompts grow with the answers: they are fitted turn by turn.
        if self.options.history == "gold":
            super()._fit_to_context(counter)

    def conversations(self) -> list[list[Any]]:
        """Held-back requests grouped by meeting, in turn order."""
        by_meeting: dict[str, list[Any]] = defaultdict(list)
        for inst in self._waiting:
            by_meeting[str(inst.doc["meeting_id"])].append(inst)
        return [sorted(v, key=lambda i: int(i.doc["turn"])) for _, v in sorted(by_meeting.items())]

    def prepare_turn(self, inst: Any, counter: context.ModelTokenizer | None) -> str:
        """Render a request from its conversation so far; returns its overlength status.

        With ``overlength=truncate_middle`` the transcript is cut once per conversation
        (:meth:`conversation_cut`), so every turn sees the same transcript, turn k's prompt
        is a prefix of turn k+1's and ``hf-prefix`` / vLLM reuse it instead of prefilling
        a transcript cut differently at each turn.
        """
        if counter is not None and self.options.overlength == "truncate_middle":
            meeting = str(inst.doc["meeting_id"])
            if meeting not in self._cuts:
                self._cuts[meeting] = self.conversation_cut(inst, counter)
            cut = self._cuts[meeting]
            if cut is not None:
                prompt = self.render(self.messages(inst.doc, cut))
                n_tokens = len(counter.encode(prompt))
                if n_tokens <= counter.budget(inst.args[1]):
                    inst.arguments = (prompt, inst.args[1])
                    self._prompt_tokens[doc_key(inst.doc)] = n_tokens
                    self._overlength[doc_key(inst.doc)] = "truncated"
                    return "truncated"
        inst.arguments = (self.render(self.messages(inst.doc)), inst.args[1])
        if counter is None:
            return "ok"
        return self.fit_instance(inst, counter)

    def conversation_cut(self, inst: Any, counter: context.ModelTokenizer) -> str | None:
        """The one transcript cut of a conversation, or None when the whole one fits.

        Sized for the conversation's longest prompt: its last turn, with every earlier
        answer assumed as long as ``max_gen_toks`` allows (answers are not known before
        they are generated). None also when even that cannot fit: the turns are then
        fitted one by one, as before.
        """
        meeting = str(inst.doc["meeting_id"])
        docs = self._order.get(meeting) or [inst.doc]
        questions = [str(d["question"]) for d in docs]
        budget = counter.budget(inst.args[1])
        max_gen = counter.max_length - budget
        filler = " the" * max_gen
        while len(counter.encode(filler)) < max_gen:
            filler += " the"

        def longest(transcript: str) -> int:
            messages = prompts.conversation(
                transcript,
                questions,
                [filler] * (len(questions) - 1),
                prompt_role=self.options.prompt_role,
                qa_markers=self.options.qa_markers,
            )
            return len(counter.encode(self.render(messages))) - budget

        transcript = self.transcript(inst.doc)
        if longest(transcript) <= 0:
            return None
        return context.fit_middle(counter, transcript, longest)

    def skip(self, inst: Any) -> None:
        """Leave a turn unanswered because its conversation no longer fits the model."""
        self._overlength[doc_key(inst.doc)] = "skipped"

    def prompt_tokens(self, inst: Any) -> int:
        """Token count of a request's prompt, as last measured."""
        return self._prompt_tokens.get(doc_key(inst.doc), 0)

    def record(self, inst: Any, answer: str) -> None:
        """Keep an answer as the response and as history for the next turn."""
        inst.resps = [answer]
        self._history[str(inst.doc["meeting_id"])].append(answer.strip())

    def apply_filters(self) -> list[Any] | None:
        """Play the conversations (once per run), then filter and judge as usual."""
        if self._waiting:
            run_conversations(self._lm)
            self._held_back.extend(i for i in self._waiting if id(i) not in self._context_only)
            self._waiting = []
        return super().apply_filters()


def run_conversations(lm: Any) -> None:
    """Play every pending conversation of ``lm``'s run, one model call per turn.

    All multi-turn tasks of the run advance together, so turn k of every meeting of
    every task is one batch (which also lets vLLM and ``hf-prefix`` reuse the cached
    history of each conversation).
    """
    tasks = _PENDING.pop(id(lm), [])
    if not tasks:
        return
    counter = context.token_counter(lm)
    threads = [(task, conv) for task in tasks for conv in task.conversations()]
    ended: set[int] = set()
    turns = max((len(conv) for _, conv in threads), default=0)
    for turn in tqdm(range(turns), desc="conversation turns", unit="turn"):
        batch: list[tuple[ConversationTask, Any]] = []
        over: list[tuple[ConversationTask, str, int]] = []
        for n, (task, conv) in enumerate(threads):
            if turn >= len(conv):
                continue
            inst = conv[turn]
            if n in ended:
                task.skip(inst)
                continue
            status = task.prepare_turn(inst, counter)
            if status == "over":
                over.append((task, inst.doc["meeting_id"], task.prompt_tokens(inst)))
            elif status == "skipped":
                ended.add(n)  # a longer conversation cannot fit either
                task.skip(inst)
            else:
                batch.append((task, inst))
        if over:
            assert counter is not None
            task = over[0][0]
            raise context.ContextLengthError(
                context.overlength_message(
                    f"{task.config.task} (turn {turn + 1})",
                    [(m, n) for _, m, n in over],
                    counter.max_length,
                    counter.positions,
                )
            )
        if not batch:
            continue
        answers = lm.generate_until([inst for _, inst in batch])
        for (task, inst), answer in zip(batch, answers, strict=True):
            task.record(inst, answer)
