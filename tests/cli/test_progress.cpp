// Progress output of synth and convert: one line redrawn in place on a terminal (a pseudo-
// terminal from util-linux's `script`), nothing per tensor into a file or a pipe.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli_test_util.h"

namespace fulgur::test {
namespace {

TEST(Progress, NothingPerTensorWhenStderrIsNotATerminal) {
  const std::string d = make_cli_temp_dir();
  const RunResult r = run_fulgur("synth --shape tiny --seed 1 --type q8_0 --tokenizer builtin -o '" + d +
                                     "/m.gguf' --hf '" + d + "/hf'",
                                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tensors"), std::string::npos) << r.err;
  const RunResult c = run_fulgur("convert '" + d + "/hf' -o '" + d + "/c.gguf' --type q8_0", d);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(c.err.find('\r'), std::string::npos) << c.err;
  EXPECT_EQ(c.err, "convert: wrote " + d + "/c.gguf (q8_0)\n");
}

TEST(Progress, OneLineRedrawnOnATerminal) {
  if (std::system("script --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux's script is not installed";
  const std::string d = make_cli_temp_dir();
  ASSERT_EQ(run_fulgur("synth --shape tiny --seed 1 --type q8_0 --tokenizer builtin -o '" + d + "/m.gguf' --hf '" + d + "/hf'", d).status, 0);
  // script gives the command a pseudo-terminal and copies what it wrote to typescript.txt.
  const std::string cmd = "script -qec \"'" + std::string(FULGUR_BINARY) + "' convert '" + d + "/hf' -o '" + d +
                          "/c.gguf' --type q8_0\" '" + d + "/typescript.txt' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string out = read_text(d + "/typescript.txt");
  const size_t bar = out.find("convert: [");
  ASSERT_NE(bar, std::string::npos) << out;
  const std::string progress = out.substr(bar, out.find("convert: wrote") - bar);
  EXPECT_GT(std::count(progress.begin(), progress.end(), '\r'), 3) << "redrawn in place, tensor by tensor";
  EXPECT_LE(std::count(progress.begin(), progress.end(), '\n'), 2) << "one line (a terminal may add a carriage return before its newline)";
}

}  // namespace
}  // namespace fulgur::test
