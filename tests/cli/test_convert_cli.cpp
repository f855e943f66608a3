// `fulgur convert` as a subprocess: a tiny checkpoint converts (exit 0, a loadable GGUF), a bad
// folder or type fails with exit status 1 and an error message on stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "convert/tiny_checkpoint.h"
#include "gguf/gguf_reader.h"
#include "synth/draft_synth.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int status;
  std::string err;
};

CliResult run_fulgur(const std::string& args, const std::string& dir) {
  const std::string err_path = dir + "/stderr.txt";
  const std::string cmd = std::string(FULGUR_BINARY) + " " + args + " 2> " + err_path;
  const int raw = std::system(cmd.c_str());
  std::ifstream in(err_path);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, text.str()};
}

TEST(ConvertCli, TinyCheckpointAndErrors) {
  const std::string dir = test::scratch_dir("fulgur_convert_cli");
  const test::TinyModel m = test::make_tiny(test::TinySpec{});
  test::write_tiny(dir + "/hf", m);

  const CliResult ok = run_fulgur("convert " + dir + "/hf -o " + dir + "/m.gguf --type q8_0", dir);
  EXPECT_EQ(ok.status, 0) << ok.err;
  ASSERT_TRUE(fs::exists(dir + "/m.gguf")) << ok.err;
  // stderr is a file here: no progress bar (test_progress.cpp has the terminal's).
  EXPECT_EQ(ok.err.find("tensors"), std::string::npos) << ok.err;
  const GgufReader r(dir + "/m.gguf");
  EXPECT_EQ(r.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(r.tensor("blk.0.attn_q.weight").type, DType::kQ8_0);

  const CliResult dflt = run_fulgur("convert " + dir + "/hf -o " + dir + "/d.gguf --no-progress", dir);
  EXPECT_EQ(dflt.status, 0) << dflt.err;
  EXPECT_EQ(GgufReader(dir + "/d.gguf").tensor("blk.0.attn_q.weight").type, DType::kF16);

  const CliResult bad = run_fulgur("convert " + dir + "/missing -o " + dir + "/x.gguf", dir);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("error"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("missing"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir + "/x.gguf"));

  const CliResult type = run_fulgur("convert " + dir + "/hf -o " + dir + "/y.gguf --type q5_k", dir);
  EXPECT_EQ(type.status, 1);
  EXPECT_NE(type.err.find("q5_k"), std::string::npos) << type.err;
  EXPECT_FALSE(fs::exists(dir + "/y.gguf"));
  fs::remove_all(dir);
}

// A draft with --target carries the target's vocabulary (and warns without it); a DSpark draft
// without a confidence head refuses --spec-p-min > 0 as llama.cpp does, and runs with 0.
TEST(ConvertCli, DraftWithTargetAndDsparkPmin) {
  const std::string dir = test::scratch_dir("fulgur_convert_cli_draft");
  CliResult synth = run_fulgur("synth --shape tiny --tokenizer builtin --seed 5 -o " + dir + "/t.gguf", dir);
  ASSERT_EQ(synth.status, 0) << synth.err;
  const GgufReader target(dir + "/t.gguf");
  DraftSynthOptions o;
  o.format = "deepspec";
  o.markov = "vanilla";
  o.confidence = false;
  o.n_vocab = target.tensor("token_embd.weight").ne[1];
  o.n_embd = target.tensor("token_embd.weight").ne[0];
  o.mask_token_id = o.n_vocab - 1;
  o.out_dir = dir + "/draft";
  synth_draft_checkpoint(o);

  const CliResult bare = run_fulgur("convert " + dir + "/draft -o " + dir + "/bare.gguf --no-progress", dir);
  EXPECT_EQ(bare.status, 0) << bare.err;
  EXPECT_NE(bare.err.find("no --target"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("no confidence head"), std::string::npos) << bare.err;  // llama.cpp note
  EXPECT_FALSE(GgufReader(dir + "/bare.gguf").has("tokenizer.ggml.tokens"));

  const CliResult ok = run_fulgur("convert " + dir + "/draft -o " + dir + "/d.gguf --no-progress --target " +
                                      dir + "/t.gguf",
                                  dir);
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err.find("no --target"), std::string::npos) << ok.err;
  EXPECT_EQ(GgufReader(dir + "/d.gguf").get_string_array("tokenizer.ggml.tokens"),
            target.get_string_array("tokenizer.ggml.tokens"));

  const std::string run = "run -m " + dir + "/t.gguf -p hello -n 6 --temp 0 -md " + dir + "/d.gguf ";
  const CliResult refused = run_fulgur(run + "--spec-p-min 0.5", dir);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("has no confidence head"), std::string::npos) << refused.err;
  const CliResult fine = run_fulgur(run + "--spec-p-min 0 > /dev/null", dir);
  EXPECT_EQ(fine.status, 0) << fine.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulgur
