"""Creating a campaign from the console (`/admin/campaigns/new`): a multipart upload of a recipients CSV, streamed to
the upload directory beside the ledger, whose `csrf` field (the form's first part) is checked before anything is kept;
the campaign is created paused, its review shows the first queued rows and rejects (all of them as a CSV download),
Start sends it through the embedded worker, and bad, forged, read-only or oversized uploads create nothing.

One module server with a read-only token beside the admin's and `campaigns.maxUploadBytes` at 64 KiB."""

from __future__ import annotations

import csv
import io
import stat
import time
from pathlib import Path

import pytest
import requests

from helpers import query
from http_support import HTTP_TIMEOUT, unique_email
from campaign_support import CAMPAIGNS
from console_support import PASSWORD, SESSION_COOKIE, hidden_value, parse_html, post_forms, serve_console, show

READ_TOKEN = "read-" + "fedcba9876543210" * 3
MAX_UPLOAD = 64 * 1024
NEW = "/admin/campaigns/new"


@pytest.fixture(scope="module")
def console_server(herald_bin, tmp_path_factory):
    overrides = {"server": {"consoleReadToken": READ_TOKEN}, "campaigns": {**CAMPAIGNS, "maxUploadBytes": MAX_UPLOAD}}
    yield from serve_console(herald_bin, tmp_path_factory, overrides)


@pytest.fixture(scope="module")
def reader(client):
    return client.sign_in(READ_TOKEN)


# =========================================================================== helpers
def uploads(srv) -> Path:
    """The default upload directory: `uploads` beside the SQLite ledger."""
    return Path(srv.db_path).parent / "uploads"


def kept_files(srv) -> set:
    directory = uploads(srv)
    return {p.name for p in directory.iterdir()} if directory.exists() else set()


def campaign_rows(srv) -> list:
    return query(srv.db_path, "SELECT * FROM campaigns ORDER BY id")


def actions_after(srv, after: int) -> list:
    return query(srv.db_path, "SELECT * FROM console_actions WHERE id > ? ORDER BY id", (after,))


def last_action(srv) -> int:
    return query(srv.db_path, "SELECT COALESCE(MAX(id), 0) AS id FROM console_actions")[0]["id"]


def post_multipart(srv, session, parts: list, path: str = NEW) -> requests.Response:
    """POST `parts` as multipart/form-data, in this order: (name, value) for a text field, (name, (filename, bytes))
    for a file."""
    files = [(name, (value[0], value[1], "text/csv") if isinstance(value, tuple) else (None, value))
             for name, value in parts]
    return requests.post(srv.url + path, files=files, headers={"Cookie": f"{SESSION_COOKIE}={session.cookie}"},
                         timeout=HTTP_TIMEOUT, allow_redirects=False)


def form_parts(session, name: str, content: bytes, **fields) -> list:
    """The form as the page posts it: csrf first, then the fields, then the file."""
    values = {"name": name, "action": "verify-email", "continue_url": "", "rate": "", "start_at": "", "link_lifetime": ""}
    values.update(fields)
    return [("csrf", session.csrf)] + list(values.items()) + [("recipients", ("recipients.csv", content))]


def signed_up(srv, tag: str, count: int) -> list:
    emails = [unique_email(f"{tag}{i}") for i in range(1, count + 1)]
    for email in emails:
        srv.sign_up(email, PASSWORD)
    return emails


def created_id(client, resp) -> int:
    path = client.location(resp)
    parts = path.split("/")
    assert path.startswith("/admin/campaigns/") and path.endswith("/review") and len(parts) == 5, path
    return int(parts[3])


def assert_form_error(resp, status: int, fragment: str) -> None:
    assert resp.status_code == status, f"expected {status}\n{show(resp)}"
    doc = parse_html(resp.text)
    errors = doc.select("p#error")
    assert len(errors) == 1, f"expected one error line\n{show(resp)}"
    assert fragment in errors[0].text, f"{fragment!r} not in {errors[0].text!r}"


def rejects_csv(client, session, cid: int) -> list:
    resp = client.get(f"/admin/campaigns/{cid}/rejects.csv", session)
    assert resp.status_code == 200, show(resp)
    assert resp.headers["Content-Type"].startswith("text/csv")
    assert resp.headers["Content-Disposition"] == f'attachment; filename="campaign-{cid}.rejects.csv"'
    return list(csv.reader(io.StringIO(resp.content.decode("utf-8"))))


