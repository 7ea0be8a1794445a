"""Fetches the URLs of a web source: the server makes requests to addresses that users chose.

Threat model: the URL, the DNS answers for its host and the server behind it are all hostile.
- Server-side request forgery: a URL (or a redirect, or a DNS name) pointing at the server's own
  network: loopback, private and link-local ranges, carrier-grade NAT, the cloud metadata service
  (169.254.169.254, fd00:ec2::254), IPv4 addresses wrapped in IPv6. Every hop's host is resolved once
  and refused if ANY of its addresses is not a public internet address, unless the operator allows its
  network (``FetchPolicy.allowed_networks``, from KNOWLEDGE_SOURCES_ALLOWED_NETWORKS).
- DNS rebinding: the name could resolve to a public address for the check and to an internal one for
  the connection. The connection goes to the exact address that was checked (no second lookup); the
  Host header, TLS SNI and certificate check still use the host name.
- Redirects: followed here, not by a library, so each hop is checked like the first (scheme, DNS,
  addresses) before anything is sent; at most ``max_redirects``.
- Exhaustion: a body larger than ``max_bytes`` (announced or not, compressed or not) is cut off; a
  server answering one byte at a time is cut off after ``total_timeout_s`` for the whole response,
  headers included, which per-operation socket timeouts alone cannot do; every socket operation has
  ``timeout_s``. A whole job's requests and time (a sync's crawl, a preview: robots.txt, pages,
  sitemaps) come from one ``FetchBudget`` (knowledge.source_fetch.budget): one deadline for all of
  them, not 60 s for each, and a response under way is cut at it too.
- Politeness: requests to one host are paced (``HostPacer``); robots.txt is read by
  ``knowledge.source_fetch.robots``.
Residual risks the caller owns: the DNS lookup itself has no timeout of its own (the system resolver's
applies), and the content (HTML, documents) is as hostile as the rest and must be parsed defensively.

Refusals of the policy raise ``FetchRefused`` (the end of a budget is one: ``BudgetExhausted``), network
failures ``FetchFailed``, each with a ``reason`` fit for a person. HTTP error
statuses are not exceptions: the result carries the status.

Pure: no Django import, so it can be tested and reused without a database.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import ipaddress
import math
import os
import socket
import ssl
import threading
import zlib
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import quote, urljoin, urlsplit

from knowledge.source_fetch.pacing import HostPacer

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_NETWORKS_SETTING = "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS"
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
# Shared address space (RFC 6598): not "private" to the ipaddress module, but inside many providers' networks.
CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
# IPv6 prefixes that carry an IPv4 address which a gateway may reach on our behalf.
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")
# Characters left as they are in a request path: the reserved ones and "%" (already escaped octets).
PATH_SAFE_CHARACTERS = "!#$%&'()*+,/:;=?@[]~"
READ_CHUNK_BYTES = 64 * 1024
MEGABYTE = 1024 * 1024


class FetchRefused(Exception):
    """The policy forbids this fetch (address, scheme, size, time, redirects). Retrying will not help."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class FetchFailed(Exception):
    """The network failed (name not found, connection refused, timeout, broken TLS or HTTP)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# -- policy -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchPolicy:
    allowed_networks: tuple[IPNetwork, ...] = ()
    max_bytes: int = 20 * MEGABYTE
    timeout_s: float = 20.0  # each connect, TLS handshake and read
    total_timeout_s: float = 60.0  # one whole response, from connect to the body's last byte
    max_redirects: int = 5
    requests_per_second_per_host: float = 2.0
    user_agent: str = "KnowledgeBot/1.0 (+sources)"

    def __post_init__(self):
        if self.max_bytes <= 0 or self.timeout_s <= 0 or self.total_timeout_s <= 0:
            raise ValueError("max_bytes, timeout_s and total_timeout_s must be positive")
        if self.max_redirects < 0:
            raise ValueError("max_redirects must not be negative")
        if self.requests_per_second_per_host <= 0:
            raise ValueError("requests_per_second_per_host must be positive")


def parse_networks(text: str) -> tuple[IPNetwork, ...]:
    """Networks from a comma-separated list such as "127.0.0.0/8, fd00::/8"; a bare address is one host."""
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            # Not strict: "192.168.1.10/24" means the network 192.168.1.0/24, as an operator would expect.
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"{entry!r} is not an IP network; write networks in CIDR notation, such as 127.0.0.0/8"
            ) from None
    return tuple(networks)


def address_refusal(address: IPAddress, allowed_networks: tuple[IPNetwork, ...] = ()) -> str | None:
    """Why the server must not connect to this address ("a private address"), or None when it may."""
    embedded = _embedded_ipv4(address)
    candidates = (address,) if embedded is None else (address, embedded)
    if any(candidate in network for network in allowed_networks for candidate in candidates):
        return None
    # The IPv4 inside first: "::ffff:127.0.0.1 is a loopback address" says more than "reserved".
    return (_internal_kind(embedded) if embedded else None) or _internal_kind(address)


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv6 one (::ffff:10.0.0.1, 2002:a00:1::, 64:ff9b::a00:1), else None."""
    if address.version == 4:
        return None
    if address in NAT64_PREFIX:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)  # the last 32 bits
    return address.ipv4_mapped or address.sixtofour


