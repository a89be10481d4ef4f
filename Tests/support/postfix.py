"""A real, private Postfix instance on loopback for Herald's end-to-end tests.

    from postfix import PostfixInstance, LMTPReceiver, rejecting_sink, postfix_available

    with rejecting_sink({"x@example.com": "550 5.1.1 <x@example.com>: Recipient address rejected: User unknown"}) as sink, \\
         LMTPReceiver() as lmtp, \\
         PostfixInstance(tmp_path, relay_port=sink.port,
                         transports={"bounces.test": f"lmtp:inet:127.0.0.1:{lmtp.port}"}) as pf:
        smtplib.SMTP("127.0.0.1", pf.port).sendmail(...)
        lmtp.wait_for_messages(1)       # the DSN
        pf.wait_until_queue_empty(timeout=30)

What the instance is (see PostfixInstance._main_cf for every setting and why):

* its own config_directory (DIR/postfix/etc, main.cf + master.cf written here),
  queue_directory (DIR/postfix/spool) and data_directory (DIR/postfix/data), started
  and stopped with ``postfix -c DIR/postfix/etc start|stop``.  The default instance
  (/etc/postfix, /var/spool/postfix) is never read, written or started: as root,
  ``postfix -c`` needs no alternate_config_directories entry in the default main.cf
  (which does not even exist on a "No configuration" Debian install).
* one smtpd on 127.0.0.1:<free port> (``pf.port``) accepting mail from 127.0.0.0/8
  to any domain; everything is relayed to ``relayhost = [127.0.0.1]:relay_port``
  except the domains in ``transports`` (texthash transport_maps); nothing is
  delivered locally; no DNS at all.
* a hard (5xx) rejection by the relay bounces at once: the DSN goes to the
  envelope sender, so a VERP sender in a ``transports`` domain comes back
  through that domain's transport (e.g. an LMTP receiver).
* short queue timers (a deferred message is retried after ~1-2 s), and the log
  in DIR/postfix/postfix.log via postlogd (``pf.log()``), which tests print on
  failure (``pf.log_tail()``).

Needs root (Postfix's master runs as root and its daemons as the `postfix`
user) and Debian's ``postfix`` package (/usr/sbin/postfix); ``postfix_available()``
says why not when it is missing, for pytest.skip.
"""

from __future__ import annotations

import asyncio
import atexit
import email
import email.policy
import errno
import os
import pwd
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from aiosmtpd.lmtp import LMTP

from smtp_server import CaptureServer

POSTFIX = "/usr/sbin/postfix"
POSTQUEUE = "/usr/sbin/postqueue"
MAIL_OWNER = "postfix"

# Queue directories that hold messages (the others hold per-message logs or sockets).
MESSAGE_QUEUES = ("maildrop", "incoming", "active", "deferred", "hold")


