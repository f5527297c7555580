// Parsing and fact extraction allocate many small objects; mimalloc roughly
// halves the allocator's share of a cold index (see docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    xfile::cli::main()
}
