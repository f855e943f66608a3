// llama.cpp as the benchmarks run it: node-llama-cpp's prebuilt CPU build (never a local build,
// a download or a GPU), quiet, on `threads` threads. Shared by bench/*.mjs.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

export function cpuLlama(threads) {
  return getLlama({
    gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
    progressLogs: false, logLevel: LlamaLogLevel.error, maxThreads: threads,
  });
}
