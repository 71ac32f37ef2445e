"""Floats in the grader's JSON: a non-finite float is written as the string "NaN", "Infinity" or "-Infinity"
(JSON has no such numbers; pydantic would write null, which reads back as "missing"), and the JSON schema
says so, so that `grade --json-schema` accepts every report `grade --json` writes.

`JsonFloat` is the type of a model's float field; `FloatsAsWritten` is the schema generator for models whose
float fields are plain floats written with `ser_json_inf_nan="strings"` (grader.verify's), so their schema
admits the strings too.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import PlainSerializer, WithJsonSchema
from pydantic.json_schema import GenerateJsonSchema

NON_FINITE = ("NaN", "Infinity", "-Infinity")
"""How a non-finite float is written (the names pydantic's `ser_json_inf_nan="strings"` uses, and reads back)."""

FLOAT_SCHEMA = {"anyOf": [{"type": "number"}, {"enum": list(NON_FINITE)}]}
"""JSON schema of a float as written: a number, or one of NON_FINITE."""


def json_float(value: float) -> float | str:
    """`value` for JSON: itself when finite, else "NaN", "Infinity" or "-Infinity"."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


JsonFloat = Annotated[float, PlainSerializer(json_float, when_used="json"), WithJsonSchema(FLOAT_SCHEMA)]
"""A float field that writes NaN and infinities as NON_FINITE strings in JSON (Python dumps keep the float)
and whose schema admits them. pydantic reads the strings back as floats."""


class FloatsAsWritten(GenerateJsonSchema):
    """JSON schema generator in which every float admits the NON_FINITE strings (FLOAT_SCHEMA)."""

    def float_schema(self, schema):
        """FLOAT_SCHEMA, keeping bounds (minimum, maximum, ...) on the number."""
        number = super().float_schema(schema)
        return {"anyOf": [number, {"enum": list(NON_FINITE)}]}
