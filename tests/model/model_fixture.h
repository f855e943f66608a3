// Shared helpers for model tests: a tiny synthetic model written once per process.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/context.h"
#include "sampling/sampler.h"
#include "synth/synth.h"

namespace fulgur::testing_support {

// "Hello, world" as byte tokens: the prompt the model tests share when any prompt will do.
inline const std::vector<int32_t> kHelloPrompt = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100};

// Path of a synthetic GGUF (built-in vocabulary) of this arch, shape, type and seed; `mtp`: with
// an MTP block (the Gated-DeltaNet hybrids, Nemotron-H).
inline std::string synth_model_file(const std::string& arch, const std::string& shape, DType type,
                                    uint64_t seed, bool mtp = false) {
  const std::string path = ::testing::TempDir() + "/fulgur_" + shape + "_" + arch + "_" +
                           std::string(dtype_name(type)) + "_" + std::to_string(seed) +
                           (mtp ? "_mtp" : "") + ".gguf";
  SynthOptions o;
  o.arch = arch;
  o.mtp = mtp;
  o.shape = shape;
  o.seed = seed;
  o.type = type;
  o.out = path;
  o.tokenizer_json = "builtin";
  synth_model(o);
  return path;
}

// Path of a tiny synthetic GGUF (built-in vocabulary) for this arch, type and seed; `mtp`:
// with an MTP block.
inline std::string tiny_model(const std::string& arch = "qwen3", DType type = DType::kF32,
                              uint64_t seed = 1, bool mtp = false) {
  return synth_model_file(arch, "tiny", type, seed, mtp);
}

// A gtest parameter name for an arch ("gpt-oss" -> "gpt_oss": names allow only [A-Za-z0-9_]).
inline std::string arch_param_name(std::string arch) {
  for (char& c : arch) c = c == '-' ? '_' : c;
  return arch;
}

// The logits [n_vocab] of every prompt position, each decoded alone (one row per decode).
inline std::vector<std::vector<float>> logits_token_by_token(const Model& m, const std::vector<int32_t>& prompt) {
  Context ctx(m, {.n_ctx = 64, .n_batch = 16, .n_threads = 2});
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < prompt.size(); ++i) {
    Batch b;
    b.add(prompt[i], static_cast<int32_t>(i), 0, true);
    ctx.decode(b);
    out.emplace_back(ctx.logits(0), ctx.logits(0) + m.n_vocab());
  }
  return out;
}

// The prompt on sequences 0 and 3 interleaved row by row in one batch: every row's logits are
// bitwise those of `alone` (logits_token_by_token).
inline void expect_interleaved_bitwise(const Model& m, const std::vector<int32_t>& prompt,
                                       const std::vector<std::vector<float>>& alone, const std::string& what) {
  Context ctx(m, {.n_ctx = 64, .n_batch = 32, .n_threads = 2});
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) {
    b.add(prompt[i], static_cast<int32_t>(i), 0, true);
    b.add(prompt[i], static_cast<int32_t>(i), 3, true);
  }
  ctx.decode(b);
  for (size_t i = 0; i < prompt.size(); ++i) {
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(std::memcmp(ctx.logits(static_cast<int64_t>(2 * i + s)), alone[i].data(), alone[i].size() * sizeof(float)), 0)
          << what << " row " << i << " of sequence " << (s ? 3 : 0);
    }
  }
}

using Logits = std::vector<std::vector<float>>;

// Decodes tokens at positions pos0.. of `seq` in one batch; returns every row's logits.
inline Logits decode_rows(Context& ctx, const std::vector<int32_t>& tokens, int32_t pos0, int seq = 0) {
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], pos0 + static_cast<int32_t>(i), seq, true);
  ctx.decode(b);
  Logits out;
  for (int64_t r = 0; r < b.size(); ++r) out.emplace_back(ctx.logits(r), ctx.logits(r) + ctx.model().n_vocab());
  return out;
}

// Bitwise equality of two logit rows.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Loading `path` fails with an error whose message holds every one of `words`.
inline void expect_load_error(const std::string& path, const std::vector<std::string>& words) {
  try {
    Model m(path);
    FAIL() << "loaded " << path;
  } catch (const Error& e) {
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

// Decodes `prompt` in one batch, then n greedy tokens one at a time (sequence 0).
inline std::vector<int32_t> greedy(Context& ctx, const std::vector<int32_t>& prompt, int n) {
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  ctx.decode(b);
  std::vector<int32_t> out;
  int32_t pos = static_cast<int32_t>(prompt.size());
  int32_t tok = fulgur::greedy(ctx.logits(b.size() - 1), static_cast<int>(ctx.model().n_vocab()));
  for (int i = 0; i < n; ++i) {
    out.push_back(tok);
    b.clear();
    b.add(tok, pos++, 0, true);
    ctx.decode(b);
    tok = fulgur::greedy(ctx.logits(0), static_cast<int>(ctx.model().n_vocab()));
  }
  return out;
}

}  // namespace fulgur::testing_support
