"""``elitr-bench noise`` and ``elitr-bench noise build-rules`` (argparse wiring + handlers).

The lead's ``cli.py`` calls :func:`register` with its sub-parser collection; both parsers
set ``handler`` to :func:`run`, which takes the parsed namespace and returns an exit code.

``noise`` has an *optional* sub-command: without one it writes noisy transcripts, with
``build-rules`` it learns a rules file. The two use different ``dest`` names for their
``--out`` options so that argparse cannot mix them up.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from elitr_bench.data.folder import write_atomic
from elitr_bench.markdown import fixed, markdown_table
from elitr_bench.noise.build import RED_ACE_HUB_ID, read_pairs, red_ace_pairs, rules_from_pairs
from elitr_bench.noise.cache import noisy_transcript
from elitr_bench.noise.errors import NoiseError
from elitr_bench.noise.inject import DEFAULT_SEED, MODES, NoisyTranscript, default_protect
from elitr_bench.noise.rules import resolve_rules
from elitr_bench.noise.text import PROTECT_CHOICES

CSV_NAME = "noise_wer.csv"
MARKDOWN_NAME = "noise_wer.md"
MANIFEST_NAME = "noise_manifest.json"
CSV_FIELDS = (
    "meeting_id",
    "split",
    "reference_words",
    "target_wer",
    "effective_wer",
    "whitespace_wer",
    "substitutions",
    "deletions",
    "insertions",
    "scale",
    "seed",
    "mode",
    "rules_hash",
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``noise`` command (and its ``build-rules`` sub-command) to a CLI."""
    noise = subparsers.add_parser(
        "noise",
        help="noisy transcripts at target WERs, or a rules file",
        description=(
            "Write noisy versions of the 18 ELITR-Bench transcripts at target word error "
            "rates with a table of target vs effective WER (paper Table 5), or learn "
            "substitution rules from ASR output with `noise build-rules`."
        ),
    )
    noise.add_argument(
        "--wer",
        dest="noise_wer",
        type=float,
        nargs="+",
        metavar="WER",
        help="target WER(s), e.g. 0.4 or 0.2 0.4 0.6 0.8 1.0",
    )
    noise.add_argument("--seed", dest="noise_seed", type=int, default=DEFAULT_SEED, metavar="N")
    noise.add_argument(
        "--rules",
        dest="noise_rules",
        type=Path,
        metavar="FILE",
        help="rules file (default: packaged rules)",
    )
    noise.add_argument("--mode", dest="noise_mode", choices=MODES, default="calibrated")
    noise.add_argument(
        "--protect",
        dest="noise_protect",
        choices=PROTECT_CHOICES,
        default=None,
        help="keep speaker labels, entities and tags (default) or not (none); "
        "default: 'default' in calibrated mode, 'none' in paper mode (as the paper)",
    )
    noise.add_argument(
        "--meetings", dest="noise_meetings", nargs="+", metavar="ID", help="only these meetings"
    )
    noise.add_argument("--out", dest="noise_out", type=Path, metavar="DIR", help="output directory")
    noise.add_argument(
        "--no-cache", dest="noise_no_cache", action="store_true", help="do not use the disk cache"
    )
    noise.set_defaults(handler=run, noise_command=None, noise_parser=noise)

    commands = noise.add_subparsers(dest="noise_command", metavar="{build-rules}")
    build = commands.add_parser(
        "build-rules",
        help="learn word-substitution rules from reference/ASR hypothesis pairs",
        description=(
            "Align reference and ASR hypothesis words with jiwer and count substitutions, "
            "deletions and insertions into a rules file usable with `noise --rules`."
        ),
    )
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--pairs",
        type=Path,
        metavar="FILE",
        help="reference<TAB>hypothesis lines, or JSON lines with reference/hypothesis",
    )
    source.add_argument(
        "--red-ace",
        nargs="?",
        const=RED_ACE_HUB_ID,
        metavar="PATH",
        help=f"RED-ACE jsonl file or directory, or a hub id (default {RED_ACE_HUB_ID})",
    )
    build.add_argument("--out", dest="rules_out", type=Path, required=True, metavar="RULES")
    build.add_argument(
        "--min-count", type=int, default=1, help="drop outcomes seen fewer times (default 1)"
    )
    build.set_defaults(handler=run, noise_parser=build)


def run(args: argparse.Namespace) -> int:
    """Dispatch on the parsed arguments; returns the process exit code."""
    if getattr(args, "noise_command", None) == "build-rules":
        return run_build_rules(args)
    return run_noise(args)


def run_build_rules(args: argparse.Namespace) -> int:
    """Learn rules from ``--pairs`` or ``--red-ace`` and write them to ``--out``."""
    if args.min_count < 1:
        args.noise_parser.error("--min-count must be at least 1")
    if args.pairs is not None:
        pairs = read_pairs(args.pairs)
        provenance = f"learnt from pairs file {args.pairs.name}"
    else:
        pairs = red_ace_pairs(args.red_ace)
        provenance = f"learnt from RED-ACE ({args.red_ace})"
    rules = rules_from_pairs(pairs, min_count=args.min_count, provenance=provenance)
    out = rules.save(args.rules_out)
    r = rules.rates
    print(
        f"wrote {out}: {len(rules.rules)} rules, {len(rules.insertions)} insertion words, "
        f"S/N={r.substitution:.4f} D/N={r.deletion:.4f} I/N={r.insertion:.4f}, "
        f"hash {rules.hash}"
    )
    return 0


