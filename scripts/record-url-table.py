#!/usr/bin/env python3
"""Records how real headless Chromium parses tricky continue URLs into Tests/support/url_table.json.

Herald's WebURL (Sources/HeraldCore/Links/WebURL.swift) must read a continue URL the way a browser
does, or refuse it; Tests/HeraldCoreTests/WebURLTests.swift checks it against this table. For each
input string a local page evaluates `new URL(input)` and records
{input, ok, href, protocol, hostname, port}; ok is false when the constructor throws.

Usage: python3 scripts/record-url-table.py [--chromium PATH] [--output Tests/support/url_table.json]
Needs Debian's `chromium` package (scripts/install-deps.sh installs it). The output is deterministic
for one Chromium version, which it records.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "Tests" / "support" / "url_table.json"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_TIMEOUT = 120

GOOD = "app.example.com"  # the authorized host in every case built around one
EVIL = "evil.com"  # the attacker's host

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>url table</title>
<p id="state">running</p>
<pre id="results"></pre>
<script>
const inputs = %(inputs)s;
// Non-ASCII and DEL as \\uXXXX, so the dumped DOM is plain ASCII whatever the console encoding.
const ascii = (text) => text.replace(/[\\u007f-\\uffff]/g, (c) => "\\\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
const rows = inputs.map((input) => {
  try {
    const url = new URL(input);
    return {input, ok: true, href: url.href, protocol: url.protocol, hostname: url.hostname, port: url.port};
  } catch (error) {
    return {input, ok: false};
  }
});
document.getElementById("results").textContent = ascii(JSON.stringify(rows));
document.getElementById("state").textContent = "done";
</script>
"""


def chromium_binary(explicit: str | None) -> str:
    path = explicit or shutil.which("chromium") or CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        sys.exit(f"headless Chromium not found ({path}): apt-get install -y chromium (scripts/install-deps.sh does)")
    return path


def chromium_version(binary: str) -> str:
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT,
                          stdin=subprocess.DEVNULL)
    found = re.search(r"Chromium\s+([0-9][0-9.]*)", proc.stdout)
    if not found:
        sys.exit(f"could not read the Chromium version from {proc.stdout!r} {proc.stderr[-500:]!r}")
    return found.group(1)


# --------------------------------------------------------------------------- inputs
def authority_inputs() -> list[str]:
    """Backslashes, at signs and userinfo: where the host ends and which `@` splits it off."""
    g, e = GOOD, EVIL
    return [
        f"https://{g}/",
        f"https://{e}\\@{g}/",
        f"https://{e}\\\\@{g}/",
        f"https://{e}\\@{g}",
        f"http://{e}\\@{g}/path",
        f"https://{e}%5c@{g}/",
        f"https://{e}%5C@{g}/",
        f"https://{g}@{e}/",
        f"https://{g}:443@{e}/",
        f"https://{g}:pass@{e}/",
        f"https://user:pa:ss@{e}/",
        f"https://{e}@{g}/",
        f"https://{e}@{g}@{e}/",
        f"https://{g}@{e}@{g}/",
        f"https://a@b@c@{g}/",
        f"https://@{g}/",
        f"https://:@{g}/",
        f"https://user:@{g}/",
        f"https://:pass@{g}/",
        f"https://{e}/@{g}/",
        f"https://{e}?@{g}/",
        f"https://{e}#@{g}/",
        f"https://{e}/?@{g}",
        f"https://{e}/#@{g}",
        f"http://{e}#@{g}",
        f"http://{e}?@{g}",
        f"https://{e}%40{g}/",
        f"https://{e}%2540{g}/",
        f"https://user%40{e}@{g}/",
        f"https://user%3a{e}@{g}/",
        f"https://us er@{g}/",
        f"https://us\"er<>@{g}/",
        f"https://user{{}}|^`@{g}/",
        f"https://üser:pässword@{g}/",
        f"https://user;=@{g}/",
        f"https://user[]@{g}/",
        f"https://user%zz@{g}/",
        f"https://{e}\\{g}/",
        f"https://{g}\\.{e}/",
        f"https://{g}\\{e}",
        f"https://{e}\\/{g}/",
        f"https://{e}:\\@{g}/",
        f"https://{e}:443\\@{g}/",
        f"https://{e}:443@{g}/",
        f"https://{g}:@{e}/",
        f"https://{e}@",
        f"https://{e}@/",
        "https://@",
        "https://@/",
        "https://user:pass@/",
        f"https://{e}:@{g}:8443/",
        f"https://user@{g}:8080/path?q#f",
        f"https:{e}@{g}/",
        f"https:\\\\{e}\\@{g}/",
        f"https://{g}@{e}:443/",
        f"https://{g}%00@{e}/",
        f"https://{e}\u0000@{g}/",
        f"https://{e}%09@{g}/",
        f"https://{e}\t@{g}/",
        f"https://{e}\\\t@{g}/",
    ]


