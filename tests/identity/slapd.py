"""An OpenLDAP directory for the tests: Debian's slapd in a temporary directory, on free loopback
ports, plain LDAP (for StartTLS) and LDAPS, with a certificate from a CA made for the test.

Its entries (seeded with slapadd): ou=people with inetOrgPerson users and ou=groups with
groupOfNames groups. slapd's memberOf overlay does not run under slapadd, so the product reads
membership with a group search, as it should anyway.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ldap
import pytest

from tests.identity.certs import ca_and_server
from tests.served import free_port, wait_for_port

BASE = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{BASE}"
ADMIN_PASSWORD = "directory-admin-secret"  # the test directory's; not a secret outside it
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


@dataclass(frozen=True)
class User:
    uid: str
    password: str
    mail: str
    groups: tuple[str, ...] = ()

    @property
    def dn(self) -> str:
        return f"uid={self.uid},{PEOPLE}"


USERS = (
    User("alice", "alice-directory-pass", "alice@example.org", ("engineering",)),
    User("dave", "dave-directory-pass", "dave@example.org", ("engineering", "sales")),
    User("erin", "erin-directory-pass", "erin@example.org", ("sales",)),
)


@dataclass(frozen=True)
class Directory:
    ldap_uri: str
    ldaps_uri: str
    ca_file: Path  # the CA that issued the server's certificate
    wrong_ca_file: Path  # a CA that did not
    process: subprocess.Popen

    def stop(self) -> None:
        """The directory goes away (its server stops), as in an outage."""
        self.process.terminate()
        self.process.wait(timeout=30)

    def delete(self, dn: str) -> None:
        """Removes an entry, as an administrator would (python-ldap, over StartTLS)."""
        connection = ldap.initialize(self.ldap_uri)
        connection.set_option(ldap.OPT_X_TLS_CACERTFILE, str(self.ca_file))
        connection.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
        connection.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
        connection.start_tls_s()
        connection.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        for group in ("engineering", "sales"):  # a groupOfNames keeps a member's DN otherwise
            with contextlib.suppress(ldap.LDAPError):
                connection.modify_s(f"cn={group},{GROUPS}", [(ldap.MOD_DELETE, "member", [dn.encode()])])
        connection.delete_s(dn)
        connection.unbind_s()


def _seed(users=USERS) -> str:
    entries = [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups",
    ]
    for user in users:
        entries.append(
            f"dn: {user.dn}\nobjectClass: inetOrgPerson\nuid: {user.uid}\ncn: {user.uid.title()}\n"
            f"sn: {user.uid.title()}\ngivenName: {user.uid.title()}\nmail: {user.mail}\n"
            f"userPassword: {user.password}"
        )
    for group in sorted({group for user in users for group in user.groups}):
        members = "".join(f"\nmember: {user.dn}" for user in users if group in user.groups)
        entries.append(f"dn: cn={group},{GROUPS}\nobjectClass: groupOfNames\ncn: {group}{members}")
    return "\n\n".join(entries) + "\n"


def _config(directory: Path, cert_file: Path, key_file: Path) -> str:
    includes = "".join(f"include /etc/ldap/schema/{schema}.schema\n" for schema in SCHEMAS)
    return (
        f"{includes}modulepath /usr/lib/ldap\nmoduleload back_mdb\n"
        f"pidfile {directory}/slapd.pid\n"
        f"TLSCertificateFile {cert_file}\nTLSCertificateKeyFile {key_file}\n"
        f'database mdb\nsuffix "{BASE}"\nrootdn "{ADMIN_DN}"\nrootpw {ADMIN_PASSWORD}\n'
        f"directory {directory}/data\nmaxsize 10485760\n"
        "access to attrs=userPassword by anonymous auth by self write by * none\n"
        "access to * by * read\n"
    )


def _program(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if found is None:
        pytest.fail(f"{name} is missing: scripts/ensure_identity_servers.sh installs it")
    return found


@contextlib.contextmanager
def slapd(directory: Path) -> Iterator[Directory]:
    """A running directory seeded with USERS; fails (never skips) without slapd."""
    ca, server = ca_and_server(directory, "slapd")
    wrong_ca, _ = ca_and_server(directory, "other")
    (directory / "data").mkdir()
    config = directory / "slapd.conf"
    config.write_text(_config(directory, server.cert_file, server.key_file))
    (directory / "seed.ldif").write_text(_seed())
    subprocess.run(
        [_program("slapadd"), "-f", str(config), "-l", str(directory / "seed.ldif")],
        check=True,
        capture_output=True,
    )
    port, tls_port = free_port(), free_port()
    urls = f"ldap://127.0.0.1:{port}/ ldaps://127.0.0.1:{tls_port}/"
    log = directory / "slapd.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [_program("slapd"), "-f", str(config), "-h", urls, "-d", "0"], stdout=output, stderr=output
        )
    try:
        wait_for_port(tls_port, process, log.read_text, seconds=30)
        wait_for_port(port, process, log.read_text, seconds=30)
        yield Directory(
            ldap_uri=f"ldap://127.0.0.1:{port}",
            ldaps_uri=f"ldaps://127.0.0.1:{tls_port}",
            ca_file=ca.cert_file,
            wrong_ca_file=wrong_ca.cert_file,
            process=process,
        )
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
