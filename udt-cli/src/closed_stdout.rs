//! A standard output closed by its reader (`udt cc list | head`) ends the program quietly, as it
//! ends a C tool: with the status a shell gives a program killed by SIGPIPE, and no message.
//!
//! Rust ignores SIGPIPE, so a write to the closed pipe fails, and `println!` turns the failure
//! into a panic. SIGPIPE stays ignored (restoring its default would kill the program when an
//! ssh child's pipe closes, with no word of why): only that one panic is turned into the exit.

/// The status of a program that SIGPIPE ended (128 + 13).
pub const EXIT_STATUS: i32 = 141;

/// Install the panic hook that ends the program on a failed print to a closed standard output,
/// and leaves every other panic to the hook before it.
pub fn install() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_stdout(message) {
            std::process::exit(EXIT_STATUS);
        }
        previous(info);
    }));
}

/// Whether a panic's message is the standard library's for a print to a closed pipe.
fn is_closed_stdout(message: &str) -> bool {
    message.starts_with("failed printing to stdout") && message.contains("Broken pipe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_print_to_a_closed_pipe_is_quiet() {
        assert!(is_closed_stdout("failed printing to stdout: Broken pipe (os error 32)"));
        assert!(!is_closed_stdout("failed printing to stdout: No space left on device (os error 28)"));
        assert!(!is_closed_stdout("index out of bounds: Broken pipe"));
    }
}
