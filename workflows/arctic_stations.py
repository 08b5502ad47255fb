"""Arctic stations (Lipstick §5.2, Figure 4; WorkflowGen): meteorological stations find the coldest month.

The workflow models meteorological stations of the Russian Arctic. One input module ``in``
takes a request — the current year and month and a *selectivity* (``all``, ``season``,
``month`` or ``year``) — and passes it to every station module ``sta1`` … ``staN``
(2 ≤ N ≤ 24). Each execution, a station

1. takes a measurement of six meteorological variables (air temperature, pressure, humidity,
   wind speed, precipitation, snow depth) for the requested year and month and records it in
   its state ``Observations`` (the new row is computed from the request with column
   expressions, so its provenance is the request);
2. computes the lowest air temperature in its state for the selectivity: every observation
   (``all``), the requested month's season over all years (``season``: DJF, MAM, JJA, SON),
   the requested calendar month over all years (``month``) or the requested year (``year``);
3. takes the minimum of that and the ``MinTemp`` values of its predecessor stations;
4. outputs it as ``MinTemp_staK(Station, MinTemp)`` (one row, ``Station`` is its name).

The output module ``out`` outputs the overall minimum, ``Result(MinTemp)``.

Topologies (``topology``, Figure 4; ``in`` also has an edge to every station carrying the
request, relation ``StationRequest``, which the figure leaves implicit):

* ``serial``: in → sta1 → sta2 → … → staN → out;
* ``parallel``: in → every station → out;
* ``dense``: the stations in layers of ``fanout`` (the last one may be smaller); every station
  of a layer feeds every station of the next; ``in`` feeds the first layer and the last layer
  feeds ``out`` (Figure 4(c): 9 stations, fan-out 3). Fan-out 1 is serial, fan-out ≥ N parallel.

A station's input relations are named by the station they come from (``MinTemp_sta3``), so each
station is its own module, declaring the inputs its predecessors send it.

Parameters (``lipspark run workflows/arctic_stations.py --param topology=dense --param
stations=9 --param fanout=3``):

``topology``    serial | parallel | dense (default parallel)
``stations``    number of station modules, 2–24 (default 4)
``fanout``      layer width of the dense topology, ≥ 1 (default 2)
``selectivity`` all | season | month | year (default month)
``numExec``     executions per run (default 3)
``seed``        seed of the synthetic climatology and of the measurement noise (default 0)
``year``, ``month``  the request of execution 1 (default 2001-01); each execution advances
                one month
``years``       years of synthetic history per station, ending in 2000 (default 40: 1961–2000,
                480 monthly rows per station); not used with ``observations``
``observations`` path of a CSV of real monthly observations (see :func:`load_observations_csv`);
                empty (default): synthetic data

The data is synthetic unless ``observations`` is given. The paper uses the NSIDC dataset of
monthly observations of Russian Arctic stations, 1961–2000, which cannot be fetched here; the
generator below follows a plausible high-Arctic climatology instead: a seasonal cycle of air
temperature from about −25…−33 °C in January to 0…+9 °C in July depending on the station's
latitude and continentality, a warming trend of 0.03 °C per year, larger variability in winter,
pressure around 1012 hPa, humidity 76–94 %, wind 3–10 m/s, precipitation 6–40 mm a month and a
snow depth peaking in spring. Station names and latitudes are those of real (approximate) Arctic
stations; stations beyond the named ones are numbered. New measurements follow the same model
(the climatology plus deterministic noise of the station, year and month), so a run is fully
reproducible. With ``observations``, the history comes from the file and new measurements follow
each station's monthly means and spread in it.
"""
from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from itertools import pairwise
from typing import Any

from pyspark.sql import functions as F

from lipspark.errors import WorkflowError
from lipspark.workflow import Module, Workflow, WorkflowDefinition

