"""Decoding every supported output layout from synthetic tensors with known answers."""
import numpy as np
import pytest

from edge_app.detect.base import LetterboxMeta
from edge_app.detect.yolo_outputs import (
    LayoutError,
    LayoutInfo,
    OutputLayout,
    YoloDecoder,
    decode_outputs,
    detect_layout,
)
from edge_app.detect.letterbox import letterbox_meta

NUM_CLASSES = 3
INPUT_HW = (640, 640)
ANCHORS = 8400  # anchor-free head at 640: 80*80 + 40*40 + 20*20
IDENTITY = LetterboxMeta(src_hw=(640, 640), scale=1.0, pad_xy=(0, 0))

# cx, cy, w, h, class, score - in model pixels
OBJECTS = [
    (100, 100, 40, 40, 0, 0.90),
    (104, 100, 40, 40, 0, 0.60),  # overlaps the first, same class: NMS removes it
    (102, 100, 40, 40, 1, 0.70),  # overlaps the first, other class: survives
    (300, 300, 20, 60, 2, 0.50),
    (500, 500, 10, 10, 1, 0.20),  # under the confidence threshold
]


def xyxy(obj):
    cx, cy, w, h = obj[:4]
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


AFTER_NMS = [(xyxy(o), o[4], o[5]) for o in (OBJECTS[0], OBJECTS[2], OBJECTS[3])]
ALL_CONFIDENT = [(xyxy(o), o[4], o[5]) for o in sorted(OBJECTS[:4], key=lambda o: -o[5])]


def channels_first(objects, batch=1):
    out = np.zeros((batch, 4 + NUM_CLASSES, ANCHORS), np.float32)
    for a, (cx, cy, w, h, cls, score) in enumerate(objects):
        out[:, :4, a * 7] = (cx, cy, w, h)  # spread out: decoding must not rely on positions
        out[:, 4 + cls, a * 7] = score
        out[:, 4 + (cls + 1) % NUM_CLASSES, a * 7] = score / 3  # a weaker second class
    return [out]


def channels_last(objects, batch=1):
    return [np.ascontiguousarray(channels_first(objects, batch)[0].transpose(0, 2, 1))]


def objectness(objects, batch=1):
    out = np.zeros((batch, 3 * ANCHORS, 5 + NUM_CLASSES), np.float32)
    for a, (cx, cy, w, h, cls, score) in enumerate(objects):
        # obj * cls == score, with the objectness alone above the threshold for every object
        out[:, a, :5] = (cx, cy, w, h, np.sqrt(score))
        out[:, a, 5 + cls] = np.sqrt(score)
    return [out]


def end_to_end(objects, batch=1):
    out = np.zeros((batch, 300, 6), np.float32)
    for k, obj in enumerate(objects):
        out[:, k] = (*xyxy(obj), obj[5], obj[4])
    return [out]


def efficient_nms(objects, batch=1, k=100):
    num = np.full((batch, 1), len(objects), np.int32)
    boxes = np.zeros((batch, k, 4), np.float32)
    scores = np.zeros((batch, k), np.float32)
    classes = np.zeros((batch, k), np.int32)
    for i, obj in enumerate(objects):
        boxes[:, i], scores[:, i], classes[:, i] = xyxy(obj), obj[5], obj[4]
    # Rows past num_dets are garbage in the plugin's output and must be ignored.
    boxes[:, len(objects):] = (10, 10, 200, 200)
    scores[:, len(objects):] = 0.99
    return [num, boxes, scores, classes]


def assert_detections(detections, expected):
    assert len(detections) == len(expected), detections.to_dicts()
    order = np.argsort(-detections.confidence, kind="stable")
    for row, (box, cls, score) in zip(order, expected):
        np.testing.assert_allclose(detections.xyxy[row], box, atol=1e-3)
        assert detections.class_id[row] == cls
        assert detections.confidence[row] == pytest.approx(score, abs=1e-5)


