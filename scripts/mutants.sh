#!/usr/bin/env bash
# The mutation check: small bugs planted one at a time in a copy of the tree (the verifier, the
# generator's commit and rollback, the drafters' q and state, the sampler), each rebuilt
# incrementally; the tests named for it must then fail. A mutant that survives means the tests
# would not notice that bug: the script says which and exits 1.
#
# usage: scripts/mutants.sh [--work DIR] [--list] [--check] [NAME...]
#   --work DIR  where the copy of the tree and its build live (default: $FULGUR_MUTANTS_DIR or
#               /tmp/fulgur-mutants); kept between runs, so later runs rebuild incrementally
#   --list      print the mutants and exit
#   --check     only check that every mutant still applies to this tree (no build; CI runs this)
#   NAME...     run only these mutants
#
# Each mutant is one line of the table below: a name, the file, which occurrence of the text to
# replace (n/total: the text must occur exactly `total` times, so an edit of the source that moves
# the line makes the script fail loudly instead of planting nothing), the text and its
# replacement, the test binary and the gtest filter of the tests expected to kill it. The filter
# keeps the run short; the script reports the first test that failed (gtest --gtest_fail_fast)
# and checks first that the same tests pass on the unmutated copy. A mutant that hangs is
# stopped after 300 s and counts as killed; one that does not compile stops the script.
#
# Which test kills which mutant (the first to fail under --gtest_fail_fast, AMD EPYC with
# AVX-512, 2 busy cores; last full run 2026-12-04, 18 of 18 killed in 571 s):
#   verifier-argmax-bonus             Verifier.RejectionSamplingWithACloseDraftReproducesTarget
#   verifier-residual-is-p            Verifier.RejectionSamplingWithACloseDraftReproducesTarget
#   verifier-accept-ratio-inverted    Verifier.RejectionSamplingWithACloseDraftReproducesTarget
#   verifier-exact-match-argmax       Verifier.ExactMatchVerificationReproducesTarget
#   verifier-penalties-miss-drafts    Generator.GreedyWithPenaltiesIsIdentical
#   generator-keeps-rejected-row      Generator.GreedyIsIdenticalOnQuantizedTarget
#   generator-commits-one-short       Generator.GreedyIsIdenticalOnQuantizedTarget
#   generator-commit-taps-shifted     Kinds/DflashLossless.GreedyEqualsPlainDecodingThroughAcceptedDrafts/dflash_zlab
#   generator-prefill-taps-shifted    Kinds/DflashLossless.GreedyEqualsPlainDecodingThroughAcceptedDrafts/dflash_zlab
#   draft-sampler-argmax-claims-q     SpecSampling.TemperedDraftModelWithPenaltiesReproducesTheTarget
#   draft-model-penalties-miss-drafts Generator.GreedyWithPenaltiesIsIdentical
#   block-walk-argmax-claims-q        Kinds/DflashSampling.EveryEmittedTokenHasTheTargetsDistribution/dflash
#   dflash2-argmax-claims-q           Kinds/DflashSampling.EveryEmittedTokenHasTheTargetsDistribution/dflash2
#   dspark-chain-prev-stuck           DflashDrafter.ShortBlockAsLlamaCpp
#   dspark-rnn-state-leaks            Kinds/DflashLossless.GreedyEqualsPlainDecodingThroughAcceptedDrafts/dspark_rnn
#   chain-features-one-late           MtpZoo.TrainedHeadIsAcceptedAsTheZooSays (added 2026-12-06, checked by hand)
#   feature-gather-taps-reversed      ZooAcceptance.DsparkDraftAsRecorded (added 2026-12-06, checked by hand)
#   draft-model-keeps-stale-kv        Archs/GeneratorTargets.GreedyIsIdenticalWithEveryDrafter/qwen3 (added 2026-12-06, checked by hand)
#   assistant-chain-rows-step-on      Gemma4Assistant.DraftsAreTheAssistantsChain (added 2026-12-07, checked by hand)
#   d2t-scatter-one-off               Eagle3.ReducedVocabularyDraftIsTheFullDraftThroughD2t (added 2026-12-07, checked by hand)
#   resting-ignored                   DflashDrafter.RestingKeepsTheRecentWindowOnly (added 2026-12-07)
#   chain-feeds-anchor                Eagle3.AgreeingHeadIsAccepted (added 2026-12-07, checked by hand; no
#                                     other Eagle3.* test kills it, Mtp.* does: the chain is shared)
#   sampler-draw-biased               Distribution.SampleMatchesDistributionChiSquare
#   sampler-residual-half-q           Residual.MaxOfDifferenceNormalised
#   sampler-temperature-ignored       Distribution.SampleMatchesDistributionChiSquare
# (Verifier.* kills the verifier mutants before SpecSampling.* or Generator.* would; the
# block-walk mutant plants its bug in the walk plain DFlash and DSpark share.)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

