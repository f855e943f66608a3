// HF -> GGUF conversion of tiny random checkpoints written by write_hf_checkpoint: keys, tensor
// names / shapes / types / values, tied and untied heads, sharded input, the quantization policy,
// the llama q/k permutation, error cases (no output left behind), and the zoo model if present.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/tiny_checkpoint.h"
#include "gguf_edit.h"
#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/quant_policy.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "core/fp16.h"
#include "gguf/gguf_reader.h"
#include "model/desc.h"
#include "model/model.h"
#include "tensor/quants.h"
#include "tokenizer/gguf_vocab.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;
using test::make_tiny;
using test::TinyModel;
using test::TinySpec;

class ConvertTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratch_dir("fulgur_convert"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // Writes the model under hf/, converts it to out.gguf.
  std::string convert(const TinyModel& m, DType type, DType stored = DType::kF32) {
    test::write_tiny(path("hf"), m, stored);
    return convert_dir(path("hf"), type);
  }
  std::string convert_dir(const std::string& hf, DType type) {
    ConvertOptions o;
    o.in_dir = hf;
    o.out_path = path("out.gguf");
    o.type = type;
    o.progress = false;
    convert_hf_to_gguf(o);
    return o.out_path;
  }

  // Conversion must fail with a message containing every piece, and leave the output folder
  // without out.gguf or any temporary file.
  void expect_failure(const std::string& hf, const std::vector<std::string>& pieces) {
    try {
      convert_dir(hf, DType::kF16);
      ADD_FAILURE() << "conversion of " << hf << " succeeded";
    } catch (const Error& e) {
      for (const std::string& p : pieces) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
            << "'" << p << "' not in: " << e.what();
      }
    }
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_NE(entry.path().filename().string().rfind("out.gguf", 0), 0u)
          << "left behind: " << entry.path();
    }
  }

  std::string dir_;
};

std::vector<float> tensor_values(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t.type, t.data + r * rb, out.data() + r * t.ne[0], t.ne[0]);
  }
  return out;
}

const HfTensor& hf_tensor(const TinyModel& m, const std::string& name) {
  for (const HfTensor& t : m.tensors) {
    if (t.name == name) return t;
  }
  throw Error("test: no tensor " + name);
}

// HF name of each GGUF tensor of a dense model (the mapping under test, spelt out by hand).
std::map<std::string, std::string> expected_names(const TinySpec& s) {
  std::map<std::string, std::string> m = {{"token_embd.weight", "model.embed_tokens.weight"},
                                          {"output_norm.weight", "model.norm.weight"}};
  if (!s.tied) m["output.weight"] = "lm_head.weight";
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string g = "blk." + std::to_string(i) + ".";
    const std::string h = "model.layers." + std::to_string(i) + ".";
    m[g + "attn_norm.weight"] = h + "input_layernorm.weight";
    m[g + "attn_q.weight"] = h + "self_attn.q_proj.weight";
    m[g + "attn_k.weight"] = h + "self_attn.k_proj.weight";
    m[g + "attn_v.weight"] = h + "self_attn.v_proj.weight";
    m[g + "attn_output.weight"] = h + "self_attn.o_proj.weight";
    if (s.model_type == "qwen3") {
      m[g + "attn_q_norm.weight"] = h + "self_attn.q_norm.weight";
      m[g + "attn_k_norm.weight"] = h + "self_attn.k_norm.weight";
    }
    if (s.model_type == "qwen2" || s.attention_bias) {
      m[g + "attn_q.bias"] = h + "self_attn.q_proj.bias";
      m[g + "attn_k.bias"] = h + "self_attn.k_proj.bias";
      m[g + "attn_v.bias"] = h + "self_attn.v_proj.bias";
    }
    if (s.model_type != "qwen2" && s.attention_bias) {
      m[g + "attn_output.bias"] = h + "self_attn.o_proj.bias";
    }
    m[g + "ffn_norm.weight"] = h + "post_attention_layernorm.weight";
    m[g + "ffn_gate.weight"] = h + "mlp.gate_proj.weight";
    m[g + "ffn_up.weight"] = h + "mlp.up_proj.weight";
    m[g + "ffn_down.weight"] = h + "mlp.down_proj.weight";
  }
  return m;
}

