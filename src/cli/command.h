// Each `fulgur` subcommand lives in its own file and adds itself to the app through one
// add_*_command function; its callback stores the process exit status in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

#include "sampling/params.h"

namespace fulgur::cli {

void add_inspect_command(CLI::App& app, int& exit_code);
void add_convert_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_calibrate_command(CLI::App& app, int& exit_code);
void add_standin_command(CLI::App& app, int& exit_code);
void add_quantize_command(CLI::App& app, int& exit_code);

// --temp, --top-k, ... shared by every command that samples.
void add_sampling_options(CLI::App* cmd, SamplerParams& params);

}  // namespace fulgur::cli
