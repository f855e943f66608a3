#!/usr/bin/env bash
# The test command of README.md: dependencies (with the npm oracles), build, every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --oracles
scripts/build.sh
# The mutation check's bugs must still apply to the sources (the full check, which rebuilds a
# copy of the tree per bug, is run by hand: README.md, "Testing").
scripts/mutants.sh --check
# The layering of DESIGN §2: no module includes (even through headers) one it may not.
scripts/check-layers.sh
ctest --test-dir build --output-on-failure -j2 --timeout 900