def scheme_and_slash_inputs() -> list[str]:
    """How much of `https:` and the slashes after it a browser tolerates."""
    g, e = GOOD, EVIL
    return [
        f"https:{e}",
        f"https:{e}/",
        f"https:/{e}",
        f"https:/{e}/",
        f"https:\\{e}/",
        f"https:\\\\{e}/",
        f"https:/\\{e}/",
        f"https:\\/{e}/",
        f"https:///{e}/",
        f"https:////{e}/",
        f"https:\\\\\\\\{e}/",
        f"https:\\/\\/{e}/",
        f"http:{e}",
        f"http:\\\\{e}",
        f"//{e}",
        f"//{e}/",
        f"/\\{e}",
        f"\\\\{e}",
        f"\\/{e}",
        f"///{e}",
        f"{e}",
        f"{g}/finish",
        "/finish",
        f"?next=https://{e}",
        f"#https://{e}",
        f"HTTPS://{g}/",
        f"HtTpS://{g}/",
        f"HTTP://{e.upper()}/",
        f"https ://{e}/",
        f" https://{e}/",
        f"ht\ttps://{e}/",
        f"ht\ntps://{e}/",
        f"ht\rtps://{e}/",
        f"https\t://{e}/",
        f"https:\t//{e}/",
        f"https:/\t/{e}/",
        f"https:/\n/{e}/",
        f"htps://{e}/",
        f"httpss://{e}/",
        f"http+s://{e}/",
        f"1https://{e}/",
        f"https//{e}/",
        f"https;//{e}/",
        f"https.://{e}/",
        "https:",
        "https:/",
        "https://",
        "https:///",
        "https:?x",
        "https:#x",
        "https://?x",
        "https://#x",
        "https://:443",
        "https://:443/",
        "https:// /",
        f"https://{g}",
        f"https://{g}?",
        f"https://{g}#",
        f"https://{g}?#",
        f"ｈｔｔｐｓ://{e}/",
        f"https：//{e}/",
        f"https:／／{e}/",
        f"https://{e}／{g}/",
        f"https://{e}＼@{g}/",
        f"https://{e}＠{g}/",
        f"https://{e}﹫{g}/",
        f"https://{e}?{g}",
        f"https://{e}．{g}/",
    ]


def other_scheme_inputs() -> list[str]:
    """Schemes Herald must refuse whatever a browser makes of them."""
    e = EVIL
    return [
        "javascript:alert(1)",
        "JavaScript:alert(document.domain)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "javascript://%0aalert(1)",
        f"javascript://{GOOD}/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "vbscript:msgbox(1)",
        f"ftp://{e}/",
        f"ws://{e}/",
        f"wss://{e}/",
        f"file://{e}/etc/passwd",
        "file:///etc/passwd",
        f"blob:https://{e}/uuid",
        "about:blank",
        f"mailto:a@{e}",
        f"intent://{e}/#Intent;scheme=https;end",
        f"android-app://com.example/https/{e}",
        "chrome://settings",
        f"view-source:https://{e}/",
        f"x-https://{e}/",
        f"https+x://{e}/",
    ]


def whitespace_inputs() -> list[str]:
    """Leading and trailing C0 controls and spaces are trimmed; tab, LF and CR vanish anywhere."""
    g, e = GOOD, EVIL
    rows = [
        f" https://{g}/ ",
        f"\u0000https://{g}/",
        f"https://{g}/\u0000",
        f"\u001fhttps://{g}/\u001f",
        f"\u0001\u0002 https://{e}/ \u0003",
        f"\u007fhttps://{g}/",
        f"https://{g}/\u007f",
        f"\u00a0https://{g}/",
        f"\u3000https://{g}/",
        f"\ufeffhttps://{g}/",
        f"\t\n\rhttps://{g}/\t\n\r",
        "https://ev\til.com/",
        "https://ev\nil.com/",
        "https://ev\ril.com/",
        f"https://{g}\t.{e}/",
        f"https://{e}\n/@{g}/",
        f"https://\t{e}/",
        f"https://{e}\t/",
        f"https://{e}:4\t43/",
        f"https://{e}/pa\tth?qu\nery#fr\rag",
        "https://ev il.com/",
        "https://ev\u000bil.com/",
        "https://ev\u000cil.com/",
        "https://ev\u0000il.com/",
        "https://ev\u007fil.com/",
        "https://ev\u00a0il.com/",
        "https://ev\u200bil.com/",
        "https://ev\u00adil.com/",
        "https://ev\u200dil.com/",
        "https://ev\u2028il.com/",
        f"https://{e}/\u000b\u000c",
        f"https://{e}/a b?c d#e f",
    ]
    return rows


