"""The motion detector on drawn scenes: noise and light are not motion, a moving box is."""
import numpy as np
import pytest

from edge_app.capture.gpu_image import HostNv12Image
from edge_app.motion.detector import MotionDetector, MotionSettings, mask_raster, small_grey

FPS = 10.0
HEIGHT, WIDTH = 360, 640


def _background(seed: int = 1) -> np.ndarray:
    """A textured grey scene: smooth blobs, like a wall, a floor and furniture."""
    import cv2

    rng = np.random.default_rng(seed)
    coarse = rng.integers(40, 200, (9, 16), dtype=np.uint8)
    return cv2.resize(coarse, (WIDTH, HEIGHT), interpolation=cv2.INTER_CUBIC)


def _frame(scene: np.ndarray, rng, noise_sigma: float, gain: float = 1.0, offset: float = 0.0) -> np.ndarray:
    noisy = scene.astype(np.float32) * gain + offset + rng.normal(0, noise_sigma, scene.shape)
    grey = np.clip(noisy, 0, 255).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, axis=2)  # BGR


def _with_box(scene: np.ndarray, x: int, y: int = 120, w: int = 60, h: int = 120, value: int = 235) -> np.ndarray:
    out = scene.copy()
    out[y:y + h, x:x + w] = value
    return out


def _run(frames, masks=(), settings=MotionSettings()):
    detector = MotionDetector(settings, masks)
    return [detector.detect(small_grey(frame), index / FPS) for index, frame in enumerate(frames)]


@pytest.mark.parametrize("noise_sigma", [0.0, 3.0, 6.0, 10.0])
def test_sensor_noise_is_not_motion(noise_sigma):
    rng = np.random.default_rng(7)
    scene = _background()
    results = _run([_frame(scene, rng, noise_sigma) for _ in range(100)])
    assert not any(r.motion for r in results)


@pytest.mark.parametrize("gain, offset", [(1.6, 0.0), (0.5, 0.0), (1.0, 50.0), (1.0, -35.0), (2.5, 20.0),
                                          # within the gain tolerance (no gain applied), and just beyond it
                                          (1.008, 0.0), (0.992, 0.0), (1.02, 0.0), (1.0, 3.0)])
def test_a_brightness_jump_is_not_motion_and_does_not_stay(gain, offset):
    rng = np.random.default_rng(3)
    scene = _background()
    frames = [_frame(scene, rng, 4.0) for _ in range(30)]
    frames += [_frame(scene, rng, 4.0, gain, offset) for _ in range(60)]
    results = _run(frames)
    assert not any(r.motion for r in results), [i for i, r in enumerate(results) if r.motion]


@pytest.mark.parametrize("noise_sigma", [0.0, 6.0])
def test_a_moving_box_is_motion_from_its_first_frame(noise_sigma):
    rng = np.random.default_rng(5)
    scene = _background()
    frames = [_frame(scene, rng, noise_sigma) for _ in range(20)]
    frames += [_frame(_with_box(scene, 40 + 12 * k), rng, noise_sigma) for k in range(30)]
    results = _run(frames)
    assert not any(r.motion for r in results[:20])
    assert all(r.motion for r in results[20:])
    assert 0.005 < results[25].largest_area < 0.2


@pytest.mark.parametrize("gain_step", [0.0005, 0.001, 0.002])
def test_a_moving_box_in_a_slowly_brightening_scene_is_motion(gain_step):
    """Light that drifts a little every frame (dawn, a cloud; here up to 2 % a second) is followed, by the gain or the
    background, and a box moving through it is still seen."""
    rng = np.random.default_rng(9)
    scene = _background()
    frames = [_frame(scene, rng, 4.0, 1.0 + gain_step * k) for k in range(30)]
    frames += [_frame(_with_box(scene, 40 + 12 * k), rng, 4.0, 1.0 + gain_step * (30 + k)) for k in range(30)]
    results = _run(frames)
    assert not any(r.motion for r in results[:30]), [i for i, r in enumerate(results[:30]) if r.motion]
    assert all(r.motion for r in results[30:]), [i for i, r in enumerate(results) if not r.motion]


def test_a_box_that_stops_fades_into_the_background():
    scene = _background()
    rng = np.random.default_rng(2)
    frames = [_frame(scene, rng, 3.0) for _ in range(10)]
    frames += [_frame(_with_box(scene, 300), rng, 3.0) for _ in range(300)]  # 30 s standing
    results = _run(frames)
    assert results[10].motion
    assert not any(r.motion for r in results[-50:])


def test_a_small_change_below_min_area_is_not_motion():
    scene = _background()
    rng = np.random.default_rng(4)
    frames = [_frame(scene, rng, 2.0) for _ in range(10)]
    frames += [_frame(_with_box(scene, 300, w=4, h=4), rng, 2.0) for _ in range(5)]  # 16 px of 230400
    assert not any(r.motion for r in _run(frames, settings=MotionSettings(min_area=0.001)))
    assert any(r.motion for r in _run(frames, settings=MotionSettings(min_area=0.00001)))


