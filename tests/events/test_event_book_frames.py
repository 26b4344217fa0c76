"""The event book takes a whole frame of tracked objects at once and gives what one object at a
time gave: the same events, in the order their tracks were first seen (not by track id)."""
import numpy as np
import pytest

from edge_app.events.lifecycle import EventBook

T0 = 1_800_000_000.0


def frames():
    """(ids, labels, scores, boxes) per frame: track 9 seen before 4, an untracked box, track 9
    gone after frame 5, a better score for track 4 in frame 6."""
    out = []
    for i in range(9):
        ids = [9, -1, 4] if i < 5 else [-1, 4]
        labels = ["person", "car", "dog"] if i < 5 else ["car", "dog"]
        scores = [0.6 + 0.01 * i, 0.3, 0.7] if i < 5 else [0.3, 0.9 if i == 6 else 0.7]
        boxes = [[10.0 * k, 20.0, 10.0 * k + 5, 40.0 + i] for k in range(len(ids))]
        out.append((ids, labels, scores, boxes))
    return out


def one_at_a_time(book, ids, labels, scores, boxes, ts):
    for track_id, label, score, box in zip(ids, labels, scores, boxes):
        if track_id >= 0:
            book.observe(track_id, label, score, box, ts)


def whole_frame(book, ids, labels, scores, boxes, ts):
    book.observe_frame(np.array(ids), labels, np.array(scores, np.float32), np.array(boxes, np.float32), ts)


def run(feed, min_frames):
    book = EventBook("cam", min_frames=min_frames, update_interval_s=0.0)
    sent = []
    for i, (ids, labels, scores, boxes) in enumerate(frames()):
        ts = T0 + i / 10
        feed(book, ids, labels, np.array(scores, np.float32).tolist(), np.array(boxes, np.float32).tolist(), ts)
        if i == 3:
            book.zone_change(4, "yard", True)
        sent += [("end", m.after) for m in book.end_tracks([9] if i == 5 else [])]
        book.promote()
        sent += [(m.type, m.after) for m in book.flush(ts)]
        sent.append(("in view", book.labels_in_view()))
    sent += [("end", m.after) for m in book.end_all(T0 + 10)]
    return sent


@pytest.mark.parametrize("min_frames", [1, 3])
def test_a_whole_frame_gives_what_one_object_at_a_time_gave(min_frames):
    assert run(whole_frame, min_frames) == run(one_at_a_time, min_frames)


def test_events_come_in_the_order_their_tracks_were_first_seen():
    sent = run(whole_frame, 1)
    new = [event.track_id for kind, event in sent if kind == "new"]
    assert new == [9, 4]
    assert next(counts for kind, counts in sent if kind == "in view") == {"person": 1, "dog": 1}
    updates = [event for kind, event in sent if kind == "update" and event.track_id == 4]
    assert [e.top_score for e in updates][-1] == pytest.approx(0.9)
    assert updates[0].current_zones == ("yard",)