def host_character_inputs() -> list[str]:
    """Every printable ASCII character inside a host, raw and percent-encoded."""
    rows = []
    for code in range(0x21, 0x7F):
        c = chr(code)
        if c.isalnum() or c in ".":
            continue
        rows.append(f"https://a{c}b.com/")
    for c in "%.@/\\:?#[]^|<> '\"!$&()*+,;=_-~`{}":
        rows.append(f"https://a%{ord(c):02X}b.com/")
    rows += [
        f"https://{EVIL}%2f{GOOD}/",
        f"https://{EVIL}%2F.{GOOD}/",
        f"https://{EVIL}%2e{GOOD}/",
        f"https://{EVIL}%3F{GOOD}/",
        f"https://{EVIL}%23{GOOD}/",
        f"https://{EVIL}%3a443/",
        "https://%65%76%69%6c%2e%63%6f%6d/",
        "https://%45VIL.com/",
        "https://ev%69l.com/",
        "https://ev%2569l.com/",
        "https://ev%ZZl.com/",
        "https://ev%6l.com/",
        "https://ev%l.com/",
        "https://evil.com%/",
        "https://%/",
        "https://%20/",
        "https://%00evil.com/",
        "https://ev%00il.com/",
        "https://ev%C3%BCil.com/",
        "https://ev%C3il.com/",
        "https://ev%FFil.com/",
        "https://ev%E2%80%8Bil.com/",
        f"https://%E3%80%82{EVIL}/",
        "https://evil%E3%80%82com/",
        "https://evil%EF%BC%8Ecom/",
        "https://ev%C2%ADil.com/",
    ]
    return rows


def case_and_dot_inputs() -> list[str]:
    """Upper case, trailing and repeated dots, look-alike dots and lengths."""
    g, e = GOOD, EVIL
    return [
        "https://APP.EXAMPLE.COM/",
        "https://App.Example.Com/Finish?Q=1#F",
        f"https://{g}./",
        f"https://{g}../",
        f"https://.{g}/",
        f"https://..{g}/",
        "https://app..example.com/",
        "https://./",
        "https://../",
        "https://.../",
        f"https://{g}.{e}/",
        f"https://{g}.{e}./",
        f"https://{e}.{g}/",
        f"https://{e}/{g}",
        f"https://{g}-{e}/",
        "https://app。example。com/",
        "https://app．example．com/",
        "https://app｡example｡com/",
        f"https://{e}。{g}/",
        "https://evil。com/",
        "https://evil。com。/",
        f"https://{g}。/",
        f"https://-{e}/",
        f"https://{e}-/",
        "https://a--b.com/",
        "https://ab--c.com/",
        f"https://_{e}/",
        f"https://{'a' * 63}.com/",
        f"https://{'a' * 64}.com/",
        f"https://{'.'.join(['a' * 63] * 4)}/",
        f"https://{'a' * 300}.com/",
        "https://0.com/",
        "https://com/",
        "https://localhost/",
        "https://LOCALHOST:3000/",
        "https://localhost./",
        "https://x/",
    ]


