// write_imatrix: see imatrix_file.h.
#include "llama/imatrix_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <utility>

#include "gguf/gguf_writer.h"

namespace fulgur::test {

void write_imatrix(const std::vector<NamedShape>& tensors, const std::string& dat, const std::string& gguf) {
  constexpr int32_t kCalls = 10;
  std::vector<std::pair<std::string, std::vector<float>>> entries;  // name -> [n_mat * ne0] sums
  std::vector<int64_t> n_mats;
  uint64_t state = 777;
  for (const NamedShape& s : tensors) {
    if (s.shape.size() < 2 || s.shape[1] == 1 || s.name.find("_norm") != std::string::npos ||
        s.name.find("ffn_gate_inp") != std::string::npos || s.name.rfind("token_embd", 0) == 0)
      continue;
    const int64_t n_mat = s.shape.size() > 2 ? s.shape[2] : 1;
    std::vector<float> v(static_cast<size_t>(s.shape[0] * n_mat));
    for (float& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = kCalls * (0.1f + 9.9f * static_cast<float>(state >> 40) / static_cast<float>(1 << 24));
    }
    entries.emplace_back(s.name, std::move(v));
    n_mats.push_back(n_mat);
  }
  FILE* f = std::fopen(dat.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const auto put = [f](int32_t v) { std::fwrite(&v, 4, 1, f); };
  put(static_cast<int32_t>(entries.size()));
  for (const auto& [name, v] : entries) {
    put(static_cast<int32_t>(name.size()));
    std::fwrite(name.data(), 1, name.size(), f);
    put(kCalls);
    put(static_cast<int32_t>(v.size()));
    std::fwrite(v.data(), 4, v.size(), f);
  }
  put(3);
  const std::string dataset = "calibration.txt";
  put(static_cast<int32_t>(dataset.size()));
  std::fwrite(dataset.data(), 1, dataset.size(), f);
  std::fclose(f);

  GgufWriter w;
  w.set_string("general.type", "imatrix");
  w.set_string_array("imatrix.datasets", {dataset});
  w.set_u32("imatrix.chunk_count", 3);
  w.set_u32("imatrix.chunk_size", 512);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& [name, v] = entries[i];
    const int64_t n_mat = n_mats[i], ne0 = static_cast<int64_t>(v.size()) / n_mat;
    w.add_tensor(name + ".in_sum2", DType::kF32, {ne0, n_mat}, v.data(), v.size() * 4);
    const std::vector<float> counts(static_cast<size_t>(n_mat), static_cast<float>(kCalls));
    w.add_tensor(name + ".counts", DType::kF32, {1, n_mat}, counts.data(), counts.size() * 4);
  }
  if (!gguf.empty()) w.write(gguf);
}

}  // namespace fulgur::test
