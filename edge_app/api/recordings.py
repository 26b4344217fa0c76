"""Event clips and continuous recordings over HTTP (docs/rest-api.md, "Recordings").

- ``GET /api/v1/events/<id>/clip.mp4``: the event's clip, with HTTP Range (206, 416) so that
  browsers and players can seek; streamed from the file, never read into memory.
- ``POST /api/v1/events/<id>/clip-url``: a short-lived signed URL of that clip for a ``<video>``.
- ``GET /api/v1/recordings``: the continuous-recording segments of a time range.
- ``GET /api/v1/recordings/export.mp4`` (and ``POST .../export-url`` to sign it): one MP4 of a
  range, by stream copy, muxed while it is sent (fragmented MP4): it takes no disk space, so no
  download can make retention delete recordings; it has no Range (``Accept-Ranges: none``).
  At most ``MAX_CONCURRENT_EXPORTS`` are open at once, for as long as they are read (503 and
  Retry-After beyond).
- ``GET /api/v1/links/events/<id>/clip.mp4?expires=&sig=``: the clip a notification links to, opened
  by the link's signature under the device's link key alone, never the token
  (:mod:`edge_app.notify.clip_links`); expired, altered or another clip's: 403 saying why.
- A signed URL serves at most ``MAX_USES_PER_SIGNED_URL`` answers at once (429 and Retry-After
  beyond): one URL handed out for a ``<video>`` cannot be replayed into many held downloads.

URLs carry event ids, camera ids and times only; the recording store turns them into files and
refuses any path outside its directory.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from flask import Blueprint, Response, jsonify, request, send_file
from pydantic import ValidationError
from werkzeug.http import parse_range_header

from edge_app.api.answers import ClipUrl, Segment, SegmentList, SignedUrl
from edge_app.api.request_models import (ClipQuery, ClipUrlQuery, ExportQuery, ExportUrlQuery, LinkClipQuery,
                                         SegmentsQuery, TtlBody)
from edge_app.api.routing import RequestBody, ResponseSpec, Route, binary, error, register_routes
from edge_app.http_server.errors import ApiError
from edge_app.http_server.event_params import checked_event_id
from edge_app.api.held_responses import HeldLimit, once, release_when_closed
from edge_app.http_server.json_body import read_json_body
from edge_app.api.recording_params import MAX_LIST_S, TimeRange, time_range
from edge_app.http_server.signed_urls import DEFAULT_TTL_S, MAX_TTL_S, MIN_TTL_S, SIG, is_signed_request, sign
from edge_app.config.schema import AppConfig
from edge_app.notify.clip_links import ClipLinks
from edge_app.record.types import ClipInfo, RecordingReader
from edge_app.reporting.protocol import ApplianceReads

logger = logging.getLogger(__name__)

#: exports open at once, from the request to the last byte read; more wait for none and get 503
#: (each one reads up to an hour of video and holds a server thread while its client reads)
MAX_CONCURRENT_EXPORTS = 2
EXPORT_RETRY_AFTER_S = 5
#: answers one signed URL serves at once (a player may overlap two Range requests of a clip)
MAX_USES_PER_SIGNED_URL = 2
SIGNED_RETRY_AFTER_S = 5
#: what a <video> element, the download button and the signed URLs may load without the token
SIGNED_ENDPOINTS = frozenset({"recordings.clip", "recordings.export"})
#: what a notification's clip link opens: the route checks the link itself, the token is not asked for
LINK_ENDPOINTS = frozenset({"recordings.link_clip"})
MP4 = "video/mp4"


def _ttl_s() -> int:
    """``ttl_s`` of an optional JSON body ``{"ttl_s": N}``; the default without a body."""
    if not request.content_length and not request.headers.get("Transfer-Encoding"):
        return DEFAULT_TTL_S
    body = read_json_body()
    if not isinstance(body, dict) or set(body) - set(TtlBody.model_fields):
        raise ApiError(400, 'the body must be empty or {"ttl_s": N}')
    try:
        return TtlBody.model_validate(body).ttl_s
    except ValidationError:
        raise ApiError(400, f"ttl_s must be an integer from {MIN_TTL_S} to {MAX_TTL_S} (seconds), "
                            f"got {body.get('ttl_s')!r:.80}") from None


def _parts(store: RecordingReader, event_id: str) -> List[ClipInfo]:
    # The recording store lists an event's parts (``clips``); a reader without that has one part.
    return list(getattr(store, "clips", lambda _event_id: [])(event_id))


def _clip_part(parts: List[ClipInfo], event_id: str, part: int) -> ClipInfo:
    for clip in parts:
        if getattr(clip, "part", 0) == part:
            return clip
    raise ApiError(404, f"the clip of event {event_id!r} has no part {part} (it has {max(1, len(parts))}: "
                        f"0 to {max(1, len(parts)) - 1})")


def _whole_file_for_a_long_suffix(environ: dict, size: int) -> None:
    """RFC 9110 14.1.3: a suffix range longer than the file means the whole file. Werkzeug answers
    416 instead, so such a Range is read as ``bytes=0-`` (a suffix of 0 stays unsatisfiable)."""
    wanted = parse_range_header(environ.get("HTTP_RANGE"))
    if wanted is not None and len(wanted.ranges) == 1:
        start, stop = wanted.ranges[0]
        if stop is None and start < 0 and -start > size:
            environ["HTTP_RANGE"] = "bytes=0-"


def _send_mp4(path: Path, download_name: str, download: bool) -> Response:
    # conditional=True: Range (206 with Content-Range, 416 for an unsatisfiable range),
    # If-Range and Accept-Ranges; the body is a file wrapper read in blocks, not loaded.
    try:
        _whole_file_for_a_long_suffix(request.environ, path.stat().st_size)
        response = send_file(path, mimetype=MP4, conditional=True, etag=True, max_age=0,
                             download_name=download_name, as_attachment=download)
    except FileNotFoundError:  # removed (by retention, by hand) since the route found it
        raise ApiError(404, f"{download_name} is gone (removed by retention or by hand)") from None
    response.headers["Accept-Ranges"] = "bytes"
    return response


@dataclass(frozen=True)
class RecordingViews:
    """What the recording views of one app share: its read side, configuration and the held limits."""

    reads: ApplianceReads
    config: Callable[[], AppConfig]
    exports: HeldLimit  # exports being sent
    signed_uses: HeldLimit  # answers being sent per signed URL
    clip_links: Optional[ClipLinks] = None  # the device's link key; None: notifications carry no clip links


def _reader(views: RecordingViews) -> RecordingReader:
    found = views.reads.recordings()
    if found is None:
        raise ApiError(404, "recording is off on this appliance (record.events or record.continuous)")
    return found


def _clip_file_and_parts(views: RecordingViews, event_id: str, part: int) -> Tuple[Path, int]:
    """The file of the clip's part ``part`` and how many parts the clip has."""
    store = _reader(views)
    clip = store.clip(checked_event_id(event_id))
    if clip is None:
        if views.reads.event(event_id) is None:
            raise ApiError(404, f"unknown event {event_id!r}")
        raise ApiError(404, f"event {event_id!r} has no clip")
    parts = _parts(store, event_id)
    if part:
        clip = _clip_part(parts, event_id, part)
    try:
        path = store.resolve(clip.path)
    except ValueError:
        logger.error("the clip of event %s names %r, outside the recording directory; not served", event_id, clip.path)
        raise ApiError(404, f"event {event_id!r} has no clip") from None
    if not path.is_file():
        raise ApiError(404, f"the clip of event {event_id!r} is gone (removed by retention or by hand)")
    return path, max(1, len(parts))


