// The chat page served at / (src/server/chat_page.html, compiled in by CMake: no build step,
// nothing fetched from the network).
#pragma once

#include <cstddef>

namespace fulgur::server {

extern const char* const kChatPage;
extern const size_t kChatPageSize;

}  // namespace fulgur::server
