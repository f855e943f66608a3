#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fulgur {
namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("FULGUR_LOG");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  if (std::strcmp(env, "off") == 0) return LogLevel::kOff;
  return LogLevel::kInfo;
}

std::atomic<LogLevel>& current_level() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

}  // namespace

LogLevel log_level() { return current_level().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) { current_level().store(level, std::memory_order_relaxed); }

void log_line(LogLevel level, const std::string& message) {
  static const char* const kNames[] = {"debug", "info", "warn", "error", "off"};
  std::fprintf(stderr, "fulgur %s: %s\n", kNames[static_cast<int>(level)], message.c_str());
}

}  // namespace fulgur
