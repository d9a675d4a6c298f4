"""The shipped catalog, loaded once for the spec tests."""

from __future__ import annotations

import pytest
from paths import ROOT as REPO

from framework.specs import Catalog


@pytest.fixture(scope="session")
def shipped() -> Catalog:
    return Catalog.for_project(REPO)