def run_noise(args: argparse.Namespace) -> int:
    """Write noisy transcripts for every meeting and target plus the WER tables."""
    parser: argparse.ArgumentParser = args.noise_parser
    if not args.noise_wer:
        parser.error("--wer is required (or use the build-rules sub-command)")
    if args.noise_out is None:
        parser.error("--out DIR is required")
    from elitr_bench.data import load_benchmark

    meetings = load_benchmark().meetings
    wanted = sorted(meetings)
    if args.noise_meetings:
        unknown = sorted(set(args.noise_meetings) - set(meetings))
        if unknown:
            raise NoiseError(f"--meetings: unknown meeting id(s) {unknown}; see {wanted[:2]}...")
        wanted = [m for m in wanted if m in set(args.noise_meetings)]
    rules = resolve_rules(args.noise_rules)
    if args.noise_protect is None:
        args.noise_protect = default_protect(args.noise_mode)
    out_dir: Path = args.noise_out
    rows: list[tuple[str, str, NoisyTranscript]] = []
    from tqdm import tqdm

    jobs = [(m, t) for t in args.noise_wer for m in wanted]
    for meeting_id, target in tqdm(jobs, desc="noise", unit="transcript", file=sys.stderr):
        meeting = meetings[meeting_id]
        noisy = noisy_transcript(
            meeting.transcript,
            target,
            seed=args.noise_seed,
            rules=rules,
            protect=args.noise_protect,
            mode=args.noise_mode,
            use_cache=not args.noise_no_cache,
        )
        path = out_dir / f"wer-{target:.2f}" / f"{meeting_id}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, noisy.text)
        rows.append((meeting_id, meeting.split, noisy))
    write_tables(out_dir, rows)
    manifest = {
        "seed": args.noise_seed,
        "mode": args.noise_mode,
        "protect": args.noise_protect,
        "rules": rules.name or str(args.noise_rules),
        "rules_hash": rules.hash,
        "rules_provenance": rules.provenance,
        "targets": list(args.noise_wer),
        "meetings": wanted,
    }
    write_atomic(out_dir / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n")
    print(summary_markdown(rows))
    print(f"wrote {len(rows)} transcripts, {CSV_NAME} and {MARKDOWN_NAME} to {out_dir}")
    return 0


def write_tables(out_dir: Path, rows: Sequence[tuple[str, str, NoisyTranscript]]) -> None:
    """Write the per-meeting WER table as CSV and Markdown (with the Table 5 summary)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(CSV_FIELDS)
    for meeting_id, split, n in rows:
        writer.writerow(
            [
                meeting_id,
                split,
                n.reference_words,
                f"{n.target_wer:.4f}",
                f"{n.effective_wer:.4f}",
                f"{n.whitespace_wer:.4f}",
                n.substitutions,
                n.deletions,
                n.insertions,
                f"{n.scale:.6f}",
                n.seed,
                n.mode,
                n.rules_hash,
            ]
        )
    write_atomic(out_dir / CSV_NAME, handle.getvalue())
    lines = [summary_markdown(rows), "", per_meeting_markdown(rows), ""]
    write_atomic(out_dir / MARKDOWN_NAME, "\n".join(lines))


def summary_markdown(rows: Sequence[tuple[str, str, NoisyTranscript]]) -> str:
    """Target vs effective WER over the meetings, in the layout of paper Table 5.

    The mean is Table 5's number; the range across meetings and the same under plain
    whitespace tokens (case and punctuation kept) are added so either convention can be
    quoted.
    """
    by_target: dict[float, list[NoisyTranscript]] = {}
    for _, _, n in rows:
        by_target.setdefault(n.target_wer, []).append(n)
    header: tuple[str, ...] = ("Target WER (%)", "Effective WER (%)", "min-max")
    header += ("Effective WER, whitespace tokens (%)", "min-max")
    cells = []
    for target in sorted(by_target):
        items = by_target[target]
        norm = [100 * n.effective_wer for n in items]
        plain = [100 * n.whitespace_wer for n in items]
        cells.append(
            (
                fixed(100 * target),
                fixed(sum(norm) / len(norm)),
                f"{fixed(min(norm))}-{fixed(max(norm))}",
                fixed(sum(plain) / len(plain)),
                f"{fixed(min(plain))}-{fixed(max(plain))}",
            )
        )
    return "\n".join(markdown_table(header, cells, "rrrrr"))


def per_meeting_markdown(rows: Sequence[tuple[str, str, NoisyTranscript]]) -> str:
    """One line per (meeting, target) with the edit counts behind the effective WER."""
    header: tuple[str, ...] = ("Meeting", "Split", "Words", "Target WER (%)", "Effective WER (%)")
    header += ("S", "D", "I", "Scale")
    cells = [
        (
            meeting_id,
            split,
            str(n.reference_words),
            fixed(100 * n.target_wer),
            fixed(100 * n.effective_wer),
            str(n.substitutions),
            str(n.deletions),
            str(n.insertions),
            fixed(n.scale, 4),
        )
        for meeting_id, split, n in sorted(rows, key=lambda r: (r[2].target_wer, r[0]))
    ]
    return "\n".join(markdown_table(header, cells, "llrrrrrrr"))
