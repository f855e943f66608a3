#!/usr/bin/env bash
# The test command of README.md: dependencies (with the npm oracles), build, every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --oracles
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 900
