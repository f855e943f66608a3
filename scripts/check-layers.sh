#!/usr/bin/env bash
# The layering check of DESIGN §2: "Dependencies point downward only: cli/server -> speculative
# -> model -> kernels -> tensor -> core; tokenizer, sampling, gguf, convert stand beside model."
# The compiler does not enforce this: any file may include any header under src/. So this script
# reads every `#include "..."` of every file under src/ and fails when a module reaches a module
# it may not, directly or through the headers of the modules below (a header of model/ that
# includes a kernel header hands that kernel to everyone who includes it).
#
# usage: scripts/check-layers.sh [--root DIR] [--help]
#   --root DIR  the source tree to check (default: the repository's src/)
#
# A module is a folder directly under the root; includes are written relative to the root
# (`#include "model/model.h"`). Angle-bracket includes are system headers and are not read. A
# quoted include naming no file under the root is ignored unless its first component is a module
# (then the file is missing, which is reported). Each (file, forbidden module) is reported once,
# with the shortest include chain that reaches it. Exit 1 on any violation.
set -euo pipefail

# For each module, the modules it may reach (besides itself); `*` is every module. A new folder
# under src/ must be added here: the check refuses a module it has no rule for.
# module       may reach
LAYERS='
core
tensor         core
gguf           tensor core
kernels        tensor core
model          kernels gguf tensor core
sampling       core
grammar        core
tokenizer      gguf tensor core
jinja          core
convert        tokenizer gguf tensor core
synth          convert tokenizer gguf tensor core
speculative    model sampling grammar core
server         speculative model sampling grammar tokenizer jinja core
cli            *
'

usage() { sed -n '9,10p' "$0" | sed 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "$0")/.." && pwd)/src
shown=src  # how paths are printed: as the reader would type them from the repository root
while [[ $# -gt 0 ]]; do
  case $1 in
    --root) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; root=${2%/}; shown=$root; shift 2 ;;
    --help|-h) usage; exit 0 ;;
    *) echo "check-layers: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -d $root ]] || { echo "check-layers: no such directory: $root" >&2; exit 2; }

LAYERS=$LAYERS exec python3 - "$root" "$shown" <<'PY'
import collections, os, re, sys

root, shown = sys.argv[1], sys.argv[2]
allowed = {}
for line in os.environ["LAYERS"].strip().splitlines():
    module, *reach = line.split()
    allowed[module] = set(reach) | {module}

def may_reach(a, b):
    return "*" in allowed[a] or b in allowed[a]

# Every module folder must have a rule, or its includes would go unchecked.
unknown = sorted(e for e in os.listdir(root)
                 if os.path.isdir(os.path.join(root, e)) and e not in allowed)
for m in unknown:
    print(f"check-layers: {shown}/{m}/: module '{m}' has no rule (add it to the table "
          f"at the top of scripts/check-layers.sh)")
if unknown:
    sys.exit(1)

files = sorted(os.path.relpath(os.path.join(d, f), root)
               for d, _, names in os.walk(root) for f in names)
module_of = lambda rel: rel.split(os.sep)[0]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

def includes(rel):
    """(line number, included file relative to root) for each quoted include of rel."""
    out = []
    with open(os.path.join(root, rel), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            # As the compiler looks: next to the including file first, then from the root.
            for cand in (os.path.join(os.path.dirname(rel), name), name):
                cand = os.path.normpath(cand)
                if not cand.startswith("..") and os.path.isfile(os.path.join(root, cand)):
                    out.append((n, cand))
                    break
            else:
                if name.split("/")[0] in allowed:
                    out.append((n, None, name))
    return out

graph = {rel: includes(rel) for rel in files}
problems = []
for rel in files:
    mod = module_of(rel)
    # Breadth first from the file's includes, so the first chain found to a module is a shortest.
    # Includes within the file's own module are not followed: that file is checked on its own,
    # and following them would report one violation again at every file that includes it.
    seen, queue, found = set(), collections.deque(), {}
    for inc in graph[rel]:
        if inc[1] is None:
            problems.append((rel, inc[0], f"{shown}/{rel}:{inc[0]}: includes {inc[2]}, "
                                          f"which does not exist"))
        elif module_of(inc[1]) != mod and inc[1] not in seen:
            seen.add(inc[1])
            queue.append((inc[0], [inc[1]]))
    while queue:
        line, chain = queue.popleft()
        target = module_of(chain[-1])
        if not may_reach(mod, target) and target not in found:
            found[target] = (line, chain)
        for inc in graph[chain[-1]]:
            if inc[1] is not None and inc[1] not in seen:
                seen.add(inc[1])
                queue.append((line, chain + [inc[1]]))
    for target, (line, chain) in sorted(found.items(), key=lambda kv: (kv[1][0], kv[0])):
        problems.append((rel, line, f"{mod} -> {target}: {shown}/{rel}:{line} includes "
                                    + " -> ".join(chain)))

for _, _, text in sorted(problems):
    print(text)
if problems:
    print(f"check-layers: {len(problems)} forbidden includes in "
          f"{len({p[0] for p in problems})} of {len(files)} files")
    sys.exit(1)
print(f"check-layers: {len(files)} files, no forbidden includes")
PY
