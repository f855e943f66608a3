// `fulgur quantize`: the file it writes (types, metadata, that fulgur runs it), and its refusals:
// unknown TYPE, OUT == IN, a truncated input, an arch without rules, bad --imatrix files, requantizing
// without --allow-requantize, bad per-tensor options (--output-tensor-type, --token-embedding-type,
// --tensor-type: unknown or unwritable types, malformed PATTERN=TYPE, a bad regular expression, a
// type given as is whose block does not divide the rows). A refused or failed run leaves no OUT
// and no temporary file.
// The type tables against llama.cpp's own quantizer, and llama.cpp running the output, are in
// tests/llama/test_fulgur_quantize.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "cli_test_util.h"
#include "gguf/gguf_reader.h"
#include "gguf_edit.h"

namespace fulgur::test {
namespace {

namespace fs = std::filesystem;

class QuantizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_cli_temp_dir();
    src_ = dir_ + "/src.keep.gguf";
    const RunResult r =
        run_fulgur("synth --arch qwen3 --shape tiny --tokenizer builtin --seed 3 --type f16 -o '" + src_ + "'", dir_);
    ASSERT_EQ(r.status, 0) << r.err;
  }
  RunResult fulgur(const std::string& args) const { return run_fulgur(args, dir_); }
  // Only the inputs in the folder: no output, no temporary file.
  void expect_no_output(const std::string& why) const {
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(name == "stdout.txt" || name == "stderr.txt" || name.find(".keep.") != std::string::npos)
          << why << ": left " << name;
    }
  }
  std::string dir_, src_;
};

