"""Keys and certificates the test identity providers use, made with `cryptography` (no openssl
command): a self-signed signing certificate (SAML) and a CA with a server certificate for
127.0.0.1 (LDAP over TLS)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class KeyPair:
    key_file: Path
    cert_file: Path

    @property
    def cert_base64(self) -> str:
        """The certificate's body, as SAML metadata and allauth's x509cert carry it."""
        lines = self.cert_file.read_text().splitlines()
        return "".join(line for line in lines if "-----" not in line)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, stem: str, key, cert) -> KeyPair:
    key_file, cert_file = directory / f"{stem}.key", directory / f"{stem}.crt"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_file.chmod(0o600)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return KeyPair(key_file=key_file, cert_file=cert_file)


def _builder(subject: str, issuer: str, public_key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
    )


def self_signed(directory: Path, stem: str, common_name: str) -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = _builder(common_name, common_name, key.public_key()).sign(key, hashes.SHA256())
    return _write(directory, stem, key, cert)


def ca_and_server(directory: Path, stem: str) -> tuple[KeyPair, KeyPair]:
    """A CA, and a certificate it issued for 127.0.0.1 (the address the tests connect to)."""
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_cert = (
        _builder(f"{stem} test CA", f"{stem} test CA", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (
        _builder("127.0.0.1", f"{stem} test CA", key.public_key())
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _write(directory, f"{stem}-ca", ca_key, ca_cert), _write(directory, stem, key, cert)
