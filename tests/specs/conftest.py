"""The shipped catalog, loaded once for the spec tests."""

from __future__ import annotations

import pytest
from spec_paths import REPO

from framework.specs import Catalog


@pytest.fixture(scope="session")
def shipped() -> Catalog:
    return Catalog.for_project(REPO)