def _signed(views: RecordingViews, path: str, params: Dict[str, str]) -> SignedUrl:
    url = sign(views.config().api.token, path, params, _ttl_s())
    return SignedUrl(url=url.url, expires=url.expires)


def _signed_use(views: RecordingViews) -> Callable[[], None]:
    """A place for this request's signed URL (429 when its uses are all open); what gives it back."""
    if not is_signed_request(request.args):
        return lambda: None
    key = request.args.get(SIG, "")
    if not views.signed_uses.take(key):
        raise ApiError(429, f"this signed URL is being read {MAX_USES_PER_SIGNED_URL} times already; "
                            "try again when one of them has finished",
                       headers={"Retry-After": str(SIGNED_RETRY_AFTER_S)})
    return once(lambda: views.signed_uses.give(key))


def _held(answer: Callable[[], Response], release: Callable[[], None]) -> Response:
    """``answer()``, with ``release`` run once the server has closed it (or at once when it fails)."""
    try:
        response = answer()
    except BaseException:
        release()
        raise
    return release_when_closed(response, release)


def clip(views: RecordingViews, query: ClipQuery, event_id: str) -> Response:
    download, part = bool(query.download), query.part
    name = f"{event_id}-part{part}.mp4" if part else f"{event_id}.mp4"
    return _held(lambda: _send_mp4(_clip_file_and_parts(views, event_id, part)[0], name, download), _signed_use(views))


