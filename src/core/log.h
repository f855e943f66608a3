// Minimal leveled logging to stderr. FULGUR_LOG=debug|info|warn|error|off sets the level
// (default info).
#pragma once

#include <string>

#include "core/error.h"

namespace fulgur {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_line(LogLevel level, const std::string& message);

template <class... Args>
void log_debug(Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, cat(std::forward<Args>(args)...));
}
template <class... Args>
void log_info(Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, cat(std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, cat(std::forward<Args>(args)...));
}

}  // namespace fulgur
