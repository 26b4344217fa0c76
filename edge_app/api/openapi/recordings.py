"""The OpenAPI entries of the recording routes (edge_app/api/recordings.py), merged into
:func:`edge_app.api.openapi.document.build_openapi`."""
from __future__ import annotations

from typing import Any, Callable, Dict

from edge_app.api.openapi.parts import (NAME, NAME_FILTER, TIME, TIME_FILTER, Schema, binary, error, error_with_headers,
                                        headers, json_answer, param, ref)
from edge_app.api.recording_params import MAX_EXPORT_S, MAX_LIST_S
from edge_app.api.recordings import MAX_CONCURRENT_EXPORTS, MAX_USES_PER_SIGNED_URL
from edge_app.record.types import MAX_PART
from edge_app.http_server.signed_urls import DEFAULT_TTL_S, MAX_TTL_S, MIN_TTL_S, SIG_HEX_CHARS

Op = Callable[..., Dict[str, Any]]

SIGNED_NOTE = "also through a signed URL, without the token (POST .../clip-url or .../export-url)"


def _mp4(description: str, ranges: str = "bytes") -> Dict[str, Any]:
    return {**binary("video/mp4", description), "headers": headers(**{"Accept-Ranges": ranges})}


def recording_schemas() -> Dict[str, Schema]:
    segment = {"type": "object", "required": ["camera_id", "start", "end", "bytes"], "properties": {
        "camera_id": {"type": "string"},
        "start": {"type": "number", "description": "Unix seconds of its first frame"},
        "end": {"type": "number", "description": "Unix seconds of its last frame (grows while it is written)"},
        "bytes": {"type": "integer", "minimum": 0}}}
    signed = {"type": "object", "required": ["url", "expires"], "properties": {
        "url": {"type": "string", "description": "Path and query, relative to the API's root; needs no token"},
        "expires": {"type": ["integer", "null"],
                    "description": "Unix seconds; null when api.token is not set (the plain route is open, it never expires)"}}}
    clip_url = {"type": "object", "required": ["url", "expires", "part", "parts"], "properties": {
        **signed["properties"],
        "part": {"type": "integer", "minimum": 0, "description": "The part this URL plays"},
        "parts": {"type": "integer", "minimum": 1,
                  "description": "How many parts the clip has (it continues in a new part every record.events.max_s); "
                                 "play them in order, part=0 to parts-1"}}}
    return {"Segment": segment, "ClipUrl": clip_url,
            "SegmentList": {"type": "object", "required": ["segments"],
                            "properties": {"segments": {"type": "array", "items": ref("Segment")}}},
            "SignedUrl": signed}