@pytest.mark.parametrize("masks, expected", [
    ((), True),
    ([[(0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)]], False),  # the box moves in the left half only
    ([[(0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0)]], True),   # the other half masked
    ([[(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]], False),  # the whole frame masked
])
def test_masks(masks, expected):
    scene = _background()
    rng = np.random.default_rng(6)
    frames = [_frame(scene, rng, 3.0) for _ in range(10)]
    frames += [_frame(_with_box(scene, 20 + 6 * k, w=50), rng, 3.0) for k in range(20)]  # x stays < 0.38
    assert any(r.motion for r in _run(frames, masks)) is expected


def test_the_whole_frame_masked_is_said():
    detector = MotionDetector(masks=[[(0, 0), (1, 0), (1, 1), (0, 1)]])
    assert detector.masked_fraction is None
    detector.detect(small_grey(_frame(_background(), np.random.default_rng(0), 0)), 0.0)
    assert detector.masked_fraction == 1.0
    half = mask_raster([[(0, 0), (0.5, 0), (0.5, 1), (0, 1)]], 320, 180)
    assert 0.45 < 1 - half.mean() < 0.55


def test_nv12_uses_the_y_plane_and_bgr_matches_it():
    import cv2

    scene = _background()
    bgr = np.repeat(scene[:, :, None], 3, axis=2)
    nv12 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)  # same Y plane; the chroma layout does not matter here
    image = HostNv12Image(np.ascontiguousarray(nv12))
    from_y, from_bgr = small_grey(image), small_grey(bgr)
    assert from_y.shape == from_bgr.shape == (180, 320)
    assert image.conversions == 0  # never converted to BGR
    # BT.601 limited-range Y and BGR->grey differ in scale only: the detector normalises gain
    assert np.corrcoef(from_y.ravel(), from_bgr.ravel())[0, 1] > 0.99


def test_a_new_frame_size_starts_again():
    detector = MotionDetector()
    small = small_grey(_frame(_background(), np.random.default_rng(0), 0))
    assert detector.detect(small, 0.0).reseeded
    assert not detector.detect(small, 0.1).reseeded
    assert detector.detect(small[:90, :160].copy(), 0.2).reseeded


def test_a_device_frame_is_shrunk_where_it_lies_and_never_downloaded():
    from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
    from edge_app.cuda.kernels.luma_shrink import luma_shrink_reference

    y = _frame(_background(), np.random.default_rng(0), 0)
    if y.ndim == 3:
        y = y[..., 0].copy()
    height, width = y.shape
    asked = []

    def shrink(planes, width_px, height_px):  # stands for the GPU kernel: same arithmetic, in numpy
        asked.append((planes.width, planes.height, width_px, height_px))
        return luma_shrink_reference(y, width_px, height_px)

    planes = Nv12Planes(1 << 20, (1 << 20) + width * height, width, width, width, height)
    image = DeviceNv12Image(planes, lambda p, host: pytest.fail("motion must not download the frame"), shrink=shrink)
    small = small_grey(image)
    assert asked == [(width, height, 320, round(height * 320 / width))]
    assert small.shape == (round(height * 320 / width), 320) and image.downloads == 0
    # the box average and OpenCV's resize of the CPU path see the same picture
    assert np.corrcoef(small.ravel(), small_grey(y).ravel().astype(float))[0, 1] > 0.99


def test_a_device_frame_whose_owner_cannot_shrink_is_downloaded_once():
    from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes

    y = np.random.default_rng(1).integers(0, 256, (360, 640), dtype=np.uint8)
    nv12 = np.concatenate([y, np.full((180, 640), 128, np.uint8)])
    planes = Nv12Planes(1 << 20, (1 << 20) + 640 * 360, 640, 640, 640, 360)
    image = DeviceNv12Image(planes, lambda p, host: host.__setitem__(Ellipsis, nv12))
    assert small_grey(image).shape == (180, 320) and image.downloads == 1


def test_a_picture_blurred_already_gives_the_same_results_as_the_grey_one():
    """The GPU path hands the detector its picture blurred on the device (float32, as
    ``shrink_blur_luma`` makes it, checked against this reference on a GPU in
    tests/gpu/test_luma_shrink_kernel.py): every result must be the host path's."""
    import cv2

    rng = np.random.default_rng(11)
    scene = _background()
    frames = [_frame(scene, rng, 4.0) for _ in range(20)]
    frames += [_frame(_with_box(scene, 40 + 12 * k), rng, 4.0) for k in range(20)]
    frames += [_frame(scene, rng, 4.0, 1.6) for _ in range(10)]  # light
    taps = cv2.getGaussianKernel(5, 0, cv2.CV_32F)
    grey_detector, blurred_detector = MotionDetector(), MotionDetector()
    for index, frame in enumerate(frames):
        grey = small_grey(frame)
        blurred = cv2.sepFilter2D(grey, cv2.CV_32F, taps, taps)
        assert grey_detector.detect(grey, index / FPS) == blurred_detector.detect(blurred, index / FPS)


@pytest.mark.parametrize("masks", [(), [[(0.0, 0.0), (0.4, 0.0), (0.4, 1.0), (0.0, 1.0)]]])
def test_the_followed_background_mean_stays_the_measured_one(masks):
    """The gain reads the background's mean as it was followed, not measured per check: over a
    long run of noise, a slow brightening, a moving box and a light jump it stays the measured
    mean to a few parts in a million, and each restart measures it afresh."""
    rng = np.random.default_rng(12)
    scene = _background()
    detector = MotionDetector(masks=masks)
    worst = 0.0
    for index in range(600):
        gain = 1.0 + 0.0004 * index if index < 450 else 1.5  # a light jump at 450: the background starts again
        frame = _with_box(scene, 20 + index % 500) if 200 <= index < 300 else scene
        result = detector.detect(small_grey(_frame(frame, rng, 3.0, gain)), index / 30)
        measured = detector._mean(detector._background)
        worst = max(worst, abs(detector._background_mean - measured) / measured)
        if index == 450:
            assert result.reseeded and detector._background_mean == measured
    assert worst < 5e-6
