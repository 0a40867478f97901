"""Reading the audit exports' streamed responses (``/audit/export/...``) in tests."""

from __future__ import annotations

import csv
import io
import json


def read_csv(response) -> list[dict]:
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def read_json(response) -> list[dict]:
    assert response.streaming and response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))
