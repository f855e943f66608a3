#include <cstdio>
#include <exception>

#include "cli/command.h"
#include "cli/spec_options.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"fulgur: LLM inference with lossless speculative decoding"};
  app.require_subcommand(1);
  int exit_code = 0;
  fulgur::cli::add_synth_command(app, exit_code);
  fulgur::cli::add_run_command(app, exit_code);
  fulgur::cli::add_bench_command(app, exit_code);
  fulgur::cli::add_tokenize_command(app, exit_code);
  fulgur::cli::add_inspect_command(app, exit_code);
  fulgur::cli::add_convert_command(app, exit_code);
  fulgur::cli::add_serve_command(app, exit_code);
  fulgur::cli::add_calibrate_command(app, exit_code);
  fulgur::cli::add_standin_command(app, exit_code);
  fulgur::cli::add_quantize_command(app, exit_code);
  try {
    fulgur::cli::rewrite_multi_letter_options(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fulgur::Error& e) {
    std::fprintf(stderr, "fulgur: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fulgur: internal error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
