"""One fake Vertex JobService per test module, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.vertex_job_service import FakeJobService


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeJobService]:
    with FakeJobService() as service:
        yield service


@pytest.fixture
def clean_fake(fake: FakeJobService) -> FakeJobService:
    fake.reset()
    return fake