@pytest.mark.parametrize(
    "build, layout, expected",
    [
        (channels_first, OutputLayout.YOLO_CHANNELS_FIRST, AFTER_NMS),
        (channels_last, OutputLayout.YOLO_CHANNELS_LAST, AFTER_NMS),
        (objectness, OutputLayout.YOLO_OBJECTNESS, AFTER_NMS),
        # NMS-free outputs are final: overlapping boxes of one class are the model's answer.
        (end_to_end, OutputLayout.END_TO_END, ALL_CONFIDENT),
        (efficient_nms, OutputLayout.EFFICIENT_NMS, ALL_CONFIDENT),
    ],
)
def test_each_layout_decodes_to_the_known_answer(build, layout, expected):
    outputs = build(OBJECTS[:4] if layout is OutputLayout.EFFICIENT_NMS else OBJECTS)
    decoder = YoloDecoder(["a", "b", "c"], conf_threshold=0.25, iou_threshold=0.45, input_hw=INPUT_HW)
    (detections,) = decoder.decode(outputs, [IDENTITY])
    assert decoder.layout.layout is layout
    assert_detections(detections, expected)
    assert list(detections.labels) == ["a", "b", "c"]


def test_objectness_multiplies_class_scores():
    out = np.zeros((1, 3 * ANCHORS, 5 + NUM_CLASSES), np.float32)
    out[0, 0] = (100, 100, 20, 20, 0.5, 0.8, 0.1, 0.0)  # 0.5 * 0.8 = 0.40: kept
    out[0, 1] = (300, 300, 20, 20, 0.9, 0.0, 0.2, 0.0)  # 0.9 * 0.2 = 0.18: dropped
    out[0, 2] = (500, 500, 20, 20, 0.2, 1.0, 0.0, 0.0)  # objectness 0.2 alone rules it out
    (detections,) = decode_outputs([out], [IDENTITY], NUM_CLASSES, 0.25, 0.45, input_hw=INPUT_HW)
    assert_detections(detections, [([90, 90, 110, 110], 0, 0.4)])


def test_efficient_nms_reads_only_num_dets_rows():
    outputs = efficient_nms(OBJECTS[:2], k=50)
    (detections,) = decode_outputs(outputs, [IDENTITY], conf_threshold=0.25)
    assert_detections(detections, [(xyxy(OBJECTS[0]), 0, 0.9), (xyxy(OBJECTS[1]), 0, 0.6)])


def test_efficient_nms_with_zero_detections():
    outputs = efficient_nms([], k=20)
    (detections,) = decode_outputs(outputs, [IDENTITY])
    assert len(detections) == 0


def test_batch_decodes_each_image_with_its_own_letterbox():
    portrait = letterbox_meta((1080, 810), INPUT_HW)  # scale 0.5926, 80 px grey left and right
    outputs = channels_first([OBJECTS[3]], batch=3)
    results = decode_outputs(outputs, [IDENTITY, portrait], input_hw=INPUT_HW)
    assert len(results) == 2  # the third (padding) image of the batch is not decoded
    assert_detections(results[0], [(xyxy(OBJECTS[3]), 2, 0.5)])
    x1, y1, x2, y2 = xyxy(OBJECTS[3])
    scale = 480 / 810
    expected = [(x1 - 80) / scale, y1 / scale, (x2 - 80) / scale, y2 / scale]
    assert_detections(results[1], [(expected, 2, 0.5)])


def test_box_in_the_padding_is_dropped_and_edges_are_clipped():
    landscape = letterbox_meta((720, 1280), INPUT_HW)  # 140 px grey top and bottom
    objects = [(320, 60, 40, 40, 0, 0.9), (320, 150, 40, 40, 1, 0.8)]  # all padding; half padding
    (detections,) = decode_outputs(channels_first(objects), [landscape], input_hw=INPUT_HW)
    assert detections.class_id.tolist() == [1]
    assert detections.xyxy[0, 1] == 0.0 and detections.xyxy[0, 3] > 0


def test_class_filter_runs_before_nms():
    decoder = YoloDecoder(conf_threshold=0.25, keep_class_ids=np.array([1, 2]), input_hw=INPUT_HW)
    (detections,) = decoder.decode(channels_first(OBJECTS), [IDENTITY])
    assert sorted(detections.class_id.tolist()) == [1, 2]


def test_max_det_keeps_the_best():
    objects = [(20 + 30 * i, 20, 10, 10, 0, 0.3 + 0.01 * i) for i in range(20)]
    (detections,) = decode_outputs(channels_first(objects), [IDENTITY], input_hw=INPUT_HW, max_det=5)
    assert len(detections) == 5 and detections.confidence.min() == pytest.approx(0.45)


