"""The web source's fetcher against real HTTP servers on 127.0.0.1: SSRF refusals (addresses, DNS names,
redirects), size and time limits against hostile servers, conditional GETs, pacing and robots.txt.

No database: the fetcher is pure. The servers run in threads of the test process."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import ipaddress
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from knowledge.source_fetch.budget import BudgetExhausted, FetchBudget
from knowledge.source_fetch.pacing import HostPacer
from knowledge.source_fetch.robots import RobotsRules
from knowledge.source_fetch.web import (
    FetchFailed,
    FetchPolicy,
    FetchRefused,
    WebFetcher,
    address_refusal,
    parse_networks,
)

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)
MB = 1024 * 1024


# -- a real server whose answers each test chooses ----------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    server: Site

    def do_GET(self):
        self.server.requests.append((self.path, dict(self.headers)))
        route = self.server.route_for(self.path)
        if route is None:
            self.send_error(404)
        else:
            route(self)

    def log_message(self, *args):
        pass

    def send_body(self, body: bytes, content_type: str = "text/html", **headers: str):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str, status: int = 302):
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Site(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes: dict[str, Callable[[Handler], None]] = {}
        self.requests: list[tuple[str, dict]] = []
        self.stopping = threading.Event()  # ends the endless answers when the test is over

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def route_for(self, path: str):
        # The longest matching prefix: "/r/" serves "/r/1", "/r/2"...
        prefixes = sorted((p for p in self.routes if path.startswith(p)), key=len, reverse=True)
        return self.routes[prefixes[0]] if prefixes else None

    def handle_error(self, request, client_address):
        pass  # the fetcher hangs up on the hostile answers on purpose


@pytest.fixture
def site():
    with serving(Site()) as server:
        yield server


@contextlib.contextmanager
def serving(server: Site) -> Iterator[Site]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


def fetcher(allowed=LOOPBACK, **overrides) -> WebFetcher:
    # A high rate: pacing has its own tests and would only slow the others down.
    policy = FetchPolicy(allowed_networks=allowed, requests_per_second_per_host=1000.0, **overrides)
    return WebFetcher(policy)


def refusal(call: Callable[[], object]) -> str:
    with pytest.raises(FetchRefused) as caught:
        call()
    return caught.value.reason


# -- addresses ------------------------------------------------------------------------------------------


def test_a_page_is_fetched_when_loopback_is_allowed(site):
    site.routes["/page"] = lambda h: h.send_body(
        b"<p>hello</p>", ETag='"v1"', Last_Modified="Mon, 01 Jan 2024"
    )
    result = fetcher().get(f"{site.base}/page")
    assert (result.status, result.body, result.not_modified) == (200, b"<p>hello</p>", False)
    assert result.url == f"{site.base}/page"
    assert (result.content_type, result.etag, result.last_modified) == (
        "text/html",
        '"v1"',
        "Mon, 01 Jan 2024",
    )
    path, headers = site.requests[0]
    assert headers["Host"] == f"127.0.0.1:{site.port}"
    assert headers["User-Agent"] == "KnowledgeBot/1.0 (+sources)"


@pytest.mark.security
def test_loopback_is_refused_before_any_connection_unless_allowed(site):
    site.routes["/page"] = lambda h: h.send_body(b"secret")
    reason = refusal(lambda: fetcher(allowed=()).get(f"{site.base}/page"))
    assert reason == (
        "the address 127.0.0.1 is a loopback address; "
        "the operator can allow it with KNOWLEDGE_SOURCES_ALLOWED_NETWORKS"
    )
    assert site.requests == []


@pytest.mark.security
def test_a_name_resolving_to_loopback_is_refused(site):
    site.routes["/"] = lambda h: h.send_body(b"secret")
    reason = refusal(lambda: fetcher(allowed=()).get(f"http://localhost:{site.port}/"))
    assert "of localhost is a loopback address" in reason
    assert "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS" in reason
    assert site.requests == []


@pytest.mark.security
@pytest.mark.parametrize(
    "location, words",
    [
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is the cloud metadata address"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://[::ffff:10.0.0.1]/", "is a private address"),
        ("http://100.64.0.7/", "100.64.0.7 is a shared (carrier-grade NAT) address"),
        ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ],
)
def test_a_redirect_to_an_internal_address_is_refused(site, location, words):
    site.routes["/go"] = lambda h: h.redirect(location)
    assert words in refusal(lambda: fetcher().get(f"{site.base}/go"))
    assert [path for path, _ in site.requests] == ["/go"]


@pytest.mark.security
def test_a_loopback_address_written_as_a_number_is_refused(site):
    # 2130706433 is 127.0.0.1: the check is on the resolved address, not on how the URL spells it.
    reason = refusal(lambda: fetcher(allowed=()).get(f"http://2130706433:{site.port}/"))
    assert reason.startswith("the address 127.0.0.1 of 2130706433 is a loopback address")


@pytest.mark.security
def test_a_redirect_to_localhost_is_refused_when_loopback_is_not_allowed(site):
    site.routes["/go"] = lambda h: h.redirect(f"http://localhost:{site.port}/")
    site.routes["/"] = lambda h: h.send_body(b"secret")
    reason = refusal(lambda: fetcher(allowed=()).get(f"{site.base}/go"))
    assert "loopback" in reason
    assert site.requests == []  # the first hop was refused before it connected


@pytest.mark.security
def test_a_redirect_to_another_scheme_is_refused(site):
    site.routes["/go"] = lambda h: h.redirect("file:///etc/passwd")
    assert refusal(lambda: fetcher().get(f"{site.base}/go")) == (
        "only http and https URLs can be fetched: file:///etc/passwd"
    )


@pytest.mark.security
@pytest.mark.parametrize(
    "url, words",
    [
        ("ftp://example.com/x", "only http and https"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "only http and https"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http:///path", "no host name"),
        ("http://example.com:99999/", "not a valid URL"),
    ],
)
def test_urls_that_are_not_plain_http_are_refused(url, words):
    assert words in refusal(lambda: fetcher().get(url))


@pytest.mark.security
def test_the_connection_goes_to_the_checked_address_with_the_original_host_header(site, monkeypatch):
    # DNS rebinding: the name answers a public-looking allowed address first, an internal one after.
    # Only the first answer may be used. The resolver is the one thing faked here (no DNS server).
    real_getaddrinfo = socket.getaddrinfo
    answers = iter(["127.0.0.1", "169.254.169.254"])
    lookups = []

    def rebinding_getaddrinfo(host, port, *args, **kwargs):
        if host != "rebind.test":
            return real_getaddrinfo(host, port, *args, **kwargs)
        lookups.append(host)
        return real_getaddrinfo(next(answers), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_getaddrinfo)
    site.routes["/page"] = lambda h: h.send_body(b"ok")
    result = fetcher().get(f"http://rebind.test:{site.port}/page")
    assert result.body == b"ok"
    assert lookups == ["rebind.test"]
    assert site.requests[0][1]["Host"] == f"rebind.test:{site.port}"


@pytest.fixture
def resolve_test_names_to_loopback(monkeypatch):
    """*.test names resolve to 127.0.0.1: the resolver is the one thing faked here (no DNS server)."""
    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host.endswith(".test"):
            lookups.append(host)
            host = "127.0.0.1"
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


@pytest.mark.security
def test_https_checks_the_certificate_against_the_host_name_not_the_address(
    tmp_path, monkeypatch, resolve_test_names_to_loopback
):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=good.test"]
        + ["-addext", "subjectAltName=DNS:good.test", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted like a CA by the fetcher's default context
    server = Site()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.routes["/page"] = lambda h: h.send_body(b"over TLS")
    with serving(server):
        web = fetcher()
        assert web.get(f"https://good.test:{server.port}/page").body == b"over TLS"
        assert server.requests[0][1]["Host"] == f"good.test:{server.port}"
        with pytest.raises(FetchFailed) as caught:
            web.get(f"https://other.test:{server.port}/page")
    assert caught.value.reason.startswith(
        "the certificate of other.test could not be verified (Hostname mismatch"
    )
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "address, kind",
    [
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("2002:7f00:1::", "a loopback address"),  # 6to4 of 127.0.0.1
        ("64:ff9b::a00:1", "a private address"),  # NAT64 of 10.0.0.1
        ("fd00:ec2::254", "the cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("192.168.1.1", "a private address"),
        ("fc00::1", "a private address"),
        ("100.127.255.254", "a shared (carrier-grade NAT) address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("::", "an unspecified address"),
    ],
)
def test_address_refusal(address, kind):
    assert address_refusal(ipaddress.ip_address(address)) == kind


def test_allowed_networks_cover_their_addresses_also_wrapped_in_ipv6():
    allowed = parse_networks("127.0.0.0/8, 10.1.0.0/16")
    assert address_refusal(ipaddress.ip_address("127.0.0.5"), allowed) is None
    assert address_refusal(ipaddress.ip_address("::ffff:10.1.2.3"), allowed) is None
    assert address_refusal(ipaddress.ip_address("10.2.0.1"), allowed) == "a private address"


# -- redirects and limits ---------------------------------------------------------------------------


def test_redirects_are_followed_to_the_final_url(site):
    site.routes["/old"] = lambda h: h.redirect("/new", status=301)
    site.routes["/new"] = lambda h: h.send_body(b"moved here")
    result = fetcher().get(f"{site.base}/old")
    assert (result.url, result.body) == (f"{site.base}/new", b"moved here")


@pytest.mark.security
def test_an_endless_redirect_chain_is_refused(site):
    site.routes["/r/"] = lambda h: h.redirect(f"/r/{int(h.path.rsplit('/', 1)[1]) + 1}")
    assert refusal(lambda: fetcher().get(f"{site.base}/r/0")) == "more than 5 redirects"
    assert len(site.requests) == 6  # the first request and 5 redirects followed


def endless_zeros(handler: Handler, chunk: bytes = b"\0" * 65536):
    while not handler.server.stopping.is_set():
        handler.wfile.write(chunk)


def huge_declared_body(handler: Handler):
    handler.send_response(200)
    handler.send_header("Content-Length", str(2 * 1024**3))
    handler.end_headers()
    endless_zeros(handler)


def endless_chunked_body(handler: Handler):
    handler.protocol_version = "HTTP/1.1"
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    endless_zeros(handler, b"10000\r\n" + b"\0" * 0x10000 + b"\r\n")


@pytest.mark.security
@pytest.mark.parametrize("route", [huge_declared_body, endless_chunked_body, endless_zeros])
def test_a_huge_body_is_refused_past_max_bytes_without_reading_it(site, route):
    if route is endless_zeros:  # no headers of its own: an HTTP/1.0 body that ends with the connection
        site.routes["/big"] = lambda h: (h.send_response(200), h.end_headers(), endless_zeros(h))
    else:
        site.routes["/big"] = route
    started = time.monotonic()
    assert (
        refusal(lambda: fetcher(max_bytes=MB).get(f"{site.base}/big")) == "the response is larger than 1 MB"
    )
    assert time.monotonic() - started < 5


@pytest.mark.security
def test_a_compressed_body_counts_once_decompressed(site):
    site.routes["/small.gz"] = lambda h: h.send_body(gzip.compress(b"text " * 1000), Content_Encoding="gzip")
    site.routes["/bomb.gz"] = lambda h: h.send_body(gzip.compress(b"\0" * 50 * MB), Content_Encoding="gzip")
    assert fetcher(max_bytes=MB).get(f"{site.base}/small.gz").body == b"text " * 1000
    assert (
        refusal(lambda: fetcher(max_bytes=MB).get(f"{site.base}/bomb.gz"))
        == "the response is larger than 1 MB"
    )


def slow_drip_body(handler: Handler):
    handler.send_response(200)
    handler.end_headers()
    while not handler.server.stopping.wait(0.2):
        handler.wfile.write(b"x")


def slow_drip_headers(handler: Handler):
    handler.wfile.write(b"HTTP/1.0 200 OK\r\nX-Slow: ")
    while not handler.server.stopping.wait(0.2):
        handler.wfile.write(b"x")


@pytest.mark.security
@pytest.mark.parametrize("route", [slow_drip_body, slow_drip_headers])
def test_a_server_dripping_bytes_is_cut_off_after_the_total_timeout(site, route):
    site.routes["/drip"] = route
    started = time.monotonic()
    reason = refusal(lambda: fetcher(total_timeout_s=1.5, timeout_s=1.0).get(f"{site.base}/drip"))
    assert reason == "the server took longer than 1.5 s"
    assert time.monotonic() - started < 3


@pytest.mark.security
def test_a_fetcher_with_a_deadline_stops_every_request_once_its_time_is_up(site):
    """Each response within the per-response limits; the budget's whole time is what ends them."""
    site.routes["/quick"] = lambda h: h.send_body(b"ok")
    site.routes["/drip"] = slow_drip_body
    bounded = WebFetcher(
        FetchPolicy(allowed_networks=LOOPBACK, requests_per_second_per_host=1000.0),
        budget=FetchBudget(seconds=1.0),
    )
    assert bounded.get(f"{site.base}/quick").body == b"ok"
    started = time.monotonic()
    with pytest.raises(BudgetExhausted) as caught:
        bounded.get(f"{site.base}/drip")  # a total_timeout_s of 60 s alone would let it drip on
    assert time.monotonic() - started < 2
    assert (caught.value.kind, caught.value.reason) == ("time", "the 1 s allowed ran out")
    asked = len(site.requests)
    with pytest.raises(BudgetExhausted):
        bounded.get(f"{site.base}/quick")
    assert len(site.requests) == asked  # nothing more is sent once the time is up


