// Placeholder until the GGUF reader lands.
#include "cli/command.h"
namespace fulgur::cli {
void add_inspect_command(CLI::App& app, int& exit_code) {
  app.add_subcommand("inspect", "print a GGUF file's metadata and tensor table")->callback([&] { exit_code = 1; });
}
}  // namespace fulgur::cli
