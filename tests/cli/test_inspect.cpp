// `fulgur inspect` on a generated file (text and --json, parsed back) and on malformed files.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace fulgur {
namespace {

using test::run_fulgur;

std::string write_model(const std::string& dir) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_u32("qwen3.block_count", 2);
  w.set_f32("qwen3.rope.freq_base", 1000000.f);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_i64("neg", -7);
  std::vector<std::string> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back("tok" + std::to_string(i));
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_array<int32_t>("qwen3.attention.head_count_kv", {2, 4});
  w.set_alignment(64);
  w.add_tensor("token_embd.weight", DType::kQ8_0, {64, 40}, std::vector<uint8_t>(68 * 40, 1));
  w.add_tensor("output_norm.weight", DType::kF32, {64}, std::vector<uint8_t>(256, 0));
  const std::string path = dir + "/model.gguf";
  w.write(path);
  return path;
}

TEST(CliInspect, TextOutput) {
  const std::string dir = test::make_cli_temp_dir();
  const std::string path = write_model(dir);
  const test::RunResult r = run_fulgur("inspect '" + path + "'", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* piece :
       {"version:     3", "alignment:   64", "general.architecture", "\"qwen3\"",
        "ARRAY[STRING](40)", "\"tok0\"", "...", "[2, 4]", "token_embd.weight", "q8_0", "[64, 40]",
        "2720", "output_norm.weight", "total:       2 tensors, 2624 elements, 2976 bytes"}) {
    EXPECT_NE(r.out.find(piece), std::string::npos) << "missing '" << piece << "' in\n" << r.out;
  }
  EXPECT_EQ(r.out.find("tok20"), std::string::npos) << "long arrays must be abbreviated";
}

TEST(CliInspect, JsonOutputParsesBack) {
  const std::string dir = test::make_cli_temp_dir();
  const std::string path = write_model(dir);
  const test::RunResult r = run_fulgur("inspect --json '" + path + "'", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["alignment"], 64);
  const GgufReader reader(path);
  EXPECT_EQ(j["data_offset"], reader.data_offset());
  const nlohmann::json& md = j["metadata"];
  EXPECT_EQ(md["general.architecture"], "qwen3");
  EXPECT_EQ(md["qwen3.block_count"], 2);
  EXPECT_EQ(md["qwen3.rope.freq_base"], 1000000.0);
  EXPECT_EQ(md["tokenizer.ggml.add_bos_token"], false);
  EXPECT_EQ(md["neg"], -7);
  EXPECT_EQ(md["qwen3.attention.head_count_kv"], nlohmann::json::array({2, 4}));
  const nlohmann::json& tokens = md["tokenizer.ggml.tokens"];  // 40 > 16: abbreviated
  EXPECT_EQ(tokens["type"], "ARRAY[STRING]");
  EXPECT_EQ(tokens["length"], 40);
  ASSERT_EQ(tokens["head"].size(), 16u);
  EXPECT_EQ(tokens["head"][15], "tok15");
  ASSERT_EQ(j["tensors"].size(), 2u);
  const nlohmann::json& t0 = j["tensors"][0];
  EXPECT_EQ(t0["name"], "token_embd.weight");
  EXPECT_EQ(t0["type"], "q8_0");
  EXPECT_EQ(t0["shape"], nlohmann::json::array({64, 40}));
  EXPECT_EQ(t0["offset"], 0);
  EXPECT_EQ(t0["bytes"], 2720);
  EXPECT_EQ(j["tensors"][1]["offset"], 2752);  // 2720 padded to 64
  EXPECT_EQ(j["total_bytes"], 2976);

  const test::RunResult all = run_fulgur("inspect --json --max-elements 0 '" + path + "'", dir);
  ASSERT_EQ(all.status, 0) << all.err;
  const nlohmann::json full = nlohmann::json::parse(all.out)["metadata"]["tokenizer.ggml.tokens"];
  ASSERT_TRUE(full.is_array());
  EXPECT_EQ(full.size(), 40u);
  EXPECT_EQ(full[39], "tok39");
}

TEST(CliInspect, TruncatedFileFailsWithMessage) {
  const std::string dir = test::make_cli_temp_dir();
  const std::string path = write_model(dir);
  const std::string bytes = test::read_text(path);
  const std::string bad = dir + "/truncated.gguf";
  for (size_t n : {size_t{0}, size_t{3}, size_t{30}, size_t{200}, bytes.size() - 1}) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(n));
    const test::RunResult r = run_fulgur("inspect '" + bad + "'", dir);
    EXPECT_EQ(r.status, 1) << "cut at " << n << ": " << r.err;
    EXPECT_NE(r.err.find("fulgur: error: file '" + bad + "'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing is printed before validation completes";
  }
  const test::RunResult json = run_fulgur("inspect --json '" + bad + "'", dir);
  EXPECT_EQ(json.status, 1);
  EXPECT_NE(json.err.find("past the end of the data section"), std::string::npos) << json.err;
}

TEST(CliInspect, MissingFileAndBadArguments) {
  const std::string dir = test::make_cli_temp_dir();
  const test::RunResult missing = run_fulgur("inspect '" + dir + "/nope.gguf'", dir);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("nope.gguf"), std::string::npos) << missing.err;
  const test::RunResult no_arg = run_fulgur("inspect", dir);
  EXPECT_NE(no_arg.status, 0);
  EXPECT_NE(no_arg.status, -1);
}

}  // namespace
}  // namespace fulgur
