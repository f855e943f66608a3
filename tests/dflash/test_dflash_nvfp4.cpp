// A block draft whose linears are compressed-tensors NVFP4 converts to GGUF NVFP4 tensors (with
// their `.scale` sidecars, which the draft's loader applies) and drafts the same tokens as the
// same draft converted from its dequantized floats.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "convert/hf_config.h"
#include "convert/nvfp4_test_util.h"
#include "dflash/dflash_fixture.h"
#include "gguf/gguf_reader.h"
#include "kernels/dispatch.h"

namespace fulgur::dflash_test {
namespace {

TEST(DflashNvfp4, DraftsLikeTheDequantizedCheckpoint) {
  DraftSynthOptions o = draft_options("deepspec", "vanilla");
  std::set<std::string> linears = {"fc.weight"};
  for (const char* n : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                        "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
    linears.insert(std::string("layers.0.") + n + ".weight");
  }
  o.out_dir = env().dir + "/nvfp4_draft_q";
  synth_draft_checkpoint(o);
  std::map<std::string, std::vector<float>> floats;
  test::quantize_checkpoint(o.out_dir, linears, false, &floats);
  const std::string cfg_path = o.out_dir + "/config.json";
  nlohmann::json cfg = HfConfig::load(cfg_path).json();
  cfg["quantization_config"] = test::nvfp4_quantization_config({"lm_head"});
  write_json_file(cfg_path, cfg);
  const std::string q_path = convert_draft_dir(o.out_dir);

  o.out_dir = env().dir + "/nvfp4_draft_f";
  synth_draft_checkpoint(o);
  test::replace_floats(o.out_dir, floats);
  const std::string f_path = convert_draft_dir(o.out_dir);

  const GgufReader r(q_path);
  EXPECT_EQ(r.tensor("fc.weight").type, DType::kNVFP4);
  EXPECT_EQ(r.tensor("blk.0.attn_q.weight").type, DType::kNVFP4);
  EXPECT_NE(r.find_tensor("blk.0.attn_q.scale"), nullptr);
  EXPECT_NE(r.find_tensor("fc.scale"), nullptr);

  DflashDrafter dq(q_path, *env().target, {.n_threads = 1});
  DflashDrafter df(f_path, *env().target, {.n_threads = 1});
  const Isa best = kernels::active_isa();
  for (Isa isa : {Isa::kRef, best}) {
    kernels::set_active_isa(isa);
    int same = 0, total = 0;
    for (int s = 0; s < 6; ++s) {
      const std::vector<int32_t> prompt = prompt_tokens(s, 10 + s);
      const std::vector<int32_t> a = draft_after(dq, prompt, 4), b = draft_after(df, prompt, 4);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        same += a[i] == b[i];
        ++total;
      }
    }
    std::printf("nvfp4 draft %s: %d of %d drafted tokens equal\n", isa_name(isa), same, total);
    EXPECT_EQ(same, total) << isa_name(isa);
  }
  kernels::set_active_isa(best);
}

}  // namespace
}  // namespace fulgur::dflash_test
