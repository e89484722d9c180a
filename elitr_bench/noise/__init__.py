"""Simulated ASR noise for ELITR transcripts at a calibrated target word error rate.

Public API: :func:`noisy_transcript` (cached) / :func:`generate` (uncached) inject noise;
:func:`default_rules`, :func:`load_rules` and :func:`rules_from_pairs` give rule sets;
:mod:`elitr_bench.cli.noise` holds the ``elitr-bench noise`` CLI.
"""

from elitr_bench.noise.build import read_pairs, red_ace_pairs, rules_from_pairs
from elitr_bench.noise.cache import noise_cache_dir, noisy_transcript, noisy_transcripts
from elitr_bench.noise.errors import NoiseError
from elitr_bench.noise.inject import DEFAULT_SEED, MODES, NoisyTranscript, generate, paper_factor
from elitr_bench.noise.rules import Rates, RuleSet, default_rules, load_rules, parse_rules
from elitr_bench.noise.text import measure_wer

#: The target WERs of the paper (Sec. 3, Table 5, Fig. 1).
PAPER_TARGETS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)

__all__ = [
    "DEFAULT_SEED",
    "MODES",
    "PAPER_TARGETS",
    "NoiseError",
    "NoisyTranscript",
    "Rates",
    "RuleSet",
    "default_rules",
    "generate",
    "load_rules",
    "measure_wer",
    "noise_cache_dir",
    "noisy_transcript",
    "noisy_transcripts",
    "paper_factor",
    "parse_rules",
    "read_pairs",
    "red_ace_pairs",
    "rules_from_pairs",
]
