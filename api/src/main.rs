//! The `conduct` binary: the subcommands are `conduct_api::cmd`.

/// mimalloc: a request's many short-lived allocations (the meter's tables, and hyper's two
/// 8 KiB header buffers per head, as `max_headers` is set) cost about a quarter less CPU per
/// `/demo/profile` request than with glibc's malloc (BENCHMARKS.md, section 2).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    conduct_api::cmd::main()
}
