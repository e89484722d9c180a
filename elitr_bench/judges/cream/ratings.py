"""Ratings from matches: Elo as in CREAM Sec. 4.1.1, a Bradley-Terry fit, bootstrap intervals.

Sequential Elo depends on the order of the matches, so the Elo rating reported is the mean
over many seeded random orders; matches are applied meeting by meeting (a random order of
meetings, and a random order of the pairs within each meeting). Bradley-Terry fits all
matches at once (no order), by maximum likelihood with scipy; it is put on the Elo scale
(``initial + scale * log10(strength)``) so the two can be read side by side. Intervals come
from a bootstrap that resamples *meetings* (matches of one meeting share its summaries, so
they are not independent); each Elo replicate also draws its own match order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from elitr_bench.judges.cream.matches import Match

DEFAULT_INITIAL = 1000.0
DEFAULT_K = 32.0
DEFAULT_SCALE = 400.0
DEFAULT_ORDERS = 200
DEFAULT_BOOTSTRAP = 1000
DEFAULT_BT_PRIOR = 0.1
"""L2 penalty on Bradley-Terry log-strengths (a Gaussian prior of sd ~3.2, ~550 Elo points):
keeps a system that won every match finite, and is negligible against many matches."""


@dataclass(frozen=True)
class EloParams:
    """Parameters of Sec. 4.1.1's Elo formula (the paper prints the formula, not values).

    Attributes:
        initial: Rating every system starts from.
        k: K-factor, the largest change per match.
        scale: The 400 of ``E = 1 / (1 + 10 ** ((R_opp - R) / 400))``.
    """

    initial: float = DEFAULT_INITIAL
    k: float = DEFAULT_K
    scale: float = DEFAULT_SCALE


def expected_score(rating: float, opponent: float, scale: float = DEFAULT_SCALE) -> float:
    """Sec. 4.1.1: ``E = 1 / (1 + 10^((R_opponent - R_old) / scale))``."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / scale))


def elo_update(
    rating_a: float, rating_b: float, result_a: float, params: EloParams = EloParams()
) -> tuple[float, float]:
    """Both new ratings after one match: ``R_new = R_old + K * (S - E)`` for each side."""
    e_a = expected_score(rating_a, rating_b, params.scale)
    delta = params.k * (result_a - e_a)
    return rating_a + delta, rating_b - delta


@dataclass(frozen=True)
class Indexed:
    """Scored matches of one metric as index arrays (for vectorised rating code)."""

    systems: tuple[str, ...]
    meetings: tuple[str, ...]
    a: NDArray[np.int64]
    b: NDArray[np.int64]
    result: NDArray[np.float64]
    meeting: NDArray[np.int64]


def index_matches(matches: Sequence[Match], systems: Sequence[str]) -> Indexed:
    """Keep the scored matches and turn names into indices."""
    pos = {s: i for i, s in enumerate(systems)}
    scored = [m for m in matches if m.result is not None]
    meetings = tuple(sorted({m.meeting_id for m in scored}))
    mpos = {m: i for i, m in enumerate(meetings)}
    return Indexed(
        tuple(systems),
        meetings,
        np.array([pos[m.a] for m in scored], dtype=np.int64),
        np.array([pos[m.b] for m in scored], dtype=np.int64),
        np.array([m.result for m in scored], dtype=np.float64),
        np.array([mpos[m.meeting_id] for m in scored], dtype=np.int64),
    )


def _elo_rows(
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    result: NDArray[np.float64],
    valid: NDArray[np.bool_],
    n_systems: int,
    params: EloParams,
) -> NDArray[np.float64]:
    """Sequential Elo for many match sequences at once; row r plays ``a[r, t]`` vs ``b[r, t]``."""
    rows = a.shape[0]
    ratings = np.full((rows, n_systems), params.initial, dtype=np.float64)
    idx = np.arange(rows)
    for t in range(a.shape[1]):
        ia, ib = a[:, t], b[:, t]
        ra, rb = ratings[idx, ia], ratings[idx, ib]
        expected = 1.0 / (1.0 + 10.0 ** ((rb - ra) / params.scale))
        delta = np.where(valid[:, t], params.k * (result[:, t] - expected), 0.0)
        ratings[idx, ia] = ra + delta
        ratings[idx, ib] = rb - delta
    return ratings


def sequential_elo(
    matches: Sequence[Match], systems: Sequence[str], params: EloParams = EloParams()
) -> dict[str, float]:
    """Final Elo ratings after playing the scored matches once, in the given order."""
    data = index_matches(matches, systems)
    if data.a.size == 0:
        return dict.fromkeys(systems, params.initial)
    valid = np.ones((1, data.a.size), dtype=bool)
    final = _elo_rows(
        data.a[None, :], data.b[None, :], data.result[None, :], valid, len(systems), params
    )[0]
    return {s: float(final[i]) for i, s in enumerate(systems)}


