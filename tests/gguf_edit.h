// Edited copies of GGUF files for tests: the same metadata and tensors, with chosen f32 tensors
// replaced or added and chosen keys changed. Tests build models with known behaviour this way
// (a draft whose logits are the target's at another temperature, a draft that shares the
// target's output head) instead of adding test hooks to the loaders.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace fulgur::testing_support {

struct F32Tensor {
  std::vector<int64_t> shape;  // ggml order
  std::vector<float> data;     // [product of shape]
};

// An f32 tensor of a file ([n_elements] in ggml order); throws if it is not f32.
inline F32Tensor read_f32(const GgufReader& r, const std::string& name) {
  const GgufTensorInfo& t = r.tensor(name);
  FULGUR_CHECK(t.type == DType::kF32, "read_f32: tensor '", name, "' is ", dtype_name(t.type), ", not f32");
  F32Tensor out{t.shape(), std::vector<float>(static_cast<size_t>(t.n_elements()))};
  std::memcpy(out.data.data(), t.data, out.data.size() * sizeof(float));
  return out;
}

struct GgufEdit {
  std::map<std::string, F32Tensor> tensors = {};  // replaced in place, or appended when new
  std::function<void(GgufWriter&)> metadata = {};  // applied after the original keys are copied
};

// Writes `dst`: `src` with the edits applied. Returns dst.
inline std::string write_edited_gguf(const std::string& src, const std::string& dst, const GgufEdit& edit) {
  const GgufReader r(src);
  GgufWriter w;
  w.copy_metadata(r);
  if (edit.metadata) edit.metadata(w);
  const auto add = [&w](const std::string& name, const F32Tensor& t) {
    w.add_tensor(name, DType::kF32, t.shape, t.data.data(), t.data.size() * sizeof(float));
  };
  for (const GgufTensorInfo& t : r.tensors()) {
    const auto it = edit.tensors.find(t.name);
    if (it != edit.tensors.end()) {
      add(t.name, it->second);
    } else {
      w.add_tensor(t.name, t.type, t.shape(), t.data, t.nbytes);
    }
  }
  for (const auto& [name, t] : edit.tensors) {
    if (r.find_tensor(name) == nullptr) add(name, t);
  }
  w.write(dst);
  return dst;
}

}  // namespace fulgur::testing_support
