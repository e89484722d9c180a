"""The ``lm_eval`` command lines the tests launch, and the files such a launch writes.

Several modules run the same kind of launch (a model on a few tasks, a ``--limit``, task
options in ``--metadata``, samples logged); :func:`lm_eval_args` writes that command line
once, :func:`read_results` and :func:`read_samples` read what it left in ``--output_path``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def lm_eval_args(
    model: str,
    model_args: str,
    tasks: str | Iterable[str],
    *,
    limit: int | None,
    out: Path,
    metadata: Mapping[str, Any] | None = None,
    log_samples: bool = True,
    max_gen_toks: int | None = None,
    chat: bool = False,
    extra: Iterable[str] = (),
) -> list[str]:
    """``lm_eval``'s arguments: ``model`` on ``tasks``, writing into ``out``."""
    args = [
        "--model", model,
        "--model_args", model_args,
        "--tasks", tasks if isinstance(tasks, str) else ",".join(tasks),
        "--output_path", str(out),
    ]  # fmt: skip
    if limit is not None:  # None: the documents come from ``--samples`` in ``extra``
        args += ["--limit", str(limit)]
    if max_gen_toks is not None:
        args += ["--gen_kwargs", f"max_gen_toks={max_gen_toks}"]
    if chat:
        args.append("--apply_chat_template")
    if log_samples:
        args.append("--log_samples")
    if metadata is not None:
        args += ["--metadata", json.dumps(dict(metadata))]
    return [*args, *extra]


def replay_args(
    system: str, tasks: str | Iterable[str], *, limit: int, out: Path, judge: str, **kw: Any
) -> list[str]:
    """``elitr-replay`` of a released ``system`` on ``tasks``, judged by ``judge``."""
    model_args = f"system={system}"
    judged = {"judge": judge}
    return lm_eval_args(
        "elitr-replay", model_args, tasks, limit=limit, out=out, metadata=judged, **kw
    )


def read_results(out: Path, task: str | None = None) -> dict[str, Any]:
    """The one results file under ``out`` (only ``task``'s metrics when named)."""
    [path] = out.rglob("results_*.json")
    results: dict[str, Any] = json.loads(path.read_text())
    return results if task is None else dict(results["results"][task])


def read_samples(out: Path, tasks: str | Iterable[str] = ("",)) -> list[dict[str, Any]]:
    """The samples logged under ``out``: per task, in ``doc_id`` order (every task's by default)."""
    rows: list[dict[str, Any]] = []
    for task in [tasks] if isinstance(tasks, str) else tasks:
        pattern = f"samples_{task}_*.jsonl" if task else "samples_*.jsonl"
        for path in sorted(out.rglob(pattern)):
            # JSONL lines end at "\n" only: str.splitlines would also cut at U+2028 in a text
            lines = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
            rows += sorted(lines, key=lambda s: s["doc_id"])
    return rows
