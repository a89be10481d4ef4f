"""`herald campaign report` (text, json, html) and `/admin/campaigns/{id}`: every number
equals what the ledger holds; the HTML report renders in headless Chromium."""

from __future__ import annotations

import re

import pytest

from helpers import query
from http_support import CONTINUE
from campaign_support import (
    admin_get, assert_standalone_report, campaign_entry, campaign_from_csv, campaign_config, create_campaign,
    nonzero, parse_iso, png_colours, redeemed_campaign, render_in_chromium, report_json, run, state_counts,
)


def ledger_figures(db, campaign_id: int) -> dict:
    """The report's numbers computed straight from outbox, action_codes and link_events."""
    counts = state_counts(db, campaign_id)
    per_row = query(db, """
        SELECT o.id, o.sent_at,
               max(c.redeemed_at) AS redeemed_at,
               (SELECT count(*) FROM action_codes c2 JOIN link_events e ON e.code_id = c2.id
                 WHERE c2.outbox_id = o.id AND e.kind = 'click') AS clicks
          FROM outbox o LEFT JOIN action_codes c ON c.outbox_id = o.id
         WHERE o.campaign_id = ?
         GROUP BY o.id""", (campaign_id,))
    replies = query(db, """SELECT last_reply_code AS code, count(*) AS n FROM outbox
                            WHERE campaign_id = ? AND last_reply_code IS NOT NULL GROUP BY last_reply_code""",
                    (campaign_id,))
    redeemed = [r for r in per_row if r["redeemed_at"] is not None]
    return {
        "counts": counts,
        "sent": counts.get("sent", 0),
        "clicked": sum(1 for r in per_row if r["clicks"]),
        "redeemed": len(redeemed),
        "replyCodes": {str(r["code"]): r["n"] for r in replies},
        "secondsToRedeem": sorted((r["redeemed_at"] - r["sent_at"]) / 1000 for r in redeemed),
    }


def assert_report_matches_ledger(report: dict, ledger: dict) -> None:
    assert nonzero(report["counts"]) == ledger["counts"], f"counts {report['counts']} vs ledger {ledger['counts']}"
    for key in ("sent", "clicked", "redeemed"):
        assert report[key] == ledger[key], f"{key}: report {report[key]}, ledger {ledger[key]}"
    assert nonzero(report["replyCodes"]) == ledger["replyCodes"], f"{report['replyCodes']} vs {ledger['replyCodes']}"
    expected_rate = ledger["redeemed"] / ledger["sent"] if ledger["sent"] else 0
    assert report["redemptionRate"] == pytest.approx(expected_rate), report["redemptionRate"]

    ttr, seconds = report["timeToRedeem"], ledger["secondsToRedeem"]
    if not seconds:
        assert ttr is None or all(ttr.get(p) is None for p in ("p50", "p90", "p99")), ttr
    else:
        p50, p90, p99 = ttr["p50"], ttr["p90"], ttr["p99"]
        assert p50 <= p90 <= p99, ttr
        assert seconds[0] - 1 <= p50 and p99 <= seconds[-1] + 1, f"{ttr} outside the ledger's {seconds}"

    funnel = report["funnel"]
    assert isinstance(funnel, list)
    assert sum(b["sent"] for b in funnel) == ledger["sent"], funnel
    assert sum(b["redeemed"] for b in funnel) == ledger["redeemed"], funnel
    starts = [parse_iso(b["start"]) for b in funnel]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), f"funnel buckets out of order: {funnel}"


def test_report_numbers_equal_what_the_ledger_holds(server, herald):
    world = redeemed_campaign(server, herald)
    report = report_json(herald, world.config, world.id)

    assert {k: report["campaign"][k] for k in ("id", "name", "action", "state")} == \
        {"id": world.id, "name": "verify-all", "action": "verify-email", "state": "done"}
    ledger = ledger_figures(world.db, world.id)
    assert (ledger["sent"], ledger["clicked"], ledger["redeemed"]) == (5, 3, 2), ledger
    assert_report_matches_ledger(report, ledger)
    assert report["redemptionRate"] == pytest.approx(0.4)

    entry = campaign_entry(herald, world.config, world.id)
    assert (entry["imported"], entry["rejected"], entry["state"]) == (5, 0, "done")
    assert nonzero(entry["counts"]) == {"sent": 5}

    # The two redeemed accounts are verified now: a second run targets the other three.
    again = create_campaign(herald, world.config, "verify-rest", "--action", "verify-email", "--from-accounts",
                            "--unverified", "--continue-url", CONTINUE)
    assert again["imported"] == 3 and again["id"] != world.id, again["stdout"]
    rest = query(world.db, "SELECT recipient FROM outbox WHERE campaign_id = ? ORDER BY recipient", (again["id"],))
    assert [r["recipient"] for r in rest] == world.unverified[2:]


