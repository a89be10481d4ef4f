"""Plain helpers for the campaign and audit suite (fixtures live in conftest.py).

Builds on Tests/integration/helpers.py (config, capture server, read-only DB
queries, link parsing) and Tests/http/http_support.py (the `herald serve`
wrapper); conftest.py puts those directories on sys.path first.
"""

from __future__ import annotations

import json
import re
import signal
import struct
import subprocess
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Iterable, Optional, Union

import pytest
import requests

from helpers import action_link, assert_one_error_line, deep_merge, query, row_count, wait_until, write_config
from http_support import ADMIN_TOKEN, CONTINUE, HTTP_TIMEOUT, code_of, ok
from suites import chromium_binary

STATES = ["queued", "sending", "sent", "deferred", "failed", "dead", "expired", "cancelled", "bounced", "complained",
          "possibly-delivered"]
PENDING = {"queued", "sending", "deferred"}
AUDIT_FIELDS = [
    "id", "recipient", "action", "campaign", "state", "queuedAt", "sentAt", "smtpReply", "firstClickAt",
    "redeemedAt", "redeemedIp", "redeemedUserAgent", "expired", "superseded", "feedbackAt", "feedback", "redeemedWith",
]
UNSUBSCRIBE_MAILTO = "unsubscribe@herald-demo.example"
UNSUBSCRIBE_URL = "https://app.example.com/unsubscribe"
CAMPAIGNS = {"unsubscribeMailto": UNSUBSCRIBE_MAILTO, "unsubscribeUrl": UNSUBSCRIBE_URL}
COMMAND_TIMEOUT = 60  # seconds, every herald command unless a test says otherwise
MAIL_TIMEOUT = 30  # seconds for queued mail to reach the capture server


# --------------------------------------------------------------------------- config
def campaign_config(tmp_path: Path, capture=None, **overrides) -> Path:
    """write_config() plus the `campaigns:` section and a 50 ms worker poll;
    `overrides` are deep-merged on top."""
    base = {"campaigns": CAMPAIGNS, "worker": {"pollInterval": "50ms"}}
    return write_config(tmp_path, capture, **deep_merge(base, overrides))


# --------------------------------------------------------------------------- running herald
_UNIMPLEMENTED = ("Error: Unexpected argument", "Error: Unknown option", "Error: Missing expected argument")


def unimplemented_hint(args: tuple, result: subprocess.CompletedProcess) -> str:
    if any(marker in result.stderr for marker in _UNIMPLEMENTED):
        return (f"\n=> this herald binary does not implement `herald {' '.join(map(str, args[:2]))}` "
                "(or one of the options above) from the campaign/audit contract yet.")
    return ""


