// GGUFs written the way llama.cpp's converter writes block drafts load in fulgur and draft the
// same tokens as fulgur's own conversion of the same checkpoint. llama.cpp's converter
// (reference/llamacpp-speculative.md §9) writes no dflash.sample_from_anchor for DFlash and
// DFlash2 (llama.cpp reads them as 1+N), nothing of fulgur's dflash.markov_head_type, d2t as
// absolute I64 ids, and no token_embd / output for a draft whose heads are the target's (the
// runtime borrows the target's). The files here are fulgur's conversion rewritten that way.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "dflash/dflash_fixture.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "gguf/dflash_keys.h"

namespace fulgur::dflash_test {
namespace {

namespace g = dflash_gguf;

bool same_bytes(const GgufTensorInfo& a, const GgufTensorInfo& b) {
  return a.type == b.type && a.shape() == b.shape() && std::memcmp(a.data, b.data, a.nbytes) == 0;
}

// Rewrites fulgur's GGUF as llama.cpp's converter would write the same draft; returns the path
// and, in `dropped`, the tensors left to the target.
std::string llamacpp_style(const std::string& path, std::set<std::string>& dropped) {
  const GgufReader r(path);
  const GgufReader& t = env().target->gguf();
  const bool plain = r.find_tensor(g::kMarkovW1) == nullptr;  // DFlash / DFlash2
  GgufWriter w;
  for (const GgufKv& kv : r.metadata()) {
    if (kv.key == g::kMarkovHeadType) continue;
    if (plain && kv.key == g::kSampleFromAnchor) continue;
    if (!plain && kv.key == g::kSampleFromAnchor && kv.value.get<bool>("")) continue;  // default
    w.set(kv.key, kv.value);
  }
  const GgufTensorInfo* target_out = t.find_tensor("output.weight");
  if (target_out == nullptr) target_out = &t.tensor("token_embd.weight");  // tied target
  for (const GgufTensorInfo& x : r.tensors()) {
    if ((x.name == g::kTokenEmbd && same_bytes(x, t.tensor("token_embd.weight"))) ||
        (x.name == g::kOutput && same_bytes(x, *target_out))) {
      dropped.insert(x.name);
      continue;
    }
    w.add_tensor(x.name, x.type, x.shape(), x.data, x.nbytes);
  }
  const std::string out = path.substr(0, path.size() - 5) + ".llamacpp.gguf";
  w.write(out);
  return out;
}

// Fulgur's conversion and its llama.cpp-style rewrite draft the same tokens on several prompts.
void expect_same_drafts(const std::string& name, const DraftSynthOptions& o,
                        const std::set<std::string>& expect_dropped) {
  const std::string ours = make_draft(name, o);
  std::set<std::string> dropped;
  const std::string theirs = llamacpp_style(ours, dropped);
  EXPECT_EQ(dropped, expect_dropped);
  DflashDrafter a(ours, *env().target, {.n_threads = 1});
  DflashDrafter b(theirs, *env().target, {.n_threads = 1});
  EXPECT_EQ(a.block_drafts(), b.block_drafts());
  for (int s = 0; s < 5; ++s) {
    const std::vector<int32_t> prompt = prompt_tokens(s, 8 + 2 * s);
    EXPECT_EQ(draft_after(a, prompt, a.block_drafts()), draft_after(b, prompt, b.block_drafts()))
        << name << " prompt " << s;
  }
}

TEST(DflashLlamaCppFiles, DsparkVanilla) {
  // DeepSpec (anchor-first): llama.cpp's absent key means anchor-first for DSpark too.
  expect_same_drafts("lcpp_dspark", draft_options("deepspec", "vanilla"), {g::kTokenEmbd, g::kOutput});
}

TEST(DflashLlamaCppFiles, DsparkReducedVocabulary) {
  DraftSynthOptions o = draft_options("speculators", "vanilla");
  o.draft_vocab = env().n_vocab / 2;
  o.sample_from_anchor = false;  // speculators' released layout, written explicitly
  expect_same_drafts("lcpp_dspark_d2t", o, {g::kTokenEmbd});
}

TEST(DflashLlamaCppFiles, Dflash) {
  expect_same_drafts("lcpp_zlab", draft_options("zlab", ""), {});
}

TEST(DflashLlamaCppFiles, Dflash2) {
  expect_same_drafts("lcpp_dflash2", draft_options("dflash2", ""), {});
}

}  // namespace
}  // namespace fulgur::dflash_test
