"""AutoMin 2023's released minutes as MESA items.

``elitr-bench mesa`` assesses these items and ``mesa-train`` keeps those that have human
scores as feedback samples; both read them here so that they see the same summaries.
"""

from __future__ import annotations

from collections.abc import Sequence

from elitr_bench.judges.summary.base import MinutesItem


def automin_items(systems: Sequence[str] | None, meetings: Sequence[str]) -> list[MinutesItem]:
    """AutoMin 2023 minutes of these systems and meetings as MESA items."""
    from elitr_bench.data.minutes import load_automin_meetings, load_automin_minutes

    by_meeting = {m.meeting_id: m for m in load_automin_meetings(list(meetings))}
    return [
        MinutesItem(
            meeting_id=m.meeting_id,
            system=m.system,
            transcript=by_meeting[m.meeting_id].transcript,
            minutes=m.text,
            references=tuple(r.text for r in by_meeting[m.meeting_id].references),
        )
        for m in load_automin_minutes(systems, list(meetings))
    ]
