"""Time noise injection on all 18 ELITR-Bench transcripts at the paper's five target WERs.

Every transcript is generated without the disk cache and measured with jiwer, first in
``calibrated`` mode and then in ``paper`` mode (the uncalibrated scaling), in one run so
that the printed ratio compares like with like. Prints per target the mean effective
WER and the worst miss, the same under plain whitespace tokens (mean and range over
the 18 meetings), the gap of paper mode to the paper's Table 5, then wall times.
Run: ``ELITR_BENCH_DATA_DIR=../shared/data python bench/noise_speed.py [--seed N]``.
"""

from __future__ import annotations

import argparse
import time

from elitr_bench.data import load_benchmark
from elitr_bench.noise import PAPER_TARGETS, default_rules, generate

#: Paper Table 5: target WER -> effective WER averaged over the 18 transcripts.
PAPER_TABLE5 = {0.2: 0.2099, 0.4: 0.3741, 0.6: 0.5007, 0.8: 0.6186, 1.0: 0.7113}


def run_mode(texts: dict[str, str], mode: str, seed: int) -> float:
    """Generate every (transcript, target) in ``mode``; print the WER summary; return seconds."""
    rules = default_rules()
    by_target: dict[float, list[float]] = {t: [] for t in PAPER_TARGETS}
    plain: dict[float, list[float]] = {t: [] for t in PAPER_TARGETS}
    start = time.perf_counter()
    protect = ""
    for meeting_id in sorted(texts):
        for target in PAPER_TARGETS:
            noisy = generate(texts[meeting_id], target, seed=seed, rules=rules, mode=mode)
            by_target[target].append(noisy.effective_wer)
            plain[target].append(noisy.whitespace_wer)
            protect = noisy.protect
    elapsed = time.perf_counter() - start
    print(f"mode={mode} protect={protect} seed={seed} rules={rules.hash}")
    for target, values in by_target.items():
        mean = sum(values) / len(values)
        worst = max(abs(v - target) for v in values)
        ws = plain[target]
        ws_mean = sum(ws) / len(ws)
        line = (
            f"  target {target:.1f}: mean effective {mean:.4f}, worst |miss| {worst:.4f}; "
            f"whitespace tokens: mean {ws_mean:.4f} [{min(ws):.4f}, {max(ws):.4f}]"
        )
        if mode == "paper":
            line += (
                f"; Table 5 {PAPER_TABLE5[target]:.4f}, gap {mean - PAPER_TABLE5[target]:+.4f} "
                f"(whitespace {ws_mean - PAPER_TABLE5[target]:+.4f})"
            )
        print(line)
    n = sum(len(v) for v in by_target.values())
    print(f"  {n} transcripts generated and measured in {elapsed:.2f} s ({elapsed / n:.3f} s each)")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args()

    texts = {mid: m.transcript for mid, m in load_benchmark().meetings.items()}
    start = time.perf_counter()
    default_rules()
    print(f"default rules loaded in {time.perf_counter() - start:.2f} s")
    calibrated = run_mode(texts, "calibrated", args.seed)
    paper = run_mode(texts, "paper", args.seed)
    print(f"calibrated / paper time ratio: {calibrated / paper:.2f}")


if __name__ == "__main__":
    main()