work=${FULGUR_MUTANTS_DIR:-/tmp/fulgur-mutants}
list=0
check=0
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --list) list=1; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "mutants.sh: unknown option $1" >&2; exit 2 ;;
    *) only+=("$1"); shift ;;
  esac
done

names=() files=() nths=() froms=() tos=() bins=() filters=()
mutant() {  # NAME FILE NTH/TOTAL FROM TO BINARY FILTER
  names+=("$1") files+=("$2") nths+=("$3") froms+=("$4") tos+=("$5") bins+=("$6") filters+=("$7")
}

mutant verifier-argmax-bonus src/speculative/verifier.cpp 1/1 \
  'r.next = sample(p, rng);' 'r.next = p.top();' \
  test_speculative 'Verifier.*'
mutant verifier-residual-is-p src/speculative/verifier.cpp 2/2 \
  'r.next = sample(residual_, rng);' 'r.next = sample(p, rng);' \
  test_speculative 'Verifier.*'
mutant verifier-accept-ratio-inverted src/speculative/verifier.cpp 1/1 \
  'if (!(rng.uniform() * qd < pd)) {' 'if (!(rng.uniform() * pd < qd)) {' \
  test_speculative 'Verifier.*'
mutant verifier-exact-match-argmax src/speculative/verifier.cpp 1/1 \
  'const int32_t t = sample(p, rng);' 'const int32_t t = p.top();' \
  test_speculative 'Verifier.*'
mutant verifier-penalties-miss-drafts src/speculative/verifier.cpp 1/1 \
  'sampler_.distribution(rows[i], history, allowed);' 'sampler_.distribution(rows[i], {}, allowed);' \
  test_speculative 'Verifier.*:Generator.*'
mutant generator-keeps-rejected-row src/speculative/generator.cpp 1/1 \
  'seq_rm(q, s.anchor_pos + n_kept, -1)' 'seq_rm(q, s.anchor_pos + n_kept + 1, -1)' \
  test_speculative 'Generator.*:Archs/GeneratorTargets.*:Rollback.*'
mutant generator-commits-one-short src/speculative/generator.cpp 1/1 \
  'static_cast<std::ptrdiff_t>(h0 + r.n_accepted));' 'static_cast<std::ptrdiff_t>(h0 + r.n_accepted - 1));' \
  test_speculative 'Generator.*:Archs/GeneratorTargets.*:Rollback.*'
mutant generator-commit-taps-shifted src/speculative/generator.cpp 1/1 \
  'for (int32_t i = 0; i < n_kept; ++i) row_ids_[i] = s.row0 + i;' \
  'for (int32_t i = 0; i < n_kept; ++i) row_ids_[i] = s.row0 + i + (i > 0);' \
  test_dflash 'Kinds/DflashLossless.*'
mutant generator-prefill-taps-shifted src/speculative/generator.cpp 1/1 \
  'for (int32_t i = 0; i < n; ++i) row_ids_[i] = s.row0 + i;' \
  'for (int32_t i = 0; i < n; ++i) row_ids_[i] = s.row0 + i + (i + 1 < n);' \
  test_dflash 'Kinds/DflashLossless.*'
mutant draft-sampler-argmax-claims-q src/speculative/drafters/draft_sampling.cpp 1/1 \
  'out.tokens.push_back(greedy ? dist.top() : sample(dist, *req.rng));' 'out.tokens.push_back(dist.top());' \
  test_speculative 'SpecSampling.*'
mutant draft-model-penalties-miss-drafts src/speculative/drafters/draft_model.cpp 1/1 \
  'if (penalties) hist_scratch_.push_back(tok);' 'if (penalties) (void)tok;' \
  test_speculative 'Generator.*:SpecSampling.*'
mutant block-walk-argmax-claims-q src/speculative/drafters/dflash.cpp 1/2 \
  'tok = sample(q, *req.rng);' 'tok = to_target(argmax(cur.data(), Vd));' \
  test_dflash 'Kinds/DflashSampling.*'
mutant dflash2-argmax-claims-q src/speculative/drafters/dflash.cpp 2/2 \
  'tok = sample(q, *req.rng);' 'tok = sel_ids[argmax(sel_scores.data(), k_top)];' \
  test_dflash 'Kinds/DflashSampling.*'
mutant dspark-chain-prev-stuck src/speculative/drafters/dflash.cpp 1/2 \
  'prev = tok;' '(void)prev;' \
  test_dflash 'DflashDrafter.*:Kinds/*:DflashZoo.*'
