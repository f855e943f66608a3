// UTF-8 helpers and the GPT-2 byte <-> code point table used by byte-level BPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fulgur {

// GPT-2 bytes_to_unicode (archs-gguf.md §5.2): printable bytes map to themselves, the other 68
// to U+0100.. in byte order, so every byte has a visible, non-space stand-in.
uint32_t byte_to_codepoint(uint8_t byte);
// Inverse of byte_to_codepoint; -1 when cp is not the stand-in of any byte.
int codepoint_to_byte(uint32_t cp);

void append_utf8(std::string& out, uint32_t cp);

// Result of looking at the UTF-8 sequence that starts at the first byte of a buffer.
struct Utf8Step {
  enum Kind { kValid, kIncomplete, kInvalid } kind;
  size_t length;  // kValid: bytes of the sequence; kIncomplete: bytes seen (all a valid prefix);
                  // kInvalid: bytes of the maximal invalid subpart (one U+FFFD replaces them)
  uint32_t cp;    // kValid only
};

// Follows Unicode Table 3-7 (no overlongs, no surrogates, nothing above U+10FFFF). `n` > 0.
Utf8Step utf8_step(const unsigned char* p, size_t n);

bool is_valid_utf8(std::string_view text);

// NFC of `text`. Runs of invalid UTF-8 are copied through unchanged (normalizing only the valid
// runs around them), so byte-level BPE still sees every input byte.
std::string nfc_normalize(std::string_view text);

}  // namespace fulgur
