"""A SAML 2.0 identity provider for the tests: pysaml2's Server (another SAML implementation than
the product's python3-saml) behind a small HTTP server on 127.0.0.1, in a thread.

* GET /metadata: its metadata (the product can be configured from this URL, or from a file);
* GET /sso/redirect: the sign-in form for an AuthnRequest sent by HTTP-Redirect; POST signs the
  user in and answers with a page holding the signed response in a form (Continue posts it to the
  product's ACS, as a browser would);
* GET /unsolicited?user=…&acs=…: a response nobody asked for (IdP-initiated sign-in).

``tamper`` makes the answers an attack: "unsigned" (nothing signed), "unsigned-assertion" (the
response signed, not the assertion in it), "foreign-key" (signed by a key the metadata does not
name), "edited" (an attribute changed after signing), "audience" (issued to another service
provider), "sha1" (a deprecated signature algorithm).
"""

from __future__ import annotations

import base64
import contextlib
import html
import http.server
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests
from saml2 import BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_PERSISTENT
from saml2.server import Server

from tests.identity.certs import KeyPair, self_signed
from tests.served import LoopbackHandler, free_port

RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
RSA_SHA1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
SHA1 = "http://www.w3.org/2000/09/xmldsig#sha1"
ANOTHER_SP = "https://another-service.example.org/saml/metadata/"
XMLSEC = "/usr/bin/xmlsec1"
# The host the product's test client calls itself in the SAML tests: python3-saml refuses the
# default "testserver" in its settings' addresses (a single-label domain).
OUR_HOST = "knowledge.example.org"
OUR_ORIGIN = f"http://{OUR_HOST}"


class SamlIdp:
    def __init__(self, directory: Path, users: dict, port: int):
        self.directory = directory
        self.users = users  # {login: {attribute name: [values]}}
        self.url = f"http://127.0.0.1:{port}"
        self.entity_id = f"{self.url}/metadata"
        self.keys = self_signed(directory, "idp", "test idp")
        self.foreign_keys = self_signed(directory, "foreign", "test idp")  # same name, other key
        self.tamper = ""
        self._servers: dict[str, Server] = {}

    def _config(self, keys: KeyPair, sp_metadata: Path | None = None) -> IdPConfig:
        policy = {"sign_assertion": True, "sign_response": False, "lifetime": {"minutes": 5}}
        policy |= {"name_form": "urn:oasis:names:tc:SAML:2.0:attrname-format:uri"}
        return IdPConfig().load(
            {
                "entityid": self.entity_id,
                "key_file": str(keys.key_file),
                "cert_file": str(keys.cert_file),
                "xmlsec_binary": XMLSEC,
                "metadata": {"local": [str(sp_metadata), str(self._another_sp(sp_metadata))]}
                if sp_metadata
                else {},
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [(f"{self.url}/sso/redirect", BINDING_HTTP_REDIRECT)]
                        },
                        "policy": {"default": policy},
                        "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                    }
                },
            }
        )

    def _another_sp(self, sp_metadata: Path) -> Path:
        """Another service provider this one knows (at the product's ACS, for the "audience" attack:
        a response issued to someone else, posted to the product)."""
        text = sp_metadata.read_text()
        entity_id = re.search(r'entityID="([^"]+)"', text).group(1)
        other = sp_metadata.with_suffix(".other.xml")
        other.write_text(text.replace(f'entityID="{entity_id}"', f'entityID="{ANOTHER_SP}"'))
        return other

    def metadata(self) -> str:
        return create_metadata_string(None, config=self._config(self.keys), valid=4, sign=False).decode()

    def trust(self, sp_metadata: bytes) -> None:
        """Knows the product as a service provider from its metadata (the product serves it)."""
        path = self.directory / f"sp-{len(self._servers)}.xml"
        path.write_bytes(sp_metadata)
        self._servers = {
            "own": Server(config=self._config(self.keys, path)),
            "foreign-key": Server(config=self._config(self.foreign_keys, path)),
        }

    def _server(self) -> Server:
        return self._servers["foreign-key" if self.tamper == "foreign-key" else "own"]

    def answer(self, saml_request: str, login: str) -> tuple[str, str]:
        """The ACS address and the base64 SAMLResponse for ``login``'s sign-in."""
        server = self._server()
        request = server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT)
        args = server.response_args(request.message)
        return args["destination"], self._response(login, args)

    def unsolicited(self, login: str, acs: str, sp_entity_id: str) -> str:
        args = {"in_response_to": None, "destination": acs, "sp_entity_id": sp_entity_id}
        return self._response(login, {**args, "name_id_policy": None})

    def _response(self, login: str, args: dict) -> str:
        if self.tamper == "audience":
            args = {**args, "sp_entity_id": ANOTHER_SP}
        sha1 = self.tamper == "sha1"
        response = self._server().create_authn_response(
            self.users[login],
            userid=login,
            sign_assertion=self.tamper not in ("unsigned", "unsigned-assertion"),
            sign_response=self.tamper == "unsigned-assertion",
            sign_alg=RSA_SHA1 if sha1 else RSA_SHA256,
            digest_alg=SHA1 if sha1 else SHA256,
            authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password"},
            **args,
        )
        xml = str(response)
        if self.tamper == "edited":
            xml = xml.replace(">engineering<", ">administrators<")
        return base64.b64encode(xml.encode()).decode()