def unicode_host_inputs() -> list[str]:
    """Fullwidth forms, IDN and Punycode, compatibility mappings and look-alikes."""
    g, e = GOOD, EVIL
    return [
        "https://ａｐｐ.example.com/",
        "https://ａｐｐ．ｅｘａｍｐｌｅ．ｃｏｍ/",
        "https://ＡＰＰ.EXAMPLE.COM/",
        "https://ｅｖｉｌ.com/",
        "https://ｅｖｉｌ．ｃｏｍ/",
        "https://ＥＶＩＬ.com/",
        f"https://{e}＼.{g}/",
        f"https://{e}／.{g}/",
        f"https://{e}＃.{g}/",
        f"https://{e}？.{g}/",
        f"https://{e}：443/",
        "https://１２７.０.０.１/",
        "https://１２７．０．０．１/",
        "https://０ｘ７ｆ.1/",
        "https://bücher.example/",
        "https://BÜCHER.example/",
        "https://bu\u0308cher.example/",
        "https://xn--bcher-kva.example/",
        "https://XN--BCHER-KVA.example/",
        "https://Xn--bcher-kva.example/",
        "https://xn--bcher-kva.example./",
        "https://b%C3%BCcher.example/",
        "https://b%c3%bccher.example/",
        "https://xn--/",
        "https://xn--.example/",
        "https://xn---/",
        "https://xn--a/",
        "https://xn--a.example/",
        "https://xn--zz-zzzzzzzzzzzz.example/",
        "https://xn--ls8h/",
        "https://xn--ls8h.la/",
        "https://xn--bcher-kva.xn--bcher-kva/",
        "https://xn--bcher-KVA.example/",
        "https://xn--Bcher-kva.example/",
        "https://xn--bcher-kva-/",
        "https://xn--abc-/",
        "https://xn--ab-cd/",
        "https://xn--ae-2ya.example/",
        "https://xn--zca.example/",
        "https://xn--nxasmm1c.example/",
        "https://xn--nxasmq6b.example/",
        "https://xn--e1afmkfd.example/",
        "https://xn--fiqs8s/",
        "https://xn--55qx5d.cn/",
        "https://xn--80ak6aa92e.com/",
        "https://xn--mgbh0fb.example/",
        "https://xn--9n2bp8q.example/",
        "https://xn--1ca.example/",
        "https://xn--0ca.example/",
        "https://xn--a-ecp.example/",
        "https://xn--v-8ga.example/",
        "https://straße.example/",
        "https://STRAẞE.example/",
        "https://strasse.example/",
        "https://ΟΔΟΣ.example/",
        "https://οδος.example/",
        "https://οδοσ.example/",
        "https://ΑΘΗΝΑ.example/",
        "https://пример.example/",
        "https://ПРИМЕР.example/",
        "https://аpple.com/",
        "https://еvil.com/",
        "https://中国.cn/",
        "https://例え.テスト/",
        "https://ﾃｽﾄ.example/",
        "https://한국.example/",
        "https://ᄒᆞᆫ국.example/",
        "https://مثال.example/",
        "https://a.مثال/",
        "https://a1.مثال/",
        "https://עברית.example/",
        "https://ıstanbul.example/",
        "https://İstanbul.example/",
        "https://ǅ.example/",
        "https://ﬁle.example/",
        "https://ℌ.example/",
        "https://ⓔⓥⓘⓛ.com/",
        "https://𝐞𝐯𝐢𝐥.com/",
        "https://evil.ｃｏｍ/",
        "https://℡.example/",
        "https://¼.example/",
        "https://ª.example/",
        "https://ſ.example/",
        "https://ǰ.example/",
        "https://ŉ.example/",
        "https://Ꭰ.example/",
        "https://ꭰ.example/",
        "https://\u0301a.example/",
        "https://a\u0301.example/",
        "https://á.example/",
        "https://é.example/",
        "https://ÿ.example/",
        "https://Ÿ.example/",
        "https://ø.example/",
        "https://æ.example/",
        "https://þ.example/",
        "https://ð.example/",
        "https://å.example/",
        "https://ł.example/",
        "https://ŋ.example/",
        "https://ĳ.example/",
        "https://ŀ.example/",
        "https://ƒ.example/",
        "https://ǆ.example/",
        "https://ё.example/",
        "https://Ё.example/",
        "https://ѐ.example/",
        "https://ά.example/",
        "https://ς.example/",
        "https://ϐ.example/",
        "https://µ.example/",
        "https://ㅎ.example/",
        "https://ア.example/",
        "https://あ.example/",
        "https://ｱ.example/",
        "https://漢字.example/",
        "https://a\u200cb.example/",
        "https://a\u200db.example/",
        "https://a\ufe0fb.example/",
        "https://a\u034fb.example/",
        "https://\U0001f600.example/",
        "https://♥.example/",
        "https://a\u2024b.example/",
        "https://a\u2488b.example/",
        "https://⒈.example/",
        "https://\ufffd.example/",
        "https://a\ue000.example/",
        "https://a\u0378.example/",
        f"https://{e}\u2215{g}/",
        f"https://{e}\u2044{g}/",
        f"https://{e}\u2100{g}/",
        f"https://{e}\ufe5f{g}/",
        f"https://{e}\u2474/",
    ]


