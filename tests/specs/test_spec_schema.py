"""JSON Schemas for editors: valid JSON, expected titles, no internal fields."""

from __future__ import annotations

import json

from framework.specs import schemas


def test_schemas_are_json_with_expected_titles() -> None:
    found = schemas()
    assert set(found) == {"employee", "scenario", "sop_card", "schedules"}
    titles = {kind: schema["title"] for kind, schema in found.items()}
    assert titles == {
        "employee": "EmployeeCard",
        "scenario": "Scenario",
        "sop_card": "SopCard",
        "schedules": "SchedulesFile",
    }
    for schema in found.values():
        assert json.loads(json.dumps(schema, ensure_ascii=False)) == schema
        assert schema["type"] == "object"
        assert schema["$schema"].startswith("https://json-schema.org/")
        assert not {"source", "lines", "body"} & set(schema["properties"])


def test_schema_content() -> None:
    found = schemas()
    assert set(found["employee"]["required"]) == {"id", "display_name", "role", "persona"}
    assert set(found["scenario"]["required"]) == {"id", "title", "participants", "announcement"}
    assert "from" in found["sop_card"]["$defs"]["ChangeLogEntry"]["properties"]
    schedule = found["schedules"]["$defs"]["ScheduleSpec"]["properties"]
    assert {"cron", "every", "timezone", "start", "deliver", "missed", "quiet"} <= set(schedule)
    # Durations are written as in the file (90s, 5m), not as ISO 8601.
    assert found["schedules"]["$defs"]["Missed"]["properties"]["grace"]["default"] == "5m"
    model = found["employee"]["$defs"]["ModelSpec"]
    assert any(option.get("type") == "string" for option in model["anyOf"])  # shorthand allowed
