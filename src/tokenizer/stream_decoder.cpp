#include "tokenizer/stream_decoder.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace fulgur {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Moves the longest decodable prefix of `bytes` to `out`, returning how many bytes from the end
// form an incomplete (but so far valid) character that must wait for more input.
size_t drain(std::string_view bytes, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0, run = 0;  // run: start of the valid bytes not yet copied
  while (i < bytes.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step s = utf8_step(p + i, bytes.size() - i);
    if (s.kind == Utf8Step::kValid) {
      i += s.length;
      continue;
    }
    out.append(bytes.substr(run, i - run));
    if (s.kind == Utf8Step::kIncomplete) return bytes.size() - i;  // only at the very end
    out.append(kReplacement);
    i += s.length;
    run = i;
  }
  out.append(bytes.substr(run));
  return 0;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(tokenizer), render_special_(render_special) {}

void StreamDecoder::push(int32_t id, std::string& out) {
  const bool render = render_special_ || std::find(shown_.begin(), shown_.end(), id) != shown_.end();
  const std::string& piece = tokenizer_.token_piece(id, render);
  if (piece.empty()) return;
  if (pending_.empty()) {
    const size_t held = drain(piece, out);
    pending_.assign(piece, piece.size() - held, held);
    return;
  }
  // A character straddles tokens: join in place (pending_ keeps its capacity, so a steady
  // stream does not allocate) and keep only the new incomplete tail.
  pending_ += piece;
  const size_t held = drain(pending_, out);
  pending_.erase(0, pending_.size() - held);
}

std::string StreamDecoder::push(int32_t id) {
  std::string out;
  push(id, out);
  return out;
}

void StreamDecoder::flush(std::string& out) {
  if (!pending_.empty()) out.append(kReplacement);  // a held tail is one maximal subpart
  pending_.clear();
}

std::string StreamDecoder::flush() {
  std::string out;
  flush(out);
  return out;
}

}  // namespace fulgur
