#!/usr/bin/env python3
"""Checks the output contract with an independent validator (Python's jsonschema, when present).

    scripts/check-schemas.py                      # every schemas/*.schema.json is valid draft 2020-12
    scripts/check-schemas.py run r.json [...]     # and each file conforms to schemas/run.schema.json

The Rust test (`cargo test -p iolens --test integration contract::`) validates every command's output with a
small validator of its own; this script confirms the schemas mean the same to a full one.
Exit status 0 when everything conforms, 1 otherwise, 2 without the jsonschema module.
"""
import glob
import json
import os
import sys

try:
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
except ImportError:
    print("check-schemas: needs the Python modules jsonschema and referencing", file=sys.stderr)
    sys.exit(2)

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schemas")


def main(argv):
    resources = []
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json"))):
        with open(path) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        resources.append((os.path.basename(path), Resource.from_contents(schema, default_specification=DRAFT202012)))
    registry = Registry().with_resources(resources)
    print(f"{len(resources)} schemas are valid draft 2020-12")
    if not argv:
        return 0
    command, files = argv[0], argv[1:]
    with open(os.path.join(SCHEMAS, f"{command}.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f), registry=registry)
    failed = False
    for path in files:
        with open(path) as f:
            errors = list(validator.iter_errors(json.load(f)))
        for e in errors[:10]:
            print(f"{path}: {'/'.join(map(str, e.absolute_path)) or '$'}: {e.message[:300]}")
        print(f"{path}: {'conforms' if not errors else f'{len(errors)} errors'} ({command})")
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
