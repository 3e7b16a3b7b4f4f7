#!/usr/bin/env bash
# Prefix each line of stdin with the seconds since this script started (a molecule scenario's
# output, so that each step's start is on the record). Used by the Makefile's molecule-% target.
set -uo pipefail
start=$SECONDS
while IFS= read -r line || [ -n "$line" ]; do
  printf '[%4ds] %s\n' "$((SECONDS - start))" "$line"
done
