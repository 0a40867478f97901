"""Check an audit export (CSV or JSON from /audit/export/…) offline: was any byte changed since the inbox signed it?

    python tools/verify_audit_export.py inbox-events-20261206-120000.csv --key "$INBOX_AUDIT_SIGNING_KEY"

Needs only Python's standard library. Exit status 0 when the signature matches, 1 when it does not, 2 when the file
is not a signed export. docs/audit.md says what the signature and the chain head it carries prove.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
from pathlib import Path

CSV_MARK = b"#signature,"
JSON_MARK = b',\n"signature": "'


def split(data: bytes) -> tuple[bytes, str]:
    """The signed bytes and the signature the file carries; ValueError when it carries none."""
    for mark, end in ((JSON_MARK, b'"'), (CSV_MARK, b"\r\n")):
        at = data.rfind(mark)
        if at >= 0:
            signature = data[at + len(mark) :].split(end, 1)[0].decode("ascii", "replace").strip()
            return data[:at], signature
    raise ValueError("no signature: not an audit export, or it was cut short")


def head_of(body: bytes) -> str:
    """The chain head the export recorded, in words."""
    if body.startswith(b'{"rows": '):
        chain = json.loads(body[body.rfind(b'"chain": ') + 9 :])
        return f"chain head: seal {chain['headSeq']}, hash {chain['headHash']}"
    line = body[body.rfind(b"#chain,") :].decode(errors="replace").strip()
    _, seq, hash_, *_ = line.split(",") + ["", ""]
    return f"chain head: seal {seq}, hash {hash_}"


def verify(data: bytes, key: str) -> tuple[bool, str]:
    body, signature = split(data)
    expected = hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return False, "SIGNATURE MISMATCH: the file was changed after the inbox signed it (or the key is wrong)"
    return True, f"signature ok; {head_of(body)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--key", default=os.environ.get("INBOX_AUDIT_SIGNING_KEY", ""), help="the signing key")
    args = parser.parse_args(argv)
    if not args.key:
        parser.error("give --key or set INBOX_AUDIT_SIGNING_KEY")
    try:
        ok, message = verify(args.export.read_bytes(), args.key)
    except (OSError, ValueError) as exc:
        print(f"{args.export}: {exc}", file=sys.stderr)
        return 2
    print(f"{args.export}: {message}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
