"""MESA's overall evaluation: per-type ratings into impact (Eq. 1) and quality (Eq. 2).

Sec. 2.5: ``impact = sum_n s_n * (c_n * i_n) / sum_n (c_n * i_n)`` with ``s_n`` the type's
0-5 rating, ``c_n`` its 0-10 confidence scaled to 0-1 and ``i_n`` the type's importance;
``quality = 1 + (5 - impact) / 5 * 9`` maps impact 0 (no errors) to 10 and 5 to 1.
Types without a valid score do not enter the sums (they are reported as unscored); when
no scored type has a positive confidence the impact is undefined and left None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Overall:
    """Impact and quality of one summary.

    Attributes:
        impact: Eq. 1 (0-5) or None when undefined.
        quality: Eq. 2 (1-10) or None when the impact is undefined.
        used: Codes of the types that entered the sums.
    """

    impact: float | None
    quality: float | None
    used: tuple[str, ...]


def quality_from_impact(impact: float) -> float:
    """Eq. 2: quality = 1 + (5 - impact) / 5 * 9."""
    return 1.0 + (5.0 - impact) / 5.0 * 9.0


def overall(
    ratings: Mapping[str, tuple[float, float] | None], weights: Mapping[str, float]
) -> Overall:
    """Eq. 1 and 2 over the scored types.

    Args:
        ratings: Type code -> (rating 0-5, confidence 0-10), or None if unscored.
        weights: Type code -> importance ``i_n``.
    """
    num = den = 0.0
    used = []
    for code, value in ratings.items():
        if value is None:
            continue
        rating, confidence = value
        c_i = (confidence / 10.0) * weights[code]
        num += rating * c_i
        den += c_i
        used.append(code)
    if den <= 0:
        return Overall(None, None, tuple(used))
    impact = num / den
    return Overall(impact, quality_from_impact(impact), tuple(used))