def postfix_available() -> Optional[str]:
    """None when a private Postfix instance can run here, else the reason it cannot."""
    if not os.path.isfile(POSTFIX) or not os.access(POSTFIX, os.X_OK):
        return f"{POSTFIX} is not installed (Debian package `postfix`)"
    if os.geteuid() != 0:
        return "a private Postfix instance needs root (its master runs as root)"
    try:
        pwd.getpwnam(MAIL_OWNER)
    except KeyError:
        return f"the `{MAIL_OWNER}` user does not exist (Debian's postfix package creates it)"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (callers retry when they lose the race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _ensure_traversable(path: Path) -> list:
    """Postfix's daemons run as `postfix` and chdir into queue_directory, so every
    ancestor of it must be searchable by others. pytest's base temp directory
    (/tmp/pytest-of-root) is 0700: add the search bit (o+x, never read) to the
    ancestors that lack it. Returns the directories changed."""
    changed = []
    for directory in reversed([path, *path.parents]):
        st = directory.stat()
        if not st.st_mode & stat.S_IXOTH:
            os.chmod(directory, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
            changed.append(directory)
    return changed


# Postfix's default master.cf minus the local/virtual/pipe deliveries, tlsmgr and
# postscreen, with chroot off everywhere: a chrooted daemon would need copies of
# /etc/{hosts,resolv.conf,services,...} inside the private queue directory.
_MASTER_CF = """\
# service type  private unpriv  chroot  wakeup  maxproc command + args
{smtpd_address} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


class PostfixError(RuntimeError):
    pass


class PostfixInstance:
    """A private Postfix instance under ``base_dir/postfix``; see the module docstring.

    ``transports``: domain (or ``.domain`` for subdomains, or a full address) ->
    transport:nexthop, e.g. ``{"bounces.test": "lmtp:inet:127.0.0.1:2400"}``.
    ``main_cf``: extra or overriding main.cf settings, e.g.
    ``{"maximal_queue_lifetime": "30s"}``.
    """

    START_ATTEMPTS = 5  # a free port can be taken by someone else before master binds it

    def __init__(
        self,
        base_dir: Union[str, os.PathLike],
        relay_port: int,
        transports: Optional[Mapping[str, str]] = None,
        *,
        main_cf: Optional[Mapping[str, Any]] = None,
        myhostname: str = "postfix.herald.test",
        port: int = 0,
        timeout: float = 30.0,
    ) -> None:
        self.root = Path(base_dir).resolve() / "postfix"
        self.config_dir = self.root / "etc"
        self.queue_dir = self.root / "spool"
        self.data_dir = self.root / "data"
        self.log_file = self.root / "postfix.log"
        self.relay_port = int(relay_port)
        self.transports: Dict[str, str] = dict(transports or {})
        self.extra_main_cf: Dict[str, Any] = dict(main_cf or {})
        self.myhostname = myhostname
        self.requested_port = int(port)
        self.timeout = timeout
        self.port: Optional[int] = None
        self.master_pid: Optional[int] = None
        self._master_start_time: Optional[str] = None
        self.chmodded: list = []  # ancestors given o+x (see _ensure_traversable)

    # ------------------------------------------------------------------ config
    def _main_cf(self) -> Dict[str, Any]:
        transport_file = self.config_dir / "transport"
        settings: Dict[str, Any] = {
            # Current defaults, no "backwards-compatible default setting" warnings.
            "compatibility_level": "3.6",
            # The private instance (config_directory is implied by `postfix -c`).
            "queue_directory": self.queue_dir,
            "data_directory": self.data_dir,
            "mail_owner": MAIL_OWNER,
            "setgid_group": "postdrop",
            "myhostname": self.myhostname,
            "mydomain": "herald.test",
            "myorigin": "$myhostname",
            # Listen on loopback only (the smtpd address itself is in master.cf).
            "inet_interfaces": "127.0.0.1",
            "inet_protocols": "ipv4",
            # Accept from loopback, for any domain: permit_mynetworks comes first.
            "mynetworks": "127.0.0.0/8",
            "smtpd_relay_restrictions": "permit_mynetworks, reject_unauth_destination",
            "smtpd_recipient_restrictions": "",
            # Nothing local: no local domains, no local recipients, no aliases.
            "mydestination": "",
            "local_recipient_maps": "",
            "local_transport": "error:5.1.1 local delivery is disabled in this test instance",
            "alias_maps": "",
            "alias_database": "",
            "relay_domains": "",
            "append_dot_mydomain": "no",
            "biff": "no",
            # Everything goes to the sink, except the transport_maps domains.
            "relayhost": f"[127.0.0.1]:{self.relay_port}",
            "transport_maps": f"texthash:{transport_file}",
            # No DNS anywhere: literal addresses and /etc/hosts only.
            "smtp_dns_support_level": "disabled",
            "lmtp_dns_support_level": "disabled",
            "smtp_host_lookup": "native",
            "lmtp_host_lookup": "native",
            "smtpd_peername_lookup": "no",
            "smtp_tls_security_level": "none",
            "lmtp_tls_security_level": "none",
            "smtpd_tls_security_level": "none",
            # A 5xx from the relay bounces at once (the default: soft_bounce = no);
            # 4xx retries come quickly.
            "soft_bounce": "no",
            "queue_run_delay": "1s",
            "minimal_backoff_time": "1s",
            "maximal_backoff_time": "2s",
            "maximal_queue_lifetime": "1h",
            "bounce_queue_lifetime": "1h",
            "delay_warning_time": "0h",
            # No artificial slowness.
            "in_flow_delay": "0s",
            "smtpd_error_sleep_time": "0s",
            "smtp_connect_timeout": "5s",
            "lmtp_connect_timeout": "5s",
            "default_destination_rate_delay": "0s",
            # Postmaster notices (the default classes, and double bounces, go to
            # postmaster@$myhostname) are discarded by the transport map instead of
            # being relayed to the sink: see _transport_map.
            "notify_classes": "resource, software",
            # Log to our own file through postlogd (master.cf "postlog").
            "maillog_file": self.log_file,
            "maillog_file_prefixes": self.root,
            "syslog_name": "postfix-herald",
        }
        settings.update(self.extra_main_cf)
        return settings

    def _transport_map(self) -> str:
        entries = dict(self.transports)
        entries.setdefault(self.myhostname, "discard:postmaster notices of the test instance")
        return "".join(f"{key} {value}\n" for key, value in entries.items())

    def _write_config(self, port: int) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        main = "".join(f"{key} = {value}\n" for key, value in self._main_cf().items())
        (self.config_dir / "main.cf").write_text(main, encoding="utf-8")
        (self.config_dir / "master.cf").write_text(
            _MASTER_CF.format(smtpd_address=f"127.0.0.1:{port}"), encoding="utf-8")
        (self.config_dir / "transport").write_text(self._transport_map(), encoding="utf-8")
        # `postfix` sleeps (7 x 0.3 s) while main.cf is less than ~2 s old, so that edits
        # made within the same second are not missed: backdate our freshly written files.
        past = time.time() - 10
        for name in ("main.cf", "master.cf", "transport"):
            os.utime(self.config_dir / name, (past, past))

    # ------------------------------------------------------------------ commands
    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAIL_")}
        env.setdefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def command(self, *argv: str, check: bool = True, timeout: Optional[float] = None) -> subprocess.CompletedProcess:
        """Run a Postfix command (postfix, postqueue, postconf, postsuper...) against this instance."""
        program = argv[0] if argv[0].startswith("/") else f"/usr/sbin/{argv[0]}"
        full = [program, "-c", str(self.config_dir), *argv[1:]]
        proc = subprocess.run(full, env=self._env(), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout or self.timeout)
        if check and proc.returncode != 0:
            raise PostfixError(
                f"{' '.join(full)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
                f"\n--- postfix log (tail)\n{self.log_tail()}")
        return proc

    def postconf(self, name: str) -> str:
        return self.command("postconf", "-h", name).stdout.strip()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "PostfixInstance":
        if self.master_pid is not None:
            raise PostfixError("already started")
        reason = postfix_available()
        if reason:
            raise PostfixError(reason)
        # config and queue directories: root, 0755; data_directory: the mail owner, 0700
        # (master.lock lives there). `postfix start` creates the queue subdirectories.
        owner = pwd.getpwnam(MAIL_OWNER)
        for directory, uid, gid, mode in ((self.root, 0, 0, 0o755), (self.config_dir, 0, 0, 0o755),
                                          (self.queue_dir, 0, 0, 0o755),
                                          (self.data_dir, owner.pw_uid, owner.pw_gid, 0o700)):
            directory.mkdir(parents=True, exist_ok=True)
            os.chown(directory, uid, gid)
            os.chmod(directory, mode)
        self.chmodded = _ensure_traversable(self.root)
        self.log_file.touch()
        last: Optional[Exception] = None
        for _ in range(self.START_ATTEMPTS if self.requested_port == 0 else 1):
            port = self.requested_port or free_port()
            self._write_config(port)
            proc = self.command("postfix", "start", check=False)
            if proc.returncode == 0:
                self.port = port
                self._record_master()
                _running.add(self)
                self._wait_listening()
                return self
            last = PostfixError(
                f"postfix -c {self.config_dir} start exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}\n--- postfix log (tail)\n{self.log_tail()}")
            self._kill_leftovers()  # a master that failed to initialize must not linger
            if "in use" not in (proc.stderr + self.log()):
                break
        raise last

    def _record_master(self) -> None:
        pid_file = self.queue_dir / "pid" / "master.pid"
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.master_pid = int(pid_file.read_text().split()[0])
                break
            except (OSError, ValueError, IndexError):
                if time.monotonic() > deadline:
                    raise PostfixError(f"no master pid in {pid_file}\n{self.log_tail()}")
                time.sleep(0.05)
        self._master_start_time = _start_time(self.master_pid)

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                    sock.settimeout(5)
                    banner = sock.recv(512)
                    if banner.startswith(b"220"):
                        sock.sendall(b"QUIT\r\n")
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise PostfixError(f"Postfix smtpd on 127.0.0.1:{self.port} never greeted\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the instance: `postfix stop` (waits up to ~5 s itself), then SIGKILL
        our master's process group if it is somehow still there. Idempotent."""
        try:
            if self.master_pid is None and not (self.queue_dir / "pid" / "master.pid").exists():
                return
            try:
                self.command("postfix", "stop", check=False, timeout=30)
            except subprocess.TimeoutExpired:
                pass
            self._kill_leftovers()
        finally:
            self.master_pid = None
            _running.discard(self)

    def _kill_leftovers(self) -> None:
        """Wait for our master and its daemons (master's process group: it calls
        setsid) to be gone; SIGKILL them after 10 s."""
        pid, started = self.master_pid, self._master_start_time
        if pid is None:  # e.g. a start that failed half-way: take the pid file's word
            try:
                pid = int((self.queue_dir / "pid" / "master.pid").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                return
            if not _is_master_of(pid, self.config_dir):
                return
            started = _start_time(pid)
        deadline = time.monotonic() + 10
        while _alive(pid, started) or _postfix_group(pid):
            if time.monotonic() > deadline:
                for target in ([pid] if _alive(pid, started) else []) + _postfix_group(pid):
                    try:
                        os.kill(target, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.2)
                survivors = ([pid] if _alive(pid, started) else []) + _postfix_group(pid)
                if survivors:
                    raise PostfixError(f"Postfix processes {survivors} survived SIGKILL")
                return
            time.sleep(0.05)

    def __enter__(self) -> "PostfixInstance":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.master_pid is not None and _alive(self.master_pid, self._master_start_time)

    # ------------------------------------------------------------------ queue
    def queue_files(self) -> list:
        """Queue files of messages not yet done (maildrop, incoming, active, deferred, hold)."""
        out = []
        for name in MESSAGE_QUEUES:
            base = self.queue_dir / name
            if base.is_dir():
                for dirpath, _, files in os.walk(base):
                    out += [os.path.join(dirpath, f) for f in files]
        return out

    def flush(self) -> None:
        """Retry deferred mail now (postqueue -f)."""
        self.command("postqueue", "-f")

    def queue_listing(self) -> str:
        """`postqueue -p` output, for failure messages."""
        proc = self.command("postqueue", "-p", check=False)
        return proc.stdout + proc.stderr

    def wait_until_queue_empty(self, timeout: float = 30.0) -> None:
        """Wait until every message was delivered, bounced or discarded.
        A bounced message leaves the queue only after its DSN was queued, so an
        empty queue also means the DSNs were delivered."""
        deadline = time.monotonic() + timeout
        while self.queue_files():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Postfix queue not empty after {timeout}s: {self.queue_files()}\n"
                    f"{self.queue_listing()}\n--- postfix log (tail)\n{self.log_tail()}")
            time.sleep(0.1)

    # ------------------------------------------------------------------ log
    def log(self) -> str:
        try:
            return self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def wait_for_log(self, needle: str, timeout: float = 10.0) -> str:
        """Wait for `needle` in the log (postlogd writes asynchronously); returns the log."""
        deadline = time.monotonic() + timeout
        while needle not in (text := self.log()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{needle!r} not in the Postfix log after {timeout}s\n{self.log_tail()}")
            time.sleep(0.05)
        return text


def _start_time(pid: int) -> Optional[str]:
    """Field 22 of /proc/PID/stat (start time), to tell a pid from a recycled one."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return data.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, start_time: Optional[str]) -> bool:
    current = _start_time(pid)
    if current is None:
        return False
    if start_time is not None and current != start_time:
        return False  # the pid was recycled
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_DAEMON_DIR = "/usr/lib/postfix/sbin"


def _postfix_group(pgid: int) -> list:
    """Live (non-zombie) Postfix programs in process group `pgid` (our master's group)."""
    try:
        names = set(os.listdir(_DAEMON_DIR))
    except OSError:
        names = set()
    names |= {"master", "postlogd", "postfix", "postfix-script"}
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = data[data.index("(") + 1:data.rindex(")")]
        fields = data.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid and comm in names:
            out.append(int(entry))
    return out


def _is_master_of(pid: int, config_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return (bool(cmdline) and cmdline[0].endswith(b"master")
            and f"MAIL_CONFIG={config_dir}".encode() in environ)


# Instances still running when the interpreter exits (a test that forgot its
# `with`, or an interrupted session) are stopped, so no master outlives pytest.
_running: set = set()


@atexit.register
def _stop_all() -> None:
    for instance in list(_running):
        try:
            instance.stop()
        except Exception:
            pass


# --------------------------------------------------------------------------- sink
def rejecting_sink(rejections: Mapping[str, str], **options: Any) -> CaptureServer:
    """A CaptureServer (Tests/support/smtp_server.py) that answers RCPT TO for each
    address in `rejections` (case-insensitive substring match, as its
    ``rcpt=`` script rule) with the given full reply, e.g.
    ``{"x@example.com": "550 5.1.1 <x@example.com>: Recipient address rejected: User unknown"}``,
    and accepts every other recipient, recording accepted messages
    (``.messages()``, ``.wait_for_messages(n)``). Not started: use it as a context manager."""
    script = list(options.pop("script", []) or [])
    for address, reply in rejections.items():
        code, _, text = reply.strip().partition(" ")
        if not (len(code) == 3 and code.isdigit()):
            raise ValueError(f"reply for {address!r} must start with a 3-digit code: {reply!r}")
        script.append(f"rcpt={address}:{code}:{text}" if text else f"rcpt={address}:{code}")
    return CaptureServer(script=script, **options)


# --------------------------------------------------------------------------- LMTP
class _LMTPHandler:
    def __init__(self, receiver: "LMTPReceiver") -> None:
        self.receiver = receiver

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        self.receiver._record(envelope)
        # LMTP answers DATA once per accepted recipient (RFC 2033 4.2); aiosmtpd's LMTP
        # sends one reply line, so hand it all of them (it appends the final CRLF).
        return "\r\n".join(["250 2.0.0 OK: delivered"] * len(envelope.rcpt_tos))


class LMTPReceiver:
    """An LMTP server (aiosmtpd.lmtp.LMTP) on 127.0.0.1:<free port> in its own thread,
    accepting everything and recording each message as a dict with ``mail_from``,
    ``rcpt_tos``, ``raw`` (bytes) and ``message`` (parsed, email.policy.default)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, hostname: str = "lmtp.herald.test") -> None:
        self.host, self.requested_port, self.hostname = host, int(port), hostname
        self.port: Optional[int] = None
        self._records: list = []
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._server: Optional[asyncio.AbstractServer] = None

    def _record(self, envelope) -> None:
        raw = bytes(envelope.original_content or b"")
        with self._lock:
            self._records.append({"mail_from": envelope.mail_from, "rcpt_tos": list(envelope.rcpt_tos), "raw": raw})

    def messages(self) -> list:
        with self._lock:
            records = [dict(r) for r in self._records]
        for rec in records:
            rec["message"] = email.message_from_bytes(rec["raw"], policy=email.policy.default)
        return records

    def wait_for_messages(self, count: int, timeout: float = 15.0) -> list:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                n = len(self._records)
            if n >= count:
                return self.messages()
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} LMTP messages, got {n} in {timeout}s")
            time.sleep(0.05)

    def start(self) -> int:
        started = threading.Event()
        failure: list = []
        handler = _LMTPHandler(self)

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(loop.create_server(
                    lambda: LMTP(handler, hostname=self.hostname, ident="Herald LMTP stand-in", loop=loop),
                    host=self.host, port=self.requested_port, reuse_address=True))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="lmtp-receiver", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self.port

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.get_running_loop().stop()

    def stop(self) -> None:
        if self._thread is None or self._loop is None or self._loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        except RuntimeError:
            pass
        self._thread.join(timeout=10)

    def __enter__(self) -> "LMTPReceiver":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
