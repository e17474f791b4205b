"""Read column declarations from the schema JSON format (described in :mod:`fastmwem.data.schema`)."""

from __future__ import annotations

from collections.abc import Mapping

from fastmwem.data.schema._columns import Categorical, ColumnSpec, Integer, Numeric

KEYS = {
    "categorical": ({"name", "type", "categories"}, {"other", "missing"}),
    "numeric": ({"name", "type"}, {"lower", "upper", "bins", "edges", "clip", "missing"}),
    "integer": ({"name", "type"}, {"lower", "upper", "edges", "clip", "missing"}),
}


def spec_from_dict(raw: object, where: str) -> ColumnSpec:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind not in KEYS:
        raise ValueError(f"{where} has type {kind!r}; expected one of {sorted(KEYS)}")
    required, optional = KEYS[kind]
    missing = sorted(required - set(raw))
    unknown = sorted(set(raw) - required - optional)
    if missing or unknown:
        raise ValueError(
            f"{where} ({kind}): " + "; ".join(
                p for p in (missing and f"missing keys {missing}", unknown and f"unknown keys {unknown}") if p
            )
        )
    if kind == "integer" and "edges" not in raw:
        missing = sorted({"lower", "upper"} - set(raw))
        if missing:
            raise ValueError(f"{where} (integer): missing keys {missing} (or give 'edges')")
    gaps = raw.get("missing", False)
    try:
        if kind == "categorical":
            return Categorical(raw["name"], raw["categories"], other=raw.get("other"),
                               missing=gaps)
        if kind == "numeric":
            return Numeric(raw["name"], raw.get("lower"), raw.get("upper"), bins=raw.get("bins"),
                           edges=raw.get("edges"), clip=raw.get("clip", False), missing=gaps)
        return Integer(raw["name"], raw.get("lower"), raw.get("upper"),
                       clip=raw.get("clip", False), edges=raw.get("edges"), missing=gaps)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def specs_from_dict(raw: object) -> list[ColumnSpec]:
    """The column specs of a parsed schema JSON object, refusing unknown or missing keys."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"a schema must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"columns"})
    if unknown:
        raise ValueError(f"schema has unknown keys {unknown}; expected only 'columns'")
    cols = raw.get("columns")
    if not isinstance(cols, list):
        raise ValueError("schema must have a 'columns' list")
    return [spec_from_dict(c, f"schema column {i}") for i, c in enumerate(cols)]
