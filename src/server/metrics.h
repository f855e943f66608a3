// GET /metrics: the engine's counters in Prometheus' text exposition format (version 0.0.4).
#pragma once

#include <string>

#include "server/engine.h"

namespace fulgur::server {

std::string format_metrics(const EngineMetrics& m, int64_t bad_requests);

}  // namespace fulgur::server
