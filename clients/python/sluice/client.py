"""The sluice client: HTTP transport with failover, claims, holds and events.

Everything here uses the Python standard library only.
"""
from __future__ import annotations

import functools
import http.client
import json
import os
import random
import re
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from . import _tls

Duration = Union[int, float, str]
"""A duration: seconds as a number, or a string such as ``"250ms"``, ``"30s"``, ``"1h30m"``."""

SemaphoreSpec = Union[int, Sequence[int], Mapping[str, int]]
"""What a semaphore takes in ``semaphores={name: spec}``: its slots (``2``), its slots and
an inline limit (``(1, 4)``), or ``{"slots": 1, "limit": 4}`` (either key may be left out)."""

GroupSpec = Union[str, Sequence[Optional[str]], Mapping[str, Optional[str]]]
"""One of ``groups=[...]``: a name (``"repo-x"``), ``(name, cancel)``, or
``{"name": "pr-12", "cancel": "in-progress"}``."""

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_SERVER = "http://127.0.0.1:7700"
#: Claim states in which the claim is still alive.
LIVE_STATES = ("pending", "held", "revoking")
#: 503 codes that mean "ask again, maybe elsewhere".
RETRY_CODES = ("no_leader", "leader_changed", "not_leader", "unavailable",
               "leader_unverified")
MAX_WAIT_S = 30.0  # the server's default cap on one long poll (max_wait)
#: The lease :meth:`Client.acquire` and :meth:`Client.hold` send unless told otherwise: the
#: ``sluice`` command's default (docs/cli.md), so that a claim whose script died ends by itself.
DEFAULT_LEASE = "30s"
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 1.0


# --------------------------------------------------------------------------- errors


class SluiceError(Exception):
    """An error answered by the API (``{"error": {"code", "message"}}``) or met on the way.

    :ivar status: the HTTP status, or ``None`` for an error of the client's own (no server
        answered, a wait ran out, the client is closed).
    :ivar code: the API's error code, such as ``bad_request`` or ``conflict``.
    :ivar message: the API's message in words.
    """

    def __init__(self, status: Optional[int], code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class BadRequest(SluiceError):
    """400, 413 or 422: the request was refused as it was written."""


class Unauthorized(SluiceError):
    """401 or 403: no token, an unknown token, or a token that may not do this."""


class NotFound(SluiceError):
    """404: no such claim or lock."""


class Conflict(SluiceError):
    """409: the claim cannot do that in its state (renewing an ended claim, a reused key)."""


class ClaimEnded(Conflict):
    """The claim ended (canceled, superseded, expired, ...) while it was waited on.

    :ivar claim: the claim as last read.
    """

    def __init__(self, claim: "Claim") -> None:
        super().__init__(409, "claim_ended",
                         f"claim {claim.id} is {claim.state}: {claim.raw.get('reason') or ''}")
        self.claim = claim


class Unavailable(SluiceError):
    """503 (or no server reachable) after every retry of the failover."""


class TLSError(SluiceError):
    """The TLS files could not be read, or a TLS handshake failed in a way that trying again
    cannot mend: the server's certificate not accepted (``code`` ``tls_verify``), this
    client refused for its certificate or the lack of one (``tls_refused``), a server that
    does not answer in TLS (``tls_protocol``), another handshake failure
    (``tls_handshake``), or a file that cannot be read (``tls_files``). ``status`` is
    ``None``; the message says what failed and how to mend it.

    :ivar ssl_error: the :class:`ssl.SSLError` it comes from, if any.
    """

    def __init__(self, code: str, message: str,
                 ssl_error: Optional[BaseException] = None) -> None:
        super().__init__(None, code, message)
        self.ssl_error = ssl_error


class Timeout(SluiceError, TimeoutError):
    """A wait ran out while the claim was still pending (also a :class:`TimeoutError`).

    :ivar claim: the claim that waited, as last read (``None`` when not known).
    """

    def __init__(self, status: Optional[int], code: str, message: str,
                 claim: Optional["Claim"] = None) -> None:
        super().__init__(status, code, message)
        self.claim = claim


def _error_for(status: int, code: str, message: str) -> SluiceError:
    if code == "unknown_semaphore":
        # The server's words name the HTTP way; say the Python way too.
        message += ("; from Python: client.set_semaphore(NAME, LIMIT), or an inline limit "
                    "semaphores={NAME: (SLOTS, LIMIT)}")
    if status in (400, 413, 414, 422, 431):
        return BadRequest(status, code, message)
    if status in (401, 403):
        return Unauthorized(status, code, message)
    if status == 404:
        return NotFound(status, code, message)
    if status == 409:
        return Conflict(status, code, message)
    if status in (502, 503):
        return Unavailable(status, code, message)
    return SluiceError(status, code, message)


# --------------------------------------------------------------------------- durations

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s)")


