"""Bad inputs of ``fastmwem synth``: numbers, outputs, inputs, CSV and JSON files, workloads,
schemas (and one valid case beside them)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from ._helpers import (
    SIZES,
    codes_table,
    device,
    fifo,
    raw_table,
    schema_synth,
    synth_args,
)
from ._runner import CLIRun, Ctx, bad, good


def register_cli_synth() -> None:
    area = "cli synth"

    def synth(ctx: Ctx, *extra: object, out: str = "out.csv") -> CLIRun:
        return ctx.cli(*synth_args(ctx, *extra, out=out))

    def with_args(*extra: object) -> Callable[[Ctx], CLIRun]:
        return lambda ctx: synth(ctx, *extra)

    def replace_epsilon(value: str) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            args[args.index("--epsilon") + 1] = value
            return ctx.cli(*args)
        return run

    for label, value in [("zero", "0"), ("negative", "-1"), ("nan", "nan"), ("inf", "inf"),
                         ("subnormal", "1e-310"), ("text", "abc"), ("empty", ""),
                         ("tiny_noise_overflow", "1e-306")]:
        bad(f"synth_epsilon_{label}", area, replace_epsilon(value), "epsilon")

    # outputs
    def out_is(target: Callable[[Ctx], str], flag: str = "--out") -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            path = target(ctx)
            if flag == "--out":
                args[args.index("--out") + 1] = path
            else:
                args += [flag, path]
            return ctx.cli(*args)
        return run

    bad("synth_out_empty", area, out_is(lambda c: ""), ("--out", "empty"))
    bad("synth_out_proc", area, out_is(lambda c: "/proc/x.csv"), ("--out", "/proc"))
    bad("synth_report_proc", area, out_is(lambda c: "/proc/r.json", "--report"),
        ("--report", "/proc"))
    bad("synth_out_is_input", area, out_is(lambda c: c.path("in.csv")), ("input",))
    bad("synth_report_is_input", area, out_is(lambda c: c.path("in.csv"), "--report"), "input")
    bad("synth_out_is_domain", area, out_is(lambda c: c.path("domain.json")), "input")
    bad("synth_report_is_out", area, out_is(lambda c: c.path("out.csv"), "--report"),
        "same file")
    bad("synth_out_fifo", area, out_is(lambda c: fifo(c, "pipe.csv")), ("FIFO", "regular"))
    bad("synth_out_device", area, out_is(lambda c: device(c, "null")), ("device", "regular"))
    bad("synth_report_device", area, out_is(lambda c: device(c, "nullr"), "--report"),
        ("device", "regular"))

    def symlink_to(c: Ctx, target: str, name: str = "link.csv") -> str:
        os.symlink(target, c.path(name))
        return c.path(name)

    bad("synth_out_symlink", area, out_is(lambda c: symlink_to(c, c.write("t.csv", "x\n"))),
        "symbolic link")
    bad("synth_out_symlink_to_input", area, out_is(lambda c: symlink_to(c, c.path("in.csv"))),
        ("symbolic link", "input"))
    bad("synth_out_dangling_symlink", area,
        out_is(lambda c: symlink_to(c, c.path("nowhere.csv"))), "symbolic link")

    def hardlink(c: Ctx) -> str:
        os.link(c.path("in.csv"), c.path("hard.csv"))
        return c.path("hard.csv")

    bad("synth_out_hardlink_to_input", area, out_is(hardlink), "input")
    bad("synth_out_directory", area, out_is(lambda c: str(c.dir)), "directory")
    bad("synth_out_trailing_slash", area, out_is(lambda c: c.path("new") + "/"), "directory")
    bad("synth_out_missing_dir", area, out_is(lambda c: c.path("nodir/out.csv")),
        ("directory", "does not exist"))
    bad("synth_out_dotdot_input", area,
        out_is(lambda c: os.path.join(c.path("sub"), "..", "in.csv")
               if os.makedirs(c.path("sub"), exist_ok=True) is None else ""), "input")
    bad("synth_out_under_file", area, out_is(lambda c: c.path("in.csv") + "/x.csv"),
        ("directory", "not a directory", "in.csv"))

    # inputs
    def input_is(target: Callable[[Ctx], str]) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            args[1] = target(ctx)
            return ctx.cli(*args)
        return run

    bad("synth_input_missing", area, input_is(lambda c: c.path("nope.csv")), "does not exist")
    bad("synth_input_directory", area, input_is(lambda c: str(c.dir)), "directory")
    bad("synth_input_fifo", area, input_is(lambda c: fifo(c, "in.fifo")), "regular", timeout=15)
    bad("synth_input_device", area, input_is(lambda c: device(c, "indev")), "regular")
    bad("synth_input_empty_path", area, input_is(lambda c: ""), ("INPUT", "empty"))
    bad("synth_input_not_utf8", area,
        input_is(lambda c: c.write("latin.csv", "a,b,c,d\n0,1,0,1\n\xe9,0,0,0\n".encode("latin-1"))),
        "UTF-8")
    bad("synth_input_binary", area,
        input_is(lambda c: c.write("bin.csv", bytes(range(256)) * 4)), ("UTF-8", "malformed"))

    def csv_body(body: str, sizes: dict[str, int] | None = None) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.write("domain.json", json.dumps(SIZES if sizes is None else sizes))
            return ctx.cli("synth", ctx.write("body.csv", body), "--domain", ctx.path("domain.json"),
                           "--epsilon", "1", "--out", ctx.path("out.csv"), "--no-progress")
        return run

    bad("synth_csv_extra_field", area, csv_body("a,b,c,d\n0,1,0,1\n1,2,1,0,1\n"), "fields")
    bad("synth_csv_trailing_comma", area, csv_body("a,b,c,d\n0,1,0,1,\n"),
        ("more than the header", "fields"))
    bad("synth_csv_out_of_range", area, csv_body("a,b,c,d\n0,1,0,1\n1,7,1,0\n"), "outside")
    bad("synth_csv_negative", area, csv_body("a,b,c,d\n0,1,0,1\n1,-1,1,0\n"), "outside")
    bad("synth_csv_fraction", area, csv_body("a,b,c,d\n0,1,0,1\n1,1.5,1,0\n"), "non-integer")
    bad("synth_csv_text_cell", area, csv_body("a,b,c,d\n0,1,0,1\n1,x,1,0\n"), "non-numeric")
    bad("synth_csv_empty_cell", area, csv_body("a,b,c,d\n0,1,0,1\n1,,1,0\n"), "missing")
    bad("synth_csv_short_row", area, csv_body("a,b,c,d\n0,1,0,1\n1,1\n"), "missing")
    bad("synth_csv_header_only", area, csv_body("a,b,c,d\n"), ("no data rows", "at least one"))
    bad("synth_csv_empty_file", area, csv_body(""), ("empty", "header"))
    bad("synth_csv_duplicate_columns", area, csv_body("a,b,c,d,a\n0,1,0,1,1\n"), "repeated")
    bad("synth_csv_missing_column", area, csv_body("a,b,c\n0,1,0\n"), "missing")
    bad("synth_csv_extra_column", area, csv_body("a,b,c,d,e\n0,1,0,1,1\n"), "unexpected")
    bad("synth_csv_unterminated_quote", area, csv_body('a,b,c,d\n0,1,0,"1\n1,1,1,1\n'),
        ("malformed", "non-numeric", "EOF", "quote"))
    bad("synth_csv_whitespace_header", area, csv_body("a, b,c,d\n0,1,0,1\n"),
        ("missing", "unexpected"))
    bad("synth_csv_huge_code", area, csv_body("a,b,c,d\n0,1,0,99999999999999999999999\n"),
        "outside")
    bad("synth_csv_nan_code", area, csv_body("a,b,c,d\n0,1,0,nan\n"), "missing")
    bad("synth_csv_inf_code", area, csv_body("a,b,c,d\n0,1,0,inf\n"), ("outside", "finite"))
    bad("synth_csv_bool_code", area, csv_body("a,b,c,d\n0,1,0,True\n"), ("non-numeric", "bool"))

    # domain files
    def domain_text(text: str | bytes) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            csv, _ = codes_table(ctx)
            domain = ctx.write("bad_domain.json", text)
            return ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                           ctx.path("out.csv"), "--no-progress")
        return run

    bad("synth_domain_duplicate_key", area, domain_text('{"a": 2, "b": 3, "c": 2, "d": 2, "a": 5}'),
        "repeats the key")
    bad("synth_domain_invalid_json", area, domain_text('{"a": 2,'), "JSON")
    bad("synth_domain_list", area, domain_text("[2, 3, 2, 2]"), "object")
    bad("synth_domain_zero_size", area, domain_text('{"a": 0, "b": 3, "c": 2, "d": 2}'), ">= 1")
    bad("synth_domain_negative", area, domain_text('{"a": -2, "b": 3, "c": 2, "d": 2}'), ">= 1")
    bad("synth_domain_float_size", area, domain_text('{"a": 2.5, "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_string_size", area, domain_text('{"a": "2", "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_bool_size", area, domain_text('{"a": true, "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_nan", area, domain_text('{"a": NaN, "b": 3, "c": 2, "d": 2}'),
        ("NaN", "number"))
    bad("synth_domain_empty_object", area, domain_text("{}"), ("empty",))
    bad("synth_domain_empty_name", area, domain_text('{"": 2, "b": 3, "c": 2, "d": 2}'),
        ("non-empty", "name"))
    bad("synth_domain_not_utf8", area, domain_text('{"\xe9": 2}'.encode("latin-1")), "UTF-8")
    bad("synth_domain_empty_file", area, domain_text(""), "JSON")
    bad("synth_domain_directory", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--domain", str(c.dir), "--epsilon", "1",
                        "--out", c.path("out.csv")), "directory")

    # numbers and options
    bad("synth_rows_zero", area, with_args("--rows", "0"), "--rows")
    bad("synth_rows_negative", area, with_args("--rows", "-5"), "--rows")
    bad("synth_rows_float_text", area, with_args("--rows", "1e12"), "--rows")
    bad("synth_rows_1e12", area, with_args("--rows", "1000000000000"), ("disk", "--rows"))
    bad("synth_rounds_zero", area, with_args("--rounds", "0"), "--rounds")
    bad("synth_rounds_too_many", area, with_args("--rounds", "1000"), ("rounds", "candidate"))
    bad("synth_reuse_passes_huge", area, with_args("--reuse-passes", "1000000"),
        "reuse_passes", timeout=30)
    bad("synth_reuse_passes_negative", area, with_args("--reuse-passes", "-1"), "reuse_passes")
    bad("synth_seed_negative", area, with_args("--seed", "-1"), "--seed")
    bad("synth_seed_text", area, with_args("--seed", "abc"), "--seed")
    bad("synth_init_bogus", area, with_args("--init", "zeros"), "--init")
    bad("synth_output_bogus", area, with_args("--output", "best"), "--output")
    bad("synth_selection_bogus", area, with_args("--selection", "greedy"), "--selection")
    bad("synth_index_without_lazy", area, with_args("--index", "flat"), ("index", "lazy"))
    bad("synth_index_approximate", area, with_args("--selection", "lazy", "--index", "hnswlib"),
        ("approximate", "guarantee", "index"))
    bad("synth_index_bogus", area, with_args("--selection", "lazy", "--index", "kdtree"), "index")
    bad("synth_unknown_flag", area, with_args("--epsilom", "1"), ("unrecognized", "epsilom"))
    for spec, expect in [("counting:100000000", ("counting", "queries", "memory", "bytes")),
                         ("counting:0", ">= 1"), ("marginals:0", ">= 1"),
                         ("marginals:99", "marginal order"), ("marginals:3-1", "marginal order"),
                         ("marginals:abc", "not an integer"), ("marginals", "marginals:3"),
                         ("foo:3", "unknown workload"), ("ranges:0", ">= 1"),
                         ("ranges:5:zz", "unknown attribute"), ("intervals:zz", "unknown attribute"),
                         ("intervals:a,b", "one attribute"), ("parities:2", "binary"),
                         ("parities:9", "order"), ("", "workload")]:
        # 10**8 counting queries take about 10 s to refuse (the refusal is clear).
        bad(f"synth_workload_{spec.replace(':', '_').replace(',', '_') or 'empty'}", area,
            with_args("--workload", spec), expect, timeout=45, slow=spec == "counting:100000000")

    # sources
    bad("synth_demo_with_input", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--demo", "--epsilon", "1", "--out",
                        c.path("out.csv")), "--demo")
    bad("synth_demo_with_domain", area,
        lambda c: c.cli("synth", "--demo", "--domain", codes_table(c)[1], "--epsilon", "1",
                        "--out", c.path("out.csv")), "--demo")
    # Without --domain or --schema a schema is drafted from INPUT in memory: not with DuckDB.
    bad("synth_no_domain_duckdb", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--epsilon", "1", "--engine", "duckdb",
                        "--out", c.path("o.csv")), ("--schema", "--engine duckdb"))
    bad("synth_no_input", area,
        lambda c: c.cli("synth", "--epsilon", "1", "--out", c.path("o.csv")), ("INPUT", "--demo"))
    bad("synth_domain_and_schema", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--domain", c.path("domain.json"),
                        "--schema", c.path("domain.json"), "--epsilon", "1", "--out",
                        c.path("o.csv")), ("not allowed", "--schema"))
    bad("synth_missing_out", area,
        lambda c: c.cli("synth", "--demo", "--epsilon", "1"), "--out")

    # resource bounds: 2^26 cells (only the refusal; the memory limit keeps it from running)
    def wide(ctx: Ctx, columns: int, workload: str = "counting:25") -> CLIRun:
        sizes = {f"x{i}": 2 for i in range(columns)}
        csv, domain = codes_table(ctx, sizes, rows=50)
        return ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                       ctx.path("out.csv"), "--workload", workload, "--no-progress")

    # Counting queries have no marginal structure, so only a dense model could run them; a
    # marginal workload on the same tables runs a factored model (the valid cases below).
    bad("synth_2_26_cells_limited_memory", area, lambda c: wide(c, 26), ("memory", "GB"),
        env={"FASTMWEM_MEMORY_LIMIT": "2G"})
    bad("synth_2_27_cells", area, lambda c: wide(c, 27), ("cells", "limit"))
    bad("synth_2_40_cells", area, lambda c: wide(c, 40), ("cells", "limit"))
    good("synth_2_40_cells_marginals_factored", "valid cli",
         lambda c: wide(c, 40, "marginals:1").err[-120:])

    # schema files
    def schema_case(schema: dict | str | bytes, body: str | None = None) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.markers.append("QzSecretLabel")
            if schema is None or isinstance(schema, dict):
                return schema_synth(ctx, schema, body)
            csv, _ = raw_table(ctx, None, body)
            path = ctx.write("schema2.json", schema)
            return ctx.cli("synth", csv, "--schema", path, "--epsilon", "1", "--out",
                           ctx.path("out.csv"), "--no-progress")
        return run

    def col(**kw: object) -> dict:
        return {"columns": [{"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                            {"name": "age", "type": "numeric", "lower": 0, "upper": 100,
                             "bins": 4},
                            {"name": "kids", **kw}]}

    bad("schema_bins_2e8", area, schema_case(col(type="numeric", lower=0, upper=3, bins=200000000)),
        ("bins", "limit"))
    bad("schema_bins_float", area, schema_case(col(type="numeric", lower=0, upper=3, bins=2.5)),
        "bins")
    bad("schema_numeric_1e308", area,
        schema_case(col(type="numeric", lower=-1e308, upper=1e308, bins=4)), "overflow")
    bad("schema_empty_category", area, schema_case(col(type="categorical", categories=["", "1"])),
        "empty string")
    bad("schema_duplicate_categories", area,
        schema_case(col(type="categorical", categories=["1", "1"])), "unique")
    bad("schema_category_text_clash", area,
        schema_case(col(type="categorical", categories=[1, "1"])), "unique")
    bad("schema_unknown_type", area, schema_case(col(type="ordinal", lower=0, upper=3)),
        "type")
    bad("schema_unknown_key", area, schema_case(col(type="integer", lower=0, upper=3, step=1)),
        "unknown keys")
    bad("schema_missing_key", area, schema_case(col(type="integer", lower=0)), "missing keys")
    bad("schema_lower_above_upper", area, schema_case(col(type="integer", lower=3, upper=0)),
        ("lower", "upper"))
    bad("schema_edges_not_increasing", area,
        schema_case(col(type="numeric", edges=[0, 2, 1, 3])), "increasing")
    bad("schema_duplicate_json_key", area,
        schema_case('{"columns": [], "columns": []}'), "repeats the key")
    bad("schema_not_utf8", area, schema_case('{"columns": ["\xe9"]}'.encode("latin-1")), "UTF-8")
    bad("schema_empty_columns", area, schema_case({"columns": []}), ("at least one", "column"))
    bad("schema_duplicate_names", area,
        schema_case({"columns": [{"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                                 {"name": "sex", "type": "integer", "lower": 0, "upper": 3}]}),
        "unique")
    bad("schema_value_out_of_bounds", area,
        schema_case(None, "sex,age,kids\nF,10,1\nM,150,2\n"), "outside")
    bad("schema_undeclared_category", area,
        schema_case(None, "sex,age,kids\nF,10,1\nQzSecretLabel,15,2\n"), "not declared")
    bad("schema_integer_fraction", area, schema_case(None, "sex,age,kids\nF,10,1.5\n"),
        "non-integer")
    bad("schema_numeric_text", area, schema_case(None, "sex,age,kids\nF,ten,1\n"), "non-numeric")
    bad("schema_missing_cell", area, schema_case(None, "sex,age,kids\n,10,1\n"), "missing")
    bad("schema_header_only", area, schema_case(None, "sex,age,kids\n"), "no data rows")
    bad("schema_padded_category", area, schema_case(None, "sex,age,kids\n F,10,1\n"),
        "not declared")
    bad("schema_extra_field", area, schema_case(None, "sex,age,kids\nF,10,1,9\n"),
        "fields")
    bad("schema_inf_age", area, schema_case(None, "sex,age,kids\nF,inf,1\n"), "outside")


def register() -> None:
    """Add this module's cases to the battery."""
    register_cli_synth()
