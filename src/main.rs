fn main() -> std::process::ExitCode {
    xfile::cli::main()
}