TEST_F(QuantizeCli, WritesTheMixAndFulgurRunsIt) {
  const std::string out = dir_ + "/q4_k_m.gguf";
  const RunResult r = fulgur("quantize '" + src_ + "' '" + out + "' q4_k_m -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("quantize: wrote"), std::string::npos) << r.err;
  const GgufReader in(src_), q(out);
  EXPECT_EQ(q.get_u32("general.file_type"), 15u);
  EXPECT_EQ(q.get_u32("general.quantization_version"), 2u);
  EXPECT_EQ(q.get_string("general.architecture"), "qwen3");
  ASSERT_EQ(q.tensors().size(), in.tensors().size());
  std::map<DType, int> n;
  for (size_t i = 0; i < q.tensors().size(); ++i) {
    const GgufTensorInfo& t = q.tensors()[i];
    EXPECT_EQ(t.name, in.tensors()[i].name) << "tensor order is the input's";
    ++n[t.type];
    if (t.n_dims == 1) {
      EXPECT_EQ(t.type, DType::kF32) << t.name;
    }
  }
  EXPECT_GE(n[DType::kQ4_K], 4);
  EXPECT_EQ(q.tensor("token_embd.weight").type, DType::kQ6_K) << "tied embeddings: the head's Q6_K";
  // The thread count does not change a byte.
  const std::string out1 = dir_ + "/q4_k_m_t1.gguf";
  ASSERT_EQ(fulgur("quantize '" + src_ + "' '" + out1 + "' Q4_K_M -t 1").status, 0);
  EXPECT_EQ(read_text(out), read_text(out1));
  const RunResult run = fulgur("run -m '" + out + "' -p 'Hello' -n 8 --temp 0 --ignore-eos -t 1");
  EXPECT_EQ(run.status, 0) << run.err;
}

TEST_F(QuantizeCli, RefusesUnknownTypeSameFileTruncatedInputAndImatrix) {
  const std::string out = dir_ + "/out.gguf";
  RunResult r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_X");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown type 'Q4_K_X'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Q4_K_M"), std::string::npos) << "lists the mixes: " << r.err;
  expect_no_output("unknown type");
  // The codebook mixes need an importance matrix, as in llama-quantize.
  for (const char* mix : {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_M", "IQ3_XXS"}) {
    r = fulgur("quantize '" + src_ + "' '" + out + "' " + mix);
    EXPECT_EQ(r.status, 1) << mix;
    EXPECT_NE(r.err.find("needs an importance matrix"), std::string::npos) << r.err;
    expect_no_output(mix);
  }

  r = fulgur("quantize '" + src_ + "' '" + src_ + "' Q8_0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("OUT is the input file"), std::string::npos) << r.err;
  r = fulgur("quantize '" + src_ + "' '" + dir_ + "/./src.keep.gguf' Q8_0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("OUT is the input file"), std::string::npos) << r.err;
  expect_no_output("OUT == IN");
  EXPECT_NO_THROW(GgufReader{src_}) << "the input is untouched";

  const std::string cut = dir_ + "/cut.keep.gguf";
  {
    const std::string bytes = read_text(src_);
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  r = fulgur("quantize '" + cut + "' '" + out + "' Q8_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cut.keep.gguf"), std::string::npos) << "names the file: " << r.err;
  expect_no_output("truncated input");

  // A model is not an imatrix (GGUF without imatrix.* keys); a cut legacy file; one whose entry
  // has the wrong size for its tensor.
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M --imatrix '" + src_ + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("imatrix.datasets"), std::string::npos) << r.err;
  const std::string dat = dir_ + "/bad.keep.dat";
  const auto write_dat = [&](int32_t nval, bool cut) {
    std::ofstream f(dat, std::ios::binary);
    const auto put = [&f](int32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    const std::string name = "blk.0.attn_q.weight";
    put(1);
    put(static_cast<int32_t>(name.size()));
    f.write(name.data(), static_cast<std::streamsize>(name.size()));
    put(1);
    put(nval);
    const std::vector<float> v(static_cast<size_t>(cut ? nval / 2 : nval), 1.0f);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  };
  write_dat(256, true);
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M --imatrix '" + dat + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  write_dat(100, false);
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M --imatrix '" + dat + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("has 100 values for 'blk.0.attn_q.weight', which needs 256"), std::string::npos) << r.err;
  expect_no_output("--imatrix");
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q2_K_S");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Q2_K_S needs an importance matrix"), std::string::npos) << r.err;
  write_dat(256, false);  // covers one tensor: the others are quantized without, said on stderr
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q2_K_S --imatrix '" + dat + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("has no entry for"), std::string::npos) << r.err;
  expect_no_output("Q2_K_S");
  r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M --imatrix '" + dat + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("has no importance for"), std::string::npos) << r.err;
  fs::remove(out);

  r = fulgur("quantize '" + dir_ + "/missing.gguf' '" + out + "' Q8_0");
  EXPECT_NE(r.status, 0);
  expect_no_output("missing input");
}

TEST_F(QuantizeCli, PureAndTensorTypesChangeTheTypes) {
  const std::string out = dir_ + "/out.gguf";
  RunResult r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M --pure -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  {
    const GgufReader q(out);
    for (const GgufTensorInfo& t : q.tensors()) {
      EXPECT_EQ(t.type, t.n_dims == 1 ? DType::kF32 : DType::kQ4_K) << t.name << ": --pure keeps no upgrade";
    }
  }
  // Options before IN OUT TYPE too: each --tensor-type takes one PATTERN=TYPE.
  r = fulgur("quantize --tensor-type 'ATTN_[QK]=q8_0' --tensor-type 'blk\\.1\\.ffn=iq4_nl' '" + src_ + "' '" + out +
             "' Q4_K_M --tensor-type 'never_a_tensor=q8_0' --token-embedding-type f16 -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("--tensor-type never_a_tensor=q8_0 matches no tensor"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("attn_[qk]=q8_0 matches no tensor"), std::string::npos) << r.err;
  const GgufReader q(out);
  EXPECT_EQ(q.tensor("blk.0.attn_q.weight").type, DType::kQ8_0) << "the pattern is lowercased, as llama-quantize does";
  EXPECT_EQ(q.tensor("blk.1.attn_k.weight").type, DType::kQ8_0);
  EXPECT_EQ(q.tensor("blk.1.ffn_down.weight").type, DType::kIQ4_NL);
  EXPECT_EQ(q.tensor("blk.1.ffn_up.weight").type, DType::kIQ4_NL);
  EXPECT_EQ(q.tensor("blk.0.ffn_up.weight").type, DType::kQ4_K) << "no pattern: the mix's rule";
  EXPECT_EQ(q.tensor("token_embd.weight").type, DType::kF16);
  EXPECT_EQ(q.tensor("blk.0.attn_norm.weight").type, DType::kF32) << "norms are never quantized";
}

TEST_F(QuantizeCli, RefusesBadPerTensorOptions) {
  const std::string out = dir_ + "/out.gguf";
  const auto refused = [&](const std::string& options, const std::string& why) {
    const RunResult r = fulgur("quantize '" + src_ + "' '" + out + "' Q4_K_M " + options);
    EXPECT_EQ(r.status, 1) << options << "\n" << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << options << "\n" << r.err;
    expect_no_output(options);
  };
  refused("--output-tensor-type q9_9", "--output-tensor-type: unknown type 'q9_9'");
  refused("--token-embedding-type i32", "--token-embedding-type: fulgur cannot write weights of type i32");
  refused("--tensor-type attn_q", "--tensor-type: 'attn_q' is not PATTERN=TYPE");
  refused("--tensor-type =q8_0", "has no tensor name pattern");
  refused("--tensor-type attn_q=", "has no type after '='");
  refused("--tensor-type attn_q=q4_x", "unknown type 'q4_x'");
  refused("--tensor-type '(attn=q8_0'", "'(attn' is not a regular expression");

  // A type given as is (llama.cpp applies no fallback to these, and asserts) whose block does not
  // divide the rows: token_embd and output.weight of 96 columns.
  testing_support::GgufEdit edit;
  edit.tensors["token_embd.weight"] = testing_support::F32Tensor{{96, 32}, std::vector<float>(96 * 32, 0.01f)};
  edit.tensors["output.weight"] = testing_support::F32Tensor{{96, 32}, std::vector<float>(96 * 32, 0.02f)};
  const std::string odd = testing_support::write_edited_gguf(src_, dir_ + "/odd.keep.gguf", edit);
  for (const char* option : {"--token-embedding-type q4_K", "--output-tensor-type iq4_xs"}) {
    const RunResult r = fulgur("quantize '" + odd + "' '" + out + "' Q8_0 " + option);
    EXPECT_EQ(r.status, 1) << option << "\n" << r.err;
    EXPECT_NE(r.err.find("has rows of 96 values, not a multiple of"), std::string::npos) << r.err;
    expect_no_output(option);
  }
  // --tensor-type falls back instead, as llama.cpp's manual types do: Q4_K -> Q5_0.
  const RunResult r = fulgur("quantize '" + odd + "' '" + out + "' Q8_0 --tensor-type output=q4_K --leave-output-tensor "
                             "--tensor-type token_embd=q4_K");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(GgufReader(out).tensor("token_embd.weight").type, DType::kQ5_0);
  EXPECT_EQ(GgufReader(out).tensor("output.weight").type, DType::kF32) << "--leave-output-tensor";
}

TEST_F(QuantizeCli, RefusesAnArchWithoutRules) {
  const std::string src = dir_ + "/nemotron.keep.gguf";
  ASSERT_EQ(fulgur("synth --arch nemotron_h --shape tiny --tokenizer builtin -o '" + src + "'").status, 0);
  const RunResult r = fulgur("quantize '" + src + "' '" + dir_ + "/out.gguf' Q4_K_M");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("arch 'nemotron_h'"), std::string::npos) << r.err;
  expect_no_output("unknown arch");
}

TEST_F(QuantizeCli, RequantizingNeedsTheFlag) {
  const std::string q8 = dir_ + "/q8.keep.gguf";
  ASSERT_EQ(fulgur("quantize '" + src_ + "' '" + q8 + "' Q8_0").status, 0);
  const std::string out = dir_ + "/out.gguf";
  RunResult r = fulgur("quantize '" + q8 + "' '" + out + "' Q4_K_M");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already q8_0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-requantize"), std::string::npos) << r.err;
  expect_no_output("requantize");
  // The same mix again: every tensor keeps its type, so nothing is requantized and the bytes stay.
  r = fulgur("quantize '" + q8 + "' '" + out + "' Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_text(out), read_text(q8));
  fs::remove(out);
  r = fulgur("quantize '" + q8 + "' '" + out + "' Q4_K_M --allow-requantize");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(GgufReader(out).tensor("blk.0.attn_q.weight").type, DType::kQ4_K);
}

}  // namespace
}  // namespace fulgur::test
