"""Fixtures of the integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tls_pki(tmp_path_factory):
    """A test CA with a server and a client certificate, and another CA's client (tests/tls_pki.py)."""
    from tests.tls_pki import make_pki

    return make_pki(tmp_path_factory.mktemp("pki"))
