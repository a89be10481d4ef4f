"""Plain helpers for the `/admin` console suite (fixtures live in conftest.py).

Builds on Tests/integration/helpers.py, Tests/http/http_support.py and Tests/campaigns/campaign_support.py;
conftest.py puts those directories on sys.path before this module is imported.

* `Ledger`: mail made through the public API and the CLI (delivered resets, a 550-refused reset, a campaign
  starting in an hour) and read back from the SQLite ledger.
* `parse_html` / `Element.select`: a small DOM over html.parser with CSS-like selectors (no extra package).
* `ConsoleClient`: requests as a browser sends them (cookies explicit: requests keeps Secure cookies off
  plain http), `sign_in()` through the form, `follow()` a 303 with the cookies it set.
* `assert_rendered`, `ink_right_share`: screenshots checked with Pillow.
"""

from __future__ import annotations

import html.parser
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Optional
from urllib.parse import urlsplit

import pytest
import requests

from helpers import CaptureServer, deep_merge, query, wait_until
from http_support import ADMIN_TOKEN, BASE_OVERRIDES, HTTP_TIMEOUT, HeraldServer, ok, unique_email, write_serve_config
from campaign_support import CAMPAIGNS, campaign_from_csv, iso_seconds

SESSION_COOKIE = "herald_console"
CSRF_COOKIE = "herald_console_csrf"
SESSION_MAX_AGE = 28800
PASSWORD = "console-password-1"
REFUSED_DOMAIN = "refused.test"  # the capture server answers RCPT TO of these addresses 550
REFUSED_REPLY = "550"
ACTIONS = ["sign-in", "verify-email", "reset-password", "verify-and-change-email", "recover-email"]
LOCALES = ["en", "de", "fa", "id", "pl"]
NAV_LINKS = {
    "nav-overview": "/admin/",
    "nav-campaigns": "/admin/campaigns",
    "nav-messages": "/admin/messages",
    "nav-audit": "/admin/audit/search",
    "nav-templates": "/admin/templates",
    "nav-suppressions": "/admin/console/suppressions",
    "nav-webhooks": "/admin/console/webhooks",
    "nav-activity": "/admin/console/activity",
}

# No mail cooldown between sends to one address (two resets to the same person); `campaigns:` for the CLI.
CONSOLE_OVERRIDES = {"campaigns": CAMPAIGNS, "policy": {"cooldown": "0s"}}


def serve_console(herald_bin: Path, tmp_path_factory, overrides: dict = None):
    """One `herald serve` (embedded worker, 100 ms poll) with its own capture SMTP server that refuses RCPT TO of
    @refused.test with 550, and `overrides` on top of the suite's settings; a generator for a fixture to yield from
    (SIGTERM and exit 0 at the end)."""
    cwd = tmp_path_factory.mktemp("console")
    capture = CaptureServer(script=[f"rcpt=@{REFUSED_DOMAIN}:550:5.1.1 No such user here"])
    capture.start()
    settings = deep_merge(deep_merge(BASE_OVERRIDES, CONSOLE_OVERRIDES), overrides or {})
    srv = HeraldServer(herald_bin, write_serve_config(cwd, capture, settings), cwd, capture, (), settings)
    try:
        srv.wait_ready()
        yield srv
    finally:
        failure = None
        if srv.returncode is None:
            if not srv.running:
                failure = f"herald serve died during the module (exit {srv.proc.returncode})\n{srv.describe()}"
                srv.kill()
            else:
                code = srv.stop()
                if code != 0:
                    failure = f"herald serve exited {code} on SIGTERM (expected 0)\n{srv.describe()}"
        capture.stop()
        if failure:
            pytest.fail(failure, pytrace=False)