def run(herald, *args, config: Path, check: bool = True, timeout: float = COMMAND_TIMEOUT,
        env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """herald(*args, config=...) that names a missing command plainly when it fails."""
    result = herald(*args, config=config, check=False, timeout=timeout, env=env)
    if check and result.returncode != 0:
        pytest.fail(f"{' '.join(result.args)} exited {result.returncode}{unimplemented_hint(args, result)}\n"
                    f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}", pytrace=False)
    return result


def assert_cli_error(args: tuple, result: subprocess.CompletedProcess, *needles: str, status: int = 1) -> str:
    """The contract for refused input: one `error: …` line on stderr and the exit status of its kind (1 a failure,
    3 not found, 64 bad input: docs/reference/cli.md)."""
    hint = unimplemented_hint(args, result)
    assert not hint, hint + f"\nstderr:\n{result.stderr}"
    assert result.returncode == status, (
        f"expected exit {status}, got {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return assert_one_error_line(result, *needles)


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stdout, got {len(lines)}:\n{result.stdout}"
    return lines[0]


def start_worker(herald, config: Path, *args: str):
    """`herald worker [args]` in the background (stop it with stop_worker)."""
    return herald.start("worker", *args, config=config, name="worker")


def stop_worker(worker, timeout: float = 20) -> None:
    if worker.proc.poll() is None:
        worker.signal(signal.SIGTERM)
    code = worker.wait(timeout)
    assert code == 0, f"herald worker exited {code}\nstdout:\n{worker.stdout()}\nstderr:\n{worker.stderr()}"


# --------------------------------------------------------------------------- campaigns
def write_recipients(path: Path, header: str, rows: Iterable[Union[str, bytes]]) -> Path:
    """A recipients CSV: header and rows joined with LF, ending with LF; bytes rows are written as they are."""
    lines = [header.encode("utf-8")] + [r if isinstance(r, bytes) else r.encode("utf-8") for r in rows]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def addresses(prefix: str, n: int, domain: str = "x.test") -> list:
    return [f"{prefix}{i:03d}@{domain}" for i in range(1, n + 1)]


def parse_summary(stdout: str) -> dict:
    """{'id', 'imported', 'rejected', 'already'} from `campaign create`'s summary (None where absent)."""
    def number(pattern: str) -> Optional[int]:
        match = re.search(pattern, stdout)
        return int(match.group(1)) if match else None
    return {
        "id": number(r"\bcampaign (\d+)"),
        "imported": number(r"(?<!already )\bimported (\d+)"),
        "rejected": number(r"\brejected (\d+)"),
        "already": number(r"\balready imported (\d+)"),
    }


def create_campaign(herald, config: Path, name: str, *options, timeout: float = 120) -> dict:
    """`herald campaign create NAME OPTIONS` (must exit 0); returns the parsed summary plus 'stdout'."""
    result = run(herald, "campaign", "create", name, *options, config=config, timeout=timeout)
    summary = parse_summary(result.stdout)
    for key in ("id", "imported", "rejected"):
        assert summary[key] is not None, f"no `{'campaign <id>' if key == 'id' else key + ' <n>'}` in the summary:\n{result.stdout}"
    summary["stdout"] = result.stdout
    return summary


def campaign_from_csv(herald, config: Path, tmp_path: Path, name: str, emails: list, *options,
                      action: str = "verify-email") -> int:
    """A campaign of these good addresses (all must be imported); returns its id."""
    csv_path = write_recipients(tmp_path / f"{name}.csv", "email", emails)
    summary = create_campaign(herald, config, name, "--action", action, "--recipients", str(csv_path), *options)
    assert (summary["imported"], summary["rejected"]) == (len(emails), 0), summary["stdout"]
    return summary["id"]


def campaign_list(herald, config: Path) -> list:
    data = json.loads(run(herald, "campaign", "list", "--json", config=config).stdout)
    assert isinstance(data, list), f"campaign list --json must print an array, got {data!r}"
    return data


def campaign_entry(herald, config: Path, campaign_id: int) -> dict:
    entries = [c for c in campaign_list(herald, config) if c.get("id") == campaign_id]
    assert len(entries) == 1, f"campaign {campaign_id} not listed exactly once by campaign list --json"
    return entries[0]


def report_json(herald, config: Path, campaign_id: int) -> dict:
    result = run(herald, "campaign", "report", str(campaign_id), "--format", "json", config=config)
    return json.loads(result.stdout)


def nonzero(counts: dict) -> dict:
    return {state: n for state, n in counts.items() if n}


# --------------------------------------------------------------------------- the ledger
def require_campaign_columns(db: Path) -> None:
    columns = {row["name"] for row in query(db, "PRAGMA table_info(outbox)")}
    assert {"campaign_id", "variables"} <= columns, \
        f"outbox has no campaign_id/variables columns (has {sorted(columns)}): the campaign migration is missing"


def campaign_rows(db: Path, campaign_id: int) -> list:
    require_campaign_columns(db)
    return query(db, "SELECT * FROM outbox WHERE campaign_id = ? ORDER BY id", (campaign_id,))


def state_counts(db: Path, campaign_id: int) -> dict:
    require_campaign_columns(db)
    rows = query(db, "SELECT state, count(*) AS n FROM outbox WHERE campaign_id = ? GROUP BY state", (campaign_id,))
    return {row["state"]: row["n"] for row in rows}


def wait_for_states(db: Path, campaign_id: int, expected: dict, timeout: float = MAIL_TIMEOUT) -> dict:
    """Poll the ledger until the campaign's non-zero state counts are `expected`."""
    try:
        return wait_until(lambda: state_counts(db, campaign_id) == expected and expected, timeout,
                          f"campaign {campaign_id} to reach {expected}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; ledger has {state_counts(db, campaign_id)}") from None


def nothing_written(db: Path) -> None:
    """No outbox row and no campaign exist (the database may not even exist)."""
    assert row_count(db, "outbox") == 0, "outbox rows were written"
    assert row_count(db, "campaigns") == 0, "a campaign row was written"


def ms_to_datetime(ms: Optional[int]) -> Optional[datetime]:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def parse_iso(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert value.tzinfo is not None, f"{text!r} has no time zone"
    return value


def iso_seconds(moment: float) -> str:
    """A Unix time as ISO 8601 (whole seconds, UTC, `Z`)."""
    return datetime.fromtimestamp(moment, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_whole_second() -> float:
    """Sleep past the next whole second plus 0.3 s and return that whole second: rows queued
    before the call are earlier than it, rows queued after it later, at any resolution."""
    boundary = float(int(time.time()) + 1)
    time.sleep(max(0.0, boundary + 0.3 - time.time()))
    return boundary


# --------------------------------------------------------------------------- mail
def recipients_in_order(capture) -> list:
    return [m["rcpt_tos"][0].lower() for m in capture.messages()]


def max_in_window(times: list, window: float) -> int:
    """The most arrivals within any half-open window of `window` seconds."""
    times = sorted(times)
    best = 0
    for i, start in enumerate(times):
        best = max(best, sum(1 for t in times[i:] if t - start < window))
    return best


def message_id(message) -> str:
    return str(message["Message-ID"]).strip().strip("<>")


def outbox_by_message_id(db: Path) -> dict:
    return {row["message_id"].strip("<>"): row for row in query(db, "SELECT * FROM outbox")}


# --------------------------------------------------------------------------- a campaign with redemptions
ACCOUNTS_HEADER = "email,displayName,emailVerified,disabled"


def redeemed_campaign(server, herald) -> SimpleNamespace:
    """`herald serve` (embedded worker) and a verify-email campaign over the unverified,
    enabled accounts: five mails sent, three links opened (clicks), two of those redeemed
    over the API. Returns srv, config, db, id, unverified, clicked, redeemed, links."""
    srv = server(campaigns=CAMPAIGNS)
    config, db = srv.config, srv.db_path
    unverified = addresses("member", 5, "report.test")
    accounts = write_recipients(srv.cwd / "accounts.csv", ACCOUNTS_HEADER,
                                [f"{e},Member {i},false,false" for i, e in enumerate(unverified, 1)]
                                + ["verified@report.test,Verified,true,false", "disabled@report.test,Disabled,false,true"])
    run(herald, "accounts", "import", str(accounts), config=config)
    summary = create_campaign(herald, config, "verify-all", "--action", "verify-email", "--from-accounts",
                              "--unverified", "--continue-url", CONTINUE)
    assert (summary["imported"], summary["rejected"]) == (5, 0), \
        f"--from-accounts --unverified must take the 5 unverified, enabled accounts\n{summary['stdout']}"
    links = {email: action_link(srv.mail_to(email, timeout=MAIL_TIMEOUT)[0]["message"]) for email in unverified}
    wait_for_states(db, summary["id"], {"sent": 5})
    clicked, redeemed = unverified[:3], unverified[:2]
    for email in clicked:
        page = requests.get(srv.local(links[email]), headers={"User-Agent": "ReportBrowser/1.0"},
                            timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert page.status_code == 200, f"GET {page.url} -> {page.status_code}"
    for email in redeemed:
        ok(srv.post("accounts:update", {"oobCode": code_of(links[email])}, headers={"User-Agent": "ReportBrowser/1.0"}))
    return SimpleNamespace(srv=srv, config=config, db=db, id=summary["id"], unverified=unverified,
                           clicked=clicked, redeemed=redeemed, links=links)


def admin_get(srv, path: str, token: Optional[str] = ADMIN_TOKEN, **params) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return requests.get(srv.url + path, params=params, headers=headers, timeout=HTTP_TIMEOUT, allow_redirects=False)


# --------------------------------------------------------------------------- HTML reports
_EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|object|embed)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def assert_standalone_report(page: str) -> None:
    """A whole HTML document with an inline <svg>, no JavaScript and nothing fetched from elsewhere."""
    assert re.match(r"\s*<!doctype html", page, re.I), f"not an HTML document:\n{page[:500]}"
    assert re.search(r"<svg\b", page, re.I), "no inline <svg> chart"
    assert not re.search(r"<script\b", page, re.I), "the report must need no JavaScript"
    assert not re.search(r"""\son[a-z]+\s*=\s*["']""", page, re.I), "inline event handlers are JavaScript too"
    assert not _EXTERNAL.search(page), "the report must be standalone (no external resources)"


def render_in_chromium(page: Path, out_dir: Path) -> SimpleNamespace:
    """Load `page` in headless Chromium: screenshot (1200x900) and serialized DOM in one run.
    `console` holds the page's console lines (errors, uncaught exceptions) from Chromium's log."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{page.stem}.png"
    argv = [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--hide-scrollbars", f"--user-data-dir={out_dir / 'profile'}",
            "--enable-logging=stderr", "--v=0", f"--screenshot={png}", "--window-size=1200,900", "--dump-dom",
            page.resolve().as_uri()]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within 120 s: {' '.join(argv)}", pytrace=False)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"chromium exited {proc.returncode}\n{stderr[-3000:]}"
    console = [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return SimpleNamespace(png=png, dom=proc.stdout.decode("utf-8", "replace"), stderr=stderr, console=console)


def png_colours(path: Path) -> tuple:
    """(width, height, distinct pixel values) of an 8-bit RGB/RGBA, non-interlaced PNG, decoded with zlib."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    assert header is not None, "PNG without IHDR"
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    previous = bytearray(stride)
    colours: set = set()
    offset = 0
    for _ in range(height):
        kind, line = raw[offset], bytearray(raw[offset + 1:offset + 1 + stride])
        offset += 1 + stride
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + predictor) & 0xFF
        else:
            assert kind == 0, f"bad PNG filter type {kind}"
        colours.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp))
        previous = line
    return width, height, colours
