// config.json typed getters and their error messages.
#include "zoo_path.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>

#include "convert/hf_config.h"
#include "core/error.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const HfConfig& sample() {
  static const HfConfig config(nlohmann::json::parse(R"({
    "num_hidden_layers": 28, "hidden_size": "1024", "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": true, "rope_scaling": null,
    "head_dim": 128.0, "ratio": 1.5, "flag": 1, "model_type": "qwen3",
    "layer_types": ["full_attention", "linear_attention"], "target_layer_ids": [1, 3, 4],
    "bad_ids": [1, "x"], "eos_token_id": [151645, 151643], "bos_token_id": 151643,
    "text_config": {"hidden_size": 2048, "rope_parameters": {"rope_theta": 1e7}},
    "block_configs": [{"attention": {"n_heads_in_group": 8}}, {"attention": {}}]
  })"), "config.json");
  return config;
}

TEST(HfConfig, TypedGetters) {
  const HfConfig& c = sample();
  EXPECT_EQ(c.get_int("num_hidden_layers"), 28);
  EXPECT_EQ(c.get_int("head_dim"), 128);             // integral float accepted
  EXPECT_EQ(c.get_int("rope_theta"), 1000000);
  EXPECT_DOUBLE_EQ(c.get_float("rms_norm_eps"), 1e-6);
  EXPECT_DOUBLE_EQ(c.get_float("num_hidden_layers"), 28.0);  // integers are numbers too
  EXPECT_TRUE(c.get_bool("tie_word_embeddings"));
  EXPECT_EQ(c.get_string("model_type"), "qwen3");
  EXPECT_EQ(c.get_string_array("layer_types"),
            (std::vector<std::string>{"full_attention", "linear_attention"}));
  EXPECT_EQ(c.get_int_array("target_layer_ids"), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(c.get_float_array("target_layer_ids"), (std::vector<double>{1, 3, 4}));
  EXPECT_EQ(c.get_int_or_int_array("eos_token_id"), (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(c.get_int_or_int_array("bos_token_id"), (std::vector<int64_t>{151643}));
  // Defaults: absent or null.
  EXPECT_FALSE(c.has("rope_scaling"));
  EXPECT_FALSE(c.has("absent"));
  EXPECT_TRUE(c.has("model_type"));
  EXPECT_EQ(c.get_int("absent", 7), 7);
  EXPECT_EQ(c.get_int("rope_scaling", 3), 3);
  EXPECT_DOUBLE_EQ(c.get_float("absent", 0.5), 0.5);
  EXPECT_FALSE(c.get_bool("absent", false));
  EXPECT_EQ(c.get_string("absent", "x"), "x");
  EXPECT_EQ(c.get_int("num_hidden_layers", 1), 28);  // present: the default is not used
}

TEST(HfConfig, ErrorMessages) {
  const HfConfig& c = sample();
  EXPECT_EQ(error_of([&] { c.get_int("num_layers"); }),
            "config.json: field 'num_layers' is missing");
  EXPECT_EQ(error_of([&] { c.get_int("hidden_size"); }),
            "config.json: field 'hidden_size' has type string (\"1024\"), expected integer");
  EXPECT_EQ(error_of([&] { c.get_int("ratio"); }),
            "config.json: field 'ratio' has type float (1.5), expected integer");
  EXPECT_EQ(error_of([&] { c.get_int("tie_word_embeddings"); }),
            "config.json: field 'tie_word_embeddings' has type boolean (true), expected integer");
  EXPECT_EQ(error_of([&] { c.get_bool("flag"); }),
            "config.json: field 'flag' has type integer (1), expected boolean");
  EXPECT_EQ(error_of([&] { c.get_int("rope_scaling"); }),
            "config.json: field 'rope_scaling' has type null (null), expected integer");
  EXPECT_EQ(error_of([&] { c.get_string("num_hidden_layers"); }),
            "config.json: field 'num_hidden_layers' has type integer (28), expected string");
  EXPECT_EQ(error_of([&] { c.get_int_array("bad_ids"); }),
            "config.json: field 'bad_ids[1]' has type string (\"x\"), expected integer");
  EXPECT_EQ(error_of([&] { c.get_string_array("model_type"); }),
            "config.json: field 'model_type' has type string (\"qwen3\"), expected array of "
            "strings");
  // A wrong type is an error even when a default is offered.
  EXPECT_THROW(c.get_int("hidden_size", 5), Error);
}

TEST(HfConfig, NestedObjects) {
  const HfConfig& c = sample();
  const HfConfig text = c.get_object("text_config");
  EXPECT_EQ(text.get_int("hidden_size"), 2048);
  EXPECT_DOUBLE_EQ(text.get_object("rope_parameters").get_float("rope_theta"), 1e7);
  EXPECT_EQ(error_of([&] { text.get_int("vocab_size"); }),
            "config.json: field 'text_config.vocab_size' is missing");
  EXPECT_EQ(error_of([&] { text.get_object("rope_parameters").get_int("x"); }),
            "config.json: field 'text_config.rope_parameters.x' is missing");
  const auto blocks = c.get_object_array("block_configs");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].get_object("attention").get_int("n_heads_in_group"), 8);
  EXPECT_EQ(error_of([&] { blocks[1].get_object("attention").get_int("n_heads_in_group"); }),
            "config.json: field 'block_configs[1].attention.n_heads_in_group' is missing");
  EXPECT_EQ(error_of([&] { c.get_object("model_type"); }),
            "config.json: field 'model_type' has type string (\"qwen3\"), expected object");
}

TEST(HfConfig, LoadAndWriteFiles) {
  std::string tmpl = testing::TempDir() + "fulgur_cfg_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  write_json_file((dir / "config.json").string(), {{"hidden_size", 64}, {"eps", 1e-5}});
  const HfConfig c = HfConfig::load(dir.string());  // a directory finds config.json
  EXPECT_EQ(c.get_int("hidden_size"), 64);
  EXPECT_EQ(c.source(), (dir / "config.json").string());
  EXPECT_NE(error_of([&] { c.get_int("x"); }).find("config.json: field 'x' is missing"),
            std::string::npos);

  const std::string bad = (dir / "bad.json").string();
  const std::string text = "{\"a\": ";
  write_json_file(bad, nullptr);  // creates the file, then overwrite with broken text:
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  EXPECT_NE(error_of([&] { HfConfig::load(bad); }).find("bad.json: not valid JSON"),
            std::string::npos);
  write_json_file(bad, nlohmann::json::array({1, 2}));
  EXPECT_NE(error_of([&] { HfConfig::load(bad); }).find("expected object"), std::string::npos);
  EXPECT_NE(error_of([&] { HfConfig::load((dir / "none").string()); }).find("cannot open"),
            std::string::npos);

  // Python's json dialect (HF writes Mamba's time_step_limit as [0.0, Infinity]); the literals
  // inside strings stay as they are, and a file broken otherwise still reports the parser.
  const std::string py = (dir / "py.json").string();
  {
    std::FILE* f = std::fopen(py.c_str(), "w");
    std::fputs("{\"time_step_limit\": [0.0, Infinity], \"low\": -Infinity, \"x\": NaN, "
               "\"s\": \"NaN \\\" Infinity\"}", f);
    std::fclose(f);
  }
  const HfConfig pc = HfConfig::load(py);
  EXPECT_EQ(pc.get_float_array("time_step_limit")[1], std::numeric_limits<double>::max());
  EXPECT_EQ(pc.get_float("low"), -std::numeric_limits<double>::max());
  EXPECT_FALSE(pc.has("x"));
  EXPECT_EQ(pc.get_string("s"), "NaN \" Infinity");
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs("{\"a\": Infinity,}", f);
    std::fclose(f);
  }
  EXPECT_NE(error_of([&] { HfConfig::load(bad); }).find("bad.json: not valid JSON"), std::string::npos);
  fs::remove_all(dir);
}

