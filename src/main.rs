//! `seam`: parse the command line, run it, map the outcome to an exit code
//! (0 valid, 1 invalid, 2 usage or I/O error).

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = seam::Cli::parse();
    match seam::run(cli) {
        Ok(outcome) => ExitCode::from(outcome as u8),
        Err(error) => {
            // Not `eprintln!`, which panics (exit code 101) when stderr is closed.
            let _ = writeln!(std::io::stderr(), "seam: {error}");
            ExitCode::from(seam::Outcome::UsageOrIo as u8)
        }
    }
}