// Every tensor present with the mapped name, reversed shape, expected type; f32 values equal.
void check_tensors(const GgufReader& r, const TinyModel& m, const TinySpec& s, DType want2d) {
  const auto names = expected_names(s);
  EXPECT_EQ(r.tensors().size(), names.size());
  for (const auto& [gguf, hf] : names) {
    SCOPED_TRACE(gguf);
    const GgufTensorInfo* t = r.find_tensor(gguf);
    ASSERT_NE(t, nullptr);
    const HfTensor& src = hf_tensor(m, hf);
    EXPECT_EQ(t->shape(), std::vector<int64_t>(src.shape.rbegin(), src.shape.rend()));
    EXPECT_EQ(t->type, src.shape.size() == 1 ? DType::kF32 : want2d);
    if (t->type == DType::kF32) {
      EXPECT_EQ(tensor_values(*t), src.data);
    }
  }
}

TEST_F(ConvertTest, Qwen3F32UntiedKeysAndTensors) {
  const TinySpec s;
  const TinyModel m = make_tiny(s);
  const GgufReader r(convert(m, DType::kF32));
  EXPECT_EQ(r.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(r.get_string("general.name"), "hf");
  EXPECT_EQ(r.get<uint32_t>("general.file_type"), 0u);
  EXPECT_EQ(r.get<uint32_t>("general.quantization_version"), 2u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.context_length"), 256u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.embedding_length"), 64u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.block_count"), 2u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.feed_forward_length"), 128u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.head_count"), 4u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.head_count_kv"), 2u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.key_length"), 16u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.value_length"), 16u);
  EXPECT_EQ(r.get<float>("qwen3.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(r.get<float>("qwen3.rope.freq_base"), 1e6f);
  EXPECT_FALSE(r.has("qwen3.vocab_size"));
  EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(r.get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(r.get_string("tokenizer.chat_template"), builtin_chat_template());
  const Vocab v = read_vocab(r);
  ASSERT_EQ(static_cast<int64_t>(v.tokens.size()), m.n_vocab);  // padded to the embedding rows
  for (size_t i = 0; i < m.vocab.tokens.size(); ++i) ASSERT_EQ(v.tokens[i], m.vocab.tokens[i]);
  EXPECT_EQ(v.tokens.back(), "[PAD" + std::to_string(m.n_vocab - 1) + "]");
  EXPECT_EQ(v.token_types.back(), TokenType::kUnused);
  EXPECT_EQ(v.merges, m.vocab.merges);
  EXPECT_EQ(v.eos_id, m.vocab.eos_id);
  EXPECT_EQ(v.pad_id, m.vocab.eos_id);
  EXPECT_EQ(v.bos_id, -1);
  EXPECT_FALSE(v.add_bos);
  check_tensors(r, m, s, DType::kF32);
}

// What the converter writes for a config's rope_scaling, the loader runs: linear and YaRN come
// back as the model's RoPE parameters; llama3 on a Qwen3 config is refused by name (llama.cpp's
// converter computes its factors for Llama models only: the next test).
TEST_F(ConvertTest, RopeScalingIsWrittenAndLoaded) {
  const TinySpec s;
  TinyModel m = make_tiny(s);
  m.config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 128}};
  {
    const Model model(convert(m, DType::kF32));
    EXPECT_FLOAT_EQ(model.desc().rope.freq_scale, 0.25f);
    EXPECT_EQ(model.desc().rope.ext_factor, 1.0f);
    EXPECT_EQ(model.desc().rope.n_ctx_orig, 128);
  }
  fs::remove_all(path("hf"));
  fs::remove(path("out.gguf"));
  m.config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  {
    const Model model(convert(m, DType::kF32));
    EXPECT_FLOAT_EQ(model.desc().rope.freq_scale, 0.5f);
    EXPECT_EQ(model.desc().rope.ext_factor, 0.0f);
  }
  fs::remove_all(path("hf"));
  fs::remove(path("out.gguf"));
  m.config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  EXPECT_THROW(convert(m, DType::kF32), Error);
  EXPECT_FALSE(fs::exists(path("out.gguf")));
}

