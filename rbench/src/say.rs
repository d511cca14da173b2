//! `say!`, the binaries' line on stderr: prefixed with the binary's name
//! ("raplbench-sample: ..."), and never a panic: eprintln! panics when
//! stderr is a pipe whose reader has gone (EPIPE), which would abort a run
//! and lose the CSV or JSON still to be written.

/// A line on stderr, prefixed with the binary's name (see the module).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{}: {}", env!("CARGO_BIN_NAME"), format_args!($($arg)*));
    }};
}