def ipv4_inputs() -> list[str]:
    """WHATWG IPv4: decimal, octal, hex, short forms, overflow and look-alikes."""
    rows = []
    for host in ["127.0.0.1", "0x7f.1", "0x7F.0.0.1", "0X7f.0.0.1", "2130706433", "0177.0.0.1", "0177.1", "127.1",
                 "127.0.1", "127.1.1", "0x7f000001", "017700000001", "0x7f.0x0.0x0.0x1", "0x", "0x.0x.0x.0x",
                 "0.0.0.0", "0", "00", "0x0", "1.2.3.4.", "1.2.3.4..", "1.2.3.4.5", "1.2.3", "1.2", "4294967295",
                 "4294967296", "0xffffffff", "0x100000000", "256.0.0.1", "1.256.0.1", "1.2.3.256", "1.2.65536",
                 "1.16777216", "1.2.65535", "1.16777215", "255.255.255.255", "09.0.0.1", "08", "0x7g.0.0.1",
                 "127.0.0.0x1", "127.0.0.1x", "1.2.3.4a", "1.2.3.a", "a.1.2.3", "1.2.3.0x", "1.2.3.09",
                 "127.0.0.01", "127.000.000.001", "0000000000000000000000177.1", "0x00000000000007f.1",
                 "999999999999999999999", "0x" + "f" * 20, "1..2.3", ".1.2.3", "1.2.3.4%2e", "127%2e0%2e0%2e1",
                 "%31%32%37.0.0.1", "127.0.0.1%00", "127。0。0。1", "1.2.3.4.example", "example.1.2.3.4",
                 "example.123", "example.0x7f", "foo.09", "foo.0x", "1.2.3.4.5.example", "10.0.0.1",
                 "192.168.0.1", "169.254.169.254", "0251.0376.0251.0376", "0xa9fea9fe", "2852039166",
                 "[127.0.0.1]", "127.0.0.1:80", "127.0.0.1:443"]:
        rows.append(f"http://{host}/")
    rows += ["https://0x7f.1:8443/path", "http://0x7f.1/", "http://127.1:80/", "https://2130706433/x?y#z"]
    return rows


def ipv6_inputs() -> list[str]:
    """WHATWG IPv6: compression, embedded IPv4, zone identifiers and malformed forms."""
    rows = []
    for host in ["::1", "::", "0:0:0:0:0:0:0:1", "0000:0000:0000:0000:0000:0000:0000:0001", "1::", "1:0:0:0:0:0:0:0",
                 "2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8:0:0:1:0:0:1",
                 "2001:0:0:1:0:0:0:1", "1:0:0:2:0:0:0:3", "1:0:2:0:3:0:4:0", "0:0:1:0:0:0:0:0", "1:2:3:4:5:6:7:8",
                 "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "::ffff:127.0.0.1",
                 "::ffff:7f00:1", "::127.0.0.1", "::ffff:1.2.3", "::ffff:1.2.3.4.5", "::ffff:256.0.0.1",
                 "::ffff:0x7f.0.0.1", "::ffff:01.2.3.4", "::ffff:1.2.3.4:5", "1:2:3:4:5:6:1.2.3.4",
                 "1:2:3:4:5:6:7:1.2.3.4", "::1%25eth0", "::1%eth0", "fe80::1%251", "::1%", ":::1", "1:::2",
                 "1::2::3", ":1::2", "1::2:", "12345::1", "g::1", "::1 ", " ::1", "::1\t", "[::1]", "::1]",
                 "[::1", "", "::%31", "::ffff:127.0.0.1.", "::FFFF:7F00:1", "1:2:3:4:5::7:8", "1:0::0:0:8",
                 "0:0:0:1:0:0:0:0", "::0:0:0:1", "abcd:ef01:2345:6789:ABCD:EF01:2345:6789", "::00001",
                 "::0001", "fe80::", "ff02::1", "::ffff:0:0", "64:ff9b::1.2.3.4", "::1.2.3.4.5"]:
        rows.append(f"http://[{host}]/")
    rows += [
        "http://[::1]:80/",
        "http://[::1]:8080/",
        "https://[::1]:443/",
        "http://[::1]x/",
        "http://x[::1]/",
        "http://[::1]/path?q#f",
        "http://[::1]\\@evil.com/",
        "http://evil.com@[::1]/",
        "http://[::1]@evil.com/",
        "http://[::1].evil.com/",
        "http://[::1%5D@evil.com/",
        "http://[%3A%3A1]/",
        "http://%5B::1%5D/",
        "http://[::１]/",
        "http://[::1]:/",
        "http://[::1]:0/",
        "http://[::1]::80/",
        "http://[::1]]/",
        "http://[[::1]]/",
        "http://::1/",
    ]
    return rows