def _internal_kind(address: IPAddress) -> str | None:
    # Most specific first: to the ipaddress module 127.0.0.1, 169.254.169.254 and 240.0.0.1 are all
    # "private"; the precise word tells the operator what the address is. Last, whatever is not global.
    checks = (
        (address in METADATA_ADDRESSES, "the cloud metadata address"),
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address in CARRIER_GRADE_NAT, "a shared (carrier-grade NAT) address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
        (address.is_private, "a private address"),
        (not address.is_global, "not a public internet address"),
    )
    return next((kind for matches, kind in checks if matches), None)


# -- URLs and addresses -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    url: str
    scheme: str
    host: str  # ASCII host name or IP literal (no brackets): DNS, SNI and certificate check
    port: int
    request_path: str

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def _parse_target(url: str) -> _Target:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise FetchRefused(f"{url!r} is not a valid URL ({error})") from error
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise FetchRefused(f"only http and https URLs can be fetched: {url}")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL would be sent to whatever host a redirect names; users must not store them.
        raise FetchRefused(
            f"URLs with a user name or password are not fetched: {scheme}://…@{parts.hostname}"
        )
    if not parts.hostname:
        raise FetchRefused(f"the URL has no host name: {url}")
    path = quote(parts.path or "/", safe=PATH_SAFE_CHARACTERS)
    query = quote(parts.query, safe=PATH_SAFE_CHARACTERS)
    request_path = f"{path}?{query}" if query else path
    return _Target(
        url.strip(), scheme, _ascii_host(parts.hostname), port or DEFAULT_PORTS[scheme], request_path
    )


def _ascii_host(host: str) -> str:
    if ":" in host:  # an IPv6 literal
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as error:
        raise FetchRefused(f"the host name {host!r} is not valid") from error


def _checked_addresses(target: _Target, allowed_networks: tuple[IPNetwork, ...]) -> list[tuple]:
    """The (family, socket address) pairs to connect to, after refusing the host if any one is internal.

    All of them are checked, not just the one used: a name with one public and one internal address
    would otherwise depend on the order the resolver returns them in."""
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise FetchFailed(f"the host name {target.host} could not be resolved ({error})") from error
    pairs = [
        (family, sockaddr)
        for family, _, _, _, sockaddr in infos
        if family in (socket.AF_INET, socket.AF_INET6)
    ]
    if not pairs:
        raise FetchFailed(f"the host name {target.host} has no IP address")
    for _, sockaddr in pairs:
        address = ipaddress.ip_address(sockaddr[0].split("%")[0])  # without an IPv6 zone ("fe80::1%eth0")
        kind = address_refusal(address, allowed_networks)
        if kind:
            of_host = "" if str(address) == target.host else f" of {target.host}"
            raise FetchRefused(
                f"the address {address}{of_host} is {kind}; "
                f"the operator can allow it with {ALLOWED_NETWORKS_SETTING}"
            )
    return pairs


def url_checked(url: str, allowed_networks: tuple[IPNetwork, ...] = ()) -> None:
    """Refuse, before anything is fetched, a URL the fetcher would refuse: its form, or its host's
    addresses (FetchRefused, FetchFailed when the name does not resolve)."""
    _checked_addresses(_parse_target(url), allowed_networks)


def host_checked(host: str, port: int, allowed_networks: tuple[IPNetwork, ...] = ()) -> str:
    """The address to connect to for ``host``, once every address it resolves to is allowed: for a
    client other than this fetcher (git) to pin its connection to the address that was checked."""
    target = _Target(url=host, scheme="https", host=_ascii_host(host), port=port, request_path="/")
    _family, sockaddr = _checked_addresses(target, allowed_networks)[0]
    return sockaddr[0]


# -- fetching -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchResult:
    url: str  # after redirects
    status: int
    not_modified: bool
    body: bytes = field(repr=False)
    content_type: str  # as the server said: a hint, not a guarantee of what the body is
    etag: str
    last_modified: str


@dataclass(frozen=True)
class _Response:
    status: int
    headers: Message
    body: bytes