def continue_page(acs: str, saml_response: str, relay_state: str) -> bytes:
    """What a provider shows after the sign-in: a form the browser posts to the product's ACS."""
    fields = [("SAMLResponse", saml_response), ("RelayState", relay_state)]
    inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in fields)
    return (
        f'<html><body><form method="post" action="{html.escape(acs)}">{inputs}'
        f'<button type="submit">Continue</button></form></body></html>'
    ).encode()


def login_page(saml_request: str, relay_state: str) -> bytes:
    fields = [("SAMLRequest", saml_request), ("RelayState", relay_state)]
    inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in fields)
    return (
        '<html><body><form method="post" action="/sso/redirect">'
        f'{inputs}<input name="username"><input name="password" type="password">'
        '<button type="submit">Sign in</button></form></body></html>'
    ).encode()


def _handler(idp: SamlIdp):
    class Handler(LoopbackHandler):
        def do_GET(self):
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/metadata":
                self.send_body(200, idp.metadata().encode(), "application/samlmetadata+xml")
            elif parts.path == "/sso/redirect":
                self.send_body(200, login_page(query["SAMLRequest"], query.get("RelayState", "")))
            elif parts.path == "/unsolicited":
                response = idp.unsolicited(query["user"], query["acs"], query["sp"])
                self.send_body(200, continue_page(query["acs"], response, ""))
            else:
                self.send_body(404, b"not found")

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            try:
                acs, response = idp.answer(form["SAMLRequest"], form["username"])
            except Exception as exc:  # shown to the test, which fails on it
                self.send_body(400, f"the provider refused: {exc!r}".encode())
                return
            self.send_body(200, continue_page(acs, response, form.get("RelayState", "")))

    return Handler


@contextlib.contextmanager
def saml_idp(directory: Path, users: dict) -> Iterator[SamlIdp]:
    """A running provider for ``users`` ({login: {attribute: [values]}}); call ``trust`` with the
    product's service-provider metadata before the first sign-in."""
    port = free_port()
    idp = SamlIdp(directory, users, port)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(idp))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()


# Signing in through it, the way a browser would: the product's test client on our side,
# `requests` on the provider's.


@dataclass(frozen=True)
class ProviderAnswer:
    acs_path: str  # the product's ACS, where the Continue button posts
    fields: dict  # SAMLResponse and RelayState


def _hidden_fields(page: str) -> dict:
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


def answer_from_provider(client, slug: str, login: str) -> ProviderAnswer:
    """Presses "Sign in with …", signs in at the provider as ``login``; returns its answer (not yet
    posted to the product)."""
    start = client.post(f"/accounts/saml/{slug}/login/")
    assert start.status_code == 302, start.content[:500]
    browser = requests.Session()
    form = browser.get(start["Location"], timeout=30)
    assert form.status_code == 200 and 'name="username"' in form.text, form.text[:500]
    fields = {**_hidden_fields(form.text), "username": login, "password": "any"}
    page = browser.post(urljoin(form.url, "/sso/redirect"), data=fields, timeout=30)
    assert page.status_code == 200, page.text[:500]
    return _answer(page.text)


def _answer(page: str) -> ProviderAnswer:
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page).group(1))
    assert action.startswith(OUR_ORIGIN), action
    return ProviderAnswer(acs_path=action[len(OUR_ORIGIN) :], fields=_hidden_fields(page))


def unsolicited_answer(idp: SamlIdp, slug: str, login: str) -> ProviderAnswer:
    """A response the provider sends on its own (IdP-initiated sign-in)."""
    acs = f"{OUR_ORIGIN}/accounts/saml/{slug}/acs/"
    query = urlencode({"user": login, "acs": acs, "sp": f"{OUR_ORIGIN}/accounts/saml/{slug}/metadata/"})
    return _answer(requests.get(f"{idp.url}/unsolicited?{query}", timeout=30).text)


def post_answer(client, answer: ProviderAnswer):
    """Posts the provider's answer to the ACS as the Continue button does; returns the product's
    answer to the step after (allauth's ACS stores the post and redirects to its finish view)."""
    stored = client.post(answer.acs_path, answer.fields)
    assert stored.status_code == 302, stored.content[:500]
    return client.get(stored["Location"])


def sign_in(client, slug: str, login: str):
    return post_answer(client, answer_from_provider(client, slug, login))
