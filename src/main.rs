//! `seam`: parse the command line, run it, map the outcome to an exit code
//! (0 valid, 1 invalid, 2 usage or I/O error).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = seam::Cli::parse();
    match seam::run(cli) {
        Ok(outcome) => ExitCode::from(outcome as u8),
        Err(error) => {
            seam::log::say(format_args!("seam: {error}"));
            ExitCode::from(seam::Exit::UsageOrIo as u8)
        }
    }
}
