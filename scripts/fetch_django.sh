#!/usr/bin/env bash
# Downloads the Django 5.2.8 source tree used by the benchmarks and the ruff
# comparison into target/bench-data/django-5.2.8 (once).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=target/bench-data
if [ -d "$dest/django-5.2.8" ]; then
  echo "$dest/django-5.2.8"
  exit 0
fi
mkdir -p "$dest"
python3 -m pip download --quiet --no-deps --no-binary :all: django==5.2.8 -d "$dest" >&2
tar -xzf "$dest/django-5.2.8.tar.gz" -C "$dest"
echo "$dest/django-5.2.8"
