// convert/quant_mix: llama.cpp's per-tensor rules for its named mixes, checked by hand on small
// tensor lists (the comparison with llama.cpp's own quantizer, mix by mix, is
// tests/llama/test_fulgur_quantize.cpp, which needs the oracle).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "convert/quant_mix.h"
#include "core/error.h"

namespace fulgur {
namespace {

QuantTensor tensor(const std::string& name, std::vector<int64_t> shape, DType type = DType::kF16) {
  QuantTensor t;
  t.name = name;
  t.type = type;
  for (size_t i = 0; i < shape.size(); ++i) t.ne[i] = shape[i];
  return t;
}

// A dense decoder of n layers: attn_v and ffn_down rows of 256, norms f32; untied when `head`.
std::vector<QuantTensor> dense(int n, bool head) {
  std::vector<QuantTensor> ts = {tensor("token_embd.weight", {256, 64}), tensor("output_norm.weight", {256}, DType::kF32)};
  if (head) ts.push_back(tensor("output.weight", {256, 64}));
  for (int l = 0; l < n; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back(tensor(p + "attn_norm.weight", {256}, DType::kF32));
    ts.push_back(tensor(p + "attn_q.weight", {256, 256}));
    ts.push_back(tensor(p + "attn_v.weight", {256, 64}));
    ts.push_back(tensor(p + "ffn_down.weight", {512, 256}));
  }
  return ts;
}

QuantModel model(int n_layer, int n_head = 8, int n_head_kv = 2, int n_expert = 0) {
  QuantModel m;
  m.arch = "qwen3";
  m.n_layer = n_layer;
  m.n_head = n_head;
  m.n_head_kv = n_head_kv;
  m.n_expert = n_expert;
  return m;
}

DType type_of(const std::vector<QuantTensor>& ts, const std::vector<DType>& types, const std::string& name) {
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].name == name) return types[i];
  }
  ADD_FAILURE() << "no tensor " << name;
  return DType::kF32;
}

TEST(QuantMix, NamesAreLlamaCppsAndCaseInsensitive) {
  ASSERT_NE(find_quant_mix("q4_k_m"), nullptr);
  EXPECT_EQ(find_quant_mix("q4_k_m")->file_type, 15u);
  EXPECT_EQ(find_quant_mix("IQ4_XS")->file_type, 30u);
  EXPECT_EQ(find_quant_mix("Q8_0")->default_type, DType::kQ8_0);
  EXPECT_EQ(find_quant_mix("q4_k"), nullptr);
  EXPECT_EQ(find_quant_mix("IQ1_S")->file_type, 24u);
  EXPECT_EQ(find_quant_mix("IQ1_M")->default_type, DType::kIQ1_M);
  EXPECT_EQ(find_quant_mix("MXFP4_MOE"), nullptr);
  EXPECT_EQ(find_quant_mix("iq2_xxs")->file_type, 19u);
  EXPECT_EQ(find_quant_mix("IQ2_S")->default_type, DType::kIQ2_XS) << "llama.cpp's IQ2_S mix is mostly IQ2_XS";
  EXPECT_EQ(find_quant_mix("IQ2_M")->default_type, DType::kIQ2_S);
  EXPECT_EQ(find_quant_mix("IQ3_M")->file_type, 27u);
  EXPECT_EQ(find_quant_mix("Q2_K_S")->file_type, 21u);
  EXPECT_NE(quant_mix_list().find("Q5_K_S"), std::string::npos);
}

TEST(QuantMix, Q4KMGivesMoreBitsToLlamaCppsLayers) {
  const std::vector<QuantTensor> ts = dense(16, true);
  const std::vector<DType> types = quant_types(*find_quant_mix("Q4_K_M"), model(16), ts);
  // use_more_bits over 16: the first and last eighth (0, 1, 14, 15) and every third from 2 (4, 7, 10, 13).
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int l = 0; l < 16; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const DType want = std::find(more.begin(), more.end(), l) != more.end() ? DType::kQ6_K : DType::kQ4_K;
    EXPECT_EQ(type_of(ts, types, p + "attn_v.weight"), want) << l;
    EXPECT_EQ(type_of(ts, types, p + "ffn_down.weight"), want) << l;
    EXPECT_EQ(type_of(ts, types, p + "attn_q.weight"), DType::kQ4_K) << l;
    EXPECT_EQ(type_of(ts, types, p + "attn_norm.weight"), DType::kF32) << l;
  }
  EXPECT_EQ(type_of(ts, types, "output.weight"), DType::kQ6_K);
  EXPECT_EQ(type_of(ts, types, "token_embd.weight"), DType::kQ4_K) << "untied: an ordinary matrix";

  // llama.cpp counts in its own order (by block, then name), not the file's.
  std::vector<QuantTensor> shuffled = ts;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  const std::vector<DType> again = quant_types(*find_quant_mix("Q4_K_M"), model(16), shuffled);
  for (size_t i = 0; i < shuffled.size(); ++i) {
    EXPECT_EQ(again[i], type_of(ts, types, shuffled[i].name)) << shuffled[i].name;
  }
}