def port_inputs() -> list[str]:
    """Default ports, leading zeros, overflow, empty and non-numeric ports."""
    g, e = GOOD, EVIL
    rows = []
    for port in ["443", "80", "8443", "080", "0443", "00000000000000000000443", "0", "00", "1", "65535", "65536",
                 "99999", "4294967296", "18446744073709551617", "", ":", "443:", "-1", "+443", " 443", "443 ",
                 "4 43", "0x1bb", "1e3", "８０", "443a", "a443", "%34%34%33", "443%2f", "443\\", "443?", "443#",
                 "443@evil.com", "80\t80"]:
        rows.append(f"https://{g}:{port}/")
    rows += [
        f"http://{g}:80/",
        f"http://{g}:443/",
        f"http://{g}:0080/",
        f"https://{g}:80/",
        f"https://{e}:443\\{g}/",
        f"https://{e}:443?{g}",
        f"https://{e}:443#{g}",
        f"https://{g}:443",
        f"https://{g}:",
        f"https://{g}:?x",
        f"https://{g}:#x",
        f"https://{g}:8080",
        f"https://{g}:8080?x#y",
    ]
    return rows


def path_query_fragment_inputs() -> list[str]:
    """Dot segments, percent-encode sets, Unicode and look-alike hosts after the authority."""
    g, e = GOOD, EVIL
    base = f"https://{g}"
    rows = [
        f"{base}/a/./b/../c",
        f"{base}/a/b/../../../c",
        f"{base}/..",
        f"{base}/../",
        f"{base}/.",
        f"{base}/./",
        f"{base}/a/..",
        f"{base}/a/.",
        f"{base}/a/%2e/b",
        f"{base}/a/%2E%2e/b",
        f"{base}/a/.%2e/b",
        f"{base}/a/%2e./b",
        f"{base}/a/%2e%2e",
        f"{base}/a/%2e",
        f"{base}/a/...",
        f"{base}/a/..b",
        f"{base}/a/b..",
        f"{base}/a/%2e%2e%2f{e}",
        f"{base}/a\\..\\b",
        f"{base}\\..\\..\\{e}",
        f"{base}/a\\.\\b",
        f"{base}//{e}",
        f"{base}//{e}/",
        f"{base}/\\{e}",
        f"{base}\\\\{e}",
        f"{base}/%2f%2f{e}",
        f"{base}/%5c%5c{e}",
        f"{base}/.//{e}",
        f"{base}/..//{e}",
        f"{base}/a/..//{e}",
        f"{base}/finish?next=//{e}",
        f"{base}/finish?next=https://{e}/",
        f"{base}/finish#https://{e}/",
        f"{base}/@{e}",
        f"{base}/?@{e}",
        f"{base}/#@{e}",
        f"{base}/a b",
        f"{base}/a%20b",
        f"{base}/a\"b'c<d>e`f{{g}}h|i^j",
        f"{base}/?a\"b'c<d>e`f{{g}}h|i^j",
        f"{base}/#a\"b'c<d>e`f{{g}}h|i^j",
        f"{base}/a?b?c",
        f"{base}/a#b#c",
        f"{base}/a#b?c",
        f"{base}/a?b#c?d",
        f"{base}/a%zzb",
        f"{base}/a%2",
        f"{base}/a%",
        f"{base}/?a%",
        f"{base}/#a%",
        f"{base}/%41%42%43",
        f"{base}/%7e%7E",
        f"{base}/?%41%2e",
        f"{base}/#%41",
        f"{base}/a;b=c,d:e@f!g$h&i'j(k)l*m+n",
        f"{base}/?a;b=c,d:e@f!g$h&i(k)l*m+n/o?p",
        f"{base}/#a;b=c,d:e@f!g$h&i'j(k)l*m+n/o?p",
        f"{base}/ünicode?ünicode#ünicode",
        f"{base}/日本語?日本語#日本語",
        f"{base}/\U0001f600?\U0001f600#\U0001f600",
        f"{base}/a\u0000b",
        f"{base}/a\u001fb?c\u001fd#e\u001ff",
        f"{base}/a\u007fb?c\u007fd#e\u007ff",
        f"{base}/a\u00a0b",
        f"{base}/a\u200bb",
        f"{base}/a\ufeffb",
        f"{base}/a\ufffdb",
        f"{base}/a\ue000b",
        f"{base}/?q=a b&r=<x>#f g",
        f"{base}/?q='\"",
        f"{base}/#'\"",
        f"{base}/?#",
        f"{base}?#",
        f"{base}?q",
        f"{base}#f",
        f"{base}/a/b/c/",
        f"{base}/A/B?C#D",
        f"{base}/%00",
        f"{base}/%25",
        f"{base}/%%",
        f"{base}/a\\b?c\\d#e\\f",
        f"{base}/a/./../b/./c/..",
        f"{base}/./././",
        f"{base}/../../../../etc/passwd",
        f"{base}/a/%2E%2E/%2E/b",
        f"{base}/a/.%2E",
        f"{base}/a/%2e./",
        f"{base}/a/..%2f",
        f"{base}/a/%2e%2e%5c",
        f"{base}/a/..\\",
        f"{base}/a/.\\",
        f"{base}/a/%2e\\b",
        f"{base}/finish?continueUrl=https%3A%2F%2F{e}%2F",
        f"{base}/finish?mode=resetPassword&oobCode=abc&lang=en",
    ]
    return rows


