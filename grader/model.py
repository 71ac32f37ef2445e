"""The base of every model the grader writes as JSON (the report, the student's row and claim, the
verification results, batch rows and the gradebook).

pydantic writes NaN and infinities as `null` by default, which reads back as "no value" (an infinite
claimed fraction looked like no claim). Here they are the strings "NaN", "Infinity" and "-Infinity", as
the README says; pydantic reads those strings back as the same floats, and the JSON schema says that any
number may be one of them. This module imports nothing from the grader (no import cycle).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode

NON_FINITE_STRINGS = ("NaN", "Infinity", "-Infinity")
"""How a non-finite float is written in the grader's JSON."""


class NonFiniteFloatSchema(GenerateJsonSchema):
    """JSON schema generator for ReportModel: a float that allows NaN and infinities (pydantic's default) is
    `anyOf` a number and one of NON_FINITE_STRINGS."""

    def float_schema(self, schema) -> dict[str, Any]:
        """The number schema pydantic would give, or one of NON_FINITE_STRINGS where the field allows them."""
        number = super().float_schema(schema)
        if schema.get("allow_inf_nan") is False:
            return number
        return {"anyOf": [number, {"type": "string", "enum": list(NON_FINITE_STRINGS)}]}


class ReportModel(BaseModel):
    """A pydantic model whose JSON writes NaN and infinities as NON_FINITE_STRINGS (reading them back), and
    whose JSON schema (NonFiniteFloatSchema) accepts them. Each nested model must derive from it too:
    pydantic applies this setting model by model."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    @classmethod
    def model_json_schema(cls, by_alias: bool = True, ref_template: str = DEFAULT_REF_TEMPLATE,
                          schema_generator: type[GenerateJsonSchema] = NonFiniteFloatSchema,
                          mode: JsonSchemaMode = "validation", **kwargs: Any) -> dict[str, Any]:
        """pydantic's model_json_schema with NonFiniteFloatSchema as the default generator."""
        return super().model_json_schema(by_alias=by_alias, ref_template=ref_template,
                                         schema_generator=schema_generator, mode=mode, **kwargs)