mutant dspark-rnn-state-leaks src/model/dflash_heads.cpp 1/1 \
  'void DflashHeads::begin_block() { std::fill(state_.begin(), state_.end(), 0.0f); }' \
  'void DflashHeads::begin_block() {}' \
  test_dflash 'Kinds/DflashLossless.*'
mutant chain-features-one-late src/speculative/drafters/chain.cpp 1/1 \
  'const float* h = i > 0 ? features.row(static_cast<int64_t>(i) - 1) : s.last_h.data();' \
  'const float* h = i > 1 ? features.row(static_cast<int64_t>(i) - 2) : s.last_h.data();' \
  test_speculative 'MtpZoo.*'
mutant assistant-chain-rows-step-on src/speculative/drafters/chain.cpp 1/1 \
  'own_kv_ ? req.anchor_pos + step + 1 : req.anchor_pos, req.seq, from' 'req.anchor_pos + step + 1, req.seq, from' \
  test_speculative 'Gemma4Assistant.*'
mutant feature-gather-taps-reversed src/speculative/target_features.cpp 1/1 \
  'target_.tap(index_[t], rows[i])' 'target_.tap(index_[index_.size() - 1 - t], rows[i])' \
  test_dflash 'ZooAcceptance.*'
mutant draft-model-keeps-stale-kv src/speculative/drafters/draft_model.cpp 1/1 \
  'if (!ctx_.seq_rm(seq, static_cast<int32_t>(common), -1)) {' 'if (false) {' \
  test_speculative 'Archs/GeneratorTargets.*'
mutant d2t-scatter-one-off src/speculative/drafters/draft_sampling.cpp 1/1 \
  'full[static_cast<size_t>(d2t[i])] = draft_logits[i];' 'full[static_cast<size_t>(d2t[i])] = draft_logits[(i + 1) % d2t.size()];' \
  test_speculative 'Eagle3.*'
mutant resting-ignored src/speculative/drafters/dflash.cpp 1/1 \
  'impl_->resting = resting;' 'impl_->resting = false;' \
  test_dflash 'DflashDrafter.*'
mutant chain-feeds-anchor src/speculative/drafters/chain.cpp 1/1 \
  'add_chain_row(out[i].tokens.back(),' 'add_chain_row(req.anchor,' \
  test_speculative 'Eagle3.*'
mutant sampler-draw-biased src/sampling/distribution.cpp 1/1 \
  'const double target = rng.uniform() * total;' 'const double target = rng.uniform() * total * 0.97;' \
  test_sampling 'Distribution.*:Residual.*:Sampler.*'
mutant sampler-residual-half-q src/sampling/distribution.cpp 1/1 \
  'const float r = p.prob(id) - q.prob(id);' 'const float r = p.prob(id) - 0.5f * q.prob(id);' \
  test_sampling 'Distribution.*:Residual.*:Sampler.*'
mutant sampler-temperature-ignored src/sampling/sampler.cpp 1/1 \
  'std::exp((work[id] - max_logit) * inv_t);' 'std::exp(work[id] - max_logit);' \
  test_sampling 'Distribution.*:Residual.*:Sampler.*'

# Replaces occurrence n of FROM by TO in FILE (n/total: FROM must occur exactly total times);
# with "check" instead of "write" only verifies that it could.
plant() {  # FILE NTH/TOTAL FROM TO write|check
  python3 - "$@" <<'EOF'
import sys
path, nth, old, new, mode = sys.argv[1:6]
n, total = (int(x) for x in nth.split("/"))
text = open(path, encoding="utf-8").read()
if text.count(old) != total:
    sys.exit(f"{path}: '{old}' occurs {text.count(old)} times, the table says {total}: update the mutant")
at = -1
for _ in range(n):
    at = text.index(old, at + 1)
if mode == "write":
    open(path, "w", encoding="utf-8").write(text[:at] + new + text[at + len(old):])
EOF
}

if [ $list -eq 1 ]; then
  for i in "${!names[@]}"; do printf '%-34s %-36s %s %s\n' "${names[$i]}" "${files[$i]}" "${bins[$i]}" "${filters[$i]}"; done
  exit 0
