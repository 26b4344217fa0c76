"""The event store keeps the model that found each event's object; a database from before models
is migrated in place, its events credited to the single model (``default``)."""

from edge_app.events.database import LATEST_VERSION, EventDatabase, read_connection, query_events
from edge_app.events.model import Event
from edge_app.events.query import EventQuery
from tests.events.old_schema import database_at


def _event(event_id: str, model: str = "default") -> Event:
    return Event(id=event_id, camera_id="gate", label="car", track_id=1, score=0.8, top_score=0.9,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=10.0, start_time=9.0, model=model)


def test_a_database_from_before_models_keeps_its_events_as_the_default_models(tmp_path):
    conn = database_at(tmp_path, 1)
    conn.execute("INSERT INTO events (id, camera_id, label, track_id, score, top_score, box, frame_time, start_time, "
                 "end_time, current_zones, entered_zones) VALUES ('old', 'gate', 'car', 1, 0.5, 0.6, '[1,2,3,4]', 2, 1, "
                 "NULL, '[]', '[]')")
    conn.commit()
    conn.close()

    database = EventDatabase(tmp_path)
    database.begin()
    database.upsert(_event("new", model="plates"))
    database.commit()
    database.close()

    reader = read_connection(tmp_path)
    events = {e.id: e for e in query_events(reader, EventQuery())}
    assert events["old"].model == "default" and events["new"].model == "plates"
    assert reader.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == LATEST_VERSION
    reader.close()