TOPOLOGIES = ("serial", "parallel", "dense")
SELECTIVITIES = ("all", "season", "month", "year")
MIN_STATIONS, MAX_STATIONS = 2, 24
#: The synthetic history runs from FIRST_YEAR to LAST_YEAR (the paper's 1961–2000).
FIRST_YEAR, LAST_YEAR = 1961, 2000
#: Warming trend of the synthetic air temperature, °C per year after FIRST_YEAR.
TREND = 0.03

REQUEST = "Year int, Month int, Selectivity string"
VARIABLES = ("AirTemp", "Pressure", "Humidity", "WindSpeed", "Precipitation", "SnowDepth")
OBSERVATIONS = "Station string, Year int, Month int, " + ", ".join(f"{v} double" for v in VARIABLES)
MINTEMP = "Station string, MinTemp double"
RESULT = "MinTemp double"
OBSERVATION_COLUMNS = ("Station", "Year", "Month", *VARIABLES)

#: Named stations: (name, latitude °N, continentality 0 = open sea … 1 = continental coast).
NAMED_STATIONS = (
    ("Ostrov Kotelnyj", 76.0, 0.6),
    ("Mys Chelyuskin", 77.7, 0.4),
    ("Dikson", 73.5, 0.5),
    ("Tiksi", 71.6, 0.9),
    ("Ostrov Vize", 79.5, 0.1),
    ("Malye Karmakuly", 72.4, 0.1),
    ("Ostrov Kheisa", 80.6, 0.2),
    ("Bukhta Tikhaya", 80.3, 0.2),
    ("Mys Zhelaniya", 76.9, 0.2),
    ("Ostrov Uedineniya", 77.5, 0.2),
    ("Ostrov Golomyannyj", 79.5, 0.3),
    ("Mys Sterlegova", 75.4, 0.5),
    ("Ostrov Preobrazheniya", 74.7, 0.6),
    ("Khatanga", 72.0, 1.0),
    ("Amderma", 69.8, 0.3),
    ("Marre-Sale", 69.7, 0.4),
    ("Ostrov Chetyrekhstolbovoj", 70.6, 0.7),
    ("Mys Shmidta", 68.9, 0.6),
    ("Ostrov Vrangelya", 71.0, 0.4),
    ("Ambarchik", 69.6, 0.8),
)

SEASONS = {12: "DJF", 1: "DJF", 2: "DJF", 3: "MAM", 4: "MAM", 5: "MAM",
           6: "JJA", 7: "JJA", 8: "JJA", 9: "SON", 10: "SON", 11: "SON"}
#: Snow depth (cm) through the year at a typical station, January first.
_SNOW_SHAPE = (30.0, 33.0, 36.0, 38.0, 32.0, 15.0, 2.0, 0.0, 3.0, 10.0, 18.0, 25.0)


