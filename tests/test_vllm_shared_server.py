"""Ending the session's shared vLLM server (tests/support/vllm_server.py), without vLLM.

A stand-in process group plays the server: stopping it ends the whole group at once (the
watchdog is reaped, not waited on as a zombie), and forgets it, so that the session's end
after an early stop signals nothing, whatever process group has since taken its number.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.support.vllm_server import STATE_FILE, stop_shared_server

#: A leader that starts a child in its group, then both sleep.
_GROUP = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def _members(group: int) -> list[int]:
    """The live processes of a process group (``/proc/PID/stat``'s fifth field)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def test_stopping_ends_the_group_promptly_and_forgets_it(tmp_path: Path) -> None:
    leader = subprocess.Popen([sys.executable, "-c", _GROUP], start_new_session=True)
    deadline = time.monotonic() + 30
    while len(_members(leader.pid)) < 2:  # the leader has started its child
        assert time.monotonic() < deadline
        time.sleep(0.05)
    (tmp_path / STATE_FILE).write_text(json.dumps({"pid": leader.pid}))
    start = time.monotonic()
    stop_shared_server(tmp_path)
    assert time.monotonic() - start < 5  # reaped at once, not polled as a zombie for 10 s
    assert not (tmp_path / STATE_FILE).exists()
    assert _members(leader.pid) == []  # the child went with the leader
    stop_shared_server(tmp_path)  # the session's end: nothing left to signal
