"""Self-training guidance files: per-type advice a reviewer can read, edit and reuse.

``elitr-bench mesa-train`` writes one; ``guidance=PATH`` (judge spec) or ``--guidance PATH``
appends each type's text to that type's step prompts. The file also records which
meetings produced the feedback, so that MESA refuses to evaluate them with this guidance:
feedback and evaluated samples must be disjoint by meeting (otherwise the human scores of
an evaluated summary would leak into its own assessment).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.folder import write_atomic
from elitr_bench.judges.mesa.error_types import ErrorTypes

_HEADER = """\
# MESA self-training guidance (Sec. 2.5 of Kirstein et al.): per error type, what the
# evaluator should consider or treat differently, consolidated by an LLM judge from feedback
# that compared MESA's assessments of the feedback summaries below with human annotations.
# Review and edit the texts freely; keep the keys. Use it with guidance=THIS_FILE in the judge
# spec or elitr-bench mesa --guidance THIS_FILE. Meetings under feedback.meetings cannot be
# evaluated with this file (feedback and evaluation are disjoint by meeting).
"""


class GuidanceError(ElitrBenchError):
    """A guidance file is unreadable, malformed, or used on its own feedback meetings."""


@dataclass(frozen=True)
class Guidance:
    """Per-type guidance and its provenance.

    Attributes:
        texts: Type code -> guidance text ("" = none for that type).
        feedback_meetings: Meetings whose summaries produced the feedback.
        meta: Provenance (judge identity, annotations used, counts, iteration).
        source: File read from ("" when built in memory).
    """

    texts: Mapping[str, str]
    feedback_meetings: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    def for_type(self, code: str) -> str:
        """Guidance for one type ("" when none)."""
        return self.texts.get(code, "")

    def check_disjoint(self, meetings: Collection[str]) -> None:
        """Refuse to evaluate meetings that produced this guidance's feedback.

        Raises:
            GuidanceError: One line naming the overlapping meetings and the fix.
        """
        overlap = sorted(set(meetings) & set(self.feedback_meetings))
        if overlap:
            raise GuidanceError(
                f"MESA guidance {self.source or '(in memory)'} was trained on meeting(s) "
                f"{', '.join(overlap)}; feedback and evaluated meetings must be disjoint: "
                "evaluate other meetings (--meetings) or train guidance on other ones"
            )

    def to_yaml(self) -> str:
        """The file text (header comment, provenance, then one block per type)."""
        import yaml

        body = {
            "feedback": {"meetings": list(self.feedback_meetings), **dict(self.meta)},
            "guidance": {code: text for code, text in self.texts.items()},
        }

        class _Dumper(yaml.SafeDumper):
            pass

        def _str(dumper: yaml.SafeDumper, value: str) -> Any:
            style = "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        _Dumper.add_representer(str, _str)
        return _HEADER + yaml.dump(
            body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )

    def save(self, path: str | Path) -> Path:
        """Write the file (parent folders created)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, self.to_yaml())
        return target


def load_guidance(path: str | Path, error_types: ErrorTypes) -> Guidance:
    """Read and check a guidance file against the error types in use.

    Raises:
        GuidanceError: Unreadable, not YAML, unknown keys or type codes, non-text guidance.
    """
    import yaml

    where = f"guidance file {path}"
    try:
        data = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise GuidanceError(
            f"{where}: cannot read it ({exc.strerror}); write one with elitr-bench mesa-train"
        ) from None
    except yaml.YAMLError:
        raise GuidanceError(f"{where}: not valid YAML") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("guidance"), Mapping):
        raise GuidanceError(f"{where}: expected a top-level 'guidance:' mapping CODE -> text")
    unknown = sorted(str(k) for k in data if k not in ("guidance", "feedback"))
    if unknown:
        raise GuidanceError(f"{where}: unknown top-level key(s) {', '.join(unknown)}")
    texts: dict[str, str] = {}
    for code, text in data["guidance"].items():
        try:
            etype = error_types.get(str(code))
        except ElitrBenchError:
            raise GuidanceError(
                f"{where}: guidance for unknown error type {code!r}; the error types in use "
                f"are {', '.join(error_types.codes)}"
            ) from None
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise GuidanceError(f"{where}: guidance for {code} must be text")
        texts[etype.code] = text.strip()
    feedback = data.get("feedback") or {}
    if not isinstance(feedback, Mapping):
        raise GuidanceError(f"{where}: 'feedback' must be a mapping")
    meetings = feedback.get("meetings") or []
    if not isinstance(meetings, list) or not all(isinstance(m, str) for m in meetings):
        raise GuidanceError(f"{where}: feedback.meetings must be a list of meeting ids")
    meta = {k: v for k, v in feedback.items() if k != "meetings"}
    return Guidance(texts, tuple(meetings), meta, str(path))
