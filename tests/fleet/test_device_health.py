"""The fleet keeps the latest R/health of each appliance, filters and sorts by problems (SQLite and PostgreSQL)."""
from __future__ import annotations


from edge_app.config.schema import HealthConfig
from edge_app.health.sampler import HealthSampler
from tests.health.conftest import TREES
from testkit.waiting import wait_for


def _report(module: str) -> dict:
    tree = TREES / module
    return HealthSampler(HealthConfig(), ["."], root=tree, base=tree).sample().to_dict()


def _ids(fleet, query: str):
    response = fleet.get("/api/v1/devices" + query)
    assert response.status_code == 200, response.text
    return [d["device_id"] for d in response.json()["devices"]]


def _pages(fleet, query: str):
    """Every device of ``query`` one page of one device at a time, and the total of the first page."""
    ids, after, total = [], None, None
    while True:
        response = fleet.get(f"/api/v1/devices?{query}&limit=1" + (f"&after={after}" if after else ""))
        assert response.status_code == 200, response.text
        page = response.json()
        total = page["total"] if total is None else total
        ids += [d["device_id"] for d in page["devices"]]
        after = page["next"]
        if after is None:
            return ids, total


def test_health_is_stored_filtered_and_sorted(fleet_factory, sim_devices):
    fleet = fleet_factory()
    cool = sim_devices(fleet.prefix, "edge-cool")
    hot = sim_devices(fleet.prefix, "edge-hot")
    gone = sim_devices(fleet.prefix, "edge-gone")
    quiet = sim_devices(fleet.prefix, "edge-quiet")  # never sends health
    cool.publish("health", _report("orin-nano"), retain=True)
    hot.publish("health", _report("orin-nx"), retain=True)  # hot, throttling, memory nearly full
    gone.publish("health", _report("agx-orin"), retain=True)

    def stored(device_id):
        return (lambda d: d if d.get("health_report") else None)(fleet.device(device_id))

    detail = wait_for(lambda: stored("edge-hot"), 10, "health of edge-hot")
    assert detail["health"]["problems"] == ["hot", "throttling", "memory_full"]
    assert detail["health"]["temperature_c"] == 99.4
    assert detail["health_report"]["power"]["mode"] == "25W"
    wait_for(lambda: stored("edge-cool") and stored("edge-gone"), 10, "health of every device")
    gone.kill()  # the broker sends its last will: offline
    wait_for(lambda: _ids(fleet, "?problem=offline") == ["edge-gone"], 15, "edge-gone offline")

    assert _ids(fleet, "?problem=hot") == ["edge-hot"]
    assert _ids(fleet, "?problem=throttling") == ["edge-hot"]
    assert _ids(fleet, "?problem=disk_full") == []
    assert _ids(fleet, "?problem=any") == ["edge-gone", "edge-hot"]
    assert _ids(fleet, "?sort=problems") == ["edge-gone", "edge-hot", "edge-cool", "edge-quiet"]
    assert _pages(fleet, "sort=problems") == (["edge-gone", "edge-hot", "edge-cool", "edge-quiet"], 4)
    assert _pages(fleet, "problem=any&sort=problems") == (["edge-gone", "edge-hot"], 2)
    assert _pages(fleet, "problem=any") == (["edge-gone", "edge-hot"], 2)
    listed = {d["device_id"]: d["health"] for d in fleet.get("/api/v1/devices").json()["devices"]}
    assert listed["edge-quiet"] is None and listed["edge-cool"]["problems"] == []
    assert fleet.get("/api/v1/devices?problem=melting").status_code == 400
    assert fleet.get("/api/v1/devices?sort=random").status_code == 400

    cool.publish("health", dict(_report("orin-nano"), problems=[{"kind": "disk_full", "subject": "recordings"}]),
                 retain=True)
    wait_for(lambda: _ids(fleet, "?problem=disk_full") == ["edge-cool"], 10, "edge-cool's newer report")
    quiet.publish("health", {"problems": []})
    wait_for(lambda: fleet.device("edge-quiet").get("health_report") == {"problems": []}, 10, "a minimal report")


def test_hostile_health_messages_are_refused_and_keep_the_last_good_one(fleet_factory, sim_devices):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    device.publish("health", _report("orin-nx"), retain=True)
    wait_for(lambda: fleet.device("edge-a").get("health_report"), 10, "the good report")
    rejected_before = fleet.get("/api/v1/status").json()
    # over ingest.message_bytes' 64 KiB for health: dropped on arrival (oversize); the rest fail the field checks
    for payload in (b"[" * 100, b"not json", b'{"problems": "hot"}', b'{"ts": 9007199254740993, "problems": []}',
                    b'{"problems": [], "pad": "' + b"x" * (70 * 1024) + b'"}', b"[]"):
        device._client.publish(f"{fleet.prefix}/edge-a/health", payload, qos=1).wait_for_publish(5)
    wait_for(lambda: (lambda s: s if _rejected(s) >= _rejected(rejected_before) + 6 else None)(
        fleet.get("/api/v1/status").json()), 10, "six refused messages")
    detail = fleet.device("edge-a")
    assert detail["health"]["problems"] == ["hot", "throttling", "memory_full"]
    assert detail["health_report"]["power"]["mode"] == "25W"


def _rejected(status: dict) -> int:
    return status["mqtt"]["rejected"] + status["mqtt"]["oversize"]