// TQ1_0 / TQ2_0: every matrix ternary but the head (Q6_K, or token_embd when tied) and an
// untied token_embd (Q4_K); rows 256 does not divide fall back to Q4_0.
TEST(QuantMix, TernaryMixes) {
  for (const char* name : {"TQ1_0", "TQ2_0"}) {
    const QuantMix& mix = *find_quant_mix(name);
    const DType tq = mix.default_type;
    EXPECT_EQ(mix.file_type, tq == DType::kTQ1_0 ? 36u : 37u);
    std::vector<QuantTensor> ts = dense(4, true);
    ts.push_back(tensor("blk.0.ffn_up.weight", {96, 256}));
    const std::vector<DType> untied = quant_types(mix, model(4), ts);
    EXPECT_EQ(type_of(ts, untied, "output.weight"), DType::kQ6_K) << name;
    EXPECT_EQ(type_of(ts, untied, "token_embd.weight"), DType::kQ4_K) << name;
    EXPECT_EQ(type_of(ts, untied, "blk.2.attn_v.weight"), tq) << name;
    EXPECT_EQ(type_of(ts, untied, "blk.3.ffn_down.weight"), tq) << name;
    EXPECT_EQ(type_of(ts, untied, "blk.0.ffn_up.weight"), DType::kQ4_0) << name << ": rows of 96";
    const std::vector<QuantTensor> tied_ts = dense(4, false);
    EXPECT_EQ(type_of(tied_ts, quant_types(mix, model(4), tied_ts), "token_embd.weight"), DType::kQ6_K) << name;
  }
}

