// The `dflash` architecture (gguf/dflash_keys.h): the backbone of a DFlash / DSpark / DFlash2
// block drafter is an ordinary list of attention + SwiGLU layers (model/desc.h) whose attention
// is non-causal and whose context enters as injected K/V (Context::inject_kv); DFlash2 adds a
// block-local convolution around each sublayer. What the drafting logic needs beyond the
// backbone (block layout, tapped target layers, the DSpark / DFlash2 heads' sizes) is here; the
// heads' tensors are ModelWeights::dflash_heads (model/weights.h). The kind is read from the tensors present, as llama.cpp does: markov_w1 => DSpark,
// selector_* => DFlash2. Embeddings and LM head come from the draft when it has them, else
// from the target.
#pragma once

#include <cstdint>
#include <vector>

namespace fulgur {

enum class MarkovHead { kNone, kVanilla, kGated, kRnn };
enum class DflashKind { kDflash, kDspark, kDflash2 };

const char* dflash_kind_name(DflashKind kind);

struct DflashInfo {
  DflashKind kind = DflashKind::kDflash;
  int64_t block_size = 0;
  std::vector<int> target_layers;  // target layer INPUT indices
  int64_t target_hidden = 0;
  int32_t mask_token = 0;
  bool sample_from_anchor = true;  // anchor-first (B drafts) vs 1+N (B-1 drafts)
  int64_t n_vocab = 0;             // target vocabulary
  int64_t n_vocab_draft = 0;       // rows of output / markov_w2

  MarkovHead markov = MarkovHead::kNone;
  int64_t markov_rank = 0;
  bool confidence = false, conf_with_markov = false;
  int64_t selector_rank = 0, selector_top_k = 0;  // DFlash2
  // DFlash2: base logits l -> cap * tanh(l * logit_scale / cap) (cap 0: l * logit_scale).
  float logit_scale = 1.0f, softcap = 0.0f;

  std::vector<int32_t> d2t;             // [V_d] absolute target ids; empty = identity

  // Drafts one block can give: B (anchor-first) or B - 1 (1+N).
  int64_t max_drafts() const { return sample_from_anchor ? block_size : block_size - 1; }
  // Block slot of the first prediction: 0 (anchor-first) or 1 (1+N).
  int64_t first_slot() const { return sample_from_anchor ? 0 : 1; }
};

}  // namespace fulgur