def lookalike_inputs() -> list[str]:
    """Hosts an attacker might hope a validator misreads as the authorized one."""
    g, e = GOOD, EVIL
    return [
        f"https://{g}.{e}/",
        f"https://{g}%2e{e}/",
        f"https://{g}@{e}",
        f"https://{g}%40{e}/",
        f"https://{e}?.{g}",
        f"https://{e}#.{g}",
        f"https://{e}/.{g}",
        f"https://{e}\\.{g}",
        f"https://{e}%00.{g}/",
        f"https://{e}%0a.{g}/",
        f"https://{e}%09.{g}/",
        f"https://{e}%20.{g}/",
        f"https://{e}\u0000.{g}/",
        f"https://{e} .{g}/",
        f"https://{e};.{g}/",
        f"https://{e},{g}/",
        f"https://{e}&{g}/",
        f"https://{e}*.{g}/",
        f"https://{e}_.{g}/",
        f"https://{e}!.{g}/",
        f"https://{e}$.{g}/",
        f"https://{e}'.{g}/",
        f"https://{e}(.{g}/",
        f"https://{e}=.{g}/",
        f"https://{e}+.{g}/",
        f"https://{e}~.{g}/",
        f"https://{e}\".{g}/",
        f"https://{e}`.{g}/",
        f"https://{e}{{.{g}/",
        f"https://{e}}}.{g}/",
        f"https://{e}|.{g}/",
        f"https://{e}^.{g}/",
        f"https://{e}<.{g}/",
        f"https://{e}>.{g}/",
        f"https://{e}[.{g}/",
        f"https://{e}].{g}/",
        f"https://[{e}]/",
        f"https://{e}:{g}/",
        f"https://{e}:80:{g}/",
        f"https://{e}:@{g}",
        f"https://{g}:x@{e}",
        f"https://{g}\u200b/",
        f"https://{g}\u00ad/",
        f"https://{g}\u200c/",
        f"https://{g}\u2060/",
        f"https://{g}\ufeff/",
        f"https://{g}\u180e/",
        f"https://{g}\u034f/",
        f"https://{g.replace('a', 'а')}/",
        f"https://{g.replace('e', 'е')}/",
        f"https://{g.replace('.', '%2E')}/",
        f"https://{g.replace('.', '%252E')}/",
        f"https://{g.upper()}./",
        f"https://{g}%2F@{e}/",
        f"https://{e}%2F@{g}/",
        f"https://{e}%5C@{g}",
        f"https://{e}%3F@{g}",
        f"https://{e}%23@{g}",
        f"https://{e}/%2e%2e/@{g}",
        f"https:\\\\{e}\\{g}",
        f"https:\\\\{e}/{g}",
        f"https:{e}\\@{g}",
        f"https:{g}@{e}",
        f"https:/{g}@{e}",
        f"https:\\{g}@{e}",
        f"http://{e}\\\\@{g}",
        f"http:///{e}\\@{g}",
    ]