class Ledger:
    """Mail the module's server has handled, made through the public API and the CLI."""

    def __init__(self, srv, cli) -> None:
        self.srv, self.cli = srv, cli

    def send_resets(self, email: str, count: int = 1) -> list:
        """Sign `email` up and send `count` password resets through the client API; returns the outbox ids,
        oldest first (not waiting for delivery)."""
        self.srv.sign_up(email, PASSWORD)
        before = {r["id"] for r in self.rows(email)}
        for _ in range(count):
            ok(self.srv.send_oob("PASSWORD_RESET", email))
        ids = sorted(r["id"] for r in self.rows(email) if r["id"] not in before)
        assert len(ids) == count, f"{count} sendOobCode calls queued {len(ids)} outbox rows for {email}"
        return ids

    def delivered(self, tag: str, count: int = 2) -> SimpleNamespace:
        """`count` resets to a fresh address, received by the capture server and recorded `sent`."""
        email = unique_email(tag)
        ids = self.send_resets(email, count)
        self.srv.mail_to(email, count)
        self.wait_settled(ids, {"sent"})
        return SimpleNamespace(email=email, ids=ids)

    def refused(self, tag: str) -> SimpleNamespace:
        """One reset to an address the capture server refuses with 550: the row ends `failed`."""
        email = f"{tag}-{time.monotonic_ns()}@{REFUSED_DOMAIN}"
        ids = self.send_resets(email, 1)
        self.wait_settled(ids, {"failed"})
        return SimpleNamespace(email=email, id=ids[0])

    def campaign(self, name: str, size: int = 3) -> SimpleNamespace:
        """A verify-email campaign of `size` signed-up addresses starting in an hour: it stays `active` with
        every row `queued`."""
        emails = [unique_email(f"{name}{i}") for i in range(1, size + 1)]
        for email in emails:
            self.srv.sign_up(email, PASSWORD)
        cid = campaign_from_csv(self.cli, self.srv.config, self.srv.cwd, f"{name}-{time.monotonic_ns()}", emails,
                                "--start-at", iso_seconds(time.time() + 3600))
        rows = query(self.srv.db_path, "SELECT id, state FROM outbox WHERE campaign_id = ? ORDER BY id", (cid,))
        assert [r["state"] for r in rows] == ["queued"] * size, rows
        return SimpleNamespace(id=cid, emails=emails, ids=[r["id"] for r in rows])

    def rows(self, email: str) -> list:
        return query(self.srv.db_path, "SELECT * FROM outbox WHERE lower(recipient) = lower(?) ORDER BY id", (email,))

    def state(self, outbox_id: int) -> str:
        return query(self.srv.db_path, "SELECT state FROM outbox WHERE id = ?", (outbox_id,))[0]["state"]

    def campaign_state(self, cid: int) -> str:
        return query(self.srv.db_path, "SELECT state FROM campaigns WHERE id = ?", (cid,))[0]["state"]

    def wait_settled(self, ids: list, states: set, timeout: float = 30) -> None:
        try:
            wait_until(lambda: all(self.state(i) in states for i in ids), timeout, f"outbox {ids} to be {states}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; ledger has {[self.state(i) for i in ids]}\n"
                                 f"--- server stderr\n{self.srv.stderr_text()[-3000:]}") from None


# =========================================================================== HTML
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
# Opening the key closes an open element of these tags first (the HTML parser's implied end tags we need).
_IMPLIED = {"tr": {"tr", "td", "th"}, "td": {"td", "th"}, "th": {"td", "th"}, "li": {"li"}, "option": {"option"},
            "p": {"p"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}}
_SCOPE = {"table", "tbody", "thead", "tfoot", "ul", "ol", "dl", "select", "form", "body", "div"}


