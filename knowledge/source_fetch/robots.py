"""What a site's robots.txt lets the fetcher read (knowledge.source_fetch.web fetches it)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

from knowledge.source_fetch.web import FetchFailed, WebFetcher


class RobotsRules:
    """What a site's robots.txt lets the fetcher's user agent read.

    ``fetch`` reads it through the same fetcher, so it is paced and checked like any page:
    - 2xx: its rules. 4xx (404, and 401/403 too, as RFC 9309 says): no rules, everything is allowed.
    - 5xx or another status: raises FetchFailed. RFC 9309 says an unreachable robots.txt means
      "disallow everything"; failing loudly does that without letting a site's passing outage look
      like a site with no pages.
    - FetchRefused (an internal address, too large, too slow) and FetchFailed propagate: the pages
      of that host would meet the same refusal, and the caller reports it once with its reason (the
      end of the work's budget is one)."""

    def __init__(self, text: str, user_agent: str):
        self.user_agent = user_agent
        self._parser = RobotFileParser()
        self._parser.parse(text.splitlines())

    @classmethod
    def fetch(cls, fetcher: WebFetcher, base_url: str) -> RobotsRules:
        parts = urlsplit(base_url.strip())
        robots_url = urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))
        result = fetcher.get(robots_url)
        user_agent = fetcher.policy.user_agent
        if 200 <= result.status < 300:
            return cls(result.body.decode("utf-8", errors="replace"), user_agent)
        if 400 <= result.status < 500:
            return cls("", user_agent)
        raise FetchFailed(
            f"{robots_url} answered HTTP {result.status}; nothing is fetched until it is readable"
        )

    def allows(self, url: str) -> bool:
        return self._parser.can_fetch(self.user_agent, url)
