// The fixture of the converter tests that run `fulgur synth` and `fulgur convert` on the same
// model: synth (GGUF + Hugging Face export), convert, copies of an export with its config or
// tensors edited, failures that must leave no output, and GGUF files compared tensor for tensor.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/convert_model.h"
#include "convert/hf_config.h"
#include "convert/hf_export.h"
#include "convert/safetensors.h"
#include "convert/safetensors_writer.h"
#include "convert/tiny_checkpoint.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "synth/synth.h"
#include "tensor/quants.h"

namespace fulgur::test {

inline std::vector<float> values_of(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t.type, t.data + r * rb, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

class SynthConvertTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_dir("fulgur_synth_convert"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }

  // synth ARCH SHAPE [--mtp] -o <name>.gguf --hf <name>-hf (built-in vocabulary; threads 0: one
  // per physical core).
  std::string synth(const std::string& arch, const std::string& shape, DType type, const std::string& name,
                    int threads = 0, bool mtp = false) {
    SynthOptions o;
    o.threads = threads;
    o.arch = arch;
    o.shape = shape;
    o.mtp = mtp;
    o.seed = 7;
    o.type = type;
    o.tokenizer_json = "builtin";
    o.out = path(name + ".gguf");
    o.hf_dir = path(name + "-hf");
    synth_model(o);
    return o.out;
  }
  std::string convert(const std::string& hf, DType type, const std::string& out = "out.gguf", int threads = 0,
                      MtpMode mtp = MtpMode::kAuto) {
    ConvertOptions o;
    o.threads = threads;
    o.in_dir = hf;
    o.out_path = path(out);
    o.type = type;
    o.progress = false;
    o.mtp = mtp;
    convert_hf_to_gguf(o);
    return o.out_path;
  }

  // Conversion must fail naming every piece and leave neither bad.gguf nor a temporary file.
  void expect_failure(const std::string& hf, const std::vector<std::string>& pieces,
                      MtpMode mtp = MtpMode::kAuto) {
    SCOPED_TRACE(hf);
    try {
      convert(hf, DType::kQ8_0, "bad.gguf", 0, mtp);
      ADD_FAILURE() << "conversion succeeded";
    } catch (const Error& e) {
      for (const std::string& p : pieces) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
      }
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      EXPECT_NE(entry.path().filename().string().rfind("bad.gguf", 0), 0u) << "left behind: " << entry.path();
    }
  }

  // A copy of an HF folder with config.json edited.
  std::string with_config(const std::string& hf, const std::string& name,
                          const std::function<void(nlohmann::json&)>& edit) {
    const std::string out = path(name);
    std::filesystem::remove_all(out);
    std::filesystem::copy(hf, out, std::filesystem::copy_options::recursive);
    nlohmann::json c = HfConfig::load(out).json();
    edit(c);
    write_json_file(out + "/config.json", c);
    return out;
  }
  // A copy of an HF folder with its tensors edited.
  std::string with_tensors(const std::string& hf, const std::string& name,
                           const std::function<void(std::vector<HfTensor>&)>& edit) {
    const std::string out = path(name);
    std::filesystem::remove_all(out);
    std::filesystem::copy(hf, out, std::filesystem::copy_options::recursive);
    std::vector<HfTensor> ts;
    {
      const Checkpoint ck(out);
      for (const std::string& n : ck.names()) ts.push_back({n, ck.tensor(n).shape, ck.to_f32(n)});
    }
    edit(ts);
    SafetensorsWriter w;
    for (const HfTensor& t : ts) w.add_f32(t.name, t.shape, t.data);
    w.write(out + "/model.safetensors");
    return out;
  }

  std::string dir_;
};

inline HfTensor& tensor_named(std::vector<HfTensor>& ts, const std::string& name) {
  for (HfTensor& t : ts) {
    if (t.name == name) return t;
  }
  throw Error("test: no tensor " + name);
}

inline void drop_tensor(std::vector<HfTensor>& ts, const std::string& name) {
  std::erase_if(ts, [&](const HfTensor& t) { return t.name == name; });
}

// Same tensors (names in order, types, shapes, bytes) and the same metadata except general.name.
inline void expect_same_gguf(const std::string& a_path, const std::string& b_path) {
  const GgufReader a(a_path), b(b_path);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo& x = a.tensors()[i];
    const GgufTensorInfo& y = b.tensors()[i];
    SCOPED_TRACE(x.name);
    ASSERT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.shape(), y.shape());
    ASSERT_EQ(x.nbytes, y.nbytes);
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0) << "bytes differ";
  }
  for (const GgufKv& kv : a.metadata()) {
    if (kv.key == "general.name") continue;
    const GgufValue* other = b.find(kv.key);
    ASSERT_NE(other, nullptr) << kv.key;
    EXPECT_TRUE(kv.value == *other) << kv.key << ": " << kv.value.to_string() << " vs " << other->to_string();
  }
  EXPECT_EQ(a.metadata().size(), b.metadata().size());
}

}  // namespace fulgur::test