def recording_paths(op: Op, event_id: Dict[str, Any]) -> Dict[str, Any]:
    """The paths of the recording routes; ``op`` is openapi._op, ``event_id`` its event id parameter."""
    signature = [
        param("expires", "query", {"type": "integer", "minimum": 0}, "Of a signed URL: Unix seconds it is valid until"),
        param("sig", "query", {"type": "string", "pattern": f"^[0-9a-f]{{{SIG_HEX_CHARS}}}$"},
               "Of a signed URL: HMAC-SHA256 of the path and the other parameters"),
    ]
    part = param("part", "query", {"type": "integer", "minimum": 0, "maximum": MAX_PART},
                  "Which part of a clip longer than record.events.max_s (default 0: the one from the event's start)")
    download = param("download", "query", {"type": "string", "enum": ["", "0", "1"]},
                      "1: answer with Content-Disposition: attachment (a download button)")
    busy_url = error_with_headers(f"This signed URL is being read {MAX_USES_PER_SIGNED_URL} times at once already",
                                  **{"Retry-After": "Seconds until trying again is worth it"})
    ranged = {"206": dict(_mp4("The requested byte range (Range: bytes=...)"),
                          headers=headers(**{"Content-Range": "bytes first-last/size", "Accept-Ranges": "bytes"})),
              "403": error("A signed URL that has expired, was altered, or was signed under another token"),
              "416": error_with_headers("The Range cannot be satisfied or parsed", **{"Content-Range": "bytes */size"})}
    range_params = [
        param("camera", "query", NAME, "The camera", required=True),
        param("from", "query", TIME, "Start: Unix seconds or ISO 8601 (without a zone: UTC)", required=True),
        param("to", "query", TIME, f"End, after from and at most {MAX_EXPORT_S:g} s later", required=True),
    ]
    ttl_body = {"required": False, "description": f"Optional: how long the URL works (default {DEFAULT_TTL_S} s)",
                "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"ttl_s": {"type": "integer", "minimum": MIN_TTL_S, "maximum": MAX_TTL_S}}}}}}
    signed_answer = json_answer(ref("SignedUrl"), "A URL for a <video> element or a download link")
    off = "Recording is off on this appliance"
    bad_range = error("A parameter is missing or malformed, from is not before to, or the range is too long")
    bad_body = error('The body is not empty and not {"ttl_s": N} with N in range')
    return {
        "/api/v1/events/{event_id}/clip.mp4": {
            "get": op("The event's clip (fragmented MP4, stream copy of the camera); seekable with Range; " + SIGNED_NOTE,
                      {"200": _mp4("The whole clip (or part)"), **ranged, "429": busy_url,
                       "400": error("Not an event id, or download or part out of range"),
                       "404": error(f"Unknown event, it has no clip (or no such part), or {off.lower()}")},
                      "recordings", [event_id, part, download, *signature]),
        },
        "/api/v1/events/{event_id}/clip-url": {
            "post": op(f"A signed URL of the event's clip that works without the token for {DEFAULT_TTL_S} s "
                       f"(or ttl_s) and names only this clip",
                       {"200": json_answer(ref("ClipUrl"),
                                           "A URL for a <video> element or a download link, and the clip's parts"),
                        "400": error(bad_body["description"] + ", or part out of range"),
                        "404": error(f"Unknown event, it has no clip (or no such part), or {off.lower()}"),
                        "413": error("Body larger than api.max_body_bytes"), "415": error("Body is not JSON")},
                       "recordings", [event_id, part], body=ttl_body),
        },
        "/api/v1/recordings": {
            "get": op(f"Continuous-recording segments overlapping a range (default: the last day; at most "
                      f"{MAX_LIST_S / 86400:g} days)",
                      {"200": json_answer(ref("SegmentList"), "Segments, oldest first"),
                       "400": bad_range, "404": error(off)},
                      "recordings", [
                          param("camera", "query", NAME_FILTER, "Only this camera's segments"),
                          param("from", "query", TIME_FILTER, "Start: Unix seconds or ISO 8601 (without a zone: UTC); "
                                                              "default a day before to"),
                          param("to", "query", TIME_FILTER, "End, after from; default now"),
                      ]),
        },
        "/api/v1/recordings/export.mp4": {
            "get": op("One MP4 of a camera's recordings in a range, by stream copy (no re-encoding), muxed while "
                      "it is sent (fragmented MP4, no temporary file, no Range); " + SIGNED_NOTE,
                      {"200": _mp4("The export", "none"), "400": bad_range,
                       "403": ranged["403"], "429": busy_url,
                       "404": error(f"No segment covers the range, or {off.lower()}"),
                       "503": error_with_headers(f"{MAX_CONCURRENT_EXPORTS} exports are being sent (an export counts "
                                                 "until its last byte is read)",
                                                 **{"Retry-After": "Seconds until trying again is worth it"})},
                      "recordings", [*range_params, download, *signature]),
        },
        "/api/v1/recordings/export-url": {
            "post": op(f"A signed URL of an export that works without the token for {DEFAULT_TTL_S} s (or ttl_s) "
                       "and names only this camera and range",
                       {"200": signed_answer, "400": error(bad_range["description"] + ", or a bad body"),
                        "404": error(off), "413": error("Body larger than api.max_body_bytes"),
                        "415": error("Body is not JSON")},
                       "recordings", range_params, body=ttl_body),
        },
    }