def test_float16_outputs_decode():
    outputs = [channels_first(OBJECTS)[0].astype(np.float16)]
    (detections,) = decode_outputs(outputs, [IDENTITY], input_hw=INPUT_HW)
    assert len(detections) == 3 and detections.xyxy.dtype == np.float32


def test_confidence_filter_is_strict():
    (detections,) = decode_outputs(channels_first(OBJECTS), [IDENTITY], conf_threshold=0.5, input_hw=INPUT_HW)
    assert detections.confidence.min() > 0.5


@pytest.mark.parametrize(
    "shapes, hints, layout, num_classes",
    [
        ([(1, 84, 8400)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_FIRST, 80),
        ([(1, 8400, 84)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_LAST, 80),
        ([(1, 25200, 85)], {"input_hw": (640, 640)}, OutputLayout.YOLO_OBJECTNESS, 80),
        ([(1, 84, 2100)], {"input_hw": (320, 320)}, OutputLayout.YOLO_CHANNELS_FIRST, 80),
        ([(1, 84, 8500)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_FIRST, 80),  # P6 head
        ([(1, 84, 6300)], {"input_hw": (480, 640)}, OutputLayout.YOLO_CHANNELS_FIRST, 80),
        # 6 values per row: the anchor count tells a 2-class v8, a 1-class v5 and end-to-end apart
        ([(1, 6, 8400)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_FIRST, 2),
        ([(1, 8400, 6)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_LAST, 2),
        ([(1, 25200, 6)], {"input_hw": (640, 640)}, OutputLayout.YOLO_OBJECTNESS, 1),
        ([(1, 300, 6)], {"input_hw": (640, 640)}, OutputLayout.END_TO_END, None),
        ([(1, 300, 6)], {}, OutputLayout.END_TO_END, None),
        ([(1, 300, 6)], {"end2end": True, "input_hw": (640, 640)}, OutputLayout.END_TO_END, None),
        # no input size: the number of classes decides
        ([(1, 84, 8400)], {"num_classes": 80}, OutputLayout.YOLO_CHANNELS_FIRST, 80),
        ([(1, 8400, 84)], {"num_classes": 80}, OutputLayout.YOLO_CHANNELS_LAST, 80),
        ([(1, 25200, 85)], {"num_classes": 80}, OutputLayout.YOLO_OBJECTNESS, 80),
        ([(1, 8, 1000)], {}, OutputLayout.YOLO_CHANNELS_FIRST, 4),
        ([("batch", 84, 8400)], {"input_hw": (640, 640)}, OutputLayout.YOLO_CHANNELS_FIRST, 80),
    ],
)
def test_detect_layout(shapes, hints, layout, num_classes):
    info = detect_layout(shapes, **hints)
    assert (info.layout, info.num_classes) == (layout, num_classes)


@pytest.mark.parametrize(
    "shapes, hints, roles",
    [
        ([(1, 1), (1, 100, 4), (1, 100), (1, 100)], {}, (0, 1, 2, 3)),
        ([(1, 1), (1, 100, 4), (1, 100), (1, 100)], {"dtypes": ["int32", "float32", "int32", "float32"]}, (0, 1, 3, 2)),
        ([(1, 100, 4), (1, 100), (1, 1), (1, 100)],
         {"names": ["det_boxes", "det_classes", "num_dets", "det_scores"]}, (2, 0, 3, 1)),
        ([(1, 1), (1, 1, 4), (1, 1), (1, 1)], {}, (0, 1, 2, 3)),  # K == 1
    ],
)
def test_detect_efficient_nms_roles(shapes, hints, roles):
    info = detect_layout(shapes, **hints)
    assert info == LayoutInfo(OutputLayout.EFFICIENT_NMS, None, roles)


@pytest.mark.parametrize(
    "shapes, hints",
    [
        ([(1, 84)], {}),  # no batch x rows x columns output
        ([(1, None, 8400)], {"input_hw": (640, 640)}),  # rows unknown
        ([(1, 4, 8400)], {"input_hw": (640, 640)}),  # box values but no class scores
        ([(1, 300, 5)], {"end2end": True}),
    ],
)
def test_detect_layout_rejects(shapes, hints):
    with pytest.raises(LayoutError):
        detect_layout(shapes, **hints)


def test_decoder_with_too_few_output_images_fails():
    with pytest.raises(ValueError):
        decode_outputs(channels_first(OBJECTS, batch=1), [IDENTITY, IDENTITY], input_hw=INPUT_HW)
