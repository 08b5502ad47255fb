"""One SparkSession for the whole suite: local[2], UI off, few shuffle partitions."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)


@pytest.fixture(scope="session")
def spark():
    from lipspark.session import get_spark

    session = get_spark(app_name="lipspark-tests")
    yield session
    session.stop()
