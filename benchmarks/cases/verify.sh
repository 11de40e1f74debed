#!/usr/bin/env bash
# Hot path: `benchops-publish validate` over a directory of sealed records
# (v1 from `bench seal`, v2 lane records), each checked for canonical bytes,
# digest, schema and semantic rules.
. "$(dirname "$0")/../lib.sh"
fixture base build_base
fixture records build_records
dir=$FIXTURES/records/records
hot "$PUBLISH" validate "$dir"
metric input_items "$RECORDS" count
metric input_bytes "$(cat "$dir"/*.json | wc -c)" bytes
