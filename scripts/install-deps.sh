#!/usr/bin/env bash
# Installs the Debian 12 packages fulgur needs to build and test (see README.md, "Dependencies"),
# and with --oracles the npm test oracles from package-lock.json. Skips apt when all are present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config git
          libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev
          python3-jinja2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the test oracles only. Any node >= 18 will do (Debian's, or NodeSource's, whose
# nodejs package bundles npm and conflicts with Debian's npm), so look for the commands.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "${1:-}" = "--oracles" ]; then
  # Test oracles only (never linked into fulgur): Qwen3's tokenizer in JavaScript.
  npm ci --no-audit --no-fund --loglevel=error
fi