fi
selected=()
for i in "${!names[@]}"; do
  if [ ${#only[@]} -eq 0 ] || printf '%s\n' "${only[@]}" | grep -qx -- "${names[$i]}"; then selected+=("$i"); fi
done
[ ${#selected[@]} -gt 0 ] || { echo "mutants.sh: no mutant named ${only[*]}" >&2; exit 2; }
if [ $check -eq 1 ]; then
  stale=0
  for i in "${selected[@]}"; do plant "${files[$i]}" "${nths[$i]}" "${froms[$i]}" "${tos[$i]}" check || stale=1; done
  [ $stale -eq 0 ] || exit 1
  echo "mutants.sh: all ${#selected[@]} mutants apply to this tree"
  exit 0
fi

t_start=$(date +%s)
# The build lives inside the copy, at the same place relative to the sources as build/ in a
# checkout, so that ccache (CCACHE_BASEDIR) reuses the checkout's objects for unchanged files.
build=$work/src/build
logs=$work/logs
mkdir -p "$logs"
# The copy: tracked and untracked-but-not-ignored files, synced into $work/src (only changed files
# are rewritten, so their timestamps, and the incremental build, stay valid; files the tree no
# longer has are removed).
mkdir -p "$work/src"
git ls-files -z -co --exclude-standard | python3 -c '
import os, shutil, sys
dst = sys.argv[1]
paths = {p for p in sys.stdin.buffer.read().decode().split("\0") if p and os.path.isfile(p)}
for path in paths:
    out = os.path.join(dst, path)
    if os.path.isfile(out) and open(out, "rb").read() == open(path, "rb").read():
        continue
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    shutil.copy2(path, out)
# Files the tree no longer has (the build and the node_modules link stay).
for top, dirs, files in os.walk(dst):
    rel = os.path.relpath(top, dst)
    if rel == ".":
        dirs[:] = [d for d in dirs if d not in ("build", "node_modules")]
    for f in files:
        path = os.path.normpath(os.path.join(rel, f))
        if path not in paths and path != "node_modules":
            os.remove(os.path.join(top, f))
' "$work/src"
[ -e "$work/src/node_modules" ] || ln -s "$root/node_modules" "$work/src/node_modules" 2>/dev/null || true
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$work/src
fi
cmake -S "$work/src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFULGUR_BENCH=OFF "${launcher[@]}" >/dev/null

targets=$(for i in "${selected[@]}"; do echo "${bins[$i]}"; done | sort -u | tr '\n' ' ')
# Run one mutant's tests; prints the first failing test, returns 0 when some test failed.
run_tests() {  # BINARY FILTER LOG
  local rc=0
  (cd "$build" && timeout 300 "./$1" --gtest_filter="$2" --gtest_fail_fast --gtest_brief=1) >"$3" 2>&1 || rc=$?
  if [ $rc -eq 124 ]; then echo "timed out"; return 0; fi
  if [ $rc -ne 0 ]; then
    grep -m1 -oE '\[  FAILED  \] [^ ,]+' "$3" | sed 's/\[  FAILED  \] //' || echo "exit status $rc"
    return 0
  fi
  return 1
}

echo "mutants.sh: building $targets in $build"
# shellcheck disable=SC2086
cmake --build "$build" --target $targets >"$logs/build.log" 2>&1 || { tail -30 "$logs/build.log"; exit 1; }
echo "mutants.sh: the unmutated tree must pass the tests first"
for bin in $targets; do
  filter=$(for i in "${selected[@]}"; do if [ "${bins[$i]}" = "$bin" ]; then echo "${filters[$i]}"; fi; done |
           tr ':' '\n' | sort -u | paste -sd:)
  if failed=$(run_tests "$bin" "$filter" "$logs/baseline-$bin.log"); then
    echo "mutants.sh: $bin --gtest_filter='$filter' fails without any mutant ($failed); see $logs/baseline-$bin.log" >&2
    exit 1
  fi
done

survivors=()
for i in "${selected[@]}"; do
  name=${names[$i]} file=${files[$i]} t0=$(date +%s)
  cp "$work/src/$file" "$work/original"
  plant "$work/src/$file" "${nths[$i]}" "${froms[$i]}" "${tos[$i]}" write || { echo "mutants.sh: cannot plant $name" >&2; exit 1; }
  status=""
  if ! cmake --build "$build" --target "${bins[$i]}" >"$logs/build.log" 2>&1; then
    cp "$work/original" "$work/src/$file"
    echo "mutants.sh: $name does not compile (a mutant must be a bug the tests see, not the compiler); see $logs/build.log" >&2
    exit 1
  elif failed=$(run_tests "${bins[$i]}" "${filters[$i]}" "$logs/$name.log"); then
    status="killed by $failed"
  fi
  # The restored file is newer than the mutant's object, so the next build recompiles it.
  cp "$work/original" "$work/src/$file"
  if [ -z "$status" ]; then
    status="SURVIVED (log: $logs/$name.log)"
    survivors+=("$name")
  fi
  printf '%-34s %-70s %4ss\n' "$name" "$status" "$(( $(date +%s) - t0 ))"
done
# Leave the build matching the unmutated tree.
cmake --build "$build" --target $targets >"$logs/build.log" 2>&1 || true

echo "mutants.sh: ${#selected[@]} mutants, ${#survivors[@]} survived, $(( $(date +%s) - t_start )) s"
[ ${#survivors[@]} -eq 0 ] || { echo "survivors: ${survivors[*]}" >&2; exit 1; }