def parse_duration(value: Optional[Duration]) -> Optional[float]:
    """Seconds for a duration given as a number of seconds or a string (``"1m30s"``, ``"250ms"``).

    ``None`` stays ``None``. Raises :class:`ValueError` on a string that is not a duration.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a duration may not be negative: {value!r}")
        return float(value)
    text = value.strip()
    try:
        return parse_duration(float(text))
    except ValueError:
        pass
    total, pos = 0.0, 0
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m:
            raise ValueError(f"not a duration: {value!r} (write e.g. 250ms, 30s, 1h30m)")
        total += float(m.group(1)) * scale[m.group(2)]
        pos = m.end()
    if not text:
        raise ValueError("an empty duration")
    return total


def _wire_duration(value: Duration) -> Union[str, float]:
    """A duration as the API takes it: strings pass as they are (the server checks them and
    says what is wrong), numbers are seconds."""
    if isinstance(value, str):
        return value
    return float(parse_duration(value) or 0.0)


def _query_duration(seconds: float) -> str:
    return f"{max(0, int(round(seconds * 1000)))}ms"


# --------------------------------------------------------------------------- claims


class Claim:
    """A claim as the server last described it.

    :ivar id: the claim's id.
    :ivar state: ``pending``, ``held``, ``revoking`` or an ended state (``released``,
        ``withdrawn``, ``expired``, ``timed_out``, ``superseded``, ``canceled``); or
        ``unknown`` when :meth:`Client.hold` lost touch with the server for longer than
        the lease (the server may have ended the claim and granted its locks to another:
        it is no longer held as far as the client can tell).
    :ivar holder: who claims.
    :ivar raw: the claim's JSON as a dict.
    :ivar lost: a :class:`threading.Event` that :meth:`Client.hold` sets when the claim is
        lost (revoked, canceled, expired) while held.
    :ivar replayed: whether the creation was answered as an idempotent replay.
    """

    def __init__(self, raw: Mapping[str, Any], replayed: bool = False) -> None:
        self.raw: Dict[str, Any] = dict(raw)
        self.lost = threading.Event()
        self.replayed = replayed
        self._lock = threading.Lock()
        # (state, reason) the client concluded without the server's word; a read replaces it
        self._verdict: Optional[Tuple[str, str]] = None

    def _update(self, raw: Mapping[str, Any]) -> "Claim":
        with self._lock:
            self.raw = dict(raw)
            self._verdict = None
        return self

    def _conclude(self, state: str, reason: str) -> None:
        with self._lock:
            self._verdict = (state, reason)

    @property
    def id(self) -> str:
        """The claim's id (22 characters, sorting by creation time)."""
        return str(self.raw["id"])

    @property
    def state(self) -> str:
        """The claim's state as last read (``unknown`` once the server was out of reach
        for longer than the lease)."""
        verdict = self._verdict
        return verdict[0] if verdict else str(self.raw.get("state"))

    @property
    def holder(self) -> Optional[str]:
        """The claim's holder name."""
        h = self.raw.get("holder")
        return None if h is None else str(h)

    @property
    def reason(self) -> str:
        """Why the claim is in its state, in words."""
        verdict = self._verdict
        return verdict[1] if verdict else str(self.raw.get("reason") or "")

    @property
    def locks(self) -> List[Dict[str, Any]]:
        """The claim's locks: ``{"kind", "name", "slots", "token", "position"}`` each, and
        ``"limit"`` on a semaphore the claim gave an inline limit."""
        return list(self.raw.get("locks") or [])

    @property
    def groups(self) -> List[Dict[str, str]]:
        """A claim in several groups: ``{"name", "cancel"}`` each, in order. Empty for a
        claim in one group or none (``raw["group"]`` names its one)."""
        return [dict(g) for g in self.raw.get("groups") or []]

    @property
    def tokens(self) -> Dict[str, int]:
        """The fencing token of each lock by name, once granted (empty while pending)."""
        return {str(l["name"]): int(l["token"]) for l in self.locks if l.get("token") is not None}

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the claim's first lock, or None (pending, or no locks)."""
        for l in self.locks:
            if l.get("token") is not None:
                return int(l["token"])
        return None

    @property
    def lease(self) -> float:
        """The claim's lease in seconds (0 for none)."""
        return parse_duration(self.raw.get("lease") or 0) or 0.0

    @property
    def held(self) -> bool:
        """Whether the claim is held (granted and not revoked)."""
        return self.state == "held"

    @property
    def live(self) -> bool:
        """Whether the claim is pending, held or revoking."""
        return self.state in LIVE_STATES

    def __repr__(self) -> str:
        return (f"Claim(id={self.id!r}, state={self.state!r}, holder={self.holder!r}, "
                f"tokens={self.tokens!r})")


ClaimRef = Union[Claim, str]


class Semaphore(Dict[str, Any]):
    """A semaphore as the server shows it: the API's JSON object (a ``dict``, as
    ``set_semaphore`` always answered), with its rules as attributes too. A rule that is
    off reads ``False``, ``None`` or ``{}``; durations are seconds."""

    @property
    def name(self) -> str:
        return str(self["name"])

    @property
    def limit(self) -> int:
        return int(self.get("limit", 0))

    @property
    def strategy(self) -> str:
        return str(self.get("strategy", "strict"))

    @property
    def inline(self) -> bool:
        """Made by its claims' inline limit, with no configuration."""
        return bool(self.get("inline", False))

    @property
    def preempt(self) -> bool:
        return bool(self.get("preempt", False))

    @property
    def preempt_grace(self) -> Optional[float]:
        """Seconds, with ``preempt``; else ``None``."""
        return parse_duration(self.get("preempt_grace"))

    @property
    def max_pending(self) -> Optional[int]:
        """At most this many waiters; ``None`` for no bound."""
        return self.get("max_pending")

    @property
    def on_full(self) -> Optional[str]:
        """``"reject"`` or ``"drop_oldest"`` with a ``max_pending``; else ``None``."""
        return self.get("on_full")

    @property
    def weights(self) -> Dict[str, int]:
        """Each listed rebalance key's weight (rebalanced semaphores; else ``{}``)."""
        return dict(self.get("weights") or {})

    @property
    def default_weight(self) -> Optional[int]:
        """The other keys' weight on a rebalanced semaphore; else ``None``."""
        return self.get("default_weight")

    @property
    def rate(self) -> Optional[str]:
        """``"N/PERIOD"``, or ``None``."""
        return self.get("rate")

    @property
    def burst(self) -> Optional[int]:
        """The rate's bucket size, with a ``rate``; else ``None``."""
        return self.get("burst")

    @property
    def backdate(self) -> float:
        """Seconds a claim on it may set ``created`` back (0 unless set)."""
        return parse_duration(self.get("backdate") or 0) or 0.0

    @property
    def overtake_limit(self) -> Optional[float]:
        """Seconds, on a skip semaphore; else ``None``."""
        return parse_duration(self.get("overtake_limit"))


