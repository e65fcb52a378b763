fn main() -> std::process::ExitCode {
    hearth::cli::main()
}
