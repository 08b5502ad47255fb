"""The JVM class archive: where it is, the options that use it, and that a JVM given one it
cannot use (or none) still runs Spark, quietly."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lipspark import class_archive
from lipspark.session import ARCHIVE_ENV, QUIET_LOG4J, archive_path, default_conf, java_options


def test_archive_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    from importlib.metadata import version

    assert archive_path() == os.path.join(sys.prefix, "share", "lipspark", f"spark-{version('pyspark')}.jsa")
    monkeypatch.setenv(ARCHIVE_ENV, str(tmp_path / "x.jsa"))
    assert archive_path() == str(tmp_path / "x.jsa")
    for off in ("off", "OFF", "0"):
        monkeypatch.setenv(ARCHIVE_ENV, off)
        assert archive_path() == ""
        assert java_options() == ""


def test_options_only_when_the_archive_exists(monkeypatch, tmp_path):
    from lipspark.session import JVM_OPTIONS_ENV

    monkeypatch.delenv(JVM_OPTIONS_ENV, raising=False)  # the suite's own (tests/conftest.py)
    path = tmp_path / "spark.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, str(path))
    assert java_options() == ""
    assert default_conf()["spark.driver.extraJavaOptions"] == f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"
    assert "spark.driver.extraJavaOptions" not in default_conf(verbose=True)
    path.write_bytes(b"not an archive")
    assert java_options() == f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off"
    assert java_options(verbose=True) == f"-XX:SharedArchiveFile={path}"
    options = default_conf()["spark.driver.extraJavaOptions"].split()
    assert options[0].startswith("-Dlog4j2") and f"-XX:SharedArchiveFile={path}" in options
    assert "SharedArchiveFile" not in default_conf(archive=False)["spark.driver.extraJavaOptions"]
    assert default_conf(verbose=True)["spark.driver.extraJavaOptions"] == f"-XX:SharedArchiveFile={path}"


def test_off_is_a_note_not_an_error(monkeypatch, capsys):
    monkeypatch.setenv(ARCHIVE_ENV, "off")
    assert class_archive.main([]) == 0
    assert "turned off" in capsys.readouterr().out
    with pytest.raises(ValueError, match="turned off"):
        class_archive.build()


_JOB = ("from lipspark.session import get_spark; s = get_spark(); "
        "print(s.range(10).selectExpr('id % 3 as k').groupBy('k').count().orderBy('k').collect())")


@pytest.mark.slow
def test_built_archive_is_used_and_a_foreign_one_is_ignored_quietly(tmp_path, monkeypatch):
    env = {**os.environ, ARCHIVE_ENV: str(tmp_path / "spark.jsa")}
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    made = archive_path()
    if os.path.isfile(made):  # `make` built it (.venv/.installed fails if that fails): a copy, not 90 s of building again
        shutil.copyfile(made, tmp_path / "spark.jsa")
    else:
        built = subprocess.run([sys.executable, "-m", "lipspark.class_archive"], env=env, capture_output=True, text=True, timeout=900)
        assert built.returncode == 0, built.stderr
        assert not list(tmp_path.glob("*.tmp")), built.stdout
    assert (tmp_path / "spark.jsa").is_file()
    expected = "[Row(k=0, count=4), Row(k=1, count=3), Row(k=2, count=3)]"
    used = subprocess.run([sys.executable, "-c", _JOB], env=env, capture_output=True, text=True, timeout=600)
    assert used.returncode == 0 and used.stdout.strip() == expected, used.stderr
    (tmp_path / "spark.jsa").write_bytes(b"garbage: another JDK's archive, say")
    foreign = subprocess.run([sys.executable, "-c", _JOB], env=env, capture_output=True, text=True, timeout=600)
    assert foreign.returncode == 0 and foreign.stdout.strip() == expected, foreign.stderr
    assert "cds" not in foreign.stderr.lower() and "shared archive" not in foreign.stderr.lower(), foreign.stderr
