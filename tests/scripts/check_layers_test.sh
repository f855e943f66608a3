#!/usr/bin/env bash
# Tests of scripts/check-layers.sh: a small tree that obeys the layering passes, and each
# violation planted in a copy of it (a direct forbidden include, one reached through a header of
# an allowed module, a folder with no rule, a missing file) fails naming the edge. Then the same
# on a copy of the real src/: whatever else today's tree reports, an include of speculative/
# planted in a kernel file must be reported as kernels -> speculative.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
checker=$repo/scripts/check-layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; printf '%s\n' "$out" | sed 's/^/    /'; }

# run DIR: runs the checker on DIR, leaving its output in $out and its exit status in $rc.
run() { rc=0; out=$(bash "$checker" --root "$1" 2>&1) || rc=$?; }

# expect_fail NAME DIR TEXT...: the checker exits 1 on DIR and its output has each TEXT.
expect_fail() {
  local name=$1 dir=$2 text; shift 2
  run "$dir"
  [[ $rc -eq 1 ]] || { fail "$name: exit $rc, expected 1"; return; }
  # A crash exits 1 too, but is no report.
  ! grep -q Traceback <<<"$out" || { fail "$name: the checker crashed"; return; }
  for text in "$@"; do
    grep -qF -- "$text" <<<"$out" || { fail "$name: output lacks '$text'"; return; }
  done
  ok "$name"
}

# put FILE LINE...: writes a file of the fixture, one include (or other line) per argument.
put() { local f=$1; shift; mkdir -p "$(dirname "$f")"; printf '%s\n' "#pragma once" "$@" >"$f"; }

# The clean fixture: each module includes only what it may, model/api.h is the public header
# speculative/ goes through, and the includes the checker must ignore (a system header, a quoted
# name outside any module) are there too.
base=$tmp/base
put "$base/core/base.h" '#include <vector>'
put "$base/kernels/matmul.h" '#include "core/base.h"'
put "$base/kernels/ref/matmul.cpp" '#include "kernels/matmul.h"' '#include "generated_config.h"'
put "$base/model/api.h" '#include "core/base.h"'
put "$base/model/forward.cpp" '#include "model/api.h"' '#include "kernels/matmul.h"'
put "$base/speculative/gen.h" '#include "model/api.h"' '#include "core/base.h"'
put "$base/speculative/gen.cpp" '#include "speculative/gen.h"'

run "$base"
if [[ $rc -eq 0 && $out == "check-layers: 7 files, no forbidden includes" ]]; then
  ok "a tree that obeys the layering passes"
else
  fail "a tree that obeys the layering passes (exit $rc)"
fi

# Each case starts from a fresh copy of the clean fixture.
copy() { rm -rf "$tmp/case"; cp -r "$base" "$tmp/case"; }

copy
put "$tmp/case/kernels/x.h" '#include "core/base.h"' '#include "model/api.h"'
expect_fail "a direct forbidden include" "$tmp/case" \
  "kernels -> model: $tmp/case/kernels/x.h:3 includes model/api.h"

# speculative/ may include model/, but not the kernel header a model header drags in. The
# report names the file of speculative/ that made the include, not gen.cpp which includes it.
copy
put "$tmp/case/model/b.h" '#include "kernels/c.h"'
put "$tmp/case/kernels/c.h" '#include "core/base.h"'
put "$tmp/case/speculative/a.h" '#include "model/b.h"'
expect_fail "a forbidden module reached through a header of an allowed one" "$tmp/case" \
  "speculative -> kernels: $tmp/case/speculative/a.h:2 includes model/b.h -> kernels/c.h"
put "$tmp/case/speculative/gen.h" '#include "speculative/a.h"'
run "$tmp/case"
if [[ $rc -eq 1 ]] && ! grep -q "speculative/gen" <<<"$out"; then
  ok "a file that includes a violating header of its own module is not reported again"
else
  fail "a file that includes a violating header of its own module is not reported again"
fi

# Two routes to kernels/: one line for the pair (file, kernels), with the shorter chain.
copy
put "$tmp/case/model/long.h" '#include "model/b.h"'
put "$tmp/case/model/b.h" '#include "kernels/c.h"'
put "$tmp/case/kernels/c.h"
put "$tmp/case/speculative/a.h" '#include "model/long.h"' '#include "kernels/c.h"'
run "$tmp/case"
if [[ $rc -eq 1 && $(grep -c "speculative -> kernels" <<<"$out") -eq 1 ]] &&
   grep -qF "speculative/a.h:3 includes kernels/c.h" <<<"$out"; then
  ok "each forbidden module is reported once per file, by its shortest chain"
else
  fail "each forbidden module is reported once per file, by its shortest chain"
fi

copy
put "$tmp/case/newthing/x.h" '#include "core/base.h"'
expect_fail "a module folder with no rule" "$tmp/case" "module 'newthing'" "add it to the table"

copy
put "$tmp/case/model/api.h" '#include "kernels/gone.h"'
expect_fail "an include of a missing file of a known module" "$tmp/case" \
  "$tmp/case/model/api.h:2: includes kernels/gone.h, which does not exist"

# The real tree: a kernel file made to include the generator must be reported, by its line.
cp -r "$repo/src" "$tmp/src"
kernels=("$tmp"/src/kernels/*.cpp)
kernel=kernels/${kernels[0]##*/}
echo '#include "speculative/generator.h"' >>"$tmp/src/$kernel"
line=$(wc -l <"$tmp/src/$kernel")
expect_fail "an include of speculative/ planted in $kernel of the real src/" "$tmp/src" \
  "kernels -> speculative: $tmp/src/$kernel:$line includes speculative/generator.h"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
