// llama.cpp's own tokenizer tests on real vocabularies: models/ggml-vocab-{llama-spm,gemma-4}.gguf
// (Llama 2's SentencePiece vocabulary and Gemma 4's, as llama.cpp's converter wrote them) with
// their .inp texts and the .out ids llama.cpp's test-tokenizer-0 expects (add_special and
// parse_special off). They come from the llama.cpp source that node-llama-cpp ships as a git
// bundle (node_modules/node-llama-cpp/llama/gitRelease.bundle); the test skips without it or git.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "gguf/gguf_reader.h"
#include "oracle.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace fulgur {
namespace {

namespace fs = std::filesystem;

const std::string kBundle = test::node_modules_dir() + "/node-llama-cpp/llama/gitRelease.bundle";

class LlamaCppVocabGoldens : public testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kBundle) || std::system("git --version > /dev/null 2>&1") != 0) return;
    clone_ = (fs::path(testing::TempDir()) / ("fulgur_llama_src_" + std::to_string(::getpid()))).string();
    const std::string cmd = "git clone -q --no-checkout '" + kBundle + "' '" + clone_ + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) clone_.clear();
  }
  static void TearDownTestSuite() {
    if (!clone_.empty()) fs::remove_all(clone_);
  }
  void SetUp() override {
    if (clone_.empty()) GTEST_SKIP() << "no git, or no llama.cpp bundle in node-llama-cpp (npm ci)";
  }
  // models/<name> from the bundle's tree, written beside the clone.
  static std::string extract(const std::string& name) {
    const std::string out = clone_ + "/" + name;
    const std::string cmd = "git -C '" + clone_ + "' show 'HEAD:models/" + name + "' > '" + out + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }
  static std::string clone_;
};
std::string LlamaCppVocabGoldens::clone_;

TEST_P(LlamaCppVocabGoldens, IdsMatchTestTokenizer0) {
  const std::string base = std::string("ggml-vocab-") + GetParam() + ".gguf";
  const Tokenizer t(read_vocab(GgufReader(extract(base))));
  const std::string inp = test::read_text_file(extract(base + ".inp"));
  std::istringstream out(test::read_text_file(extract(base + ".out")));
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0, n = 0;
  std::string want;
  while (std::getline(out, want)) {
    const size_t end = inp.find(sep, pos);
    ASSERT_NE(pos, std::string::npos) << "more .out lines than .inp texts";
    const std::string text = inp.substr(pos, end == std::string::npos ? end : end - pos);
    pos = end == std::string::npos ? end : end + sep.size();
    while (!want.empty() && want.front() == ' ') want.erase(0, 1);
    EXPECT_EQ(test::join(t.encode(text, false)), want) << GetParam() << " text " << n << ": "
                                                       << nlohmann::json(text).dump();
    ++n;
  }
  EXPECT_GE(n, 40u);  // the files hold 46 texts each
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaCppVocabGoldens, testing::Values("llama-spm", "gemma-4"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return info.param == std::string("llama-spm") ? std::string("LlamaSpm")
                                                                         : std::string("Gemma4");
                         });

}  // namespace
}  // namespace fulgur
