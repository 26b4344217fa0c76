"""``GET /metrics``: Prometheus exposition of the appliance's figures.

The figures already live in the appliance (``reads.status()``); a custom collector turns them
into metric families at scrape time, so nothing on the frame path updates Prometheus objects.
Each app gets its own registry: two apps in one process (tests, say) never share series.
"""
from __future__ import annotations

import logging
from typing import Iterator, List, Tuple

from flask import Blueprint, Response, request
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric,
                                           SummaryMetricFamily)

from edge_app.reporting.stage_times import StageTotal
from edge_app.reporting.protocol import (ApplianceReads, CameraReport, MqttReport, PipelineReport, RecordingReport,
                                         StatusReport, TrackerProcessesReport)
from edge_app.api.model_metrics import model_metrics
from edge_app.api.routing import ResponseSpec, Route, register_routes
from edge_app.health.metrics import health_metrics
from edge_app.mqtt.payloads import CAMERA_STATES
from edge_app.health.cpu_groups import cpu_by_group

logger = logging.getLogger(__name__)

PREFIX = "edge_app"


class ApplianceCollector:
    """Builds metric families from ``reads.status()`` on every scrape."""

    def __init__(self, reads: ApplianceReads):
        self._reads = reads

    def describe(self) -> List[Metric]:
        # Without describe() the registry would call collect() at registration time, i.e. ask
        # the appliance for its status before it may be ready to answer.
        return []

    def collect(self) -> Iterator[Metric]:
        status = self._reads.status()
        yield from self._device(status)
        yield from self._cameras(status.cameras)
        yield from self._mqtt(status.mqtt)
        yield from self._pipeline(status.pipeline)
        yield from self._stages(self._reads.stage_times())
        yield from self._tracking(status.tracking)
        yield from model_metrics(status.models)
        if status.health is not None:
            yield from health_metrics(status.health)
        if status.recording is not None:
            yield from self._recording(status.recording, status.cameras)
        if status.remote_config is not None:
            yield CounterMetricFamily(f"{PREFIX}_remote_config_refused",
                                      "R/config/desired messages refused before their patch was looked at "
                                      "(unsigned, unauthenticated, too big or over the rate)",
                                      value=status.remote_config.refused)

    @staticmethod
    def _device(status: StatusReport) -> Iterator[Metric]:
        info = InfoMetricFamily(PREFIX, "Device id, software version and inference backend")
        info.add_metric([], {"device_id": status.device_id, "version": status.version, "backend": status.backend or ""})
        yield info
        yield GaugeMetricFamily(f"{PREFIX}_uptime_seconds", "Seconds since the appliance started", value=status.uptime_s)

    @staticmethod
    def _cameras(cameras: List[CameraReport]) -> Iterator[Metric]:
        labels = ["camera"]
        families = (
            (GaugeMetricFamily(f"{PREFIX}_camera_fps", "Frames per second of the camera, as in /api/v1/status",
                               labels=labels), "fps"),
            (GaugeMetricFamily(f"{PREFIX}_camera_analyzed_fps", "Frames per second run through the detector",
                               labels=labels), "analyzed_fps"),
            (CounterMetricFamily(f"{PREFIX}_camera_frames_captured", "Frames delivered by the camera", labels=labels),
             "frames_captured"),
            (CounterMetricFamily(f"{PREFIX}_camera_frames_analyzed", "Frames run through the detector", labels=labels),
             "frames_analyzed"),
            (CounterMetricFamily(f"{PREFIX}_camera_frames_dropped",
                                 "Frames captured but not analysed (fps_limit, or the detector was busy)",
                                 labels=labels), "frames_dropped"),
            (CounterMetricFamily(f"{PREFIX}_camera_reconnects", "Times the camera stream was reopened", labels=labels),
             "reconnects"),
        )
        state = GaugeMetricFamily(
            f"{PREFIX}_camera_state", "1 for the camera's current state, 0 for the others", labels=["camera", "state"]
        )
        motion = GaugeMetricFamily(f"{PREFIX}_camera_motion",
                                   "1 while something moves in the camera (cameras with motion gating on)", labels=labels)
        skipped = CounterMetricFamily(f"{PREFIX}_camera_frames_skipped_motion",
                                      "Frames the motion gate held back from the model (nothing moved, nothing tracked)",
                                      labels=labels)
        for camera in cameras:
            for family, field_name in families:
                family.add_metric([camera.id], float(getattr(camera, field_name)))
            for name in CAMERA_STATES:
                state.add_metric([camera.id, name], 1.0 if camera.state == name else 0.0)
            if camera.motion is not None:
                motion.add_metric([camera.id], float(camera.motion.motion))
                skipped.add_metric([camera.id], float(camera.motion.frames_skipped))
        yield from (family for family, _ in families if family.samples)
        if state.samples:
            yield state
        yield from (family for family in (motion, skipped) if family.samples)

    @staticmethod
    def _mqtt(mqtt: MqttReport) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_connected", "1 while connected to the broker", value=float(mqtt.connected))
        yield CounterMetricFamily(f"{PREFIX}_mqtt_messages_published", "Messages handed to the broker", value=mqtt.published)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_messages_queued", "Messages waiting for the broker", value=mqtt.queued)
        yield CounterMetricFamily(f"{PREFIX}_mqtt_messages_dropped",
                                  "Messages dropped because the offline queue was full", value=mqtt.dropped)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_stalled",
                                "1 while the MQTT link is connected but nothing moves, or its network thread is gone",
                                value=float(mqtt.stalled))
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_lag_seconds",
                                "How long the oldest message not yet handed to the broker link has waited",
                                value=mqtt.lag_ms / 1000.0)
        yield CounterMetricFamily(f"{PREFIX}_mqtt_loop_restarts", "Times the MQTT network thread was started again",
                                  value=mqtt.loop_restarts)
        yield CounterMetricFamily(f"{PREFIX}_mqtt_closed_by_broker",
                                  "Accepted MQTT connections the broker closed again", value=mqtt.closed_by_broker)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_session_taken_over",
                                "1 while the broker keeps closing the connection right after accepting it: another "
                                "client probably uses this client id", value=float(mqtt.takeover_warning is not None))
        errors = CounterMetricFamily(f"{PREFIX}_mqtt_callback_errors",
                                     "Exceptions caught in MQTT callbacks (a hostile or broken message, a failing handler)",
                                     labels=["callback"])
        for callback, count in sorted(mqtt.callback_errors.items()):
            errors.add_metric([callback], count)
        yield errors

    @staticmethod
    def _pipeline(pipeline: PipelineReport) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_pipeline_fps", "Frames analysed per second, all cameras", value=pipeline.fps)
        latency = GaugeMetricFamily(f"{PREFIX}_pipeline_latency_seconds", "Capture-to-publish latency quantiles",
                                    labels=["quantile"])
        for value_ms, quantile in ((pipeline.latency_ms.p50, "0.5"), (pipeline.latency_ms.p99, "0.99")):
            if value_ms is not None:
                latency.add_metric([quantile], value_ms / 1000.0)
        if latency.samples:
            yield latency
        yield GaugeMetricFamily(f"{PREFIX}_pipeline_stalled",
                                "1 while work has waited too long for a completed batch (see /readyz)",
                                value=float(pipeline.stalled))
        if pipeline.last_batch_age_s is not None:
            yield GaugeMetricFamily(f"{PREFIX}_pipeline_last_batch_age_seconds", "Seconds since the last completed batch",
                                    value=pipeline.last_batch_age_s)
        yield CounterMetricFamily(f"{PREFIX}_pipeline_errors", "Failures in the pipeline's stages", value=pipeline.errors)

    @staticmethod
    def _stages(totals: List[StageTotal]) -> Iterator[Metric]:
        stages = SummaryMetricFamily(f"{PREFIX}_stage_seconds",
                                     "Time analysed frames spent in each stage of the appliance, per camera "
                                     "(_sum / _count: the mean per frame; docs/metrics)", labels=["camera", "stage"])
        for total in totals:
            stages.add_metric([total.camera_id, total.stage], count_value=total.frames, sum_value=total.seconds)
        if stages.samples:
            yield stages

    @staticmethod
    def _tracking(tracking: TrackerProcessesReport) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_tracker_processes",
                                "Child processes running the cameras' trackers (tracking.processes); 0: in the "
                                "appliance's process", value=tracking.processes)
        yield CounterMetricFamily(f"{PREFIX}_tracker_process_restarts",
                                  "Tracker child processes given up (exited or stopped answering) and started again; "
                                  "their cameras' tracks started over", value=tracking.restarts)

    @staticmethod
    def _recording(recording: RecordingReport, cameras: List[CameraReport]) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_recording_paused",
                                "1 while the recording store stopped writing (its disk below the reserve)",
                                value=float(recording.paused is not None))
        yield CounterMetricFamily(f"{PREFIX}_recording_bytes_written", "Bytes of clips and segments written",
                                  value=recording.bytes_written)
        yield CounterMetricFamily(f"{PREFIX}_recording_packets_dropped",
                                  "Compressed packets the recorder could not take in time", value=recording.packets_dropped)
        yield CounterMetricFamily(f"{PREFIX}_recording_masked_packets_dropped",
                                  "Source packets the privacy-masked re-encodes could not take in time",
                                  value=recording.masked_packets_dropped)
        yield CounterMetricFamily(f"{PREFIX}_recording_clips_preroll_short",
                                  "Event clips that came too late for the pre-roll held in memory",
                                  value=recording.clips_preroll_short)
        yield CounterMetricFamily(f"{PREFIX}_recording_clips_skipped",
                                  "Events stored without a clip: a camera's clips at once or clip bytes per hour "
                                  "were at their cap", value=recording.clips_skipped)
        yield CounterMetricFamily(f"{PREFIX}_recording_clips_cut",
                                  "Clips ended early: their camera's clip bytes of the hour were spent",
                                  value=recording.clips_cut)
        labels = ["camera"]
        active = GaugeMetricFamily(f"{PREFIX}_camera_recording", "1 while the camera's packets are being written",
                                   labels=labels)
        written = CounterMetricFamily(f"{PREFIX}_camera_recording_bytes_written", "Bytes written of the camera",
                                      labels=labels)
        dropped = CounterMetricFamily(f"{PREFIX}_camera_recording_packets_dropped",
                                      "Packets of the camera the recorder could not take in time", labels=labels)
        short = CounterMetricFamily(f"{PREFIX}_camera_recording_clips_preroll_short",
                                    "Clips of the camera that came too late for the pre-roll held in memory",
                                    labels=labels)
        skipped = CounterMetricFamily(f"{PREFIX}_camera_recording_clips_skipped",
                                      "Events of the camera stored without a clip (a clip cap)", labels=labels)
        masked_dropped = CounterMetricFamily(
            f"{PREFIX}_camera_recording_masked_packets_dropped",
            "Source packets of the camera its privacy-masked re-encode could not take in time", labels=labels + ["encoder"])
        for camera in cameras:
            if camera.recording is not None and camera.recording.masked_encoder is not None:
                masked_dropped.add_metric([camera.id, camera.recording.masked_encoder],
                                          float(camera.recording.masked_packets_dropped))
            if camera.recording is not None:
                active.add_metric([camera.id], float(camera.recording.recording))
                written.add_metric([camera.id], float(camera.recording.bytes_written))
                dropped.add_metric([camera.id], float(camera.recording.packets_dropped))
                short.add_metric([camera.id], float(camera.recording.clips_preroll_short))
                skipped.add_metric([camera.id], float(camera.recording.clips_skipped))
        yield from (family for family in (active, written, dropped, short, skipped, masked_dropped) if family.samples)