class Element:
    def __init__(self, tag: str, attrs: dict, parent: Optional["Element"]) -> None:
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def get(self, name: str, default=None):
        return self.attrs.get(name, default)

    @property
    def id(self) -> Optional[str]:
        return self.attrs.get("id")

    @property
    def classes(self) -> set:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        """The text content, whitespace collapsed."""
        parts: list = []

        def walk(node):
            for child in node.children:
                if isinstance(child, str):
                    parts.append(child)
                elif child.tag not in ("script", "style"):
                    walk(child)
        walk(self)
        return " ".join("".join(parts).split())

    def descendants(self):
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.descendants()

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def select(self, selector: str) -> list:
        """Descendants matching a CSS-like selector: compounds of tag, #id, .class, [attr], [attr=value],
        joined by spaces (descendant combinator); document order."""
        steps = [_compound(part) for part in selector.split()]
        found = [e for e in self.descendants() if _matches(e, steps[-1])]
        return [e for e in found if _has_ancestors(e, steps[:-1], self)]

    def select_one(self, selector: str) -> Optional["Element"]:
        hits = self.select(selector)
        return hits[0] if hits else None

    def one(self, selector: str) -> "Element":
        """Exactly one match, or an assertion naming the selector."""
        hits = self.select(selector)
        assert len(hits) == 1, f"expected exactly one `{selector}`, found {len(hits)}"
        return hits[0]

    def __repr__(self) -> str:
        return f"<{self.tag} {self.attrs}>"


_PART = re.compile(r"""([a-zA-Z][a-zA-Z0-9-]*)|\#([\w-]+)|\.([\w-]+)|\[([\w-]+)(?:=(?:"([^"]*)"|'([^']*)'|([^\]]*)))?\]""")


def _compound(text: str) -> dict:
    spec: dict = {"tag": None, "id": None, "classes": set(), "attrs": []}
    pos = 0
    while pos < len(text):
        m = _PART.match(text, pos)
        assert m, f"unsupported selector {text!r}"
        tag, ident, cls, attr = m.group(1), m.group(2), m.group(3), m.group(4)
        if tag:
            spec["tag"] = tag.lower()
        elif ident:
            spec["id"] = ident
        elif cls:
            spec["classes"].add(cls)
        else:
            value = next((g for g in m.group(5, 6, 7) if g is not None), None)
            spec["attrs"].append((attr.lower(), value))
        pos = m.end()
    return spec


def _matches(e: Element, spec: dict) -> bool:
    if spec["tag"] and e.tag != spec["tag"]:
        return False
    if spec["id"] and e.id != spec["id"]:
        return False
    if spec["classes"] and not spec["classes"] <= e.classes:
        return False
    return all(name in e.attrs and (value is None or e.attrs[name] == value) for name, value in spec["attrs"])


def _has_ancestors(e: Element, steps: list, root: Element) -> bool:
    if not steps:
        return True
    for anc in e.ancestors():
        if anc is root:
            return False
        if _matches(anc, steps[-1]) and _has_ancestors(anc, steps[:-1], root):
            return True
    return False


