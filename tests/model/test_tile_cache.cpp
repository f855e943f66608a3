// The tile cache (ModelOptions::tile_cache_dir, `--tile-cache`): a cold load packs and writes the file, a warm load maps
// it, and both give the bits of a load without it; a damaged or stale file is rebuilt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/packed.h"
#include "model_fixture.h"

namespace fulgur {
namespace {

using testing_support::tiny_model;

class TileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::should_pack(DType::kQ8_0)) GTEST_SKIP() << "no packed kernels on this machine (needs AVX2 or AVX-512)";
    // Per-test paths: ctest runs the tests as parallel processes.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = ::testing::TempDir() + "/fulgur_tile_cache_" + name;
    std::filesystem::remove_all(dir_);
    model_ = ::testing::TempDir() + "/fulgur_tile_cache_" + name + ".gguf";
    std::filesystem::copy_file(tiny_model("qwen3", DType::kQ8_0), model_,
                               std::filesystem::copy_options::overwrite_existing);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove(model_);
  }

  // Logits of a 5-token prompt's rows, loading the model with the cache on or off.
  std::vector<float> logits(bool cached, bool* from_cache = nullptr) {
    Model m(model_, {.tile_cache_dir = cached ? dir_ : ""});
    if (from_cache != nullptr) *from_cache = m.tiles_from_cache();
    Context ctx(m, {.n_ctx = 32, .n_batch = 8, .n_threads = 2});
    Batch b;
    for (int32_t i = 0; i < 5; ++i) b.add(3 + 7 * i, i, 0, true);
    ctx.decode(b);
    std::vector<float> out;
    for (int64_t r = 0; r < b.size(); ++r) out.insert(out.end(), ctx.logits(r), ctx.logits(r) + m.n_vocab());
    return out;
  }

  std::vector<std::filesystem::path> cache_files() const {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::exists(dir_))
      for (const auto& e : std::filesystem::directory_iterator(dir_)) files.push_back(e.path());
    return files;
  }

  std::string dir_, model_;
};

TEST_F(TileCacheTest, ColdThenWarmLoadsGiveTheSameBits) {
  const std::vector<float> plain = logits(false);
  bool from_cache = true;
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_FALSE(from_cache) << "the first load must pack";
  ASSERT_EQ(cache_files().size(), 1u) << "the cold load writes one file (and no temporary)";
  EXPECT_EQ(cache_files()[0].extension(), ".tiles");
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_TRUE(from_cache) << "the second load maps the file";
}

TEST_F(TileCacheTest, DamagedFileIsRebuilt) {
  const std::vector<float> plain = logits(true);
  ASSERT_EQ(cache_files().size(), 1u);
  const auto file = cache_files()[0];
  const auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size / 2);  // truncated
  bool from_cache = true;
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(std::filesystem::file_size(file), size) << "rewritten whole";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('#');  // inside the key
  }
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_FALSE(from_cache) << "a file whose key differs is not used";
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_TRUE(from_cache);
}

TEST_F(TileCacheTest, ChangedModelIsNotServedStaleTiles) {
  logits(true);
  // Another model at the same path: new size or mtime, so a new key.
  std::filesystem::copy_file(tiny_model("qwen3", DType::kQ8_0, 2), model_,
                             std::filesystem::copy_options::overwrite_existing);
  const std::vector<float> plain = logits(false);
  bool from_cache = true;
  EXPECT_EQ(logits(true, &from_cache), plain);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(cache_files().size(), 1u) << "the stale file is replaced, not kept beside";
}

TEST_F(TileCacheTest, UnwritableDirectoryOnlyWarns) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/blocker") << "x";
  // A cache directory under a regular file.
  EXPECT_NO_THROW({ Model m(model_, {.tile_cache_dir = dir_ + "/blocker/sub"}); });
}

}  // namespace
}  // namespace fulgur
