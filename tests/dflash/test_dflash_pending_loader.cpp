// Keys and tensors of llama.cpp's `dflash` arch that fulgur's loader must either implement as
// llama.cpp does or refuse by name (issue 19 §1). The loader is src/model/archs/dflash.cpp (the
// lead's); these tests check it (L2..L5 of the issue-19 interchange report).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "dflash/dflash_fixture.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace fulgur::dflash_test {
namespace {

// fulgur's conversion of `o`, rewritten with `edit` applied to a writer holding its keys and
// tensors; returns the new path.
std::string edited(const std::string& name, const DraftSynthOptions& o,
                   const std::function<void(GgufWriter&)>& edit) {
  const std::string path = make_draft(name, o);
  const GgufReader r(path);
  GgufWriter w;
  w.copy_metadata(r);
  for (const GgufTensorInfo& t : r.tensors()) w.add_tensor(t.name, t.type, t.shape(), t.data, t.nbytes);
  edit(w);
  const std::string out = path.substr(0, path.size() - 5) + ".edited.gguf";
  w.write(out);
  return out;
}

void expect_refused(const std::string& path, const std::string& needle) {
  try {
    DflashDrafter d(path, *env().target, {.n_threads = 1});
    ADD_FAILURE() << path << " loaded; expected a refusal naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<std::vector<int32_t>> drafts(const std::string& path) {
  DflashDrafter d(path, *env().target, {.n_threads = 1});
  std::vector<std::vector<int32_t>> out;
  for (int s = 0; s < 4; ++s) out.push_back(draft_after(d, prompt_tokens(s, 9 + s), d.block_drafts()));
  return out;
}

// L2: sliding-window drafts need the window in the attention mask; until the forward has it,
// the key is refused by name (llama.cpp builds an iSWA cache; ignoring the key misreads the
// draft past the window).
TEST(DflashPendingLoader, SlidingWindowIsRefusedByName) {
  expect_refused(edited("pend_swa", draft_options("zlab", ""),
                        [](GgufWriter& w) {
                          w.set_u32("dflash.attention.sliding_window", 8);
                          w.set_array<bool>("dflash.attention.sliding_window_pattern", {true});
                        }),
                 "dflash.attention.sliding_window");
}

// L3: attention sinks (Nemotron drafts) change the softmax; refused by name until implemented.
TEST(DflashPendingLoader, AttentionSinksAreRefusedByName) {
  expect_refused(edited("pend_sinks", draft_options("zlab", ""),
                        [](GgufWriter& w) {
                          const std::vector<float> sinks(4, 0.5f);  // [n_head]
                          w.add_tensor("blk.0.attn_sinks.weight", DType::kF32, {4}, sinks.data(),
                                       sinks.size() * 4);
                        }),
                 "attn_sinks");
}

// L4: M-RoPE sections. A text-only draft for an M-RoPE target carries the degenerate sections
// [n_rot/2, 0, 0, 0] with positions (p, p, p, 0): plain RoPE, so it must load and draft as
// without the key; any other split is refused by name.
TEST(DflashPendingLoader, MropeSections) {
  const DraftSynthOptions o = draft_options("zlab", "");
  const int32_t half = static_cast<int32_t>(o.head_dim / 2);
  const std::string plain = make_draft("pend_mrope_plain", o);
  const std::string degenerate = edited("pend_mrope_deg", o, [&](GgufWriter& w) {
    w.set_array<int32_t>("dflash.rope.dimension_sections", {half, 0, 0, 0});
  });
  EXPECT_EQ(drafts(degenerate), drafts(plain));
  expect_refused(edited("pend_mrope_split", o,
                        [&](GgufWriter& w) {
                          w.set_array<int32_t>("dflash.rope.dimension_sections",
                                               {half / 2, half / 2, 0, 0});
                        }),
                 "dflash.rope.dimension_sections");
}

// L5: dflash.logit_scale / dflash.final_logit_softcapping. llama.cpp applies them to the base
// logits of DFlash2 drafts (before the selector's top-k); there they must change the drafts
// (scale) or not (a cap far above every logit). On other kinds llama.cpp ignores them, so
// neither engine could honour them: refused by name.
TEST(DflashPendingLoader, LogitScaleAndSoftcap) {
  const DraftSynthOptions d2 = draft_options("dflash2", "");
  const auto base = drafts(make_draft("pend_scale_none", d2));
  // The synthetic draft's pairwise selector term is small next to its logits, so a positive
  // scale keeps every choice (4 and 1e-3 did); a negative one turns the ranking over, which
  // shows the scale reaches the selector.
  EXPECT_NE(drafts(edited("pend_scale_negative", d2,
                          [](GgufWriter& w) { w.set_f32("dflash.logit_scale", -1.0f); })),
            base);
  // A cap far below the logits flattens them (tanh saturates): the selector's candidates change.
  EXPECT_NE(drafts(edited("pend_cap_tight", d2,
                          [](GgufWriter& w) { w.set_f32("dflash.final_logit_softcapping", 1e-4f); })),
            base);
  EXPECT_EQ(drafts(edited("pend_cap_far", d2,
                          [](GgufWriter& w) { w.set_f32("dflash.final_logit_softcapping", 1e6f); })),
            base);
  expect_refused(edited("pend_scale_dspark", draft_options("deepspec", "vanilla"),
                        [](GgufWriter& w) { w.set_f32("dflash.logit_scale", 2.0f); }),
                 "dflash.logit_scale");
}

}  // namespace
}  // namespace fulgur::dflash_test