# =========================================================================== the form
def test_the_campaigns_page_links_the_form_which_posts_multipart_with_the_csrf_first(client, session, reader):
    doc = client.page("/admin/campaigns", session)
    assert doc.one("a#new-campaign").get("href") == NEW
    form = client.page(NEW, session).one("form#new-campaign")
    assert (form.get("method"), form.get("action"), form.get("enctype")) == ("post", NEW, "multipart/form-data")
    first = form.select("input")[0]
    assert (first.get("type"), first.get("name"), first.get("value")) == ("hidden", "csrf", session.csrf)
    assert [o.get("value") for o in form.one("select#action").select("option")] == \
        ["verify-email", "reset-password", "sign-in"]
    assert form.one("input#recipients").get("type") == "file" and form.one("input#recipients").get("name") == "recipients"
    names = {i.get("name") for i in form.select("input")}
    assert {"name", "continue_url", "rate", "start_at", "link_lifetime"} <= names, names

    # A read-only session sees neither the link nor the form.
    assert client.page("/admin/campaigns", reader).select_one("a#new-campaign") is None
    page = client.page(NEW, reader)
    assert [f.get("action") for f in post_forms(page)] == ["/admin/sign-out"]
    assert page.select_one("p#read-only-note") is not None


# =========================================================================== creating, reviewing, starting
def test_an_upload_creates_a_paused_campaign_that_sends_nothing_and_is_logged(client, session, console_server):
    srv = console_server
    good = signed_up(srv, "upgood", 3)
    stranger = unique_email("upstranger")  # no account: verify-email refuses it
    content = (f"email,display_name,locale\n{good[0]},Ada Lovelace,de\n{good[1]},,\nnot-an-address,X,en\n"
               f"{good[2]},\"Grace, H\",fa\n{stranger},Nobody,en\n").encode()
    before, start = kept_files(srv), last_action(srv)
    resp = post_multipart(srv, session, form_parts(session, f"upload-{time.monotonic_ns()}", content))
    cid = created_id(client, resp)

    campaign = query(srv.db_path, "SELECT * FROM campaigns WHERE id = ?", (cid,))[0]
    assert (campaign["state"], campaign["action"], campaign["rejected"]) == ("paused", "verify-email", 2)
    rows = query(srv.db_path, "SELECT recipient, state, attempts FROM outbox WHERE campaign_id = ? ORDER BY id", (cid,))
    assert [(r["recipient"], r["state"], r["attempts"]) for r in rows] == [(e, "queued", 0) for e in good]
    # The embedded worker polls every 100 ms: a paused campaign's rows stay queued and nothing is mailed.
    time.sleep(2)
    rows = query(srv.db_path, "SELECT state, attempts FROM outbox WHERE campaign_id = ?", (cid,))
    assert [(r["state"], r["attempts"]) for r in rows] == [("queued", 0)] * 3
    assert all(srv.mail_count(e) == 0 for e in good)

    # The upload is kept as sent, 0600 under a random name, its rejects beside it named for the campaign.
    added = kept_files(srv) - before
    upload = [n for n in added if n.startswith("upload-") and n.endswith(".csv")]
    assert len(upload) == 1 and added == {upload[0], f"campaign-{cid}.rejects.csv"}, added
    for name in added:
        assert stat.S_IMODE((uploads(srv) / name).stat().st_mode) == 0o600, name
    assert (uploads(srv) / upload[0]).read_bytes() == content

    logged = actions_after(srv, start)
    assert [(r["action"], r["target"], r["result"], r["detail"]) for r in logged] == \
        [("campaign created", f"campaign {cid}", "ok", "accepted=3 rejected=2")], logged
    assert logged[0]["actor"].startswith("admin:")