TEST(QuantMix, TiedHeadAndOtherMixes) {
  const std::vector<QuantTensor> ts = dense(8, false);
  EXPECT_EQ(type_of(ts, quant_types(*find_quant_mix("Q4_K_S"), model(8), ts), "token_embd.weight"), DType::kQ6_K);
  EXPECT_EQ(type_of(ts, quant_types(*find_quant_mix("Q8_0"), model(8), ts), "token_embd.weight"), DType::kQ8_0);
  const std::vector<DType> s = quant_types(*find_quant_mix("Q4_K_S"), model(8), ts);
  EXPECT_EQ(type_of(ts, s, "blk.3.attn_v.weight"), DType::kQ5_K) << "Q4_K_S: the first four attn_v";
  EXPECT_EQ(type_of(ts, s, "blk.4.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_of(ts, s, "blk.0.ffn_down.weight"), DType::kQ5_K) << "Q4_K_S: the first eighth of ffn_down";
  EXPECT_EQ(type_of(ts, s, "blk.1.ffn_down.weight"), DType::kQ4_K);
  const std::vector<DType> iq = quant_types(*find_quant_mix("IQ4_XS"), model(8), ts);
  EXPECT_EQ(type_of(ts, iq, "blk.5.attn_v.weight"), DType::kQ5_K) << "GQA 4";
  EXPECT_EQ(type_of(ts, iq, "blk.5.attn_q.weight"), DType::kIQ4_XS);
  const std::vector<DType> iq2 = quant_types(*find_quant_mix("IQ4_XS"), model(8, 8, 4), ts);
  EXPECT_EQ(type_of(ts, iq2, "blk.5.attn_v.weight"), DType::kIQ4_XS) << "GQA 2";
  const std::vector<DType> q2s = quant_types(*find_quant_mix("Q2_K_S"), model(8), ts);
  EXPECT_EQ(type_of(ts, q2s, "blk.0.ffn_down.weight"), DType::kQ4_K) << "Q2_K_S: the first eighth";
  EXPECT_EQ(type_of(ts, q2s, "blk.1.ffn_down.weight"), DType::kQ2_K);
  EXPECT_EQ(type_of(ts, q2s, "blk.6.attn_v.weight"), DType::kQ4_K) << "GQA 4";
  EXPECT_TRUE(quant_needs_imatrix(*find_quant_mix("Q2_K_S"), "blk.1.ffn_down.weight", DType::kQ2_K));
  EXPECT_FALSE(quant_needs_imatrix(*find_quant_mix("Q2_K_S"), "token_embd.weight", DType::kQ2_K));
  EXPECT_FALSE(quant_needs_imatrix(*find_quant_mix("Q2_K"), "blk.1.ffn_down.weight", DType::kQ2_K));
  const std::vector<DType> f16 = quant_types(*find_quant_mix("F16"), model(8), ts);
  EXPECT_EQ(type_of(ts, f16, "token_embd.weight"), DType::kF16);
  EXPECT_EQ(type_of(ts, f16, "blk.0.attn_norm.weight"), DType::kF32);
}

TEST(QuantMix, ShapesTheBlockDoesNotDivideFallBack) {
  const std::vector<QuantTensor> ts = {
      tensor("blk.0.attn_q.weight", {96, 8}),   tensor("blk.0.attn_k.weight", {48, 8}),
      tensor("blk.0.ffn_up.weight", {256, 1}),  tensor("output.weight", {96, 8}),
      tensor("blk.0.ffn_gate_inp.weight", {256, 8}, DType::kF32),
  };
  const auto types = [&](const char* mix) { return quant_types(*find_quant_mix(mix), model(1), ts); };
  EXPECT_EQ(types("Q4_K_M")[0], DType::kQ5_0);
  EXPECT_EQ(types("Q5_K_S")[0], DType::kQ5_1);
  EXPECT_EQ(types("Q6_K")[0], DType::kQ8_0);
  EXPECT_EQ(types("IQ4_XS")[0], DType::kIQ4_NL);
  EXPECT_EQ(types("Q3_K_S")[0], DType::kQ4_0);
  EXPECT_EQ(types("Q4_K_M")[1], DType::kF16) << "48: no 32-block either";
  EXPECT_EQ(types("Q8_0")[1], DType::kF16);
  EXPECT_EQ(types("Q4_K_M")[2], DType::kF16) << "[256, 1] is 1-D to ggml: kept";
  EXPECT_EQ(types("Q4_K_M")[3], DType::kQ8_0) << "a head whose rows 256 does not divide";
  EXPECT_EQ(types("Q4_K_M")[4], DType::kF32) << "routers are kept";
}

TEST(QuantMix, EightExperts) {
  std::vector<QuantTensor> ts;
  for (int l = 0; l < 8; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back(tensor(p + "attn_k.weight", {256, 64}));
    ts.push_back(tensor(p + "attn_v.weight", {256, 64}));
    ts.push_back(tensor(p + "attn_output.weight", {256, 256}));
    ts.push_back(tensor(p + "ffn_down_exps.weight", {256, 256, 8}));
  }
  const std::vector<DType> t = quant_types(*find_quant_mix("Q4_K_M"), model(8, 8, 2, 8), ts);
  EXPECT_EQ(type_of(ts, t, "blk.2.attn_k.weight"), DType::kQ8_0);
  EXPECT_EQ(type_of(ts, t, "blk.2.attn_v.weight"), DType::kQ8_0);
  EXPECT_EQ(type_of(ts, t, "blk.2.attn_output.weight"), DType::kQ5_K);
  EXPECT_EQ(type_of(ts, t, "blk.0.ffn_down_exps.weight"), DType::kQ6_K);
  EXPECT_EQ(type_of(ts, t, "blk.2.ffn_down_exps.weight"), DType::kQ4_K);
  ts.push_back(tensor("blk.9.ffn_down_exps.weight", {256, 256, 8}));
  EXPECT_THROW(quant_types(*find_quant_mix("Q4_K_M"), model(8, 8, 2, 8), ts), Error) << "layer past block_count";
}

// The codebook mixes, worked out by hand from llama_tensor_get_type on 16 layers (the first
// eighth is layers 0 and 1).
TEST(QuantMix, CodebookMixes) {
  std::vector<QuantTensor> ts = dense(16, true);
  for (int l = 0; l < 16; ++l) ts.push_back(tensor("blk." + std::to_string(l) + ".ffn_up.weight", {256, 512}));
  ts.push_back(tensor("blk.0.attn_k.weight", {96, 64}));  // rows no 256-block divides
  const auto check = [&](const char* mix, const QuantModel& m, bool imatrix, const std::map<std::string, DType>& want) {
    const std::vector<DType> types = quant_types(*find_quant_mix(mix), m, ts, imatrix);
    for (const auto& [name, type] : want) EXPECT_EQ(dtype_name(type_of(ts, types, name)), dtype_name(type)) << mix << " " << name;
  };
  const QuantModel gqa4 = model(16), mha = model(16, 8, 8);
  // IQ2_XXS: Q2_K embeddings and first-eighth ffn_down, Q4_K attn_v with GQA >= 4, Q5_K head.
  check("IQ2_XXS", gqa4, true,
        {{"output.weight", DType::kQ5_K}, {"token_embd.weight", DType::kQ2_K}, {"blk.3.attn_v.weight", DType::kQ4_K},
         {"blk.1.ffn_down.weight", DType::kQ2_K}, {"blk.2.ffn_down.weight", DType::kIQ2_XXS},
         {"blk.5.attn_q.weight", DType::kIQ2_XXS}, {"blk.0.attn_k.weight", DType::kIQ4_NL}});
  check("IQ2_XS", mha, true, {{"blk.3.attn_v.weight", DType::kQ2_K}, {"blk.9.ffn_up.weight", DType::kIQ2_XS}});
  // IQ1_S / IQ1_M: as IQ2_XXS, with IQ2_XXS attn_output.
  check("IQ1_S", mha, true,
        {{"blk.3.attn_v.weight", DType::kQ2_K}, {"blk.9.ffn_up.weight", DType::kIQ1_S}, {"token_embd.weight", DType::kQ2_K},
         {"blk.0.ffn_down.weight", DType::kQ2_K}, {"output.weight", DType::kQ5_K}});
  check("IQ1_M", gqa4, true, {{"blk.3.attn_v.weight", DType::kQ4_K}, {"blk.9.ffn_up.weight", DType::kIQ1_M}});
  // IQ2_S / IQ2_M lift with IQ3_S where the others use Q2_K; IQ2_S's default is IQ2_XS.
  check("IQ2_M", mha, true,
        {{"token_embd.weight", DType::kIQ3_S}, {"blk.3.attn_v.weight", DType::kIQ3_S},
         {"blk.0.ffn_down.weight", DType::kIQ3_S}, {"blk.2.ffn_down.weight", DType::kIQ2_S},
         {"blk.4.attn_q.weight", DType::kIQ2_S}});
  check("IQ2_S", mha, true, {{"blk.4.attn_q.weight", DType::kIQ2_XS}, {"output.weight", DType::kQ5_K}});
  // IQ3_XXS: IQ2_S attn_q / attn_k; attn_v IQ3_XXS only with an imatrix (IQ3_S without), Q4_K
  // with GQA >= 4; ffn_down without an imatrix Q4_K on the first eighth and Q3_K after.
  check("IQ3_XXS", gqa4, true,
        {{"blk.3.attn_v.weight", DType::kQ4_K}, {"blk.3.attn_q.weight", DType::kIQ2_S},
         {"blk.3.ffn_down.weight", DType::kIQ3_XXS}, {"token_embd.weight", DType::kIQ3_S}, {"output.weight", DType::kQ5_K}});
  check("IQ3_XXS", mha, false,
        {{"blk.3.attn_v.weight", DType::kIQ3_S}, {"blk.1.ffn_down.weight", DType::kQ4_K},
         {"blk.2.ffn_down.weight", DType::kQ3_K}, {"blk.2.ffn_up.weight", DType::kIQ3_XXS}});
  check("IQ3_XXS", mha, true, {{"blk.3.attn_v.weight", DType::kIQ3_XXS}});
  // IQ3_S (GQA >= 4: Q4_K attn_v), IQ3_M (Q4_K attn_v and first-eighth ffn_down), IQ3_XS
  // (IQ3_XXS attn_q, and ffn_up in the middle three quarters of the layers).
  check("IQ3_S", gqa4, false,
        {{"blk.3.attn_v.weight", DType::kQ4_K}, {"blk.3.ffn_down.weight", DType::kIQ3_S}, {"output.weight", DType::kQ6_K}});
  check("IQ3_S", mha, false, {{"blk.3.attn_v.weight", DType::kIQ3_S}});
  check("IQ3_M", mha, false,
        {{"blk.3.attn_v.weight", DType::kQ4_K}, {"blk.1.ffn_down.weight", DType::kQ4_K},
         {"blk.2.ffn_down.weight", DType::kIQ3_S}, {"token_embd.weight", DType::kIQ3_S}});
  check("IQ3_XS", mha, true,
        {{"blk.3.attn_q.weight", DType::kIQ3_XXS}, {"blk.1.ffn_up.weight", DType::kIQ3_S},
         {"blk.2.ffn_up.weight", DType::kIQ3_XXS}, {"blk.13.ffn_up.weight", DType::kIQ3_XXS},
         {"blk.14.ffn_up.weight", DType::kIQ3_S}});
  // llama.cpp insists on an importance matrix for these types, never for the embeddings and head.
  const QuantMix& iq2 = *find_quant_mix("IQ2_XXS");
  EXPECT_TRUE(quant_needs_imatrix(iq2, "blk.0.attn_q.weight", DType::kIQ2_XXS));
  EXPECT_TRUE(quant_needs_imatrix(*find_quant_mix("IQ3_M"), "blk.0.attn_q.weight", DType::kIQ3_XXS));
  EXPECT_FALSE(quant_needs_imatrix(*find_quant_mix("IQ3_M"), "blk.0.attn_q.weight", DType::kIQ3_S));
  EXPECT_FALSE(quant_needs_imatrix(iq2, "output.weight", DType::kIQ2_XXS));
  EXPECT_FALSE(quant_needs_imatrix(iq2, "blk.0.ffn_down.weight", DType::kQ2_K));
}

}  // namespace
}  // namespace fulgur