class _TreeBuilder(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        closes = _IMPLIED.get(tag)
        if closes:
            cut = None
            for i in range(len(self.stack) - 1, 0, -1):
                if self.stack[i].tag not in closes or self.stack[i].tag in _SCOPE:
                    break
                cut = i
            if cut is not None:
                del self.stack[cut:]
        element = Element(tag, {k.lower(): (v if v is not None else "") for k, v in attrs}, self.stack[-1])
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.stack[-1].tag == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse_html(text: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def hidden_value(form: Element, name: str) -> Optional[str]:
    """The value of the form's hidden input `name` (None when it has none)."""
    fields = [i for i in form.select("input") if i.get("type", "").lower() == "hidden" and i.get("name") == name]
    assert len(fields) <= 1, f"{len(fields)} hidden `{name}` fields in {form}"
    return fields[0].get("value", "") if fields else None


def post_forms(doc: Element) -> list:
    return [f for f in doc.select("form") if f.get("method", "get").lower() == "post"]


# =========================================================================== HTTP
def show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code}\n{dict(resp.headers)}\n{resp.text[:2500]}"


def set_cookies(resp: requests.Response) -> dict:
    """{name: SimpleNamespace(value, attrs, raw)} of the response's Set-Cookie headers; attribute names
    lower-cased, flag attributes map to True."""
    out = {}
    for raw in resp.raw.headers.getlist("Set-Cookie"):
        parts = [p.strip() for p in raw.split(";")]
        name, _, value = parts[0].partition("=")
        attrs: dict = {}
        for part in parts[1:]:
            if not part:
                continue
            key, eq, val = part.partition("=")
            attrs[key.strip().lower()] = val.strip() if eq else True
        out[name.strip()] = SimpleNamespace(value=value.strip(), attrs=attrs, raw=raw)
    return out


def csp_directives(resp: requests.Response) -> dict:
    header = resp.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy\n{show(resp)}"
    directives = {}
    for part in header.split(";"):
        tokens = part.split()
        if tokens:
            directives[tokens[0].lower()] = tokens[1:]
    return directives


def is_html(resp: requests.Response) -> bool:
    return resp.headers.get("Content-Type", "").lower().startswith("text/html")


class ConsoleClient:
    """requests against the console as a browser would send them: no redirects followed unless asked, the
    session cookie sent explicitly (requests keeps Secure cookies off plain http)."""

    def __init__(self, srv) -> None:
        self.srv, self.url = srv, srv.url

    @staticmethod
    def _cookie_header(cookies: Optional[dict]) -> dict:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}

    def get(self, path: str, session=None, *, cookies: Optional[dict] = None, params=None,
            headers: Optional[dict] = None) -> requests.Response:
        jar = dict(session.cookies if session else {}, **(cookies or {}))
        return requests.get(self.url + path, params=params, headers={**self._cookie_header(jar), **(headers or {})},
                            timeout=HTTP_TIMEOUT, allow_redirects=False)

    def post(self, path: str, data=None, session=None, *, cookies: Optional[dict] = None,
             headers: Optional[dict] = None, json=None) -> requests.Response:
        jar = dict(session.cookies if session else {}, **(cookies or {}))
        return requests.post(self.url + path, data=data, json=json,
                             headers={**self._cookie_header(jar), **(headers or {})},
                             timeout=HTTP_TIMEOUT, allow_redirects=False)

    def location(self, resp: requests.Response, status: int = 303) -> str:
        """The redirect's target path (with its query, if any); an absolute Location must name this server."""
        assert resp.status_code == status, f"expected {status}\n{show(resp)}"
        location = resp.headers.get("Location")
        assert location, f"a {status} without Location\n{show(resp)}"
        parts = urlsplit(location)
        if parts.netloc:
            assert f"{parts.scheme}://{parts.netloc}" == self.url, f"redirect off this server: {location}"
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def follow(self, resp: requests.Response, session=None) -> requests.Response:
        """GET the 303's target as a browser would: with the session and any cookie the 303 set."""
        path = self.location(resp)
        jar = {}
        for name, cookie in set_cookies(resp).items():
            if str(cookie.attrs.get("max-age", "1")) != "0" and cookie.value:
                jar[name] = cookie.value
        return self.get(path, session, cookies=jar)

    def page(self, path: str, session=None, status: int = 200, params=None) -> Element:
        resp = self.get(path, session, params=params)
        assert resp.status_code == status, f"expected {status}\n{show(resp)}"
        assert is_html(resp), show(resp)
        return parse_html(resp.text)

    def sign_in_form(self) -> SimpleNamespace:
        """GET /admin/sign-in: the page, its form's csrf field and the csrf cookie it set."""
        resp = self.get("/admin/sign-in")
        assert resp.status_code == 200 and is_html(resp), show(resp)
        doc = parse_html(resp.text)
        form = doc.select_one("form#sign-in")
        assert form is not None, f"no form#sign-in\n{show(resp)}"
        cookie = set_cookies(resp).get(CSRF_COOKIE)
        return SimpleNamespace(resp=resp, doc=doc, form=form, field=hidden_value(form, "csrf"), cookie=cookie)

    def sign_in(self, token: str = ADMIN_TOKEN) -> SimpleNamespace:
        """Sign in through the form; returns the session: .cookie (the herald_console value), .cookies,
        .csrf (the hidden csrf of the overview's sign-out form) and .set_cookie (the parsed Set-Cookie)."""
        form = self.sign_in_form()
        assert form.cookie is not None and form.field, f"sign-in page without csrf cookie and field\n{show(form.resp)}"
        resp = self.post("/admin/sign-in", {"token": token, "csrf": form.field},
                         cookies={CSRF_COOKIE: form.cookie.value})
        assert self.location(resp) == "/admin/", show(resp)
        set_cookie = set_cookies(resp).get(SESSION_COOKIE)
        assert set_cookie is not None and set_cookie.value, f"sign-in set no {SESSION_COOKIE} cookie\n{show(resp)}"
        session = SimpleNamespace(cookie=set_cookie.value, cookies={SESSION_COOKIE: set_cookie.value},
                                  set_cookie=set_cookie, csrf=None)
        overview = self.page("/admin/", session)
        sign_out = overview.select_one("form#sign-out")
        assert sign_out is not None, "the overview has no form#sign-out"
        session.csrf = hidden_value(sign_out, "csrf")
        assert session.csrf, "form#sign-out carries no hidden csrf"
        return session


