"""The SparkSession lipspark runs on: embedded local Spark by default, any cluster by URL.

>>> from lipspark.session import default_conf
>>> default_conf()["spark.ui.enabled"]
'false'
>>> run_concurrently([lambda: 1, lambda: 2])
[1, 2]
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["get_spark", "default_conf", "run_concurrently", "session_like", "without_call_sites", "archive_path", "java_options", "jvm_output"]

_T = TypeVar("_T")
#: Spark jobs one writer submits at once (see :func:`run_concurrently`).
CONCURRENT_JOBS = 4


#: Spark's logging while lipspark starts it: errors only (``verbose`` keeps Spark's own profile)
QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")

#: where a JVM this process starts writes its standard output and error (:func:`jvm_output`)
_JVM_OUTPUT: list[int] = []

#: the environment variable naming the JVM class archive (:mod:`lipspark.class_archive`): a path, or ``off``
ARCHIVE_ENV = "LIPSPARK_CLASS_ARCHIVE"
#: the environment variable whose JVM options a Spark lipspark starts also gets (:func:`default_conf`).
#: The suite sets ``-XX:TieredStopAtLevel=1``: a short process spends about half its JVM's CPU
#: in the C2 compiler otherwise (docs/benchmarks.md, "Short processes")
JVM_OPTIONS_ENV = "LIPSPARK_JVM_OPTIONS"


def archive_path() -> str:
    """Where the JVM class archive (:mod:`lipspark.class_archive`) is, or would be, for this
    environment's pyspark; ``""`` when turned off."""
    given = os.environ.get(ARCHIVE_ENV, "")
    if given.lower() in ("off", "0", "no", "false"):
        return ""
    if given:
        return given
    from importlib.metadata import PackageNotFoundError, version

    try:
        pyspark = version("pyspark")
    except PackageNotFoundError:  # pragma: no cover - pyspark is a dependency
        return ""
    return os.path.join(sys.prefix, "share", "lipspark", f"spark-{pyspark}.jsa")


def java_options(*, verbose: bool = False) -> str:
    """The JVM options that use the archive if it is there (``""`` if not); unless ``verbose``,
    the JVM's note that it could not use one (another JDK, another class path) is silenced."""
    path = archive_path()
    if not path or not os.path.isfile(path):
        return ""
    return f"-XX:SharedArchiveFile={path}" + ("" if verbose else " -Xlog:cds=off -Xlog:cds+dynamic=off")