def test_a_silent_server_fails_after_the_read_timeout(site):
    site.routes["/silent"] = lambda h: h.server.stopping.wait(10)
    with pytest.raises(FetchFailed) as caught:
        fetcher(timeout_s=0.5).get(f"{site.base}/silent")
    assert caught.value.reason == f"127.0.0.1:{site.port} did not answer within 0.5 s"


def test_a_closed_port_fails_with_connection_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchFailed) as caught:
        fetcher().get(f"http://127.0.0.1:{port}/")
    assert caught.value.reason == f"127.0.0.1:{port} refused the connection"


def test_an_error_status_is_returned_not_raised(site):
    result = fetcher().get(f"{site.base}/missing")
    assert (result.status, result.not_modified) == (404, False)


# -- conditional GET --------------------------------------------------------------------------------------


def versioned_page(handler: Handler):
    if handler.headers.get("If-None-Match") == '"v1"':
        handler.send_response(304)
        handler.send_header("ETag", '"v1"')
        handler.end_headers()
    else:
        handler.send_body(b"version 1", ETag='"v1"')


def test_a_conditional_get_reports_not_modified(site):
    site.routes["/doc"] = versioned_page
    web = fetcher()
    first = web.get(f"{site.base}/doc")
    second = web.get(f"{site.base}/doc", etag=first.etag, last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    assert (first.status, first.not_modified, first.etag) == (200, False, '"v1"')
    assert (second.status, second.not_modified, second.body, second.etag) == (304, True, b"", '"v1"')
    assert second.last_modified == "Mon, 01 Jan 2024 00:00:00 GMT"  # kept: the server sent none
    assert site.requests[1][1]["If-Modified-Since"] == "Mon, 01 Jan 2024 00:00:00 GMT"


# -- pacing -----------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_pacer_spaces_requests_to_one_host():
    clock = FakeClock()
    pacer = HostPacer(2.0, clock=clock, sleep=clock.sleep)
    waits = [pacer.wait("example.com") for _ in range(5)]
    assert waits == pytest.approx([0, 0.5, 0.5, 0.5, 0.5])
    assert sum(clock.sleeps) == pytest.approx(2.0)
    assert pacer.wait("other.example") == 0  # other hosts have their own pace
    clock.now += 10
    assert pacer.wait("EXAMPLE.com") == 0  # long after the last request, no wait


def test_the_pacer_reserves_slots_for_threads_without_holding_them_all_up():
    clock = FakeClock()
    lock = threading.Lock()

    def sleep(seconds):  # each thread sleeps its own reserved delay; the fake time does not move
        with lock:
            clock.sleeps.append(seconds)

    pacer = HostPacer(4.0, clock=clock, sleep=sleep)
    threads = [threading.Thread(target=pacer.wait, args=("example.com",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(clock.sleeps) == pytest.approx([0.25 * n for n in range(1, 8)])


def test_the_fetcher_uses_its_pacer_for_every_hop(site):
    clock = FakeClock()
    site.routes["/a"] = lambda h: h.redirect("/b")
    site.routes["/b"] = lambda h: h.send_body(b"b")
    pacer = HostPacer(2.0, clock=clock, sleep=clock.sleep)
    web = WebFetcher(FetchPolicy(allowed_networks=LOOPBACK), pacer)
    web.get(f"{site.base}/a")
    assert clock.sleeps == pytest.approx([0.5])


# -- robots.txt -------------------------------------------------------------------------------------------


def test_robots_txt_rules_apply_to_the_fetchers_user_agent(site):
    robots = b"User-agent: *\nDisallow: /private/\n\nUser-agent: OtherBot\nDisallow: /\n"
    site.routes["/robots.txt"] = lambda h: h.send_body(robots, "text/plain")
    rules = RobotsRules.fetch(fetcher(), f"{site.base}/docs/index.html")
    assert not rules.allows(f"{site.base}/private/x")
    assert rules.allows(f"{site.base}/public")
    assert site.requests[0][0] == "/robots.txt"


def test_robots_txt_naming_the_bot_applies(site):
    robots = b"User-agent: KnowledgeBot\nDisallow: /\n"
    site.routes["/robots.txt"] = lambda h: h.send_body(robots, "text/plain")
    assert not RobotsRules.fetch(fetcher(), site.base).allows(f"{site.base}/public")


def test_a_missing_robots_txt_allows_everything(site):
    rules = RobotsRules.fetch(fetcher(), f"{site.base}/")
    assert rules.allows(f"{site.base}/private/x")


def test_an_unavailable_robots_txt_fails(site):
    site.routes["/robots.txt"] = lambda h: h.send_error(503)
    with pytest.raises(FetchFailed) as caught:
        RobotsRules.fetch(fetcher(), site.base)
    assert "answered HTTP 503" in caught.value.reason


@pytest.mark.security
def test_robots_txt_on_a_refused_address_is_refused_like_the_page(site):
    assert "loopback" in refusal(lambda: RobotsRules.fetch(fetcher(allowed=()), site.base))
    assert site.requests == []


# -- settings -----------------------------------------------------------------------------------------


def test_parse_networks():
    assert parse_networks("127.0.0.0/8, 10.0.0.5 ,fd00::/8") == (
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("10.0.0.5/32"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert parse_networks("192.168.1.10/24") == (ipaddress.ip_network("192.168.1.0/24"),)
    assert parse_networks("") == parse_networks("  ") == ()


def test_parse_networks_names_the_bad_entry():
    with pytest.raises(ValueError, match="'10.0.0.0/33' is not an IP network"):
        parse_networks("127.0.0.0/8, 10.0.0.0/33")
    with pytest.raises(ValueError, match="'intranet' is not an IP network"):
        parse_networks("intranet")
