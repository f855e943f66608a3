// How SentencePiece-style vocabularies ("llama", "gemma4") spell text in their tokens: a space is
// U+2581 "▁" (so a token can carry the space that precedes a word), and a byte that no token
// covers is the token "<0xXX>" (two upper-case hex digits, as llama.cpp looks it up).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fulgur {

inline constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581 in UTF-8

// Appends `text` with every ' ' (0x20 only, as llama.cpp's llama_escape_whitespace) as U+2581.
void append_spm_escaped(std::string& out, std::string_view text);

// `text` with every U+2581 turned back into ' '.
std::string spm_unescaped(std::string_view text);

// "<0xXX>" for `byte`.
std::string byte_token_text(uint8_t byte);

// The byte a "<0xXX>" text stands for (either case of hex digit), -1 for any other text.
int byte_of_byte_token(std::string_view text);

}  // namespace fulgur