// Llama 3.1's rope_type "llama3": the converter computes the rope_freqs tensor as llama.cpp's
// does (wavelengths below original_max_position_embeddings / high_freq_factor kept, above
// it / low_freq_factor divided by factor, the band between blended), no rope.scaling keys; the
// loader runs the factors.
TEST_F(ConvertTest, Llama3RopeScalingBecomesRopeFreqs) {
  TinySpec s;
  s.arch = "LlamaForCausalLM";
  s.model_type = "llama";
  TinyModel m = make_tiny(s);
  m.config["rope_theta"] = 1e6;
  m.config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const std::string out = convert(m, DType::kF32);
  const GgufReader r(out);
  EXPECT_FALSE(r.has("llama.rope.scaling.type"));
  const testing_support::F32Tensor f = testing_support::read_f32(r, "rope_freqs.weight");
  ASSERT_EQ(f.shape, std::vector<int64_t>{s.head_dim / 2});
  for (int64_t j = 0; j < s.head_dim / 2; ++j) {
    // Wavelength of pair j: 2 pi 1e6^(2j / 16); 2048 and 8192 bound the blended band.
    const double wavelen = 2 * M_PI * std::pow(1e6, 2.0 * static_cast<double>(j) / static_cast<double>(s.head_dim));
    const double want = wavelen < 2048 ? 1.0 : wavelen > 8192 ? 8.0 : [&] {
      const double smooth = (8192 / wavelen - 1.0) / 3.0;
      return 1.0 / ((1 - smooth) / 8.0 + smooth);
    }();
    EXPECT_NEAR(f.data[static_cast<size_t>(j)], want, 1e-4 * want) << "pair " << j;
  }
  EXPECT_NEAR(f.data[4], 4.6815, 1e-3);  // the one blended pair at this head size
  const Model model(out);
  ASSERT_NE(model.desc().rope.freq_factors, nullptr);
  EXPECT_EQ(model.desc().rope.freq_factors[5], 8.0f);
}

TEST_F(ConvertTest, TiedHasNoOutputEvenWithLmHead) {
  TinySpec s;
  s.tied = true;
  TinyModel m = make_tiny(s);
  const GgufReader r(convert(m, DType::kF32));
  EXPECT_EQ(r.find_tensor("output.weight"), nullptr);
  check_tensors(r, m, s, DType::kF32);
  // A tied config whose checkpoint still carries lm_head (as some exports do): ignored.
  fs::remove_all(path("hf"));
  fs::remove(path("out.gguf"));
  m.tensors.push_back({"lm_head.weight", {m.n_vocab, s.n_embd}, hf_tensor(m, "model.embed_tokens.weight").data});
  const GgufReader r2(convert(m, DType::kF32));
  EXPECT_EQ(r2.find_tensor("output.weight"), nullptr);
}

TEST_F(ConvertTest, F16AndBf16SourceValues) {
  const TinySpec s;
  const TinyModel m = make_tiny(s);
  {
    const GgufReader r(convert(m, DType::kF16));
    EXPECT_EQ(r.get<uint32_t>("general.file_type"), 1u);
    check_tensors(r, m, s, DType::kF16);
    const GgufTensorInfo& t = r.tensor("blk.1.ffn_down.weight");
    const std::vector<float> got = tensor_values(t);
    const HfTensor& src = hf_tensor(m, "model.layers.1.mlp.down_proj.weight");
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], f16_to_f32(f32_to_f16(src.data[i])));
  }
  fs::remove_all(path("hf"));
  fs::remove(path("out.gguf"));
  {  // bf16 checkpoint -> f32 GGUF: exactly the bf16 values
    const GgufReader r(convert(m, DType::kF32, DType::kBF16));
    const std::vector<float> got = tensor_values(r.tensor("token_embd.weight"));
    const HfTensor& src = hf_tensor(m, "model.embed_tokens.weight");
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], bf16_to_f32(f32_to_bf16(src.data[i])));
  }
}

