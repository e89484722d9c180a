"""The loopback judge of the minutes commands (``arena``, ``mesa``) and the runs they share."""

from __future__ import annotations

from tests.support.openai_server import LoopbackOpenAI

#: ``arena`` and ``mesa`` each on one meeting: the two commands that pay a judge for minutes.
ARENA_AND_MESA = (
    ["arena", "--automin", "--systems", "gpt4,ntr", "--meetings", "1", "--quiet"],
    ["mesa", "--systems", "gpt4", "--meetings", "1"],
)


def loopback_judge(server: LoopbackOpenAI, extra: str = "") -> str:
    """The judge spec of ``server`` as model ``loop-m``, ``extra`` options appended.

    The server lists ``loop-m`` under ``GET /v1/models``, so the preflight sends no completion.
    """
    server.model = "loop-m"
    return f"openai:loop-m,base_url={server.base_url},progress=false{extra}"
