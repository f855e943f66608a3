// Each `fulgur` subcommand lives in its own file and adds itself to the app through one
// add_*_command function; its callback stores the process exit status in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace fulgur::cli {

void add_inspect_command(CLI::App& app, int& exit_code);

}  // namespace fulgur::cli
