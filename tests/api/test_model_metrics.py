"""``/metrics`` per model: the ``model`` label on the state, rate and latency series of each model."""
from prometheus_client.exposition import generate_latest
from prometheus_client import CollectorRegistry

from edge_app.api.model_metrics import model_metrics
from edge_app.appliance.model_set import combine_activity
from edge_app.pipeline.stall_watch import PipelineActivity, assess
from edge_app.reporting.protocol import LatencyReport, ModelStatusReport


def _model(name, state="running", cameras=("cam",), **changes):
    base = dict(name=name, state=state, backend="onnxruntime" if state == "running" else None, path=f"{name}.onnx",
                input_size=[640, 640], precision="fp32", max_batch=1, cameras=list(cameras), batches_per_s=4.0,
                fps=8.0, latency_ms=LatencyReport(50.0, 90.0))
    return ModelStatusReport(**{**base, **changes})


class _Collector:
    def __init__(self, models):
        self._models = models

    def describe(self):
        return []

    def collect(self):
        return model_metrics(self._models)


def _exposition(models):
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(models))
    return generate_latest(registry).decode()


def test_each_model_has_its_series_with_a_model_label():
    text = _exposition([_model("default", cameras=("a", "b")),
                        _model("plates", state="failed", cameras=("gate",), latency_ms=LatencyReport(None, None))])
    assert 'edge_app_model_state{model="default",state="running"} 1.0' in text
    assert 'edge_app_model_state{model="plates",state="failed"} 1.0' in text
    assert 'edge_app_model_state{model="plates",state="running"} 0.0' in text
    assert 'edge_app_model_batches_per_second{model="default"} 4.0' in text
    assert 'edge_app_model_latency_seconds{model="default",quantile="0.99"} 0.09' in text
    assert 'model="plates",quantile' not in text, "no latency before the first frame"
    assert 'edge_app_camera_model{camera="gate",model="plates"} 1.0' in text
    assert 'edge_app_camera_model{camera="b",model="default"} 1.0' in text


def test_the_pipelines_of_several_models_are_stalled_when_one_is():
    idle = PipelineActivity(running=True, gather_alive=True, last_batch_s=99.0, work_since_s=None)
    stuck = PipelineActivity(running=True, gather_alive=True, last_batch_s=10.0, work_since_s=20.0,
                             last_error="infer failed")
    stopped = PipelineActivity(running=False, gather_alive=False, last_batch_s=None, work_since_s=1.0)
    combined = combine_activity([idle, stuck, stopped])
    health = assess(combined, now_s=100.0, stall_after_s=20.0)
    assert health.stalled and "infer failed" in health.reason
    assert combined.last_batch_s == 99.0
    assert not assess(combine_activity([idle, stopped]), now_s=100.0, stall_after_s=20.0).stalled
    dead = PipelineActivity(running=True, gather_alive=False, last_batch_s=None, work_since_s=None)
    assert assess(combine_activity([idle, dead]), now_s=100.0).stalled
    assert not combine_activity([]).running