class CpuGroupCollector:
    """CPU seconds of the appliance's threads and child processes by group, read from /proc at
    scrape time (``edge_app.health.cpu_groups``); nothing where there is no /proc."""

    def describe(self) -> List[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        try:
            groups = cpu_by_group()
        except OSError:  # not Linux, or /proc not mounted
            return
        except RuntimeError:  # a child started or ended while it was read: the next scrape has it
            logger.debug("CPU by group not read this time", exc_info=True)
            return
        family = CounterMetricFamily(f"{PREFIX}_cpu_seconds",
                                     "CPU seconds (user + system) of the appliance's threads and child processes by "
                                     "what they do (docs/metrics.md); falls when they end", labels=["group"])
        for group, seconds in sorted(groups.items()):
            family.add_metric([group], seconds)
        yield family


def metrics(registry: CollectorRegistry) -> Response:
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return Response(encoder(registry), content_type=content_type)


#: the endpoint is ``metrics.metrics``
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/metrics", metrics, "Prometheus metrics; the token is needed as api.metrics_auth says (by default "
          "while the API listens beyond loopback)", "monitoring",
          {200: ResponseSpec("Prometheus text exposition", {"type": "string"}, "text/plain")}),
)


def metrics_blueprint(reads: ApplianceReads) -> Blueprint:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ApplianceCollector(reads))
    ProcessCollector(registry=registry)  # CPU, memory and open files of the appliance process
    registry.register(CpuGroupCollector())  # ... and its CPU by thread and child process
    return register_routes(Blueprint("metrics", __name__), ROUTES, registry)
