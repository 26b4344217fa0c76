"""The box Kalman filter: conversions, and constant motion learnt at any frame rate."""
import numpy as np
import pytest

from edge_app.track.kalman import BoxKalman, xyah_to_xyxy, xyxy_to_xyah
from tests.track.full_kalman import FullKalman, full_covariance


def test_box_conversions_round_trip():
    boxes = np.array([[10, 20, 50, 100], [0, 0, 1920, 1080]], float)
    xyah = xyxy_to_xyah(boxes)
    assert xyah[0].tolist() == [30, 60, 0.5, 80]
    assert np.allclose(xyah_to_xyxy(xyah), boxes)


@pytest.mark.parametrize("fps, vx_px_s, vy_px_s", [(30, 120, 0), (10, -300, 40), (5, 60, -60)])
def test_velocity_is_learnt_in_pixels_per_second(fps, vx_px_s, vy_px_s):
    kf = BoxKalman()
    box = np.array([[500, 300, 560, 420]], float)
    mean, cov = kf.initiate(xyxy_to_xyah(box))
    for i in range(1, 3 * fps):
        mean, cov = kf.predict(mean, cov, 1 / fps)
        shift = np.array([vx_px_s, vy_px_s, vx_px_s, vy_px_s]) * i / fps
        mean, cov = kf.update(mean, cov, xyxy_to_xyah(box + shift))
    assert mean[0, 4] == pytest.approx(vx_px_s, abs=3) and mean[0, 5] == pytest.approx(vy_px_s, abs=3)
    # One second of coasting lands where the object will be.
    coast, _ = kf.predict(mean, cov, 1.0)
    expected = xyxy_to_xyah(box + np.array([vx_px_s, vy_px_s] * 2) * (3 * fps - 1 + fps) / fps)[0]
    assert coast[0, :2] == pytest.approx(expected[:2], abs=5)


def test_uncertainty_grows_while_coasting_and_shrinks_with_a_measurement():
    kf = BoxKalman()
    mean, cov = kf.initiate(xyxy_to_xyah(np.array([[0, 0, 40, 80]], float)))
    _, later = kf.predict(mean, cov, 1.0)
    assert later[0, 0, 0] > cov[0, 0, 0]
    _, corrected = kf.update(mean, later, mean[:, :4])
    assert corrected[0, 0, 0] < later[0, 0, 0]


def test_no_time_means_no_motion():
    kf = BoxKalman()
    mean, cov = kf.initiate(xyxy_to_xyah(np.array([[0, 0, 40, 80]], float)))
    mean[:, 4] = 100
    same, _ = kf.predict(mean, cov, 0.0)
    assert np.array_equal(same, mean)


def test_the_block_filter_is_the_full_matrix_filter():
    """Random tracks, time steps and measurements through both: the same means and covariances."""
    rng = np.random.default_rng(3)
    blocks, full = BoxKalman(), FullKalman()
    boxes = rng.uniform(0, 1000, (12, 2))
    xyah = xyxy_to_xyah(np.concatenate([boxes, boxes + rng.uniform(20, 300, (12, 2))], axis=1))
    mean_b, cov_b = blocks.initiate(xyah)
    mean_f, cov_f = full.initiate(xyah)
    for _ in range(200):
        dt_s = float(rng.choice([0.0, 1 / 30, 0.1, 0.5, 2.0]))
        mean_b, cov_b = blocks.predict(mean_b, cov_b, dt_s)
        mean_f, cov_f = full.predict(mean_f, cov_f, dt_s)
        seen = np.flatnonzero(rng.random(12) < 0.8)  # some tracks missed this frame
        measured = mean_f[seen, :4] + rng.normal(0, 5, (len(seen), 4)) * [1, 1, 0.01, 1]
        mean_b[seen], cov_b[seen] = blocks.update(mean_b[seen], cov_b[seen], measured)
        mean_f[seen], cov_f[seen] = full.update(mean_f[seen], cov_f[seen], measured)
        np.testing.assert_allclose(mean_b, mean_f, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(full_covariance(cov_b), cov_f, rtol=1e-9, atol=1e-9)