def link_clip(views: RecordingViews, query: LinkClipQuery, event_id: str) -> Response:
    if views.clip_links is None:
        raise ApiError(404, "this appliance hands out no clip links (notifications.base_url and a target are not set)")
    if any(len(values) > 1 for values in request.args.listvalues()):
        raise ApiError(403, "a clip link names each parameter once")
    why = views.clip_links.refusal(event_id, request.args.get("expires", ""), request.args.get("sig", ""),
                                   views.config().notifications.link_ttl_s)
    if why is not None:
        raise ApiError(403, why)
    key = "link:" + request.args["sig"]
    if not views.signed_uses.take(key):
        raise ApiError(429, f"this clip link is being read {MAX_USES_PER_SIGNED_URL} times already; "
                            "try again when one of them has finished",
                       headers={"Retry-After": str(SIGNED_RETRY_AFTER_S)})
    # The whole clip's first part, never another part or file: the link names the event alone.
    return _held(lambda: _send_mp4(_clip_file_and_parts(views, event_id, 0)[0], f"{event_id}.mp4", False),
                 once(lambda: views.signed_uses.give(key)))


def clip_url(views: RecordingViews, query: ClipUrlQuery, event_id: str) -> Response:
    part = query.part
    _path, parts = _clip_file_and_parts(views, event_id, part)
    # part and parts: a player plays the parts one after the other (a clip continues every max_s).
    signed = _signed(views, f"/api/v1/events/{event_id}/clip.mp4", {"part": str(part)} if part else {})
    return jsonify(ClipUrl(**signed.model_dump(), part=part, parts=parts).model_dump())


def list_segments(views: RecordingViews, query: SegmentsQuery) -> Response:
    wanted = time_range(query.camera, query.from_, query.to, export=False)
    segments = _reader(views).segments(wanted.camera_id, wanted.start, wanted.end)
    answer = SegmentList(segments=[Segment(camera_id=s.camera_id, start=s.start, end=s.end, bytes=s.bytes)
                                   for s in segments])
    return jsonify(answer.model_dump())


def export_url(views: RecordingViews, query: ExportUrlQuery) -> Response:
    time_range(query.camera, query.from_, query.to, export=True)  # in order and not too long
    _reader(views)
    # Signed as the client wrote them (its model checked them): the URL names the same range.
    signed = _signed(views, "/api/v1/recordings/export.mp4", {"camera": query.camera,
                                                              "from": request.args["from"], "to": request.args["to"]})
    return jsonify(signed.model_dump())


def export(views: RecordingViews, query: ExportQuery) -> Response:
    wanted = time_range(query.camera, query.from_, query.to, export=True)
    download = bool(query.download)
    store = _reader(views)
    release_signed = _signed_use(views)
    if not views.exports.take():
        release_signed()
        raise ApiError(503, f"{MAX_CONCURRENT_EXPORTS} exports are being sent; try again in a moment",
                       headers={"Retry-After": str(EXPORT_RETRY_AFTER_S)})
    release_export = once(views.exports.give)

    def release() -> None:
        release_export()
        release_signed()
    return _held(lambda: _export(store, wanted, download), release)


_SIGNED_NOTE = "also through a signed URL, without the token (POST .../clip-url or .../export-url)"
_OFF = "Recording is off on this appliance"
_RETRY = {"Retry-After": "Seconds until trying again is worth it"}
_BUSY_URL = error(f"This signed URL is being read {MAX_USES_PER_SIGNED_URL} times at once already", **_RETRY)
_FORBIDDEN = error("A signed URL that has expired, was altered, or was signed under another token")
_RANGED = {206: binary(MP4, "The requested byte range (Range: bytes=...)",
                       **{"Content-Range": "bytes first-last/size", "Accept-Ranges": "bytes"}),
           403: _FORBIDDEN,
           416: error("The Range cannot be satisfied or parsed", **{"Content-Range": "bytes */size"})}
_BAD_RANGE = "A parameter is missing or malformed, from is not before to, or the range is too long"
_NO_CLIP = error(f"Unknown event, it has no clip (or no such part), or {_OFF.lower()}")
_BODY_ERRORS = {413: error("Body larger than api.max_body_bytes"), 415: error("Body is not JSON")}
_TTL_BODY = RequestBody(TtlBody, required=False, description=f"Optional: how long the URL works (default {DEFAULT_TTL_S} s)")