class _Watchdog:
    """Cuts the connection once one response has taken longer than ``seconds``.

    Socket timeouts bound each operation, not their sum: a server sending a byte just before each
    timeout would never trip them. Shutting the socket down from this timer thread wakes the blocked
    read, which then sees the end of the stream; ``expired`` tells that ending from a real one."""

    def __init__(self, seconds: float):
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        self.release()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                self._cut()

    def release(self) -> None:
        """Forget the socket before it is closed: its file descriptor number may soon be another's."""
        with self._lock:
            self._sock = None

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            self._cut()

    def _cut(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                # The plain socket's shutdown, also for TLS: SSLSocket.shutdown would tear down its TLS
                # state under the thread that is reading with it.
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)


class WebFetcher:
    """GETs URLs under a ``FetchPolicy``. Thread-safe; one connection per request, no cookies, no cache."""

    def __init__(self, policy: FetchPolicy, pacer: HostPacer | None = None, budget=None):
        self.policy = policy
        # A pacer of its own paces only this fetcher's requests; pass a shared one to pace them all.
        self.pacer = pacer or HostPacer(policy.requests_per_second_per_host)
        # A knowledge.source_fetch.budget.FetchBudget: every request (each hop) is taken from it.
        self.budget = budget

    def get(self, url: str, *, etag: str = "", last_modified: str = "") -> FetchResult:
        """The response to GET ``url`` after redirects; If-None-Match / If-Modified-Since when given.

        The validators are sent to every hop: they belong to the resource the URL names, wherever it
        lives now. On 304 the result keeps the given validators unless the server sent new ones."""
        target = _parse_target(url)
        headers = self._request_headers(etag, last_modified)
        for _ in range(self.policy.max_redirects + 1):
            response = self._fetch_once(target, headers)
            location = response.headers.get("Location") if response.status in REDIRECT_STATUSES else None
            if not location:
                return _result(target.url, response, etag, last_modified)
            target = _parse_target(urljoin(target.url, location.strip()))
        raise FetchRefused(f"more than {self.policy.max_redirects} redirects")

    def _request_headers(self, etag: str, last_modified: str) -> dict[str, str]:
        headers = {
            "User-Agent": self.policy.user_agent,
            "Accept": "*/*",
            "Accept-Encoding": "gzip",  # decoded below, within max_bytes
            "Connection": "close",
        }
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return headers

    def _fetch_once(self, target: _Target, headers: dict[str, str]) -> _Response:
        if self.budget is not None:
            self.budget.spend()  # before the lookup: nothing at all once the work's budget is spent
        addresses = _checked_addresses(target, self.policy.allowed_networks)  # before any connection
        self.pacer.wait(target.host)
        # A response is cut at the budget's deadline too: a slow server cannot stretch the whole work.
        seconds = min(self.policy.total_timeout_s, self._seconds_left())
        with _Watchdog(seconds) as watchdog:
            try:
                response = self._exchange(target, addresses, headers, watchdog, seconds)
            except (OSError, http.client.HTTPException) as error:
                if watchdog.expired or self._out_of_time():
                    raise self._too_slow() from error
                raise FetchFailed(self._describe_network_error(error, target)) from error
            if watchdog.expired:  # the cut may look like the normal end of a body without Content-Length
                raise self._too_slow()
        return response

    def _seconds_left(self) -> float:
        """Until the budget's deadline (infinite without one); its BudgetExhausted once it is over."""
        if self.budget is None:
            return math.inf
        if self._out_of_time():
            raise self.budget.out_of_time()
        return self.budget.seconds_left()

    def _out_of_time(self) -> bool:
        return self.budget is not None and self.budget.seconds_left() <= 0

    def _exchange(
        self,
        target: _Target,
        addresses: list[tuple],
        headers: dict[str, str],
        watchdog: _Watchdog,
        seconds: float,
    ) -> _Response:
        """One request and its response, within ``seconds`` (the watchdog's); each socket operation
        within the policy's ``timeout_s`` or those seconds, the shorter (a connect is not cut by the
        watchdog: its socket timeout is what ends it)."""
        timeout = min(self.policy.timeout_s, seconds)
        connection = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
        connection.sock = self._connect(target, addresses, watchdog, timeout)  # so http.client never resolves
        response = None
        try:
            connection.request("GET", target.request_path, headers={"Host": target.host_header, **headers})
            response = connection.getresponse()
            # A redirect's body is never used: no time or memory is spent on it.
            body = b"" if response.status in REDIRECT_STATUSES else self._read_body(response, target)
            return _Response(response.status, response.msg, body)
        finally:
            watchdog.release()  # before the socket closes
            if response is not None:
                response.close()
            connection.close()

    def _connect(
        self, target: _Target, addresses: list[tuple], watchdog: _Watchdog, timeout: float
    ) -> socket.socket:
        """A socket connected to the first checked address that answers, with TLS for https."""
        error: OSError | None = None
        for family, sockaddr in addresses:
            try:
                return self._connect_to(family, sockaddr, target, watchdog, timeout)
            except OSError as exc:
                error = exc
                if watchdog.expired or isinstance(exc, ssl.SSLError):
                    break  # out of time, or a TLS server answered: another address will not do better
        raise error or OSError(f"no address to connect to for {target.host}")

    def _connect_to(
        self, family: int, sockaddr: tuple, target: _Target, watchdog: _Watchdog, timeout: float
    ) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        watchdog.watch(sock)
        try:
            sock.connect(sockaddr)
            if target.scheme == "https":
                # SNI and the certificate check use the host name; the socket goes to the checked address.
                tls = _tls_context()
                sock = tls.wrap_socket(sock, server_hostname=target.host, do_handshake_on_connect=False)
                watchdog.watch(sock)
                sock.do_handshake()
            return sock
        except BaseException:
            watchdog.release()
            sock.close()
            raise

    def _too_slow(self) -> FetchRefused:
        if self._out_of_time():
            return self.budget.out_of_time()
        return FetchRefused(f"the server took longer than {self.policy.total_timeout_s:g} s")

    def _describe_network_error(self, error: Exception, target: _Target) -> str:
        host = target.host_header
        if isinstance(error, ssl.SSLCertVerificationError):
            return f"the certificate of {target.host} could not be verified ({error.verify_message})"
        if isinstance(error, ssl.SSLError):
            return f"the TLS connection to {host} failed ({error.reason or error})"
        if isinstance(error, TimeoutError):
            return f"{host} did not answer within {self.policy.timeout_s:g} s"
        if isinstance(error, ConnectionRefusedError):
            return f"{host} refused the connection"
        if isinstance(error, http.client.IncompleteRead):
            return f"the response from {host} ended early"
        if isinstance(error, http.client.HTTPException):
            return f"{host} sent a malformed HTTP response ({type(error).__name__}: {error})"
        return f"the connection to {host} failed ({getattr(error, 'strerror', None) or error})"

    def _read_body(self, response: http.client.HTTPResponse, target: _Target) -> bytes:
        limit = self.policy.max_bytes
        declared = (response.getheader("Content-Length") or "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large()  # before reading a byte of it
        decompressor = _decompressor(response.getheader("Content-Encoding"), target)
        chunks: list[bytes] = []
        size = 0
        received = False
        # read1: at most one receive per call, so the watchdog and the size check act between receives.
        while chunk := response.read1(READ_CHUNK_BYTES):
            received = True
            data = _decompress(decompressor, chunk, limit - size + 1, target) if decompressor else chunk
            size += len(data)
            if size > limit:
                raise self._too_large()
            chunks.append(data)
        if response.length:  # read1 does not notice a body that ends before its Content-Length
            raise http.client.IncompleteRead(b"".join(chunks), response.length)
        if decompressor and received and not decompressor.eof:
            raise FetchFailed(f"the compressed response from {target.host} is incomplete")
        return b"".join(chunks)

    def _too_large(self) -> FetchRefused:
        return FetchRefused(f"the response is larger than {_format_size(self.policy.max_bytes)}")


def _tls_context() -> ssl.SSLContext:
    """One per process (per trust store the environment names), shared by every fetcher's threads:
    wrapping a socket does not change it. Loading the CA bundle costs tens of milliseconds of CPU,
    which each fetcher, so each preview, paid before its first byte, even to fetch over http."""
    return _tls_context_trusting(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context_trusting(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    # The default context reads those two variables itself; they are only this cache's key.
    context = ssl.create_default_context()  # certificate and host name checks on, TLS 1.2 at least
    try:
        import certifi
    except ImportError:
        return context
    # The system's store may be empty in slim containers; certifi's adds the public CAs to it.
    context.load_verify_locations(certifi.where())
    return context


def _decompressor(content_encoding: str | None, target: _Target):
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)  # a gzip or zlib header, detected
    raise FetchFailed(f"{target.host} sent the response in the unsupported encoding {encoding!r}")


def _decompress(decompressor, chunk: bytes, max_length: int, target: _Target) -> bytes:
    # max_length bounds the output of this one call: a small "zip bomb" chunk cannot fill the memory.
    try:
        return decompressor.decompress(chunk, max_length)
    except zlib.error as error:
        raise FetchFailed(f"the compressed response from {target.host} is corrupt") from error


def _result(url: str, response: _Response, etag: str, last_modified: str) -> FetchResult:
    not_modified = response.status == 304
    return FetchResult(
        url=url,
        status=response.status,
        not_modified=not_modified,
        body=response.body,
        content_type=response.headers.get("Content-Type", ""),
        etag=response.headers.get("ETag", etag if not_modified else ""),
        last_modified=response.headers.get("Last-Modified", last_modified if not_modified else ""),
    )


def _format_size(size: int) -> str:
    if size >= MEGABYTE:
        return f"{round(size / MEGABYTE, 1):g} MB"
    if size >= 1024:
        return f"{round(size / 1024, 1):g} KB"
    return f"{size} bytes"