TEST(HfConfig, ZooTargetConfig) {
  const std::string dir = fulgur::test::zoo_dir() + "/zoo-qwen3-code";
  if (!fs::exists(dir + "/config.json")) GTEST_SKIP() << dir << " absent";
  const HfConfig c = HfConfig::load(dir);
  EXPECT_EQ(c.get_string("model_type"), "qwen3");
  EXPECT_EQ(c.get_int("hidden_size"), 256);
  EXPECT_EQ(c.get_int("num_hidden_layers"), 6);
  EXPECT_EQ(c.get_int("num_key_value_heads"), 2);
  EXPECT_EQ(c.get_int("head_dim"), 64);
  EXPECT_EQ(c.get_int("vocab_size"), 4096);
  EXPECT_DOUBLE_EQ(c.get_float("rope_theta"), 10000.0);
  EXPECT_DOUBLE_EQ(c.get_float("rms_norm_eps"), 1e-6);
  EXPECT_TRUE(c.get_bool("tie_word_embeddings"));
  EXPECT_FALSE(c.has("rope_scaling"));
  EXPECT_EQ(c.get_string_array("architectures"), std::vector<std::string>{"Qwen3ForCausalLM"});
  EXPECT_EQ(c.get_string_array("layer_types").size(), 6u);
}

}  // namespace
}  // namespace fulgur