#: the endpoint is ``recordings.<view name>`` (SIGNED_ENDPOINTS names two)
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/events/<event_id>/clip.mp4", clip, "The event's clip (fragmented MP4, stream copy of the "
          "camera); seekable with Range; " + _SIGNED_NOTE, "recordings",
          {200: binary(MP4, "The whole clip (or part)", **{"Accept-Ranges": "bytes"}), **_RANGED, 429: _BUSY_URL,
           400: error("Not an event id, or download or part out of range"), 404: _NO_CLIP}, query=ClipQuery),
    Route("POST", "/api/v1/events/<event_id>/clip-url", clip_url, f"A signed URL of the event's clip that works without "
          f"the token for {DEFAULT_TTL_S} s (or ttl_s) and names only this clip", "recordings",
          {200: ResponseSpec("A URL for a <video> element or a download link, and the clip's parts", ClipUrl),
           400: error('The body is not empty and not {"ttl_s": N} with N in range, or part out of range'),
           404: _NO_CLIP, **_BODY_ERRORS}, query=ClipUrlQuery, body=_TTL_BODY),
    Route("GET", "/api/v1/links/events/<event_id>/clip.mp4", link_clip, "The event's clip through the signed link a "
          "notification carries (docs/notifications.md): no token, only the link's valid, unexpired signature under "
          "the device's link key; it opens this clip alone", "recordings",
          {200: binary(MP4, "The clip", **{"Accept-Ranges": "bytes"}), **_RANGED,
           403: error("The link has expired, was altered, names another clip or was signed under another key"),
           429: _BUSY_URL, 400: error("Not an event id"), 404: error(f"Unknown event, it has no clip yet, no clip "
                                                                     f"links on this appliance, or {_OFF.lower()}")},
          query=LinkClipQuery),
    Route("GET", "/api/v1/recordings", list_segments, f"Continuous-recording segments overlapping a range (default: the "
          f"last day; at most {MAX_LIST_S / 86400:g} days)", "recordings",
          {200: ResponseSpec("Segments, oldest first", SegmentList), 400: error(_BAD_RANGE), 404: error(_OFF)},
          query=SegmentsQuery),
    Route("GET", "/api/v1/recordings/export.mp4", export, "One MP4 of a camera's recordings in a range, by stream copy "
          "(no re-encoding), muxed while it is sent (fragmented MP4, no temporary file, no Range); " + _SIGNED_NOTE,
          "recordings",
          {200: binary(MP4, "The export", **{"Accept-Ranges": "none"}), 400: error(_BAD_RANGE), 403: _FORBIDDEN,
           429: _BUSY_URL, 404: error(f"No segment covers the range, or {_OFF.lower()}"),
           503: error(f"{MAX_CONCURRENT_EXPORTS} exports are being sent (an export counts until its last byte is "
                      "read)", **_RETRY)}, query=ExportQuery),
    Route("POST", "/api/v1/recordings/export-url", export_url, f"A signed URL of an export that works without the "
          f"token for {DEFAULT_TTL_S} s (or ttl_s) and names only this camera and range", "recordings",
          {200: ResponseSpec("A URL for a <video> element or a download link", SignedUrl),
           400: error(_BAD_RANGE + ", or a bad body"), 404: error(_OFF), **_BODY_ERRORS},
          query=ExportUrlQuery, body=_TTL_BODY),
)


def recordings_blueprint(reads: ApplianceReads, config_getter: Callable[[], AppConfig],
                         clip_links: Optional[ClipLinks] = None) -> Blueprint:
    bp = Blueprint("recordings", __name__)
    views = RecordingViews(reads, config_getter, HeldLimit(MAX_CONCURRENT_EXPORTS), HeldLimit(MAX_USES_PER_SIGNED_URL),
                           clip_links)
    return register_routes(bp, ROUTES, views)


def _export(store: RecordingReader, wanted: TimeRange, download: bool) -> Response:
    stream = store.export_stream(str(wanted.camera_id), wanted.start, wanted.end)
    # The first fragment is muxed before the answer starts: a range without a frame is a 404,
    # not an empty 200.
    first = next(stream, None)
    if first is None:
        raise ApiError(404, f"no recording of camera {wanted.camera_id!r} covers that range")
    name = f"{wanted.camera_id}-{int(wanted.start)}-{int(wanted.end)}.mp4"
    response = Response(_chained(first, stream), mimetype=MP4, direct_passthrough=True)
    response.headers["Accept-Ranges"] = "none"  # muxed as it is sent: there is no byte n to start at
    response.headers["Cache-Control"] = "no-cache"
    response.headers["Content-Disposition"] = f"{'attachment' if download else 'inline'}; filename={name}"
    return response


def _chained(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield first
        yield from rest
    finally:
        close = getattr(rest, "close", None)
        if close is not None:
            close()  # the client went away: the export's reading stops with it
