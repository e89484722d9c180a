"""``elitr-bench score`` and ``elitr-bench judge-check``: arguments, output, exit codes.

The work is in :mod:`elitr_bench.scoring` (re-judging logged samples into lm-eval results)
and :mod:`elitr_bench.metaeval.qa` (a judge against the released human scores).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from elitr_bench.cli.budget import add_budget_flags
from elitr_bench.cli_errors import debug_enabled
from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.folder import write_atomic
from elitr_bench.data.run_files import partial_notes, task_of
from elitr_bench.judges.batching import BatchPlan
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import batch_refusal
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.readiness import KEYLESS_JUDGE, check_judge_ready, keyless_alternatives
from elitr_bench.judges.rubrics import RUBRICS
from elitr_bench.judges.summary.budget import check_budget, spending_cap
from elitr_bench.judges.summary.registry import (
    get_method,
    method_selectors,
    minutes_judge_example,
)
from elitr_bench.judges.usage import usage_line
from elitr_bench.llm.batch_files import limits_from_env
from elitr_bench.scoring.minutes import judge_keys, score_minutes_samples
from elitr_bench.scoring.qa import (
    QA_JUDGE_METRICS,
    BatchParked,
    check_qa_fit,
    find_samples,
    generated_runs,
    judge_config_from_args,
    model_of,
    plan_qa_files,
    score_runs,
    split_by_kind,
    tasks_of,
)
from elitr_bench.scoring.rescore import check_tasks


def _score_minutes(
    args: argparse.Namespace, config: JudgeConfig, batch: BatchPlan | None = None
) -> int:
    """``elitr-bench score`` with a minutes judge; exit 3 when the judge failed on some."""
    method = get_method(config)
    names = judge_keys(method)
    errors = 0
    output = Path(args.output) if args.output else None
    try:
        scored = score_minutes_samples(args.paths, config, output, args.include_path, batch)
    except BatchParked as parked:
        return _parked(args, config, parked)
    for target, payload in scored:
        for task in payload["judge_usage"]:
            metrics = payload["results"].get(task, {})
            shown = {k.split(",")[0]: v for k, v in metrics.items() if k.split(",")[0] in names}
            print(f"{task}: {shown}")
            print(f"{task}: {usage_line(payload['judge_usage'][task])}")
            errors += int(payload["judge_usage"][task].get("error", 0))
            for meeting, note in payload["judge_usage"][task].get(method.flag_key, {}).items():
                print(f"{task}: {meeting} flagged: {note}; its judge scores are kept")
        for note in payload.get("rescore_notes", []):
            print(f"score: note: {note}", file=sys.stderr)
        print(f"wrote {target}")
    if errors:
        print(
            f"elitr-bench: error: the minutes judge failed on {errors} item(s) (status 'error' "
            f"in the rescored samples); run the same command again (finished calls are cached)",
            file=sys.stderr,
        )
        return 3
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from elitr_bench.judges.summary.registry import method_name

    config = judge_config_from_args(args.judge, args.rubric)
    judge = config.spec or config.backend
    minutes_judge = method_name(config) is not None
    for note in partial_notes(Path(p) for p in args.paths):
        print(f"score: note: {note}", file=sys.stderr)
    found = find_samples(args.paths)
    tasks = {task_of(path): path for path in found}
    check_tasks(tasks, include_path=args.include_path)  # names first, then contents
    qa_files, minutes_files = split_by_kind(found)
    generated = _refuse_unfit(config, minutes_judge, qa_files, minutes_files)
    # Judge prompts that cannot fit the judge's window stop here, before any request.
    if minutes_judge:
        from elitr_bench.scoring.minutes import check_minutes_fit

        check_minutes_fit([str(f) for f in minutes_files], config)
    else:
        check_qa_fit(qa_files, config)
    alternative = (
        KEYLESS_JUDGE
        if minutes_judge
        else keyless_alternatives(True, "elitr-bench", replay=bool(qa_files) and not generated)
    )
    batch = _batch_plan(args, config)
    offline = batch is not None and batch.mode == "file"  # nothing is sent: no key needed
    if not args.dry_run and not offline:  # a missing key is its one line, not after the plan
        check_judge_ready(config, command="elitr-bench", alternative=alternative)
    # The plan, --dry-run and --max-cost come before any request, the preflight's too.
    if _plan_score(args, config, qa_files if not minutes_judge else [], minutes_files):
        return 0
    if not offline:
        check_judge_ready(config, network=True, command="elitr-bench", alternative=alternative)

    if minutes_judge:  # a minutes judge (issue 11): minutes runs
        if qa_files:
            print(
                f"score: skipping {len(qa_files)} QA samples file(s) ({tasks_of(qa_files)}): "
                f"the minutes judge {judge} scores minutes only; score them with a QA judge "
                "(--judge replay, lexical or openai:gpt-4-0613)",
                file=sys.stderr,
            )
        paths = [str(f) for f in minutes_files]
        return _score_minutes(argparse.Namespace(**{**vars(args), "paths": paths}), config, batch)
    if minutes_files:
        print(
            f"score: skipping {len(minutes_files)} minutes samples file(s) "
            f"({tasks_of(minutes_files)}): the QA judge {judge} scores QA answers only; "
            f"score them with a minutes judge (--judge openai:gpt-4o,{method_selectors()[0]})",
            file=sys.stderr,
        )
    return _score_qa(args, config, qa_files, batch)


def _batch_plan(args: argparse.Namespace, config: JudgeConfig) -> BatchPlan | None:
    """How the run's batches go (None: one by one), from the flags and ``batch=on``.

    Raises:
        JudgeConfigError: A batch flag that does not fit the judge (one line each).
    """
    write = Path(args.batch_write) if args.batch_write else None
    read = Path(args.batch_read) if args.batch_read else None
    refusal = batch_refusal(config.family) if write or read or args.no_wait else None
    if refusal is not None:
        raise JudgeConfigError(f"--batch-write, --batch-read, --no-wait: {refusal}; drop them")
    if write or read:
        if config.backend != "openai":
            raise JudgeConfigError(
                f"--batch-write/--batch-read: the judge {config.spec or config.backend} is "
                "not an openai: judge; batch files hold OpenAI chat requests (use e.g. "
                "--judge openai:MODEL for a model vLLM's run_batch serves)"
            )
        if args.no_wait:
            raise JudgeConfigError("--no-wait: batch files are never waited for; drop it")
        return BatchPlan("file", write, read, limits=limits_from_env())
    if config.batch:
        return BatchPlan("api", wait=not args.no_wait, limits=limits_from_env())
    if args.no_wait:
        raise JudgeConfigError(
            "--no-wait: the judge sends one by one; add batch=on to the judge spec "
            f"(--judge {config.spec or config.backend},batch=on) to submit a batch and exit"
        )
    return None


def _parked(args: argparse.Namespace, config: JudgeConfig, parked: BatchParked) -> int:
    """Say what waits for batches and the command that goes on; status 0."""
    outcome = parked.outcome
    again = ["elitr-bench", "score", *map(str, args.paths), "--judge", config.spec]
    if outcome.written:
        count = sum(1 for path in outcome.written for _ in path.open(encoding="utf-8"))
        for path in outcome.written:
            print(f"wrote batch input {path} (nothing was sent)")
        first = outcome.written[0]
        answered = first.with_name(f"{first.stem}.out{first.suffix}")
        print(
            f"score: {count} judge request(s) wait in {len(outcome.written)} batch file(s); "
            f"answer each, e.g. with vLLM: python -m vllm.entrypoints.openai.run_batch -i "
            f"{first} -o {answered} --model {config.model}",
            file=sys.stderr,
        )
        following = first.with_name(f"{first.stem}.next{first.suffix}")
        command = [*again, "--batch-read", str(answered), "--batch-write", str(following)]
        print(f"then: {shlex.join(command)}", file=sys.stderr)
        return 0
    print(
        f"score: submitted judge batch(es) {', '.join(outcome.submitted)}; they are recorded "
        "in the judge cache and never submitted or paid twice. Collect the replies with: "
        f"{shlex.join(again)}",
        file=sys.stderr,
    )
    return 0


def _refuse_unfit(
    config: JudgeConfig, minutes_judge: bool, qa_files: list[Path], minutes_files: list[Path]
) -> list[Path]:
    """Refuse a judge that fits none of the runs; the QA runs of generated answers.

    Raises:
        JudgeConfigError: A QA judge on minutes only, a minutes judge on QA answers only,
            or replay on answers a model generated.
    """
    judge = config.spec or config.backend
    # Each judge scores the runs it fits and skips the others with a note; it refuses
    # only when nothing fits. A QA judge used to mark every minutes item 'error' and
    # then say "run it again", which could never succeed.
    if not minutes_judge and not qa_files:
        raise JudgeConfigError(
            f"--judge {judge}: a QA judge cannot score minutes ({tasks_of(minutes_files)}); "
            f"use a minutes judge, e.g. --judge {minutes_judge_example()}"
        )
    if minutes_judge and not minutes_files:
        raise JudgeConfigError(
            f"--judge {judge}: a minutes judge cannot score QA answers "
            f"({tasks_of(qa_files)}); use a QA judge, e.g. --judge replay, lexical or "
            "openai:gpt-4-0613"
        )
    # Suggest only judges that can score these runs: replay has scores for the released
    # systems' answers alone, and neither replay nor lexical scores minutes.
    generated = [] if minutes_judge else generated_runs(qa_files)
    if config.backend == "replay" and generated:
        raise JudgeConfigError(
            f"--judge replay scores only the released systems' answers (lm_eval --model "
            f"elitr-replay); {generated[0]} holds answers of --model "
            f"{model_of(generated[0])}. Use an LLM judge, or "
            f"{keyless_alternatives(True, 'elitr-bench')}"
        )
    return generated


def _score_qa(
    args: argparse.Namespace,
    config: JudgeConfig,
    qa_files: list[Path],
    batch: BatchPlan | None = None,
) -> int:
    """Judge the QA runs, print their judge scores and usage; 3 when some item failed."""
    output = Path(args.output) if args.output else None
    failed = 0
    try:
        scored = score_runs(qa_files, config, output, include_path=args.include_path, batch=batch)
    except BatchParked as parked:
        return _parked(args, config, parked)
    for target, payload in scored:
        for task in payload["judge_usage"]:
            metrics = payload["results"].get(task, {})
            shown = {
                k.split(",")[0]: v
                for k, v in metrics.items()
                if k.split(",")[0] in QA_JUDGE_METRICS
            }
            print(f"{task}: {shown}")
            usage = payload["judge_usage"][task]
            if usage.get("requests") or usage.get("cache_hits") or usage.get("not_sent"):
                print(f"{task}: {usage_line(usage)}")
        for note in payload.get("rescore_notes", []):
            print(f"score: note: {note}", file=sys.stderr)
        print(f"wrote {target}")
        failed += payload["judge_errors"]
    if failed:
        print(
            f"elitr-bench: error: the judge failed on {failed} item(s) (status 'error' in "
            "the files written); run the same command again to judge only those (finished "
            "items are kept)",
            file=sys.stderr,
        )
        return 3
    return 0


def _plan_score(
    args: argparse.Namespace, config: JudgeConfig, qa_files: list[Path], minutes_files: list[Path]
) -> bool:
    """Print what ``score`` will send and cost, then apply ``--dry-run`` and the cap.

    The cap is ``--max-cost`` or the spec's ``max_cost=``, the smaller when both are given.

    With a QA judge ``qa_files`` are planned (the answers it already judged are kept, not
    counted), with a minutes judge ``minutes_files``. Only LLM judges print a line: replay
    and lexical send nothing.

    Returns:
        True for ``--dry-run``: the plan was printed and nothing is sent or written.

    Raises:
        BudgetError: The estimate exceeds ``--max-cost``, or the judge has no price.
    """
    costs: list[float | None] = []
    calls = 0
    if qa_files:
        for task, qa_plan in plan_qa_files(qa_files, config):
            if config.is_llm:
                print(f"{task}: {qa_plan.line()}", file=sys.stderr, flush=True)
            calls += qa_plan.calls
            costs.append(qa_plan.cost_usd)
    else:
        from elitr_bench.scoring.minutes import plan_line, plan_minutes_files

        for task, minutes, preview in plan_minutes_files([str(f) for f in minutes_files], config):
            print(plan_line(task, minutes, preview), file=sys.stderr, flush=True)
            calls += int(preview["calls"])
            costs.append(preview["estimated_cost_usd"] if preview["priced"] else None)
    if args.dry_run:
        print("dry run: nothing was sent or written", file=sys.stderr)
        return True
    total = None if None in costs else sum(c for c in costs if c is not None)
    cap = spending_cap(args.max_cost, config.max_cost)  # the smaller applies
    check_budget(total, calls, cap, narrow="score fewer samples files, ")
    return False


def _cmd_judge_check(args: argparse.Namespace) -> int:
    from elitr_bench.metaeval.qa import format_report, judge_check_plan, run_judge_check

    config = judge_config_from_args(args.judge, args.rubric)
    alternative = keyless_alternatives(True, "elitr-bench", replay=True)  # released answers
    if not args.dry_run:  # a missing key is its one line, not a line after the plan
        check_judge_ready(config, command="elitr-bench", alternative=alternative)
    plan = judge_check_plan(config)
    if config.is_llm:  # replay and lexical send nothing
        print(f"judge-check: {plan.line()}", file=sys.stderr, flush=True)
    if args.dry_run:
        print("dry run: nothing was sent or written", file=sys.stderr)
        return 0
    check_budget(plan.cost_usd, plan.calls, spending_cap(args.max_cost, config.max_cost), narrow="")
    check_judge_ready(config, network=True, command="elitr-bench", alternative=alternative)
    report = run_judge_check(config, plan=plan)
    print(format_report(report))
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, json.dumps(report, indent=2, ensure_ascii=False))
        print(f"wrote {out}", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add the ``score`` and ``judge-check`` subcommands to an argparse subparsers object.

    Each sets ``handler`` (``args -> exit code``) as its default.
    """
    judge_help = (
        "judge spec, e.g. openai:gpt-4-0613, hf:/path, replay, lexical "
        "(default: $ELITR_JUDGE or openai:gpt-4-0613)"
    )
    score = subparsers.add_parser(
        "score",
        help="judge logged answers (lm_eval --log_samples) later",
        description=(
            "Judge lm-eval samples_*.jsonl files without loading the generating model. Answers "
            "this judge already scored are kept; only failed, skipped or differently judged "
            "ones are sent. Writes samples_<task>_<date>.jsonl and results_rescored_<date>.json "
            "next to the samples: the run's tasks and groups with every metric, as lm-eval "
            "would have written them with this judge (also for --predict_only runs). "
            "Prompts that do not fit the judge's context window (known for OpenAI models "
            "and hf judges, context=N in the spec for others) stop the command before any "
            "request. Before the first request an LLM judge prints one line per task: its "
            "calls and estimated cost (--dry-run stops there, --max-cost refuses above USD)."
        ),
    )
    score.add_argument(
        "paths", nargs="+", help="samples_*.jsonl files or lm-eval output directories"
    )
    score.add_argument(
        "--judge",
        default=None,
        help=f"{judge_help}; minutes runs need a minutes judge, e.g. {minutes_judge_example()}",
    )
    score.add_argument(
        "--rubric",
        default=None,
        choices=sorted(RUBRICS),
        help="override the judge's QA rubric (minutes: rubric= in --judge)",
    )
    score.add_argument(
        "--output",
        default=None,
        help="also write the results file here (it is always written as "
        "results_rescored_<date>.json next to the samples)",
    )
    score.add_argument(
        "--include_path",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of further task YAMLs, as the run's lm_eval --include_path took it "
        "(a task there that reuses our task classes is scored like ours; repeatable)",
    )
    score.add_argument(
        "--batch-write",
        default=None,
        metavar="FILE",
        help="write the judge requests that miss the cache to FILE as a batch input "
        "(OpenAI's JSONL, which vLLM's run_batch reads) and stop: nothing is sent",
    )
    score.add_argument(
        "--batch-read",
        default=None,
        metavar="FILE",
        help="read an answered batch output file (of a --batch-write input) into the judge "
        "cache first; with --batch-write, what still waits (restatements) goes there",
    )
    score.add_argument(
        "--no-wait",
        action="store_true",
        help="with batch=on in the judge spec: submit the batch and exit, printing the "
        "command that collects it",
    )
    add_budget_flags(score, "judge calls and estimated cost per task")
    score.set_defaults(handler=_cmd_score)

    check = subparsers.add_parser(
        "judge-check",
        help="a judge against the 390 human-scored answers (Table 4)",
        description=(
            "Judge the 390 human-scored qa/test2/st responses; compare with humans. An LLM "
            "judge first prints its calls and estimated cost (--dry-run stops there, "
            "--max-cost refuses above USD)."
        ),
    )
    check.add_argument("--judge", default=None, help=judge_help)
    check.add_argument(
        "--rubric", default=None, choices=sorted(RUBRICS), help="override the judge's rubric"
    )
    check.add_argument("--output", default=None, help="also write the report as JSON here")
    add_budget_flags(check, "judge calls and estimated cost")
    check.set_defaults(handler=_cmd_judge_check)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (the project CLI calls :func:`register` instead)."""
    parser = argparse.ArgumentParser(prog="elitr-bench")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except ElitrBenchError as exc:
        if debug_enabled():
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