# =========================================================================== screenshots (Pillow)
def screenshot_stats(path: Path, box: Optional[tuple] = None) -> SimpleNamespace:
    """Distinct colours and the share of the most common colour, over the image or a (l, t, r, b) box."""
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        if box is not None:
            image = image.crop(box)
        width, height = image.size
        colours = image.getcolors(maxcolors=width * height + 1) or []
    total = max(1, width * height)
    top = max((n for n, _ in colours), default=0)
    return SimpleNamespace(width=width, height=height, distinct=len(colours), top_share=top / total)


def assert_rendered(driver, path: Path, with_nav: bool = True) -> None:
    """The screenshot at `path` is a rendered page, not a blank one (many colours, not one flat colour),
    and, with_nav, the console's nav bar is drawn: nav#nav visible inside the viewport with text in it."""
    stats = screenshot_stats(path)
    assert stats.distinct >= 32, f"{path.name}: only {stats.distinct} distinct colours - nothing rendered?"
    assert stats.top_share <= 0.99, f"{path.name}: {stats.top_share:.1%} of the page is one colour - blank?"
    if not with_nav:
        return
    from selenium.webdriver.common.by import By

    nav = driver.find_element(By.CSS_SELECTOR, "nav#nav")
    assert nav.is_displayed(), "nav#nav is not displayed"
    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.left, r.top, r.right, r.bottom, window.devicePixelRatio];", nav)
    left, top, right, bottom, ratio = rect
    box = tuple(int(round(v * ratio)) for v in (max(left, 0), max(top, 0), right, bottom))
    assert box[2] - box[0] >= 200 and box[3] - box[1] >= 16, f"nav#nav is too small to be a bar: {rect}"
    assert box[3] <= stats.height and box[2] <= stats.width, \
        f"nav#nav {box} lies outside the {stats.width}x{stats.height} screenshot (not at the top of the page?)"
    nav_stats = screenshot_stats(path, box)
    assert nav_stats.distinct >= 8, f"{path.name}: the nav bar area {box} has {nav_stats.distinct} colours - no text drawn"
    for link_id in NAV_LINKS:
        assert driver.find_element(By.ID, link_id).is_displayed(), f"a#{link_id} is not displayed"


def ink_right_share(path: Path, dark: int = 160) -> float:
    """The share of dark pixels (luminance < dark: text, the button) lying in the image's right half."""
    from PIL import Image

    with Image.open(path) as image:
        grey = image.convert("L")
        width, height = grey.size
        pixels = grey.load()
        left = right = 0
        middle = width / 2
        for y in range(height):
            for x in range(width):
                if pixels[x, y] < dark:
                    if x < middle:
                        left += 1
                    else:
                        right += 1
    assert left + right > 200, f"{path.name}: almost no dark pixels ({left + right}) - no text rendered"
    return right / (left + right)