def idna_subset_inputs() -> list[str]:
    """Every letter in the Unicode subset WebURL maps itself (CJK and Hangul by sample), eight to a
    label (so the Punycode fits DNS's 63), lower and upper case; halfwidth Katakana; fullwidth ASCII
    one by one; combining marks that compose and one that does not; hyphens beside Unicode letters."""
    def letters(first: int, last: int) -> list[str]:
        return [chr(c) for c in range(first, last + 1)
                if unicodedata.category(chr(c)) in ("Ll", "Lo") and unicodedata.normalize("NFKC", chr(c)) == chr(c)]

    def labels(group: list[str]) -> list[str]:
        return [f"https://{''.join(group[start:start + 8])}.example/" for start in range(0, len(group), 8)]

    blocks = [letters(0x00DF, 0x00FF), letters(0x0100, 0x017F), letters(0x0390, 0x0390) + letters(0x03AC, 0x03CE),
              letters(0x0430, 0x045F), letters(0x3041, 0x3096), letters(0x30A1, 0x30FA) + ["\u30fc"],
              [chr(c) for c in range(0x4E00, 0x9FA6, 331)] + ["\u9fa5"],
              [chr(c) for c in range(0xAC00, 0xD7A4, 177)] + ["\ud7a3"]]
    rows = []
    for block in blocks:
        upper = [c.upper() for c in block if len(c.upper()) == 1 and c.upper() != c]
        for group in (block, upper):
            rows += labels(group)
    rows += labels([chr(c) for c in range(0xFF66, 0xFF9E)])
    rows += [f"https://a{chr(c)}b.example/" for c in range(0xFF01, 0xFF5F) if not chr(c).isalnum()]
    rows += [f"https://{chr(c)}.example/" for c in list(range(0xFF10, 0xFF1A)) + list(range(0xFF21, 0xFF3B))]
    rows += ["https://e\u0301.example/", "https://A\u030a.example/", "https://n\u0303o.example/",
             "https://\u03a9\u0301.example/", "https://q\u0301.example/", "https://-\u00fc.example/",
             "https://\u00fc-.example/", "https://ab--\u00fc.example/", "https://\u00fc--a.example/",
             "https://xn--\u00fc.example/", "https://\u00fc_a.example/", "https://\u00fc.xn--a.example/"]
    return rows


def inputs() -> list[str]:
    """Every case, in a fixed order, without repeats."""
    groups = [authority_inputs, scheme_and_slash_inputs, other_scheme_inputs, whitespace_inputs,
              host_character_inputs, case_and_dot_inputs, unicode_host_inputs, ipv4_inputs, ipv6_inputs, port_inputs,
              path_query_fragment_inputs, lookalike_inputs, idna_subset_inputs]
    seen, rows = set(), []
    for group in groups:
        for row in group():
            if row not in seen:
                seen.add(row)
                rows.append(row)
    return rows


# --------------------------------------------------------------------------- Chromium
def run_chromium(binary: str, rows: list[str]) -> list[dict]:
    """Loads a local page that parses every input with `new URL` and returns its rows."""
    # <, > and & as \u escapes, so the JSON cannot close the <script> element.
    literal = json.dumps(rows, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    with tempfile.TemporaryDirectory(prefix="herald-url-table-") as scratch:
        page = Path(scratch) / "page.html"
        page.write_text(PAGE % {"inputs": literal}, encoding="utf-8")
        argv = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", f"--user-data-dir={Path(scratch) / 'profile'}",
                "--virtual-time-budget=10000", "--dump-dom", page.as_uri()]
        proc = subprocess.run(argv, capture_output=True, timeout=CHROMIUM_TIMEOUT, stdin=subprocess.DEVNULL)
    dom = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        sys.exit(f"chromium exited {proc.returncode}\n{proc.stderr.decode('utf-8', 'replace')[-3000:]}")
    state = re.search(r'<p id="state">(.*?)</p>', dom, re.S)
    found = re.search(r'<pre id="results">(.*?)</pre>', dom, re.S)
    if not (state and state.group(1) == "done" and found):
        sys.exit(f"the page's script did not finish\n{dom[:3000]}")
    results = json.loads(html.unescape(found.group(1)))
    if [r["input"] for r in results] != rows:
        sys.exit("Chromium's rows do not line up with the inputs (an input did not survive the round trip)")
    return results


def table_text(table: dict) -> str:
    """ASCII JSON with one row a line, so a re-recording diffs row by row."""
    rows = ",\n".join("  " + json.dumps(row, ensure_ascii=True) for row in table["rows"])
    head = ", ".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in table.items() if key != "rows")
    return "{" + head + ', "rows": [\n' + rows + "\n]}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chromium", help="the Chromium binary (default: chromium on PATH, else /usr/bin/chromium)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"where to write the table (default: {OUTPUT})")
    args = parser.parse_args()
    binary = chromium_binary(args.chromium)
    rows = run_chromium(binary, inputs())
    keys = ["input", "ok", "href", "protocol", "hostname", "port"]
    table = {
        "generator": "scripts/record-url-table.py",
        "chromium": chromium_version(binary),
        "rows": [{key: row[key] for key in keys if key in row} for row in rows],
    }
    text = table_text(table)
    args.output.write_text(text, encoding="utf-8")
    accepted = sum(1 for row in rows if row["ok"])
    print(f"{args.output}: {len(rows)} rows, {accepted} accepted by Chromium {table['chromium']}")


if __name__ == "__main__":
    main()