def _meeting_order(
    meeting: NDArray[np.int64], n_meetings: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """A random order of matches that plays meetings one after another."""
    meeting_rank = rng.permutation(n_meetings)[meeting]
    jitter = np.asarray(rng.random(size=meeting.shape[0]), dtype=np.float64)
    return np.lexsort((jitter, meeting_rank)).astype(np.int64)


def elo_orders(
    data: Indexed, params: EloParams = EloParams(), orders: int = DEFAULT_ORDERS, seed: int = 0
) -> NDArray[np.float64]:
    """Final Elo ratings of ``orders`` seeded random match orders, shape (orders, systems)."""
    n = len(data.systems)
    if data.a.size == 0:
        return np.full((max(orders, 1), n), params.initial)
    rng = np.random.default_rng(seed)
    perms = np.stack([_meeting_order(data.meeting, len(data.meetings), rng) for _ in range(orders)])
    valid = np.ones(perms.shape, dtype=bool)
    return _elo_rows(data.a[perms], data.b[perms], data.result[perms], valid, n, params)


def bradley_terry(
    data: Indexed,
    weights: NDArray[np.float64] | None = None,
    prior: float = DEFAULT_BT_PRIOR,
    params: EloParams = EloParams(),
    start: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Maximum-likelihood Bradley-Terry ratings on the Elo scale (draws count half a win).

    ``P(a beats b) = 1 / (1 + 10^((R_b - R_a) / scale))``, the same curve as Elo's expected
    score, so a BT rating difference means what an Elo difference means. Ratings average
    to ``params.initial``.

    Args:
        data: Scored matches.
        weights: Per-match weights (bootstrap multiplicities); None = all 1.
        prior: L2 penalty on the natural-log strengths (keeps unbeaten systems finite).
        params: Initial rating (mean of the result) and scale.
        start: Ratings to start the optimiser from (bootstrap replicates start at the fit).
    """
    from scipy.optimize import minimize

    n = len(data.systems)
    w = np.ones(data.a.shape[0]) if weights is None else weights
    wins = np.zeros((n, n))
    np.add.at(wins, (data.a, data.b), w * data.result)
    np.add.at(wins, (data.b, data.a), w * (1.0 - data.result))

    def objective(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        diff = theta[:, None] - theta[None, :]
        log_p = -np.logaddexp(0.0, -diff)  # log sigmoid(theta_i - theta_j)
        value = -float(np.sum(wins * log_p)) + 0.5 * prior * float(theta @ theta)
        p = np.exp(log_p)
        grad_pairs = wins * (1.0 - p)  # d/dtheta_i of wins_ij * log sigmoid(theta_i - theta_j)
        grad = -(grad_pairs.sum(axis=1) - grad_pairs.sum(axis=0)) + prior * theta
        return value, grad

    games = wins + wins.T
    ridge = prior * np.eye(n)

    def hessian(theta: NDArray[np.float64]) -> NDArray[np.float64]:
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        curvature = games * p * (1.0 - p)
        hess = -curvature
        np.fill_diagonal(hess, curvature.sum(axis=1))
        return np.asarray(hess + ridge, dtype=np.float64)

    x0 = np.zeros(n) if start is None else (start - params.initial) * math.log(10.0) / params.scale
    # A convex problem with an exact Hessian: a trust-region Newton method needs a handful
    # of iterations (quasi-Newton L-BFGS-B was ~30x slower in the bootstrap loop).
    fit = minimize(objective, x0, jac=True, hess=hessian, method="trust-ncg")
    theta = fit.x - fit.x.mean()
    return np.asarray(params.initial + params.scale / math.log(10.0) * theta, dtype=np.float64)


@dataclass(frozen=True)
class Ratings:
    """Elo and Bradley-Terry ratings of one metric with their intervals.

    Attributes:
        metric: The metric rated.
        systems: Systems in input order.
        elo: Mean final Elo over the random match orders.
        elo_order_sd: Standard deviation of the final Elo over those orders.
        elo_low: Lower end of the bootstrap interval (meetings resampled, random order).
        elo_high: Upper end.
        bt: Bradley-Terry rating on the Elo scale.
        bt_low: Lower end of its bootstrap interval.
        bt_high: Upper end.
        matches: Scored matches used.
        meetings: Meetings with at least one scored match.
        level: Interval level (e.g. 0.95).
    """

    metric: str
    systems: tuple[str, ...]
    elo: tuple[float, ...]
    elo_order_sd: tuple[float, ...]
    elo_low: tuple[float, ...]
    elo_high: tuple[float, ...]
    bt: tuple[float, ...]
    bt_low: tuple[float, ...]
    bt_high: tuple[float, ...]
    matches: int
    meetings: int
    level: float


def rate(
    matches: Sequence[Match],
    systems: Sequence[str],
    metric: str,
    params: EloParams = EloParams(),
    orders: int = DEFAULT_ORDERS,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    level: float = 0.95,
    seed: int = 0,
    bt_prior: float = DEFAULT_BT_PRIOR,
) -> Ratings:
    """Elo (mean over orders) and BT ratings of one metric, with meeting-bootstrap intervals."""
    data = index_matches([m for m in matches if m.metric == metric], systems)
    n = len(systems)
    finals = elo_orders(data, params, orders, seed)
    bt = bradley_terry(data, prior=bt_prior, params=params)
    elo_boot = np.tile(finals.mean(axis=0), (1, 1))
    bt_boot = bt[None, :]
    n_meet = len(data.meetings)
    if bootstrap > 0 and n_meet > 0 and data.a.size > 0:
        rng = np.random.default_rng(seed + 1)
        per_meeting = [np.flatnonzero(data.meeting == i) for i in range(n_meet)]
        draws = rng.integers(0, n_meet, size=(bootstrap, n_meet))
        length = max(sum(len(per_meeting[j]) for j in row) for row in draws)
        a_rows = np.zeros((bootstrap, length), dtype=np.int64)
        b_rows = np.zeros((bootstrap, length), dtype=np.int64)
        r_rows = np.zeros((bootstrap, length))
        valid = np.zeros((bootstrap, length), dtype=bool)
        bt_list = []
        for r, row in enumerate(draws):
            picked = np.concatenate([rng.permutation(per_meeting[j]) for j in row])
            a_rows[r, : picked.size] = data.a[picked]
            b_rows[r, : picked.size] = data.b[picked]
            r_rows[r, : picked.size] = data.result[picked]
            valid[r, : picked.size] = True
            counts = np.bincount(picked, minlength=data.a.size).astype(np.float64)
            bt_list.append(bradley_terry(data, counts, bt_prior, params, start=bt))
        elo_boot = _elo_rows(a_rows, b_rows, r_rows, valid, n, params)
        bt_boot = np.stack(bt_list)
    tail = (1.0 - level) / 2.0 * 100.0
    return Ratings(
        metric=metric,
        systems=tuple(systems),
        elo=tuple(float(x) for x in finals.mean(axis=0)),
        elo_order_sd=tuple(float(x) for x in finals.std(axis=0)),
        elo_low=tuple(float(x) for x in np.percentile(elo_boot, tail, axis=0)),
        elo_high=tuple(float(x) for x in np.percentile(elo_boot, 100.0 - tail, axis=0)),
        bt=tuple(float(x) for x in bt),
        bt_low=tuple(float(x) for x in np.percentile(bt_boot, tail, axis=0)),
        bt_high=tuple(float(x) for x in np.percentile(bt_boot, 100.0 - tail, axis=0)),
        matches=int(data.a.size),
        meetings=n_meet,
        level=level,
    )


def ranking(systems: Sequence[str], values: Sequence[float]) -> list[str]:
    """Systems from best to worst rating (ties keep input order)."""
    order = sorted(range(len(systems)), key=lambda i: -values[i])
    return [systems[i] for i in order]


@dataclass(frozen=True)
class Agreement:
    """How well Elo and Bradley-Terry agree on one metric.

    Attributes:
        spearman: Spearman correlation of the two ratings (None below 3 systems).
        kendall: Kendall tau-b of the two ratings (None below 3 systems).
        pairs_agree: Pairs of systems both order the same way.
        pairs: All pairs of systems.
    """

    spearman: float | None
    kendall: float | None
    pairs_agree: int
    pairs: int


def agreement(ratings: Ratings) -> Agreement:
    """Rank agreement of Elo (mean over orders) and Bradley-Terry ratings."""
    from scipy.stats import kendalltau, spearmanr

    elo, bt = np.array(ratings.elo), np.array(ratings.bt)
    n = len(elo)
    agree = sum(
        np.sign(elo[i] - elo[j]) == np.sign(bt[i] - bt[j])
        for i in range(n)
        for j in range(i + 1, n)
    )
    spear = kend = None
    if n >= 3 and np.ptp(elo) > 0 and np.ptp(bt) > 0:
        spear = float(spearmanr(elo, bt).statistic)
        kend = float(kendalltau(elo, bt).statistic)
    return Agreement(spear, kend, int(agree), n * (n - 1) // 2)
