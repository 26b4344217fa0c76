"""A token-protected API in front of a real recording store holding real MP4 files (made by ffmpeg,
indexed by the store): the fixture of the recording route tests."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from tests.api.conftest import TOKEN
from tests.api.test_events_routes import NOW, event
from tests.support.recordings import RecordedFiles

BEARER = {"Authorization": f"Bearer {TOKEN}"}
CLIP_S = 4.0
SEGMENT_S = 6.0
DAY_START = 1_800_000_000.0


@pytest.fixture
def recorded(secured_api, tmp_path):
    """A token-protected API with two events, the first with a real clip, and three segments of "front"."""
    files = RecordedFiles(tmp_path / "recordings")
    secured_api.service.recording_reader = files.store
    first, second = event(1, "front", "person", NOW - 300), event(2, "back", "bus", NOW - 200)
    secured_api.service.add_event(first)
    secured_api.service.add_event(second)
    files.add_clip(first.id, "front", first.start_time - 5, CLIP_S)
    secured_api.segments = [files.add_segment("front", DAY_START + n * SEGMENT_S, SEGMENT_S) for n in range(3)]
    secured_api.http.headers.update(BEARER)
    secured_api.clip_id, secured_api.other_id, secured_api.files = first.id, second.id, files
    secured_api.clip_bytes = files.clip_bytes(first.id)
    yield secured_api
    files.close()


def clip_path(event_id: str) -> str:
    return f"/api/v1/events/{event_id}/clip.mp4"


def with_params(url: str, **changes: str) -> str:
    """``url`` with query parameters changed or added (the signature left as it was)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return parts.path + "?" + urlencode(query)

