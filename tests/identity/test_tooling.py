"""What the identity features and their tests need is installed: a missing piece fails here, loudly.

The SAML engine imports only when xmlsec's bundled libxml2 is lxml's; a lock upgrade that moves one
without the other breaks SAML sign-in at import, so this test is the alarm. The test providers
(slapd, xmlsec1, Node with the locked oidc-provider) come from scripts/ensure_identity_servers.sh,
which `make test` runs: a skip would only hide a broken set-up.
"""

import importlib
import shutil
from pathlib import Path

import pytest

OIDC_DIR = Path(__file__).resolve().parent / "oidc"


@pytest.mark.parametrize(
    "module", ["onelogin.saml2.auth", "ldap", "xmlsec", "allauth.mfa", "django_auth_ldap"]
)
def test_the_identity_libraries_import(module):
    importlib.import_module(module)


def test_xmlsec_and_lxml_share_one_libxml2():
    import xmlsec
    from lxml import etree

    assert xmlsec.get_libxml_version() == etree.LIBXML_VERSION[:3]


@pytest.mark.parametrize("program", ["slapd", "ldapdelete", "xmlsec1", "node"])
def test_the_test_servers_are_installed(program):
    found = shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/bin")
    if found is None:
        pytest.fail(f"{program} is missing: scripts/ensure_identity_servers.sh installs it")


def test_the_locked_oidc_provider_is_installed():
    installed = OIDC_DIR / "node_modules" / "oidc-provider" / "package.json"
    if not installed.exists():
        pytest.fail("oidc-provider is missing: scripts/ensure_identity_servers.sh runs npm ci")
    assert '"version": "9.13.3"' in installed.read_text()


ROOT = OIDC_DIR.parents[2]


def commands(script: str) -> list[str]:
    text = (ROOT / "scripts" / script).read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_install_gets_python_ldaps_headers_before_the_first_pip_install():
    lines = commands("install.sh")
    headers = lines.index("scripts/ensure_build_packages.sh")
    first_pip = next(number for number, line in enumerate(lines) if "pip install" in line)
    assert headers < first_pip


def test_the_test_command_installs_the_identity_providers_before_pytest():
    lines = commands("test.sh")
    assert lines.index("scripts/ensure_identity_servers.sh") < next(
        number for number, line in enumerate(lines) if "pytest" in line
    )
