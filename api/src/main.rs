//! The `conduct` binary: the subcommands are `conduct_api::cmd`.

fn main() -> std::process::ExitCode {
    conduct_api::cmd::main()
}
