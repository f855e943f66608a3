// Shared helpers for the block-drafter tests: tiny synthetic targets (Qwen3; a recurrent one), drafts
// generated in any source format and converted by fulgur's converter, and small drivers.
#pragma once

#include <gtest/gtest.h>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <map>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "gguf_edit.h"
#include "model/context.h"
#include "scratch_dir.h"
#include "speculative/drafters/dflash.h"
#include "speculative/controlled_drafters.h"
#include "speculative/emission_check.h"
#include "speculative/generator.h"
#include "speculative/target_features.h"
#include "synth/draft_synth.h"
#include "synth/synth.h"

namespace fulgur::dflash_test {

struct Env {
  std::string dir;
  std::string target_path;
  std::unique_ptr<Model> target;
  std::vector<float> embed;    // [V][E] the target's embedding
  std::vector<float> lm_head;  // [V][E] its output head (the embedding when tied)
  int64_t n_vocab = 0, n_embd = 0;
};

// A tiny synthetic target of `arch` (built-in vocabulary) in a fresh directory.
inline Env* make_env(const std::string& arch, uint64_t seed) {
  auto* out = new Env;
  out->dir = test::scratch_dir("fulgur_dflash");
  SynthOptions o;
  o.arch = arch;
  o.shape = "tiny";
  o.seed = seed;
  o.out = out->dir + "/target.gguf";
  o.tokenizer_json = "builtin";
  synth_model(o);
  out->target_path = o.out;
  out->target = std::make_unique<Model>(o.out);
  const GgufReader r(o.out);
  const testing_support::F32Tensor embd = testing_support::read_f32(r, "token_embd.weight");
  out->n_embd = embd.shape[0];
  out->n_vocab = embd.shape[1];
  out->embed = embd.data;
  out->lm_head = r.find_tensor("output.weight") ? testing_support::read_f32(r, "output.weight").data : embd.data;
  return out;
}

// The tiny Qwen3 target most tests draft for.
inline Env& env() {
  static Env* e = make_env("qwen3", 7);
  return *e;
}

// Options of a draft for the tiny target (2 layers: taps at ids {0, 1} = inputs {1, 2}), or
// for `e`'s (the same taps unless the caller changes them).
inline DraftSynthOptions draft_options(const std::string& format, const std::string& markov, const Env& e = env()) {
  DraftSynthOptions o;
  o.format = format;
  o.markov = markov;
  o.confidence = !markov.empty();
  o.conf_with_markov = !markov.empty();
  o.n_vocab = e.n_vocab;
  o.n_embd = e.n_embd;
  o.n_target_layers = 2;
  o.target_layer_ids = {0, 1};
  o.block_size = 4;
  o.mask_token_id = e.n_vocab - 1;
  o.embed = e.embed;
  o.lm_head = e.lm_head;
  o.seed = 11;
  return o;
}

// Converts the checkpoint folder `dir` to `dir`.gguf (f32), with `target`'s vocabulary when
// given (as `fulgur convert --target`); returns the GGUF path.
inline std::string convert_draft_dir(const std::string& dir, const std::string& target = "") {
  ConvertOptions c;
  c.in_dir = dir;
  c.out_path = dir + ".gguf";
  c.type = DType::kF32;
  c.progress = false;
  c.target = target;
  convert_hf_to_gguf(c);
  return c.out_path;
}

// Writes the checkpoint under e.dir/name and converts it; returns the GGUF path.
inline std::string make_draft(const std::string& name, DraftSynthOptions o,
                              const std::string& target = "", const Env& e = env()) {
  o.out_dir = e.dir + "/" + name;
  synth_draft_checkpoint(o);
  return convert_draft_dir(o.out_dir, target);
}

// Writes the checkpoint of `o` under e.dir/name, edits its config.json (and its tensors, with
// `edit_tensors` given the folder), converts it (with
// `target`'s vocabulary when given) and expects an error containing `needle` and no output file.
inline void expect_bad_config(const std::string& name, DraftSynthOptions o,
                              const std::function<void(nlohmann::json&)>& edit, const std::string& needle,
                              const std::string& target = "", const Env& e = env(),
                              const std::function<void(const std::string& dir)>& edit_tensors = {}) {
  o.out_dir = e.dir + "/" + name;
  synth_draft_checkpoint(o);
  const std::string cfg_path = o.out_dir + "/config.json";
  nlohmann::json cfg = HfConfig::load(cfg_path).json();
  edit(cfg);
  write_json_file(cfg_path, cfg);
  if (edit_tensors) edit_tensors(o.out_dir);
  ConvertOptions c;
  c.in_dir = o.out_dir;
  c.out_path = e.dir + "/" + name + ".gguf";
  c.progress = false;
  c.target = target;
  try {
    convert_hf_to_gguf(c);
    ADD_FAILURE() << name << ": conversion succeeded";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
  }
  EXPECT_FALSE(std::filesystem::exists(c.out_path)) << name;
}

// Rewrites dir/model.safetensors with tensor `from` renamed to `to` (""; dropped), or, with
// `replacement`, holding its dtype, shape and bytes instead.
struct TensorBytes {
  SafetensorsDType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
inline void rewrite_tensor(const std::string& dir, const std::string& from, const std::string& to,
                           const std::optional<TensorBytes>& replacement = std::nullopt) {
  SafetensorsWriter w;
  {
    const Checkpoint ck(dir);
    for (const std::string& name : ck.names()) {
      const SafetensorsTensor& t = ck.tensor(name);
      if (name != from) {
        w.add(name, t.dtype, t.shape, {t.data, t.bytes});
      } else if (!to.empty()) {
        if (replacement) {
          w.add(to, replacement->dtype, replacement->shape, replacement->bytes);
        } else {
          w.add(to, t.dtype, t.shape, {t.data, t.bytes});
        }
      }
    }
  }
  w.write(dir + "/model.safetensors");
}
inline void rename_tensor(const std::string& dir, const std::string& from, const std::string& to) {
  rewrite_tensor(dir, from, to);
}

inline std::vector<int32_t> prompt_tokens(int seq, int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<int32_t>((seq * 37 + i * 11 + 5) % 200 + 30));
  return p;
}

// The sampled runs of the emission checks: 24 rounds of 4 sequences, 40 tokens each after a
// 6-token prompt, seeded per round and sequence, every emission logged.
inline void run_logged_rounds(Generator& gen, testing_support::EmissionLog& log) {
  const int kParallel = 4, kRounds = 24;
  for (int round = 0; round < kRounds; ++round) {
    for (int s = 0; s < kParallel; ++s) {
      const std::vector<int32_t> prompt = prompt_tokens(s + round, 6);
      gen.start(s, prompt, 40, 7919ull * round + s);
      log.start(s, prompt);
    }
    gen.run();
    for (int s = 0; s < kParallel; ++s) log.finish(s);
  }
}

// Prefills `prompt` minus its last token on sequence 0, commits it, and drafts after the last.
inline std::vector<int32_t> draft_after(DflashDrafter& d, const std::vector<int32_t>& prompt,
                                        int n_max, float p_min = 0.0f) {
  Context ctx(*env().target, {.n_ctx = 512, .n_batch = 512, .n_threads = 1});
  ctx.set_taps(d.required_taps());
  Batch b;
  const int n = static_cast<int>(prompt.size()) - 1;
  std::vector<int64_t> rows;
  for (int i = 0; i < n; ++i) {
    b.add(prompt[i], i, 0, false);
    rows.push_back(i);
  }
  ctx.decode(b);
  d.reset(0);
  FeatureGather features(ctx, d.required_taps());
  d.commit(0, std::span(prompt.data(), static_cast<size_t>(n)), 0, features.gather(rows));
  DraftRequest req;
  req.seq = 0;
  req.anchor = prompt.back();
  req.anchor_pos = n;
  req.n_max = n_max;
  req.p_min = p_min;
  Draft out;
  d.draft(req, out);
  return out.tokens;
}

struct GenResult {
  std::vector<std::vector<int32_t>> out;
  DrafterStats stats;  // the drafter's (empty without one)
};

// Generates n_predict tokens for n_seqs sequences, with or without a drafter, on `target`
// (null: the shared tiny target).
inline GenResult generate(Drafter* d, int n_seqs, int n_predict, float temperature = 0.0f,
                          float p_min = 0.0f, const Model* target = nullptr) {
  Context ctx(target != nullptr ? *target : *env().target, {.n_ctx = 1024, .n_batch = 512, .n_threads = 1});
  GeneratorParams gp;
  gp.sampling.temperature = temperature;
  gp.spec.p_min = p_min;
  gp.spec.schedule = SpecSchedule::kFixed;  // every step through the drafter (random drafts would be dropped)
  std::vector<Drafter*> ds;
  if (d != nullptr) ds.push_back(d);
  Generator g(ctx, gp, ds);
  for (int s = 0; s < n_seqs; ++s) g.start(s, prompt_tokens(s, 9 + 3 * s), n_predict);
  g.run();
  GenResult r;
  for (int s = 0; s < n_seqs; ++s) r.out.push_back(g.output(s));
  if (d != nullptr) r.stats = g.stats().drafters.at(0);
  return r;
}

// Greedy generation through `d` (wrapped in a ControlledDrafter that replays plain decoding's
// continuation with corrupted tails) equals plain decoding on `target` for 1 and 4 sequences,
// with drafts accepted and rejected at every draft position.
inline void expect_lossless_with_accepted_drafts(DflashDrafter& d, const Model& target, int64_t n_vocab) {
  const size_t n_drafts = static_cast<size_t>(d.max_draft());
  for (int n_seqs : {1, 4}) {
    SCOPED_TRACE(::testing::Message() << n_seqs << " sequences");
    const GenResult plain = generate(nullptr, n_seqs, 24, 0.0f, 0.0f, &target);
    testing_support::ControlledDrafter controlled(d, static_cast<int>(n_vocab), {.corrupt = true});
    for (int s = 0; s < n_seqs; ++s) controlled.set_reference(s, plain.out[s], 9 + 3 * s);
    const GenResult r = generate(&controlled, n_seqs, 24, 0.0f, 0.0f, &target);
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(r.stats.accepted_at, controlled.expected_accepted_at());
    ASSERT_EQ(r.stats.accepted_at.size(), n_drafts);
    for (size_t i = 0; i < n_drafts; ++i) {
      EXPECT_GT(r.stats.accepted_at[i], 0) << "draft position " << i;
      EXPECT_LT(r.stats.accepted_at[i], r.stats.drafted_at[i]) << "draft position " << i;
    }
  }
}

// A target whose next-token distribution is the same after any context (a "unigram" model):
// the tiny target with every token embedding equal to the first (attention then averages equal
// value rows, so every position's hidden state is the same) and an untied output head (the
// original embedding). A block draft can then be given exactly the target's logits
// (unigram_draft()), which no random draft comes near: its drafts are accepted at a chosen rate,
// which the sampling tests need.
struct Unigram {
  std::string path;
  std::unique_ptr<Model> model;
  std::vector<float> hidden;  // [E] the target's final hidden state (before the output norm)
  testing_support::F32Tensor output_norm, output;
};

inline Unigram& unigram() {
  static Unigram* u = [] {
    auto* out = new Unigram;
    const Env& e = env();
    testing_support::GgufEdit edit;
    testing_support::F32Tensor embd{{e.n_embd, e.n_vocab}, e.embed};
    for (int64_t v = 1; v < e.n_vocab; ++v) std::copy_n(e.embed.begin(), e.n_embd, embd.data.begin() + v * e.n_embd);
    edit.tensors["token_embd.weight"] = std::move(embd);
    edit.tensors["output.weight"] = {{e.n_embd, e.n_vocab}, e.embed};
    out->path = testing_support::write_edited_gguf(e.target_path, e.dir + "/unigram_target.gguf", edit);
    out->model = std::make_unique<Model>(out->path);
    const int n_layer = static_cast<int>(out->model->n_layer());
    Context ctx(*out->model, {.n_ctx = 8, .n_batch = 1, .n_threads = 1});
    ctx.set_taps({n_layer});  // the input of the layer after the last: the final hidden state
    Batch b;
    b.add(0, 0, 0, true);
    ctx.decode(b);
    out->hidden.assign(ctx.tap(0, 0), ctx.tap(0, 0) + e.n_embd);
    const GgufReader r(out->path);
    out->output_norm = testing_support::read_f32(r, "output_norm.weight");
    out->output = testing_support::read_f32(r, "output.weight");
    return out;
  }();
  return *u;
}

// A block draft (synthesized with `o`, converted) for unigram() whose base logits are the
// target's: every layer's output projections are scaled by 0 (the residual stream stays the
// input embedding), every embedding row is the target's final hidden state, and the output norm
// and head are the target's. `scales` then sets `.scale` siblings (e.g. "output.scale" = 2: the
// draft is the target at half the temperature; "markov_w2.scale": how much the DSpark Markov
// head moves q away from p).
inline std::string unigram_draft(const std::string& name, DraftSynthOptions o,
                                 const std::map<std::string, float>& scales) {
  const Unigram& u = unigram();
  const int64_t E = env().n_embd, V = env().n_vocab;
  const std::string converted = make_draft(name, std::move(o));
  testing_support::GgufEdit edit;
  testing_support::F32Tensor embd{{E, V}, std::vector<float>(static_cast<size_t>(E * V))};
  for (int64_t v = 0; v < V; ++v) std::copy(u.hidden.begin(), u.hidden.end(), embd.data.begin() + v * E);
  edit.tensors["token_embd.weight"] = std::move(embd);
  edit.tensors["output.weight"] = u.output;
  edit.tensors["output_norm.weight"] = u.output_norm;
  const GgufReader r(converted);
  const int64_t n_layer = static_cast<int64_t>(r.get_u32("dflash.block_count"));
  for (int64_t l = 0; l < n_layer; ++l) {
    for (const char* t : {"attn_output", "ffn_down"}) {
      edit.tensors["blk." + std::to_string(l) + "." + t + ".scale"] = {{1}, {0.0f}};
    }
  }
  for (const auto& [tensor, value] : scales) edit.tensors[tensor] = {{1}, {value}};
  return testing_support::write_edited_gguf(converted, env().dir + "/" + name + "_unigram.gguf", edit);
}

}  // namespace fulgur::dflash_test
