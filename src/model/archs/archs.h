// Architectures: each reads its GGUF keys into a ModelDesc (model/desc.h) and binds its tensors
// through the shared Binder; none has code of its own for the forward. Adding an arch means a
// reader and a binding table here, and a layer kind in model/layers/ only when the arch brings a
// new one (README "Adding an architecture").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/archs/dflash.h"
#include "model/archs/eagle3.h"
#include "model/desc.h"
#include "model/weights.h"

namespace fulgur {

class Binder;
struct BlockLayout;
class GgufReader;
class Model;

struct ArchModel {
  ModelDesc desc;
  ModelWeights weights;
  std::unique_ptr<DflashInfo> dflash;  // arch `dflash` only
  std::unique_ptr<Eagle3Info> eagle3;  // arch `eagle3` only
};

// Reads general.architecture and loads that arch; an unknown arch is an error listing the
// supported ones. `base`: the model a draft borrows its embeddings / LM head from (required for
// `dflash`, ignored otherwise). `nextn`: load the file's MTP block instead of its trunk, with
// `base` (the trunk) lending its embeddings and output head (archs with MTP blocks only).
ArchModel load_arch(const GgufReader& gguf, const Model* base, bool nextn = false);

// The architectures load_arch accepts, comma separated (for messages and --help).
std::string supported_archs();

// ---- shared by the arch readers (archs/*.cpp) ----------------------------------------------

// The keys every transformer arch stores under `{arch}.`: width, layer count, context, RMS eps,
// RoPE base and dims, and per layer the attention heads (scalar or per-layer arrays). Every
// layer comes back as an attention layer with a causal, rotary mixer and no feed-forward; the
// arch fills in the rest. With `kv_heads_optional` (hybrids), a layer whose head_count_kv is 0
// comes back with no mixer instead of being refused: the arch decides what it is.
ModelDesc read_transformer_keys(const GgufReader& gguf, const std::string& arch,
                                bool kv_heads_optional = false);

// The RoPE of every rotary layer (archs-gguf.md §2.3, §4.0): freq_base, the context scaling
// (rope.scaling.type none | linear | yarn, its factor and YaRN's keys, with llama.cpp's defaults)
// and llama3-style per-pair frequency factors (the rope_freqs tensor). n_rot must be read first.
void read_rope_keys(const GgufReader& gguf, const std::string& arch, ModelDesc& desc);

struct RopeOverrides;

// Applies the command line's RoPE overrides (ModelOptions::rope) as llama.cpp's context
// parameters do: a scaling type, base, scale or YaRN original context replaces the file's.
void apply_rope_overrides(const RopeOverrides& overrides, kernels::RopeParams& rope, int64_t n_ctx_train);

// token_embd, output_norm and output (tied to token_embd when the file has none).
void bind_embeddings(const GgufReader& gguf, ModelDesc& desc, ModelWeights& w);

// Where a layer's norms are: attn_norm before the mixer and ffn_norm before the feed-forward
// (qwen3, qwen2, llama, qwen3moe, the dflash backbone), attn_norm and post_attention_norm (the
// Gated-DeltaNet hybrids), or one attn_norm per block before its only sublayer, mixer or
// feed-forward (Nemotron-H).
enum class NormLayout { kPerSublayer, kPostAttention, kOnePerBlock };

// One layer's tensors by its kinds, under llama.cpp's names with prefix `p` ("blk.N."); derived
// arrays (tap-major conv kernels) go to w.owned.
void bind_layer(const Binder& bind, const std::string& p, const LayerDesc& L, int64_t n_embd,
                NormLayout norms, ModelWeights& w, LayerWeights& lw);
// Every layer's tensors (bind_layer with prefix blk.l.).
void bind_layers(const GgufReader& gguf, const ModelDesc& desc, ModelWeights& w, NormLayout norms);

ArchModel load_dense(const GgufReader& gguf, const std::string& arch);     // qwen3, qwen2, llama
ArchModel load_qwen3moe(const GgufReader& gguf);
ArchModel load_gemma4(const GgufReader& gguf);
ArchModel load_gpt_oss(const GgufReader& gguf);
// What a Gemma 4 target and its assistant describe alike, under `{arch}.`: per layer its kind
// (swa[l]: sliding or full) with head dim, window and RoPE table, q/k norms, attention scale 1,
// sandwich norms, the output scalar and a GEGLU feed-forward; the sliding layers' RoPE; the
// final soft-cap (gemma4.cpp).
ModelDesc read_gemma4_keys(const GgufReader& gguf, const std::string& arch, std::vector<bool>& swa);
// A Gemma 4 assistant (`gemma4-assistant`) drafting for `target` (gemma4_assistant.cpp).
ArchModel load_gemma4_assistant(const GgufReader& gguf, const Model& target);
ArchModel load_dflash(const GgufReader& gguf, const Model& target);
ArchModel load_eagle3(const GgufReader& gguf, const Model& target);

// A draft's `d2t` tensor (I64 absolute target ids, one per output row; reference/
// llamacpp-speculative.md §3.4): empty when absent, which needs n_vocab_draft == n_vocab.
std::vector<int32_t> read_d2t(const GgufReader& gguf, const std::string& who, int64_t n_vocab_draft,
                              int64_t n_vocab);
// qwen3next, qwen35, qwen35moe: the trunk, or with nextn_base the MTP block (gdn_hybrid.cpp).
bool is_gdn_hybrid(const std::string& arch);
ArchModel load_gdn_hybrid(const GgufReader& gguf, const std::string& arch, const Model* nextn_base);
// nemotron_h, nemotron_h_moe: likewise (nemotron_h.cpp).
bool is_nemotron_h(const std::string& arch);
ArchModel load_nemotron_h(const GgufReader& gguf, const std::string& arch, const Model* nextn_base);

// The model of a file's first MTP (NextN) block (ModelOptions::nextn; llamacpp-speculative.md
// §5.1-5.2), for every arch that has one: `all` describes every block of the file, the MTP block
// as a layer with attn_norm before its mixer and post_attention_norm before its feed-forward.
// The model's input row is eh_proj · [enorm(embedding of the token) ; hnorm(hidden row)]; then
// the block; then nextn.shared_head_norm and the output head (nextn.shared_head_head, else the
// base's), over the embeddings of nextn.embed_tokens, else the base's. Throws naming the file
// when it has no MTP block or `base` is not this file's trunk.
ArchModel load_nextn_block(const GgufReader& gguf, const BlockLayout& layout, ModelDesc all, const Model& base);

}  // namespace fulgur