TEST_F(ConvertTest, Q8_0WithinQuantizationError) {
  const TinySpec s;
  const TinyModel m = make_tiny(s);
  const GgufReader r(convert(m, DType::kQ8_0));
  EXPECT_EQ(r.get<uint32_t>("general.file_type"), 7u);
  check_tensors(r, m, s, DType::kQ8_0);
  for (const auto& [gguf, hf] : expected_names(s)) {
    const GgufTensorInfo& t = r.tensor(gguf);
    const std::vector<float> got = tensor_values(t);
    const HfTensor& src = hf_tensor(m, hf);
    ASSERT_EQ(got.size(), src.data.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // Q8_0: scale = max|x| / 127 per 32 values, |x| < 1 -> error at most half a step.
      ASSERT_NEAR(got[i], src.data[i], 0.5f / 127.0f + 1e-3f) << gguf << " [" << i << "]";
    }
  }
}

TEST_F(ConvertTest, QuantPolicyAndFallbacks) {
  // Unit rules.
  EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kWeight, {64}), DType::kF32);
  EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kWeight, {64, 8}), DType::kQ8_0);
  EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kWeight, {48, 8}), DType::kF16);
  EXPECT_EQ(choose_tensor_type(DType::kQ4_0, TensorRole::kWeight, {40, 8}), DType::kF16);
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kWeight, {512, 8}), DType::kQ4_K);
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kTokenEmbd, {512, 8}), DType::kQ6_K);
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kOutput, {512, 8}), DType::kQ6_K);
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kMoreBits, {512, 8}), DType::kQ6_K);
  EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kMoreBits, {512, 8}), DType::kQ8_0);
  // Gemma's per-layer tables: the token table is a token embedding, the model projection is what
  // llama-quantize leaves as converted (f16), the requested type when converting directly.
  EXPECT_EQ(quant_roles({"per_layer_token_embd.weight", "per_layer_model_proj.weight"}, 2),
            (std::vector<TensorRole>{TensorRole::kTokenEmbd, TensorRole::kNotRequantized}));
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kNotRequantized, {512, 8}), DType::kF16);
  EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kNotRequantized, {512, 8}), DType::kQ8_0);
  // Q4_K_M's use_more_bits layers for 28 layers: 0..2, 5, 8, ..., 23, and 24..27.
  std::vector<int64_t> more;
  for (int64_t l = 0; l < 28; ++l)
    if (more_bits_layer(l, 28)) more.push_back(l);
  EXPECT_EQ(more, (std::vector<int64_t>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}));
  {
    // A dense decoder: attn_v / ffn_down of layer l are the l-th of their kind.
    std::vector<std::string> names = {"token_embd.weight", "output.weight"};
    for (int l = 0; l < 28; ++l) {
      for (const char* t : {"attn_q.weight", "attn_v.weight", "ffn_down.weight", "attn_norm.weight"}) {
        names.push_back("blk." + std::to_string(l) + "." + t);
      }
    }
    const std::vector<TensorRole> roles = quant_roles(names, 28);
    auto role = [&](const std::string& n) { return roles[std::find(names.begin(), names.end(), n) - names.begin()]; };
    EXPECT_EQ(role("blk.5.attn_v.weight"), TensorRole::kMoreBits);
    EXPECT_EQ(role("blk.5.ffn_down.weight"), TensorRole::kMoreBits);
    EXPECT_EQ(role("blk.6.ffn_down.weight"), TensorRole::kWeight);
    EXPECT_EQ(role("blk.5.attn_q.weight"), TensorRole::kWeight);
    EXPECT_EQ(role("blk.5.attn_norm.weight"), TensorRole::kKeepF32);
    EXPECT_EQ(role("output.weight"), TensorRole::kOutput);
    EXPECT_EQ(role("token_embd.weight"), TensorRole::kTokenEmbd);
  }
  {
    // A hybrid with experts: attn_v counts attention layers (2 of them: the first eighth of 2 is
    // none, the last eighth is index 1 >= 7*2/8 = 1); ffn_down* use the block number. Routers,
    // conv kernels, ssm_a/ssm_d and 2-D norms keep F32. More bits on 8 layers: 0, 3, 6, 7.
    const std::vector<std::string> names = {
        "blk.0.ssm_conv1d.weight", "blk.0.ssm_a", "blk.0.ssm_norm.weight", "blk.1.attn_v.weight",
        "blk.3.ffn_gate_inp.weight", "blk.3.ffn_down_exps.weight", "blk.3.ffn_down_shexp.weight",
        "blk.3.attn_v.weight", "blk.7.ffn_down_exps.weight", "blk.4.ffn_down_exps.weight"};
    const std::vector<TensorRole> roles = quant_roles(names, 8);
    const std::vector<TensorRole> want = {TensorRole::kKeepF32, TensorRole::kKeepF32, TensorRole::kKeepF32,
                                          TensorRole::kWeight,  TensorRole::kKeepF32, TensorRole::kMoreBits,
                                          TensorRole::kMoreBits, TensorRole::kMoreBits, TensorRole::kMoreBits,
                                          TensorRole::kWeight};
    EXPECT_EQ(roles, want);
    EXPECT_EQ(choose_tensor_type(DType::kQ8_0, TensorRole::kKeepF32, {64, 8}), DType::kF32);
    EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kMoreBits, {256, 8, 4}), DType::kQ6_K);
  }
  EXPECT_EQ(choose_tensor_type(DType::kQ4_K, TensorRole::kWeight, {64, 8}), DType::kQ8_0);
  EXPECT_EQ(choose_tensor_type(DType::kQ6_K, TensorRole::kWeight, {96, 8}), DType::kQ8_0);
  EXPECT_EQ(choose_tensor_type(DType::kQ6_K, TensorRole::kWeight, {100, 8}), DType::kF16);
  EXPECT_EQ(choose_tensor_type(DType::kBF16, TensorRole::kWeight, {100, 8}), DType::kBF16);
  EXPECT_EQ(parse_convert_type("Q4_K"), DType::kQ4_K);
  EXPECT_THROW(parse_convert_type("q5_k"), Error);
  EXPECT_THROW(choose_tensor_type(DType::kQ5_K, TensorRole::kWeight, {256, 1}), Error);

  // End to end: E = 256 makes Q4_K fit most rows; F = 288 makes ffn_down (ne0 = F) fall back to
  // Q8_0 (288 % 256 != 0, 288 % 32 == 0).
  TinySpec s;
  s.n_embd = 256;
  s.n_ff = 288;
  s.n_layer = 1;
  s.head_dim = 64;
  const TinyModel m = make_tiny(s);
  const GgufReader r(convert(m, DType::kQ4_K));
  EXPECT_EQ(r.get<uint32_t>("general.file_type"), 15u);
  EXPECT_EQ(r.tensor("token_embd.weight").type, DType::kQ6_K);
  EXPECT_EQ(r.tensor("output.weight").type, DType::kQ6_K);
  EXPECT_EQ(r.tensor("blk.0.attn_q.weight").type, DType::kQ4_K);
  EXPECT_EQ(r.tensor("blk.0.ffn_up.weight").type, DType::kQ4_K);
  EXPECT_EQ(r.tensor("blk.0.ffn_down.weight").type, DType::kQ8_0);
  EXPECT_EQ(r.tensor("blk.0.attn_norm.weight").type, DType::kF32);
  EXPECT_EQ(r.tensor("blk.0.attn_q_norm.weight").type, DType::kF32);
  // Q4_K keeps a rough copy: relative RMS error well under 15 %.
  const std::vector<float> got = tensor_values(r.tensor("blk.0.attn_q.weight"));
  const HfTensor& src = hf_tensor(m, "model.layers.0.self_attn.q_proj.weight");
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - src.data[i]) * (got[i] - src.data[i]);
    ref += src.data[i] * src.data[i];
  }
  EXPECT_LT(std::sqrt(err / ref), 0.15);
}