def test_report_counts_failures_and_reply_codes(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["rcpt=bounce:550:5.1.1 No such user"])
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "bouncy",
                            ["ok1@x.test", "bounce1@x.test", "ok2@x.test", "bounce2@x.test", "ok3@x.test", "ok4@x.test"])
    herald.worker_until_empty(config)

    report = report_json(herald, config, cid)
    ledger = ledger_figures(db, cid)
    assert ledger["counts"] == {"sent": 4, "failed": 2} and ledger["replyCodes"] == {"250": 4, "550": 2}, ledger
    assert_report_matches_ledger(report, ledger)
    assert report["redemptionRate"] == 0 and report["redeemed"] == 0


def test_text_and_html_reports(server, herald):
    world = redeemed_campaign(server, herald)
    text = run(herald, "campaign", "report", str(world.id), "--format", "text", config=world.config).stdout
    assert "verify-all" in text
    lines = text.lower().splitlines()
    assert any(re.search(r"\bsent\b", l) and re.search(r"\b5\b", l) for l in lines), f"no `sent … 5` line:\n{text}"
    assert any(re.search(r"\bredeemed\b", l) and re.search(r"\b2\b", l) for l in lines), f"no `redeemed … 2` line:\n{text}"
    default = run(herald, "campaign", "report", str(world.id), config=world.config).stdout
    assert "verify-all" in default and not default.lstrip().startswith(("{", "<")), "text is the default format"

    page = run(herald, "campaign", "report", str(world.id), "--format", "html", config=world.config).stdout
    assert_standalone_report(page)
    assert "verify-all" in page


def test_admin_campaign_page_needs_the_admin_token(server, herald):
    world = redeemed_campaign(server, herald)
    path = f"/admin/campaigns/{world.id}"
    assert admin_get(world.srv, path, token=None).status_code == 401
    assert admin_get(world.srv, path, token="not-the-token").status_code == 401
    resp = admin_get(world.srv, path)
    assert resp.status_code == 200, resp.text[:500]
    assert resp.headers.get("Content-Type", "").startswith("text/html"), resp.headers
    assert_standalone_report(resp.text)
    assert "verify-all" in resp.text
    assert admin_get(world.srv, "/admin/campaigns/9999").status_code == 404


# --------------------------------------------------------------------------- headless Chromium
def assert_renders(page, out_dir) -> None:
    shot = render_in_chromium(page, out_dir)
    assert not shot.console, "the page logged to the console:\n" + "\n".join(shot.console)
    assert re.search(r"<svg\b", shot.dom, re.I), f"no <svg> in the rendered DOM:\n{shot.dom[:2000]}"
    assert re.search(r"<(path|polyline|polygon|rect|line|circle)\b", shot.dom, re.I), "the <svg> draws nothing"
    assert not re.search(r"<script\b", shot.dom, re.I)
    assert shot.png.exists(), f"no screenshot at {shot.png}\n{shot.stderr[-2000:]}"
    size = shot.png.stat().st_size
    assert size > 5 * 1024, f"screenshot is only {size} bytes"
    width, height, colours = png_colours(shot.png)
    assert (width, height) == (1200, 900), (width, height)
    assert len(colours) >= 2, "the screenshot is one flat colour"


def test_html_report_renders_in_headless_chromium(server, herald, tmp_path):
    world = redeemed_campaign(server, herald)
    report = tmp_path / "report.html"
    report.write_text(run(herald, "campaign", "report", str(world.id), "--format", "html", config=world.config).stdout,
                      encoding="utf-8")
    assert_renders(report, tmp_path / "chromium-cli")

    served = admin_get(world.srv, f"/admin/campaigns/{world.id}")
    assert served.status_code == 200, served.text[:500]
    admin_page = tmp_path / "admin-report.html"
    admin_page.write_bytes(served.content)
    assert_renders(admin_page, tmp_path / "chromium-admin")


def test_the_chromium_check_sees_console_errors(tmp_path):
    """The console check above can fail: a page with a throwing script is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>throw new Error('kaput')</script></body></html>",
                    encoding="utf-8")
    shot = render_in_chromium(page, tmp_path / "chromium")
    assert any("kaput" in line for line in shot.console), shot.stderr[-2000:]
