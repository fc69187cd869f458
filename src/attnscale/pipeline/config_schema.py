"""The JSON-schema side of the configuration check (docs/pipeline.md#configuration).

:func:`validate_schema` validates ``config.yaml`` against the schemas in ``workflow/schemas/``
(types; unknown keys are rejected) and fills every default, as :func:`snakemake.utils.validate`
does but reading each schema file once. :mod:`attnscale.pipeline.config` calls it first and is
where these names are documented (they import from there too).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SchemaError", "read_schema", "validate_schema"]


class SchemaError(ValueError):
    """``config.yaml`` does not match the JSON schema; the message is jsonschema's, which names
    the failing keyword and the schema path (``Failed validating 'minimum' in
    schema['properties']['paper_a']['properties']['trials']``)."""


def _inline_refs(node, folder: Path, cache: dict):
    """``node`` with every ``{$ref: <file>, ...}`` replaced by that schema file (refs inlined
    too), its sibling keys (``default``, ``description``: annotations only) kept on top."""
    if isinstance(node, list):
        return [_inline_refs(v, folder, cache) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline_refs(v, folder, cache) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if ref is None:
        return out
    if ref not in cache:
        cache[ref] = _inline_refs(_read_yaml(folder / ref), folder, cache)
    target = {k: v for k, v in cache[ref].items() if k != "$schema"}
    return {**target, **out}


def _read_yaml(path: Path):
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - safe loader


def read_schema(schema_path) -> dict:
    """The configuration schema as the workflow validates against it: the YAML file at
    ``schema_path`` with every ``$ref`` to a sibling file inlined."""
    schema_path = Path(schema_path)
    return _inline_refs(_read_yaml(schema_path), schema_path.parent, {})


def validate_schema(raw: dict, schema_path) -> None:
    """Validate ``raw`` against a JSON schema file (YAML), filling defaults in place.

    The semantics of :func:`snakemake.utils.validate` (JSON Schema 2020-12, each ``default``
    filled as its property is visited), with every ``$ref`` to a sibling schema file inlined
    once, so that section defaults are filled too and each file is read once. (Snakemake's own
    validate re-read a referenced file for every ``$ref``: 75 YAML loads, ~0.4 s of every parse
    and of every Slurm job.) Raises :class:`SchemaError` with jsonschema's message.
    """
    import jsonschema

    schema = read_schema(schema_path)
    base = jsonschema.Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, sub):
        # the jsonschema FAQ's default-filling validator, as snakemake.utils.validate uses it
        if validator.is_type(instance, "object"):
            for name, subschema in properties.items():
                if "default" in subschema:
                    instance.setdefault(name, subschema["default"])
        yield from validate_properties(validator, properties, instance, sub)

    filling = jsonschema.validators.extend(base, {"properties": set_defaults})
    try:
        filling(schema).validate(raw)
    except jsonschema.ValidationError as err:
        raise SchemaError(f"Error validating config file.\n{err}") from None
