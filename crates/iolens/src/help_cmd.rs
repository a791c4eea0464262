//! `iolens completions SHELL` and `iolens man`: shell completion scripts and the manual page,
//! both generated from the same argument definitions as `--help`, so they cannot drift.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::output::EXIT_FAILED;

pub fn completions(shell: clap_complete::Shell) -> Result<(), u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "iolens", &mut script);
    say!("{}", String::from_utf8_lossy(&script));
    Ok(())
}

pub fn man() -> Result<(), u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page).map_err(|e| {
        errln!("iolens: error: cannot render the manual page: {e}");
        EXIT_FAILED
    })?;
    say!("{}", String::from_utf8_lossy(&page));
    Ok(())
}
