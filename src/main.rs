fn main() {
    std::process::exit(perf_tests::cli::main());
}
