// Runs tests/oracle/llama_tokenize.mjs (llama.cpp's tokenizer from the npm node-llama-cpp build)
// on a vocabulary: writes it as a vocabulary-only GGUF, as llama.cpp's own ggml-vocab-*.gguf
// test files are, and tokenizes a batch of texts there.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "oracle.h"
#include "tokenizer/gguf_vocab.h"

namespace fulgur::test {

// Empty when node and node-llama-cpp's CPU build are installed; otherwise why not.
inline std::string llama_tokenize_missing() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (!std::filesystem::exists(node_modules_dir() + "/node-llama-cpp/package.json") ||
      !std::filesystem::exists(node_modules_dir() + "/@node-llama-cpp/linux-x64")) {
    return "node-llama-cpp is not installed (run: npm ci --prefix " FULGUR_SOURCE_DIR ")";
  }
  return "";
}

// A GGUF with `v`'s tokenizer keys and nothing else llama.cpp does not need to read a
// vocabulary: the hyperparameter keys its loader insists on (for a tiny "llama"), no tensors.
inline void write_vocab_only_gguf(const Vocab& v, const std::string& path) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "fulgur-vocab-test");
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.context_length", 64);
  w.set_u32("llama.embedding_length", 64);
  w.set_u32("llama.feed_forward_length", 128);
  w.set_u32("llama.attention.head_count", 1);
  w.set_u32("llama.attention.head_count_kv", 1);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.rope.dimension_count", 64);
  write_vocab(w, v);
  w.write(path);
}

struct LlamaTokenized {
  std::vector<int32_t> ids;  // llama_tokenize, add_special = false
  std::string text;          // llama_detokenize of those ids
};

// llama.cpp on every case (texts must be valid UTF-8: they travel as JavaScript strings).
inline std::vector<LlamaTokenized> llama_tokenize(const std::string& model_path,
                                                  const std::vector<OracleCase>& cases) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) /
                                    ("fulgur_llama_tok_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json input = nlohmann::json::array();
  for (const OracleCase& c : cases) input.push_back({{"text", c.text}, {"parse_special", c.parse_special}});
  const std::string in_path = (dir / "input.json").string(), out_path = (dir / "output.json").string();
  std::ofstream(in_path, std::ios::binary) << input.dump();
  const std::string command = "node '" FULGUR_SOURCE_DIR "/tests/oracle/llama_tokenize.mjs' '" +
                              model_path + "' '" + in_path + "' '" + out_path + "'";
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << command;
  std::vector<LlamaTokenized> out;
  if (rc == 0) {
    for (const auto& r : nlohmann::json::parse(read_text_file(out_path))) {
      out.push_back({r.at("ids").get<std::vector<int32_t>>(), r.at("text").get<std::string>()});
    }
  }
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace fulgur::test