def default_conf(shuffle_partitions: int = 4, *, verbose: bool = False, archive: bool = True) -> dict[str, str]:
    """Settings for a small, quiet embedded Spark (local[2], UI off, few shuffle partitions);
    unless ``verbose``, the JVM logs errors only from its start (no start-up notes). With
    ``archive``, the JVM maps the classes of :mod:`lipspark.class_archive` if it was built
    (:func:`java_options`). ``$LIPSPARK_JVM_OPTIONS`` is added to the JVM's options."""
    options = " ".join(o for o in ("" if verbose else f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}",
                                   java_options(verbose=verbose) if archive else "",
                                   os.environ.get(JVM_OPTIONS_ENV, "").strip()) if o)
    return {**({"spark.driver.extraJavaOptions": options} if options else {}),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": "2",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": "4g",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.compression.codec": "zstd",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }


@contextlib.contextmanager
def jvm_output(fd: int) -> Iterator[None]:
    """Within this block, a JVM :func:`get_spark` starts writes its standard output and error to
    the file descriptor ``fd`` instead of this process's own. A run that stays on as its store's
    replay service (:func:`lipspark.workflow.service.run_then_serve`) relays them, so that once it
    has left the terminal no JVM holds the terminal, or a pipe its reader waits to see closed.

    >>> with jvm_output(2):
    ...     pass
    """
    _JVM_OUTPUT.append(fd)
    try:
        yield
    finally:
        _JVM_OUTPUT.pop()


def _launch_jvm(settings: dict[str, str]) -> None:
    """Start Spark's JVM with ``settings`` (as the builder would) and its output to :func:`jvm_output`'s
    descriptor; the session the builder then creates runs on it."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    fd = _JVM_OUTPUT[-1]
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    SparkContext._ensure_initialized(gateway=launch_gateway(conf, popen_kwargs={"stdout": fd, "stderr": fd}))


def get_spark(
    master: str | None = None,
    *,
    app_name: str = "lipspark",
    shuffle_partitions: int = 4,
    conf: dict[str, str] | None = None,
    verbose: bool = False,
) -> "SparkSession":
    """Return (creating if needed) the SparkSession lipspark uses.

    Parameters
    ----------
    master
        Spark master URL; ``None`` means embedded ``local[2]`` (or ``$LIPSPARK_MASTER``).
    app_name
        Application name shown by the cluster manager.
    shuffle_partitions
        ``spark.sql.shuffle.partitions``; small values suit one machine.
    conf
        Extra Spark settings, applied last.
    verbose
        Keep Spark's own logging (start-up notes and warnings); by default a session this call
        starts logs errors only.

    A session that already exists (the user's own, say) is returned as it is: its log level is
    quieted to ``ERROR`` only when this call creates the session.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    existed = SparkContext._active_spark_context is not None  # someone else's Spark: leave its settings alone
    settings = {"spark.master": master or os.environ.get("LIPSPARK_MASTER", "local[2]"), "spark.app.name": app_name,
                **default_conf(shuffle_partitions, verbose=verbose), **(conf or {})}
    if _JVM_OUTPUT and SparkContext._gateway is None:
        _launch_jvm(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not existed and not verbose:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def session_like(spark: Any) -> Any:
    """A new session of ``spark``'s Spark application with ``spark``'s SQL settings as they are
    now: its temporary views, functions and later settings are its own (``newSession()`` alone
    would start from the application's settings, losing those changed at run time, such as
    ``spark.sql.caseSensitive``). Work that runs beside other work on one Spark — a replay beside
    another, probes beside a run — runs module code in one, so that a module's
    ``createOrReplaceTempView`` is never another's."""
    new = spark.newSession()
    settings = spark.conf.getAll
    for key, value in (settings() if callable(settings) else settings).items():
        if new.conf.isModifiable(key) and new.conf.get(key, None) != value:
            new.conf.set(key, value)
    return new


_CALL_SITES_LOCK = threading.Lock()
_CALL_SITES = threading.local()  # .off: how many without_call_sites() this thread is inside
_CALL_SITES_SWITCH: list[bool] = []  # [whether pyspark's check could be wrapped], once decided


def _call_sites_switch() -> bool:
    """Wrap PySpark's check of whether to capture call sites (once per process) so that it
    answers no in a thread inside :func:`without_call_sites`; whether that could be done."""
    with _CALL_SITES_LOCK:
        if not _CALL_SITES_SWITCH:
            try:
                import pyspark.errors.utils as pyspark_utils_module

                pyspark_utils: Any = pyspark_utils_module
            except ImportError:  # pragma: no cover - pyspark is a dependency
                pyspark_utils = None
            original = getattr(pyspark_utils, "is_debugging_enabled", None)
            if callable(original):
                def is_debugging_enabled() -> bool:
                    return False if getattr(_CALL_SITES, "off", 0) else bool(original())

                setattr(pyspark_utils, "is_debugging_enabled", is_debugging_enabled)
            _CALL_SITES_SWITCH.append(callable(original))
        return _CALL_SITES_SWITCH[0]


@contextlib.contextmanager
def without_call_sites() -> Iterator[None]:
    """Module code this thread runs inside does not send PySpark's call sites to the JVM.

    PySpark (classic, 4.x) wraps every column function so that it first tells the JVM the
    Python ``file:line`` that called it, for the DataFrame context of Spark's error messages:
    several Py4J round trips per function. Work that re-runs module code which already ran, or
    that only plans it, has no use for them: a replay
    (:func:`lipspark.workflow.replay.replay_invocation`; a car dealer's bid and buy replay in
    0.84× the time) and a layout probe (:mod:`lipspark.workflow.layouts`; the probes of ten car
    dealership executions in half the time). A run keeps them: crash culprits name the
    operation by its call site. The switch is per thread (a probe beside a run leaves the run's
    call sites alone) and nests; where this PySpark has no such check, nothing changes.

    >>> with without_call_sites():
    ...     pass
    """
    if not _call_sites_switch():
        yield
        return
    _CALL_SITES.off = getattr(_CALL_SITES, "off", 0) + 1
    try:
        yield
    finally:
        _CALL_SITES.off -= 1


def run_concurrently(actions: Sequence[Callable[[], _T]], *, workers: int = CONCURRENT_JOBS) -> list[_T]:
    """Run Spark actions (writes, mostly) from several threads at once; their results in order.

    A workflow writes many small relations, and a small Spark job spends most of its time on
    the driver (planning, scheduling, committing files) rather than on the executors' cores, so
    the jobs of one invocation overlap well on ``local[2]``. Every action runs to its end; the
    first error (in the order of ``actions``) is raised after all have finished, so nothing is
    still writing when the caller cleans up. Actions must not depend on each other's results.
    """
    if len(actions) <= 1:
        return [a() for a in actions]
    with ThreadPoolExecutor(max_workers=min(workers, len(actions)), thread_name_prefix="lipspark-job") as pool:
        futures = [pool.submit(a) for a in actions]
    for f in futures:  # the pool has joined every thread: all actions are done
        err = f.exception()
        if err is not None:
            raise err
    return [f.result() for f in futures]