def test_the_review_shows_the_first_rows_and_rejects_and_the_csv_has_them_all(client, session, console_server):
    srv = console_server
    good = signed_up(srv, "review", 12)
    bad = [f"bad{i}-at-example.test" for i in range(12)]
    lines = ["email,display_name,locale"] + [f"{e},Person {i},en" for i, e in enumerate(good)] + [f"{b},B,en" for b in bad]
    resp = post_multipart(srv, session, form_parts(session, f"review-{time.monotonic_ns()}", ("\n".join(lines) + "\n").encode()))
    cid = created_id(client, resp)
    page = client.follow(resp, session)
    assert page.status_code == 200, show(page)
    doc = parse_html(page.text)
    assert (doc.one("span#accepted").text, doc.one("span#rejected").text) == ("12", "12")
    assert doc.one("span#state").get("data-state") == "paused"
    queued = [(tr.one("td.email").text, tr.one("td.display-name").text, tr.one("td.locale").text)
              for tr in doc.select("table#queued tr") if tr.select("td")]
    assert queued == [(e, f"Person {i}", "en") for i, e in enumerate(good[:10])]
    shown = [(int(tr.one("td.line").text), tr.one("td.reason").text) for tr in doc.select("table#rejects tr") if tr.select("td")]
    assert [line for line, _ in shown] == list(range(14, 24)), shown  # header line 1, good rows 2-13
    assert all(reason for _, reason in shown)

    # The download holds every reject: line, reason and the row as it was in the file.
    assert doc.one("a#rejects-csv").get("href") == f"/admin/campaigns/{cid}/rejects.csv"
    table = rejects_csv(client, session, cid)
    assert table[0] == ["line", "reason", "content"]
    assert [(int(r[0]), r[2]) for r in table[1:]] == [(14 + i, f"{b},B,en") for i, b in enumerate(bad)]
    assert [(int(r[0]), r[1]) for r in table[1:11]] == shown

    # Start (resume) and Discard (cancel, which asks first) post to the campaign's existing routes.
    start, discard = doc.one("form#start"), doc.one("form#discard")
    assert start.get("action") == f"/admin/campaigns/{cid}/resume" and hidden_value(start, "csrf") == session.csrf
    assert discard.get("action") == f"/admin/campaigns/{cid}/cancel" and hidden_value(discard, "confirm") is None
    ask = client.post(discard.get("action"), {"csrf": session.csrf}, session)
    assert ask.status_code == 200 and parse_html(ask.text).select_one("form#confirm-cancel") is not None, show(ask)
    assert query(srv.db_path, "SELECT state FROM campaigns WHERE id = ?", (cid,))[0]["state"] == "paused"
    resp = client.post(discard.get("action"), {"csrf": session.csrf, "confirm": "yes"}, session)
    assert client.location(resp).startswith("/admin/campaigns?done=cancelled"), show(resp)
    states = query(srv.db_path, "SELECT DISTINCT state FROM outbox WHERE campaign_id = ?", (cid,))
    assert [r["state"] for r in states] == ["cancelled"]


def test_start_sends_the_reviewed_campaign_through_the_worker(client, session, console_server):
    srv = console_server
    emails = signed_up(srv, "started", 2)
    content = ("email\n" + "\n".join(emails) + "\n").encode()
    resp = post_multipart(srv, session, form_parts(session, f"start-{time.monotonic_ns()}", content, rate="20/s"))
    cid = created_id(client, resp)
    doc = parse_html(client.follow(resp, session).text)
    assert doc.select_one("a#rejects-csv") is None and doc.one("span#rejected").text == "0"
    assert doc.select_one("p#rejects-empty") is not None
    start = doc.one("form#start")
    resp = client.post(start.get("action"), {"csrf": hidden_value(start, "csrf")}, session)
    assert client.location(resp) == f"/admin/campaigns?done=resumed&id={cid}", show(resp)
    for email in emails:
        srv.mail_to(email)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = [r["state"] for r in query(srv.db_path, "SELECT state FROM outbox WHERE campaign_id = ?", (cid,))]
        if states == ["sent", "sent"]:
            break
        time.sleep(0.1)
    assert states == ["sent", "sent"], states
    after = parse_html(client.get(f"/admin/campaigns/{cid}/review", session).text)
    assert after.select_one("form#start") is None and after.one("span#state").get("data-state") == "done"


# =========================================================================== refusals
def test_bad_uploads_answer_the_form_with_one_line_and_400_and_keep_nothing(client, session, console_server):
    srv = console_server
    email = signed_up(srv, "badup", 1)[0]
    good = f"email\n{email}\n".encode()
    taken = f"taken-{time.monotonic_ns()}"
    assert created_id(client, post_multipart(srv, session, form_parts(session, taken, good))) > 0
    name = f"bad-{time.monotonic_ns()}"
    cases = {
        "no name": (form_parts(session, "  ", good), "Give the campaign a name."),
        "unknown action": (form_parts(session, name, good, action="recover-email"), "Choose the action"),
        "no file part": (form_parts(session, name, good)[:-1], "Choose a CSV file of recipients."),
        "no file chosen": (form_parts(session, name, good)[:-1] + [("recipients", ("", b""))], "Choose a CSV file"),
        "empty file": (form_parts(session, name, b""), "The recipients file is empty."),
        "bad header": (form_parts(session, name, b"name,locale\nx,en\n"),
                       "the uploaded file: the first line must be a CSV header with an 'email' column"),
        "bad continue url": (form_parts(session, name, good, continue_url="https://evil.example/next"), "evil.example"),
        "duplicate name": (form_parts(session, taken, good), f"a campaign named '{taken}' exists already"),
        "bad rate": (form_parts(session, name, good, rate="fast"), "Rate: expected N/s, N/m or N/h"),
        "bad start": (form_parts(session, name, good, start_at="tomorrow"), "Start: expected an ISO 8601 time"),
        "bad link lifetime": (form_parts(session, name, good, link_lifetime="forever"), "Link lifetime: expected a duration"),
    }
    campaigns, files = campaign_rows(srv), kept_files(srv)
    for case, (parts, fragment) in cases.items():
        resp = post_multipart(srv, session, parts)
        assert_form_error(resp, 400, fragment)
        doc = parse_html(resp.text)
        assert doc.select_one("form#new-campaign") is not None, case
        if case != "no name":
            assert doc.one("input#name").get("value") == dict(parts)["name"], case
        assert campaign_rows(srv) == campaigns, f"{case}: a campaign was written"
        assert kept_files(srv) == files, f"{case}: the upload was kept"
    # The path of the upload on the server is never shown.
    resp = post_multipart(srv, session, cases["bad header"][0])
    assert str(uploads(srv)) not in resp.text


