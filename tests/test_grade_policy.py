"""The grading policy with no GPU: the thresholds (grader.pipeline.grade) and the band that straddles one
(grader.timing.measure)."""

import pytest

from grader.pipeline.grade import verdict_for
from grader.timing.measure import straddles


@pytest.mark.parametrize("fraction, verdict", [(1.0, "gold"), (0.90, "gold"), (0.8999, "silver"), (0.75, "silver"),
                                               (0.7499, "fail"), (0.0, "fail")])
def test_thresholds(fraction, verdict):
    assert verdict_for(fraction) == verdict


def test_band_straddling_a_threshold():
    assert straddles(0.89, 0.91) and straddles(0.74, 0.76)
    assert not straddles(0.91, 0.95) and not straddles(0.76, 0.89) and not straddles(0.5, 0.7)
