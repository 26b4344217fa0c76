"""The chaos soak's schedule and its verdicts, without running anything (the run itself is
tests/e2e/test_chaos_short.py)."""
from bench.chaos.probes import ProcessSample
from bench.chaos.report import CameraOutage, ChaosReport, ChaosSettings
from bench.chaos.soak import plan_events


def test_the_short_schedule_holds_every_kind_of_disturbance():
    settings = ChaosSettings.for_minutes(2)
    events = plan_events(settings)
    kinds = [event.kind for event in events]
    for kind in ("camera_down", "camera_up", "broker_down", "broker_up", "storm", "slowloris"):
        assert kind in kinds
    for cam in range(settings.cameras):  # every server goes down at least twice
        assert sum(1 for e in events if e.kind == "camera_down" and e.target == cam) >= 2
    assert all(event.at_s < settings.chaos_s for event in events)


def test_the_full_schedule_follows_the_issue():
    settings = ChaosSettings.for_minutes(30)
    events = plan_events(settings)
    downs = [e for e in events if e.kind == "camera_down" and e.target == 0]
    assert [b.at_s - a.at_s for a, b in zip(downs, downs[1:])] == [120.0] * (len(downs) - 1)
    assert len(downs) == 15
    brokers = [e.at_s for e in events if e.kind == "broker_down"]
    assert [b - a for a, b in zip(brokers, brokers[1:])] == [180.0] * (len(brokers) - 1)


def _healthy_report() -> ChaosReport:
    report = ChaosReport(ChaosSettings.for_minutes(2), "now")
    report.analysed = {"cam0": 100, "cam1": 90}
    report.received_unique = {"cam0": 100, "cam1": 90}
    report.received_total = 192
    report.mqtt_dropped = 0
    report.baseline = ProcessSample(30.0, 400.0, 37, 15)
    report.end = ProcessSample(200.0, 410.0, 37, 15)
    report.outages = [CameraOutage("cam0", 5.0, 15.0, 1000.0, 45.0, 4.2), CameraOutage("cam1", 15.0, 25.0, 1010.0, None, 3.1)]
    return report


def test_a_healthy_run_meets_every_goal_and_counts_duplicates():
    report = _healthy_report()
    assert report.met, report.markdown()
    assert report.missing == 0 and report.duplicates == 2 and report.worst_recovery_s == 4.2
    assert "worst 4.2" in report.markdown()


def test_each_goal_fails_on_its_own():
    def failing(report):
        return [goal.name for goal in report.goals() if not goal.met]

    report = _healthy_report()
    report.received_unique["cam1"] = 89
    assert failing(report) == ["detections queued by the appliance that never arrived"]
    report = _healthy_report()
    report.end = ProcessSample(200.0, 431.0, 38, 16)
    assert len(failing(report)) == 3
    report = _healthy_report()
    report.outages[1].recovery_s = None  # never streamed again before its next kill
    assert len(failing(report)) == 1 and report.worst_recovery_s is None
    report = _healthy_report()
    report.outages[0].recovery_s = 10.5
    assert len(failing(report)) == 1
    report = _healthy_report()
    report.crashes = 1
    assert failing(report) == ["crashes (process exit)"]
