"""Editing templates in the console: Preview renders unsaved text, Save keeps a revision in the ledger once it renders
(refused with the renderer's error otherwise, nothing saved), the worker sends the saved text within a minute (read
from the captured mail), the history lists who saved what, and Revert brings back a revision or the file."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from helpers import query
from http_support import unique_email
from console_support import hidden_value, parse_html, post_forms, serve_console, show
from test_console_http import assert_error_page

READ_TOKEN = "read-" + "0a1b2c3d4e5f6789" * 3
PAGE = "/admin/templates/reset-password/en"
FILE_SUBJECT = "Reset your password for Herald Demo"


@pytest.fixture(scope="module")
def console_server(herald_bin, tmp_path_factory):
    yield from serve_console(herald_bin, tmp_path_factory, {"server": {"consoleReadToken": READ_TOKEN}})


def revisions(srv) -> list:
    return query(srv.db_path, "SELECT * FROM template_revisions ORDER BY id")


def actor(session) -> str:
    return f"admin:{session.cookie.split('.')[1][:8]}"


def editor(client, session) -> dict:
    form = client.page(PAGE, session).one("form#template-edit")
    assert form.get("action") == f"{PAGE}/save" and hidden_value(form, "csrf") == session.csrf
    assert form.one("button#template-preview-button").get("formaction") == f"{PAGE}/preview"
    return {name: form.one(f"textarea[name={name}]").text for name in ("subject", "html", "text")}


def reset_subject(ledger, srv, tag: str) -> str:
    email = unique_email(tag)
    ledger.send_resets(email)
    return str(srv.mail_to(email)[0]["message"]["Subject"])


def test_preview_renders_unsaved_text_and_a_broken_template_is_refused(client, session, console_server):
    srv = console_server
    source = editor(client, session)
    assert "Reset your password for {{appName}}" in source["subject"] and "{{link}}" in source["text"]
    draft = {**source, "subject": source["subject"].replace("Reset your", "Preview of"), "csrf": session.csrf}
    resp = client.post(f"{PAGE}/preview", draft, session)
    assert resp.status_code == 200, show(resp)
    doc = parse_html(resp.text)
    assert doc.one("#subject").text == "Preview of password for Herald Demo"
    assert doc.one("p#draft-notice") is not None and "Preview of" in doc.one("textarea[name=subject]").text
    assert "oobCode=PREVIEW-ONLY" in doc.one("iframe#preview").get("srcdoc")
    assert revisions(srv) == [], "a preview saved something"

    broken = {**source, "html": "<p>{{#unclosed}}</p>", "csrf": session.csrf}
    for action in ("preview", "save"):
        resp = client.post(f"{PAGE}/{action}", broken, session)
        assert_error_page(resp, 400)
        error = parse_html(resp.text).one("p#error").text
        assert "body.html.mustache" in error and "TEMPLATE_ERROR" in error, error
        assert "{{#unclosed}}" in parse_html(resp.text).one("textarea[name=html]").text, "the draft is kept in the editor"
    empty = {**source, "subject": "{{% CONTENT_TYPE: TEXT}}\n", "csrf": session.csrf}
    assert_error_page(client.post(f"{PAGE}/save", empty, session), 400)
    assert revisions(srv) == [], "a template that does not render was saved"
    assert client.page(PAGE, session).one("#subject").text == FILE_SUBJECT


def test_a_saved_template_reaches_the_workers_mail_and_can_be_reverted(client, session, ledger, console_server):
    srv = console_server
    assert reset_subject(ledger, srv, "tmplbefore") == FILE_SUBJECT
    source = editor(client, session)
    edited = {**source, "subject": source["subject"].replace("Reset your password", "Edited: reset"), "csrf": session.csrf}
    resp = client.post(f"{PAGE}/save", edited, session)
    assert urlsplit(client.location(resp)).path == PAGE, show(resp)
    saved_at = time.monotonic()
    rows = revisions(srv)
    assert len(rows) == 1 and rows[0]["author"] == actor(session) and rows[0]["action"] == "reset-password"
    assert rows[0]["locale"] == "en" and "\r" not in rows[0]["subject"] and rows[0]["html"] == source["html"].replace("\r\n", "\n")
    page = parse_html(client.follow(resp, session).text)
    assert page.one("#subject").text == "Edited: reset for Herald Demo" and page.one("p#notice").text.startswith("Saved")
    assert page.one(f"table#template-history tr#revision-{rows[0]['id']}").one("td.author").text == actor(session)

    # The worker re-reads the ledger's revisions at most once a minute: the next mails carry the edit within it.
    subjects = []
    while time.monotonic() - saved_at < 75:
        subjects.append(reset_subject(ledger, srv, "tmplafter"))
        if subjects[-1] == "Edited: reset for Herald Demo":
            break
        time.sleep(3)
    assert subjects[-1] == "Edited: reset for Herald Demo", subjects
    assert time.monotonic() - saved_at < 70, "the edit took longer than a minute to reach the worker"

    second = {**edited, "subject": edited["subject"].replace("Edited", "Second")}
    assert client.post(f"{PAGE}/save", second, session).status_code == 303
    first_id = revisions(srv)[0]["id"]
    resp = client.post(f"{PAGE}/revert", {"revision": str(first_id), "csrf": session.csrf}, session)
    assert resp.status_code == 303, show(resp)
    rows = revisions(srv)
    assert len(rows) == 3 and rows[2]["subject"] == rows[0]["subject"] and rows[2]["author"] == actor(session)
    page = client.page(PAGE, session)
    assert page.one("#subject").text == "Edited: reset for Herald Demo"
    history = [tr for tr in page.select("table#template-history tr") if (tr.get("id") or "").startswith("revision-")]
    assert [tr.get("id") for tr in history] == [f"revision-{r['id']}" for r in reversed(rows)]
    assert {f.get("action") for f in post_forms(page)} >= {f"{PAGE}/revert", f"{PAGE}/save", f"{PAGE}/test"}

    resp = client.post(f"{PAGE}/revert", {"revision": "file", "csrf": session.csrf}, session)
    assert resp.status_code == 303, show(resp)
    assert revisions(srv)[-1]["subject"] is None
    page = client.page(PAGE, session)
    assert page.one("#subject").text == FILE_SUBJECT and page.select_one("form#revert-file") is None
    assert "files" in page.one("p#in-force").text

    actions = query(srv.db_path, "SELECT action, target, actor FROM console_actions WHERE target = 'reset-password/en'")
    assert [a["action"] for a in actions] == ["template saved", "template saved", "template reverted", "template reverted"]
    assert {a["actor"] for a in actions} == {actor(session)}


def test_editing_needs_the_csrf_and_the_admin_role(client, session, console_server):
    srv = console_server
    before = len(revisions(srv))
    source = editor(client, session)
    reader = client.sign_in(READ_TOKEN)
    assert parse_html(client.get(PAGE, reader).text).select_one("form#template-edit") is None
    for action, fields in {"preview": source, "save": source, "revert": {"revision": "file"}}.items():
        assert_error_page(client.post(f"{PAGE}/{action}", fields, session), 403)
        assert_error_page(client.post(f"{PAGE}/{action}", {**fields, "csrf": reader.csrf}, reader), 403)
    assert len(revisions(srv)) == before
    for bad in ({"revision": "x"}, {"revision": "999999"}, {}):
        resp = client.post(f"{PAGE}/revert", {**bad, "csrf": session.csrf}, session)
        assert resp.status_code in (400, 404), show(resp)
    assert_error_page(client.post("/admin/templates/reset-password/xx/save", {**source, "csrf": session.csrf}, session), 404)
    assert len(revisions(srv)) == before