def test_an_upload_without_the_sessions_csrf_first_is_403_and_keeps_nothing(client, session, console_server):
    srv = console_server
    email = signed_up(srv, "csrfup", 1)[0]
    good = f"email\n{email}\n".encode()
    other = client.sign_in()
    name = f"forged-{time.monotonic_ns()}"
    parts = form_parts(session, name, good)
    cases = {
        "no csrf": parts[1:],
        "wrong csrf": [("csrf", "0" * len(session.csrf))] + parts[1:],
        "another session's csrf": [("csrf", other.csrf)] + parts[1:],
        "csrf after the fields": parts[1:] + [parts[0]],
        "csrf after the file": parts[1:-1] + [parts[-1], parts[0]],
        "empty body": [],
    }
    campaigns, files, start = campaign_rows(srv), kept_files(srv), last_action(srv)
    for case, body in cases.items():
        resp = post_multipart(srv, session, body)
        assert resp.status_code == 403, f"{case}\n{show(resp)}"
        assert "did not come from the console" in parse_html(resp.text).one("p#error").text, case
        assert campaign_rows(srv) == campaigns and kept_files(srv) == files, case
    # A URL-encoded post without the token is refused as before.
    assert client.post(NEW, {"name": name}, session).status_code == 403
    # Only this path reads the token from a multipart body: elsewhere it is refused.
    campaign = query(srv.db_path, "SELECT id FROM campaigns ORDER BY id DESC LIMIT 1")
    target = f"/admin/campaigns/{campaign[0]['id'] if campaign else 1}/pause"
    assert post_multipart(srv, session, [("csrf", session.csrf)], path=target).status_code == 403
    assert post_multipart(srv, session, [("csrf", session.csrf)], path="/admin/console/suppressions/add").status_code == 403
    assert campaign_rows(srv) == campaigns and kept_files(srv) == files
    assert actions_after(srv, start) == [], "a forged form is not an action of the session"
    # With the token, a URL-encoded post is the session's, and no upload: a 400 logged as failed.
    resp = client.post(NEW, {"csrf": session.csrf, "name": name}, session)
    assert_form_error(resp, 400, "multipart/form-data")
    logged = actions_after(srv, start)
    assert [(r["action"], r["detail"], r["result"]) for r in logged] == [("campaigns/new", "answered 400", "failed")]
    assert campaign_rows(srv) == campaigns and kept_files(srv) == files


def test_a_read_only_session_is_refused_with_403_logged_and_keeps_nothing(client, reader, console_server):
    srv = console_server
    email = signed_up(srv, "readup", 1)[0]
    campaigns, files, start = campaign_rows(srv), kept_files(srv), last_action(srv)
    resp = post_multipart(srv, reader, form_parts(reader, f"reader-{time.monotonic_ns()}", f"email\n{email}\n".encode()))
    assert resp.status_code == 403, show(resp)
    assert "read-only token" in parse_html(resp.text).one("p#error").text
    assert campaign_rows(srv) == campaigns and kept_files(srv) == files
    logged = actions_after(srv, start)
    assert [(r["action"], r["detail"], r["result"]) for r in logged] == [("campaigns/new", "read-only session", "refused")]
    assert logged[0]["actor"].startswith("read-only:")


def test_an_oversized_upload_or_field_is_413_and_keeps_nothing(client, session, console_server):
    srv = console_server
    email = signed_up(srv, "bigup", 1)[0]
    big = (f"email,note\n{email},x\n" + "".join(f"row{i}@example.test,{'y' * 60}\n" for i in range(1200))).encode()
    assert len(big) > MAX_UPLOAD
    campaigns, files = campaign_rows(srv), kept_files(srv)
    resp = post_multipart(srv, session, form_parts(session, f"big-{time.monotonic_ns()}", big))
    assert_form_error(resp, 413, "The recipients file is larger than 64 KiB")
    resp = post_multipart(srv, session, form_parts(session, "n" * 3000, f"email\n{email}\n".encode()))
    assert_form_error(resp, 413, "The field 'name' is longer than 2048 bytes.")
    assert campaign_rows(srv) == campaigns and kept_files(srv) == files
