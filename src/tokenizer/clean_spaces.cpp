#include "tokenizer/clean_spaces.h"

namespace fulgur {
namespace {

bool space_before_punctuation(const std::string& t, size_t i) {
  const char x = t[i];
  return t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',');
}

// Whether the space before the apostrophe at i goes: before 's, 'm, 're, 've only.
bool space_before_contraction(const std::string& t, size_t i, size_t n) {
  if (t[i - 1] != ' ' || t[i] != '\'' || i + 1 >= n) return false;
  const char a = t[i + 1];
  if (a == 's' || a == 'm') return true;
  if (a == 't' || a == 'd' || i + 2 >= n) return false;
  const char b = t[i + 2];
  return (a == 'r' && b == 'e') || (a == 'v' && b == 'e');
}

}  // namespace

void clean_up_spaces(std::string& t) {
  if (t.empty()) return;
  // Each pass compacts the text in place, as llama.cpp's: `kept` characters survive so far, the
  // one at i is written after them, first taking back the space kept just before it if it
  // removes that space (so a space at the very start can go too).
  size_t n = t.size(), kept = 1;
  for (size_t i = 1; i < n; ++i) {
    if (space_before_punctuation(t, i)) --kept;
    t[kept++] = t[i];
  }
  n = kept, kept = 1;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --kept;         // the space before
      t[++i] = '\0';  // the space after, skipped (and no longer a space for the next check)
    }
    t[kept++] = x;
  }
  n = kept, kept = 1;
  for (size_t i = 1; i < n; ++i) {
    if (space_before_contraction(t, i, n)) --kept;
    t[kept++] = t[i];
  }
  t.resize(kept);
}

}  // namespace fulgur
