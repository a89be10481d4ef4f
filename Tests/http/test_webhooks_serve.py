"""Webhooks from `herald serve`: its embedded worker posts the events, and what a person does with a link
(opening its page, using it) reaches the receiver as `clicked` and `redeemed`, never with the code."""

from __future__ import annotations

import requests

from helpers import action_link, parse_link, wait_until
from http_support import CONTINUE, HTTP_TIMEOUT, hidden_fields, ok, post_form
from webhook_receiver import SECRET, Receiver


def test_a_reset_journey_is_told_as_sent_clicked_and_redeemed(server):
    receiver = Receiver(SECRET).start()
    try:
        srv = server(webhooks={"backoffBase": "1s", "backoffCap": "2s", "app": {"url": receiver.url, "secret": SECRET}})
        email = "journey@example.com"
        srv.sign_up(email, "old-password-1")
        ok(srv.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE))
        [item] = srv.mail_to(email)
        link = action_link(item["message"])
        code = parse_link(link)["params"]["oobCode"]

        browser = requests.Session()
        page = browser.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert page.status_code == 200
        form = post_form(page.text)
        fields = hidden_fields(form)
        fields["newPassword"] = "new-password-2"
        target = srv.local(requests.compat.urljoin(page.url, form["action"] or page.url))
        done = browser.post(target, data=fields, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert done.status_code in (200, 303), done.text[:500]

        wait_until(lambda: {"sent", "clicked", "redeemed"} <= {e["type"] for e in receiver.events}, 20,
                   "sent, clicked and redeemed events")
        [sent] = receiver.of_type("sent")
        [redeemed] = receiver.of_type("redeemed")
        assert redeemed["message"]["id"] == sent["message"]["id"]
        assert redeemed["link"]["action"] == "reset-password" and redeemed["link"]["redeemedAt"]
        assert redeemed["visitor"]["ip"] == "127.0.0.1"
        assert receiver.of_type("clicked")[0]["message"]["recipient"] == email
        assert not receiver.bad_signatures
        assert all(code not in str(event) for event in receiver.events), "never the code"

        def delivered_posts() -> float:
            metrics = requests.get(srv.url + "/metrics", timeout=HTTP_TIMEOUT).text
            lines = [line for line in metrics.splitlines() if line.startswith("herald_webhook_posts_total{")
                     and 'outcome="delivered"' in line and 'endpoint="app"' in line]
            return float(lines[0].rsplit(" ", 1)[1]) if lines else 0

        wait_until(lambda: delivered_posts() >= 3, 10, "herald_webhook_posts_total counting the delivered POSTs")
    finally:
        receiver.stop()
