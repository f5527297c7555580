// The global allocator is set in the library (`xfile::allocator`), so that
// the tests run on the same one.

fn main() -> std::process::ExitCode {
    disable_transparent_huge_pages();
    xfile::cli::main()
}

/// Transparent huge pages make the kernel zero 2 MiB at every first touch of
/// fresh heap; on a cold index that was 40% of all cycles and the main source
/// of run-to-run variance (docs/performance.md).
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