TEST_F(ConvertTest, ShardedInputMatchesSingleFile) {
  const TinySpec s;
  const TinyModel m = make_tiny(s);
  const GgufReader single(convert(m, DType::kQ8_0));
  std::vector<uint8_t> single_bytes(single.file_data(), single.file_data() + single.file_size());
  fs::rename(path("out.gguf"), path("single.gguf"));
  // Re-shard hf/model.safetensors into two files + an index.
  const std::string hf = path("hf");
  SafetensorsWriter a, b;
  std::map<std::string, std::string> weight_map;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    SafetensorsWriter& w = i % 2 ? b : a;
    w.add_f32(m.tensors[i].name, m.tensors[i].shape, m.tensors[i].data);
    weight_map[m.tensors[i].name] =
        i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  fs::remove(hf + "/model.safetensors");
  a.write(hf + "/model-00001-of-00002.safetensors");
  b.write(hf + "/model-00002-of-00002.safetensors");
  write_safetensors_index(hf + "/model.safetensors.index.json", weight_map,
                          a.data_bytes() + b.data_bytes());
  const GgufReader sharded(convert_dir(hf, DType::kQ8_0));
  ASSERT_EQ(sharded.tensors().size(), single.tensors().size());
  for (const GgufTensorInfo& t : single.tensors()) {
    const GgufTensorInfo& u = sharded.tensor(t.name);
    ASSERT_EQ(t.nbytes, u.nbytes);
    EXPECT_EQ(0, std::memcmp(t.data, u.data, t.nbytes)) << t.name;
  }
  EXPECT_EQ(sharded.file_size(), single.file_size());
}

