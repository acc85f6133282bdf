#!/usr/bin/env bash
# docs/configuration.md must be exactly what `rocuda config --markdown` generates.
set -u
if ! diff <("$1" config --markdown) "$2"; then
  echo "FAIL: docs/configuration.md is stale; regenerate it with: build/bin/rocuda config --markdown > docs/configuration.md"
  exit 1
fi
