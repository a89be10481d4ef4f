#!/usr/bin/env python3
"""Scriptable capture SMTP server for Herald's tests (built on aiosmtpd).

Used three ways:

* by the Swift tests, as a subprocess::

      python3 Tests/support/smtp_server.py --port 0 --jsonl out.jsonl --script 1:451
      # first stdout line: "READY <port>"; everything else goes to stderr

* by the pytest suite, in process::

      from smtp_server import CaptureServer
      with CaptureServer(script=["1:451:4.3.0 Try again"]) as server:
          ...  # server.port, server.messages(), server.connections

* by ``make demo`` as the local capture server (``--maildir var/mail``).

Every accepted message (one that is about to get DATA's 250) is recorded with
the raw bytes exactly as received after dot-unstuffing (never modified): in
memory (``CaptureServer.messages()``), optionally as a Maildir file
``DIR/new/<unique>`` and optionally as one JSON line in ``--jsonl FILE``::

    {"mail_from": ..., "rcpt_tos": [...], "auth_user": str|null, "tls": bool,
     "received_at": <unix float>, "data_b64": <base64 raw bytes>,
     "session": <connection number, 1-based>, "data_command": <DATA number>}

Fault scripting (``--script SPEC``, repeatable; for each command the first
matching rule wins):

    N:CODE[:TEXT]            the N-th DATA command (1-based, counted over the
                             whole server life and over every connection,
                             including DATA commands that were answered with
                             a scripted failure) is answered CODE TEXT
    N-M:CODE[:TEXT]          DATA commands N to M (inclusive) are answered
                             CODE TEXT; N-M also works with drop and stall
    *:CODE[:TEXT]            every DATA command is answered CODE TEXT
    N:drop  / *:drop         after the content of the N-th DATA was received,
                             abort the connection without replying
    N:stall / *:stall        never reply to the N-th DATA (the client must
                             time out); the connection stays open.  Stall then
                             recover: "1:stall" or "1-3:stall" stalls those
                             DATA commands only; later ones (on the client's
                             new connections) are answered normally
    N:late=SECONDS / *:late=SECONDS
                             accept the N-th message as soon as its final dot
                             arrives (it is recorded, as a relay that queued
                             it), then wait SECONDS before answering 250: a
                             client that gives up first has delivered it all
                             the same (RFC 1047's duplicate)
    rcpt=SUBSTRING:CODE[:TEXT]
                             any RCPT TO whose address contains SUBSTRING
                             (case-insensitive) is answered CODE TEXT
    greeting=CODE[:TEXT]     every new connection gets CODE TEXT (default
                             "Service not available", e.g. "421 Service not
                             available" or "554 Service not available")
                             instead of 220 and is closed
    greeting@N=CODE[:TEXT]   the same for connections 1..N only; connection
                             N+1 and later get the normal 220 greeting
    ehlo=CODE[:TEXT]         EHLO and HELO are answered CODE TEXT (default
                             "5.7.1 Client host rejected: access denied" for
                             5xx, "4.7.1 Client host rejected: try again
                             later" for 4xx), as a server refusing the client;
                             the connection stays open (a 421 closes it), so
                             a later MAIL gets "503 Error: send HELO first"
    ehlo@N=CODE[:TEXT]       the same on connections 1..N only (both the EHLO
                             and a HELO fallback on those connections)
    mail=CODE[:TEXT]         every MAIL FROM is answered CODE TEXT (default
                             text by code as for DATA, e.g. 451, 552)
    mail@N=CODE[:TEXT]       the first N MAIL FROM commands (counted over the
                             server life, like DATA numbers) are answered
                             CODE TEXT, later ones normally
    mail[@N]=stall           never reply to MAIL FROM (all of them, or the
                             first N): the client times out before any of the
                             message was sent
    mail[@N]=drop            abort the connection at MAIL FROM, without a reply
    idle=SECONDS             a connection on which the server has been waiting
                             SECONDS for the client's next command gets
                             "421 4.4.2 <hostname> Error: timeout exceeded"
                             and is closed, as Postfix's smtpd_timeout does
                             (the clock runs only while the server waits for
                             input: not while it delays or stalls a reply)

In ``@N`` rules N counts what the rule answers: connections for greeting= and
ehlo= (a client's HELO fallback on a refused connection is refused too), MAIL
commands for mail=.  Any scripted 421 reply (DATA, RCPT, MAIL, EHLO/HELO,
greeting) closes the connection afterwards (RFC 5321 3.8).
``--delay S`` sleeps S seconds before answering each DATA (whatever the
answer), ``--stall-after N`` makes every DATA after the N-th one stall, and
``--lifetime S`` stops the server after S seconds.  SIGTERM/SIGINT exit 0.
EHLO advertises PIPELINING (RFC 2920), as Postfix does; ``--no-pipelining``
leaves it out, for clients that then send one command at a time.

Outages: ``CaptureServer.pause_listening()`` closes the listening socket (new
connections are refused, ECONNREFUSED; open connections are aborted unless
``drop_connections=False``) and ``resume_listening()`` listens again on the
same port.  From the command line SIGUSR1 pauses and SIGUSR2 resumes.

Counters for assertions (plain ints, read them from any thread):
``connections`` (accepted connections, refused greetings included),
``ehlo_commands`` (EHLO + HELO), ``mail_commands``, ``data_commands`` (DATA
commands whose content was received) and ``idle_timeouts`` (421s sent for
idleness).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import errno
import email
import email.policy
import itertools
import json
import logging
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword, syntax

log = logging.getLogger("capture-smtp")

DEFAULT_TEXT = {
    421: "4.3.2 Service not available, closing transmission channel",
    450: "4.2.0 Mailbox temporarily unavailable",
    451: "4.3.0 Requested action aborted: local error in processing",
    452: "4.3.1 Insufficient system storage",
    550: "5.1.1 Mailbox unavailable",
    552: "5.3.4 Message size exceeds fixed limit",
    553: "5.1.3 Mailbox name not allowed",
    554: "5.0.0 Transaction failed",
}

GREETING_TEXT = "Service not available"
EHLO_TEXT = {4: "4.7.1 Client host rejected: try again later", 5: "5.7.1 Client host rejected: access denied"}

_DATA_RULE = re.compile(
    r"^(?P<n>\d+|\*)(?:-(?P<m>\d+))?:(?P<what>drop|stall|late=(?P<late>\d+(?:\.\d*)?|\.\d+)|\d{3})(?::(?P<text>.*))?$", re.S)
_RCPT_RULE = re.compile(r"^rcpt=(?P<sub>.+?):(?P<code>\d{3})(?::(?P<text>.*))?$", re.S)
_LIMITED_RULE = re.compile(
    r"^(?P<kind>greeting|ehlo|mail)(?:@(?P<n>\d+))?=(?P<code>\d{3})(?::(?P<text>.*))?$", re.S)
_MAIL_FAULT = re.compile(r"^mail(?:@(?P<n>\d+))?=(?P<what>stall|drop)$")
_IDLE_RULE = re.compile(r"^idle=(?P<seconds>\d+(?:\.\d*)?|\.\d+)$")


def _reply(code: int, text: Optional[str]) -> str:
    if not text:
        text = DEFAULT_TEXT.get(code, "Scripted reply")
    return f"{code} {text}"


def _limited_reply(kind: str, code: int, text: Optional[str]) -> str:
    if text:
        return f"{code} {text}"
    if kind == "greeting":
        return f"{code} {GREETING_TEXT}"
    if kind == "ehlo" and code != 421 and code // 100 in EHLO_TEXT:
        return f"{code} {EHLO_TEXT[code // 100]}"
    return _reply(code, None)


@dataclass(frozen=True)
class DataRule:
    first: Optional[int]  # None = every DATA
    last: Optional[int]
    action: str  # "reply", "drop", "stall" or "late"
    reply: Optional[str] = None
    late: float = 0.0  # seconds before a "late" rule's 250

    def matches(self, n: int) -> bool:
        return self.first is None or self.first <= n <= self.last


@dataclass(frozen=True)
class LimitedRule:
    """A greeting=, ehlo= or mail= rule; `limit` None = always, else counts 1..limit. `reply` is the
    reply, or (mail= only) "stall" or "drop"."""

    limit: Optional[int]
    reply: str

    def matches(self, n: int) -> bool:
        return self.limit is None or n <= self.limit


@dataclass(frozen=True)
class RcptRule:
    substring: str
    reply: str


@dataclass
class Script:
    data: list
    rcpt: list
    greeting: list
    ehlo: list
    mail: list
    idle: Optional[float] = None  # seconds

    @classmethod
    def parse(cls, specs: Union[None, str, Iterable[str]]) -> "Script":
        if specs is None:
            specs = []
        elif isinstance(specs, str):
            specs = [specs]
        script = cls(data=[], rcpt=[], greeting=[], ehlo=[], mail=[])
        for spec in specs:
            if m := _MAIL_FAULT.match(spec):
                limit = None if m["n"] is None else int(m["n"])
                if limit == 0:
                    raise ValueError(f"bad --script {spec!r}: @N must be at least 1")
                script.mail.append(LimitedRule(limit, m["what"]))
            elif m := _LIMITED_RULE.match(spec):
                limit = None if m["n"] is None else int(m["n"])
                if limit == 0:
                    raise ValueError(f"bad --script {spec!r}: @N must be at least 1")
                rule = LimitedRule(limit, _limited_reply(m["kind"], int(m["code"]), m["text"]))
                getattr(script, m["kind"]).append(rule)
            elif m := _IDLE_RULE.match(spec):
                seconds = float(m["seconds"])
                if seconds <= 0:
                    raise ValueError(f"bad --script {spec!r}: idle needs a positive number of seconds")
                script.idle = seconds
            elif m := _RCPT_RULE.match(spec):
                script.rcpt.append(RcptRule(m["sub"].lower(), _reply(int(m["code"]), m["text"])))
            elif m := _DATA_RULE.match(spec):
                if m["n"] == "*":
                    if m["m"] is not None:
                        raise ValueError(f"bad --script {spec!r}: '*' takes no range")
                    first = last = None
                else:
                    first = int(m["n"])
                    last = first if m["m"] is None else int(m["m"])
                    if first == 0:
                        raise ValueError(f"bad --script {spec!r}: DATA numbers are 1-based")
                    if last < first:
                        raise ValueError(f"bad --script {spec!r}: empty range {first}-{last}")
                what = m["what"]
                if m["late"] is not None:
                    script.data.append(DataRule(first, last, "late", late=float(m["late"])))
                elif what in ("drop", "stall"):
                    script.data.append(DataRule(first, last, what))
                else:
                    script.data.append(DataRule(first, last, "reply", _reply(int(what), m["text"])))
            else:
                raise ValueError(
                    f"bad --script {spec!r}: expected N:CODE[:TEXT], N-M:CODE[:TEXT], *:CODE[:TEXT], "
                    "N:drop, N:stall, N:late=SECONDS, rcpt=SUBSTRING:CODE[:TEXT], greeting[@N]=CODE[:TEXT], "
                    "ehlo[@N]=CODE[:TEXT], mail[@N]=CODE[:TEXT], mail[@N]=stall|drop or idle=SECONDS"
                )
        return script

    @staticmethod
    def first_match(rules: list, n: int) -> Optional[str]:
        return next((r.reply for r in rules if r.matches(n)), None)


def _parse_auth(auth: Union[None, str, Sequence[str]]) -> Optional[tuple]:
    if auth is None or auth == "":
        return None
    if isinstance(auth, str):
        user, sep, password = auth.partition(":")
        if not sep:
            raise ValueError("--auth expects USER:PASS")
        return user, password
    user, password = auth
    return str(user), str(password)


class _CaptureSMTP(SMTP):
    """aiosmtpd's SMTP plus a connection number, connection-level faults, the
    idle timeout and tracking."""

    def __init__(self, capture: "CaptureServer", session_no: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.capture = capture
        self.session_no = session_no
        self._idle_handle: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._original_transport is None:  # not the STARTTLS re-entry
            self.capture._live.add(self)
        super().connection_made(transport)

    def connection_lost(self, error: Optional[Exception]) -> None:
        self.capture._live.discard(self)
        self._disarm_idle()
        super().connection_lost(error)

    # ------------------------------------------------------------ idle timeout
    # The clock runs from the moment a reply has been sent (the server now waits
    # for the client) until the client sends anything; a server that delays or
    # stalls its own reply is not idle.
    def data_received(self, data: bytes) -> None:
        self._disarm_idle()
        super().data_received(data)

    def _disarm_idle(self) -> None:
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None

    def _arm_idle(self) -> None:
        idle = self.capture._script.idle
        if idle is None or self.transport is None or self.transport.is_closing():
            return
        self._disarm_idle()
        self._idle_handle = self.loop.call_later(idle, self._idle_expired)

    def _idle_expired(self) -> None:
        self._idle_handle = None
        if self.transport is None or self.transport.is_closing():
            return
        self.capture.idle_timeouts += 1
        reply = f"421 4.4.2 {self.hostname} Error: timeout exceeded"
        log.info("session %d: idle for %ss -> %s", self.session_no, self.capture._script.idle, reply)
        self._writer.write(reply.encode("ascii") + b"\r\n")
        self.transport.close()  # flushes the reply first

    # ------------------------------------------------------------ faults
    async def _handle_client(self) -> None:
        greeting = Script.first_match(self.capture._script.greeting, self.session_no)
        if greeting is not None:
            log.info("session %d: greeting %s", self.session_no, greeting)
            await self.push(greeting)
            if self.transport is not None:
                self.transport.close()
            return
        await super()._handle_client()

    async def _refuse(self, command: str, reply: str) -> None:
        log.info("session %d: %s -> %s", self.session_no, command, reply)
        if reply.startswith("421"):
            await self.hang_up(reply)
        await self.push(reply)

    @syntax("EHLO hostname")
    async def smtp_EHLO(self, hostname: str) -> None:
        self.capture.ehlo_commands += 1
        reply = Script.first_match(self.capture._script.ehlo, self.session_no)
        if reply is not None and hostname:
            await self._refuse("EHLO", reply)
            return
        await super().smtp_EHLO(hostname)

    @syntax("HELO hostname")
    async def smtp_HELO(self, hostname: str) -> None:
        self.capture.ehlo_commands += 1
        reply = Script.first_match(self.capture._script.ehlo, self.session_no)
        if reply is not None and hostname:
            await self._refuse("HELO", reply)
            return
        await super().smtp_HELO(hostname)

    @syntax("MAIL FROM: <address>", extended=" [SP <mail-parameters>]")
    async def smtp_MAIL(self, arg: Optional[str]) -> None:
        self.capture.mail_commands += 1
        reply = Script.first_match(self.capture._script.mail, self.capture.mail_commands)
        if reply == "stall":
            log.info("session %d: MAIL -> stall", self.session_no)
            await asyncio.get_running_loop().create_future()
        if reply == "drop":
            log.info("session %d: MAIL -> drop", self.session_no)
            await self.hang_up()
        if reply is not None:
            await self._refuse("MAIL", reply)
            return
        await super().smtp_MAIL(arg)

    async def push(self, status) -> None:
        # Without --auth, behave like a server that has no AUTH extension at all
        # (aiosmtpd would otherwise advertise an always-failing AUTH after STARTTLS).
        if self.capture.auth is None and isinstance(status, str) and status.startswith("250-AUTH"):
            return
        await super().push(status)
        self._arm_idle()

    async def smtp_AUTH(self, arg: str) -> None:
        if self.capture.auth is None:
            await self.push("502 5.5.1 AUTH not supported")
            return
        await super().smtp_AUTH(arg)

    async def hang_up(self, reply: Optional[str] = None) -> None:
        """Optionally push `reply`, close the connection and never return."""
        if reply is not None:
            await self.push(reply)
        if self.transport is not None:
            if reply is None:
                self.transport.abort()
            else:
                self.transport.close()
        # connection_lost() cancels the task running this coroutine.
        await asyncio.get_running_loop().create_future()


class _Handler:
    def __init__(self, capture: "CaptureServer") -> None:
        self.capture = capture

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        if self.capture.pipelining:  # aiosmtpd reads commands one by one, so pipelined ones just queue
            responses.insert(len(responses) - 1, "250-PIPELINING")
        return responses

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        lowered = address.lower()
        for rule in self.capture._script.rcpt:
            if rule.substring in lowered:
                log.info("session %d: RCPT %s -> %s", server.session_no, address, rule.reply)
                if rule.reply.startswith("421"):
                    await server.hang_up(rule.reply)
                return rule.reply
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        capture = self.capture
        capture.data_commands += 1
        n = capture.data_commands
        rule = next((r for r in capture._script.data if r.matches(n)), None)
        if rule is None and capture.stall_after and n > capture.stall_after:
            rule = DataRule(None, None, "stall")
        if capture.delay:
            await asyncio.sleep(capture.delay)
        if rule is not None and rule.action == "late":
            # Recorded now, whatever happens to the connection while the reply waits.
            capture._record(server, session, envelope, n)
            log.info("session %d: DATA #%d -> 250 in %ss", server.session_no, n, rule.late)
            await asyncio.sleep(rule.late)
            return "250 2.0.0 OK: message accepted"
        if rule is not None:
            log.info("session %d: DATA #%d -> %s", server.session_no, n, rule.reply or rule.action)
            if rule.action == "drop":
                await server.hang_up()
            elif rule.action == "stall":
                await asyncio.get_running_loop().create_future()
            elif rule.reply.startswith("421"):
                await server.hang_up(rule.reply)
            return rule.reply
        capture._record(server, session, envelope, n)
        return "250 2.0.0 OK: message accepted"


class CaptureServer:
    """In-process capture SMTP server running its own event loop in a thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        maildir: Union[None, str, os.PathLike] = None,
        jsonl: Union[None, str, os.PathLike] = None,
        tls: Optional[Sequence[Union[str, os.PathLike]]] = None,
        require_starttls: bool = False,
        auth: Union[None, str, Sequence[str]] = None,
        script: Union[None, str, Iterable[str]] = None,
        delay: float = 0.0,
        stall_after: int = 0,
        lifetime: float = 0.0,
        hostname: str = "capture.herald.test",
        timeout: float = 300,
        pipelining: bool = True,
    ) -> None:
        self.host = host
        self.requested_port = int(port)
        self.maildir = Path(maildir) if maildir else None
        self.jsonl = Path(jsonl) if jsonl else None
        self.tls = tuple(tls) if tls else None
        if self.tls is not None and len(self.tls) != 2:
            raise ValueError("tls expects (certfile, keyfile)")
        self.require_starttls = bool(require_starttls)
        if self.require_starttls and self.tls is None:
            raise ValueError("--require-starttls needs --tls CERT KEY")
        self.auth = _parse_auth(auth)
        self._script = Script.parse(script)
        self.delay = float(delay)
        self.stall_after = int(stall_after)
        self.lifetime = float(lifetime)
        self.hostname = hostname
        self.timeout = timeout
        self.pipelining = bool(pipelining)

        self.port: Optional[int] = None
        self.connections = 0  # connections accepted so far (= last session number)
        self.ehlo_commands = 0  # EHLO and HELO commands, refused ones included
        self.mail_commands = 0  # MAIL FROM commands, refused ones included
        self.data_commands = 0  # DATA commands whose content was received
        self.idle_timeouts = 0  # connections closed with 421 for idleness (idle=SECONDS)
        self._records: list = []
        self._lock = threading.Lock()
        self._live: set = set()
        self._maildir_seq = itertools.count(1)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._server: Optional[asyncio.AbstractServer] = None
        self._tls_context: Optional[ssl.SSLContext] = None
        self.stopped = threading.Event()  # set once the server is down (stop() or lifetime)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> int:
        if self._thread is not None:
            raise RuntimeError("already started")
        if self.tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self._tls_context = ctx
        if self.maildir:
            for sub in ("tmp", "new", "cur"):
                (self.maildir / sub).mkdir(parents=True, exist_ok=True)
        if self.jsonl:
            self.jsonl.parent.mkdir(parents=True, exist_ok=True)
            self.jsonl.touch()

        started = threading.Event()
        failure: list = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen(self.requested_port))
            except BaseException as exc:  # report to start()
                failure.append(exc)
                started.set()
                loop.close()
                self.stopped.set()
                return
            if self.lifetime > 0:
                loop.call_later(self.lifetime, lambda: loop.create_task(self._shutdown("lifetime over")))
            started.set()
            try:
                loop.run_forever()
            finally:
                try:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                finally:
                    loop.close()
                    self.stopped.set()

        self._thread = threading.Thread(target=run, name="capture-smtp", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self.port

    async def _listen(self, port: int) -> None:
        # Bind exactly one address so that "--port 0" means one port.
        infos = await asyncio.get_running_loop().getaddrinfo(
            self.host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, sockaddr = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
        except BaseException:
            sock.close()
            raise
        self._server = await asyncio.get_running_loop().create_server(self._factory, sock=sock)
        self.port = self._server.sockets[0].getsockname()[1]

    # ---------------------------------------------------------------- outages
    @property
    def listening(self) -> bool:
        """False between pause_listening() and resume_listening()."""
        return self._server is not None

    def pause_listening(self, drop_connections: bool = True) -> None:
        """Simulate the relay going down: close the listening socket, so new
        connections are refused (ECONNREFUSED), and with `drop_connections`
        (default) abort the open ones. The port stays known (self.port) for
        resume_listening()."""
        self._run_in_loop(self._pause(drop_connections))

    def resume_listening(self, timeout: float = 5.0) -> None:
        """Listen again on the same port (retrying for up to `timeout` s while
        the address is still in use)."""
        self._run_in_loop(self._resume(timeout))

    async def _pause(self, drop_connections: bool) -> None:
        if self._server is not None:
            log.info("paused: no longer listening on port %s", self.port)
            self._server.close()  # closes the listening socket at once
            self._server = None
        if drop_connections:
            for proto in list(self._live):
                if proto.transport is not None:
                    proto.transport.abort()

    async def _resume(self, timeout: float) -> None:
        if self._server is not None:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                await self._listen(self.port)
                break
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        log.info("resumed: listening on port %s again", self.port)

    def _run_in_loop(self, coro) -> Any:
        loop = self._loop
        if self._thread is None or loop is None or self.stopped.is_set():
            coro.close()
            raise RuntimeError("the capture server is not running")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    def _factory(self) -> _CaptureSMTP:
        self.connections += 1
        kwargs: dict = dict(
            handler=_Handler(self),
            hostname=self.hostname,
            ident="Herald capture server",
            timeout=self.timeout,
            loop=self._loop,
        )
        if self._tls_context is not None:
            kwargs.update(tls_context=self._tls_context, require_starttls=self.require_starttls)
        if self.auth is not None:
            kwargs.update(
                authenticator=self._authenticate,
                auth_required=True,
                auth_require_tls=self._tls_context is not None,
            )
        log.info("session %d: connection", self.connections)
        return _CaptureSMTP(self, self.connections, **kwargs)

    def _authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            user = auth_data.login.decode("utf-8", "replace")
            password = auth_data.password.decode("utf-8", "replace")
            if (user, password) == self.auth:
                log.info("session %d: AUTH %s ok for %s", server.session_no, mechanism, user)
                return AuthResult(success=True, auth_data=user)
        log.info("session %d: AUTH %s rejected", server.session_no, mechanism)
        # handled=False: let aiosmtpd send "535 5.7.8 Authentication credentials invalid".
        return AuthResult(success=False, handled=False)

    async def _shutdown(self, why: str = "stopped") -> None:
        log.info("shutting down: %s", why)
        if self._server is not None:
            self._server.close()
        for proto in list(self._live):
            if proto.transport is not None:
                proto.transport.abort()
        await asyncio.sleep(0)
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.get_running_loop().stop()

    def stop(self) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if not self.stopped.is_set():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            except RuntimeError:  # loop already closed
                pass
        thread.join(timeout=10)

    def __enter__(self) -> "CaptureServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"smtp://{self.host}:{self.port}"

    # ---------------------------------------------------------------- records
    def _record(self, server: _CaptureSMTP, session, envelope, data_number: int) -> None:
        raw = bytes(envelope.original_content or b"")
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "auth_user": session.auth_data if session.authenticated else None,
            "tls": server._tls_protocol is not None,
            "received_at": time.time(),
            "data_b64": base64.b64encode(raw).decode("ascii"),
            "session": server.session_no,
            "data_command": data_number,
        }
        with self._lock:
            if self.maildir:
                name = "%.6f.P%dQ%d.%s" % (time.time(), os.getpid(), next(self._maildir_seq), socket.gethostname())
                tmp = self.maildir / "tmp" / name
                tmp.write_bytes(raw)
                os.replace(tmp, self.maildir / "new" / name)
            if self.jsonl:
                with open(self.jsonl, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
                    fh.flush()
            self._records.append(record)
        log.info(
            "session %d: accepted DATA #%d from %s to %s (%d bytes)",
            server.session_no, data_number, envelope.mail_from, ", ".join(envelope.rcpt_tos), len(raw),
        )

    @property
    def received_count(self) -> int:
        with self._lock:
            return len(self._records)

    def messages(self) -> list:
        """Accepted messages, oldest first, each a dict with the JSONL fields
        (minus data_b64) plus ``raw`` (bytes) and ``message`` (parsed with
        email.policy.default)."""
        with self._lock:
            records = list(self._records)
        out = []
        for rec in records:
            item = {k: v for k, v in rec.items() if k != "data_b64"}
            item["rcpt_tos"] = list(rec["rcpt_tos"])
            raw = base64.b64decode(rec["data_b64"])
            item["raw"] = raw
            item["message"] = email.message_from_bytes(raw, policy=email.policy.default)
            out.append(item)
        return out

    def wait_for_messages(self, count: int, timeout: float = 10.0) -> list:
        """Poll until at least `count` messages were accepted; raise on timeout."""
        deadline = time.monotonic() + timeout
        while self.received_count < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} messages, got {self.received_count} in {timeout}s")
            time.sleep(0.02)
        return self.messages()


def read_jsonl(path: Union[str, os.PathLike]) -> list:
    """Parse a --jsonl capture file into the same shape as CaptureServer.messages()."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        raw = base64.b64decode(rec.pop("data_b64"))
        rec["raw"] = raw
        rec["message"] = email.message_from_bytes(raw, policy=email.policy.default)
        out.append(rec)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    # A parent such as Foundation's Process may start us with signals blocked; unblock
    # them so terminating (and pausing/resuming) the server always works.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2})
    p = argparse.ArgumentParser(description="Scriptable capture SMTP server for Herald tests.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    p.add_argument("--maildir", metavar="DIR", help="write accepted messages to DIR/new/")
    p.add_argument("--jsonl", metavar="FILE", help="append one JSON line per accepted message")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="offer STARTTLS with this cert/key")
    p.add_argument("--require-starttls", action="store_true", help="refuse MAIL before STARTTLS")
    p.add_argument("--auth", metavar="USER:PASS", help="require AUTH PLAIN/LOGIN with these credentials")
    p.add_argument("--script", action="append", default=[], metavar="SPEC", help="fault script (repeatable)")
    p.add_argument("--delay", type=float, default=0.0, metavar="SECONDS", help="sleep before answering DATA")
    p.add_argument("--stall-after", type=int, default=0, metavar="N", help="never answer DATA commands after the N-th")
    p.add_argument("--lifetime", type=float, default=0.0, metavar="SECONDS", help="exit after SECONDS (0 = never)")
    p.add_argument("--no-pipelining", action="store_true", help="do not advertise PIPELINING (RFC 2920)")
    p.add_argument("-v", "--verbose", action="store_true", help="log sessions to stderr")
    args = p.parse_args(argv)

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not args.verbose:
        logging.getLogger("mail.log").setLevel(logging.ERROR)

    try:
        server = CaptureServer(
            host=args.host, port=args.port, maildir=args.maildir, jsonl=args.jsonl, tls=args.tls,
            require_starttls=args.require_starttls, auth=args.auth, script=args.script,
            delay=args.delay, stall_after=args.stall_after, lifetime=args.lifetime,
            pipelining=not args.no_pipelining,
        )
        port = server.start()
    except (ValueError, OSError, ssl.SSLError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    terminate = threading.Event()
    wake = threading.Event()
    outage: list = []  # SIGUSR1 (pause) / SIGUSR2 (resume) seen, handled by the loop below

    def on_signal(signum, frame):
        terminate.set()
        wake.set()

    def on_outage(signum, frame):
        outage.append(signum)
        wake.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGUSR1, on_outage)
    signal.signal(signal.SIGUSR2, on_outage)
    sys.stdout.write(f"READY {port}\n")
    sys.stdout.flush()
    while not (terminate.is_set() or server.stopped.is_set()):
        wake.wait(0.2)
        wake.clear()
        while outage and not terminate.is_set():
            signum = outage.pop(0)
            try:
                if signum == signal.SIGUSR1:
                    server.pause_listening()
                else:
                    server.resume_listening()
            except (OSError, RuntimeError) as exc:
                print(f"error: {exc}", file=sys.stderr)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