def _semaphore_lock(name: str, spec: SemaphoreSpec) -> Dict[str, Any]:
    """One semaphore of ``semaphores={name: spec}`` as the API takes it."""
    lock: Dict[str, Any] = {"semaphore": name}
    slots: Any
    limit: Any
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"slots", "limit"}
        if unknown:
            raise ValueError(f"semaphore {name!r}: unknown keys {sorted(unknown)} "
                             f"(it takes slots and limit)")
        slots, limit = spec.get("slots"), spec.get("limit")
    elif isinstance(spec, (tuple, list)):
        if len(spec) != 2:
            raise ValueError(f"semaphore {name!r}: give (slots, limit), not {spec!r}")
        slots, limit = spec
    else:
        slots, limit = spec, None
    if slots is not None:
        lock["slots"] = int(slots)
    if limit is not None:
        lock["limit"] = int(limit)
    return lock


def _group(spec: GroupSpec) -> Dict[str, str]:
    """One of ``groups=[...]`` as the API takes it."""
    if isinstance(spec, str):
        return {"name": spec}
    if isinstance(spec, Mapping):
        g = {"name": str(spec["name"])}
        if spec.get("cancel") is not None:
            g["cancel"] = str(spec["cancel"])
        return g
    name, cancel = spec
    return {"name": str(name)} if cancel is None else {"name": str(name), "cancel": str(cancel)}


def _claim_id(claim: ClaimRef) -> str:
    return claim.id if isinstance(claim, Claim) else str(claim)


def default_holder() -> str:
    """The default holder name, ``HOST/PID``."""
    return f"{socket.gethostname()}/{os.getpid()}"


# --------------------------------------------------------------------------- transport