TEST_F(ConvertTest, Qwen2BiasesAndLlamaPermutation) {
  {
    TinySpec s;
    s.arch = "Qwen2ForCausalLM";
    s.model_type = "qwen2";
    const TinyModel m = make_tiny(s);
    const GgufReader r(convert(m, DType::kF32));
    EXPECT_EQ(r.get_string("general.architecture"), "qwen2");
    EXPECT_EQ(r.get<uint32_t>("qwen2.block_count"), 2u);
    check_tensors(r, m, s, DType::kF32);
  }
  fs::remove_all(path("hf"));
  fs::remove(path("out.gguf"));
  TinySpec s;
  s.arch = "LlamaForCausalLM";
  s.model_type = "llama";
  s.attention_bias = true;
  const TinyModel m = make_tiny(s);
  const GgufReader r(convert(m, DType::kF32));
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.get<uint32_t>("llama.vocab_size"), static_cast<uint32_t>(m.n_vocab));
  EXPECT_EQ(r.get<uint32_t>("llama.rope.dimension_count"), 16u);
  // Row (h, i, j) of the GGUF q/k = HF row (h, j, i): head h, HF half j, pair index i.
  const int64_t dh = s.head_dim, e = s.n_embd;
  for (const auto& [gguf, hf, heads] :
       {std::tuple{"blk.0.attn_q", "model.layers.0.self_attn.q_proj", s.n_head},
        std::tuple{"blk.1.attn_k", "model.layers.1.self_attn.k_proj", s.n_head_kv}}) {
    const std::vector<float> w = tensor_values(r.tensor(std::string(gguf) + ".weight"));
    const std::vector<float> b = tensor_values(r.tensor(std::string(gguf) + ".bias"));
    const HfTensor& hw = hf_tensor(m, std::string(hf) + ".weight");
    const HfTensor& hb = hf_tensor(m, std::string(hf) + ".bias");
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < dh / 2; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          const int64_t dst = h * dh + 2 * i + j, src = h * dh + j * (dh / 2) + i;
          ASSERT_EQ(b[dst], hb.data[src]) << gguf;
          for (int64_t c = 0; c < e; ++c) ASSERT_EQ(w[dst * e + c], hw.data[src * e + c]) << gguf;
        }
      }
    }
  }
  // v and o are not permuted.
  EXPECT_EQ(tensor_values(r.tensor("blk.0.attn_v.weight")),
            hf_tensor(m, "model.layers.0.self_attn.v_proj.weight").data);
  EXPECT_EQ(tensor_values(r.tensor("blk.0.attn_output.bias")),
            hf_tensor(m, "model.layers.0.self_attn.o_proj.bias").data);
}

