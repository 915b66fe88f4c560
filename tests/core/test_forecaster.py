"""A fill forecast's samples and episodes (qmon.core.forecaster): samples at multiples of the step, bounded;
one FIRING per episode; RESOLVED by its hold, or when the threshold is reached or no longer applies; the same
records whether the samples are taken at once or one by one."""

from __future__ import annotations

import copy
import random

from qmon.core.forecaster import HOLD, SAMPLES, Forecaster, ForecastSettings, Target, start

SETTINGS = ForecastSettings(horizon_ms=15 * 60_000, min_confidence=0.5)
STEP = SETTINGS.step_ms  # 30 s
T0 = 1_700_000_000_000 - 1_700_000_000_000 % STEP
TARGET = Target("FULL", 0, 1000)


def test_the_step_is_the_horizon_over_the_samples_and_a_horizon_of_0_turns_forecasts_off():
    assert STEP == 30_000 and SAMPLES * STEP == SETTINGS.horizon_ms
    assert ForecastSettings(horizon_ms=0).step_ms == 0


def test_samples_fall_on_multiples_of_the_step_and_a_gap_takes_the_level_it_left():
    fc = start(SETTINGS, T0 + 5, 1)
    assert fc["at"] == T0 + STEP
    f = Forecaster(SETTINGS, fc, ("S",))
    assert f.advance(T0 + STEP - 1, [7], [TARGET]) == [] and fc["s"] == [[]]
    f.advance(T0 + 3 * STEP, [7], [TARGET])  # the samples at 1, 2 and 3 steps: 7 since the last record
    assert fc["s"] == [[7, 7, 7]] and fc["at"] == T0 + 4 * STEP


def test_the_samples_are_bounded_and_a_long_gap_takes_no_more_than_the_window():
    fc = start(SETTINGS, T0, 2)
    f = Forecaster(SETTINGS, fc, ("S",))
    f.advance(T0 + 10_000 * STEP, [3, 4], [])
    assert fc["s"] == [[3] * SAMPLES, [4] * SAMPLES] and fc["at"] == T0 + 10_001 * STEP


def _fill(f: Forecaster, levels: list[int], first: int = 1) -> list:
    """One sample per level, each at its own instant."""
    out = []
    for k, level in enumerate(levels, start=first):
        out.extend(f.advance(T0 + k * STEP, [level], [TARGET]))
    return out


def test_a_steady_fill_fires_once_with_the_instant_it_predicts():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    # 20 a sample: the 21st sample is 400, 600 to go at 20 a sample of 30 s: 15 minutes, the horizon
    out = _fill(f, [20 * k for k in range(40)])
    [fired] = out
    assert fired.state == "FIRING" and fired.key == "FULL" and fired.why == "trend"
    assert fired.at == T0 + 21 * STEP and fired.eta == fired.at + 15 * 60_000
    assert fired.trend is not None and fired.trend.confidence == 1.0
    assert fc["on"]["FULL"] == {"id": fired.alert_id, "eta": fired.eta, "clear": 0}
    assert _fill(f, [20 * k for k in range(40, 45)], first=41) == []  # no second FIRING while it lasts


def test_a_fill_that_stops_resolves_after_the_hold_and_not_before():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    fired = _fill(f, [20 * k for k in range(30)])
    assert [d.state for d in fired] == ["FIRING"]
    out, k = [], 31
    while not out:  # flat at 580: the trend fades out of the window
        out = f.advance(T0 + k * STEP, [580], [TARGET])
        k += 1
    [resolved] = out
    assert resolved.state == "RESOLVED" and resolved.why == "trend" and resolved.alert_id == fired[0].alert_id
    assert fc["on"] == {}
    assert fc["s"][0][-HOLD:] == [580] * HOLD  # it held for HOLD samples first


def test_a_trend_wobbling_at_the_horizon_is_one_episode():
    """Past the horizon by a few minutes, then inside it again: the margin holds the episode."""
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    levels = [20 * k for k in range(30)] + [580 + 17 * k for k in range(1, 10)] + [733 + 20 * k for k in range(1, 5)]
    out = _fill(f, levels)
    assert [d.state for d in out] == ["FIRING"]


def test_reached_resolves_the_episode_and_close_resolves_them_all():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    [fired] = _fill(f, [20 * k for k in range(30)])
    assert f.reached("OVFLWMAX", T0, "reached") is None  # nothing fires for it
    resolved = f.reached("FULL", T0 + 99, "reached")
    assert resolved is not None and (resolved.state, resolved.at, resolved.why) == ("RESOLVED", T0 + 99, "reached")
    assert resolved.alert_id == fired.alert_id and resolved.eta == fired.eta  # (what its FIRING predicted)
    fc["on"] = {"FULL": {"id": "a", "eta": 1, "clear": 0}, "OVFLWMAX": {"id": "b", "eta": 1, "clear": 0}}
    assert [(d.key, d.why) for d in f.close(T0)] == [("FULL", "gone"), ("OVFLWMAX", "gone")]
    assert fc["on"] == {}


def test_a_target_that_no_longer_applies_resolves_at_the_next_sample():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    _fill(f, [20 * k for k in range(30)])
    [gone] = f.advance(T0 + 31 * STEP, [600], [])
    assert (gone.state, gone.why) == ("RESOLVED", "gone")


def test_a_confidence_below_the_minimum_never_fires():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    saw = [200 + 100 * (k % 8) for k in range(60)]  # climbs to 900 and drops back, every 8 samples
    assert _fill(f, saw) == []


def test_samples_taken_at_once_or_one_by_one_give_the_same_records_and_state():
    """A level that changes only at records (a fill, then flat, a fill again): samples judged as each falls
    due, or all those due at the next record, give the same decisions and state."""
    rng = random.Random(3)
    records, level, t = [], 0, T0
    for k in range(400):
        t += rng.choice([1_000, 20_000, 45_000, 200_000])
        level = max(0, level + (rng.randrange(-5, 40) if k < 60 or k > 150 else rng.randrange(-5, 6)))
        records.append((t, level))
    one, at_once = start(SETTINGS, T0, 1), start(SETTINGS, T0, 1)
    f1, f2 = Forecaster(SETTINGS, one, ("S",)), Forecaster(SETTINGS, at_once, ("S",))
    by_one, together, before = [], [], 0
    for t, level in records:
        for at in range(one["at"], t + 1, STEP):  # every sample instant before this record: the level before it
            by_one.extend(f1.advance(at, [before], [TARGET]))
        together.extend(f2.advance(t, [before], [TARGET]))
        before = level
    assert [d.state for d in by_one].count("FIRING") >= 1
    assert by_one == together and one == at_once


def test_a_quiet_sample_is_the_sample_advance_would_take_when_nothing_comes_of_it():
    fc = start(SETTINGS, T0, 1)
    f = Forecaster(SETTINGS, fc, ("S",))
    _fill(f, [5] * 20)
    before = copy.deepcopy(fc)
    assert f.quiet_sample(T0 + 21 * STEP, [5], [TARGET])  # flat at 5, far from 1000
    quiet = copy.deepcopy(fc)
    Forecaster(SETTINGS, before, ("S",)).advance(T0 + 21 * STEP, [5], [TARGET])
    assert quiet == before
    assert not f.quiet_sample(T0 + 23 * STEP, [5], [TARGET])  # two samples due: ``advance``'s
    assert not f.quiet_sample(T0 + 22 * STEP, [990], [TARGET])  # within reach: to be judged
    assert fc == quiet  # (a refusal changes nothing)
