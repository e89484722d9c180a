"""Every figure our code draws, read through matplotlib's objects with one system and nine.

What is checked is what makes a figure readable at a glance: axes named in words (not a
metric key), one horizontal tick label centred under each bar or group, colour limits
that cover the data, and one system order (and style) across panels. Figures are drawn
through the real report / minutes-check / arena code paths, with the Figure objects taken
as they are saved, not from pixels.
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

from elitr_bench.report import build_report
from tests.report.conftest import write_synthetic_run

JUDGE = {"backend": "openai", "model": "gpt-4-0613", "rubric": "gpt4-rubric"}
#: Nine model names, long and hyphenated like real ones.
MODELS = (
    "Llama-3.1-8B-Instruct",
    "Qwen2.5-7B-Instruct",
    "Mistral-7B-Instruct-v0.3",
    "gemma-2-9b-it",
    "Phi-3.5-mini-instruct",
    "Llama-3.2-3B-Instruct",
    "Qwen2.5-14B-Instruct",
    "Yi-1.5-9B-Chat",
    "OLMo-2-7B-Instruct",
)
METRIC_KEYS = {"judge_score", "f1", "rouge_l", "rouge1", "rouge2", "rougeL", "pairwise_accuracy"}
SETTINGS = {
    "elitr_qa_dev": ("qa", "st"),
    "elitr_qa_mt_dev": ("qa", "mt"),
    "elitr_conv_dev": ("conv", "mt"),
}


def words(label: str) -> bool:
    """An axis label a reader understands: set, and not one of our metric keys."""
    return bool(label.strip()) and label not in METRIC_KEYS and "_" not in label


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def bars(ax: Axes) -> list[Any]:
    return [p for c in ax.containers if isinstance(c, BarContainer) for p in c.patches]


def assert_labels_under_bars(ax: Axes, names: list[str]) -> dict[int, list[float]]:
    """Horizontal, centred tick labels, one per name; every bar sits within its tick's slot.

    Returns:
        Bar heights per tick index.
    """
    ticks = list(ax.get_xticks())
    labels = ax.get_xticklabels()
    assert [squashed(t.get_text()) for t in labels] == [squashed(n) for n in names]
    for text in labels:
        assert text.get_rotation() == 0 and text.get_horizontalalignment() == "center"
    under: dict[int, list[float]] = {i: [] for i in range(len(ticks))}
    for patch in bars(ax):
        centre = patch.get_x() + patch.get_width() / 2
        nearest = int(np.argmin([abs(centre - t) for t in ticks]))
        assert abs(centre - ticks[nearest]) < 0.5
        under[nearest].append(patch.get_height())
    return under


def qa_runs(root: Path, models: tuple[str, ...], missing: set[tuple[str, str]]) -> Path:
    """Dev runs of each model in the three Fig. 3 settings, except the ``missing`` ones."""
    for k, model in enumerate(models):
        for task, (setting, mode) in SETTINGS.items():
            if (model, task) in missing:
                continue
            write_synthetic_run(
                root,
                f"{model}-{task}",
                task=task,
                setting=setting,
                mode=mode,
                split="dev",
                judge=JUDGE,
                model_args=f"pretrained=org/{model}",
                score=lambda q, k=k, m=mode: 2.0 + k * 0.7 + (0.5 if m == "mt" else 0.0),
            )
    return root


@pytest.mark.parametrize("n_models", [1, 9])
def test_table2_and_figure3_name_every_bar_in_words(
    tmp_path: Path, drawn: dict[str, Figure], n_models: int
) -> None:
    models = MODELS[:n_models]
    # The first model of nine has no multi-turn runs: its empty slots must say so.
    missing = (
        {(models[0], "elitr_qa_mt_dev"), (models[0], "elitr_conv_dev")} if n_models > 1 else set()
    )
    report = build_report([qa_runs(tmp_path / "runs", models, missing)], tmp_path / "out")
    values = {
        (r["row"], r["setting"], r["mode"]): r["value"]
        for r in report.table("figure3_judge_score").records
    }
    order = [row[0] for row in report.table("figure3_judge_score").rows]  # the table's order
    assert sorted(order) == sorted(models)
    for name in ("table2.png", "figure3.png"):
        ax = drawn[name].axes[0]
        assert words(ax.get_ylabel()) and words(ax.get_xlabel()), name
        assert ax.get_ylim() == (0.5, 10.5)  # the judge's whole 1-10 scale
        if n_models == 1:
            # One model: the bars are the settings, each named under its own bar.
            titles = ["Single-turn QA", "Multi-turn QA", "Multi-turn Conv"]
            expected = titles if name == "figure3.png" else [f"{t} dev" for t in titles]
            under = assert_labels_under_bars(ax, expected)
            assert all(len(h) == 1 for h in under.values())
            assert models[0] in ax.get_title()
        else:
            under = assert_labels_under_bars(ax, order)
            assert [len(h) for h in under.values()] == [1 if m == models[0] else 3 for m in order]
            no_run = [t for t in ax.texts if t.get_text().strip() == "no run"]
            assert len(no_run) == 2
            legend = [t.get_text() for t in ax.get_legend().get_texts()]
            settings = ["Single-turn QA", "Multi-turn QA", "Multi-turn Conv"]
            if name == "table2.png":
                assert legend == [f"{t} dev" for t in settings]
            else:  # the dev-only bars are hatched and the legend says why
                assert legend == [*settings, "one split only (dev or test)"]
    # Figure 3's bars carry their values, and each group holds its own model's values.
    ax = drawn["figure3.png"].axes[0]
    under = assert_labels_under_bars(
        ax, order if n_models > 1 else ["Single-turn QA", "Multi-turn QA", "Multi-turn Conv"]
    )
    if n_models > 1:
        for i, model in enumerate(order):
            mine = sorted(v for (row, _, _), v in values.items() if row == model)
            assert sorted(under[i]) == pytest.approx(mine)
    shown = sorted(
        float(t.get_text()) for t in ax.texts if re.fullmatch(r"\d+\.\d\d", t.get_text())
    )
    assert shown == pytest.approx(sorted(round(v, 2) for v in values.values()))


@pytest.mark.parametrize("n_models", [1, 9])
def test_figure1_lines_are_told_apart_and_axes_say_what_they_show(
    tmp_path: Path, drawn: dict[str, Figure], n_models: int
) -> None:
    root = tmp_path / "runs"
    for k, model in enumerate(MODELS[:n_models]):
        for wer in (None, 0.2, 0.6):
            write_synthetic_run(
                root,
                f"{model}-{wer}",
                task="elitr_qa_test" if wer is None else f"elitr_qa_wer{int(wer * 100)}_test",
                setting="qa",
                mode="st",
                split="test2",
                judge=JUDGE,
                target_wer=wer,
                model_args=f"pretrained=org/{model}",
                score=lambda q, k=k, w=wer: max(1.0, 3.0 + k * 0.6 - 4 * (w or 0.0)),
            )
    report = build_report([root], tmp_path / "out")
    rows = list(dict.fromkeys(r["row"] for r in report.table("figure1_judge_score").records))
    assert sorted(rows) == sorted(MODELS[:n_models])
    fig = drawn["figure1.png"]
    left, right = fig.axes[:2]
    assert words(left.get_ylabel()) and words(left.get_xlabel()) and words(right.get_xlabel())
    legend = [t.get_text() for t in right.get_legend().get_texts()]
    assert legend == rows  # in the table's order
    for ax in (left, right):
        lines = [c.lines[0] for c in ax.containers if isinstance(c, ErrorbarContainer)]
        styles = {(str(line.get_color()), line.get_marker()) for line in lines}
        assert len(lines) == n_models and len(styles) == n_models


def test_figure2_evaluators_in_words_and_the_full_correlation_scale(
    tmp_path: Path, drawn: dict[str, Figure]
) -> None:
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.metaeval.qa import run_judge_check

    check = tmp_path / "check.json"
    check.write_text(json.dumps(run_judge_check(parse_judge_spec("replay,progress=false"))))
    build_report([], tmp_path / "out", judge_checks=[check])
    heat = drawn["figure2b.png"]
    ax = heat.axes[0]
    image = ax.get_images()[0]
    data = np.asarray(image.get_array(), dtype=float)
    vmin, vmax = image.get_clim()
    assert vmin <= np.nanmin(data) and vmax >= np.nanmax(data)
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert [squashed(t.get_text()) for t in ax.get_xticklabels()] == [squashed(n) for n in names]
    assert len(names) == data.shape[0] == data.shape[1] >= 3
    assert all(t.get_rotation() == 0 for t in ax.get_xticklabels())
    colourbar = heat.axes[1]
    assert words(colourbar.get_ylabel())
    bins = drawn["figure2a.png"].axes[0]
    assert words(bins.get_ylabel()) and words(bins.get_xlabel())
    assert len(bins.get_xticklabels()) == 10


@pytest.mark.parametrize("n_systems", [1, 9])
def test_minutes_scatter_keeps_one_style_per_system_across_panels(n_systems: int) -> None:
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.report.minutes import draw_scatter

    human = {
        (h.system, h.meeting_id, h.criterion): h.value
        for h in load_automin_human_scores("document")
    }
    systems = sorted({s for s, _, _ in human})[:n_systems]
    assert len(systems) == n_systems
    cells = {
        (s, m): 0.2 + 0.03 * i + 0.01 * (hash(m) % 5)
        for i, s in enumerate(systems)
        for (sys_, m, _) in human
        if sys_ == s
    }
    fig, records = draw_scatter("rouge1", cells, human, systems)
    axes = fig.axes[:4]
    assert axes[0].get_ylabel() == "ROUGE-1"
    styles: dict[str, set[tuple[Any, ...]]] = {}
    for ax in axes:
        assert words(ax.get_xlabel()) and "D " not in ax.get_title()
        for collection in ax.collections:
            colour = tuple(np.round(collection.get_facecolor()[0], 3))
            marker = tuple(np.round(collection.get_paths()[0].vertices, 3).ravel())
            styles.setdefault(collection.get_label(), set()).add((colour, marker))
    assert len(styles) == n_systems
    assert all(len(s) == 1 for s in styles.values())  # one colour and marker per system
    assert len({next(iter(s)) for s in styles.values()}) == n_systems  # and they differ
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == list(styles)
    assert len(records) == 4


def _meta_rows(systems: list[str]) -> list[Any]:
    """Meta-evaluation rows with an exact 0% metric, a partial one and a perfect one."""
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.metaeval.minutes import human_system_means, meta_evaluate

    human = load_automin_human_scores()
    adequacy = human_system_means(human, "document", "adequacy")
    ranked = sorted(systems, key=lambda s: adequacy[s])
    values = {
        "rouge1": {(s, ""): adequacy[s] for s in systems},  # 100% on D Adeq
        "rouge2": {(s, ""): -adequacy[s] for s in systems},  # 0% on D Adeq
        "rougeL": {(s, ""): float(i % 3) for i, s in enumerate(ranked)},
    }
    return meta_evaluate(values, human, systems)


def test_minutes_check_heatmap_colours_cover_the_data_and_0_is_not_30() -> None:
    from elitr_bench.metaeval.minutes_paper import TABLE9_SYSTEMS
    from elitr_bench.metaeval.minutes_tables import heatmap_figure

    rows = _meta_rows(list(TABLE9_SYSTEMS))
    fig = heatmap_figure(rows, "Pairwise accuracy, 7 systems", show_paper=True)
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == 2  # ours next to the paper's Table 9
    images = [ax.get_images()[0] for ax in panels]
    assert images[0].norm is images[1].norm  # one colour is one value in both panels
    data = np.concatenate([np.ravel(np.ma.filled(i.get_array(), np.nan)) for i in images])
    vmin, vmax = images[0].get_clim()
    assert vmin <= np.nanmin(data) == 0.0 and vmax >= np.nanmax(data) == 100.0
    cmap, norm = images[0].cmap, images[0].norm
    assert cmap(norm(0.0)) != cmap(norm(30.0))
    for ax in panels:
        labels = ax.get_xticklabels()
        assert len(labels) == 8 and all(t.get_rotation() == 0 for t in labels)
        assert words(ax.get_xlabel())
    colourbar = next(ax for ax in fig.axes if not ax.get_images() and ax.get_ylabel())
    assert words(colourbar.get_ylabel().replace("(%)", ""))


def test_minutes_check_heatmap_with_one_system_says_there_is_no_pair() -> None:
    from elitr_bench.metaeval.minutes_tables import heatmap_figure

    fig = heatmap_figure(_meta_rows(["gpt4"]), "Pairwise accuracy, 1 system", show_paper=False)
    (ax,) = [ax for ax in fig.axes if ax.get_images()]
    cells = [t.get_text() for t in ax.texts]
    assert cells and set(cells) == {"n/a"}
    assert "no pair" in ax.get_title()


def _arena(systems: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    """Ratings where conciseness ranks the systems in the reverse order of completeness."""
    from elitr_bench.judges.cream.matches import Match
    from elitr_bench.judges.cream.ratings import EloParams, agreement, rate
    from elitr_bench.judges.cream.report import ArenaResult, leaderboard_rows

    strength = {s: i for i, s in enumerate(systems)}
    meetings = ("m1", "m2", "m3")
    matches = []
    for meeting in meetings:
        for a, b in combinations(sorted(systems), 2):
            for metric, sign in (("completeness", 1), ("conciseness", -1)):
                result = 1.0 if sign * (strength[a] - strength[b]) > 0 else 0.0
                matches.append(Match(meeting, a, b, metric, result, 1 - result, result))
    params = EloParams()
    ratings = {
        m: rate(matches, systems, m, params, orders=10, bootstrap=20)
        for m in ("completeness", "conciseness")
    }
    result = ArenaResult(
        systems=tuple(sorted(systems)),
        meetings=meetings,
        comparisons=(),
        matches=tuple(matches),
        ratings=ratings,
        agreements={m: agreement(r) for m, r in ratings.items()},
        bias={},
        tolerance=0.02,
        params=params,
        orders=10,
        bootstrap=20,
    )
    return result, leaderboard_rows(result)


@pytest.mark.parametrize("n_systems", [2, 9])
def test_arena_leaderboard_puts_a_system_on_one_row_in_both_panels(n_systems: int) -> None:
    from elitr_bench.judges.cream.report import leaderboard_figure

    systems = [f"system-{chr(97 + i)}" for i in range(n_systems)]
    result, rows = _arena(systems)
    fig = leaderboard_figure(result, rows)
    panels = fig.axes
    assert len(panels) == 2
    # One y axis for both panels (the right one hides its copy of the labels).
    assert panels[0].get_shared_y_axes().joined(panels[0], panels[1])
    assert list(panels[0].get_yticks()) == list(panels[1].get_yticks())
    order = [t.get_text() for t in panels[0].get_yticklabels()]
    assert sorted(order) == sorted(systems)
    assert panels[0].get_xlim() == panels[1].get_xlim()  # one rating axis
    # The two metrics rank the systems in opposite orders, yet each point sits on the
    # row of its system: read each panel's Elo points back from the errorbar data.
    for ax, metric in zip(panels, ("completeness", "conciseness"), strict=True):
        assert words(ax.get_xlabel())
        row_y = dict(zip(order, ax.get_yticks(), strict=True))
        elo = {r["system"]: r["elo"] for r in rows if r["metric"] == metric}
        points = next(c for c in ax.containers if isinstance(c, ErrorbarContainer))
        for x, y in points.lines[0].get_xydata():
            system = min(elo, key=lambda s: abs(elo[s] - x))
            assert abs(y - row_y[system]) < 0.5
        ranks = sorted(int(t.get_text()[1:]) for t in ax.texts if t.get_text().startswith("#"))
        assert ranks == list(range(1, n_systems + 1))
    first = {r["system"]: r["elo"] for r in rows if r["metric"] == "completeness"}
    top_down = [
        t.get_text()
        for t in sorted(panels[0].get_yticklabels(), key=lambda t: -t.get_position()[1])
    ]
    assert top_down == sorted(systems, key=lambda s: -first[s])  # best completeness on top


def test_figure3_is_skipped_with_a_note_when_no_question_differs(
    tmp_path: Path, drawn: dict[str, Figure]
) -> None:
    """A --limit run that stops before every QA/Conv-differing question draws no empty axes."""
    from elitr_bench.report.tables import differing_questions

    differing = differing_questions()["dev"]
    folder = write_synthetic_run(
        tmp_path / "runs",
        "limited",
        task="elitr_qa_dev",
        setting="qa",
        mode="st",
        split="dev",
        judge=JUDGE,
        score=lambda q: 3.0,
    )
    samples = next(folder.rglob("samples_*.jsonl"))
    kept = [
        line
        for line in samples.read_text().splitlines()
        if (json.loads(line)["doc"]["meeting_id"], json.loads(line)["doc"]["question_id"])
        not in differing
    ]
    assert 0 < len(kept) < len(samples.read_text().splitlines())
    samples.write_text("\n".join(kept) + "\n")

    report = build_report([tmp_path / "runs"], tmp_path / "out")
    assert "figure3.png" not in drawn and "table2.png" in drawn
    assert any(n.startswith("Figure 3 skipped: none of the runs' questions") for n in report.notes)
