"""Reading the audit exports' streamed responses (``/audit/export/...``) in tests: the rows, without the signed
trailer (the chain head and the signature, checked by tools/verify_audit_export.py)."""

from __future__ import annotations

import csv
import io
import json


def body(response) -> bytes:
    assert response.streaming
    return b"".join(response.streaming_content)


def csv_rows(data: bytes) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    first_column = next(iter(rows[0])) if rows else ""
    return [row for row in rows if not str(row.get(first_column, "")).startswith("#")]


def read_csv(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    return csv_rows(body(response))


def read_json(response) -> list[dict]:
    assert response["Content-Type"] == "application/json"
    return json.loads(body(response))["rows"]
