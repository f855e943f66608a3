#!/usr/bin/env bash
# The README's first command: install what fulgur needs, build it, make a small random-weight
# model with fulgur itself, look inside it, and generate from it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p models
build/fulgur synth --arch qwen3 --shape tiny --seed 1 --type q8_0 --tokenizer builtin -o models/demo-tiny-q8_0.gguf
build/fulgur inspect models/demo-tiny-q8_0.gguf --max-elements 4
build/fulgur run -m models/demo-tiny-q8_0.gguf -p "def fibonacci(n):" -n 48 --temp 0 --ignore-eos
