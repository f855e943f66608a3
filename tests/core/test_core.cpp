#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/ascii.h"
#include "core/cpu.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/page_buffer.h"
#include "core/read_sweep.h"
#include "core/thread_pool.h"

namespace fulgur {
namespace {

TEST(ThreadPool, EveryThreadRunsEachJobOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(n);
      pool.run([&](int ti, int nt) {
        ASSERT_EQ(nt, n);
        hits[ti].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "thread " << i << " round " << round;
    }
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<int> seen(n, 0);
    pool.parallel_for(n, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) seen[i] += 1;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, ResultsOfOneRunAreVisibleToTheNext) {
  ThreadPool pool(2);
  std::vector<int64_t> data(1 << 16, 1);
  for (int step = 0; step < 50; ++step) {
    pool.parallel_for(static_cast<int64_t>(data.size()), [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) data[i] += 1;
    });
  }
  for (int64_t v : data) ASSERT_EQ(v, 51);
}

TEST(ThreadPool, DefaultIsPhysicalCores) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), physical_core_count());
  EXPECT_GE(pool.size(), 1);
}

TEST(Cpu, IsaLevelsAreConsistent) {
  EXPECT_TRUE(isa_supported(Isa::kRef));
  if (isa_supported(Isa::kAvx512)) {
    EXPECT_TRUE(isa_supported(Isa::kAvx2));
  }
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_EQ(parse_isa("avx2"), Isa::kAvx2);
  EXPECT_STREQ(isa_name(parse_isa("avx512")), "avx512");
  EXPECT_THROW(parse_isa("sse9"), Error);
}

TEST(MappedFile, MapsWholeFileAndNamesMissingOnes) {
  const std::string path = testing::TempDir() + "/fulgur_mapped_file_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  MappedFile file(path);
  ASSERT_EQ(file.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()), 5), "hello");
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.size(), 5u);
  EXPECT_EQ(file.data(), nullptr);
  std::remove(path.c_str());
  try {
    MappedFile missing(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

TEST(PageBuffer, ZeroFilledHugePageAlignedAndMovable) {
  for (size_t bytes : {size_t{1}, size_t{4095}, size_t{3} << 20, (size_t{5} << 20) + 17}) {
    for (bool populate : {false, true}) {
      PageBuffer a(bytes, populate);
      ASSERT_EQ(a.size(), bytes);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(a.data()) % (size_t{2} << 20), 0u);
      for (size_t i = 0; i < bytes; i += 997) ASSERT_EQ(a.data()[i], 0) << i;
      ASSERT_EQ(a.data()[bytes - 1], 0);
      a.data()[bytes - 1] = 7;  // the whole range is writable
      uint8_t* p = a.data();
      PageBuffer b(std::move(a));
      EXPECT_EQ(a.data(), nullptr);
      EXPECT_EQ(a.size(), 0u);
      EXPECT_EQ(b.data(), p);
      PageBuffer c;
      c = std::move(b);
      EXPECT_EQ(c.data(), p);
      EXPECT_EQ(c.data()[bytes - 1], 7);
    }
  }
  PageBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
}

// The floor's reads touch every whole word of every range once, whatever the thread count:
// ranges with ragged ends, an empty one, one inside a single word.
TEST(ReadSweep, ReadsEveryAlignedWordOfEveryRangeOnce) {
  std::vector<uint64_t> buf(10007);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9E3779B97F4A7C15ull + 1;
  const auto* b = reinterpret_cast<const uint8_t*>(buf.data());
  const std::vector<std::pair<size_t, size_t>> spans = {{3, 8 * 1000 + 2}, {8 * 2000, 0}, {8 * 3000 + 1, 5},
                                                        {8 * 4000, 8 * 6007}, {8 * 3500 + 7, 8 * 13}};
  std::vector<std::span<const uint8_t>> ranges;
  uint64_t want = 0;
  for (const auto& [off, n] : spans) {
    ranges.emplace_back(b + off, n);
    for (size_t w = (off + 7) / 8; w < (off + n) / 8; ++w) want += buf[w];
  }
  for (const int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(read_all(ranges, pool), want) << threads << " threads";
    EXPECT_GE(read_seconds(ranges, pool), 0.0);
  }
  for (const size_t n : {0, 1, 7, 8, 13}) {
    uint64_t tail = 0;
    for (size_t i = 0; i < n; ++i) tail += buf[i];
    EXPECT_EQ(sum_words(buf.data(), n), tail) << n << " words";
  }
}

// Only A-Z and a-z change: digits, punctuation, the neighbours of the letter ranges (@ [ ` {)
// and UTF-8 bytes (which a locale's tolower could map) pass through, whatever the locale.
TEST(Ascii, MapsOnlyAsciiLetters) {
  EXPECT_EQ(ascii_lower("Q4_K_M blk.0.ATTN_V"), "q4_k_m blk.0.attn_v");
  EXPECT_EQ(ascii_upper("q4_k_m blk.0.attn_v"), "Q4_K_M BLK.0.ATTN_V");
  EXPECT_EQ(ascii_lower("@[`{ \xc3\x89t\xc3\xa9"), "@[`{ \xc3\x89t\xc3\xa9");  // "Été": only the t is ASCII
  EXPECT_EQ(ascii_upper("@[`{ \xc3\xa9"), "@[`{ \xc3\xa9");
  EXPECT_EQ(ascii_lower(""), "");
}

TEST(Error, CheckBuildsMessage) {
  try {
    FULGUR_CHECK(1 + 1 == 3, "value ", 42, " is not ", 3.5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "value 42 is not 3.5");
  }
}

}  // namespace
}  // namespace fulgur
