#!/usr/bin/env bash
# Installs the Debian 12 packages fulgur needs (see README.md, "Dependencies"). With --runtime
# only what builds and runs the `fulgur` binary (the demo's needs); by default also what the
# tests need; with --oracles also the npm test oracles from package-lock.json. Skips apt when
# all are present.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}

packages=(cmake ninja-build g++ pkg-config
          nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev
          # the demo's client and its reading of JSON
          curl python3)
if [ "$mode" != "--runtime" ]; then
  packages+=(git libgtest-dev libbenchmark-dev python3-jinja2
             # scripts/serve-cluster.sh's load balancer (Debian's own config binds no port).
             haproxy)
  # Headless Chromium tests the chat page of `fulgur serve` (test_server's ServeClients; it
  # skips without it). Tests only, and the largest package here (~100 MB): FULGUR_NO_CHROMIUM=1
  # leaves it.
  [ "${FULGUR_NO_CHROMIUM:-0}" = 1 ] || packages+=(chromium)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the test oracles only: Debian's, or NodeSource's (whose nodejs package bundles npm
# and conflicts with Debian's npm), so look for the commands. The version is checked below.
if [ "$mode" != "--runtime" ]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$mode" = "--oracles" ]; then
  # The locked packages say which Node they need (node-llama-cpp 3.22.1: >= 20; Debian 12's
  # nodejs is 18): check it before installing them, rather than let the llama.cpp oracle fail
  # or skip later.
  need=$(node -e '
    const lock = require("./package-lock.json");
    let major = 0;
    for (const p of Object.values(lock.packages || {})) {
      const m = /^>=\s*(\d+)/.exec((p.engines && p.engines.node) || "");
      if (m) major = Math.max(major, Number(m[1]));
    }
    console.log(major);')
  have=$(node -p 'process.versions.node')
  if [ "${have%%.*}" -lt "$need" ]; then
    echo "install-deps.sh: the test oracles in package-lock.json need Node >= $need, but node is $have" >&2
    echo "  (Debian 12 ships 18; install Node $need or later, e.g. NodeSource's nodejs package)" >&2
    exit 1
  fi
  # Test oracles only (never linked into fulgur): Qwen3's tokenizer in JavaScript and llama.cpp.
  npm ci --no-audit --no-fund --loglevel=error
fi
