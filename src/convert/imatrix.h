// llama.cpp's importance matrix files (what llama-imatrix writes and llama-quantize --imatrix
// reads), in both of its formats:
//  * GGUF: per weight matrix W a tensor "W.in_sum2" (F32, ne = {n_per_row, n_mat}: the sums of the
//    squared activations each column saw, per expert for 3-D weights) and "W.counts" (F32, one
//    count per matrix); keys imatrix.datasets (string array), imatrix.chunk_count and
//    imatrix.chunk_size (u32). A matrix's importance is in_sum2 / count, per expert; an expert
//    with count 0 gets 1 everywhere.
//  * legacy .dat (anything that is not GGUF): i32 n_entries, then per entry i32 name length, the
//    name, i32 ncall, i32 nval, nval f32 values (already averaged and multiplied by ncall), then
//    optionally i32 chunk count, i32 dataset-name length and the name. Importance = value / ncall
//    (the value itself when ncall is 0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fulgur {

struct ImportanceMatrix {
  std::map<std::string, std::vector<float>> values;  // weight name -> [n_mat * n_per_row]
  std::vector<std::string> datasets;
  int64_t chunk_count = 0;
  bool legacy = false;
};

// Reads either format; throws fulgur::Error naming the file and what is wrong (truncated, a
// .in_sum2 without .counts, non-F32, sizes that do not divide, non-finite values, no entries).
ImportanceMatrix read_imatrix(const std::string& path);

}  // namespace fulgur
