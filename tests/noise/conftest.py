"""Fixtures for the noise engine tests: a synthetic meeting and the real transcripts."""

from __future__ import annotations

import pytest

SYNTHETIC = """(PERSON1) Hello everyone, can you hear me?
(PERSON2) Yes, I can hear you. <laugh/>
(PERSON1) So today we discuss the [PROJECT1] evaluation and the conference deadline.
[PERSON3] will register for the conference, I think, and [ORGANIZATION2] pays for it.
(PERSON3) Okay, I will do that tomorrow morning. <unintelligible/>
(PERSON2) We also need the minutes of the last meeting, uh, because they were lost.
(PERSON1) Right, let's prepare the summary and send it to everyone before Friday.
(PERSON2) Sounds good to me. Is there anything else we should talk about today?
(PERSON3) No, I think that's all for now. Thank you and see you next week.
(PERSON1) Thanks, bye. <parallel_talk>Bye bye.</parallel_talk>
"""


@pytest.fixture
def synthetic_meeting() -> str:
    """A short ELITR-style transcript with every kind of protected token, repeated."""
    return SYNTHETIC * 30