class _Response:
    def __init__(self, status: int, headers: Dict[str, str], body: Any) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class _Retryable(Exception):
    def __init__(self, error: SluiceError, retry_after: Optional[float] = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _split_servers(servers: Union[str, Sequence[str], None]) -> List[str]:
    if servers is None:
        servers = os.environ.get("SLUICE_SERVER") or DEFAULT_SERVER
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for i, item in enumerate(items, 1):
        url = item.strip().rstrip("/")
        if not url:
            raise ValueError(f"server entry {i} is empty")
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server entry {i} ({item!r}) is not an http:// or https:// URL")
        out.append(url)
    if not out:
        raise ValueError("no server given")
    return out


class Client:
    """A client of one sluice cluster.

    :param servers: the server's URL, or several (a list, or one string separated by commas):
        requests go to the server that answered last, and move on to the next one when it
        cannot be reached or answers that the cluster is between leaders. Default:
        ``$SLUICE_SERVER``, else ``http://127.0.0.1:7700``.
    :param token: a bearer token (default ``$SLUICE_TOKEN``).
    :param timeout: seconds one attempt may take beyond the long poll it waits on.
    :param retry_for: seconds the failover keeps trying before it gives up (about 15).
    :param ssl_context: for ``https://`` servers, the :class:`ssl.SSLContext` to use as it is
        (its CAs, its client certificate); not with ``cafile``, ``certfile`` or ``keyfile``,
        and the ``SLUICE_CACERT``, ``SLUICE_CERT`` and ``SLUICE_KEY`` variables are not read.
    :param cafile: for ``https://`` servers, the CA certificates (PEM) the server's
        certificate is checked against, instead of the system's (default ``$SLUICE_CACERT``).
    :param certfile: for servers that ask for client certificates (mTLS): this client's
        certificate (PEM; default ``$SLUICE_CERT``).
    :param keyfile: the private key (PEM) of ``certfile`` (default ``$SLUICE_KEY``, else read
        from ``certfile``'s file). A key without a certificate raises :class:`ValueError`.

    Without ``ssl_context`` the client makes one as ``ssl.create_default_context`` does: the
    server's certificate and name are checked. A file that cannot be read raises
    :class:`TLSError` (code ``tls_files``) here, when a server is ``https://``.

    A client is a context manager: ``with sluice.Client() as client: ...`` closes it at the
    end (:meth:`close`).
    """

    def __init__(self, servers: Union[str, Sequence[str], None] = None, token: Optional[str] = None,
                 timeout: float = 30.0, retry_for: float = 15.0, *,
                 ssl_context: Optional[ssl.SSLContext] = None, cafile: Optional[str] = None,
                 certfile: Optional[str] = None, keyfile: Optional[str] = None) -> None:
        self.servers = _split_servers(servers)
        self._tls_files, self._ssl_context = self._tls_setup(ssl_context, cafile, certfile, keyfile)
        self.token = token if token is not None else (os.environ.get("SLUICE_TOKEN") or None)
        self.timeout = float(timeout)
        self.retry_for = float(retry_for)
        self._current = 0
        self._lock = threading.Lock()
        self._closed = False
        # the holds still open: claim id -> (claim, its keeper's stop event)
        self._holds: Dict[str, Tuple[Claim, threading.Event]] = {}

    def _tls_setup(self, ssl_context: Optional[ssl.SSLContext], cafile: Optional[str],
                   certfile: Optional[str], keyfile: Optional[str],
                   ) -> Tuple[Optional[_tls.TLSFiles], Optional[ssl.SSLContext]]:
        """The TLS files (None with a context given) and the context, made only when a
        server is https:// (a variable set for another program leaves http:// alone)."""
        if ssl_context is not None:
            if cafile or certfile or keyfile:
                raise ValueError("give either ssl_context or cafile/certfile/keyfile, not both: "
                                 "load the files into the context (load_verify_locations, "
                                 "load_cert_chain)")
            return None, ssl_context
        files = _tls.tls_files(cafile, certfile, keyfile)
        if all(urllib.parse.urlsplit(s).scheme != "https" for s in self.servers):
            return files, None
        try:
            return files, _tls.make_context(files)
        except ValueError as e:
            raise TLSError("tls_files", str(e)) from None

    def close(self) -> None:
        """Close the client: the claims of holds still open are released (their keepers
        stop), and later requests raise :class:`SluiceError` with the code ``closed``.
        Closing again does nothing. The client keeps no connection open between requests,
        so there is nothing else to free."""
        with self._lock:
            holds = list(self._holds.values())
            self._holds.clear()
        for claim, stop in holds:
            stop.set()
            try:
                self.release(claim)
            except SluiceError:
                pass  # its lease ends it
        self._closed = True

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SluiceError(None, "closed", "this client is closed; make a new sluice.Client")

    # ------------------------------------------------------------ HTTP

    @property
    def server(self) -> str:
        """The server requests go to first: the one that answered last."""
        return self.servers[self._current]

    def _headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "sluice-python/0.1"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if extra:
            h.update(extra)
        return h

    def _connect(self, server: str, timeout: float) -> http.client.HTTPConnection:
        parts = urllib.parse.urlsplit(server)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port,
                                               timeout=timeout, context=self._ssl_context)
        return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                          timeout=timeout)

    def _unreachable(self, server: str, e: BaseException) -> SluiceError:
        """What a failed connection means: a :class:`TLSError` when trying again cannot mend
        it (a certificate refused, no TLS), else :class:`Unavailable` for the failover."""
        tls = _tls.explain(e, server, self._tls_files)
        if tls is not None:
            return TLSError(tls[0], tls[1], e)
        hint = ""
        if (isinstance(e, http.client.RemoteDisconnected)
                and urllib.parse.urlsplit(server).scheme == "http"):
            # What a server that serves HTTPS does to a plain HTTP request.
            hint = " (if the server serves HTTPS, use an https:// URL)"
        return Unavailable(None, "unreachable", f"cannot reach {server}: {e}{hint}")

    def _once(self, server: str, method: str, path: str, body: Optional[bytes],
              headers: Dict[str, str], timeout: float) -> _Response:
        """One attempt on one server; connection trouble and 'ask elsewhere' raise _Retryable."""
        base = urllib.parse.urlsplit(server).path.rstrip("/")
        conn = self._connect(server, timeout)
        try:
            try:
                conn.request(method, base + path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                error = self._unreachable(server, e)
                if isinstance(error, TLSError):
                    raise error from None
                raise _Retryable(error)
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        parsed: Any = None
        if data:
            try:
                parsed = json.loads(data.decode("utf-8"))
            except ValueError:
                parsed = None
        err = parsed.get("error") if isinstance(parsed, dict) else None
        if resp.status >= 400 or isinstance(err, dict):
            code = str(err.get("code", "")) if isinstance(err, dict) else ""
            message = str(err.get("message", "")) if isinstance(err, dict) else data.decode("utf-8", "replace")
            status = resp.status if resp.status >= 400 else 503
            error = _error_for(status, code or "error", message)
            if status == 502 or (status == 503 and code in RETRY_CODES):
                ra = None
                try:
                    ra = float(hdrs.get("retry-after", ""))
                except ValueError:
                    pass
                raise _Retryable(error, ra)
            raise error
        return _Response(resp.status, hdrs, parsed)

    def _request(self, method: str, path: str, body: Any = None,
                 query: Optional[Mapping[str, Any]] = None,
                 headers: Optional[Mapping[str, str]] = None, wait: float = 0.0,
                 retry_for: Optional[float] = None) -> _Response:
        """Send a request with failover; return the answer or raise a SluiceError.
        ``retry_for`` bounds the failover below the client's own (the keeper's lease)."""
        self._check_open()
        retry_s = self.retry_for if retry_for is None else min(retry_for, self.retry_for)
        if query:
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode("utf-8")
        hdrs = self._headers(headers)
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        deadline = time.monotonic() + retry_s + wait
        backoff = BACKOFF_FIRST_S
        attempts = 0
        with self._lock:
            index = self._current
        round_start = index
        while True:
            attempts += 1
            server = self.servers[index]
            try:
                resp = self._once(server, method, path, data, hdrs, self.timeout + wait)
            except _Retryable as r:
                now = time.monotonic()
                if now >= deadline:
                    e = r.error
                    raise Unavailable(e.status, e.code,
                                      f"none of the {len(self.servers)} servers answered in "
                                      f"{retry_s + wait:.1f} s ({attempts} attempts); "
                                      f"the last: {e.message}") from None
                index = (index + 1) % len(self.servers)
                if r.retry_after is not None or index == round_start or r.error.status:
                    pause = r.retry_after if r.retry_after is not None else backoff
                    time.sleep(max(0.0, min(pause, deadline - now)))
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
                    round_start = index
                continue
            except SluiceError:
                with self._lock:
                    self._current = index
                raise
            with self._lock:
                self._current = index
            return resp

    # ------------------------------------------------------------ claims

    def acquire(self, mutex: Union[str, Sequence[str], None] = None,
                semaphores: Union[Mapping[str, SemaphoreSpec], Sequence[str], None] = None,
                tags: Optional[Mapping[str, str]] = None, group: Optional[str] = None,
                cancel: Optional[str] = None, holder: Optional[str] = None,
                priority: Optional[int] = None,
                lease: Optional[Duration] = DEFAULT_LEASE,
                timeout: Optional[Duration] = None, wait: Optional[Duration] = None,
                grace: Optional[Duration] = None, rebalance_key: Optional[str] = None,
                idempotency_key: Optional[str] = None,
                groups: Optional[Sequence[GroupSpec]] = None) -> Claim:
        """Create a claim (``POST /v1/claims``) and return it, pending or held.

        :param mutex: a mutex name, or several.
        :param semaphores: ``{name: slots}``, or a list of names (one slot each). A value
            may also carry an inline limit, ``(slots, limit)`` or ``{"slots": 1, "limit": 4}``:
            a semaphore no configuration covers is then made with that limit for as long
            as it has holders or waiters (a run's own limit on its steps).
        :param tags: ``{key: value}``; each may add the semaphore ``tag/key=value``.
        :param group: a concurrency group (the lock ``group/NAME``).
        :param cancel: ``"none"``, ``"pending"`` or ``"in-progress"`` (the group's older claims).
        :param groups: more groups, each with its own cancel: names, ``(name, cancel)`` or
            ``{"name": ..., "cancel": ...}``; at most 8 groups in all, ``group`` included.
        :param holder: who claims; default ``HOST/PID``. For CI, ``RUN/STEP`` is the convention.
        :param priority: higher goes first.
        :param lease: renew within this (:meth:`renew`) or the server ends the claim
            ``expired``. Default ``"30s"``, as the ``sluice`` command, so that a claim whose
            script died does not hold or wait for ever; ``0`` for no lease (the claim lives
            until released), ``None`` to send none (a configured semaphore's lease applies).
            :meth:`hold` renews it for you.
        :param timeout: the server ends the claim ``timed_out`` if still pending after this.
        :param wait: let the server answer only once granted or after this long.
        :param idempotency_key: the ``Idempotency-Key`` (default: a fresh uuid4); retries
            after a broken connection or a failover send the same key, so no claim is doubled.
        """
        locks: List[Dict[str, Any]] = []
        for m in [mutex] if isinstance(mutex, str) else list(mutex or []):
            locks.append({"mutex": m})
        if isinstance(semaphores, Mapping):
            for name, spec in semaphores.items():
                locks.append(_semaphore_lock(name, spec))
        else:
            for name in [semaphores] if isinstance(semaphores, str) else list(semaphores or []):
                locks.append({"semaphore": name})
        body: Dict[str, Any] = {"holder": holder if holder is not None else default_holder()}
        if locks:
            body["locks"] = locks
        if tags:
            body["tags"] = dict(tags)
        if group is not None:
            body["group"] = group
        if cancel is not None:
            body["cancel"] = cancel
        if groups:
            body["groups"] = [_group(g) for g in groups]
        if priority is not None:
            body["priority"] = priority
        if rebalance_key is not None:
            body["rebalance_key"] = rebalance_key
        for field, value in (("lease", lease), ("timeout", timeout), ("grace", grace), ("wait", wait)):
            if value is not None:
                body[field] = _wire_duration(value)
        wait_s = min(parse_duration(wait) or 0.0, MAX_WAIT_S)
        key = idempotency_key or str(uuid.uuid4())
        resp = self._request("POST", "/v1/claims", body=body, wait=wait_s,
                             headers={"Idempotency-Key": key})
        return Claim(resp.body, replayed=resp.headers.get("idempotent-replayed") == "true")

    def get(self, claim: ClaimRef, wait: Optional[Duration] = None,
            seen: Optional[str] = None) -> Claim:
        """Read a claim (``GET /v1/claims/{id}``); with ``wait``, a long poll until its
        state is not ``seen``. A :class:`Claim` passed in is updated in place."""
        cid = _claim_id(claim)
        wait_s = min(parse_duration(wait) or 0.0, MAX_WAIT_S)
        query = {"wait": _query_duration(wait_s), "seen": seen} if wait_s > 0 else None
        resp = self._request("GET", f"/v1/claims/{urllib.parse.quote(cid, safe='')}",
                             query=query, wait=wait_s)
        return claim._update(resp.body) if isinstance(claim, Claim) else Claim(resp.body)

    def wait_held(self, claim: ClaimRef, timeout: Optional[Duration] = None, *,
                  withdraw: bool = True) -> Claim:
        """Wait until the claim is granted; return it.

        Long-polls ``GET /v1/claims/{id}?wait=...&seen=pending``. Raises :class:`Timeout`
        when ``timeout`` seconds pass while it is pending, or when the server ended it
        ``timed_out``; :class:`ClaimEnded` when it ended otherwise.

        On a ``timeout`` that runs out the claim is withdrawn (``DELETE``) before
        :class:`Timeout` is raised, so that nothing is left waiting in the queue; were it
        granted meanwhile, it is released. ``withdraw=False`` leaves it as it is (pending),
        to wait again or release later. The exception's ``claim`` is the claim.
        """
        c = claim if isinstance(claim, Claim) else self.get(claim)
        limit = parse_duration(timeout)
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            if c.state in ("held", "revoking"):
                return c
            if c.state == "timed_out":
                raise Timeout(None, "timed_out", f"claim {c.id} timed out while pending",
                              claim=c)
            if c.state != "pending":
                raise ClaimEnded(c)
            left = MAX_WAIT_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                what = self._withdraw(c) if withdraw else "left pending (withdraw=False)"
                raise Timeout(None, "timeout",
                              f"claim {c.id} still pending after {limit:g} s; {what}", claim=c)
            self.get(c, wait=min(left, MAX_WAIT_S), seen="pending")

    def _withdraw(self, claim: Claim) -> str:
        """Withdraw a claim a wait gave up on; says what became of it."""
        try:
            self.release(claim)
        except SluiceError as e:
            return (f"withdrawing it failed ({e}); its lease or timeout ends it, or "
                    f"release it with client.release()")
        return "withdrawn" if claim.state == "withdrawn" else f"it is now {claim.state}"

    def renew(self, claim: ClaimRef) -> Claim:
        """Extend the claim's lease (``POST /v1/claims/{id}/renew``); 409 once it ended."""
        return self._claim_call("POST", claim, "/renew")

    def _claim_call(self, method: str, claim: ClaimRef, suffix: str,
                    query: Optional[Mapping[str, Any]] = None, wait: float = 0.0,
                    retry_for: Optional[float] = None) -> Claim:
        """One request on a claim; a :class:`Claim` passed in is updated in place."""
        cid = urllib.parse.quote(_claim_id(claim), safe='')
        resp = self._request(method, f"/v1/claims/{cid}{suffix}", query=query, wait=wait,
                             retry_for=retry_for)
        return claim._update(resp.body) if isinstance(claim, Claim) else Claim(resp.body)

    def release(self, claim: ClaimRef) -> Claim:
        """Release a held claim or withdraw a pending one (``DELETE /v1/claims/{id}``).
        An ended claim is answered unchanged."""
        cid = _claim_id(claim)
        resp = self._request("DELETE", f"/v1/claims/{urllib.parse.quote(cid, safe='')}")
        return claim._update(resp.body) if isinstance(claim, Claim) else Claim(resp.body)

    def cancel(self, claim: ClaimRef) -> Claim:
        """An operator's cancel (``POST /v1/claims/{id}/cancel``): the claim ends ``canceled``."""
        cid = _claim_id(claim)
        resp = self._request("POST", f"/v1/claims/{urllib.parse.quote(cid, safe='')}/cancel")
        return claim._update(resp.body) if isinstance(claim, Claim) else Claim(resp.body)

    def release_prefix(self, holder_prefix: str) -> Dict[str, int]:
        """End every live claim whose holder starts with ``holder_prefix``
        (``DELETE /v1/claims?holder_prefix=...``): a run's cleanup in one call.

        The server ends them all in one step, before anyone else is let in, so none is granted
        on the way out: pending claims withdrawn, held ones released, revoking ones canceled.
        Returns the API's counts, ``{"released": R, "withdrawn": W, "canceled": C,
        "skipped": S}`` (``skipped``: live claims of the prefix that a limited token may not
        end, left as they are; ``canceled`` is 0 from a server that predates it, which counted
        revoking claims under ``released``); no such claim is not an error, all are 0.
        The prefix is plain (``"run-4"`` also matches ``"run-42/a"``): for ``RUN/STEP``
        holders pass ``"RUN/"``. Raises :class:`ValueError` on an empty prefix and
        :class:`BadRequest` on one over 253 characters. Sent again after a broken connection
        (see the failover), the counts are those of the attempt that was answered.
        """
        if not holder_prefix:
            raise ValueError("holder_prefix must not be empty: it would match every claim")
        body = self._request("DELETE", "/v1/claims", query={"holder_prefix": holder_prefix}).body
        counts = {k: int(body[k]) for k in ("released", "withdrawn", "skipped")}
        counts["canceled"] = int(body.get("canceled", 0))
        return counts

    def queue_clear(self, lock: Optional[str] = None,
                    holder_prefix: Optional[str] = None) -> int:
        """An operator empties a queue (``DELETE /v1/queue?lock=...&holder_prefix=...``):
        every pending claim waiting for ``lock`` (a key, ``sem/NAME`` or ``mtx/NAME``),
        and/or whose holder starts with ``holder_prefix``, ends ``canceled`` ("canceled by
        an operator"); held claims are left alone. Returns how many were canceled (0 is not
        an error). It needs an admin token, or the operate permission on the lock (a token's
        prefixes give it; :class:`SluiceError` 403 otherwise). Raises
        :class:`ValueError` when neither is given, or one is empty. Sent again after a
        broken connection (see the failover), the count is that of the attempt answered.
        """
        if lock is None and holder_prefix is None:
            raise ValueError("give lock, holder_prefix or both: without either it would be "
                             "the whole queue")
        if lock == "" or holder_prefix == "":
            raise ValueError("lock and holder_prefix must not be empty")
        body = self._request("DELETE", "/v1/queue",
                             query={"lock": lock, "holder_prefix": holder_prefix}).body
        return int(body["canceled"])

    def why(self, claim: ClaimRef) -> Dict[str, Any]:
        """Why a pending claim waits (``GET /v1/claims/{id}/why``), as the API answers it."""
        cid = _claim_id(claim)
        return dict(self._request("GET", f"/v1/claims/{urllib.parse.quote(cid, safe='')}/why").body)

    def claims(self, state: Optional[str] = None, holder: Optional[str] = None,
               lock: Optional[str] = None) -> List[Claim]:
        """Every claim (``GET /v1/claims``, all pages), optionally filtered.

        ``lock`` is a lock key, ``mtx/NAME`` or ``sem/NAME``: that lock's holders, then
        its waiters."""
        out: List[Claim] = []
        after = None
        while True:
            body = self._request("GET", "/v1/claims", query={
                "state": state, "holder": holder, "lock": lock, "after": after}).body
            out.extend(Claim(c) for c in body.get("claims", []))
            after = body.get("next")
            if not after:
                return out

    def queue(self) -> List[Dict[str, Any]]:
        """The queue of pending claims in order (``GET /v1/queue``, all pages)."""
        out: List[Dict[str, Any]] = []
        after = None
        while True:
            body = self._request("GET", "/v1/queue", query={"after": after}).body
            out.extend(body.get("queue", []))
            after = body.get("next")
            if not after:
                return out

    # ------------------------------------------------------------ locks, status

    def set_semaphore(self, name: str, limit: int, strategy: Optional[str] = None,
                      lease: Optional[Duration] = None, *,
                      overtake_limit: Optional[Duration] = None,
                      preempt: Optional[bool] = None,
                      preempt_grace: Optional[Duration] = None,
                      max_pending: Optional[int] = None,
                      on_full: Optional[str] = None,
                      weights: Optional[Mapping[str, int]] = None,
                      default_weight: Optional[int] = None,
                      rate: Optional[str] = None,
                      burst: Optional[int] = None,
                      backdate: Optional[Duration] = None) -> "Semaphore":
        """Create or change a semaphore (``PUT /v1/semaphores/{name}``).

        The keyword arguments are the semaphore's rules (docs/api.md, "The semaphore's
        rules"): ``preempt`` (with ``preempt_grace``), ``max_pending`` (with ``on_full``,
        ``"reject"`` or ``"drop_oldest"``), ``weights`` ``{key: weight}`` and
        ``default_weight`` (rebalanced only), ``rate`` ``"N/PERIOD"`` (with ``burst``) and
        ``backdate``; durations as strings (``"30s"``) or seconds. A PUT replaces the
        whole configuration: a rule not given here is off. The server checks the values
        and their combinations (:class:`BadRequest` with its message). Answers the
        semaphore as the server shows it."""
        body: Dict[str, Any] = {"limit": limit}
        if strategy is not None:
            body["strategy"] = strategy
        for key, value in (("lease", lease), ("overtake_limit", overtake_limit),
                           ("preempt_grace", preempt_grace), ("backdate", backdate)):
            if value is not None:
                body[key] = _wire_duration(value)
        for key, value in (("preempt", preempt), ("max_pending", max_pending),
                           ("on_full", on_full), ("default_weight", default_weight),
                           ("rate", rate), ("burst", burst)):
            if value is not None:
                body[key] = value
        if weights is not None:
            body["weights"] = dict(weights)
        return Semaphore(self._request("PUT", self._semaphore_path(name), body=body).body)

    def semaphore(self, name: str) -> "Semaphore":
        """A semaphore with its rules, holders and waiters (``GET /v1/semaphores/{name}``)."""
        return Semaphore(self._request("GET", self._semaphore_path(name)).body)

    @staticmethod
    def _semaphore_path(name: str) -> str:
        return f"/v1/semaphores/{urllib.parse.quote(name, safe='/:=*')}"

    def status(self) -> Dict[str, Any]:
        """The leader's figures (``GET /v1/status``: role, claims, next_seq, ...)."""
        return dict(self._request("GET", "/v1/status").body)

    # ------------------------------------------------------------ events

    def events(self, since: int = 0, limit: Optional[int] = None,
               wait: Optional[Duration] = None, claim: Optional[str] = None) -> Dict[str, Any]:
        """One page of the event log (``GET /v1/events``): ``{"events": [...], "next": N}``,
        with ``"partial": True`` when the server's read stopped at its scan budget
        (``limits.max_event_scan``): such a page may hold fewer than ``limit`` events, or
        none. Page on with ``since=page["next"]`` while a page is partial or full."""
        wait_s = min(parse_duration(wait) or 0.0, MAX_WAIT_S)
        query: Dict[str, Any] = {"since": since, "limit": limit, "claim": claim}
        if wait_s > 0:
            query["wait"] = _query_duration(wait_s)
        return dict(self._request("GET", "/v1/events", query=query, wait=wait_s).body)

    def follow_events(self, since: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Yield events as they happen, from ``/v1/events/stream`` (server-sent events).

        ``since``: start after that seq (default: from now on). After a disconnect the
        stream is opened again (on the next server, after a pause) with ``Last-Event-ID``
        set to the last event yielded, so no event is missed or repeated. Runs until the
        caller stops iterating; gives up with :class:`Unavailable` after ``retry_for``
        seconds without any server.
        """
        self._check_open()
        last = since
        if last is None:
            last = int(self.status().get("next_seq", 1)) - 1
        backoff = BACKOFF_FIRST_S
        failing_since: Optional[float] = None
        index = self._current
        while True:
            server = self.servers[index]
            base = urllib.parse.urlsplit(server).path.rstrip("/")
            hdrs = self._headers({"Accept": "text/event-stream", "Last-Event-ID": str(last)})
            conn = self._connect(server, max(self.timeout, 40.0))  # comments come every 15 s
            error: Optional[SluiceError] = None
            try:
                conn.request("GET", f"{base}/v1/events/stream?since={last}", headers=hdrs)
                resp = conn.getresponse()
                if resp.status != 200:
                    data = resp.read()
                    try:
                        err = json.loads(data.decode("utf-8")).get("error", {})
                    except (ValueError, AttributeError):
                        err = {}
                    error = _error_for(resp.status, str(err.get("code", "error")),
                                       str(err.get("message", "")))
                    if not (resp.status == 502 or err.get("code") in RETRY_CODES):
                        raise error
                else:
                    self._current = index
                    failing_since, backoff = None, BACKOFF_FIRST_S
                    seq: Optional[int] = None
                    data_lines: List[str] = []
                    while True:
                        raw = resp.readline()
                        if not raw:
                            break
                        line = raw.decode("utf-8").rstrip("\r\n")
                        if line == "":
                            if data_lines:
                                event = json.loads("\n".join(data_lines))
                                data_lines = []
                                if seq is not None:
                                    last = seq
                                yield event
                            seq = None
                            continue
                        if line.startswith(":"):
                            continue
                        field, _, val = line.partition(":")
                        val = val[1:] if val.startswith(" ") else val
                        if field == "id":
                            try:
                                seq = int(val)
                            except ValueError:
                                seq = None
                        elif field == "data":
                            data_lines.append(val)
            except (OSError, http.client.HTTPException) as e:
                error = self._unreachable(server, e)
                if isinstance(error, TLSError):
                    raise error from None
            finally:
                conn.close()
            now = time.monotonic()
            if failing_since is None:
                failing_since = now
            elif now - failing_since > self.retry_for:
                raise error or Unavailable(None, "unreachable", "the event stream could not be reopened")
            index = (index + 1) % len(self.servers)
            time.sleep(backoff * (1 + random.random() / 2))
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    # ------------------------------------------------------------ holding

    @contextmanager
    def hold(self, mutex: Union[str, Sequence[str], None] = None,
             semaphores: Union[Mapping[str, SemaphoreSpec], Sequence[str], None] = None,
             tags: Optional[Mapping[str, str]] = None, group: Optional[str] = None,
             cancel: Optional[str] = None, holder: Optional[str] = None,
             priority: Optional[int] = None, lease: Optional[Duration] = DEFAULT_LEASE,
             timeout: Optional[Duration] = None,
             on_lost: Optional[Callable[[Claim], None]] = None,
             groups: Optional[Sequence[GroupSpec]] = None) -> Iterator[Claim]:
        """Claim, wait until held, keep the lease renewed, and release on exit.

        ``with client.hold(mutex="deploy", lease="30s") as claim: ...`` — inside,
        ``claim.token`` / ``claim.tokens`` are the fencing tokens. A daemon thread renews
        the lease every lease/3 and long-polls the claim in between; when the claim is lost
        (renew answers 409, or its state is no longer ``held``: revoked, canceled, expired;
        or no server answered for a whole lease, when ``claim.state`` reads ``unknown``) it
        sets ``claim.lost`` and calls ``on_lost(claim)`` (on that thread); ``claim.state``
        and ``claim.reason`` then say how it was lost. On exit the thread stops and the
        claim is released (errors of that release are swallowed once the claim was lost).

        ``timeout``: how long to wait for the grant; when it runs out the claim is withdrawn
        (``DELETE``) and :class:`Timeout` is raised. The server is given the same timeout.
        The lock arguments are :meth:`acquire`'s.
        """
        claim = self.acquire(mutex=mutex, semaphores=semaphores, tags=tags, group=group,
                             cancel=cancel, holder=holder, priority=priority, lease=lease,
                             timeout=timeout, groups=groups)
        try:
            self.wait_held(claim, timeout=timeout, withdraw=False)
        except BaseException:
            try:
                self.release(claim)
            except SluiceError:
                pass
            raise
        stop = threading.Event()
        keeper = threading.Thread(target=self._keep, args=(claim, stop, on_lost),
                                  name=f"sluice-keeper-{claim.id}", daemon=True)
        keeper.start()
        with self._lock:
            self._holds[claim.id] = (claim, stop)
        try:
            yield claim
        finally:
            stop.set()
            with self._lock:
                open_still = self._holds.pop(claim.id, None) is not None
            if open_still:  # else close() released it
                self._release_held(claim, keeper)
            keeper.join(timeout=self.timeout)

    def _release_held(self, claim: Claim, keeper: threading.Thread) -> None:
        """A hold's release on exit. Once the claim was lost, one short try: a lost claim
        has ended, or its lease ends it, and the block should not wait on a dead server."""
        budget = 1.0 if claim.lost.is_set() else None
        try:
            self._claim_call("DELETE", claim, "", retry_for=budget)
        except SluiceError:
            if not claim.lost.is_set():
                keeper.join(timeout=1.0)
                if not claim.lost.is_set():
                    raise

    def holding(self, **hold_args: Any) -> Callable[[F], F]:
        """A decorator: the function runs inside :meth:`hold` with these arguments.

        >>> @client.holding(mutex="nightly-report")      # doctest: +SKIP
        ... def report(): ...
        """

        def decorate(fn: F) -> F:
            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.hold(**hold_args):
                    return fn(*args, **kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate

    def _keep(self, claim: Claim, stop: threading.Event,
              on_lost: Optional[Callable[[Claim], None]]) -> None:
        """The keeper thread: renew every lease/3, long-poll the claim between renewals."""
        lease = claim.lease
        interval = lease / 3 if lease > 0 else 10.0
        last_ok = time.monotonic()

        def budget(wait: float) -> Optional[float]:
            """The failover's time for one request: what is left of the lease."""
            if lease <= 0:
                return None
            return max(0.05, last_ok + lease - time.monotonic() - wait)

        def lost() -> None:
            if stop.is_set() or claim.lost.is_set():
                return
            claim.lost.set()
            if on_lost is not None:
                try:
                    on_lost(claim)
                except Exception:  # a callback's failure must not kill the keeper silently
                    pass

        next_renew = time.monotonic() + interval
        while not stop.is_set():
            try:
                now = time.monotonic()
                if lease > 0 and now >= next_renew:
                    self._claim_call("POST", claim, "/renew", retry_for=budget(0.0))
                    last_ok = time.monotonic()
                    next_renew = last_ok + interval
                else:
                    # a long poll is a sign of life too; it answers at once on a change
                    wait = max(0.001, next_renew - now) if lease > 0 else interval
                    wait = min(wait, MAX_WAIT_S)
                    self._claim_call("GET", claim, "", wait=wait, retry_for=budget(wait),
                                     query={"wait": _query_duration(wait), "seen": "held"})
                    last_ok = time.monotonic()
                if claim.state != "held":
                    lost()
                    return
            except (Conflict, NotFound) as e:
                self._read_ended(claim, e)
                lost()
                return
            except SluiceError as e:
                if stop.is_set():
                    return
                if lease > 0 and time.monotonic() - last_ok >= lease:
                    claim._conclude("unknown", (
                        f"the server was unreachable for longer than the lease "
                        f"({lease:g} s): it may have ended the claim and granted its locks "
                        f"to another holder (the last error: {e})"))
                    lost()
                    return
                stop.wait(min(1.0, interval))

    def _read_ended(self, claim: Claim, error: SluiceError) -> None:
        """After a renewal refused (409) or an unknown claim (404): read how it ended, so
        that ``claim.state`` and ``claim.reason`` say it, not ``held``."""
        if isinstance(error, Conflict):
            try:
                self._claim_call("GET", claim, "", retry_for=1.0)
                if claim.state not in LIVE_STATES:
                    return
            except SluiceError:
                pass
        claim._conclude("unknown", f"the server no longer has the claim as held: {error}")
