"""The trend estimator (qmon.core.forecast) on exact series: a steady fill gives the exact instant; a burst
does not tilt the rate; a consumer's sawtooth has a low confidence; the bound that spares samples the
estimator never spares one that could forecast."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core import forecast
from qmon.core.forecast import MIN_SAMPLES, Trend, eta, may_reach, trend

STEP = 30_000


def test_a_steady_fill_gives_its_exact_rate_level_and_instant():
    samples = [100 + 10 * i for i in range(30)]  # 10 elements a sample: 390 at the newest
    t = trend(samples, STEP)
    assert t == Trend(10, STEP, 390.0, 1.0)
    now = 1_700_000_000_000
    # 500 - 390 = 110 elements at 10 a sample of 30 s: 11 samples, 330 s
    assert eta(t, now, 500) == now + 330_000


def test_an_instant_that_falls_between_milliseconds_is_rounded_up():
    t = trend([3 * i for i in range(20)], 7)  # 3 elements every 7 ms, at 57 now
    assert eta(t, 0, 58) == 3  # 1 element at 3/7 per ms: 2.33 ms, never earlier


def test_a_level_at_its_threshold_is_there_now_and_one_that_is_not_rising_never_gets_there():
    assert eta(Trend(0.0, STEP, 500.0, 1.0), 7, 500) == 7
    assert eta(Trend(0.0, STEP, 499.0, 1.0), 7, 500) is None
    assert eta(Trend(-1.0, STEP, 400.0, -1.0), 7, 500) is None


def test_too_few_samples_give_no_trend():
    assert trend(list(range(MIN_SAMPLES - 1)), STEP) is None
    assert trend(list(range(MIN_SAMPLES)), STEP) is not None


def test_the_confidence_is_the_rank_correlation_with_time():
    assert trend(list(range(30)), STEP).confidence == 1.0
    assert trend(list(range(30, 0, -1)), STEP).confidence == -1.0
    assert trend([7] * 30, STEP) == Trend(0.0, STEP, 7.0, 0.0)


def test_one_burst_does_not_tilt_the_rate():
    """A batch of 400 lands at one sample of a steady 10-a-sample fill: most pairs still rise 10 a sample, so
    the median does (a least-squares line would tilt towards the burst)."""
    samples = [10 * i for i in range(30)]
    samples[20] += 400
    t = trend(samples, STEP)
    assert t is not None and t.slope == 10


def test_the_forecast_starts_from_the_highs_above_the_line():
    """A fill that climbs in steps of 50 every 5 samples: the line runs through the middle of the steps, and
    the threshold is reached by their tops: the level is raised to the third-highest sample above the line."""
    samples = [50 * (i // 5) for i in range(30)]
    t = trend(samples, STEP)
    assert t is not None and t.slope == 10
    line = forecast._median([y - 10 * i for i, y in enumerate(samples)]) + 10 * 29
    assert t.level == line + 20  # the tops stand up to 20 above the line (at 0, 10, 20, 30, 40 past a step)


def test_a_consumer_draining_in_batches_has_a_low_confidence():
    """20 up to 60 over 8 samples, drained at the 9th, again and again: the median slope is positive (most
    pairs lie on a climbing edge), but climbs and falls balance in rank."""
    samples = [20 + 5 * (i % 9) for i in range(30)]
    t = trend(samples, STEP)
    assert t is not None and t.slope > 0
    assert t.confidence < 0.2


@settings(max_examples=300, deadline=None)
@given(
    samples=st.lists(st.integers(0, 1000), min_size=MIN_SAMPLES, max_size=30),
    threshold=st.integers(0, 3000),
    steps=st.sampled_from([1, 10, 30, 45]),
)
def test_a_window_the_bound_spares_could_give_no_forecast_within_the_horizon(samples, threshold, steps):
    if may_reach(samples, threshold, steps):
        return
    t = trend(samples, STEP)
    assert t is not None
    now = 1_700_000_000_000
    when = eta(t, now, threshold)
    assert when is None or when > now + steps * STEP
