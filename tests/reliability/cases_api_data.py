"""Bad inputs of the data API: domains, datasets, schemas and the files they read."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from fastmwem.data import (
    Categorical,
    Dataset,
    Domain,
    Integer,
    Numeric,
    Schema,
    read_csv_columns,
    write_csv,
)

from ._helpers import fifo
from ._runner import Ctx, bad


def register_api_data() -> None:
    area = "api data"
    d = Domain(["a", "b"], [2, 3])
    for name, fn, expect in [
        ("domain_empty", lambda: Domain([], []), "empty"),
        ("domain_string_attributes", lambda: Domain("ab", [2, 2]), "single string"),
        ("domain_repeated", lambda: Domain(["a", "a"], [2, 2]), "unique"),
        ("domain_zero_size", lambda: Domain(["a"], [0]), ">= 1"),
        ("domain_float_size", lambda: Domain(["a"], [2.5]), "integer"),
        ("domain_bool_size", lambda: Domain(["a"], [True]), "integer"),
        ("domain_length_mismatch", lambda: Domain(["a"], [2, 3]), "same length"),
        ("domain_empty_name", lambda: Domain([""], [2]), "non-empty"),
        ("domain_int_name", lambda: Domain([1], [2]), "strings"),
        ("domain_numpy_negative", lambda: Domain(["a"], [np.int64(-1)]), ">= 1"),
        ("domain_from_dict_list", lambda: Domain.from_dict([("a", 2)]), "mapping"),
        ("domain_project_unknown", lambda: d.project(["zz"]), "unknown attribute"),
        ("domain_axes_repeated", lambda: d.axes(["a", "a"]), "unique"),
        ("dataset_out_of_range", lambda: Dataset([[0, 5]], d), "outside"),
        ("dataset_negative", lambda: Dataset([[0, -1]], d), "outside"),
        ("dataset_floats", lambda: Dataset([[0.0, 1.0]], d), "integer"),
        ("dataset_empty", lambda: Dataset(np.zeros((0, 2), dtype=int), d), "empty"),
        ("dataset_ragged", lambda: Dataset([[0, 1], [1]], d), ("rectangular", "2-D")),
        ("dataset_strings", lambda: Dataset([["0", "1"]], d), "integer"),
        ("dataset_1d", lambda: Dataset([0, 1], d), "2-D"),
        ("dataset_wrong_columns", lambda: Dataset([[0, 1, 0]], d), "columns"),
        ("dataset_not_domain", lambda: Dataset([[0, 1]], {"a": 2, "b": 3}), "Domain"),
        ("dataset_bool", lambda: Dataset(np.array([[True, False]]), d), ("integer", "bool")),
        ("dataset_uint64_huge", lambda: Dataset(np.array([[0, 2**64 - 1]], dtype=np.uint64), d),
         "outside"),
        ("dataset_frame_missing_col", lambda: Dataset(pd.DataFrame({"a": [0]}), d), "missing"),
        ("dataset_frame_float_col", lambda: Dataset(pd.DataFrame({"a": [0], "b": [1.0]}), d),
         "integer"),
        ("dataset_frame_nullable_na",
         lambda: Dataset(pd.DataFrame({"a": pd.array([0, None], dtype="Int64"),
                                       "b": [1, 2]}), d), "missing"),
        ("dataset_frame_bool_col",
         lambda: Dataset(pd.DataFrame({"a": [True], "b": [1]}), d), ("integer", "bool")),
        ("dataset_histogram_too_big",
         lambda: Dataset(np.zeros((1, 30), dtype=int),
                         Domain([f"x{i}" for i in range(30)], [2] * 30)).histogram(), "limit"),
        ("dataset_marginal_unknown", lambda: Dataset([[0, 1]], d).marginal(["zz"]),
         "unknown attribute"),
        ("dataset_marginal_int", lambda: Dataset([[0, 1]], d).marginal([0]), "names"),
        ("categorical_empty", lambda: Categorical("c", []), "empty"),
        ("categorical_repeated", lambda: Categorical("c", ["a", "a"]), "unique"),
        ("categorical_empty_label", lambda: Categorical("c", ["", "x"]), "empty string"),
        ("categorical_text_clash", lambda: Categorical("c", ["1", 1]), "unique"),
        ("categorical_string", lambda: Categorical("c", "abc"), "not a string"),
        ("categorical_none_label", lambda: Categorical("c", [None]), ("string or a number",)),
        ("categorical_nan_label", lambda: Categorical("c", [float("nan")]), "finite"),
        ("categorical_other_clash", lambda: Categorical("c", ["1"], other=1), "clashes"),
        ("numeric_1e308", lambda: Numeric("x", -1e308, 1e308, bins=4), "overflow"),
        ("numeric_bins_2e8", lambda: Numeric("x", 0, 1, bins=2 * 10**8), "limit"),
        ("numeric_bins_zero", lambda: Numeric("x", 0, 1, bins=0), ">= 1"),
        ("numeric_bins_float", lambda: Numeric("x", 0, 1, bins=2.5), "integer"),
        ("numeric_bins_bool", lambda: Numeric("x", 0, 1, bins=True), "integer"),
        ("numeric_reversed", lambda: Numeric("x", 1, 0, bins=2), "lower < upper"),
        ("numeric_no_bins", lambda: Numeric("x", 0, 1), "bins"),
        ("numeric_nan_upper", lambda: Numeric("x", 0, float("nan"), bins=2), "finite"),
        ("numeric_inf_upper", lambda: Numeric("x", 0, float("inf"), bins=2), "finite"),
        ("numeric_flat_edges", lambda: Numeric("x", edges=[0, 0, 1]), "increasing"),
        ("numeric_one_edge", lambda: Numeric("x", edges=[0]), "at least 2"),
        ("numeric_clip_text", lambda: Numeric("x", 0, 1, bins=2, clip="yes"), "clip"),
        ("numeric_subnormal_width", lambda: Numeric("x", 0, 5e-324, bins=4),
         ("width", "bins", "edges")),
        ("integer_reversed", lambda: Integer("x", 5, 0), ("lower", "upper")),
        ("integer_too_wide", lambda: Integer("x", 0, 2**40), "limit"),
        ("integer_float_bounds", lambda: Integer("x", 0.5, 3), "integer"),
        ("schema_api_empty", lambda: Schema([]), "at least one"),
        ("schema_api_duplicate_names", lambda: Schema([Integer("x", 0, 1), Integer("x", 0, 2)]),
         "unique"),
        ("schema_bad_column", lambda: Schema(["x"]), "Categorical"),
        ("schema_from_dict_unknown", lambda: Schema.from_dict({"cols": []}), "unknown keys"),
        ("schema_encode_missing_col",
         lambda: Schema([Integer("x", 0, 3)]).encode(pd.DataFrame({"y": [1]})), "missing"),
        ("schema_encode_out_of_bounds",
         lambda: Schema([Integer("x", 0, 3)]).encode(pd.DataFrame({"x": [7]})), "outside"),
        ("schema_encode_bool_numeric",
         lambda: Schema([Numeric("x", 0, 3, bins=3)]).encode(pd.DataFrame({"x": [True]})),
         "boolean"),
        ("schema_infer_no_optin", lambda: Schema.infer(pd.DataFrame({"x": [1]})), "leaks"),
        ("schema_decode_wrong_domain",
         lambda: Schema([Integer("x", 0, 3)]).decode(Dataset([[0, 1]], d)), "domain"),
        ("schema_decode_out_of_range",
         lambda: Schema([Integer("x", 0, 3)]).decode(np.array([[9]])), "outside"),
        ("schema_decode_numeric_mode",
         lambda: Schema([Integer("x", 0, 3)]).decode(np.array([[1]]), numeric="mean"), "numeric"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)

    # files read by the library
    def file_case(reader: Callable[[str], object], text: str | bytes,
                  name: str = "f.csv") -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            ctx.markers.append("QzSecret")
            return reader(ctx.write(name, text))
        return run

    dom = Domain(["a", "b"], [2, 3])
    from_csv = lambda p: Dataset.from_csv(p, dom)  # noqa: E731
    schema = Schema([Categorical("s", ["F", "M"]), Integer("k", 0, 3)])
    for name, reader, text, expect in [
        ("from_csv_extra_field", from_csv, "a,b\n0,1\n1,2,0\n", "fields"),
        ("from_csv_header_only", from_csv, "a,b\n", "no data rows"),
        ("from_csv_empty", from_csv, "", "empty"),
        ("from_csv_duplicate_columns", from_csv, "a,b,a\n0,1,1\n", "repeated"),
        ("from_csv_not_utf8", from_csv, "a,b\n0,\xe9\n".encode("latin-1"), "UTF-8"),
        ("from_csv_text", from_csv, "a,b\n0,QzSecret\n", "non-numeric"),
        ("from_csv_fraction", from_csv, "a,b\n0,1.5\n", "non-integer"),
        ("from_csv_blank_lines_only", from_csv, "a,b\n\n\n", "no data rows"),
        ("from_csv_crlf_extra", from_csv, "a,b\r\n0,1\r\n1,2,3\r\n", "fields"),
        ("from_csv_nul_bytes", from_csv, b"a,b\n0,\x001\n", ("non-numeric", "NUL", "malformed")),
        ("encode_csv_extra_field", schema.encode_csv, "s,k\nF,1,2\n", "more than the header"),
        ("encode_csv_header_only", schema.encode_csv, "s,k\n", "no data rows"),
        ("encode_csv_undeclared", schema.encode_csv, "s,k\nQzSecret,1\n", "not declared"),
        ("encode_csv_padded", schema.encode_csv, "s,k\nF ,1\n", "not declared"),
        ("encode_csv_not_utf8", schema.encode_csv, "s,k\n\xe9,1\n".encode("latin-1"), "UTF-8"),
        ("encode_csv_duplicate_columns", schema.encode_csv, "s,k,s\nF,1,M\n", "repeated"),
        ("read_columns_missing", lambda p: read_csv_columns(p, ["zz"]), "a,b\n0,1\n", "missing"),
        ("domain_json_duplicate", Domain.from_json, '{"a": 2, "a": 3}', "repeats the key"),
        ("domain_json_invalid", Domain.from_json, "{", "JSON"),
        ("domain_json_nan", Domain.from_json, '{"a": NaN}', ("NaN", "number")),
        ("domain_json_not_utf8", Domain.from_json, '{"\xe9": 2}'.encode("latin-1"), "UTF-8"),
        ("domain_json_nested", Domain.from_json, '{"a": {"size": 2}}', "integer"),
        ("schema_json_duplicate", Schema.from_json, '{"columns": [], "columns": []}',
         "repeats the key"),
        ("schema_json_list", Schema.from_json, "[]", "object"),
        ("schema_json_bad_column", Schema.from_json, '{"columns": [5]}', "object"),
    ]:
        bad(name, area, file_case(reader, text), expect)

    bad("from_csv_directory", area, lambda c: Dataset.from_csv(str(c.dir), dom), "directory")
    bad("from_csv_missing", area, lambda c: Dataset.from_csv(c.path("no.csv"), dom),
        "does not exist")
    bad("from_csv_fifo", area, lambda c: Dataset.from_csv(fifo(c, "p.csv"), dom),
        ("regular", "FIFO"), timeout=15)
    bad("domain_json_directory", area, lambda c: Domain.from_json(str(c.dir)), "directory")
    bad("write_csv_int_columns", area,
        lambda c: write_csv(pd.DataFrame({0: ["a"]}), c.path("w.csv")), "strings")


def register() -> None:
    """Add this module's cases to the battery."""
    register_api_data()
