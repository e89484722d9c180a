"""Where two back ends' greedy answers part, and by how much the model preferred one token.

Batched decoding pads rows and runs other matrix shapes than decoding one request alone,
so its float sums can differ in the last bits; a greedy answer changes only where the
top two logits were that close. This tool finds the first token where two answers to the
same prompt differ and prints the reference model's logits there (one unbatched forward
over the prompt and the first answer's tokens): the top-1 minus top-2 margin and the gap
between the two chosen tokens. A margin of 1e-5 is a tie broken by rounding; a margin of
1.0 means one back end computed something else.

Compare two ``lm_eval --log_samples`` output folders (same tasks and documents)::

    python bench/logit_margin.py CHECKPOINT /tmp/out-hf /tmp/out-hf-prefix

It prints one line per differing answer, and ``answers identical: N/N`` when none differ.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Divergence:
    """The first token where two answers differ, scored by the reference model.

    Attributes:
        position: Index of the token in the answer.
        ours: Token id of the first answer there.
        theirs: Token id of the second answer there.
        top_margin: Top-1 minus top-2 logit at that step.
        pair_gap: Logit of ``ours`` minus logit of ``theirs``.
    """

    position: int
    ours: int
    theirs: int
    top_margin: float
    pair_gap: float


def first_divergence(
    model: Any, tokenizer: Any, prompt: str, first: str, second: str
) -> Divergence | None:
    """Score the first differing token of two answers to ``prompt`` (None when equal)."""
    import torch

    a = tokenizer(first, add_special_tokens=False)["input_ids"]
    b = tokenizer(second, add_special_tokens=False)["input_ids"]
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if n == len(a) == len(b):
        return None
    context = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([context + a[:n]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1].float()
    top = torch.topk(logits, 2).values
    ours = a[n] if n < len(a) else int(tokenizer.eos_token_id)
    theirs = b[n] if n < len(b) else int(tokenizer.eos_token_id)
    return Divergence(n, ours, theirs, float(top[0] - top[1]), float(logits[ours] - logits[theirs]))


def _samples(folder: Path) -> dict[tuple[str, int], dict[str, Any]]:
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for path in folder.rglob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows[task, int(row["doc_id"])] = row
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="the model both runs used (local folder)")
    parser.add_argument("reference", type=Path, help="lm_eval --output_path of the first run")
    parser.add_argument("other", type=Path, help="lm_eval --output_path of the second run")
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ref, other = _samples(args.reference), _samples(args.other)
    if not ref or ref.keys() != other.keys():
        print("the two folders do not hold samples of the same documents", file=sys.stderr)
        return 2
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    same = 0
    for key in sorted(ref):
        a, b = ref[key]["resps"][0][0], other[key]["resps"][0][0]
        if a == b:
            same += 1
            continue
        prompt = ref[key]["arguments"]["gen_args_0"]["arg_0"]
        d = first_divergence(model, tokenizer, prompt, a, b)
        print(f"{key[0]} doc {key[1]}: differs at answer token {d and d.position}: {d}")
    print(f"answers identical: {same}/{len(ref)}")
    return 0 if same == len(ref) else 1


if __name__ == "__main__":
    sys.exit(main())
