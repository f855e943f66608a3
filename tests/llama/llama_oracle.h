// Helpers for the llama.cpp cross-check: running the `fulgur` binary and the node-llama-cpp
// oracle (tests/oracle/llama_greedy.mjs) as subprocesses, and fulgur's own logits in-process.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scratch_dir.h"

namespace fulgur::test {

struct Proc {
  int status = -1;  // exit status; -1 when the process did not exit normally
  std::string out, err;
};

// Runs `cmd` through /bin/sh with stdout and stderr captured in files under `dir`.
Proc run_shell(const std::string& cmd, const std::string& dir);

// Runs the fulgur binary with `args`; fails the test (with stderr) on a non-zero exit.
std::string run_fulgur_ok(const std::string& args, const std::string& dir);

// `fulgur synth --arch ARCH --shape SHAPE --seed 11 --type TYPE --tokenizer builtin EXTRA` into
// dir (a file named after the arguments); returns its path. A failing synth fails the test.
std::string synth_file(const std::string& arch, const std::string& shape, const std::string& type,
                       const std::string& dir, const std::string& extra = "");
// A Gemma 4 synth file (shapes tiny, tiny-moe, tiny-ple: synth_shapes_help()), for the llama.cpp
// cross-checks of the gemma4 forward pass.
inline std::string synth_gemma4(const std::string& shape, const std::string& type, const std::string& dir) {
  return synth_file("gemma4", shape, type, dir);
}

// Empty when node and node-llama-cpp's CPU build are usable, else why not (for GTEST_SKIP).
std::string llama_oracle_missing();

// The prebuilt libllama shared library node-llama-cpp ships (its CPU build for linux-x64), or ""
// when it is not installed. The llama_quantize tool (tests/tools) dlopens it.
std::string llama_library();
// Why a test that needs llama_library() skips when it is "".
inline constexpr const char* kNoLibllama =
    "node-llama-cpp's prebuilt libllama (node_modules/@node-llama-cpp/linux-x64*/bins) is not installed (run "
    "`npm ci` in the repository root)";

// llama.cpp's own quantizer on `in` (an f32/f16 GGUF) to the llama.cpp ftype named `ftype`
// (q4_k_m, iq4_xs, ...: `llama_quantize list`), written to `out`; fails the test with the tool's
// stderr when it does not succeed. Needs llama_library().
// `legacy_imatrix` (optional): an importance matrix in llama.cpp's legacy .dat format.
// `options` (optional): the tool's per-tensor options, already quoted for the shell
// (tests/tools/llama_quantize.cpp: --pure, --output-tensor-type ID, --tensor-type PATTERN=ID, ...).
void llama_quantize(const std::string& in, const std::string& out, const std::string& ftype, const std::string& dir,
                    const std::string& legacy_imatrix = "", const std::string& options = "");

// "1,2,3".
std::string join_ids(const std::vector<int32_t>& ids);

// Result of one greedy run on either engine.
struct GreedyRun {
  std::vector<int32_t> tokens;                         // [n] greedy continuation
  std::vector<std::vector<std::pair<int32_t, float>>> top;  // [n][k] (id, logit), best first
  std::vector<float> logits;                           // [n_vocab] of the prompt's last position
};

// llama.cpp through node-llama-cpp, one thread, full logits of the prompt's last position.
// `extra` is appended to the oracle's arguments (e.g. "--flash-attention off --kv-type F32").
GreedyRun llama_greedy(const std::string& model, const std::vector<int32_t>& prompt, int n, int top_k,
                       const std::string& dir, const std::string& extra = "");

// fulgur in-process (one thread): prompt in one batch, then n tokens one at a time; the same
// numbers `fulgur run` computes, plus the per-step logits the CLI does not print.
GreedyRun fulgur_greedy(const std::string& model, const std::vector<int32_t>& prompt, int n, int top_k);

// The MoE router's second kind of near-tie: over every MoE layer and every row of `tokens`
// (decoded as one sequence), the smallest gap between the k-th and (k+1)-th expert's selection
// score (probability, plus the selection bias where the layer has one), computed in double from
// fulgur's layer inputs and the file's f32 router. A gap below the engines' rounding difference
// may choose another expert in llama.cpp, which moves that row's output, and every later row
// that attends to it or carries its recurrent state, far more than a rounding. INFINITY for a
// model without MoE layers.
double min_router_gap(const std::string& model, const std::vector<int32_t>& tokens);

// `fulgur run --prompt-ids ... -c (prompt + n + 8) --temp 0 --ignore-eos --json -t 1`: the generated ids.
std::vector<int32_t> fulgur_run_cli(const std::string& model, const std::vector<int32_t>& prompt, int n,
                                    const std::string& dir);

// Top-k (id, logit) pairs of a logit row, highest first, ties to the lower id.
std::vector<std::pair<int32_t, float>> top_k_of(const float* logits, int64_t n_vocab, int k);

}  // namespace fulgur::test