# ---------------------------------------------------------------------------- parameters
def _int(params: dict[str, Any], name: str) -> int:
    v = params[name]
    if isinstance(v, bool):
        raise WorkflowError(f"parameter {name!r} expects an integer, got {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    try:
        return int(str(v).strip())
    except ValueError:
        raise WorkflowError(f"parameter {name!r} expects an integer, got {v!r}") from None


def _params(params: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in, strings (``--param k=v``) converted, every parameter validated."""
    unknown = sorted(set(params) - set(DEFINITION.params))
    if unknown:
        raise WorkflowError(f"arctic_stations has no parameters {unknown}; it takes {sorted(DEFINITION.params)}")
    p = {**DEFINITION.params, **params}
    out: dict[str, Any] = {k: _int(p, k) for k in ("stations", "fanout", "numExec", "seed", "year", "month", "years")}
    for name, allowed in (("topology", TOPOLOGIES), ("selectivity", SELECTIVITIES)):
        v = str(p[name]).strip().lower()
        if v not in allowed:
            raise WorkflowError(f"parameter {name!r} must be one of {', '.join(allowed)}; got {p[name]!r}")
        out[name] = v
    if not MIN_STATIONS <= out["stations"] <= MAX_STATIONS:
        raise WorkflowError(f"parameter 'stations' must be between {MIN_STATIONS} and {MAX_STATIONS}; got {out['stations']}")
    if out["fanout"] < 1:
        raise WorkflowError(f"parameter 'fanout' must be at least 1; got {out['fanout']}")
    if not 1 <= out["month"] <= 12:
        raise WorkflowError(f"parameter 'month' must be between 1 and 12; got {out['month']}")
    if not 1 <= out["years"] <= LAST_YEAR - FIRST_YEAR + 1:
        raise WorkflowError(f"parameter 'years' must be between 1 and {LAST_YEAR - FIRST_YEAR + 1}; got {out['years']}")
    if out["numExec"] < 0:
        raise WorkflowError(f"parameter 'numExec' must not be negative; got {out['numExec']}")
    out["observations"] = str(p["observations"] or "").strip()
    return out


def layers(topology: str, stations: int, fanout: int) -> list[list[int]]:
    """Station numbers by layer: every station of a layer feeds every station of the next.

    >>> layers("dense", 9, 3)
    [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    >>> layers("serial", 3, 5), layers("parallel", 3, 1), layers("dense", 5, 2)
    ([[1], [2], [3]], [[1, 2, 3]], [[1, 2], [3, 4], [5]])
    """
    width = {"serial": 1, "parallel": stations}.get(topology, fanout)
    return [list(range(i, min(i + width, stations + 1))) for i in range(1, stations + 1, width)]


# ---------------------------------------------------------------------------- climatology
@dataclass(frozen=True)
class Climate:
    """A station's climatology: monthly normals and noise spread of each variable.

    A measurement of ``var`` in ``(year, month)`` is ``normal + trend·(year − FIRST_YEAR) +
    spread·noise``, rounded to one decimal, where ``noise`` in (−1, 1) is a hash of the seed,
    station, variable, year and month (``trend`` applies to AirTemp only). A normal of ``None``
    (a variable missing from a user's file) measures nothing (null).
    """

    index: int
    name: str
    latitude: float | None
    normals: dict[str, tuple[float, ...] | None]
    spreads: dict[str, tuple[float, ...]]
    trend: float


def _cycle(mean: float, amplitude: float, peak_month: float) -> tuple[float, ...]:
    return tuple(mean + amplitude * math.cos(2 * math.pi * (m - peak_month) / 12) for m in range(1, 13))


def synthetic_climate(index: int, seed: int) -> Climate:
    """The synthetic climatology of station ``index`` (1-based)."""
    if index <= len(NAMED_STATIONS):
        name, lat, cont = NAMED_STATIONS[index - 1]
    else:  # numbered stations: latitude and continentality from the index
        name = f"Station {index:02d}"
        lat = 69.0 + (index * 37 % 11)
        cont = (index * 53 % 10) / 10
    # per-station jitter of the normals (°C), so runs with other seeds differ a little
    jitter = (_hash(seed, index, 99, 0, 0, 0) % 1000) / 1000.0 - 0.5
    t_jan = -14.0 - 0.9 * (lat - 66.0) - 10.0 * cont + jitter
    t_jul = 10.0 - 0.75 * (lat - 66.0) + 3.0 * cont + jitter
    snow = 0.7 + 0.5 * cont
    normals = {
        # coldest in January–February, warmest in July
        "AirTemp": _cycle((t_jan + t_jul) / 2, (t_jul - t_jan) / 2 / math.cos(2 * math.pi * 0.2 / 12), 7.2),
        "Pressure": _cycle(1012.0, 3.0, 4.0),
        "Humidity": _cycle(85.0, 4.0, 7.5),
        "WindSpeed": _cycle(6.5, 1.5, 1.0),
        "Precipitation": _cycle(20.0, 12.0, 8.0),
        "SnowDepth": tuple(round(s * snow, 1) for s in _SNOW_SHAPE),
    }
    spreads = {
        "AirTemp": _cycle(2.6, -1.4, 7.2),  # ±4 °C in winter, ±1.2 °C in summer
        "Pressure": (6.0,) * 12,
        "Humidity": (5.0,) * 12,
        "WindSpeed": (2.0,) * 12,
        "Precipitation": tuple(0.25 * v for v in normals["Precipitation"]),
        "SnowDepth": tuple(0.3 * v for v in normals["SnowDepth"]),
    }
    return Climate(index, name, lat, normals, spreads, TREND)


_MASK = 0xFFFFFFFF


def _hash(seed: int, station: int, var: int, year: int, month: int, salt: int) -> int:
    """A 32-bit integer hash (xorshift-multiply); :func:`_hash_col` is the same in Spark.

    Every product stays below 2**63, so Spark's (ANSI) long arithmetic never overflows.
    """
    x = (seed * 1000003 + station * 10007 + var * 1009 + year * 13 + month + salt * 7919) & _MASK
    for mult in (0x7FEB352D, 0x2C1B3C6D, 0x297A2D39):
        x ^= x >> 16
        x = (x * mult) & _MASK
    return x ^ (x >> 16)


def _hash_col(seed: int, station: int, var: int, year: Any, month: Any, salt: int) -> Any:
    x = (F.lit((seed * 1000003 + station * 10007 + var * 1009 + salt * 7919) & _MASK)
         + year.cast("long") * 13 + month.cast("long")).bitwiseAND(F.lit(_MASK))
    for mult in (0x7FEB352D, 0x2C1B3C6D, 0x297A2D39):
        x = x.bitwiseXOR(F.shiftright(x, 16))
        x = (x * F.lit(mult)).bitwiseAND(F.lit(_MASK))
    return x.bitwiseXOR(F.shiftright(x, 16))


def _noise(seed: int, station: int, var: int, year: int, month: int) -> float:
    """Triangular noise in (−1, 1): the sum of two hashed uniforms, minus one."""
    u = [(_hash(seed, station, var, year, month, s) % 1000000) / 1000000.0 for s in (0, 1)]
    return u[0] + u[1] - 1.0


def _noise_col(seed: int, station: int, var: int, year: Any, month: Any) -> Any:
    u = [(_hash_col(seed, station, var, year, month, s) % 1000000).cast("double") / 1000000.0 for s in (0, 1)]
    return u[0] + u[1] - 1.0


def _round1(x: float) -> float:
    """Round half up to one decimal, as Spark's ``round(x, 1)`` does."""
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def measurement(climate: Climate, year: int, month: int, seed: int) -> tuple[Any, ...]:
    """The observation row a station records for ``(year, month)`` (Python version of
    :func:`measurement_columns`)."""
    values: list[float | None] = []
    for v, var in enumerate(VARIABLES):
        normals = climate.normals[var]
        if normals is None:
            values.append(None)
            continue
        x = normals[month - 1]
        if var == "AirTemp":
            x = x + climate.trend * (year - FIRST_YEAR)
        x = x + climate.spreads[var][month - 1] * _noise(seed, climate.index, v, year, month)
        values.append(_round1(x))
    return (climate.name, year, month, *values)


def measurement_columns(climate: Climate, seed: int) -> list[Any]:
    """Column expressions over a request's Year and Month computing the six variables."""
    year, month = F.col("Year"), F.col("Month")
    cols = []
    for v, var in enumerate(VARIABLES):
        normals = climate.normals[var]
        if normals is None:
            cols.append(F.lit(None).cast("double").alias(var))
            continue
        x = F.element_at(F.array(*[F.lit(float(n)) for n in normals]), month)
        if var == "AirTemp":
            x = x + F.lit(climate.trend) * (year - F.lit(FIRST_YEAR))
        spread = F.element_at(F.array(*[F.lit(float(s)) for s in climate.spreads[var]]), month)
        x = x + spread * _noise_col(seed, climate.index, v, year, month)
        cols.append(F.round(x, 1).alias(var))
    return cols


# ---------------------------------------------------------------------------- user observations
def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_MISSING = {"", "na", "nan", "null", "none"}


def load_observations_csv(path: str) -> list[tuple[Any, ...]]:
    """Read real monthly observations from a CSV file, as rows of ``OBSERVATIONS``.

    Layout: a header row, then one row per station and month. Columns (any order, extra columns
    ignored; names are matched ignoring case, spaces and underscores, so ``air_temp`` is
    ``AirTemp``):

    ==============  ====================================
    Station         station name (text)
    Year, Month     integers, Month 1–12
    AirTemp         monthly mean air temperature, °C
    Pressure        sea-level pressure, hPa
    Humidity        relative humidity, %
    WindSpeed       wind speed, m/s
    Precipitation   monthly precipitation, mm
    SnowDepth       snow depth, cm
    ==============  ====================================

    A missing value is an empty cell or ``NA``/``NaN``/``null`` (convert sentinel codes such as
    −999 first). Stations are the workflow's ``sta1``, ``sta2``, … in order of first appearance.
    Raises :class:`~lipspark.errors.WorkflowError` naming the file and the problem (missing
    columns, a bad value with its line, a duplicate station-month, no data).
    """
    if not os.path.isfile(path):
        raise WorkflowError(f"observations file {path} does not exist")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise WorkflowError(f"observations file {path} is empty; it needs a header row with columns {', '.join(OBSERVATION_COLUMNS)}")
        found = {_norm(h): i for i, h in enumerate(header)}
        missing = [c for c in OBSERVATION_COLUMNS if _norm(c) not in found]
        if missing:
            raise WorkflowError(
                f"observations file {path} lacks columns {', '.join(missing)} (its header: {', '.join(h.strip() for h in header)}); "
                f"expected columns {', '.join(OBSERVATION_COLUMNS)}")
        pos = [found[_norm(c)] for c in OBSERVATION_COLUMNS]
        rows: list[tuple[Any, ...]] = []
        seen: dict[tuple[str, int, int], int] = {}
        for line, rec in enumerate(reader, start=2):
            if not any(cell.strip() for cell in rec):
                continue
            if len(rec) < len(header):
                raise WorkflowError(f"observations file {path}, line {line}: {len(rec)} fields, the header has {len(header)}")
            cells = [rec[i].strip() for i in pos]
            station = cells[0]
            if not station:
                raise WorkflowError(f"observations file {path}, line {line}: no Station")
            try:
                year, month = int(cells[1]), int(cells[2])
            except ValueError:
                raise WorkflowError(f"observations file {path}, line {line}: Year and Month must be integers, got {cells[1]!r}, {cells[2]!r}") from None
            if not 1 <= month <= 12:
                raise WorkflowError(f"observations file {path}, line {line}: Month must be 1–12, got {month}")
            values: list[float | None] = []
            for col, cell in zip(VARIABLES, cells[3:]):
                if cell.lower() in _MISSING:
                    values.append(None)
                    continue
                try:
                    x = float(cell)
                except ValueError:
                    raise WorkflowError(f"observations file {path}, line {line}: {col} must be a number, got {cell!r}") from None
                values.append(None if math.isnan(x) else x)
            key = (station, year, month)
            if key in seen:
                raise WorkflowError(f"observations file {path}, line {line}: {station} {year}-{month:02d} is already on line {seen[key]}")
            seen[key] = line
            rows.append((station, year, month, *values))
    if not rows:
        raise WorkflowError(f"observations file {path} has a header but no observations")
    return rows


def _observed_climate(index: int, name: str, rows: list[tuple[Any, ...]]) -> Climate:
    """Monthly means of a station's observations; the spread matches their standard deviation."""
    normals: dict[str, tuple[float, ...] | None] = {}
    spreads: dict[str, tuple[float, ...]] = {}
    for v, var in enumerate(VARIABLES):
        by_month = {m: [r[3 + v] for r in rows if r[2] == m and r[3 + v] is not None] for m in range(1, 13)}
        every = [x for xs in by_month.values() for x in xs]
        if not every:
            normals[var], spreads[var] = None, (0.0,) * 12
            continue
        means, sds = [], []
        for m in range(1, 13):
            xs = by_month[m] or every
            mean = sum(xs) / len(xs)
            means.append(mean)
            # triangular noise on (−1, 1) has variance 1/6
            sds.append(math.sqrt(6 * sum((x - mean) ** 2 for x in xs) / len(xs)) if len(xs) > 1 else 0.0)
        normals[var], spreads[var] = tuple(means), tuple(sds)
    return Climate(index, name, None, normals, spreads, 0.0)


@lru_cache(maxsize=8)
def _read_observations(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, tuple[tuple[Any, ...], ...]], ...]:
    rows = load_observations_csv(path)
    by_station: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        by_station.setdefault(r[0], []).append(r)
    return tuple((name, tuple(rs)) for name, rs in by_station.items())


def _user_stations(path: str, n: int) -> list[tuple[str, list[tuple[Any, ...]]]]:
    if not os.path.isfile(path):
        raise WorkflowError(f"observations file {path} does not exist")
    st = os.stat(path)
    stations = _read_observations(os.path.abspath(path), st.st_mtime_ns, st.st_size)
    if len(stations) < n:
        raise WorkflowError(f"observations file {path} has {len(stations)} stations ({', '.join(s for s, _ in stations)}); the workflow needs stations={n}")
    return [(name, list(rows)) for name, rows in stations[:n]]


# ---------------------------------------------------------------------------- data of a run
def climates(params: dict[str, Any]) -> list[Climate]:
    """The climatology of each station ``sta1`` … ``staN``."""
    p = _params(params)
    if p["observations"]:
        return [_observed_climate(i, name, rows) for i, (name, rows) in enumerate(_user_stations(p["observations"], p["stations"]), start=1)]
    return [synthetic_climate(i, p["seed"]) for i in range(1, p["stations"] + 1)]


def history(params: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """The initial ``Observations`` of each station module (``sta1`` → rows)."""
    p = _params(params)
    if p["observations"]:
        return {f"sta{i}": rows for i, (_, rows) in enumerate(_user_stations(p["observations"], p["stations"]), start=1)}
    years = range(LAST_YEAR - p["years"] + 1, LAST_YEAR + 1)
    return {f"sta{c.index}": [measurement(c, y, m, p["seed"]) for y in years for m in range(1, 13)] for c in climates(p)}


def request(params: dict[str, Any], execution: int) -> tuple[int, int, str]:
    """``(Year, Month, Selectivity)`` of execution ``execution`` (from 1): one month per execution."""
    p = _params(params)
    offset = p["year"] * 12 + p["month"] - 1 + execution - 1
    return offset // 12, offset % 12 + 1, p["selectivity"]


# ---------------------------------------------------------------------------- modules
def _season(month: Any) -> Any:
    return (F.when(month.isin(12, 1, 2), "DJF").when(month.isin(3, 4, 5), "MAM")
            .when(month.isin(6, 7, 8), "JJA").otherwise("SON"))


def in_logic(Request):
    return {"StationRequest": Request}


def make_station(climate: Climate, predecessors: list[int], seed: int) -> Module:
    k, name = climate.index, climate.name

    def station_logic(StationRequest, Observations, **received):
        # (1) measure the requested month and record it
        new = StationRequest.select(F.lit(name).alias("Station"), "Year", "Month", *measurement_columns(climate, seed))
        observations = Observations.union(new)
        # (2) the lowest air temperature observed, for the selectivity
        req = StationRequest.select(
            F.col("Year").alias("ReqYear"), F.col("Month").alias("ReqMonth"),
            _season(F.col("Month")).alias("ReqSeason"), "Selectivity")
        obs = observations.select("Year", "Month", _season(F.col("Month")).alias("Season"), "AirTemp")
        sel = F.col("Selectivity")
        relevant = obs.join(req, (sel == "all")
                            | ((sel == "season") & (F.col("Season") == F.col("ReqSeason")))
                            | ((sel == "month") & (F.col("Month") == F.col("ReqMonth")))
                            | ((sel == "year") & (F.col("Year") == F.col("ReqYear"))))
        lowest = relevant.groupBy().agg(F.min("AirTemp").alias("MinTemp"))
        # (3) and the minima of the predecessor stations
        for rel in sorted(received, key=lambda r: int(r.removeprefix("MinTemp_sta"))):
            lowest = lowest.union(received[rel].select("MinTemp"))
        if received:
            lowest = lowest.groupBy().agg(F.min("MinTemp").alias("MinTemp"))
        # (4) one row
        return {f"MinTemp_sta{k}": lowest.select(F.lit(name).alias("Station"), "MinTemp"), "Observations": observations}

    return Module(
        f"sta{k}",
        inputs={"StationRequest": REQUEST, **{f"MinTemp_sta{j}": MINTEMP for j in predecessors}},
        state={"Observations": OBSERVATIONS},
        outputs={f"MinTemp_sta{k}": MINTEMP},
        keys={"Observations": ["Station", "Year", "Month"]},
        logic=station_logic,
    )


def make_out(last: list[int]) -> Module:
    def out_logic(**received):
        rels = sorted(received, key=lambda r: int(r.removeprefix("MinTemp_sta")))
        mins = received[rels[0]].select("MinTemp")
        for rel in rels[1:]:
            mins = mins.union(received[rel].select("MinTemp"))
        return {"Result": mins.groupBy().agg(F.min("MinTemp").alias("MinTemp"))}

    return Module("out", inputs={f"MinTemp_sta{j}": MINTEMP for j in last}, outputs={"Result": RESULT}, logic=out_logic)


def build(params: dict[str, Any]) -> Workflow:
    p = _params(params)
    stations = climates(p)
    lay = layers(p["topology"], p["stations"], p["fanout"])
    preds = {k: [] for k in range(1, p["stations"] + 1)}
    for prev, nxt in pairwise(lay):
        for k in nxt:
            preds[k] = list(prev)
    modules = [
        Module("in", inputs={"Request": REQUEST}, outputs={"StationRequest": REQUEST},
               keys={"Request": ["Year", "Month"]}, logic=in_logic),
        *[make_station(c, preds[c.index], p["seed"]) for c in stations],
        make_out(lay[-1]),
    ]
    wf = Workflow("arctic_stations", modules)
    wf.node("in", "in", input=True)
    for c in stations:
        wf.node(f"sta{c.index}", f"sta{c.index}")
    wf.node("out", "out", output=True)
    for c in stations:
        wf.edge("in", f"sta{c.index}", ["StationRequest"])
    for prev, nxt in pairwise(lay):
        for j in prev:
            for k in nxt:
                wf.edge(f"sta{j}", f"sta{k}", [f"MinTemp_sta{j}"])
    for j in lay[-1]:
        wf.edge(f"sta{j}", "out", [f"MinTemp_sta{j}"])
    return wf


def initial_state(spark, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    p = _params(params)
    hist = history(p)
    start = (p["year"], p["month"])
    for node, rows in hist.items():
        last = max((r[1], r[2]) for r in rows)
        if start <= last:
            raise WorkflowError(
                f"the requests start at {start[0]}-{start[1]:02d} but the history of {node} ({rows[0][0]}) runs to "
                f"{last[0]}-{last[1]:02d}; a station measures the current month, so start after the history "
                f"(--param year={last[0] + 1} --param month=1)")
    return {node: {"Observations": spark.createDataFrame(rows, OBSERVATIONS)} for node, rows in hist.items()}


def inputs(spark, execution: int, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"in": {"Request": spark.createDataFrame([request(params, execution)], REQUEST)}}


DEFINITION = WorkflowDefinition(
    "arctic_stations",
    build,
    initial_state,
    inputs,
    params={"topology": "parallel", "stations": 4, "fanout": 2, "selectivity": "month", "numExec": 3, "seed": 0,
            "year": 2001, "month": 1, "observations": "", "years": 40},
)
