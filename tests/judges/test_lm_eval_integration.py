"""The filter, per-sample metrics and aggregations as lm-eval 0.4.13 uses them."""

import ast
import json
import math
import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from elitr_bench.cli.score import main
from elitr_bench.judges import judge_metrics, set_run_judge
from elitr_bench.scoring.qa import response_of
from tests.judges.conftest import boxed_by_response
from tests.support.openai_server import LoopbackOpenAI


def _docs(n: int) -> list[dict]:
    return [
        {
            "meeting_id": "m1",
            "question_id": str(i),
            "question": f"Q{i}?",
            "answer": f"ref {i}",
            "question_type": "what",
            "answer_position": "B",
            "split": "dev",
            "setting": "qa",
            "mode": "st",
        }
        for i in range(n)
    ]


def test_filter_is_registered_and_judges_all_responses(loopback: LoopbackOpenAI) -> None:
    from lm_eval.api.registry import get_filter

    import elitr_bench.judges.qa.lm_eval_filter  # noqa: F401  (registers)

    loopback.handler = boxed_by_response(lambda r: 2 if r.endswith("3") else (9 if r else 1))
    set_run_judge(f"openai:gpt-4-0613,base_url={loopback.base_url},cache=memory,progress=false")
    filt = get_filter("elitr_judge")()
    resps = [[f"answer {i}"] for i in range(5)]
    out = list(filt.apply(resps, _docs(5)))
    assert len(out) == 5 and len(loopback.requests) == 5
    first = json.loads(out[0][0])  # a JSON string, so sample logs stay readable by any tool
    assert first["response"] == "answer 0"
    assert first["judge"]["status"] == "scored" and first["judge"]["score"] == 9.0
    assert first["judge"]["identity"]["model"] == "gpt-4-0613"
    assert json.loads(out[3][0])["judge"]["score"] == 2.0
    assert judge_metrics(out[3]) == {
        "judge_score": 2.0,
        "judge_unscored": 0.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
    }

    set_run_judge("none")
    skipped = list(filt.apply(resps, _docs(5)))
    assert json.loads(skipped[0][0])["judge"]["status"] == "skipped"
    assert len(loopback.requests) == 5
    assert judge_metrics(skipped[0]) == {
        "judge_unscored": 0.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
    }


def test_metrics_aggregate_with_exact_stderr_in_lm_eval() -> None:
    """Feed judge_metrics output through lm-eval's own aggregation code."""
    from lm_eval.api.registry import get_aggregation
    from lm_eval.evaluator_utils import _compute_task_aggregations

    import elitr_bench.judges.qa.lm_eval_filter  # noqa: F401  (registers judge_count)

    judged = [{"status": "scored", "score": s} for s in (9.0, 7.0, 3.0, 8.0)]
    judged += [{"status": "unscored", "score": None, "raw": "no score"}] * 2
    raw: dict = {}
    for j in judged:  # exactly what lm_eval.evaluator does with process_results output
        for metric, value in judge_metrics([{"response": "r", "judge": j}]).items():
            raw.setdefault((metric, "elitr_judge"), []).append(value)
    task = SimpleNamespace(
        task_name="t",
        aggregation=lambda: {
            "judge_score": get_aggregation("mean"),
            "judge_unscored": get_aggregation("judge_count"),
        },
    )
    agg, _ = _compute_task_aggregations(task, raw, bootstrap_iters=1000)
    scores = [9.0, 7.0, 3.0, 8.0]
    assert agg["judge_score,elitr_judge"] == pytest.approx(statistics.fmean(scores))
    assert agg["judge_score_stderr,elitr_judge"] == pytest.approx(
        statistics.stdev(scores) / math.sqrt(4)
    )
    assert agg["judge_unscored,elitr_judge"] == 2.0
    assert agg["judge_unscored_stderr,elitr_judge"] == "N/A"
    assert get_aggregation("mean") is not None  # built-ins still visible after our registration


def test_score_command_reads_lm_eval_samples(tmp_path: Path, loopback: LoopbackOpenAI) -> None:
    loopback.handler = boxed_by_response(lambda r: 1 if "wrong" in r else 8)
    out_dir = tmp_path / "results" / "model"
    out_dir.mkdir(parents=True)
    samples = out_dir / "samples_elitr_qa_dev_2024-05-01T10-00-00.123456.jsonl"
    lines = []
    for i, doc in enumerate(_docs(4)):
        text = "wrong" if i == 0 else f"answer {i}"
        old = {
            "response": text,
            "judge": {"status": "skipped", "score": None, "raw": "", "samples": []},
        }
        # lm-eval's sanitize_list stores filtered responses with str(): a Python repr.
        lines.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": doc["answer"],
                "arguments": {},
                "resps": [[text]],
                "filtered_resps": [str(old)],
                "filter": "judge",
                "metrics": ["judge_unscored"],
                "judge_unscored": 0.0,
            }
        )
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines + lines[:1]))  # a duplicate doc
    assert response_of(lines[1]) == "answer 1"
    assert ast.literal_eval(lines[1]["filtered_resps"][0])["response"] == "answer 1"

    judge = f"openai:gpt-4-0613,base_url={loopback.base_url},progress=false,preflight=false"
    assert main(["score", str(tmp_path / "results"), "--judge", judge]) == 0
    result_file = next(out_dir.glob("results_rescored_*.json"))
    data = json.loads(result_file.read_text())
    metrics = data["results"]["elitr_qa_dev"]
    assert metrics["judge_score,openai:gpt-4-0613"] == pytest.approx((1 + 8 + 8 + 8) / 4)
    assert metrics["judge_unscored,openai:gpt-4-0613"] == 0
    assert data["judge"]["model"] == "gpt-4-0613"
    assert data["n-samples"]["elitr_qa_dev"] == {"original": 141, "effective": 4}  # lm-eval's
    assert len(loopback.requests) == 4
    stamp = result_file.stem.removeprefix("results_rescored_")
    rescored = [
        json.loads(x)
        for x in (out_dir / f"samples_elitr_qa_dev_{stamp}.jsonl").read_text().splitlines()
    ]
    assert (
        json.loads(rescored[0]["filtered_resps"][0][0])["judge"]["score"] == 1.0
        and rescored[0]["judge_score"] == 1.0
    )
    # Re-scoring again is free (cache), and the rescored file is not picked up as input.
    assert (
        main(["score", str(tmp_path / "results"), "--judge", judge, "--rubric", "gpt4-rubric"]) == 0
    )
    assert len(loopback.requests) == 4


def test_score_command_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(tmp_path / "missing"), "--judge", "lexical"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: score:") and "\n" not in err
    assert main(["score", str(tmp_path), "--judge", "bogus:x"]) == 2
    assert "unknown backend 'bogus'" in capsys.readouterr().err
