"""CREAM matches and ratings: hand-computed Elo, Bradley-Terry on known tournaments, Table 3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from elitr_bench.judges.cream.matches import (
    Match,
    build_matches,
    matches_from_matrix,
    outcome,
    pairwise_matrix,
    position_bias,
)
from elitr_bench.judges.cream.ratings import (
    EloParams,
    agreement,
    bradley_terry,
    elo_orders,
    elo_update,
    expected_score,
    index_matches,
    ranking,
    rate,
    sequential_elo,
)
from elitr_bench.judges.cream.scoring import Comparison, SideScore


def _m(meeting: str, a: str, b: str, result: float, metric: str = "completeness") -> Match:
    return Match(meeting, a, b, metric, 0.5, 0.5, result)


def test_elo_updates_by_hand() -> None:
    # Sec. 4.1.1 with R=1000 each, K=32, scale 400: E = 0.5, the winner gains 16.
    assert expected_score(1000, 1000) == 0.5
    assert elo_update(1000, 1000, 1.0) == (1016.0, 984.0)
    # Then b (984) beats a (1016): E_b = 1 / (1 + 10^(32/400)) = 0.4540781, K(1-E_b) = 17.46950.
    a, b = elo_update(1016.0, 984.0, 0.0)
    assert (a, b) == pytest.approx((998.53050, 1001.46950), abs=1e-4)
    # A draw between equals changes nothing; K and the scale are parameters.
    assert elo_update(1200, 1200, 0.5) == (1200, 1200)
    assert elo_update(1500, 1500, 1.0, EloParams(initial=1500, k=10, scale=400)) == (1505, 1495)
    assert expected_score(1100, 1000, scale=200) == pytest.approx(1 / (1 + 10**-0.5))


def test_sequential_elo_matches_hand_and_depends_on_order() -> None:
    played = [_m("m1", "a", "b", 1.0), _m("m1", "a", "b", 0.0)]
    final = sequential_elo(played, ["a", "b"])
    assert final == pytest.approx({"a": 998.53050, "b": 1001.46950}, abs=1e-4)
    reverse = sequential_elo(played[::-1], ["a", "b"])
    assert reverse == pytest.approx({"a": 1001.46950, "b": 998.53050}, abs=1e-4)
    # Averaged over random orders the two matches cancel out exactly by symmetry.
    two_meetings = [_m("m1", "a", "b", 1.0), _m("m2", "a", "b", 0.0)]
    finals = elo_orders(index_matches(two_meetings, ["a", "b"]), orders=400, seed=3)
    assert set(np.round(finals[:, 0], 4)) == {998.5305, 1001.4695}
    assert finals.mean(axis=0) == pytest.approx([1000, 1000], abs=3)


def _tournament(truth: dict[str, float], meetings: int, seed: int) -> list[Match]:
    rng = np.random.default_rng(seed)
    names = sorted(truth)
    out = []
    for k in range(meetings):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                p = expected_score(truth[a], truth[b])
                out.append(_m(f"m{k:03d}", a, b, float(rng.random() < p)))
    return out


def test_bradley_terry_recovers_a_known_order_and_gaps() -> None:
    truth = {"alpha": 1200.0, "beta": 1100.0, "gamma": 1000.0, "delta": 700.0}
    matches = _tournament(truth, meetings=300, seed=7)
    systems = sorted(truth)
    bt = bradley_terry(index_matches(matches, systems))
    fitted = dict(zip(systems, bt, strict=True))
    assert ranking(systems, bt) == ["alpha", "beta", "gamma", "delta"]
    assert np.mean(bt) == pytest.approx(1000.0)
    for a in systems:  # rating gaps recovered within sampling error (1,800 matches)
        assert fitted[a] - fitted["gamma"] == pytest.approx(truth[a] - truth["gamma"], abs=45)


def test_small_tournament_elo_and_bt_agree_with_intervals() -> None:
    # Four systems, 6 meetings: A beats all, B beats C and D, C beats D, with two upsets
    # and a draw.
    results = {("A", "B"): 1.0, ("A", "C"): 1.0, ("A", "D"): 1.0, ("B", "C"): 1.0}
    results |= {("B", "D"): 1.0, ("C", "D"): 1.0}
    matches = []
    for k in range(6):
        for (a, b), r in results.items():
            if (k, a, b) == (1, "A", "B") or (k, a, b) == (4, "C", "D"):
                r = 0.0
            if (k, a, b) == (2, "B", "C"):
                r = 0.5
            matches.append(_m(f"m{k}", a, b, r))
    r = rate(matches, ["D", "C", "B", "A"], "completeness", orders=50, bootstrap=60, seed=1)
    assert ranking(r.systems, r.elo) == ["A", "B", "C", "D"]
    assert ranking(r.systems, r.bt) == ["A", "B", "C", "D"]
    assert all(lo <= v <= hi for lo, v, hi in zip(r.elo_low, r.elo, r.elo_high, strict=True))
    assert all(lo <= v <= hi for lo, v, hi in zip(r.bt_low, r.bt, r.bt_high, strict=True))
    assert r.matches == 36 and r.meetings == 6
    ag = agreement(r)
    assert (ag.pairs_agree, ag.pairs, ag.spearman, ag.kendall) == (6, 6, 1.0, 1.0)
    # Same seed, same numbers; Elo is centred on the initial rating.
    again = rate(matches, ["D", "C", "B", "A"], "completeness", orders=50, bootstrap=60, seed=1)
    assert again == r
    assert sum(r.elo) / 4 == pytest.approx(1000.0)


# The CREAM paper's Table 3 (QMSum, 16 key facts). Sec. 4.2.1 says row GPT-4o / column
# GPT-3.5 (92.1%) is GPT-3.5's score; with that reading the conciseness order is the
# reverse of Table 5. Read as the ROW system's score against the column system, the
# conciseness order is Table 5's (GPT-4 > GPT-3.5 > GPT-4o): that reading is used.
TABLE3_KF16 = {
    "completeness": {
        "gpt-3.5": {"gpt-4": 0.788, "gpt-4o": 0.842},
        "gpt-4": {"gpt-3.5": 0.766, "gpt-4o": 0.866},
        "gpt-4o": {"gpt-3.5": 0.921, "gpt-4": 0.940},
    },
    "conciseness": {
        "gpt-3.5": {"gpt-4": 0.900, "gpt-4o": 0.875},
        "gpt-4": {"gpt-3.5": 0.936, "gpt-4o": 0.921},
        "gpt-4o": {"gpt-3.5": 0.673, "gpt-4": 0.684},
    },
}


def _transpose(matrix: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {row: {col: matrix[col][row] for col in cols} for row, cols in matrix.items()}


def _order(metric: str, matrix: dict[str, dict[str, float]]) -> tuple[list[str], list[str]]:
    systems = sorted(matrix)
    r = rate(matches_from_matrix(matrix, metric), systems, metric, orders=50, bootstrap=0)
    return ranking(systems, r.elo), ranking(systems, r.bt)


def test_table3_conciseness_gives_table5_order() -> None:
    elo, bt = _order("conciseness", TABLE3_KF16["conciseness"])
    assert elo == bt == ["gpt-4", "gpt-3.5", "gpt-4o"]  # Table 5, conciseness (CREAM)
    # The Sec. 4.2.1 sentence's reading (cell = column system's score) reverses it.
    elo, bt = _order("conciseness", _transpose(TABLE3_KF16["conciseness"]))
    assert elo == bt == ["gpt-4o", "gpt-3.5", "gpt-4"]


def test_table3_completeness_order_differs_from_table5() -> None:
    # From the aggregates GPT-3.5 edges GPT-4 (78.8% vs 76.6%); Table 5 ranks GPT-4 second.
    elo, bt = _order("completeness", TABLE3_KF16["completeness"])
    assert elo == bt == ["gpt-4o", "gpt-3.5", "gpt-4"]
    # A 2.2-point gap is a draw under a 3-point tolerance: GPT-4 and GPT-3.5 then tie.
    ms = matches_from_matrix(TABLE3_KF16["completeness"], "completeness", tolerance=0.03)
    assert {(m.a, m.b): m.result for m in ms}[("gpt-3.5", "gpt-4")] == 0.5


def _cmp(meeting: str, first: str, second: str, s1: float, s2: float) -> Comparison:
    sides = (
        SideScore(first, 4, {"completeness": s1, "conciseness": 0.5}),
        SideScore(second, 4, {"completeness": s2, "conciseness": 0.5}),
    )
    return Comparison(meeting, first, second, ("f",), sides, "ok")


def test_matches_cancel_order_count_position_bias_and_use_tolerance() -> None:
    comps = [
        _cmp("m1", "x", "y", 0.9, 0.5),  # x first: x wins
        _cmp("m1", "y", "x", 0.8, 0.6),  # y first: y wins -> the order decided
        _cmp("m2", "x", "y", 0.7, 0.3),
        _cmp("m2", "y", "x", 0.5, 0.6),  # x wins both orders
        _cmp("m3", "x", "y", 0.6, 0.6),  # m3 lacks the other order: unscored
    ]
    matches = build_matches(comps, tolerance=0.02)
    by = {(m.meeting_id, m.metric): m for m in matches}
    m1 = by[("m1", "completeness")]
    assert (m1.a, m1.b) == ("x", "y")
    assert (m1.score_a, m1.score_b) == pytest.approx((0.75, 0.65))
    assert (m1.result, m1.result_a_first, m1.result_b_first, m1.order_changed) == (
        1.0,
        1.0,
        0.0,
        True,
    )
    assert by[("m2", "completeness")].order_changed is False
    assert by[("m1", "conciseness")].result == 0.5  # equal scores: draw
    m3 = by[("m3", "completeness")]
    assert m3.result is None and "y first" in m3.reason
    bias = position_bias(comps, matches)["completeness"]
    assert (bias.pairs, bias.changed, bias.changed_share) == (2, 1, 0.5)
    # Gains of going first: m1 x 0.9-0.6, y 0.8-0.5; m2 x 0.7-0.6, y 0.5-0.3.
    assert bias.first_gain == pytest.approx((0.3 + 0.3 + 0.1 + 0.2) / 4)
    assert outcome(0.50, 0.52, 0.02) == 0.5 and outcome(0.50, 0.53, 0.02) == 0.0
    matrix = pairwise_matrix(matches, ["x", "y"], "completeness")
    assert matrix["x"]["y"] == pytest.approx((0.75 + 0.65) / 2)
    assert matrix["y"]["x"] == pytest.approx((0.65 + 0.4) / 2)


def test_only_scored_matches_and_the_systems_that_played_them_are_rated(tmp_path: Path) -> None:
    import csv

    from elitr_bench.judges.cream.arena import ArenaState, SystemMinutes
    from elitr_bench.judges.cream.report import analyse, write_outputs

    def side(system: str, comp: float | None, conc: float | None, reason: str = "") -> SideScore:
        scores = {"completeness": comp, "conciseness": conc}
        return SideScore(system, 2, scores, (), reason, n_sentences=3, unit="sentence")

    yes = 'conciseness unscored: alignment entry 1: "Yes" without line numbers'
    comps = {}
    for m in ("m1", "m2"):
        for first, second in (("x", "y"), ("y", "x")):
            sides = (
                side(first, 0.9 if first == "x" else 0.5, None, yes),
                side(second, 0.9 if second == "x" else 0.5, None, yes),
            )
            comps[(m, first, second)] = Comparison(m, first, second, ("f",), sides, "partial")
        # z's extraction failed every time: it never plays a scored match.
        for first, second in (("x", "z"), ("z", "x")):
            reason = "extraction reply holds no bullet list of key facts (asked 2 times)"
            sides = (side(first, None, None, reason), side(second, None, None, reason))
            comps[(m, first, second)] = Comparison(m, first, second, (), sides, "unscored", reason)
    minutes = {"m1": "- Anna came. Bob left. Carl stayed.\n- Done", "m2": "Hello."}
    state = ArenaState(
        judge={"unit": "sentence"},
        meetings=["m1", "m2"],
        systems={s: SystemMinutes(s, minutes) for s in ("x", "y", "z")},
        comparisons=comps,
    )
    result = analyse(state, 0.0, orders=5, bootstrap=5)
    assert set(result.ratings) == {"completeness"}
    assert result.ratings["completeness"].systems == ("x", "y")
    assert result.unrated_systems["completeness"] == ("z",)
    assert result.unrated["conciseness"] == (
        f"no scored conciseness match; most common reason (8 of 12): {yes}"
    )
    assert result.sizes["x"] == {"m1": (2, 4), "m2": (1, 1)}
    paths = write_outputs(result, tmp_path)
    rows = list(csv.DictReader(paths["ratings_csv"].open()))
    assert {(r["system"], r["metric"]) for r in rows} == {
        (s, f"cream_{k}_completeness") for s in ("x", "y") for k in ("elo", "bt")
    }
    board = paths["leaderboard_md"].read_text()
    assert "## conciseness\n\nNo ratings: no scored conciseness match" in board
    assert "Unrated (no scored completeness match): z." in board
    assert "| x | 3 | 5 | 1.67 |" in board