TEST_F(ConvertTest, ErrorsLeaveNoOutput) {
  const TinySpec s;
  const TinyModel good = make_tiny(s);
  const std::string hf = path("hf");
  auto rewrite = [&](const TinyModel& m) {
    fs::remove_all(hf);
    test::write_tiny(hf, m);
  };
  {
    TinyModel m = good;
    m.config["architectures"] = {"MistralForCausalLM"};
    rewrite(m);
    expect_failure(hf, {"MistralForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"});
  }
  {
    TinyModel m = good;
    m.tensors.erase(m.tensors.begin() + 3);  // model.layers.0.self_attn.k_proj.weight
    rewrite(m);
    expect_failure(hf, {"missing tensor", "model.layers.0.self_attn.k_proj.weight"});
  }
  {
    TinyModel m = good;
    m.config["intermediate_size"] = 96;
    rewrite(m);
    expect_failure(hf, {"model.layers.0.mlp.gate_proj.weight", "[128, 64]", "[96, 64]"});
  }
  {
    TinyModel m = good;
    m.tensors.push_back({"model.layers.0.mlp.extra.weight", {2, 2}, {1, 2, 3, 4}});
    rewrite(m);
    expect_failure(hf, {"unexpected tensor", "model.layers.0.mlp.extra.weight"});
  }
  {
    TinyModel m = good;
    m.config["num_key_value_heads"] = 3;
    rewrite(m);
    expect_failure(hf, {"num_key_value_heads"});
  }
  {  // a tokenizer.json whose Split regex fulgur does not know
    rewrite(good);
    std::ifstream in(hf + "/tokenizer.json");
    nlohmann::json tj = nlohmann::json::parse(in);
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{L}+|[0-9]";
    std::ofstream(hf + "/tokenizer.json") << tj.dump();
    expect_failure(hf, {"pre-tokenizer", "\\p{L}+|[0-9]"});
  }
  {  // embedding smaller than the tokenizer
    TinyModel m = good;
    m.n_vocab = 100;
    m.config["vocab_size"] = 100;
    m.tensors.front().shape = {100, s.n_embd};
    m.tensors.front().data.resize(100 * s.n_embd);
    auto& head = m.tensors.back();
    head.shape = {100, s.n_embd};
    head.data.resize(100 * s.n_embd);
    rewrite(m);
    expect_failure(hf, {"tokenizer.json", "100"});
  }
  expect_failure(path("nowhere"), {"nowhere"});
}

TEST_F(ConvertTest, ZooQwen3Code) {
  const std::string zoo = fulgur::test::zoo_dir() + "/zoo-qwen3-code";
  if (!fs::exists(zoo + "/config.json")) GTEST_SKIP() << zoo << " not present";
  const GgufReader r(convert_dir(zoo, DType::kF16));
  EXPECT_EQ(r.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(r.get<uint32_t>("qwen3.block_count"), 6u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.embedding_length"), 256u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.feed_forward_length"), 768u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.head_count"), 4u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.head_count_kv"), 2u);
  EXPECT_EQ(r.get<uint32_t>("qwen3.attention.key_length"), 64u);
  EXPECT_EQ(r.get<float>("qwen3.rope.freq_base"), 10000.0f);
  EXPECT_EQ(r.find_tensor("output.weight"), nullptr);  // tied
  EXPECT_EQ(r.tensors().size(), 2u + 6u * 11u);
  EXPECT_EQ(r.get_string("tokenizer.ggml.pre"), "qwen2");
  const Vocab v = read_vocab(r);
  EXPECT_EQ(v.tokens.size(), 4096u);
  EXPECT_EQ(v.merges.size(), 3836u);
  EXPECT_EQ(v.eos_id, 4092);
  EXPECT_EQ(v.pad_id, 4092);
  EXPECT_EQ(v.bos_id, 4092);  // from config.json, as llama.cpp's SpecialVocab does
  EXPECT_EQ(v.token_types[4095], TokenType::kControl);
  EXPECT_FALSE(r.get_string("tokenizer.chat_template").empty());
  // f16 of the f32 source.
  const Checkpoint ckpt(zoo);
  const std::vector<float> src = ckpt.to_f32("model.layers.5.mlp.down_proj.weight");
  const std::vector<float> got = tensor_values(r.tensor("blk.5.ffn_down.weight"));
  ASSERT_EQ(src.size(), got.size());
  for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(got[i], f16_to_f32(f32_to_f16(src[i])));
}

}  // namespace
}  // namespace fulgur
