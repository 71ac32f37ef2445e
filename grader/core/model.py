"""The base of every model the grader writes as JSON (the report, the student's row and claim, the
verification results, batch rows and the gradebook).

pydantic writes NaN and infinities as `null` by default, which reads back as "no value" (an infinite
claimed fraction looked like no claim). Here they are the strings "NaN", "Infinity" and "-Infinity", as
docs/grading.md says; pydantic reads those strings back as the same floats, and the JSON schema says that any
number may be one of them.

Every string of that JSON (keys too) is escaped as the text report escapes it (grader.core.text.printable_lines:
line breaks and tabs kept; C0 and C1 controls, NUL, bidirectional overrides and the bytes of a file name that
was not UTF-8 written as escapes), so a reader that prints a field of the JSON shows what the text report
shows, and a name that is not UTF-8 cannot stop the JSON from being written. Escaping is idempotent, so a row
read back and written again is unchanged. This module imports grader.core.text alone (no import cycle).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializationInfo, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode

from grader.core.text import printable_lines

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


def escaped(value: Any) -> Any:
    """`value` (what pydantic made of a model in JSON mode: dicts, lists, strings, numbers) with every string,
    keys included, passed through grader.core.text.printable_lines."""
    if isinstance(value, str):
        return printable_lines(value)
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v) for v in value]
    return value


class ReportModel(BaseModel):
    """A pydantic model whose JSON writes NaN and infinities as NON_FINITE_STRINGS (reading them back), escapes
    every string (module docstring; `model_dump()` in Python mode keeps them as they are), and whose JSON
    schema (NonFiniteFloatSchema) accepts the non-finite strings. Each nested model must derive from it too:
    pydantic applies these settings model by model."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    @model_serializer(mode="wrap")
    def _escape_strings(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        return escaped(data) if info.mode_is_json() else data

    @classmethod
    def model_json_schema(cls, by_alias: bool = True, ref_template: str = DEFAULT_REF_TEMPLATE,
                          schema_generator: type[GenerateJsonSchema] = NonFiniteFloatSchema,
                          mode: JsonSchemaMode = "validation", **kwargs: Any) -> dict[str, Any]:
        """pydantic's model_json_schema with NonFiniteFloatSchema as the default generator."""
        return super().model_json_schema(by_alias=by_alias, ref_template=ref_template,
                                         schema_generator=schema_generator, mode=mode, **kwargs)
